/* forward.c: a cluster node answering a read for a partition another node
 * applies. The request goes as it came (method, path
 * and query, headers, body) to that node over a kept-alive connection of
 * this worker (evhttp's client on the worker's own event_base), and its
 * answer comes back as it went, with X-Objlog-Node (the node that
 * answered) and X-Objlog-Forwarded-By (this one). The node that answers
 * fences the read as always, so forwarding never weakens a consistency
 * mode.
 *
 * One hop only: a forwarded request carries X-Objlog-Hop and is never
 * forwarded again, so two nodes whose membership views disagree for a
 * moment cannot bounce it. Bounded: at most FWD_MAX_INFLIGHT forwards per
 * worker, past that 503 SlowDown.
 *
 * Invariant: every forwarded request is answered exactly once, on its
 * worker's thread: with the peer's answer, with 503 when the peer cannot
 * be reached, or as its worker stops (the stop hook), after its peer
 * request is cancelled.
 *
 * A circle with cluster.c, on purpose: cluster.c routes a read here, and
 * a failed peer is reported back to it (cluster_mark_down) so the retry
 * picks another replica. */
#include "core.h"
#include "cluster.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>

#define FWD_MAX_PEERS 32
#define FWD_MAX_INFLIGHT 256
/* A read may wait up to --max-timeout-ms at the peer; the hop waits a
 * little longer than the longest the peer would. */
#define FWD_TIMEOUT_SLACK_S 5
#define FWD_HOP_HEADER "X-Objlog-Hop"

typedef struct fwd_peer {
    char url[256];
    struct evhttp_connection *conn;
} fwd_peer;

/* An answer relayed as it arrives holds at most this much unsent to the
 * client: past it the peer is not read until the client has taken it. */
#define FWD_STREAM_HIGH (4 << 20)
/* evhttp reads a peer 4 KiB at a time (libevent 2.1); the client gets
 * pieces of at least this much, so that each read does not cost a write. */
#define FWD_PIECE (256 << 10)
/* While the peer is not read: how often to look whether the client left. */
#define FWD_PAUSE_CHECK_MS 500

typedef struct fwd_req fwd_req;
struct fwd_req {
    http_ctx c;                  /* the client's request (params not kept) */
    struct evhttp_request *out;  /* ours to the peer, until its callback */
    char node[256];              /* the peer (its JSON URL: who it is) */
    int32_t part;                /* the partition it is for, -1 several */
    int retried;                 /* sent on to a second replica already */
    int status;                  /* the peer's answer's, once its head came */
    int relaying;                /* its head came (and its headers are c's) */
    int streaming;               /* ... and went to the client, body to follow */
    int paused;                  /* the peer is not read (client behind) */
    struct event *check;         /* paused, or the client left: see fwd_check_cb */
    struct evbuffer *held;       /* read from the peer, not yet a piece */
    fwd_req *prev, *next;
};

struct gather;
struct fwd_state {
    fwd_peer peers[FWD_MAX_PEERS];
    int npeers;
    fwd_req *live;
    int inflight;
    struct gather *gathers;      /* in flight, answered at worker stop */
};

static void gather_expire_worker(http_worker *w);

static void fwd_count(http_worker *w, forward_result res) {
    cluster_forward_done(w->q->cluster, res);
}

/* The worker's forwards (its server slot). */
static struct fwd_state *fwd_of(const http_worker *w) {
    return server_slot(w, cluster_forward_slot(w->q->cluster));
}

static int forward_worker_init(void *arg, http_worker *w, void **state, char *errstr,
                               size_t errstr_size) {
    (void)arg;
    (void)w;
    *state = calloc(1, sizeof(struct fwd_state));
    if (!*state)
        snprintf(errstr, errstr_size, "forward: out of memory");
    return *state ? 0 : -1;
}

static void forward_worker_dispose(void *arg, http_worker *w, void *state) {
    (void)arg;
    (void)w;
    struct fwd_state *f = state;
    for (int i = 0; f && i < f->npeers; i++)
        if (f->peers[i].conn)
            evhttp_connection_free(f->peers[i].conn);
    free(f);
}

/* A connection of its own to an https:// peer, freed when its request
 * completes: evhttp would reuse an SSL bufferevent for a reconnection,
 * which an SSL session cannot survive, so TLS connections are not kept. */
static struct evhttp_connection *fwd_tls_conn(http_worker *w, const char *url) {
    if (!w->q->tls)
        return NULL; /* an https:// peer and no TLS here: objlogd refuses that */
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    int port = u ? evhttp_uri_get_port(u) : -1;
    struct bufferevent *bev = host ? tls_client_bev(w->q->tls, w->base, host) : NULL;
    struct evhttp_connection *conn =
        bev ? evhttp_connection_base_bufferevent_new(w->base, NULL, bev, host,
                                                     (ev_uint16_t)(port > 0 ? port : 443))
            : NULL;
    if (u)
        evhttp_uri_free(u);
    if (!conn) {
        if (bev)
            bufferevent_free(bev);
        return NULL;
    }
    evhttp_connection_set_timeout(conn, w->srv->conf.max_timeout_ms / 1000 + FWD_TIMEOUT_SLACK_S);
    evhttp_connection_set_retries(conn, 0);
    evhttp_connection_free_on_completion(conn);
    return conn;
}

/* This worker's connection to the node at url, made on first use. */
static struct evhttp_connection *fwd_conn(http_worker *w, const char *url) {
    struct fwd_state *s = fwd_of(w);
    if (strncmp(url, "https://", 8) == 0)
        return fwd_tls_conn(w, url);
    for (int i = 0; i < s->npeers; i++)
        if (strcmp(s->peers[i].url, url) == 0)
            return s->peers[i].conn;
    if (s->npeers == FWD_MAX_PEERS)
        return NULL;
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    int port = u ? evhttp_uri_get_port(u) : -1;
    struct evhttp_connection *conn =
        host ? evhttp_connection_base_new(w->base, NULL, host,
                                          (ev_uint16_t)(port > 0 ? port : 80))
             : NULL;
    if (u)
        evhttp_uri_free(u);
    if (!conn)
        return NULL;
    evhttp_connection_set_timeout(conn, w->srv->conf.max_timeout_ms / 1000 + FWD_TIMEOUT_SLACK_S);
    evhttp_connection_set_retries(conn, 0);
    fwd_peer *p = &s->peers[s->npeers++];
    snprintf(p->url, sizeof(p->url), "%s", url);
    p->conn = conn;
    return conn;
}

/* What follows the scheme of a node's URL: its Host header. */
static const char *fwd_host_of(const char *url) {
    const char *s = strstr(url, "://");
    return s ? s + 3 : url;
}

static void fwd_unlink(http_worker *w, fwd_req *r) {
    if (r->prev)
        r->prev->next = r->next;
    else
        fwd_of(w)->live = r->next;
    if (r->next)
        r->next->prev = r->prev;
    fwd_of(w)->inflight--;
}

/* Headers that describe one connection, not the message; and the
 * client's credentials, which the peer never sees: it learns who asks
 * from this node's signature (apiguard.c). */
static int fwd_named(const char *k, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (evutil_ascii_strcasecmp(k, names[i]) == 0)
            return 1;
    return 0;
}

static int fwd_hop_by_hop(const char *k) {
    static const char *const names[] = {"Connection", "Keep-Alive", "Transfer-Encoding",
                                        "Content-Length", "TE", "Trailer", "Upgrade",
                                        "Proxy-Connection", "Expect", NULL};
    return fwd_named(k, names);
}

/* What the client sent that a face forwarding "as sent" keeps (a SigV4
 * signature covers them) and another replaces. */
static int fwd_as_sent(const char *k) {
    static const char *const names[] = {"Host", "Date", "Authorization", NULL};
    return fwd_named(k, names);
}

static void fwd_copy_request_headers(struct evkeyvalq *to, struct evkeyvalq *from,
                                     int as_sent) {
    for (struct evkeyval *kv = from->tqh_first; kv; kv = kv->next.tqe_next)
        if (!fwd_hop_by_hop(kv->key) && (as_sent || !fwd_as_sent(kv->key)))
            evhttp_add_header(to, kv->key, kv->value);
}

static int fwd_answer_header(const char *k) {
    return evutil_ascii_strcasecmp(k, "Content-Length") == 0 ||
           (!fwd_hop_by_hop(k) && !fwd_as_sent(k));
}

/* The peer's answer's headers, in place of any this node set already (a
 * request id, the node that answers); its Content-Length too, which the
 * body relayed as it came keeps true (and a HEAD's answer needs). */
static void fwd_copy_answer_headers(struct evkeyvalq *to, struct evkeyvalq *from) {
    for (struct evkeyval *kv = from->tqh_first; kv; kv = kv->next.tqe_next)
        if (fwd_answer_header(kv->key))
            while (evhttp_remove_header(to, kv->key) == 0)
                ;
    for (struct evkeyval *kv = from->tqh_first; kv; kv = kv->next.tqe_next)
        if (fwd_answer_header(kv->key))
            evhttp_add_header(to, kv->key, kv->value);
}

static int fwd_send(http_ctx *c, const char *node, int32_t part, int retried);

/* The peer did not answer (a SIGKILLed node refuses at once): nobody here
 * sends it more until a refresh hears from it, and this read goes to
 * another replica of its partition, once, if there is one. 1 sent on. */
static int fwd_retry(fwd_req *r) {
    cluster *cl = r->c.w->q->cluster;
    cluster_mark_down(cl, r->node);
    char next[CLUSTER_URL_MAX];
    if (r->part < 0 || r->retried ||
        cluster_pick(cl, r->part, 0, next, sizeof(next)) != CLUSTER_OWNER_PEER ||
        strcmp(next, r->node) == 0)
        return 0;
    http_ctx c = r->c;
    fwd_send(&c, next, r->part, 1);
    return 1;
}

static void fwd_free(fwd_req *r) {
    if (r->check)
        event_free(r->check);
    if (r->held)
        evbuffer_free(r->held);
    free(r);
}

static struct bufferevent *fwd_peer_bev(fwd_req *r) {
    struct evhttp_connection *evcon = r->out ? evhttp_request_get_connection(r->out) : NULL;
    return evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
}

/* The client took what was written: read the peer again. */
static void fwd_drained_cb(struct evhttp_connection *evcon, void *arg) {
    (void)evcon;
    fwd_req *r = arg;
    struct bufferevent *bev = r->paused ? fwd_peer_bev(r) : NULL;
    if (!r->paused)
        return;
    r->paused = 0;
    evtimer_del(r->check);
    if (bev)
        bufferevent_enable(bev, EV_READ);
}

/* The end of a relayed answer: cut (the peer failed mid-body, the client
 * left) closes the client's connection, so a short body is never taken
 * for a whole one. */
static void fwd_relay_end(fwd_req *r, int cut) {
    if (!r->streaming && !cut) { /* the whole answer came: it goes whole */
        struct evbuffer *body = r->held;
        r->held = NULL;
        http_reply_forwarded(&r->c, r->status, body);
        return;
    }
    if (!r->streaming) {
        http_reply_error(&r->c, 503, "SlowDown",
                         "node %s, which applies this partition, did not finish its "
                         "answer; retry", r->node);
        return;
    }
    if (!cut && evbuffer_get_length(r->held))
        http_reply_stream_piece(&r->c, r->held, NULL, NULL);
    struct evhttp_connection *evcon = evhttp_request_get_connection(r->c.req);
    if (cut && evcon)
        shutdown(bufferevent_getfd(evhttp_connection_get_bufferevent(evcon)), SHUT_RDWR);
    http_reply_stream_end(&r->c);
}

static void fwd_check_in(fwd_req *r, int ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(r->check, &tv);
}

/* Paused, or the client left: a client that left ends the relay (the
 * peer's request is cancelled here, never from evhttp's own callbacks,
 * which would free it under them). */
static void fwd_check_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    fwd_req *r = arg;
    if (!http_reply_gone(&r->c)) {
        if (r->paused)
            fwd_check_in(r, FWD_PAUSE_CHECK_MS);
        return;
    }
    fwd_unlink(r->c.w, r);
    evhttp_cancel_request(r->out); /* frees it; no callback */
    fwd_relay_end(r, 1);
    fwd_free(r);
}

/* The peer's head: the client's answer's headers. It goes out whole
 * when the peer's body ends within FWD_PIECE, else it streams. */
static int fwd_head_cb(struct evhttp_request *resp, void *arg) {
    fwd_req *r = arg;
    int status = evhttp_request_get_response_code(resp);
    if (status == 100)
        return 0; /* the answer follows */
    http_worker *w = r->c.w;
    struct evkeyvalq *oh = evhttp_request_get_output_headers(r->c.req);
    fwd_copy_answer_headers(oh, evhttp_request_get_input_headers(resp));
    if (!evhttp_find_header(oh, "X-Objlog-Node"))
        evhttp_add_header(oh, "X-Objlog-Node", r->node);
    evhttp_add_header(oh, "X-Objlog-Forwarded-By", cluster_self(w->q->cluster));
    r->relaying = 1;
    r->status = status;
    return 0;
}

/* A piece of the peer's body: on to the client, and the peer waits while
 * the client is FWD_STREAM_HIGH behind. */
static void fwd_piece_cb(struct evhttp_request *resp, void *arg) {
    fwd_req *r = arg;
    if (!r->relaying)
        return;
    evbuffer_add_buffer(r->held, evhttp_request_get_input_buffer(resp));
    if (evbuffer_get_length(r->held) < FWD_PIECE)
        return;
    if (!r->streaming) {
        r->streaming = 1;
        http_reply_stream_start(&r->c, r->status);
    }
    http_reply_stream_piece(&r->c, r->held, fwd_drained_cb, r);
    if (!r->paused && (http_reply_gone(&r->c) || http_reply_unsent(&r->c) > FWD_STREAM_HIGH)) {
        struct bufferevent *bev = fwd_peer_bev(r);
        if (bev)
            bufferevent_disable(bev, EV_READ);
        r->paused = 1;
        fwd_check_in(r, http_reply_gone(&r->c) ? 0 : FWD_PAUSE_CHECK_MS);
    }
}

static void fwd_done_cb(struct evhttp_request *resp, void *arg) {
    fwd_req *r = arg;
    http_worker *w = r->c.w;
    fwd_unlink(w, r);
    int status = resp ? evhttp_request_get_response_code(resp) : 0;
    fwd_count(w, status > 0 ? FORWARD_ANSWERED : FORWARD_UNREACHABLE);
    if (r->relaying) {
        fwd_relay_end(r, status <= 0);
    } else if (status <= 0 && fwd_retry(r)) {
        ;
    } else if (status <= 0) {
        http_reply_error(&r->c, 503, "SlowDown",
                         "node %s, which applies this partition, did not answer; retry",
                         r->node);
    } else {
        /* answered without a head callback: cannot happen, answered anyway */
        http_reply_error(&r->c, 502, "InternalError", "node %s answered %d without a head",
                         r->node, status);
    }
    fwd_free(r);
}

int forward_request(http_ctx *c, const char *node, int32_t part) {
    return fwd_send(c, node, part, 0);
}

static int fwd_send(http_ctx *c, const char *node, int32_t part, int retried) {
    http_worker *w = c->w;
    struct evkeyvalq *ih = evhttp_request_get_input_headers(c->req);
    const char *hop = evhttp_find_header(ih, FWD_HOP_HEADER);
    if (hop) {
        /* Sent here by a node whose view is a moment behind ours. */
        fwd_count(w, FORWARD_REFUSED);
        http_reply_error(c, 503, "SlowDown",
                         "forwarded by %s, but this node does not apply the partition "
                         "either (it is moving to %s); retry", hop, node);
        return 1;
    }
    char target[CLUSTER_URL_MAX];
    if (cluster_face_url(w->q->cluster, node, c->face->name, target, sizeof(target)) < 0) {
        fwd_count(w, FORWARD_REFUSED);
        http_reply_error(c, 503, "SlowDown",
                         "node %s applies this partition but has no %s listener (start "
                         "every node with the same listeners); retry another node",
                         node, c->face->name);
        return 1;
    }
    struct evhttp_connection *conn = fwd_of(w)->inflight < FWD_MAX_INFLIGHT
                                         ? fwd_conn(w, target) : NULL;
    fwd_req *r = conn ? calloc(1, sizeof(*r)) : NULL;
    if (r) {
        r->out = evhttp_request_new(fwd_done_cb, r);
        r->check = evtimer_new(w->base, fwd_check_cb, r);
        r->held = evbuffer_new();
    }
    if (!r || !r->out || !r->check || !r->held) {
        fwd_count(w, FORWARD_REFUSED);
        if (r && r->out)
            evhttp_request_free(r->out);
        if (r && r->check)
            event_free(r->check);
        if (r && r->held)
            evbuffer_free(r->held);
        free(r);
        http_reply_error(c, 503, "SlowDown",
                         "cannot forward to node %s now (%d forwards in flight); retry",
                         node, fwd_of(w)->inflight);
        return 1;
    }
    r->c = *c;
    r->c.params = NULL;
    r->c.nparams = 0;
    snprintf(r->node, sizeof(r->node), "%s", node);
    r->part = part;
    r->retried = retried;
    evhttp_request_set_header_cb(r->out, fwd_head_cb);
    evhttp_request_set_chunked_cb(r->out, fwd_piece_cb);
    struct evkeyvalq *oh = evhttp_request_get_output_headers(r->out);
    fwd_copy_request_headers(oh, ih, c->face->forward_as_sent);
    if (!evhttp_find_header(oh, "Host"))
        evhttp_add_header(oh, "Host", fwd_host_of(target));
    evhttp_add_header(oh, FWD_HOP_HEADER, cluster_self(w->q->cluster));
    evhttp_add_header(oh, "X-Objlog-Request-Id", c->request_id);
    struct evbuffer *in = evhttp_request_get_input_buffer(c->req);
    size_t n = evbuffer_get_length(in);
    if (n)
        evbuffer_add(evhttp_request_get_output_buffer(r->out), evbuffer_pullup(in, -1), n);
    r->next = fwd_of(w)->live;
    if (r->next)
        r->next->prev = r;
    fwd_of(w)->live = r;
    fwd_of(w)->inflight++;
    /* The peer learns who asks from this node's signature, not from the
     * client's headers. On failure evhttp_make_request frees r->out
     * without calling back. */
    if (nodesign_request(cluster_node_key(w->q->cluster), r->out, evhttp_request_get_command(c->req),
                         evhttp_request_get_uri(c->req), c) < 0 ||
        evhttp_make_request(conn, r->out, evhttp_request_get_command(c->req),
                            evhttp_request_get_uri(c->req)) != 0) {
        fwd_count(w, FORWARD_UNREACHABLE);
        fwd_unlink(w, r);
        fwd_free(r);
        http_reply_error(c, 503, "SlowDown", "cannot forward to node %s; retry", node);
    }
    return 1;
}

/* As the worker stops: every read sent on answers 503 now. */
static void forward_worker_stop(void *arg, http_worker *w, void *state) {
    (void)arg;
    (void)state;
    gather_expire_worker(w);
    while (fwd_of(w) && fwd_of(w)->live) {
        fwd_req *r = fwd_of(w)->live;
        fwd_unlink(w, r);
        evhttp_cancel_request(r->out); /* frees it; no callback */
        if (r->relaying)
            fwd_relay_end(r, 1);
        else
            http_reply_error(&r->c, 503, "SlowDown", "objlogd is shutting down; retry the read");
        fwd_free(r);
    }
}

/* ---- one read sent to several nodes at once (gather) ---- */

typedef struct gather gather;
typedef struct gather_sub {
    gather *g;
    struct evhttp_request *out;  /* until its callback */
    int status;                  /* 0: no answer */
    char *body;
    size_t len;
} gather_sub;

struct gather {
    http_ctx c;                  /* the client's request (params not kept) */
    int n, pending;
    gather_sub *subs;
    gather_done_fn done;
    void *arg;
    gather *prev, *next;
};

static gather **gather_list(http_worker *w) { return &fwd_of(w)->gathers; }

static void gather_unlink(http_worker *w, gather *g) {
    if (g->prev)
        g->prev->next = g->next;
    else
        *gather_list(w) = g->next;
    if (g->next)
        g->next->prev = g->prev;
}

static void gather_free(gather *g) {
    for (int i = 0; i < g->n; i++)
        free(g->subs[i].body);
    free(g->subs);
    free(g);
}

static void gather_finish(gather *g) {
    gather_unlink(g->c.w, g);
    gather_reply res[GATHER_MAX];
    for (int i = 0; i < g->n; i++)
        res[i] = (gather_reply){g->subs[i].status, g->subs[i].body, g->subs[i].len};
    g->done(&g->c, res, g->n, g->arg);
    gather_free(g);
}

static void gather_sub_cb(struct evhttp_request *resp, void *arg) {
    gather_sub *s = arg;
    gather *g = s->g;
    s->out = NULL;
    s->status = resp ? evhttp_request_get_response_code(resp) : 0;
    fwd_count(g->c.w, s->status > 0 ? FORWARD_ANSWERED : FORWARD_UNREACHABLE);
    struct evbuffer *in = resp ? evhttp_request_get_input_buffer(resp) : NULL;
    size_t n = in ? evbuffer_get_length(in) : 0;
    s->body = malloc(n + 1);
    if (s->body) {
        if (n)
            evbuffer_remove(in, s->body, n);
        s->body[n] = '\0';
        s->len = n;
    } else {
        s->status = 0;
    }
    if (--g->pending == 0)
        gather_finish(g);
}

void forward_gather_error(http_ctx *c, const gather_reply *r) {
    json_t *ej = r->body ? json_loads(r->body, 0, NULL) : NULL;
    json_t *e = json_object_get(ej, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    http_reply_error(c, r->status >= 400 ? r->status : 503, code ? code : "SlowDown",
                     "a node of the cluster: %s", msg ? msg : "did not answer; retry");
    json_decref(ej);
}

int forward_gather(http_ctx *c, const char *const *nodes, const char *const *paths, int n,
                   gather_done_fn done, void *arg) {
    http_worker *w = c->w;
    gather *g = n > 0 && n <= GATHER_MAX ? calloc(1, sizeof(*g)) : NULL;
    if (g)
        g->subs = calloc((size_t)n, sizeof(*g->subs));
    if (!g || !g->subs) {
        free(g);
        http_reply_error(c, 503, "SlowDown", "cannot ask %d nodes now; retry", n);
        return 1;
    }
    g->c = *c;
    g->c.params = NULL;
    g->c.nparams = 0;
    g->n = n;
    g->done = done;
    g->arg = arg;
    g->next = *gather_list(w);
    if (g->next)
        g->next->prev = g;
    *gather_list(w) = g;
    g->pending = n;
    for (int i = 0; i < n; i++) {
        gather_sub *s = &g->subs[i];
        s->g = g;
        struct evhttp_connection *conn = fwd_conn(w, nodes[i]);
        s->out = conn ? evhttp_request_new(gather_sub_cb, s) : NULL;
        if (s->out) {
            struct evkeyvalq *oh = evhttp_request_get_output_headers(s->out);
            evhttp_add_header(oh, "Host", fwd_host_of(nodes[i]));
            evhttp_add_header(oh, FWD_HOP_HEADER, cluster_self(w->q->cluster));
            evhttp_add_header(oh, "X-Objlog-Request-Id", c->request_id);
            if (nodesign_request(cluster_node_key(w->q->cluster), s->out, EVHTTP_REQ_GET, paths[i], c) < 0) {
                evhttp_request_free(s->out);
                s->out = NULL;
            } else if (evhttp_make_request(conn, s->out, EVHTTP_REQ_GET, paths[i]) != 0) {
                s->out = NULL; /* freed by evhttp */
            }
        }
        if (!s->out) {
            /* counted as no answer; the last one to end finishes */
            fwd_count(w, FORWARD_UNREACHABLE);
            if (--g->pending == 0) {
                gather_finish(g);
                return 1;
            }
        }
    }
    return 1;
}

static void gather_expire_worker(http_worker *w) {
    while (fwd_of(w) && *gather_list(w)) {
        gather *g = *gather_list(w);
        gather_unlink(w, g);
        for (int i = 0; i < g->n; i++)
            if (g->subs[i].out)
                evhttp_cancel_request(g->subs[i].out);
        http_reply_error(&g->c, 503, "SlowDown", "objlogd is shutting down; retry the read");
        gather_free(g);
    }
}

int forward_register(server *s) {
    server_hooks h = {.init = forward_worker_init, .stop = forward_worker_stop,
                      .dispose = forward_worker_dispose};
    return server_hooks_add(s, &h);
}
