/* handoff.c: the state machine's side of a range handoff
 * (docs/ARCHITECTURE.md, "Ranges move").
 *
 * A partition's ranges are a function of its own log: the map the last
 * RangeOut or RangeIn in it carried (meta "rmap" be32(p)), or the genesis
 * map before any. So rule 2 (WrongRange) is decided from log data, and a
 * replay decides it again exactly.
 *
 * RangeOut [start, end) to Q, at (P, X): P's map becomes the event's; from
 * X on, P answers WrongRange for the range's keys, so its rows there are
 * final. The range's part of each bucket leaves P's stake (stake.h: its
 * record, its usage, P's tenant and global rows) for the marker; the
 * records of the range's requests are copied aside ('x' rows, dedup.h);
 * an 'x' be32(P) be64(X) marker row holds the RangeOut, with the stakes,
 * until the RangeIn takes it.
 *
 * RangeIn from (P, X), at (Q, Y): applied only once this store holds P's
 * state as of X (P applied X here, or the range was imported from a node
 * that did: rangewait.h; the materializer holds Q until then). The range's route-keyed rows (versions, objects,
 * uploads) are already in this store, under their route keys: they stay
 * where they are and are Q's from Y. Q takes the request records and the
 * marker's stakes, and the marker goes.
 *
 * Invariant: a key is held by exactly one partition at every point of the
 * log order that matters: P stops at X before Q starts at Y, and Y comes
 * after X has been applied. A range ends between buckets or at a key
 * (handoff_bound_ok), so all rows of a key sit on one partition. */
#include "handoff.h"

#include "checkpoint.h"
#include "dedup.h"
#include "keycodec.h"
#include "rows.h"
#include "stake.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void refuse(apply_ev *a, const char *fmt, ...) {
    va_list ap;
    a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT;
    va_start(ap, fmt);
    vsnprintf(a->res.message, sizeof(a->res.message), fmt, ap);
    va_end(ap);
}

int handoff_owns(apply_batch *b, int32_t p, const uint8_t *rk, size_t n, uint32_t *epoch,
                 char *errstr, size_t es) {
    const rangemap *rm = apply_batch_partition_map(b, p, errstr, es);
    if (!rm)
        return -1;
    *epoch = rangemap_epoch(rm);
    return rangemap_owns(rm, p, rk, n);
}

int handoff_bound_ok(const uint8_t *k, size_t n) {
    if (n <= 2)
        return 1;
    keybuf name, key;
    size_t used = 0;
    keybuf_init(&name);
    keybuf_init(&key);
    int ok = keycodec_decode_enc(k + 2, n - 2, &name, &used) < 0 || 2 + used == n ||
             (keycodec_parse_route_key(k, n, &name, &key, &used) == 0 && used == n);
    keybuf_free(&name);
    keybuf_free(&key);
    return ok;
}

/* ---- the range against a map ---- */

static int bytes_cmp(const uint8_t *x, size_t xn, const uint8_t *y, size_t yn) {
    size_t m = xn < yn ? xn : yn;
    int c = m ? memcmp(x, y, m) : 0;
    return c ? c : (xn < yn ? -1 : xn > yn);
}

/* The event's map as a rangemap (validated by its decoder), or NULL with
 * the reason in a->res (refused) or errstr (out of memory: *oom). */
static rangemap *event_map(apply_ev *a, const Objlog__RangeMap *m, int *oom) {
    *oom = 0;
    if (!m) {
        refuse(a, "handoff without its range map");
        return NULL;
    }
    size_t n = objlog__range_map__get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        *oom = 1;
        snprintf(a->errstr, a->es, "out of memory");
        return NULL;
    }
    objlog__range_map__pack(m, buf);
    char why[160];
    rangemap *rm = rangemap_decode(buf, n, why, sizeof(why));
    free(buf);
    if (!rm)
        refuse(a, "handoff's range map: %s", why);
    return rm;
}

/* The checks both events share: a non-empty range whose ends fall
 * between buckets or at a key, a map one epoch or more past the
 * partition's. */
static int range_checks(apply_ev *a, const uint8_t *s, size_t sn, const uint8_t *e,
                        size_t en, const rangemap *cur, const rangemap *nm) {
    if (en && bytes_cmp(s, sn, e, en) >= 0) {
        refuse(a, "handoff of an empty range");
        return 0;
    }
    if (!handoff_bound_ok(s, sn) || (en && !handoff_bound_ok(e, en))) {
        refuse(a, "a handoff's range must start and end between buckets or at a key");
        return 0;
    }
    if (rangemap_epoch(nm) <= rangemap_epoch(cur)) {
        refuse(a, "handoff to map epoch %u, but partition %d is at epoch %u",
               rangemap_epoch(nm), a->partition, rangemap_epoch(cur));
        return 0;
    }
    return 1;
}

/* 'x' be32(p) be64(off): the RangeOut at (p, off) awaiting its RangeIn. */
static void marker_key(uint8_t out[APPLY_OUTCOME_KEY_LEN], int32_t p, int64_t off) {
    out[0] = 'x';
    apply_put_be32(out + 1, (uint32_t)p);
    apply_put_be64(out + 5, (uint64_t)off);
}

/* ---- the events ---- */

/* What both events begin with: the event's map (*nm, the caller's to
 * destroy), the partition's own (*cur) and the checks they share. 1 go
 * on, 0 refused (a->res says why; *nm NULL), -1 error. */
static int handoff_begin(apply_ev *a, const Objlog__RangeMap *m, ProtobufCBinaryData start,
                         ProtobufCBinaryData end, rangemap **nm, const rangemap **cur) {
    int oom;
    *nm = event_map(a, m, &oom);
    if (!*nm)
        return oom ? -1 : 0;
    *cur = apply_batch_partition_map(a->b, a->partition, a->errstr, a->es);
    int rc = !*cur ? -1 : range_checks(a, start.data, start.len, end.data, end.len, *cur, *nm);
    if (rc <= 0) {
        rangemap_destroy(*nm);
        *nm = NULL;
    }
    return rc;
}

int handoff_range_out(apply_ev *a) {
    const Objlog__RangeOut *ro = a->ev->range_out;
    rangemap *nm;
    const rangemap *cur;
    int go = handoff_begin(a, ro->map, ro->start, ro->end, &nm, &cur);
    if (go <= 0)
        return go;
    const uint8_t *s = ro->start.data, *e = ro->end.data;
    size_t sn = ro->start.len, en = ro->end.len;
    int mine_all, mine_none, to_all, to_none;
    rangemap_covers(cur, s, sn, e, en, a->partition, &mine_all, &mine_none);
    rangemap_covers(nm, s, sn, e, en, ro->to_partition, &to_all, &to_none);
    if (!mine_all || ro->to_partition == a->partition || !to_all) {
        refuse(a, "RangeOut: partition %d does not hold the whole range, or the new map "
                  "does not give it to partition %d",
               a->partition, ro->to_partition);
        rangemap_destroy(nm);
        return 0;
    }
    /* The marker: the event, with the stakes the target takes. */
    Objlog__RangeOut marker = *ro;
    marker.stakes = NULL;
    marker.n_stakes = 0;
    uint32_t exported;
    go = stake_range_out(a, s, sn, e, en, cur, nm, &marker);
    uint8_t mk[APPLY_OUTCOME_KEY_LEN];
    marker_key(mk, a->partition, a->offset);
    if (go <= 0 ||
        dedup_export_range(a->b, a->partition, a->offset, s, sn, e, en, &exported, a->errstr,
                           a->es) < 0 ||
        apply_batch_put_msg(a->b, OBJLOG_CF_OUTCOMES, mk, sizeof(mk), &marker.base, a->errstr,
                            a->es) < 0) {
        stake_marker_free(&marker);
        rangemap_destroy(nm);
        return go == 0 ? 0 : -1;
    }
    stake_marker_free(&marker);
    a->res.imported = exported;
    return apply_batch_set_partition_map(a->b, a->partition, nm, a->errstr, a->es);
}

/* The RangeOut the RangeIn names, as its marker row holds it (*out, the
 * caller's to free): 1 it is there and moves the same range under the
 * same map epoch, 0 not (refused), -1 error. */
static int source_matches(apply_ev *a, const Objlog__RangeIn *ri, const rangemap *nm,
                          Objlog__RangeOut **out) {
    uint8_t mk[APPLY_OUTCOME_KEY_LEN];
    marker_key(mk, ri->from_partition, ri->from_offset);
    char *v;
    size_t vn;
    int rc = apply_batch_get(a->b, OBJLOG_CF_OUTCOMES, mk, sizeof(mk), &v, &vn, a->errstr,
                             a->es);
    if (rc <= 0) {
        if (rc == 0)
            refuse(a, "RangeIn: no RangeOut awaits at partition %d offset %lld",
                   ri->from_partition, (long long)ri->from_offset);
        return rc;
    }
    Objlog__RangeOut *ro = objlog__range_out__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!ro) {
        snprintf(a->errstr, a->es, "handoff marker %d.%lld: corrupt", ri->from_partition,
                 (long long)ri->from_offset);
        return -1;
    }
    int same = ro->to_partition == a->partition && ro->map &&
               ro->map->epoch == rangemap_epoch(nm) &&
               !bytes_cmp(ro->start.data, ro->start.len, ri->start.data, ri->start.len) &&
               !bytes_cmp(ro->end.data, ro->end.len, ri->end.data, ri->end.len);
    if (same)
        *out = ro;
    else
        objlog__range_out__free_unpacked(ro, NULL);
    if (!same)
        refuse(a, "RangeIn: the RangeOut at partition %d offset %lld moves another range",
               ri->from_partition, (long long)ri->from_offset);
    return same;
}

int handoff_range_in(apply_ev *a) {
    const Objlog__RangeIn *ri = a->ev->range_in;
    rangemap *nm;
    const rangemap *cur;
    int go = handoff_begin(a, ri->map, ri->start, ri->end, &nm, &cur);
    if (go <= 0)
        return go;
    const uint8_t *s = ri->start.data, *e = ri->end.data;
    size_t sn = ri->start.len, en = ri->end.len;
    int had_all, had_none, new_all, new_none;
    rangemap_covers(cur, s, sn, e, en, a->partition, &had_all, &had_none);
    rangemap_covers(nm, s, sn, e, en, a->partition, &new_all, &new_none);
    if (!had_none || !new_all || ri->from_partition == a->partition) {
        refuse(a, "RangeIn: partition %d already holds part of the range, or the new map "
                  "does not give it the whole range",
               a->partition);
        rangemap_destroy(nm);
        return 0;
    }
    Objlog__RangeOut *ro = NULL;
    int rc = source_matches(a, ri, nm, &ro);
    if (rc <= 0) {
        rangemap_destroy(nm);
        return rc;
    }
    uint32_t imported;
    uint8_t mk[APPLY_OUTCOME_KEY_LEN];
    marker_key(mk, ri->from_partition, ri->from_offset);
    rc = dedup_import_range(a->b, a->partition, a->offset, ri->from_partition,
                            ri->from_offset, &imported, a->errstr, a->es) < 0 ||
                 stake_range_in(a, ro, cur, nm) < 0
             ? -1 : 0;
    objlog__range_out__free_unpacked(ro, NULL);
    if (rc < 0) {
        rangemap_destroy(nm);
        return -1;
    }
    apply_batch_del(a->b, OBJLOG_CF_OUTCOMES, mk, sizeof(mk));
    uint8_t rk[32];
    size_t rn = objlog_ckpt_rimported_key(rk, ri->from_partition, ri->from_offset);
    apply_batch_del(a->b, OBJLOG_CF_META, rk, rn);
    a->res.imported = imported;
    return apply_batch_set_partition_map(a->b, a->partition, nm, a->errstr, a->es);
}
