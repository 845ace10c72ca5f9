/* server.c: objlogd's HTTP workers and listeners. Each of the N workers
 * has its own event_base and, per listener, its own evhttp accepting on
 * its own duplicate of the listener's one socket (never SO_REUSEPORT,
 * which would let another process share the port), so no lock is shared
 * on the request path. A request is dispatched to its listener's face
 * (http_face: the API's router) and answered on the worker that accepted
 * it; modules with per-worker state keep it in the slots of their hooks.
 *
 * Invariant: shutdown closes the listeners first, lets every hook answer
 * what it keeps waiting, then waits for the in-flight count to reach
 * zero; the hooks' state is disposed of only after the loop ended. */
#define _GNU_SOURCE
#include "core.h"
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/thread.h>

/* ------------------------------------------------------------ dispatch */

/* A connection conn.c took past the cap serves reserved paths only:
 * clients that fill every slot must not take the probes' too. */
static void server_reserve_refuse(http_ctx *c) {
    atomic_fetch_add(&c->w->srv->counters.reserve_refusals, 1);
    http_reply_error(c, 503, "SlowDown",
                     "objlogd is at its connection limit (--max-connections); a connection "
                     "taken past it may ask only /healthz, /readyz or /metrics");
}

static void server_dispatch(struct evhttp_request *req, const http_listener *l,
                            http_worker *w) {
    http_ctx c = {.req = req, .w = w, .q = w->q, .face = l->face,
                  .endpoint = HTTP_EP_OTHER};
    clock_gettime(CLOCK_MONOTONIC, &c.start);
    http_request_id(w, c.request_id);
    w->inflight++;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (conn_request_dispatched(w, req) &&
        !(l->face->reserved_path && l->face->reserved_path(path)))
        server_reserve_refuse(&c);
    else
        l->face->run(&c);
}

static void server_dispatch_0(struct evhttp_request *req, void *arg) {
    http_worker *w = arg;
    server_dispatch(req, &w->ls[0], w);
}

static void server_dispatch_1(struct evhttp_request *req, void *arg) {
    http_worker *w = arg;
    server_dispatch(req, &w->ls[1], w);
}

void http_rerun_peer(const http_ctx *c, const http_peer_bucket *pb) {
    http_ctx r = {.req = c->req, .w = c->w, .q = c->q, .face = c->face,
                  .endpoint = HTTP_EP_OTHER, .start = c->start, .peer = *pb};
    memcpy(r.request_id, c->request_id, sizeof(r.request_id));
    c->face->run(&r);
}

/* Parsing again is cheaper than keeping every request's parameters while
 * it is parked, and the route decides the same way the second time. */
void http_rerun(http_worker *w, struct evhttp_request *req, const char *request_id,
                const struct timespec *start, const fence_result *res,
                const http_face *face) {
    http_ctx c = {.req = req, .w = w, .q = w->q, .face = face, .endpoint = HTTP_EP_OTHER,
                  .start = *start, .fenced = res};
    memcpy(c.request_id, request_id, sizeof(c.request_id));
    face->run(&c);
}

/* ------------------------------------------------------------ sockets */

static int server_socket(const char *host, int port, char *errstr, size_t errstr_size) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        snprintf(errstr, errstr_size, "listen address %s is not an IPv4 address", host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    /* No SO_REUSEPORT: with it a second objlogd (same user) could bind the
     * same port and the kernel would spread clients over two views. The
     * workers share this one socket instead (server_start). */
    if (fd < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        /* Replies are written in pieces (headers, then body); without
         * TCP_NODELAY a keep-alive connection waits ~40 ms on Nagle vs
         * the client's delayed ACK. Accepted sockets inherit it (Linux). */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 512) < 0) {
        snprintf(errstr, errstr_size, "listen on %s:%d: %s", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int server_socket_port(int fd) {
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
        return -1;
    return ntohs(sa.sin_port);
}

int server_listen_socket(const char *host, int port, int *bound_port, char *errstr,
                         size_t errstr_size) {
    int fd = server_socket(host ? host : "127.0.0.1", port, errstr, errstr_size);
    if (fd >= 0 && bound_port)
        *bound_port = server_socket_port(fd);
    return fd;
}

int http_socket_timeout_s(const server *s) {
    int ms = s->conf.idle_timeout_ms > s->conf.request_timeout_ms ? s->conf.idle_timeout_ms
                                                                  : s->conf.request_timeout_ms;
    int sec = ms / 1000 + 2;
    return sec > 60 ? sec : 60;
}

/* ------------------------------------------------------------ configuration */

server *server_new(const server_conf *conf, char *errstr, size_t errstr_size) {
    evthread_use_pthreads();
    server *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(errstr, errstr_size, "server: out of memory");
        return NULL;
    }
    s->conf = *conf;
    s->nworkers = conf->threads > 0 ? conf->threads : 4;
    s->workers = calloc((size_t)s->nworkers, sizeof(*s->workers));
    if (!s->workers) {
        snprintf(errstr, errstr_size, "server: out of memory");
        free(s);
        return NULL;
    }
    for (int i = 0; i < SERVER_MAX_LISTENERS; i++)
        s->listeners[i].fd = -1;
    return s;
}

int server_listen(server *s, const http_face *face, const char *host, int port, int fd,
                  char *errstr, size_t errstr_size) {
    if (s->nlisteners == SERVER_MAX_LISTENERS) {
        snprintf(errstr, errstr_size, "server: more than %d listeners", SERVER_MAX_LISTENERS);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (fd < 0)
        fd = server_socket(host ? host : "127.0.0.1", port, errstr, errstr_size);
    if (fd < 0)
        return -1;
    int i = s->nlisteners++;
    s->listeners[i].face = face;
    s->listeners[i].fd = fd;
    s->listeners[i].port = server_socket_port(fd);
    snprintf(s->listeners[i].host, sizeof(s->listeners[i].host), "%s",
             host ? host : "127.0.0.1");
    return 0;
}

int server_listener_url(const server *s, int i, const char *self_host, const http_face **face,
                        char *out, size_t n) {
    if (!s || i < 0 || i >= s->nlisteners)
        return -1;
    const char *host = s->listeners[i].host;
    if (strcmp(host, "0.0.0.0") == 0 || !*host)
        host = self_host;
    *face = s->listeners[i].face;
    snprintf(out, n, "%s://%s:%d", tls_serves(s->conf.tls) ? "https" : "http", host,
             s->listeners[i].port);
    return 0;
}

int server_port(const server *s, const http_face *face) {
    for (int i = 0; s && i < s->nlisteners; i++)
        if (s->listeners[i].face == face)
            return s->listeners[i].port;
    return -1;
}

int server_hooks_add(server *s, const server_hooks *h) {
    if (s->nhooks == SERVER_MAX_HOOKS)
        return -1;
    s->hooks[s->nhooks] = *h;
    return s->nhooks++;
}

void *server_slot(const http_worker *w, int slot) {
    return slot >= 0 && slot < SERVER_MAX_HOOKS ? w->slot[slot] : NULL;
}

/* ------------------------------------------------------------ workers */

/* Runs on the worker thread: no new connections; finish what is in flight. */
static void server_worker_stop_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    http_worker *w = arg;
    server *s = w->srv;
    w->stopping = 1;
    for (int i = 0; i < s->nhooks; i++)
        if (s->hooks[i].stop)
            s->hooks[i].stop(s->hooks[i].arg, w, w->slot[i]);
    conn_worker_stop(w);
    for (int i = 0; i < w->nls; i++) {
        if (w->ls[i].bound) {
            evhttp_del_accept_socket(w->ls[i].http, w->ls[i].bound);
            w->ls[i].bound = NULL;
        }
    }
    if (w->inflight == 0)
        event_base_loopbreak(w->base);
}

static void *server_worker_main(void *arg) {
    http_worker *w = arg;
    conn_worker_thread(w);
    event_base_dispatch(w->base);
    return NULL;
}

/* Takes fd (closed on failure too). */
static int server_listener_init(http_worker *w, int i, const http_face *face, int fd,
                                char *errstr, size_t errstr_size) {
    static void (*const dispatch[SERVER_MAX_LISTENERS])(struct evhttp_request *, void *) = {
        server_dispatch_0, server_dispatch_1};
    http_listener *l = &w->ls[i];
    l->face = face;
    l->http = evhttp_new(w->base);
    if (!l->http) {
        snprintf(errstr, errstr_size, "%s listener: out of memory", face->name);
        close(fd);
        return -1;
    }
    evhttp_set_allowed_methods(l->http, (ev_uint16_t)face->allowed_methods);
    evhttp_set_max_body_size(l->http, face->max_body);
    evhttp_set_max_headers_size(l->http, 64 * 1024);
    evhttp_set_timeout(l->http, http_socket_timeout_s(w->srv));
    evhttp_set_gencb(l->http, dispatch[i], w);
    l->bound = evhttp_accept_socket_with_handle(l->http, fd);
    if (!l->bound) {
        snprintf(errstr, errstr_size, "%s listener: evhttp_accept_socket_with_handle failed",
                 face->name);
        close(fd);
        return -1;
    }
    w->nls = i + 1;
    return 0;
}

static int server_worker_init(server *s, http_worker *w, const int *fds, char *errstr,
                              size_t errstr_size) {
    w->srv = s;
    w->q = s->conf.q;
    if (getrandom(&w->rid_state, sizeof(w->rid_state), 0) != (ssize_t)sizeof(w->rid_state))
        w->rid_state = (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)w << 16);
    w->stats = calloc(1, sizeof(*w->stats));
    w->base = event_base_new();
    /* Two priorities: conn.c settles a new connection before its I/O. */
    if (w->base && event_base_priority_init(w->base, 2) < 0) {
        event_base_free(w->base);
        w->base = NULL;
    }
    w->stop_ev = w->base ? event_new(w->base, -1, 0, server_worker_stop_cb, w) : NULL;
    int failed = !w->stop_ev || !w->stats;
    for (int i = 0; i < s->nlisteners; i++) {
        if (failed) {
            close(fds[i]);
        } else if (server_listener_init(w, i, s->listeners[i].face, fds[i], errstr,
                                        errstr_size) < 0) {
            failed = 2;
        }
    }
    if (failed) {
        if (failed == 1)
            snprintf(errstr, errstr_size, "event base: out of memory");
        return -1;
    }
    for (int i = 0; i < s->nhooks; i++)
        if (s->hooks[i].init &&
            s->hooks[i].init(s->hooks[i].arg, w, &w->slot[i], errstr, errstr_size) < 0)
            return -1;
    return conn_worker_init(w, errstr, errstr_size);
}

/* Each worker accepts from its own duplicate of every listener's socket
 * (every worker's loop is woken by a new connection, one accept wins, the
 * others see EAGAIN), so only this process's workers share the port. The
 * last worker takes the originals. */
static int server_dup_fds(server *s, int last, int *fds, char *errstr, size_t errstr_size) {
    for (int i = 0; i < s->nlisteners; i++) {
        fds[i] = last ? s->listeners[i].fd : fcntl(s->listeners[i].fd, F_DUPFD_CLOEXEC, 0);
        if (fds[i] < 0) {
            snprintf(errstr, errstr_size, "listen socket: dup: %s", strerror(errno));
            for (int j = 0; j < i; j++)
                close(fds[j]);
            return -1;
        }
    }
    if (last)
        for (int i = 0; i < s->nlisteners; i++)
            s->listeners[i].fd = -1; /* the workers own them now */
    return 0;
}

int server_start(server *s, char *errstr, size_t errstr_size) {
    for (int i = 0; i < s->nworkers; i++) {
        int fds[SERVER_MAX_LISTENERS];
        if (server_dup_fds(s, i == s->nworkers - 1, fds, errstr, errstr_size) < 0 ||
            server_worker_init(s, &s->workers[i], fds, errstr, errstr_size) < 0)
            return -1;
    }
    for (int i = 0; i < s->nworkers; i++) {
        if (pthread_create(&s->workers[i].thread, NULL, server_worker_main,
                           &s->workers[i]) != 0) {
            snprintf(errstr, errstr_size, "pthread_create failed");
            return -1;
        }
        s->workers[i].thread_started = 1;
    }
    return 0;
}

void server_stop(server *s) {
    if (!s)
        return;
    for (int i = 0; i < s->nworkers; i++)
        if (s->workers[i].thread_started)
            event_active(s->workers[i].stop_ev, 0, 0);
    for (int i = 0; i < s->nworkers; i++) {
        http_worker *w = &s->workers[i];
        if (w->thread_started)
            pthread_join(w->thread, NULL);
        w->thread_started = 0;
    }
}

static void server_worker_free(server *s, http_worker *w) {
    for (int i = 0; i < w->nls; i++)
        if (w->ls[i].http)
            evhttp_free(w->ls[i].http);
    conn_worker_free(w);
    for (int i = 0; i < s->nhooks; i++)
        if (s->hooks[i].dispose && w->srv)
            s->hooks[i].dispose(s->hooks[i].arg, w, w->slot[i]);
    if (w->stop_ev)
        event_free(w->stop_ev);
    if (w->base)
        event_base_free(w->base);
    free(w->stats);
}

void server_free(server *s) {
    if (!s)
        return;
    for (int i = 0; i < s->nworkers; i++)
        server_worker_free(s, &s->workers[i]);
    for (int i = 0; i < s->nlisteners; i++)
        if (s->listeners[i].fd >= 0)
            close(s->listeners[i].fd);
    free(s->workers);
    free(s);
}
