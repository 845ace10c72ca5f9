/* logapi.c: GET /v1/log?level=warn|error&limit=N&after=SEQ, this node's
 * recent warnings and errors (its log ring, logring.h), newest last:
 *   {"node":NAME|null,
 *    "lines":[{"seq","ts","level","component","msg"}...],
 *    "counts":{"warn":N,"error":N},"next_after":SEQ}
 * Without after, the newest `limit` lines (the status page's table); with
 * it, the first `limit` lines past that seq, and next_after is where the
 * next page starts. The counts are every line the ring took since the
 * service started, those it no longer holds too.
 *
 * Owns nothing: the lines and counts are copied out of the ring in one
 * moment of it (logring_read), and the answer is built outside its lock,
 * so a request never holds up a thread that logs. */
#include "core.h"
#include "api.h"
#include "logring.h"
#include "objlog_logger.h"
#include "server.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* level, limit and after, and nothing else, each at most once: 0, or -1
 * after answering 400. */
static int logapi_params(http_ctx *c, logring_want *want) {
    static const char *const names[] = {"level", "limit", "after", NULL};
    if (http_params_only(c, names, "level, limit and after") < 0)
        return -1;
    const char *level = http_param_get(c, "level", NULL);
    if (level && strcmp(level, "warn") != 0 && strcmp(level, "error") != 0) {
        http_reply_error(c, 400, "InvalidArgument", "level must be warn or error");
        return -1;
    }
    want->level = level && strcmp(level, "error") == 0 ? LOGRING_ERROR : LOGRING_WARN;
    long long cap = (long long)logring_capacity(c->q->logring), v;
    if (http_param_int(c, "limit", 1, cap, cap, &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "limit must be an integer in 1..%lld", cap);
        return -1;
    }
    want->limit = (size_t)v;
    want->paged = http_param_get(c, "after", NULL) != NULL;
    if (http_param_int(c, "after", 0, LLONG_MAX, 0, &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "after must be a line's seq: an integer from 0");
        return -1;
    }
    want->after = (uint64_t)v;
    return 0;
}

static json_t *logapi_line(const logring_line *l) {
    char ts[32];
    objlog_logger_format_time(l->ms, ts, sizeof(ts));
    return json_pack("{s:I, s:s, s:s, s:s, s:s}", "seq", (json_int_t)l->seq, "ts", ts, "level",
                     logring_level_name(l->level), "component", l->component, "msg", l->msg);
}

/* The answer of a page; NULL out of memory. */
static json_t *logapi_body(const logring_line *lines, const logring_page *pg) {
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < pg->n; i++)
        if (json_array_append_new(arr, logapi_line(&lines[i])) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    if (!arr)
        return NULL;
    const char *node = objlog_logger_node();
    return json_pack("{s:s?, s:o, s:{s:I, s:I}, s:I}", "node", node, "lines", arr, "counts",
                     "warn", (json_int_t)pg->counts[LOGRING_WARN], "error",
                     (json_int_t)pg->counts[LOGRING_ERROR], "next_after",
                     (json_int_t)pg->next_after);
}

void logapi_get(http_ctx *c) {
    logring_want want;
    if (logapi_params(c, &want) < 0)
        return;
    logring_line *lines = malloc(want.limit * sizeof(*lines));
    if (!lines) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    logring_page pg;
    logring_read(c->q->logring, &want, lines, &pg);
    json_t *body = logapi_body(lines, &pg);
    free(lines);
    if (!body) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    http_reply_json(c, 200, body);
}
