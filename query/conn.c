/* conn.c: objlogd's connections, the limits evhttp 2.1 cannot keep by
 * itself (issue 11 item 12). evhttp creates each accepted connection's
 * bufferevent through our hook (conn_new_bev); from it we learn the
 * connection's evhttp_connection and register a close callback, so every
 * worker knows its open connections exactly. With that a worker keeps:
 *
 *  - at most conn_cap connections: its listener is off while it is full,
 *    and for CONN_NOFD_PAUSE_MS after accept() ran out of descriptors
 *    (evconnlistener would retry at once, forever: a busy loop that once
 *    wrote 552 MB of the same warning in a minute);
 *  - a request arrives whole (headers, and a body of at most
 *    HTTP_MAX_BODY) within request_timeout_ms of its first byte, or it is
 *    answered 408 and the socket shut down (evhttp's own timeout restarts
 *    on every byte, so a client sending a header line every 2 s kept its
 *    connection forever);
 *  - an answer handed to evhttp is written whole: reading is off from
 *    dispatch until the answer is out, so a client that half-closes after
 *    its request is not taken for a failure (evhttp reads during a write to
 *    detect closes, and a read EOF dropped what was not yet written); an
 *    answer the peer never took (reset, gone) is logged and counted as cut.
 *
 * Everything here runs on the worker's thread. */
#define _GNU_SOURCE
#include "internal.h"
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#define CONN_NOFD_PAUSE_MS 100
#define CONN_LOG_INTERVAL_MS 10000

struct http_conn {
    http_worker *w;
    struct bufferevent *bev;     /* evhttp's; alive until conn_closed */
    struct evbuffer_cb_entry *input_cb;
    struct event *deadline;      /* the request's, armed at its first byte */
    http_conn *next_new;         /* on w->conn_new until settled */
    int fd;                      /* -1 until settled */
    unsigned settled : 1;        /* close callback registered */
    unsigned receiving : 1;      /* a request's bytes arrived, not dispatched */
    unsigned answering : 1;      /* an answer handed to evhttp, not written */
};

/* The worker running on this thread. evconnlistener's error callback gets
 * evhttp's pointer, not ours, and evhttp 2.1 has no way back to its owner;
 * each worker has a thread of its own, so the thread says which it is. */
static __thread http_worker *conn_this_worker;

static void conn_pause(http_worker *w, unsigned reason) {
    if (!w->accept_paused && w->lev)
        evconnlistener_disable(w->lev);
    if (!w->accept_paused && w->s3lev)
        evconnlistener_disable(w->s3lev);
    if (!(w->accept_paused & reason))
        atomic_fetch_add(&w->q->conn_pauses[reason == CONN_PAUSE_FULL ? 0 : 1], 1);
    w->accept_paused |= reason;
}

static void conn_resume(http_worker *w, unsigned reason) {
    if (!(w->accept_paused & reason))
        return;
    w->accept_paused &= ~reason;
    if (!w->accept_paused && w->lev && !w->stopping)
        evconnlistener_enable(w->lev);
    if (!w->accept_paused && w->s3lev && !w->stopping)
        evconnlistener_enable(w->s3lev);
}

static void conn_resume_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    conn_resume(arg, CONN_PAUSE_NOFD);
}

/* Out of descriptors (ours or the system's): stop accepting for a while
 * instead of retrying at once; a closed connection resumes sooner. */
static void conn_accept_error(struct evconnlistener *lev, void *http) {
    (void)http;
    int err = EVUTIL_SOCKET_ERROR();
    http_worker *w = conn_this_worker;
    if (!w || (w->lev != lev && w->s3lev != lev))
        return;
    int nofd = err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
    objlog_logf_limited(&w->log_accept, OBJLOG_LEVEL_WARNING, "http",
                       "accept: %s; not accepting for %d ms (%d connections open on "
                       "this worker)", strerror(err), CONN_NOFD_PAUSE_MS,
                       atomic_load(&w->nconns));
    if (!nofd)
        return; /* other errors are the peer's (evconnlistener retries those) */
    conn_pause(w, CONN_PAUSE_NOFD);
    struct timeval tv = {0, CONN_NOFD_PAUSE_MS * 1000};
    evtimer_add(w->accept_resume_ev, &tv);
}

/* ------------------------------------------------------------ lifetime */

static void conn_forget(http_conn *cn) {
    http_worker *w = cn->w;
    if (cn->fd >= 0 && cn->fd < w->conns_size && w->conns[cn->fd] == cn)
        w->conns[cn->fd] = NULL;
    if (cn->input_cb)
        evbuffer_remove_cb_entry(bufferevent_get_input(cn->bev), cn->input_cb);
    if (cn->deadline)
        event_free(cn->deadline);
    atomic_fetch_sub(&w->nconns, 1);
    free(cn);
    conn_resume(w, CONN_PAUSE_FULL);
    conn_resume(w, CONN_PAUSE_NOFD); /* one descriptor just came back */
}

/* evhttp calls this once, as the connection goes (free or reset). */
static void conn_closed(struct evhttp_connection *evcon, void *arg) {
    http_conn *cn = arg;
    if (cn->answering) {
        char *addr = NULL;
        ev_uint16_t port = 0;
        evhttp_connection_get_peer(evcon, &addr, &port);
        atomic_fetch_add(&cn->w->q->answers_cut, 1);
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
        }
        bufferevent_decref(bev);
    }
}

/* ------------------------------------------------------------ deadline */

static void conn_deadline_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    http_conn *cn = arg;
    http_worker *w = cn->w;
    atomic_fetch_add(&w->q->request_timeouts, 1);
    objlog_logf_limited(&w->log_timeout, OBJLOG_LEVEL_NOTICE, "http",
                       "closing a connection: its request was not complete within "
                       "%d ms", w->q->request_timeout_ms);
    /* evhttp writes nothing while it reads a request (the last answer was
     * written whole before reading resumed), so these bytes go out alone. */
    static const char body[] = "{\"error\":{\"code\":\"RequestTimeout\",\"message\":"
                               "\"the request was not complete in time\"}}\n";
    char answer[256];
    int n = snprintf(answer, sizeof(answer),
                     "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
                     sizeof(body) - 1, body);
    if (send(cn->fd, answer, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* the peer is gone already: the shutdown below ends it */
    }
    /* evhttp reads EOF, fails the request and frees the connection in its
     * own flow (conn_closed). */
    shutdown(cn->fd, SHUT_RDWR);
}

static void conn_input_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
                          void *arg) {
    (void)buf;
    http_conn *cn = arg;
    if (info->n_added == 0 || cn->receiving || !cn->settled)
        return;
    cn->receiving = 1;
    int ms = cn->w->q->request_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(cn->deadline, &tv);
}

/* ------------------------------------------------------------ new connections */

/* evhttp_set_bevcb: evhttp sets the socket and its callbacks right after;
 * conn_settle_cb picks the connection up before any of its I/O. */
static struct bufferevent *conn_new_bev(struct event_base *base, void *arg) {
    http_worker *w = arg;
    http_conn *cn = calloc(1, sizeof(*cn));
    struct bufferevent *bev = tls_serves(w->q->tls) ? tls_server_bev(w->q->tls, base)
                              : bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct event *deadline = cn ? evtimer_new(base, conn_deadline_cb, cn) : NULL;
    struct evbuffer_cb_entry *in =
        bev && deadline ? evbuffer_add_cb(bufferevent_get_input(bev), conn_input_cb, cn)
                        : NULL;
    if (!in) {
        /* evhttp makes a bufferevent of its own: served, not counted */
        if (deadline)
            event_free(deadline);
        if (bev)
            bufferevent_free(bev);
        free(cn);
        return NULL;
    }
    cn->w = w;
    cn->bev = bev;
    cn->fd = -1;
    cn->deadline = deadline;
    cn->input_cb = in;
    bufferevent_incref(bev);
    cn->next_new = w->conn_new;
    w->conn_new = cn;
    event_active(w->conn_settle_ev, 0, 0);
    if (atomic_fetch_add(&w->nconns, 1) + 1 >= w->conn_cap)
        conn_pause(w, CONN_PAUSE_FULL);
    return bev;
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

void conn_request_dispatched(http_worker *w, struct evhttp_request *req) {
    http_conn *cn = conn_of(w, req);
    if (!cn)
        return;
    cn->receiving = 0;
    evtimer_del(cn->deadline);
    bufferevent_disable(cn->bev, EV_READ);
}

static void conn_answer_written(struct evhttp_request *req, void *arg) {
    (void)req;
    http_conn *cn = arg;
    cn->answering = 0;
}

http_conn *conn_answer_begin(http_worker *w, struct evhttp_request *req) {
    http_conn *cn = conn_of(w, req);
    if (!cn)
        return NULL;
    cn->answering = 1;
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
    objlog_query *q = w->q;
    int per_worker = (q->max_connections + q->nworkers - 1) / q->nworkers;
    w->conn_cap = per_worker > 0 ? per_worker : 1;
    w->log_accept.interval_ms = CONN_LOG_INTERVAL_MS;
    w->log_timeout.interval_ms = CONN_LOG_INTERVAL_MS;
    w->log_cut.interval_ms = CONN_LOG_INTERVAL_MS;
    w->conn_settle_ev = event_new(w->base, -1, 0, conn_settle_cb, w);
    w->accept_resume_ev = evtimer_new(w->base, conn_resume_cb, w);
    w->lev = evhttp_bound_socket_get_listener(w->bound);
    if (!w->conn_settle_ev || !w->accept_resume_ev || !w->lev ||
        event_priority_set(w->conn_settle_ev, 0) < 0) {
        snprintf(errstr, errstr_size, "connections: out of memory");
        return -1;
    }
    evconnlistener_set_error_cb(w->lev, conn_accept_error);
    evhttp_set_bevcb(w->http, conn_new_bev, w);
    if (w->s3http) { /* the S3 listener's connections count with the others */
        w->s3lev = evhttp_bound_socket_get_listener(w->s3bound);
        if (!w->s3lev) {
            snprintf(errstr, errstr_size, "connections: no S3 listener");
            return -1;
        }
        evconnlistener_set_error_cb(w->s3lev, conn_accept_error);
        evhttp_set_bevcb(w->s3http, conn_new_bev, w);
    }
    return 0;
}

void conn_worker_thread(http_worker *w) { conn_this_worker = w; }

/* Before evhttp lets go of the listener. */
void conn_worker_stop(http_worker *w) {
    if (w->accept_resume_ev)
        evtimer_del(w->accept_resume_ev);
    w->lev = NULL;
    w->s3lev = NULL;
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
