/* ui.c: the status page served: / (the page) and /ui/<name> (its script
 * and stylesheet), from the bytes embed.cmake compiled in (uiassets.h),
 * on the JSON API's listener. The page holds no data: its script reads
 * the JSON API as any client does, with the API's tokens, so these routes
 * ask for none.
 *
 * How a request gets here: the server hands each request of a listener
 * to that listener's face through evhttp's generic callback; evhttp asks
 * its exact-path callbacks first. So the hook ui_register adds gives each
 * worker's evhttp of the face one callback per page path as the worker
 * starts, and neither the server nor the JSON API's router names the
 * page. ui_dispatch then does what the server does for every request it
 * dispatches (server.c, server_dispatch): the request id, the start time,
 * the in-flight count, the connection's request deadline ended.
 *
 * Invariant: a request that reaches ui_dispatch is answered exactly once,
 * through reply.c, on its worker's thread: GET and HEAD with the file,
 * its type, Cache-Control: no-cache and its ETag (304 when the client's
 * copy is current), anything else 405. A /ui/ path that names no file
 * never gets here: the JSON API answers it 404 NoSuchRoute. */
#include "ui.h"
#include "uiassets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

/* What one evhttp callback serves: the worker's, for one file. */
typedef struct ui_binding {
    http_worker *w;
    const http_face *face;       /* the listener's: how errors are answered */
    const ui_asset *asset;
} ui_binding;

/* The page itself; its script and stylesheet only from its own origin. */
#define UI_PAGE_NAME "index.html"
#define UI_PAGE_POLICY                                                                 \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

static const ui_asset *ui_asset_find(const char *name) {
    for (size_t i = 0; i < ui_nassets; i++)
        if (strcmp(ui_assets[i].name, name) == 0)
            return &ui_assets[i];
    return NULL;
}

/* If-None-Match: "*", or a list that holds etag (W/ prefixes allowed:
 * the weak comparison is what a GET asks for). */
static int ui_etag_matches(const char *inm, const char *etag) {
    if (strcmp(inm, "*") == 0)
        return 1;
    size_t n = strlen(etag);
    for (const char *p = strstr(inm, etag); p; p = strstr(p + 1, etag)) {
        char after = p[n];
        if (after == '\0' || after == ',' || after == ' ' || after == '\t')
            return 1;
    }
    return 0;
}

static void ui_answer(http_ctx *c, const ui_asset *a) {
    enum evhttp_cmd_type cmd = evhttp_request_get_command(c->req);
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        http_method_not_allowed(c, "GET, HEAD");
        return;
    }
    http_add_header(c, "Cache-Control", "no-cache");
    http_add_header(c, "ETag", a->etag);
    http_add_header(c, "X-Content-Type-Options", "nosniff");
    if (strcmp(a->name, UI_PAGE_NAME) == 0)
        http_add_header(c, "Content-Security-Policy", UI_PAGE_POLICY);
    const char *inm =
        evhttp_find_header(evhttp_request_get_input_headers(c->req), "If-None-Match");
    if (inm && ui_etag_matches(inm, a->etag)) {
        http_send(c, 304, NULL);
        return;
    }
    if (cmd == EVHTTP_REQ_HEAD) {
        /* evhttp gives a HEAD answer no length of its own: the GET's. */
        char len[24];
        snprintf(len, sizeof(len), "%zu", a->size);
        http_add_header(c, "Content-Length", len);
        http_reply_bytes(c, 200, a->content_type, NULL, 0);
        return;
    }
    http_reply_bytes(c, 200, a->content_type, a->data, a->size);
}

/* As server.c's dispatch: a connection taken past the connection cap
 * may ask only its face's reserved paths (the probes), never the page. */
static void ui_dispatch(struct evhttp_request *req, void *arg) {
    const ui_binding *b = arg;
    http_worker *w = b->w;
    http_ctx c = {.req = req, .w = w, .q = w->q, .face = b->face,
                  .endpoint = HTTP_EP_OTHER};
    clock_gettime(CLOCK_MONOTONIC, &c.start);
    http_request_id(w, c.request_id);
    w->inflight++;
    if (conn_request_dispatched(w, req)) {
        atomic_fetch_add(&w->srv->counters.reserve_refusals, 1);
        http_reply_error(&c, 503, "SlowDown",
                         "objlogd is at its connection limit (--max-connections)");
        return;
    }
    ui_answer(&c, b->asset);
}

/* On each worker before its thread starts (its listeners exist): the
 * page at / and every file at /ui/<name>, on the face's listener. The
 * bindings are the worker's slot, freed once its evhttp is. */
static int ui_worker_init(void *arg, http_worker *w, void **state, char *errstr,
                          size_t errstr_size) {
    const http_face *face = arg;
    struct evhttp *http = NULL;
    for (int i = 0; i < w->nls && !http; i++)
        if (w->ls[i].face == face)
            http = w->ls[i].http;
    if (!http)
        return 0; /* the face does not listen: no page */
    const ui_asset *page = ui_asset_find(UI_PAGE_NAME);
    ui_binding *b = calloc(ui_nassets + 1, sizeof(*b));
    if (!page || !b) {
        snprintf(errstr, errstr_size, "status page: %s",
                 page ? "out of memory" : "no " UI_PAGE_NAME " compiled in");
        free(b);
        return -1;
    }
    *state = b;
    for (size_t i = 0; i <= ui_nassets; i++) {
        b[i] = (ui_binding){.w = w, .face = face,
                            .asset = i < ui_nassets ? &ui_assets[i] : page};
        char path[128];
        if (i < ui_nassets)
            snprintf(path, sizeof(path), "/ui/%s", ui_assets[i].name);
        else
            snprintf(path, sizeof(path), "/");
        if (evhttp_set_cb(http, path, ui_dispatch, &b[i]) != 0) {
            snprintf(errstr, errstr_size, "status page: cannot serve %s", path);
            return -1;
        }
    }
    return 0;
}

static void ui_worker_dispose(void *arg, http_worker *w, void *state) {
    (void)arg;
    (void)w;
    free(state);
}

int ui_register(server *s, const http_face *face, char *errstr, size_t errstr_size) {
    /* The hook's arg is not const: the face is only compared, never
     * written through. */
    server_hooks h = {.init = ui_worker_init, .dispose = ui_worker_dispose,
                      .arg = (void *)face};
    if (server_hooks_add(s, &h) < 0) {
        snprintf(errstr, errstr_size, "status page: too many server hooks");
        return -1;
    }
    return 0;
}
