/* dedup.c: the `outcomes` column family as the state machine keeps it:
 * every event's outcome row, the request ids that let a retry get the
 * first outcome of its request (rule 1 of apply.c) and the trim that keeps
 * the rows within the dedup window and bound (rule 4).
 *
 * A request id has no row of its own: a request's first outcome row
 * carries it (Outcome.request_id, and Outcome.offset equal to the row's
 * offset; a retry's row is a copy naming the first one's offset), and a
 * partition's ids are found through its in-memory index (ridindex.h),
 * loaded from those rows by one scan. So a new request costs no read and
 * one row, and the index can never disagree with the rows for long: it is
 * rebuilt from them whenever the batch that changed it was not written.
 *
 * Invariant: which outcome a retry gets and which rows the trim removes
 * depend only on the log (offsets and Kafka timestamps, never the wall
 * clock) and on limits that are constants outside tests, so every replica
 * and every replay keeps exactly the same rows whatever its batches. */
#include "dedup.h"

#include "ridindex.h"
#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the request-id index of a partition ---- */

/* 1 if the outcome row at off is its request's first outcome. */
static int dedup_is_first(const Objlog__Outcome *o, int64_t off) {
    return o->request_id.len > 0 && o->offset == off;
}

/* Builds p's index from its outcome rows as the batch sees them. */
static ridindex *rids_load(apply_batch *b, int32_t p, char *errstr, size_t es) {
    ridindex *x = ridindex_new();
    if (!x) {
        snprintf(errstr, es, "out of memory");
        return NULL;
    }
    uint8_t start[5] = {'o'};
    apply_put_be32(start + 1, (uint32_t)p);
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_OUTCOMES);
    int rc = 0;
    for (rocksdb_iter_seek(it, (const char *)start, sizeof(start));
         rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn != APPLY_OUTCOME_KEY_LEN || memcmp(k, start, sizeof(start)) != 0)
            break;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
        int64_t off = (int64_t)apply_get_be64(k + 5);
        if (!o) {
            snprintf(errstr, es, "outcome %d.%lld: corrupt record", p, (long long)off);
            rc = -1;
            break;
        }
        if (dedup_is_first(o, off) &&
            ridindex_insert(x, ridindex_hash(o->request_id.data, o->request_id.len), off) < 0) {
            snprintf(errstr, es, "out of memory");
            rc = -1;
        }
        objlog__outcome__free_unpacked(o, NULL);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(errstr, es, "scan outcomes of partition %d: %s", p, err);
        rocksdb_free(err);
        rc = -1;
    }
    if (rc < 0) {
        ridindex_free(x);
        return NULL;
    }
    return x;
}

static ridindex *rids_of(apply_batch *b, int32_t p, char *errstr, size_t es) {
    ridindex *x = apply_batch_rids(b, p);
    if (x)
        return x;
    x = rids_load(b, p, errstr, es);
    if (x && apply_batch_rids_set(b, p, x) < 0) {
        snprintf(errstr, es, "out of memory");
        return NULL;
    }
    return x;
}

/* ---- outcomes and request ids ---- */

int dedup_save_outcome(apply_batch *b, int32_t p, int64_t off, int64_t log_time_ms,
                       ProtobufCBinaryData rid, const apply_result *res, char *errstr,
                       size_t es) {
    Objlog__Outcome o = OBJLOG__OUTCOME__INIT;
    o.code = res->code;
    o.message = (char *)res->message;
    o.request_id = rid;
    o.partition = p;
    o.offset = off;
    o.version_id = (char *)res->version_id;
    o.etag = (char *)(res->etag ? res->etag : "");
    o.delete_marker = res->delete_marker;
    o.log_time_ms = log_time_ms;
    o.upload_id = (char *)res->upload_id;
    uint8_t key[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(key, p, off);
    if (apply_batch_put_msg(b, OBJLOG_CF_OUTCOMES, key, sizeof(key), &o.base, errstr, es) < 0)
        return -1;
    /* Not loaded: its load, through the batch, will find the row. */
    ridindex *x = rid.len ? apply_batch_rids(b, p) : NULL;
    if (!x)
        return 0;
    apply_batch_rids_touch(b, p);
    if (ridindex_insert(x, ridindex_hash(rid.data, rid.len), off) < 0) {
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    return 0;
}

/* The kept first outcome of rid with the highest offset not below lo:
 * 1 (*out, its row, owned by the caller), 0 none, -1 error. A
 * candidate of the index whose row names another request (a hash
 * collision) is passed over. */
static int rid_first_outcome(apply_batch *b, int32_t p, ProtobufCBinaryData rid, int64_t lo,
                             char **out, size_t *out_n, char *errstr, size_t es) {
    ridindex *x = rids_of(b, p, errstr, es);
    if (!x)
        return -1;
    uint64_t h = ridindex_hash(rid.data, rid.len);
    int64_t few[4], *offs = few;
    size_t n = ridindex_find(x, h, few, 4);
    if (n > 4) {
        offs = malloc(n * sizeof(*offs));
        if (!offs) {
            snprintf(errstr, es, "out of memory");
            return -1;
        }
        ridindex_find(x, h, offs, n);
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0 && offs[i] >= lo; i++) {
        uint8_t okey[APPLY_OUTCOME_KEY_LEN];
        char *v;
        size_t vn;
        apply_outcome_key(okey, p, offs[i]);
        rc = apply_batch_get(b, OBJLOG_CF_OUTCOMES, okey, sizeof(okey), &v, &vn, errstr, es);
        if (rc <= 0)
            continue;
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
        if (!o) {
            rocksdb_free(v);
            snprintf(errstr, es, "outcome %d.%lld: corrupt record", p, (long long)offs[i]);
            rc = -1;
            break;
        }
        int mine = o->request_id.len == rid.len && memcmp(o->request_id.data, rid.data,
                                                          rid.len) == 0;
        objlog__outcome__free_unpacked(o, NULL);
        if (!mine) {
            rocksdb_free(v);
            rc = 0;
            continue;
        }
        *out = v;
        *out_n = vn;
    }
    if (offs != few)
        free(offs);
    return rc;
}

int dedup_retry(apply_batch *b, int32_t p, int64_t off, int64_t now,
                const Objlog__Event *ev, Objlog__OutcomeCode *code, char *errstr,
                size_t es) {
    if (ev->request_id.len == 0)
        return 0;
    /* The bound: the event at off remembers offsets off-max_ids..off-1,
     * checked here too so the decision never depends on when trimming
     * ran. Only the newest first outcome counts, as the older ones of the
     * same id were superseded when it was decided. */
    char *v;
    size_t vn;
    int rc = rid_first_outcome(b, p, ev->request_id, off - apply_batch_max_ids(b), &v, &vn,
                               errstr, es);
    if (rc <= 0)
        return rc;
    Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
    if (!o) {
        rocksdb_free(v);
        snprintf(errstr, es, "outcome in partition %d: corrupt record", p);
        return -1;
    }
    int expired = now - o->log_time_ms > apply_batch_window_ms(b);
    *code = o->code;
    objlog__outcome__free_unpacked(o, NULL);
    if (!expired) {
        uint8_t okey[APPLY_OUTCOME_KEY_LEN];
        apply_outcome_key(okey, p, off);
        apply_batch_put(b, OBJLOG_CF_OUTCOMES, okey, sizeof(okey), v, vn);
    }
    rocksdb_free(v);
    return expired ? 0 : 1;
}

/* ---- trimming outcomes (the dedup window and bound) ---- */

/* Rows trimmed per event at most: a backlog (a lowered bound, a store from
 * before trimming existed) drains over the next events instead of stalling
 * one. A constant, so replays trim exactly the same rows. */
#define TRIM_MAX_PER_EVENT 64

typedef struct trim_victim {
    int64_t offset;
    int first;       /* its request's first outcome: leaves the index */
    uint64_t rid_hash;
} trim_victim;

/* meta "olow" be32(p) -> be64(oldest kept 'o' offset) be64(its log time).
 * 1 found, 0 absent, -1 error. */
static int olow_get(apply_batch *b, int32_t p, int64_t *low, int64_t *low_ts,
                    char *errstr, size_t es) {
    uint8_t mk[APPLY_META_KEY_MAX];
    size_t mkn = apply_meta_key(mk, APPLY_META_OUTCOMES_LOW, p);
    char *v;
    size_t vn;
    int rc = apply_batch_get(b, OBJLOG_CF_META, mk, mkn, &v, &vn, errstr, es);
    if (rc <= 0)
        return rc;
    if (vn == 16) {
        *low = (int64_t)apply_get_be64((const uint8_t *)v);
        *low_ts = (int64_t)apply_get_be64((const uint8_t *)v + 8);
    }
    rocksdb_free(v);
    return vn == 16 ? 1 : 0;
}

static void olow_put(apply_batch *b, int32_t p, int64_t low, int64_t low_ts) {
    uint8_t mk[APPLY_META_KEY_MAX], v[16];
    size_t mkn = apply_meta_key(mk, APPLY_META_OUTCOMES_LOW, p);
    apply_put_be64(v, (uint64_t)low);
    apply_put_be64(v + 8, (uint64_t)low_ts);
    apply_batch_put(b, OBJLOG_CF_META, mk, mkn, v, sizeof(v));
}

/* 1 if the 'o' row (offset, log time) is past the window or the bound as
 * seen from the event at (off, now). */
static int trim_due(const apply_batch *b, int64_t off, int64_t now,
                    int64_t o_off, int64_t o_ts) {
    return o_off <= off - apply_batch_max_ids(b) || now - o_ts > apply_batch_window_ms(b);
}

/* Collects up to TRIM_MAX_PER_EVENT rows of partition p from the oldest
 * while they are due; *low and *low_ts get the first row kept. Returns the
 * number collected, or -1. The batch is not written while iterating. */
static int trim_collect(apply_batch *b, int32_t p, int64_t off, int64_t now,
                        trim_victim *vict, int64_t *low, int64_t *low_ts,
                        char *errstr, size_t es) {
    uint8_t start[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(start, p, *low);
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_OUTCOMES);
    int n = 0, rc = 0;
    for (rocksdb_iter_seek(it, (const char *)start, sizeof(start));
         rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn != APPLY_OUTCOME_KEY_LEN || k[0] != 'o' ||
            apply_get_be32(k + 1) != (uint32_t)p)
            break;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
        if (!o) {
            snprintf(errstr, es, "outcome in partition %d: corrupt record", p);
            rc = -1;
            break;
        }
        int64_t o_off = (int64_t)apply_get_be64(k + 5);
        *low = o_off;
        *low_ts = o->log_time_ms;
        int due = n < TRIM_MAX_PER_EVENT && trim_due(b, off, now, o_off, o->log_time_ms);
        if (due) {
            vict[n].offset = o_off;
            vict[n].first = dedup_is_first(o, o_off);
            vict[n].rid_hash = vict[n].first ? ridindex_hash(o->request_id.data,
                                                             o->request_id.len) : 0;
            n++;
        }
        objlog__outcome__free_unpacked(o, NULL);
        if (!due)
            break;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(errstr, es, "scan outcomes: %s", err);
        rocksdb_free(err);
        rc = -1;
    }
    return rc < 0 ? -1 : n;
}

/* Deletes a trimmed 'o' row; a request's first outcome leaves the
 * index with it (a retry copy was never in it). */
static void trim_victim_apply(apply_batch *b, int32_t p, const trim_victim *t) {
    uint8_t okey[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(okey, p, t->offset);
    apply_batch_del(b, OBJLOG_CF_OUTCOMES, okey, sizeof(okey));
    ridindex *x = t->first ? apply_batch_rids(b, p) : NULL;
    if (!x)
        return;
    ridindex_remove(x, t->rid_hash, t->offset);
    apply_batch_rids_touch(b, p);
}

/* Runs after the event at (p, off, now) stored its outcome: drops the
 * partition's oldest outcomes (and their request ids) that are out of the
 * window or the bound, oldest offset first, and records the oldest kept
 * offset in meta "olow". Depends only on the log, so replay is exact. */
int dedup_trim(apply_batch *b, int32_t p, int64_t off, int64_t now, char *errstr,
               size_t es) {
    int64_t low = 0, low_ts = 0;
    int rc = olow_get(b, p, &low, &low_ts, errstr, es);
    if (rc < 0)
        return -1;
    if (rc == 1 && !trim_due(b, off, now, low, low_ts))
        return 0; /* the common case: one point read */
    trim_victim vict[TRIM_MAX_PER_EVENT];
    int64_t new_low = rc == 1 ? low : 0, new_ts = now;
    int n = trim_collect(b, p, off, now, vict, &new_low, &new_ts, errstr, es);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++)
        trim_victim_apply(b, p, &vict[i]);
    /* The event's own outcome is never due, so a row is always kept; when
     * the cap stopped the scan, new_low is the first row not yet trimmed. */
    if (n > 0 && new_low == vict[n - 1].offset) {
        new_low = off;
        new_ts = now;
    }
    olow_put(b, p, new_low, new_ts);
    return 0;
}
