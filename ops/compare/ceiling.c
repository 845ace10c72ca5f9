/* ceiling.c: the HTTP ceiling of ops/compare/compare.sh. An evhttp server
 * that answers every request with one constant ~300-byte JSON body, built
 * like objlogd's HTTP server (query/server/server.c): N worker threads,
 * each with its own event_base and evhttp accepting on its own duplicate
 * of one listening socket, TCP_NODELAY on. What objlogd does beyond this is what it costs.
 *
 *   objlog-ceiling [--listen HOST:PORT] [--threads N]
 *
 * Prints OBJLOG_LISTEN=host:port and OBJLOG_READY on stdout (like objlogd);
 * SIGTERM or SIGINT stops it. It owns: the listening socket and its
 * duplicates, one event_base + evhttp per worker, the worker threads. */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CEIL_MAX_THREADS 64

/* About the size of a GET answer of objlogd for one object (~300 bytes). */
static const char ceil_body[] =
    "{\"key\":\"k00012345\",\"version_id\":\"null\",\"etag\":"
    "\"0123456789abcdef0123456789abcdef\",\"size\":1024,\"storage_class\":\"STANDARD\","
    "\"last_modified\":\"2026-01-01T00:00:00.000Z\",\"bucket\":\"bench\","
    "\"content_type\":\"application/octet-stream\",\"blob_id\":\"\",\"checksum\":\"\","
    "\"user_metadata\":{},\"delete_marker\":false}";

typedef struct {
    struct event_base *base;
    struct evhttp *http;
    pthread_t thread;
} ceil_worker;

static ceil_worker workers[CEIL_MAX_THREADS];
static int nworkers = 4; /* objlogd's default --threads */

static void ceil_reply(struct evhttp_request *req, void *arg) {
    (void)arg;
    struct evbuffer *b = evhttp_request_get_output_buffer(req);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "application/json");
    evbuffer_add_reference(b, ceil_body, sizeof(ceil_body) - 1, NULL, NULL);
    evhttp_send_reply(req, 200, "OK", NULL);
}

static void *ceil_worker_main(void *arg) {
    ceil_worker *w = arg;
    event_base_dispatch(w->base);
    return NULL;
}

static void ceil_stop_cb(evutil_socket_t sig, short what, void *arg) {
    (void)sig;
    (void)what;
    (void)arg;
    for (int i = 0; i < nworkers; i++)
        event_base_loopbreak(workers[i].base);
}

/* Returns a listening socket on host:port (port 0: a free one), or -1. */
static int ceil_listen(const char *host, int port) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "ceiling: --listen: %s is not an IPv4 address\n", host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    /* TCP_NODELAY as objlogd: accepted sockets inherit it (Linux). */
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 512) < 0) {
        fprintf(stderr, "ceiling: listen %s:%d: %s\n", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int ceil_parse_listen(const char *v, char *host, size_t hostsz, int *port) {
    const char *colon = strrchr(v, ':');
    if (!colon || (size_t)(colon - v) >= hostsz)
        return -1;
    memcpy(host, v, (size_t)(colon - v));
    host[colon - v] = '\0';
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p < 0 || p > 65535)
        return -1;
    *port = (int)p;
    return 0;
}

int main(int argc, char **argv) {
    char host[64] = "127.0.0.1";
    int port = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            if (ceil_parse_listen(argv[++i], host, sizeof(host), &port) < 0) {
                fprintf(stderr, "ceiling: --listen needs HOST:PORT\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            nworkers = atoi(argv[++i]);
            if (nworkers < 1 || nworkers > CEIL_MAX_THREADS) {
                fprintf(stderr, "ceiling: --threads must be 1..%d\n", CEIL_MAX_THREADS);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: objlog-ceiling [--listen HOST:PORT] [--threads N]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    if (evthread_use_pthreads() < 0)
        return 1;
    int lfd = ceil_listen(host, port);
    if (lfd < 0)
        return 1;
    struct sockaddr_in bound;
    socklen_t blen = sizeof(bound);
    getsockname(lfd, (struct sockaddr *)&bound, &blen);
    for (int i = 0; i < nworkers; i++) {
        ceil_worker *w = &workers[i];
        int fd = i == nworkers - 1 ? lfd : fcntl(lfd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0 || !(w->base = event_base_new()) || !(w->http = evhttp_new(w->base)) ||
            !evhttp_accept_socket_with_handle(w->http, fd)) {
            fprintf(stderr, "ceiling: worker %d: setup failed\n", i);
            return 1;
        }
        evhttp_set_gencb(w->http, ceil_reply, NULL);
        evhttp_set_allowed_methods(w->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
                                                EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                                EVHTTP_REQ_POST);
    }
    /* The signals go to a base of their own, on the main thread. */
    struct event_base *main_base = event_base_new();
    struct event *sigterm = main_base ? evsignal_new(main_base, SIGTERM, ceil_stop_cb, NULL) : NULL;
    struct event *sigint = main_base ? evsignal_new(main_base, SIGINT, ceil_stop_cb, NULL) : NULL;
    if (!sigterm || !sigint || event_add(sigterm, NULL) < 0 || event_add(sigint, NULL) < 0)
        return 1;
    for (int i = 0; i < nworkers; i++)
        if (pthread_create(&workers[i].thread, NULL, ceil_worker_main, &workers[i]) != 0)
            return 1;
    char addr[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &bound.sin_addr, addr, sizeof(addr));
    printf("OBJLOG_LISTEN=%s:%d\nOBJLOG_READY\n", addr, ntohs(bound.sin_port));
    fflush(stdout);
    event_base_loop(main_base, EVLOOP_ONCE);
    for (int i = 0; i < nworkers; i++) {
        pthread_join(workers[i].thread, NULL);
        evhttp_free(workers[i].http);
        event_base_free(workers[i].base);
    }
    event_free(sigterm);
    event_free(sigint);
    event_base_free(main_base);
    return 0;
}
