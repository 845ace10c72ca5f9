/* dedup.c: the `outcomes` column family as the state machine keeps it:
 * every event's outcome row, the request-id rows that let a retry get the
 * first outcome of its request (rule 1 of apply.c) and the trim that keeps
 * both within the dedup window and bound (rule 4).
 *
 * Invariant: which outcome a retry gets and which rows the trim removes
 * depend only on the log (offsets and Kafka timestamps, never the wall
 * clock) and on limits that are constants outside tests, so every replica
 * and every replay keeps exactly the same rows whatever its batches. */
#include "dedup.h"

#include "rows.h"

#include <stdio.h>
#include <string.h>

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
    return apply_batch_put_msg(b, OBJLOG_CF_OUTCOMES, key, sizeof(key), &o.base,
                               errstr, es);
}

/* 'r' be32(p) request_id: a partition's request ids are its own, so no
 * event of one partition reads or writes a row of another's (apply
 * threads own disjoint partitions, lanes.h). */
static int rid_key(keybuf *kb, int32_t p, ProtobufCBinaryData rid) {
    uint8_t pb[4];
    apply_put_be32(pb, (uint32_t)p);
    keybuf_init(kb);
    return (keybuf_append(kb, "r", 1) < 0 || keybuf_append(kb, pb, 4) < 0 ||
            keybuf_append(kb, rid.data, rid.len) < 0) ? -1 : 0;
}

/* Position (partition, offset) of a request id's first outcome, from its
 * 'r' row. 1 found, 0 none, -1 error. */
static int rid_position(apply_batch *b, int32_t p, ProtobufCBinaryData rid, int32_t *rp,
                        int64_t *roff, char *errstr, size_t es) {
    keybuf rk;
    char *pos;
    size_t pn;
    if (rid_key(&rk, p, rid) < 0) {
        keybuf_free(&rk);
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    int rc = apply_batch_get(b, OBJLOG_CF_OUTCOMES, rk.data, rk.len, &pos, &pn,
                             errstr, es);
    keybuf_free(&rk);
    if (rc <= 0)
        return rc;
    if (pn == 12) {
        *rp = (int32_t)apply_get_be32((const uint8_t *)pos);
        *roff = (int64_t)apply_get_be64((const uint8_t *)pos + 4);
    }
    rocksdb_free(pos);
    return pn == 12 ? 1 : 0;
}

int dedup_retry(apply_batch *b, int32_t p, int64_t off, int64_t now,
                const Objlog__Event *ev, Objlog__OutcomeCode *code, char *errstr,
                size_t es) {
    if (ev->request_id.len == 0)
        return 0;
    int32_t rp = 0;
    int64_t roff = 0;
    int rc = rid_position(b, p, ev->request_id, &rp, &roff, errstr, es);
    if (rc <= 0)
        return rc;
    /* The bound, checked here too so the decision never depends on when
     * trimming ran: the event at off remembers offsets off-max_ids..off-1. */
    if (rp == p && roff < off - apply_batch_max_ids(b))
        return 0;
    uint8_t okey[APPLY_OUTCOME_KEY_LEN];
    char *v;
    size_t vn;
    apply_outcome_key(okey, rp, roff);
    rc = apply_batch_get(b, OBJLOG_CF_OUTCOMES, okey, sizeof(okey), &v, &vn, errstr, es);
    if (rc <= 0)
        return rc;
    Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
    if (!o) {
        rocksdb_free(v);
        snprintf(errstr, es, "outcome %d.%lld: corrupt record", rp,
                 (long long)roff);
        return -1;
    }
    int expired = now - o->log_time_ms > apply_batch_window_ms(b);
    *code = o->code;
    objlog__outcome__free_unpacked(o, NULL);
    if (!expired) {
        apply_outcome_key(okey, p, off);
        apply_batch_put(b, OBJLOG_CF_OUTCOMES, okey, sizeof(okey), v, vn);
    }
    rocksdb_free(v);
    return expired ? 0 : 1;
}

int dedup_record_request(apply_batch *b, int32_t p, int64_t off, ProtobufCBinaryData rid,
                         char *errstr, size_t es) {
    if (rid.len == 0)
        return 0;
    keybuf rk;
    uint8_t pos[12];
    if (rid_key(&rk, p, rid) < 0) {
        keybuf_free(&rk);
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    apply_put_be32(pos, (uint32_t)p);
    apply_put_be64(pos + 4, (uint64_t)off);
    apply_batch_put(b, OBJLOG_CF_OUTCOMES, rk.data, rk.len, pos, sizeof(pos));
    keybuf_free(&rk);
    return 0;
}

/* ---- trimming outcomes (the dedup window and bound) ---- */

/* Rows trimmed per event at most: a backlog (a lowered bound, a store from
 * before trimming existed) drains over the next events instead of stalling
 * one. A constant, so replays trim exactly the same rows. */
#define TRIM_MAX_PER_EVENT 64

typedef struct trim_victim {
    int64_t offset;
    keybuf rkey; /* 'r' be32(p) request_id, empty if the outcome has none */
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
            keybuf_init(&vict[n].rkey);
            if (o->request_id.len && rid_key(&vict[n].rkey, p, o->request_id) < 0) {
                snprintf(errstr, es, "out of memory");
                rc = -1;
            }
            n++;
        }
        objlog__outcome__free_unpacked(o, NULL);
        if (!due || rc < 0)
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
    if (rc < 0)
        for (int i = 0; i < n; i++)
            keybuf_free(&vict[i].rkey);
    return rc < 0 ? -1 : n;
}

/* Deletes a trimmed 'o' row and, if it was its request's first outcome
 * (the 'r' row still points at it), the 'r' row: a retry after the window
 * re-pointed 'r' to its own outcome, which must stay. */
static int trim_victim_apply(apply_batch *b, int32_t p, const trim_victim *t,
                             char *errstr, size_t es) {
    uint8_t okey[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(okey, p, t->offset);
    apply_batch_del(b, OBJLOG_CF_OUTCOMES, okey, sizeof(okey));
    if (t->rkey.len == 0)
        return 0;
    char *pos;
    size_t pn;
    int rc = apply_batch_get(b, OBJLOG_CF_OUTCOMES, t->rkey.data, t->rkey.len, &pos,
                             &pn, errstr, es);
    if (rc <= 0)
        return rc;
    int mine = pn == 12 && memcmp(pos, okey + 1, 12) == 0;
    rocksdb_free(pos);
    if (mine)
        apply_batch_del(b, OBJLOG_CF_OUTCOMES, t->rkey.data, t->rkey.len);
    return 0;
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
        if (rc >= 0)
            rc = trim_victim_apply(b, p, &vict[i], errstr, es);
        keybuf_free(&vict[i].rkey);
    }
    if (rc < 0)
        return -1;
    /* The event's own outcome is never due, so a row is always kept; when
     * the cap stopped the scan, new_low is the first row not yet trimmed. */
    if (n > 0 && new_low == vict[n - 1].offset) {
        new_low = off;
        new_ts = now;
    }
    olow_put(b, p, new_low, new_ts);
    return 0;
}
