/* blobsapi.c: GET /v1/blobs?after=ID&limit=N, the blob ids this node's
 * partitions reference (a version's or an upload part's blob_id; the
 * `blobs` CF, materializer/blobrefs.c), in byte order, a page at a time:
 *   {"blobs":[ID...],"next_after":ID (absent once the listing ended),
 *    "positions":[{"partition","applied"}...],"partitions":N[,"node":URL]}
 * For a blob store's garbage collector: an id it holds and no page names
 * is one no version or part of these partitions references.
 *
 * The partitions answered for are those this node applies as ACTIVE,
 * chosen once per request; in a cluster that is this node's share only
 * (nothing is gathered from the other nodes: "node" says whose share it
 * is, "partitions" how many the log has). Pages are independent reads:
 * each one is its own snapshot.
 *
 * Invariant: `positions` lists exactly the partitions the scan keeps, each
 * with its applied offset read before the scan's snapshot is taken; apply
 * writes a batch's rows and its applied offset in one WriteBatch, so the
 * page reflects at least those positions (it may reflect later ones). */
#include "core.h"
#include "api.h"
#include "cluster.h"
#include "server.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define BLOBS_DEFAULT_LIMIT 1000
#define BLOBS_MAX_LIMIT 10000
#define BLOBS_MAX_AFTER 1024

/* The partitions a page answers for: kept[p] fixed before the scan. */
typedef struct blobs_keep {
    uint8_t *kept;
    int nparts;
} blobs_keep;

static int blobs_keep_partition(void *arg, int32_t partition) {
    const blobs_keep *k = arg;
    return partition >= 0 && partition < k->nparts && k->kept[partition];
}

/* The ids a page takes; oom stops the scan. */
typedef struct blobs_page {
    json_t *ids;
    int oom;
} blobs_page;

static int blobs_take(void *arg, const char *blob_id, size_t n) {
    blobs_page *pg = arg;
    json_t *id = http_json_bytes(blob_id, n);
    pg->oom = !id || json_array_append_new(pg->ids, id) < 0;
    return pg->oom;
}

/* after and limit, and nothing else; -1 after answering 400. */
static int blobs_params(http_ctx *c, const char **after, size_t *limit) {
    static const char *const names[] = {"after", "limit", NULL};
    if (http_params_only(c, names, "after and limit") < 0)
        return -1;
    long long v;
    if (http_param_int(c, "limit", 1, BLOBS_MAX_LIMIT, BLOBS_DEFAULT_LIMIT, &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "limit must be an integer in 1..%d",
                         BLOBS_MAX_LIMIT);
        return -1;
    }
    *limit = (size_t)v;
    size_t an = 0;
    *after = http_param_get(c, "after", &an);
    if (*after && an > BLOBS_MAX_AFTER) {
        http_reply_error(c, 400, "InvalidArgument",
                         "after is %zu bytes; a blob id is at most %d", an, BLOBS_MAX_AFTER);
        return -1;
    }
    if (*after && strlen(*after) != an) {
        http_reply_error(c, 400, "InvalidArgument", "after must not hold a NUL byte");
        return -1;
    }
    return 0;
}

/* Fixes the kept partitions and reads their applied offsets: the
 * positions array, or NULL out of memory. */
static json_t *blobs_positions(objlog_query *q, blobs_keep *k) {
    json_t *pos = json_array();
    for (int p = 0; pos && p < k->nparts; p++) {
        k->kept[p] = objlog_materializer_role(q->m, p) == OBJLOG_ROLE_ACTIVE;
        if (!k->kept[p])
            continue;
        json_t *e = json_pack("{s:i, s:I}", "partition", p, "applied",
                              (json_int_t)objlog_store_applied(q->store, p));
        if (!e || json_array_append_new(pos, e) < 0) {
            json_decref(pos);
            pos = NULL;
        }
    }
    return pos;
}

void blobs_get(http_ctx *c) {
    const char *after = NULL;
    size_t limit = 0;
    if (blobs_params(c, &after, &limit) < 0)
        return;
    objlog_query *q = c->q;
    blobs_keep k = {.nparts = objlog_materializer_partitions(q->m)};
    k.kept = calloc((size_t)(k.nparts > 0 ? k.nparts : 1), 1);
    json_t *pos = k.kept ? blobs_positions(q, &k) : NULL;
    json_t *ids = json_array();
    blobs_page pg = {.ids = ids};
    if (!pos || !ids) {
        free(k.kept);
        json_decref(pos);
        json_decref(ids);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    /* One id past the page says whether another page follows, so the
     * last page never names a next_after that leads nowhere. */
    char err[256] = "";
    long n = objlog_store_blobs_scan(q->store, objlog_materializer_rangemap(q->m),
                                     blobs_keep_partition, &k, after, limit + 1, blobs_take,
                                     &pg, err, sizeof(err));
    free(k.kept);
    if (n < 0 || pg.oom) {
        json_decref(pos);
        json_decref(ids);
        http_reply_error(c, 500, "InternalError", "blob references: %s",
                         n < 0 ? err : "out of memory");
        return;
    }
    json_t *body = json_pack("{s:o, s:o, s:i}", "blobs", ids, "positions", pos, "partitions",
                             k.nparts);
    if (body && json_array_size(ids) > limit) {
        json_array_remove(ids, limit);
        json_object_set(body, "next_after", json_array_get(ids, limit - 1));
    }
    const char *self = q->cluster ? cluster_self(q->cluster) : NULL;
    if (body && self)
        json_object_set_new(body, "node", json_string(self));
    if (!body) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    http_reply_json(c, 200, body);
}
