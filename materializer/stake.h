/* stake.h: a partition's part of a bucket that spans ranges (stake.c):
 * where its record and usage live, and how a handoff moves them. Internal
 * to the state machine (apply.c, handoff.c). */
#ifndef OBJLOG_STAKE_H
#define OBJLOG_STAKE_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "objlog.pb-c.h"
#include "rangemap.h"
#include "stage.h"

/* *out = the `buckets` row key of partition p's stake in the bucket of
 * bucket part bpart: bpart itself when p is the bucket's home under p's
 * own map (it holds route_key(b, "")), else bpart be32(p). 0 or -1. */
int stake_key(apply_batch *b, int32_t p, const uint8_t *bpart, size_t bn, keybuf *out,
              char *errstr, size_t es);

/* 1 if, under partition p's own map, some of the bucket's keys lie in a
 * range of another partition; 0 if p holds all of them; -1 error. */
int stake_spread(apply_batch *b, int32_t p, const uint8_t *bpart, size_t bn, char *errstr,
                 size_t es);

/* The quota a partition's stake enforces: the bucket's, or the share of
 * it the stake holds (escrow); UINT64_MAX: no limit. */
typedef struct stake_quota {
    uint64_t max_bytes, max_objects;
    int share;
} stake_quota;
void stake_quota_of(const Objlog__BucketRecord *r, stake_quota *q);

/* Checked before a PUT or CompleteUpload of size bytes stages anything:
 * the stake's live usage after the write (it replaces the key's current
 * version, a->obj_*_before) must stay within q. A write that does not
 * grow a dimension is never refused for it, so a bucket over a lowered
 * quota can still be overwritten or shrunk. 1 allowed, 0 QuotaExceeded
 * (a->res), -1 error. */
int stake_quota_allows(apply_ev *a, const stake_quota *q, uint64_t size);

/* A bucket event that needs every key of its bucket on this partition
 * (DeleteBucket, PutIndex): while the bucket spans other partitions
 * under this one's map it is refused (BucketSpansRanges). 1 go on, 0
 * refused (a->res), -1 error. */
int stake_bucket_gate(apply_ev *a);

/* SetQuota nq on the home record r of a bucket that spans partitions:
 * the other stakes keep their shares, so the home's share (r->allowance)
 * takes the change: a raise or a removal always, a cut only as far as
 * the home's share goes (its usage may stay above it, as over a lowered
 * quota), a first limit never (BucketSpansRanges).
 * 1 go on (r's share set), 0 refused (a->res), -1 error. */
int stake_quota_change(apply_ev *a, Objlog__BucketRecord *r, const Objlog__Quota *nq);

/* BucketRelay at a partition holding a range of the bucket: its copy of
 * the settings becomes the relayed record's if that is newer
 * (settings_seq), keeping its quota share. 0 (a->res), -1 error. */
int stake_relay(apply_ev *a);

/* RangeOut of [s, e) from a->partition (map cur, next nm) to `to`: every
 * bucket the range holds part or all of leaves the partition's stake
 * for the target's; what the target takes goes to marker->stakes (owned
 * by the caller: stake_marker_free). 1 done, 0 refused (a->res), -1
 * error. */
int stake_range_out(apply_ev *a, const uint8_t *s, size_t sn, const uint8_t *e, size_t en,
                    const rangemap *cur, const rangemap *nm, Objlog__RangeOut *marker);
void stake_marker_free(Objlog__RangeOut *marker);

/* RangeIn at a->partition (map cur, next nm): takes the stakes of the
 * RangeOut's marker (its records are borrowed, left as they were). 0 or
 * -1. */
int stake_range_in(apply_ev *a, Objlog__RangeOut *marker, const rangemap *cur,
                   const rangemap *nm);

#endif
