/* outcomes.c: GET /v1/outcomes, the batched outcome feed for producers:
 * ?partition=P&from=OFFSET&max=N&timeout_ms=T long-polls until
 * the event at OFFSET is applied (or T passes), then answers every stored
 * outcome of partition P with offset >= OFFSET that is applied, up to N:
 * {"partition","applied","low","outcomes":[{"offset","status","code",
 * "message","request_id","version_id","etag","delete_marker","upload_id",
 * "token"}]}; "low" is the oldest outcome still kept (the dedup window
 * trims older ones), so a client can tell "expired" from "missing".
 * One such request completes every pending write of a producer in that
 * partition, instead of one GET /v1/writes/{token} per write.
 *
 * Invariant: only rows with offset < "applied" are listed, and "applied" is
 * read before the scan; the materializer writes a batch's outcomes and its
 * applied offset in one WriteBatch, so the list is gap-free up to "applied"
 * except for outcomes trimmed by the dedup window. "offset" and "token" are
 * the row's position, never the stored Outcome's (a deduplicated retry
 * stores a copy of the first outcome, which names the first position). */
#define _GNU_SOURCE
#include "core.h"
#include "api.h"
#include "cluster.h"
#include "read.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outcome.h"

#define OUTCOMES_DEFAULT_MAX 1000
#define OUTCOMES_MAX_MAX 10000
#define OUTCOMES_KEY_LEN 13 /* 'o' be32(partition) be64(offset) */

static void outcomes_key(uint8_t k[OUTCOMES_KEY_LEN], int32_t p, int64_t off) {
    k[0] = 'o';
    for (int i = 0; i < 4; i++)
        k[1 + i] = (uint8_t)((uint32_t)p >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
        k[5 + i] = (uint8_t)((uint64_t)off >> (56 - 8 * i));
}

static int64_t outcomes_key_offset(const uint8_t *k) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | k[5 + i];
    return (int64_t)v;
}

static json_t *outcomes_entry(const Objlog__Outcome *o, int32_t p,
                              int64_t off) {
    char rid[33] = "", token[48];
    for (size_t i = 0; i < o->request_id.len && i < 16; i++)
        snprintf(rid + 2 * i, 3, "%02x", o->request_id.data[i]);
    snprintf(token, sizeof(token), "%d.%lld", (int)p, (long long)off);
    return json_pack(
        "{s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:s}",
        "offset", (json_int_t)off,
        "status", o->code == OBJLOG__OUTCOME_CODE__OUTCOME_OK ? "ok" : "rejected",
        "code", outcome_code_name(o->code),
        "message", o->message ? o->message : "",
        "request_id", rid,
        "version_id", o->version_id ? o->version_id : "",
        "etag", o->etag ? o->etag : "",
        "delete_marker", (int)o->delete_marker,
        "upload_id", o->upload_id ? o->upload_id : "",
        "token", token);
}

/* Appends the outcomes of p in [from, applied) to arr, at most max.
 * 0, or -1 with errstr. */
static int outcomes_scan(objlog_store *s, int32_t p, int64_t from,
                         int64_t applied, int max, json_t *arr, char *errstr,
                         size_t errstr_size) {
    uint8_t lo[OUTCOMES_KEY_LEN], hi[OUTCOMES_KEY_LEN];
    outcomes_key(lo, p, from);
    outcomes_key(hi, p, applied);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi, sizeof(hi));
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_OUTCOMES));
    int rc = 0;
    int n = 0;
    for (rocksdb_iter_seek(it, (const char *)lo, sizeof(lo));
         rocksdb_iter_valid(it) && n < max; rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
        if (kn != OUTCOMES_KEY_LEN || memcmp(k, lo, 5) != 0)
            break;
        int64_t off = outcomes_key_offset(k);
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, v);
        if (!o) {
            snprintf(errstr, errstr_size, "outcome %d.%lld: corrupt record",
                     (int)p, (long long)off);
            rc = -1;
            break;
        }
        json_array_append_new(arr, outcomes_entry(o, p, off));
        objlog__outcome__free_unpacked(o, NULL);
        n++;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (err && rc == 0) {
        snprintf(errstr, errstr_size, "scan outcomes of %d: %s", (int)p, err);
        rc = -1;
    }
    rocksdb_free(err);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return rc;
}

/* partition, from and max; -1 after replying 400. */
static int outcomes_params(http_ctx *c, int32_t *p, int64_t *from, int *max) {
    long long v;
    int nparts = objlog_materializer_partitions(c->q->m);
    if (!http_param_get(c, "partition", NULL) ||
        http_param_int(c, "partition", 0, nparts - 1, 0, &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "partition is required: an integer in 0..%d",
                         nparts - 1);
        return -1;
    }
    *p = (int32_t)v;
    if (!http_param_get(c, "from", NULL) ||
        http_param_int(c, "from", 0, INT64_MAX / 2, 0, &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "from is required: a non-negative offset");
        return -1;
    }
    *from = (int64_t)v;
    if (http_param_int(c, "max", 1, OUTCOMES_MAX_MAX, OUTCOMES_DEFAULT_MAX,
                       &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "max must be an integer in 1..%d", OUTCOMES_MAX_MAX);
        return -1;
    }
    *max = (int)v;
    return 0;
}

void outcomes_get(http_ctx *c) {
    int32_t p;
    int64_t from;
    int max, timeout_ms;
    if (outcomes_params(c, &p, &from, &max) < 0 ||
        http_timeout_param(c, &timeout_ms) < 0)
        return;
    if (!c->fenced && cluster_route(c, &p, 1))
        return;
    /* A producer asks for outcomes: its writes are in the log or coming. */
    objlog_materializer_kick(c->q->m);
    /* Parks off this worker, bounded by timeout_ms, as the read fences do. */
    int rc = fence_await_applied(c, p, from, timeout_ms);
    if (rc == FENCE_PARKED)
        return;
    if (rc < 0) {
        fence_reply_behind(c, p, from, 1);
        return;
    }
    int64_t applied = objlog_materializer_applied(c->q->m, p);
    fence_applied_header(c, &p, 1, &applied);
    int64_t low = objlog_store_outcomes_low(c->q->store, p);
    json_t *arr = json_array();
    char err[256];
    if (applied > from &&
        outcomes_scan(c->q->store, p, from, applied, max, arr, err,
                      sizeof(err)) < 0) {
        json_decref(arr);
        http_reply_error(c, 500, "InternalError", "%s", err);
        return;
    }
    http_reply_json(c, 200, json_pack("{s:i, s:I, s:I, s:o}", "partition",
                                      (int)p, "applied", (json_int_t)applied,
                                      "low", (json_int_t)low, "outcomes", arr));
}
