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
 * A handoff carries the records of a range's requests to the partition
 * that takes the range (dedup_export_range, dedup_import_range): the
 * target keeps them in 'i' rows of its own, which its index holds with
 * the DEDUP_IMPORTED bit on the RangeIn's offset.
 *
 * Invariant: which outcome a retry gets and which rows the trim removes
 * depend only on the log (offsets and Kafka timestamps, never the wall
 * clock) and on limits that are constants outside tests, so every replica
 * and every replay keeps exactly the same rows whatever its batches. */
#include "dedup.h"
#include "feed.h"

#include "ridindex.h"
#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the request-id index of a partition ---- */

/* An index entry naming an imported record: 'i' be32(p) be64(off) rid,
 * off the RangeIn's offset. Offsets stay far below it. */
#define DEDUP_IMPORTED (INT64_C(1) << 62)
/* Request ids longer than this have no imported record (the producer's
 * are 16 bytes). */
#define DEDUP_RID_MAX 64
#define DEDUP_REC_KEY_MAX (APPLY_OUTCOME_KEY_LEN + DEDUP_RID_MAX)

/* 1 if the outcome row at off is its request's first outcome. A
 * WrongRange is not: the producer resends that request, same id, to the
 * partition that holds its key now, and it must be decided there. */
static int dedup_is_first(const Objlog__Outcome *o, int64_t off) {
    return o->request_id.len > 0 && o->offset == off &&
           o->code != OBJLOG__OUTCOME_CODE__OUTCOME_WRONG_RANGE;
}

/* Ends a scan of p's rows: the iterator's error (what), if any, into
 * errstr; the iterator goes. 0, or -1. */
static int scan_end(rocksdb_iterator_t *it, const char *what, int32_t p, char *errstr,
                    size_t es) {
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (!err)
        return 0;
    snprintf(errstr, es, "scan %s of partition %d: %s", what, p, err);
    rocksdb_free(err);
    return -1;
}

/* kind ('x' exported, 'i' imported) be32(p) be64(off) rid into out
 * (room for APPLY_OUTCOME_KEY_LEN + rid_n bytes, rid_n <= DEDUP_RID_MAX);
 * returns the length. */
static size_t rec_key(uint8_t *out, char kind, int32_t p, int64_t off,
                      const uint8_t *rid, size_t rid_n) {
    out[0] = (uint8_t)kind;
    apply_put_be32(out + 1, (uint32_t)p);
    apply_put_be64(out + 5, (uint64_t)off);
    if (rid_n)
        memcpy(out + APPLY_OUTCOME_KEY_LEN, rid, rid_n);
    return APPLY_OUTCOME_KEY_LEN + rid_n;
}

/* Adds p's imported records ('i' rows) to x. 0 or -1. */
static int rids_load_imported(apply_batch *b, int32_t p, ridindex *x, char *errstr,
                              size_t es) {
    uint8_t start[5] = {'i'};
    apply_put_be32(start + 1, (uint32_t)p);
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_OUTCOMES);
    int rc = 0;
    for (rocksdb_iter_seek(it, (const char *)start, sizeof(start));
         rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn <= APPLY_OUTCOME_KEY_LEN || memcmp(k, start, sizeof(start)) != 0)
            break;
        int64_t off = (int64_t)apply_get_be64(k + 5);
        uint64_t h = ridindex_hash(k + APPLY_OUTCOME_KEY_LEN, kn - APPLY_OUTCOME_KEY_LEN);
        if (ridindex_insert(x, h, off | DEDUP_IMPORTED) < 0) {
            snprintf(errstr, es, "out of memory");
            rc = -1;
        }
    }
    if (scan_end(it, "imported requests", p, errstr, es) < 0)
        rc = -1;
    return rc;
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
    if (scan_end(it, "outcomes", p, errstr, es) < 0)
        rc = -1;
    if (rc == 0)
        rc = rids_load_imported(b, p, x, errstr, es);
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
                       ProtobufCBinaryData rid, const keybuf *route, const apply_result *res,
                       char *errstr, size_t es) {
    Objlog__Outcome o = OBJLOG__OUTCOME__INIT;
    int record = rid.len && res->code != OBJLOG__OUTCOME_CODE__OUTCOME_WRONG_RANGE;
    if (record && route) {
        o.route_key.data = route->data;
        o.route_key.len = route->len;
    }
    o.imported = res->imported;
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
    ridindex *x = record ? apply_batch_rids(b, p) : NULL;
    if (!x)
        return 0;
    apply_batch_rids_touch(b, p);
    if (ridindex_insert(x, ridindex_hash(rid.data, rid.len), off) < 0) {
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    return 0;
}

/* Candidate c of the index read back: 1 it is rid's record (*v, *vn,
 * owned by the caller), 0 not (a hash collision, or a row gone), -1. */
static int rid_candidate(apply_batch *b, int32_t p, ProtobufCBinaryData rid, int64_t c,
                         char **v, size_t *vn, char *errstr, size_t es) {
    uint8_t key[DEDUP_REC_KEY_MAX];
    int64_t at = c & ~DEDUP_IMPORTED;
    size_t kn;
    if (c & DEDUP_IMPORTED) {
        if (rid.len > DEDUP_RID_MAX)
            return 0;
        kn = rec_key(key, 'i', p, at, rid.data, rid.len);
    } else {
        kn = rec_key(key, 'o', p, at, NULL, 0);
    }
    int rc = apply_batch_get(b, OBJLOG_CF_OUTCOMES, key, kn, v, vn, errstr, es);
    if (rc <= 0)
        return rc;
    Objlog__Outcome *o = objlog__outcome__unpack(NULL, *vn, (const uint8_t *)*v);
    if (!o) {
        rocksdb_free(*v);
        snprintf(errstr, es, "outcome %d.%lld: corrupt record", p, (long long)at);
        return -1;
    }
    int mine = o->request_id.len == rid.len &&
               memcmp(o->request_id.data, rid.data, rid.len) == 0;
    objlog__outcome__free_unpacked(o, NULL);
    if (!mine)
        rocksdb_free(*v);
    return mine;
}

/* The kept first outcome of rid with the highest offset not below lo (an
 * imported record counts at its RangeIn's offset): 1 (*out, its row,
 * owned by the caller), 0 none, -1 error. A candidate of the index whose
 * row names another request (a hash collision) is passed over. */
static int rid_first_outcome(apply_batch *b, int32_t p, ProtobufCBinaryData rid, int64_t lo,
                             char **out, size_t *out_n, char *errstr, size_t es) {
    *out = NULL;
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
    int rc = 0, found = 0;
    int64_t best = -1;
    for (size_t i = 0; i < n && rc >= 0; i++) {
        int64_t at = offs[i] & ~DEDUP_IMPORTED;
        if (at < lo || (found && at <= best))
            continue;
        char *v = NULL;
        size_t vn = 0;
        rc = rid_candidate(b, p, rid, offs[i], &v, &vn, errstr, es);
        if (rc <= 0)
            continue;
        rocksdb_free(*out);
        *out = v;
        *out_n = vn;
        best = at;
        found = 1;
    }
    if (offs != few)
        free(offs);
    if (rc < 0 && found)
        rocksdb_free(*out);
    return rc < 0 ? -1 : found;
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
    int imported;    /* a RangeIn's: its imported records go too */
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
            vict[n].imported = vict[n].first && o->imported > 0;
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

/* Collects the keys of the rows of kind ('x', 'i') of (p, off) into
 * keys (each malloc'd, a keybuf). Returns how many, or -1 (errstr). */
static long rec_collect(apply_batch *b, char kind, int32_t p, int64_t off, keybuf **keys,
                        char *errstr, size_t es) {
    uint8_t start[APPLY_OUTCOME_KEY_LEN];
    rec_key(start, kind, p, off, NULL, 0);
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_OUTCOMES);
    long n = 0, cap = 0;
    int rc = 0;
    *keys = NULL;
    for (rocksdb_iter_seek(it, (const char *)start, sizeof(start));
         rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (kn < sizeof(start) || memcmp(k, start, sizeof(start)) != 0)
            break;
        if (kn == sizeof(start))
            continue; /* a handoff's marker row (handoff.c), not a record */
        if (n == cap) {
            long nc = cap ? 2 * cap : 64;
            keybuf *nk = realloc(*keys, (size_t)nc * sizeof(*nk));
            if (!nk) {
                rc = -1;
                break;
            }
            *keys = nk;
            cap = nc;
        }
        keybuf_init(&(*keys)[n]);
        if (keybuf_append(&(*keys)[n++], k, kn) < 0)
            rc = -1;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err || rc < 0) {
        snprintf(errstr, es, "scan request records %d.%lld: %s", p, (long long)off,
                 err ? err : "out of memory");
        rocksdb_free(err);
        for (long i = 0; i < n; i++)
            keybuf_free(&(*keys)[i]);
        free(*keys);
        *keys = NULL;
        return -1;
    }
    return n;
}

static void rec_keys_free(keybuf *keys, long n) {
    for (long i = 0; i < n; i++)
        keybuf_free(&keys[i]);
    free(keys);
}

/* The imported records of the RangeIn at (p, off) go with its outcome. */
static int trim_imported(apply_batch *b, int32_t p, int64_t off, char *errstr, size_t es) {
    keybuf *keys;
    long n = rec_collect(b, 'i', p, off, &keys, errstr, es);
    if (n < 0)
        return -1;
    ridindex *x = apply_batch_rids(b, p);
    for (long i = 0; i < n; i++) {
        apply_batch_del(b, OBJLOG_CF_OUTCOMES, keys[i].data, keys[i].len);
        if (x)
            ridindex_remove(x, ridindex_hash(keys[i].data + APPLY_OUTCOME_KEY_LEN,
                                             keys[i].len - APPLY_OUTCOME_KEY_LEN),
                            off | DEDUP_IMPORTED);
    }
    if (x && n)
        apply_batch_rids_touch(b, p);
    rec_keys_free(keys, n);
    return 0;
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
    for (int i = 0; i < n; i++) {
        trim_victim_apply(b, p, &vict[i]);
        if (vict[i].imported && trim_imported(b, p, vict[i].offset, errstr, es) < 0)
            return -1;
    }
    /* The event's own outcome is never due, so a row is always kept; when
     * the cap stopped the scan, new_low is the first row not yet trimmed. */
    if (n > 0 && new_low == vict[n - 1].offset) {
        new_low = off;
        new_ts = now;
    }
    olow_put(b, p, new_low, new_ts);
    /* the change feed lives as long as the outcomes (feed.h) */
    return feed_trim(b, p, rc == 1 ? low : new_low, new_low, errstr, es);
}

/* ---- a handoff's request records ---- */

/* 1 if k lies in [start, end) (end_n 0: no end). */
static int in_range(const uint8_t *k, size_t kn, const uint8_t *start, size_t sn,
                    const uint8_t *end, size_t en) {
    size_t m = kn < sn ? kn : sn;
    int c = memcmp(k, start, m);
    if (c < 0 || (c == 0 && kn < sn))
        return 0;
    if (!en)
        return 1;
    m = kn < en ? kn : en;
    c = memcmp(k, end, m);
    return c < 0 || (c == 0 && kn < en);
}

/* The records a RangeOut sets aside, collected before they are staged:
 * the batch is not written while an iterator runs over it. */
typedef struct export_set {
    keybuf *keys, *vals;
    long n, cap;
} export_set;

static void export_set_free(export_set *x) {
    for (long i = 0; i < x->n; i++) {
        keybuf_free(&x->keys[i]);
        keybuf_free(&x->vals[i]);
    }
    free(x->keys);
    free(x->vals);
}

/* Adds the record (rid, value v) as 'x' be32(p) be64(off) rid. 0 or -1. */
static int export_add(export_set *x, int32_t p, int64_t off, const uint8_t *rid, size_t rid_n,
                      const void *v, size_t vn) {
    if (x->n == x->cap) {
        long nc = x->cap ? 2 * x->cap : 64;
        keybuf *nk = realloc(x->keys, (size_t)nc * sizeof(*nk));
        if (nk)
            x->keys = nk;
        keybuf *nv = nk ? realloc(x->vals, (size_t)nc * sizeof(*nv)) : NULL;
        if (!nv)
            return -1;
        x->vals = nv;
        x->cap = nc;
    }
    uint8_t rk[DEDUP_REC_KEY_MAX];
    size_t rn = rec_key(rk, 'x', p, off, rid, rid_n);
    keybuf_init(&x->keys[x->n]);
    keybuf_init(&x->vals[x->n]);
    x->n++;
    return keybuf_append(&x->keys[x->n - 1], rk, rn) < 0 ||
                   keybuf_append(&x->vals[x->n - 1], v, vn) < 0
               ? -1
               : 0;
}

/* Collects p's records of kind ('o': its first outcomes, 'i': the ones it
 * imported) whose route keys lie in the range. 0 or -1 (errstr). */
static int export_scan(apply_batch *b, int32_t p, char kind, int64_t off,
                       const uint8_t *start, size_t start_n, const uint8_t *end,
                       size_t end_n, export_set *x, char *errstr, size_t es) {
    uint8_t pre[5] = {(uint8_t)kind};
    apply_put_be32(pre + 1, (uint32_t)p);
    int rc = 0;
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_OUTCOMES);
    for (rocksdb_iter_seek(it, (const char *)pre, sizeof(pre));
         rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn < APPLY_OUTCOME_KEY_LEN || memcmp(k, pre, sizeof(pre)) != 0)
            break;
        if ((kind == 'o') != (kn == APPLY_OUTCOME_KEY_LEN))
            continue;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
        if (!o) {
            snprintf(errstr, es, "outcome in partition %d: corrupt record", p);
            rc = -1;
            break;
        }
        int record = kind == 'i' || dedup_is_first(o, (int64_t)apply_get_be64(k + 5));
        if (record && o->request_id.len <= DEDUP_RID_MAX && o->route_key.len > 0 &&
            in_range(o->route_key.data, o->route_key.len, start, start_n, end, end_n) &&
            export_add(x, p, off, o->request_id.data, o->request_id.len, v, vn) < 0) {
            snprintf(errstr, es, "out of memory");
            rc = -1;
        }
        objlog__outcome__free_unpacked(o, NULL);
    }
    if (scan_end(it, "outcomes", p, errstr, es) < 0)
        rc = -1;
    return rc;
}

int dedup_export_range(apply_batch *b, int32_t p, int64_t off, const uint8_t *start,
                       size_t start_n, const uint8_t *end, size_t end_n, uint32_t *n,
                       char *errstr, size_t es) {
    export_set x = {NULL, NULL, 0, 0};
    *n = 0;
    /* Imported records first: a request's own first outcome here, if it
     * has one too, is newer and wins the same 'x' row. */
    int rc = export_scan(b, p, 'i', off, start, start_n, end, end_n, &x, errstr, es);
    if (rc == 0)
        rc = export_scan(b, p, 'o', off, start, start_n, end, end_n, &x, errstr, es);
    for (long i = 0; rc == 0 && i < x.n; i++)
        apply_batch_put(b, OBJLOG_CF_OUTCOMES, x.keys[i].data, x.keys[i].len, x.vals[i].data,
                        x.vals[i].len);
    *n = rc == 0 ? (uint32_t)x.n : 0;
    export_set_free(&x);
    return rc;
}

int dedup_import_range(apply_batch *b, int32_t q, int64_t off, int32_t from,
                       int64_t from_off, uint32_t *n, char *errstr, size_t es) {
    *n = 0;
    keybuf *keys;
    long cnt = rec_collect(b, 'x', from, from_off, &keys, errstr, es);
    if (cnt < 0)
        return -1;
    ridindex *x = apply_batch_rids(b, q);
    int rc = 0;
    for (long i = 0; i < cnt && rc == 0; i++) {
        char *v;
        size_t vn;
        int got = apply_batch_get(b, OBJLOG_CF_OUTCOMES, keys[i].data, keys[i].len, &v, &vn,
                                  errstr, es);
        if (got < 0) {
            rc = -1;
            break;
        }
        if (got == 0)
            continue;
        const uint8_t *rid = keys[i].data + APPLY_OUTCOME_KEY_LEN;
        size_t rid_n = keys[i].len - APPLY_OUTCOME_KEY_LEN;
        uint8_t ik[DEDUP_REC_KEY_MAX];
        size_t ikn = rec_key(ik, 'i', q, off, rid, rid_n);
        apply_batch_put(b, OBJLOG_CF_OUTCOMES, ik, ikn, v, vn);
        apply_batch_del(b, OBJLOG_CF_OUTCOMES, keys[i].data, keys[i].len);
        rocksdb_free(v);
        if (x && ridindex_insert(x, ridindex_hash(rid, rid_n), off | DEDUP_IMPORTED) < 0) {
            snprintf(errstr, es, "out of memory");
            rc = -1;
        }
        (*n)++;
    }
    if (x)
        apply_batch_rids_touch(b, q);
    rec_keys_free(keys, cnt);
    return rc;
}
