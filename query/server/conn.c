/* conn.c: objlogd's connections, the limits evhttp 2.1 cannot keep by
 * itself. evhttp creates each accepted connection's bufferevent through
 * our hook (conn_new_bev); from it we learn the connection's
 * evhttp_connection and register a close callback, so every worker knows
 * its open connections exactly, and an input-buffer callback sees every
 * byte before evhttp parses it. With that a worker keeps:
 *
 *  - at most conn_cap connections: a listener whose face reserves no
 *    path is off at the cap, one that does (the JSON API's probes)
 *    CONN_RESERVE connections later; a connection taken past the cap may
 *    ask a reserved path only (else 503) and is closed after its answer,
 *    so probes are answered while clients hold every slot. Every
 *    listener is off for CONN_NOFD_PAUSE_MS after
 *    accept() ran out of descriptors (evconnlistener would retry at once,
 *    forever: a busy loop that once wrote 552 MB of the same warning in a
 *    minute), and as long as a connection would leave fewer than
 *    CONN_FD_FLOOR descriptors free, whatever the cap says;
 *  - a connection with no request in progress (before its first byte,
 *    between an answer and the next request) is closed after
 *    idle_timeout_ms;
 *  - a request arrives whole (headers, and a body of at most
 *    HTTP_MAX_BODY) within request_timeout_ms of its first byte, or it is
 *    answered 408 and the socket shut down (evhttp's own timeout restarts
 *    on every byte, so a client sending a header line every 2 s kept its
 *    connection forever);
 *  - a request whose framing is not exact (framing.h) is answered 400 and
 *    the connection closed before evhttp acts on it: evhttp's lenient
 *    reading of body lengths is a request-smuggling vector behind a proxy;
 *  - on a face that streams, a PUT with a body over HTTP_STREAM_MIN is
 *    dispatched at its head and its body given to the handler as it
 *    arrives, never read whole (the streamed bodies section below; its
 *    contract is server.h's);
 *  - an answer handed to evhttp is written whole: reading is off from
 *    dispatch until the answer is out, so a client that half-closes after
 *    its request is not taken for a failure (evhttp reads during a write to
 *    detect closes, and a read EOF dropped what was not yet written); an
 *    answer the peer never took (reset, gone) is logged and counted as cut.
 *
 * The ids of the requests it carries are minted here too (http_request_id),
 * for its own edge answers as for dispatched requests.
 *
 * Everything here runs on the worker's thread. */
#define _GNU_SOURCE
#include "core.h"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "framing.h"

#define CONN_NOFD_PAUSE_MS 100
/* Descriptors connections never take, for the store and Kafka: a Kafka
 * client reconnecting or RocksDB opening a file must not find the table
 * full because of clients (the embedded log's broker, librdkafka's mock,
 * then polls the connection it cannot accept in a busy loop; RocksDB stops
 * writing). As Redis keeps 32 out of maxclients. */
#define CONN_FD_FLOOR 32
#define CONN_LOG_INTERVAL_MS 10000
/* Connections each worker takes past its cap, for probes only: a liveness
 * and a readiness probe and a scrape at once. */
#define CONN_RESERVE 2
/* A reserve connection's wait for its request: short, so that idle
 * connections offered past the cap cannot hold the reserve for long. */
#define CONN_RESERVE_IDLE_MS 1000
/* After a framing refusal, what the client still sends is read and
 * dropped this long, so that closing does not reset the connection
 * before the client has read the 400. */
#define CONN_LINGER_MS 2000

struct http_conn {
    http_worker *w;
    struct bufferevent *bev;     /* evhttp's; alive until conn_closed */
    struct evbuffer_cb_entry *input_cb;
    struct event *deadline;      /* the request's, armed at its first byte */
    struct event *idle;          /* no request in progress: idle_timeout_ms */
    http_conn *next_new;         /* on w->conn_new until settled */
    int fd;                      /* -1 until settled */
    framing fr;                  /* the framing of the bytes read so far */
    uint64_t added;              /* bytes read from the socket so far */
    uint64_t refuse_at;          /* where a request breaking framing begins;
                                    UINT64_MAX: none */
    unsigned settled : 1;        /* close callback registered */
    unsigned receiving : 1;      /* a request's bytes arrived, not dispatched */
    unsigned dispatched : 1;     /* a request reached its route, not answered */
    unsigned answering : 1;      /* an answer handed to evhttp, not written */
    const http_face *face;       /* of the listener that accepted it */
    unsigned reserve : 1;        /* accepted past the cap: probes only */
    unsigned refused : 1;        /* answered 400 for its framing, lingering */
    unsigned shuffling : 1;      /* moving bytes in or out of the input: not
                                    the peer's */
    /* A PUT's head held from evhttp until it is whole (a face that
     * streams), with what followed it; held_at: where it began. */
    struct evbuffer *held;
    uint64_t held_at;
    http_stream *stream;         /* the body of the request now read, streamed */
};

/* A streamed body's life (its contract: server.h): its head went to
 * evhttp with Content-Length 0 (HELD) and was dispatched (WAITING: bytes
 * gather in `early`, at most STREAM_EARLY_MAX, until the handler starts
 * it); then FLOWING to the handler's sink; DONE once every byte was
 * delivered (or gathered); DEAD when the request was answered first or
 * the sink failed (what still comes is dropped, the connection closes). */
enum { STREAM_HELD, STREAM_WAITING, STREAM_FLOWING, STREAM_DONE, STREAM_DEAD };
#define STREAM_EARLY_MAX (1 << 20)

static http_conn *conn_of(http_worker *w, struct evhttp_request *req);
static void conn_stream_end(http_stream *s, int rc);
static void conn_stream_free(http_conn *cn);
static void conn_stream_input(http_conn *cn, struct evbuffer *buf, size_t n);
static void conn_hold(http_conn *cn, struct evbuffer *buf);

struct http_stream {
    http_conn *cn;
    uint64_t length;             /* Content-Length, as sent */
    uint64_t left;               /* body bytes not yet read */
    char length_text[24];
    int state;
    unsigned expect_continue : 1; /* the client waits for 100 Continue */
    unsigned started : 1;
    unsigned ended : 1;          /* end called */
    struct evbuffer *early;
    http_stream_data_fn *data;
    http_stream_end_fn *end;
    void *arg;
};

/* The worker running on this thread. evconnlistener's error callback gets
 * evhttp's pointer, not ours, and evhttp 2.1 has no way back to its owner;
 * each worker has a thread of its own, so the thread says which it is. */
static __thread http_worker *conn_this_worker;

static void conn_listener_set(struct evconnlistener *lev, int *on, int want) {
    if (!lev || *on == want)
        return;
    if (want)
        evconnlistener_enable(lev);
    else
        evconnlistener_disable(lev);
    *on = want;
}

/* Each listener on or off as the worker's state says: all off while out
 * of descriptors (or stopping); at the cap, those that reserve no path
 * off, the others CONN_RESERVE connections later. */
static void conn_listeners_update(http_worker *w) {
    int n = atomic_load(&w->nconns);
    int full = n >= w->conn_cap;
    if (full && !w->conn_full)
        atomic_fetch_add(&w->srv->counters.conn_pauses[0], 1);
    w->conn_full = full;
    int open = !w->stopping && !w->nofd_paused;
    for (int i = 0; i < w->nls; i++) {
        http_listener *l = &w->ls[i];
        int cap = w->conn_cap + (l->face->reserved_path ? CONN_RESERVE : 0);
        conn_listener_set(l->lev, &l->lev_on, open && n < cap);
    }
}

/* 1 while fewer than CONN_FD_FLOOR descriptors are free. The lowest free
 * descriptor, which dup returns as accept would, is past fd_floor_at only
 * when every one below it is taken. */
static int conn_fds_low(const http_worker *w) {
    if (w->probe_fd < 0)
        return 0;
    int fd = fcntl(w->probe_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return errno == EMFILE || errno == ENFILE;
    close(fd);
    return fd >= w->fd_floor_at;
}

/* Every listener off until the timer (and the floor) let it on again. */
static void conn_nofd_pause(http_worker *w) {
    if (!w->nofd_paused)
        atomic_fetch_add(&w->srv->counters.conn_pauses[1], 1);
    w->nofd_paused = 1;
    conn_listeners_update(w);
    struct timeval tv = {0, CONN_NOFD_PAUSE_MS * 1000};
    evtimer_add(w->accept_resume_ev, &tv);
}

/* A descriptor may have come back (the timer, a closed connection): on
 * again (as far as the cap lets) unless the floor is still not free, then
 * wait another pause. */
static void conn_nofd_resume(http_worker *w) {
    if (w->nofd_paused && conn_fds_low(w)) {
        if (!evtimer_pending(w->accept_resume_ev, NULL))
            conn_nofd_pause(w);
        return;
    }
    w->nofd_paused = 0;
    conn_listeners_update(w);
}

static void conn_resume_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    conn_nofd_resume(arg);
}

/* Out of descriptors (ours or the system's): stop accepting for a while
 * instead of retrying at once; a closed connection resumes sooner. */
static void conn_accept_error(struct evconnlistener *lev, void *http) {
    (void)http;
    int err = EVUTIL_SOCKET_ERROR();
    http_worker *w = conn_this_worker;
    int ours = 0;
    for (int i = 0; w && i < w->nls; i++)
        ours |= w->ls[i].lev == lev;
    if (!ours)
        return;
    int nofd = err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
    objlog_logf_limited(&w->log_accept, OBJLOG_LEVEL_WARNING, "http",
                       "accept: %s; not accepting for %d ms (%d connections open on "
                       "this worker)", strerror(err), CONN_NOFD_PAUSE_MS,
                       atomic_load(&w->nconns));
    if (!nofd)
        return; /* other errors are the peer's (evconnlistener retries those) */
    conn_nofd_pause(w);
}

/* A connection just took a descriptor: the next may not, if it would eat
 * into the floor. */
static void conn_check_floor(http_worker *w) {
    if (w->nofd_paused || !conn_fds_low(w))
        return;
    objlog_logf_limited(&w->log_floor, OBJLOG_LEVEL_WARNING, "http",
                       "accept: fewer than %d of the %d open files are free, kept for the "
                       "store and Kafka; not accepting for %d ms (%d connections open on "
                       "this worker)", CONN_FD_FLOOR, w->fd_limit, CONN_NOFD_PAUSE_MS,
                       atomic_load(&w->nconns));
    conn_nofd_pause(w);
}

/* ------------------------------------------------------------ lifetime */

static void conn_forget(http_conn *cn) {
    http_worker *w = cn->w;
    if (cn->stream) /* the peer went before its body was read */
        conn_stream_end(cn->stream, -1);
    conn_stream_free(cn);
    if (cn->held)
        evbuffer_free(cn->held);
    if (cn->fd >= 0 && cn->fd < w->conns_size && w->conns[cn->fd] == cn)
        w->conns[cn->fd] = NULL;
    if (cn->input_cb)
        evbuffer_remove_cb_entry(bufferevent_get_input(cn->bev), cn->input_cb);
    if (cn->deadline)
        event_free(cn->deadline);
    if (cn->idle)
        event_free(cn->idle);
    atomic_fetch_sub(&w->nconns, 1);
    free(cn);
    conn_nofd_resume(w); /* one descriptor just came back */
}

/* evhttp calls this once, as the connection goes (free or reset). */
static void conn_closed(struct evhttp_connection *evcon, void *arg) {
    http_conn *cn = arg;
    if (cn->answering) {
        char *addr = NULL;
        ev_uint16_t port = 0;
        evhttp_connection_get_peer(evcon, &addr, &port);
        atomic_fetch_add(&cn->w->srv->counters.answers_cut, 1);
        objlog_logf_limited(&cn->w->log_cut, OBJLOG_LEVEL_WARNING, "http",
                           "answer to %s:%u cut: the connection closed before it "
                           "was written", addr ? addr : "?", port);
    }
    conn_forget(cn);
}

static int conn_register_fd(http_worker *w, http_conn *cn, int fd) {
    if (fd < 0)
        return -1;
    if (fd >= w->conns_size) {
        int size = w->conns_size ? w->conns_size : 64;
        while (size <= fd)
            size *= 2;
        http_conn **t = realloc(w->conns, (size_t)size * sizeof(*t));
        if (!t)
            return -1;
        memset(t + w->conns_size, 0, (size_t)(size - w->conns_size) * sizeof(*t));
        w->conns = t;
        w->conns_size = size;
    }
    w->conns[fd] = cn;
    cn->fd = fd;
    return 0;
}

/* ------------------------------------------------------------ idle */

static void conn_arm(struct event *ev, int ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(ev, &tv);
}

/* No request in progress: the connection may wait this long for one. */
static void conn_idle_arm(http_conn *cn) {
    int ms = cn->w->srv->conf.idle_timeout_ms;
    if (cn->reserve && ms > CONN_RESERVE_IDLE_MS)
        ms = CONN_RESERVE_IDLE_MS;
    conn_arm(cn->idle, ms);
}

/* Nothing of a request was read, so there is nothing to answer: the
 * socket is shut down and evhttp, reading EOF, frees the connection in
 * its own flow (conn_closed). */
static void conn_idle_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    http_conn *cn = arg;
    atomic_fetch_add(&cn->w->srv->counters.idle_closes, 1);
    shutdown(cn->fd, SHUT_RDWR);
}

/* Runs before any I/O callback of the connections it settles (priority 0,
 * activated from conn_new_bev): by now evhttp has set the bufferevent's
 * callbacks, whose argument is the evhttp_connection. A bufferevent whose
 * callbacks are gone was freed by evhttp on a failed setup; our reference
 * kept its memory valid until here. */
static void conn_settle_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    http_worker *w = arg;
    while (w->conn_new) {
        http_conn *cn = w->conn_new;
        w->conn_new = cn->next_new;
        bufferevent_event_cb errorcb = NULL;
        void *evcon = NULL;
        bufferevent_getcb(cn->bev, NULL, NULL, &errorcb, &evcon);
        struct bufferevent *bev = cn->bev;
        if (!errorcb || !evcon ||
            conn_register_fd(w, cn, bufferevent_getfd(bev)) < 0) {
            conn_forget(cn); /* freed by evhttp, or out of memory: untracked */
        } else {
            cn->settled = 1;
            evhttp_connection_set_closecb(evcon, conn_closed, cn);
            conn_idle_arm(cn);
        }
        bufferevent_decref(bev);
    }
}

/* ------------------------------------------------------------ request ids */

/* Request ids name answers in logs and errors (writes carry the
 * producer's own ids): unique, not secret. A getrandom(2) and 16
 * snprintf calls per request cost 11,000 instructions of a GET's 139,000;
 * splitmix64 over a per-worker random seed gives 128 bits in ~100. */
static uint64_t http_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void http_request_id(http_worker *w, char out[33]) {
    static const char hex[] = "0123456789abcdef";
    uint64_t v[2] = {http_splitmix64(&w->rid_state), http_splitmix64(&w->rid_state)};
    for (int i = 0; i < 32; i++)
        out[i] = hex[(v[i / 16] >> (60 - 4 * (i % 16))) & 15];
    out[32] = '\0';
}

/* ------------------------------------------------------------ refusals */

/* An answer written straight to the socket, for a request evhttp will
 * never dispatch; in the port's error format. evhttp writes nothing while
 * it reads a request (the last answer was written whole before reading
 * resumed), so these bytes go out alone. message: no quote, '<' or '&'. */
static void conn_send_error(http_conn *cn, int status, const char *reason, const char *code,
                            const char *message) {
    char rid[33], body[512], answer[1024];
    http_request_id(cn->w, rid);
    int bn = cn->face->edge_body(body, sizeof(body), code, message, rid);
    if (bn < 0 || (size_t)bn >= sizeof(body))
        bn = 0;
    if (cn->fr.method == FRAMING_M_HEAD)
        bn = 0; /* an answer to HEAD has no body */
    int n = snprintf(answer, sizeof(answer),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n%s: %s\r\nConnection: close\r\n"
                     "Content-Length: %d\r\n\r\n%.*s",
                     status, reason, cn->face->edge_content_type,
                     cn->face->request_id_header, rid, bn, bn, body);
    if (n > 0 && send(cn->fd, answer, (size_t)n < sizeof(answer) ? (size_t)n : sizeof(answer),
                      MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* the peer is gone already: the shutdown that follows ends it */
    }
}

static void conn_deadline_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    http_conn *cn = arg;
    http_worker *w = cn->w;
    if (cn->refused) { /* the linger after a refusal is over */
        shutdown(cn->fd, SHUT_RDWR);
        return;
    }
    atomic_fetch_add(&w->srv->counters.request_timeouts, 1);
    objlog_logf_limited(&w->log_timeout, OBJLOG_LEVEL_NOTICE, "http",
                       "closing a connection: its request was not complete within "
                       "%d ms", w->srv->conf.request_timeout_ms);
    conn_send_error(cn, 408, "Request Timeout", "RequestTimeout",
                    "the request was not complete in time");
    /* evhttp reads EOF, fails the request and frees the connection in its
     * own flow (conn_closed). */
    shutdown(cn->fd, SHUT_RDWR);
}

/* A request broke the framing rules: 400, and the connection closes
 * before evhttp reads any of it (its bytes, and all that follows, are
 * dropped: evhttp waits for more until it reads EOF and frees the
 * connection). Only the sending side is shut at once; reading goes on,
 * dropping everything, for CONN_LINGER_MS or until the client closes. */
static void conn_refuse(http_conn *cn) {
    http_worker *w = cn->w;
    struct evbuffer *in = bufferevent_get_input(cn->bev);
    cn->refused = 1;
    cn->refuse_at = UINT64_MAX;
    cn->receiving = 0;
    if (cn->held) {
        evbuffer_free(cn->held);
        cn->held = NULL;
    }
    evbuffer_drain(in, evbuffer_get_length(in));
    evtimer_del(cn->idle);
    atomic_fetch_add(&w->srv->counters.framing_errors, 1);
    objlog_logf_limited(&w->log_framing, OBJLOG_LEVEL_NOTICE, "http",
                       "refusing a request (400) and closing its connection: %s",
                       cn->fr.error);
    char msg[160];
    snprintf(msg, sizeof(msg), "the request's framing is malformed or ambiguous: %s",
             cn->fr.error);
    conn_send_error(cn, 400, "Bad Request", "BadRequest", msg);
    shutdown(cn->fd, SHUT_WR);
    conn_arm(cn->deadline, CONN_LINGER_MS);
}

/* The refused request is evhttp's next once it took every byte before it
 * and no earlier request of the connection waits for its answer; until
 * then evhttp parses and answers those earlier ones. */
static void conn_refuse_when_due(http_conn *cn) {
    if (cn->refuse_at == UINT64_MAX || cn->dispatched)
        return;
    uint64_t consumed = cn->added - evbuffer_get_length(bufferevent_get_input(cn->bev));
    if (consumed >= cn->refuse_at)
        conn_refuse(cn);
}

/* The n bytes just read (the input's last n) through the framing check;
 * -1 once a request broke it. */
static int conn_frame(http_conn *cn, struct evbuffer *buf, size_t n) {
    struct evbuffer_ptr pos;
    if (evbuffer_ptr_set(buf, &pos, evbuffer_get_length(buf) - n, EVBUFFER_PTR_SET) < 0)
        return 0;
    while (n > 0) {
        struct evbuffer_iovec v[8];
        int nv = evbuffer_peek(buf, (ev_ssize_t)n, &pos, v, 8);
        if (nv <= 0)
            return 0;
        for (int i = 0; i < nv && i < 8 && n > 0; i++) {
            size_t take = v[i].iov_len < n ? v[i].iov_len : n;
            if (framing_feed(&cn->fr, v[i].iov_base, take) < 0)
                return -1;
            n -= take;
            evbuffer_ptr_set(buf, &pos, take, EVBUFFER_PTR_ADD);
        }
    }
    return 0;
}

/* Runs as bytes are added to the input, before evhttp's read callback
 * parses them. */
static void conn_input_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
                          void *arg) {
    http_conn *cn = arg;
    if (info->n_added == 0 || !cn->settled || cn->shuffling)
        return;
    cn->added += info->n_added;
    if (cn->refused) { /* lingering: nothing more is served */
        evbuffer_drain(buf, evbuffer_get_length(buf));
        return;
    }
    if (cn->refuse_at == UINT64_MAX && conn_frame(cn, buf, info->n_added) < 0) {
        cn->refuse_at = cn->fr.msg_start;
        conn_refuse_when_due(cn);
        if (cn->refused)
            return;
    }
    if (cn->stream) {
        conn_stream_input(cn, buf, info->n_added);
        return;
    }
    if (cn->face->streams && cn->refuse_at == UINT64_MAX)
        conn_hold(cn, buf);
    if (cn->receiving)
        return;
    cn->receiving = 1;
    evtimer_del(cn->idle);
    conn_arm(cn->deadline, cn->w->srv->conf.request_timeout_ms);
}

/* ------------------------------------------------------------ streamed bodies */

/* Moves bytes in or out of the input without taking them for the peer's
 * (conn_input_cb ignores what it sees meanwhile). */
static void conn_shuffle_begin(http_conn *cn) { cn->shuffling = 1; }
static void conn_shuffle_end(http_conn *cn) { cn->shuffling = 0; }

static void conn_stream_free(http_conn *cn) {
    http_stream *s = cn->stream;
    if (!s)
        return;
    if (s->early)
        evbuffer_free(s->early);
    free(s);
    cn->stream = NULL;
}

/* Tells the handler how its body ended, once, if it took it and has not
 * answered yet. */
static void conn_stream_end(http_stream *s, int rc) {
    if (!s->started || s->ended)
        return;
    s->ended = 1;
    s->end(s->arg, rc);
}

/* evhttp's read callback must not run while a dispatched request's body
 * streams (it would take the bytes for a request of their own): a low
 * watermark above anything the input holds keeps it quiet, since every
 * body byte is taken from the input as it arrives. */
static void conn_stream_quiet(http_conn *cn, int on) {
    bufferevent_setwatermark(cn->bev, EV_READ, on ? SIZE_MAX / 2 : 0, 0);
}

/* Hands bytes to the sink; -1 when it refused them (the stream is DEAD). */
static int conn_stream_deliver(http_stream *s, struct evbuffer *from, size_t n) {
    while (n > 0) {
        struct evbuffer_iovec v[8];
        int nv = evbuffer_peek(from, (ev_ssize_t)n, NULL, v, 8);
        if (nv <= 0)
            break;
        size_t took = 0;
        for (int i = 0; i < nv && i < 8 && took < n; i++) {
            size_t k = v[i].iov_len < n - took ? v[i].iov_len : n - took;
            if (s->data(s->arg, v[i].iov_base, k) < 0) {
                s->state = STREAM_DEAD;
                return -1;
            }
            took += k;
        }
        evbuffer_drain(from, took);
        n -= took;
    }
    return 0;
}

/* Every body byte read: reading stops until the answer is out (evhttp
 * starts the next request then). The watermark stays up until the answer
 * begins: the read that brought the last bytes checks it right after
 * this, and evhttp's read callback must not run before it answers. */
static void conn_stream_done(http_conn *cn) {
    http_stream *s = cn->stream;
    s->state = STREAM_DONE;
    evtimer_del(cn->deadline);
    bufferevent_disable(cn->bev, EV_READ);
    if (s->started)
        conn_stream_end(s, 0);
}

/* The last n bytes of the input, read for a streamed body: its bytes are
 * taken (to the sink, or gathered until the handler starts); what follows
 * the body stays for evhttp. */
static void conn_stream_input(http_conn *cn, struct evbuffer *buf, size_t n) {
    http_stream *s = cn->stream;
    if (s->state == STREAM_DEAD) {
        conn_shuffle_begin(cn);
        evbuffer_drain(buf, evbuffer_get_length(buf));
        conn_shuffle_end(cn);
        return;
    }
    if (s->state == STREAM_DONE)
        return;
    size_t take = s->left < n ? (size_t)s->left : n;
    s->left -= take;
    conn_shuffle_begin(cn);
    int rc = 0;
    if (s->state == STREAM_FLOWING)
        rc = conn_stream_deliver(s, buf, take);
    else
        evbuffer_remove_buffer(buf, s->early, take);
    conn_shuffle_end(cn);
    if (rc < 0) {
        evtimer_del(cn->deadline);
        conn_stream_end(s, -1);
        return;
    }
    if (s->left == 0) {
        conn_stream_done(cn);
        return;
    }
    if (s->state != STREAM_HELD) /* a stalled body ends like a stalled head */
        conn_arm(cn->deadline, cn->w->srv->conf.request_timeout_ms);
    if (s->state == STREAM_WAITING && evbuffer_get_length(s->early) >= STREAM_EARLY_MAX)
        bufferevent_disable(cn->bev, EV_READ); /* until the handler takes it */
}

/* A line of head[0..n) that starts at i, up to its CRLF: its end. */
static size_t conn_line_end(const char *head, size_t n, size_t i) {
    while (i + 1 < n && !(head[i] == '\r' && head[i + 1] == '\n'))
        i++;
    return i;
}

/* The held head (n bytes) as evhttp is to read it: Content-Length 0, the
 * value sent kept in s. NULL out of memory or when the field is not found
 * (framing saw exactly one). */
static char *conn_head_rewrite(const char *head, size_t n, http_stream *s, size_t *out_n) {
    size_t i = conn_line_end(head, n, 0) + 2;
    while (i < n) {
        size_t e = conn_line_end(head, n, i);
        const char *line = head + i;
        size_t ln = e - i;
        if (ln > 7 && strncasecmp(line, "expect:", 7) == 0) {
            const char *v = line + 7;
            while (*v == ' ' || *v == '\t')
                v++;
            s->expect_continue = strncasecmp(v, "100-continue", 12) == 0;
        }
        if (ln > 15 && strncasecmp(line, "content-length:", 15) == 0) {
            size_t vs = i + 15, ve = e;
            while (vs < ve && (head[vs] == ' ' || head[vs] == '\t'))
                vs++;
            while (ve > vs && (head[ve - 1] == ' ' || head[ve - 1] == '\t'))
                ve--;
            snprintf(s->length_text, sizeof(s->length_text), "%.*s", (int)(ve - vs), head + vs);
            char *out = malloc(n + 1);
            if (!out)
                return NULL;
            memcpy(out, head, i + 15);
            out[i + 15] = '0';
            memcpy(out + i + 16, head + e, n - e);
            *out_n = i + 16 + (n - e);
            for (size_t j = e + 2; j < n && !s->expect_continue;) { /* an Expect after it */
                size_t je = conn_line_end(head, n, j);
                if (je - j > 7 && strncasecmp(head + j, "expect:", 7) == 0) {
                    const char *v = head + j + 7;
                    while (*v == ' ' || *v == '\t')
                        v++;
                    s->expect_continue = strncasecmp(v, "100-continue", 12) == 0;
                }
                j = je + 2;
            }
            return out;
        }
        i = e + 2;
    }
    return NULL;
}

/* The held bytes go to evhttp as they came. */
static void conn_release(http_conn *cn, struct evbuffer *buf) {
    conn_shuffle_begin(cn);
    evbuffer_add_buffer(buf, cn->held);
    conn_shuffle_end(cn);
    evbuffer_free(cn->held);
    cn->held = NULL;
}

/* The held PUT's head is whole and its body long: the head goes to evhttp
 * with Content-Length 0, its body to a stream. Falls back to releasing it
 * as it came when the face wants it whole, or out of memory. */
static void conn_stream_begin(http_conn *cn, struct evbuffer *buf) {
    size_t head_n = (size_t)(cn->fr.body_at - cn->held_at);
    size_t out_n = 0;
    http_stream *s = calloc(1, sizeof(*s));
    const char *head = s && evbuffer_get_length(cn->held) >= head_n
                           ? (const char *)evbuffer_pullup(cn->held, (ev_ssize_t)head_n)
                           : NULL;
    int wanted = head && (!cn->face->stream_wanted || cn->face->stream_wanted(head, head_n));
    char *rewritten = wanted ? conn_head_rewrite(head, head_n, s, &out_n) : NULL;
    if (!rewritten || !(s->early = evbuffer_new())) {
        free(rewritten);
        free(s);
        conn_release(cn, buf);
        return;
    }
    s->cn = cn;
    s->length = cn->fr.body_len;
    evbuffer_drain(cn->held, head_n);
    size_t got = evbuffer_get_length(cn->held);
    s->left = s->length - got;
    evbuffer_add_buffer(s->early, cn->held);
    evbuffer_free(cn->held);
    cn->held = NULL;
    cn->stream = s;
    conn_shuffle_begin(cn);
    evbuffer_add(buf, rewritten, out_n);
    conn_shuffle_end(cn);
    free(rewritten);
}

/* A face that streams: a PUT is held from evhttp from its first byte until
 * its head is whole, then streamed (a body over HTTP_STREAM_MIN with a
 * Content-Length) or released. A request behind others evhttp has not
 * read yet (pipelined) is read whole, as before. */
static void conn_hold(http_conn *cn, struct evbuffer *buf) {
    framing *f = &cn->fr;
    int head = framing_in_head(f);
    int same = cn->held && f->msg_start == cn->held_at;
    int body = !head && f->body_at > f->msg_start && f->remaining > 0 && f->body_len;
    if (cn->held) {
        conn_shuffle_begin(cn);
        evbuffer_add_buffer(cn->held, buf);
        conn_shuffle_end(cn);
        if (same && head)
            return;
        if (same && body && f->body_len > HTTP_STREAM_MIN)
            conn_stream_begin(cn, buf);
        else
            conn_release(cn, buf);
        return;
    }
    int put = f->verb_len == 3 && memcmp(f->verb, "PUT", 3) == 0;
    if (!put || evbuffer_get_length(buf) != cn->added - f->msg_start)
        return;
    if (!head && !(body && f->body_len > HTTP_STREAM_MIN))
        return;
    if (!(cn->held = evbuffer_new()))
        return;
    cn->held_at = f->msg_start;
    conn_shuffle_begin(cn);
    evbuffer_add_buffer(cn->held, buf);
    conn_shuffle_end(cn);
    if (!head)
        conn_stream_begin(cn, buf);
}

/* The client waits for 100 Continue before its body. Written through the
 * bufferevent (TLS too) with evhttp's write callback off: that callback
 * runs the end of the last answer evhttp wrote on this connection, which
 * would end this request. evhttp sets its callbacks again when it
 * answers. */
static void conn_send_continue(http_conn *cn) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    bufferevent_data_cb readcb;
    bufferevent_event_cb eventcb;
    void *arg;
    bufferevent_getcb(cn->bev, &readcb, NULL, &eventcb, &arg);
    bufferevent_setcb(cn->bev, readcb, NULL, eventcb, arg);
    bufferevent_write(cn->bev, cont, sizeof(cont) - 1);
    bufferevent_enable(cn->bev, EV_WRITE);
}

http_stream *http_stream_of(http_ctx *c) {
    http_conn *cn = conn_of(c->w, c->req);
    return cn && cn->stream && cn->stream->state != STREAM_HELD ? cn->stream : NULL;
}

uint64_t http_stream_length(const http_stream *s) { return s->length; }

void http_stream_start(http_stream *s, http_stream_data_fn *data, http_stream_end_fn *end,
                       void *arg) {
    http_conn *cn = s->cn;
    s->data = data;
    s->end = end;
    s->arg = arg;
    s->started = 1;
    if (s->state == STREAM_DEAD) {
        conn_stream_end(s, -1);
        return;
    }
    size_t early = evbuffer_get_length(s->early);
    if (early && conn_stream_deliver(s, s->early, early) < 0) {
        conn_stream_end(s, -1);
        return;
    }
    if (s->state == STREAM_DONE) {
        conn_stream_end(s, 0);
        return;
    }
    s->state = STREAM_FLOWING;
    if (s->expect_continue && s->left == s->length)
        conn_send_continue(cn);
    bufferevent_enable(cn->bev, EV_READ);
}

/* ------------------------------------------------------------ new connections */

/* evhttp_set_bevcb: evhttp sets the socket and its callbacks right after;
 * conn_settle_cb picks the connection up before any of its I/O. */
static struct bufferevent *conn_new(http_worker *w, const http_face *face) {
    struct event_base *base = w->base;
    http_conn *cn = calloc(1, sizeof(*cn));
    struct bufferevent *bev = tls_serves(w->srv->conf.tls) ? tls_server_bev(w->srv->conf.tls, base)
                              : bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct event *deadline = cn ? evtimer_new(base, conn_deadline_cb, cn) : NULL;
    struct event *idle = cn ? evtimer_new(base, conn_idle_cb, cn) : NULL;
    struct evbuffer_cb_entry *in =
        bev && deadline && idle
            ? evbuffer_add_cb(bufferevent_get_input(bev), conn_input_cb, cn)
            : NULL;
    if (!in) {
        /* evhttp makes a bufferevent of its own: served, not counted */
        if (deadline)
            event_free(deadline);
        if (idle)
            event_free(idle);
        if (bev)
            bufferevent_free(bev);
        free(cn);
        return NULL;
    }
    cn->w = w;
    cn->bev = bev;
    cn->fd = -1;
    cn->deadline = deadline;
    cn->idle = idle;
    cn->input_cb = in;
    cn->face = face;
    cn->refuse_at = UINT64_MAX;
    framing_init(&cn->fr);
    bufferevent_incref(bev);
    cn->next_new = w->conn_new;
    w->conn_new = cn;
    event_active(w->conn_settle_ev, 0, 0);
    /* only a listener with reserved paths accepts past the cap */
    cn->reserve = atomic_fetch_add(&w->nconns, 1) >= w->conn_cap && face->reserved_path;
    conn_listeners_update(w);
    conn_check_floor(w);
    return bev;
}

/* evhttp_set_bevcb gives one pointer: the listener, whose worker is the
 * thread's (conn_worker_thread). */
static struct bufferevent *conn_new_bev(struct event_base *base, void *arg) {
    (void)base;
    http_listener *l = arg;
    return conn_new(conn_this_worker, l->face);
}

/* ------------------------------------------------------------ requests */

static http_conn *conn_of(http_worker *w, struct evhttp_request *req) {
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    if (!evcon)
        return NULL;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    int fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0 || fd >= w->conns_size || !w->conns[fd] || w->conns[fd]->bev != bev)
        return NULL;
    return w->conns[fd];
}

int conn_request_dispatched(http_worker *w, struct evhttp_request *req) {
    http_conn *cn = conn_of(w, req);
    if (!cn)
        return 0;
    cn->receiving = 0;
    cn->dispatched = 1;
    evtimer_del(cn->deadline);
    bufferevent_disable(cn->bev, EV_READ);
    http_stream *s = cn->stream;
    if (s && s->state == STREAM_HELD) { /* its body reads on while it is served */
        struct evkeyvalq *h = evhttp_request_get_input_headers(req);
        evhttp_remove_header(h, "Content-Length");
        evhttp_add_header(h, "Content-Length", s->length_text);
        s->state = STREAM_WAITING;
        if (s->left == 0) {
            conn_stream_done(cn);
        } else {
            conn_stream_quiet(cn, 1);
            conn_arm(cn->deadline, cn->w->srv->conf.request_timeout_ms);
            if (evbuffer_get_length(s->early) < STREAM_EARLY_MAX)
                bufferevent_enable(cn->bev, EV_READ);
        }
    }
    return cn->reserve;
}

/* evhttp_send_done, before evhttp reads the next request: a refused one
 * may be due now; a pipelined one is under its deadline from here; else
 * the connection is idle. */
static void conn_answer_written(struct evhttp_request *req, void *arg) {
    (void)req;
    http_conn *cn = arg;
    cn->answering = 0;
    cn->dispatched = 0;
    conn_stream_free(cn);
    conn_refuse_when_due(cn);
    if (cn->refused)
        return;
    if (evbuffer_get_length(bufferevent_get_input(cn->bev)) > 0) {
        cn->receiving = 1;
        conn_arm(cn->deadline, cn->w->srv->conf.request_timeout_ms);
    } else {
        conn_idle_arm(cn);
    }
}

http_conn *conn_answer_begin(http_worker *w, struct evhttp_request *req) {
    http_conn *cn = conn_of(w, req);
    if (!cn)
        return NULL;
    cn->answering = 1;
    http_stream *s = cn->stream;
    if (s && s->state != STREAM_DONE) {
        /* answered before its body was read: what is left of it is
         * dropped, and the connection closes after the answer */
        s->ended = 1;
        s->state = STREAM_DEAD;
        evtimer_del(cn->deadline);
    }
    if (s) /* evhttp takes the read callback away while it writes */
        conn_stream_quiet(cn, 0);
    if (cn->reserve || (s && s->state == STREAM_DEAD))
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    evhttp_request_set_on_complete_cb(req, conn_answer_written, cn);
    return cn;
}

/* evhttp_send_reply turned reading back on to notice a close while it
 * writes; a half-close would then drop the rest of the answer. */
void conn_answer_sent(http_conn *cn) {
    if (cn)
        bufferevent_disable(cn->bev, EV_READ);
}

/* ------------------------------------------------------------ workers */

int conn_worker_init(http_worker *w, char *errstr, size_t errstr_size) {
    const server *s = w->srv;
    int per_worker = (s->conf.max_connections + s->nworkers - 1) / s->nworkers;
    w->conn_cap = per_worker > 0 ? per_worker : 1;
    w->log_accept.interval_ms = CONN_LOG_INTERVAL_MS;
    w->log_timeout.interval_ms = CONN_LOG_INTERVAL_MS;
    w->log_cut.interval_ms = CONN_LOG_INTERVAL_MS;
    w->log_framing.interval_ms = CONN_LOG_INTERVAL_MS;
    w->log_floor.interval_ms = CONN_LOG_INTERVAL_MS;
    struct rlimit rl;
    w->fd_limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)INT_MAX
                      ? (int)rl.rlim_cur
                      : INT_MAX;
    /* a tiny limit keeps a quarter: connections still get the rest */
    int kept = w->fd_limit / 4 < CONN_FD_FLOOR ? w->fd_limit / 4 : CONN_FD_FLOOR;
    w->fd_floor_at = w->fd_limit - kept;
    w->probe_fd = -1;
    w->conn_settle_ev = event_new(w->base, -1, 0, conn_settle_cb, w);
    w->accept_resume_ev = evtimer_new(w->base, conn_resume_cb, w);
    if (!w->conn_settle_ev || !w->accept_resume_ev ||
        event_priority_set(w->conn_settle_ev, 0) < 0) {
        snprintf(errstr, errstr_size, "connections: out of memory");
        return -1;
    }
    /* every listener's connections count with the others */
    for (int i = 0; i < w->nls; i++) {
        http_listener *l = &w->ls[i];
        l->lev_on = 1; /* evhttp enables its listeners */
        l->lev = evhttp_bound_socket_get_listener(l->bound);
        if (!l->lev) {
            snprintf(errstr, errstr_size, "connections: no %s listener", l->face->name);
            return -1;
        }
        evconnlistener_set_error_cb(l->lev, conn_accept_error);
        if (w->probe_fd < 0)
            w->probe_fd = evconnlistener_get_fd(l->lev);
        evhttp_set_bevcb(l->http, conn_new_bev, l);
    }
    return 0;
}

void conn_worker_thread(http_worker *w) { conn_this_worker = w; }

/* Before evhttp lets go of the listener. */
void conn_worker_stop(http_worker *w) {
    if (w->accept_resume_ev)
        evtimer_del(w->accept_resume_ev);
    for (int i = 0; i < w->nls; i++)
        w->ls[i].lev = NULL;
}

/* After evhttp_free (which closed every connection through conn_closed). */
void conn_worker_free(http_worker *w) {
    if (w->conn_settle_ev)
        conn_settle_cb(-1, 0, w); /* accepted but never settled */
    if (w->conn_settle_ev)
        event_free(w->conn_settle_ev);
    if (w->accept_resume_ev)
        event_free(w->accept_resume_ev);
    free(w->conns);
    w->conns = NULL;
}
