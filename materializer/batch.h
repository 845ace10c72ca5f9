/* batch.h: one batch of the state machine in progress (batch.c): the
 * staging apply.c, its row modules and indexes.c read and write through.
 * Not public. */
#ifndef OBJLOG_BATCH_H
#define OBJLOG_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "keycodec.h"
#include "materializer.h"
#include "objlog.pb-c.h"
#include "rangemap.h"
#include "rowcache.h"
#include "statrows.h"

/* One batch in progress: reads see the store plus every earlier write of
 * the batch. The caller owns store and rm; the batch owns its WriteBatch
 * until apply_batch_destroy. */
typedef struct apply_batch apply_batch;

apply_batch *apply_batch_new(objlog_store *store, const rangemap *rm);
void apply_batch_destroy(apply_batch *b);
/* Deletes staged in `objects` and `versions` since the last clear, and the
 * smallest and largest key deleted (valid until the next clear). */
uint64_t apply_batch_deletes(const apply_batch *b, const keybuf **lo,
                             const keybuf **hi);
/* Test only: the dedup window (log time, ms) and bound (request ids, i.e.
 * outcome offsets, per partition) instead of OBJLOG_DEDUP_WINDOW_MS and
 * OBJLOG_DEDUP_MAX_IDS. Production never calls it: the state machine's
 * rules (docs/ARCHITECTURE.md, "The state machine's rules") forbid local
 * configuration in apply, every replica and replay must use the defaults. */
void apply_batch_set_dedup_limits(apply_batch *b, int64_t window_ms,
                                  int64_t max_ids);
/* Bench only: on 0, the batch keeps no usage counters (no `stats` rows,
 * no bucket quota checks), so `objlog bench --stats` can measure what the
 * stats view costs. A store applied this way is not a replica of the log
 * (its counters are absent and quota outcomes may differ): the
 * materializer marks it (meta APPLY_META_NO_STATS) and never serves or
 * applies it with stats again. Default 1. */
void apply_batch_set_stats(apply_batch *b, int on);
/* Empties the batch for reuse after it was written (or abandoned). */
void apply_batch_clear(apply_batch *b);
/* Tells the batch the store now holds what it staged (call after the
 * write succeeded, before apply_batch_clear): what it keeps in memory of
 * the rows (its request-id indexes) stays. Without it a clear drops
 * whatever the batch changed, to be reloaded from the store. */
void apply_batch_written(apply_batch *b);

/* ---- reads and writes through the batch ---- */

/* Value of key in cf as the batch sees it: 1 found (*v owned by the
 * caller, rocksdb_free), 0 absent, -1 error (errstr). */
int apply_batch_get(apply_batch *b, objlog_cf cf, const void *k, size_t kn,
                    char **v, size_t *vn, char *errstr, size_t es);
void apply_batch_put(apply_batch *b, objlog_cf cf, const void *k, size_t kn,
                     const void *v, size_t vn);
void apply_batch_del(apply_batch *b, objlog_cf cf, const void *k, size_t kn);
/* Puts m, packed. 0, or -1 (errstr: out of memory). */
int apply_batch_put_msg(apply_batch *b, objlog_cf cf, const void *k, size_t kn,
                        const ProtobufCMessage *m, char *errstr, size_t es);
/* m packed into a malloc'd buffer (*n bytes), or NULL (errstr). */
uint8_t *apply_batch_pack(const ProtobufCMessage *m, size_t *n, char *errstr, size_t es);
/* Iterator over cf that sees the batch's own writes on top of the store. */
rocksdb_iterator_t *apply_batch_iter(apply_batch *b, objlog_cf cf);

/* ---- the request-id index of each partition (ridindex.h) ---- */

struct ridindex;
/* p's index as the batch sees the store, or NULL: not loaded, or dropped
 * (the batch was cleared unwritten, or a checkpoint changed the rows). */
struct ridindex *apply_batch_rids(apply_batch *b, int32_t p);
/* Installs x (taken) as p's index, loaded through the batch. 0, or -1
 * out of memory (x freed). */
int apply_batch_rids_set(apply_batch *b, int32_t p, struct ridindex *x);
/* Notes that p's index took a change staged in this batch. */
void apply_batch_rids_touch(apply_batch *b, int32_t p);

/* ---- the ranges each partition holds (handoff.h) ---- */

/* The map that decides which keys partition p holds, as the batch sees
 * p's log: the map its last RangeOut or RangeIn carried (meta "rmap"
 * be32(p)), else the genesis map the batch was made with. Cached across
 * batches (dropped as the request-id index is). NULL on a storage error
 * or a corrupt row (errstr). */
const rangemap *apply_batch_partition_map(apply_batch *b, int32_t p, char *errstr,
                                          size_t es);
/* Stages p's new map (taken; encoded into its meta row). 0, or -1 out of
 * memory (rm destroyed). */
int apply_batch_set_partition_map(apply_batch *b, int32_t p, rangemap *rm, char *errstr,
                                  size_t es);

/* ---- what the state machine's modules read of the batch ---- */

/* The WriteBatch as staged so far (apply_batch_wb, apply.h, stages the
 * counter rows first: call that one to write the batch). */
rocksdb_writebatch_t *apply_batch_staged(apply_batch *b);
/* What the batch asked of RocksDB since it was cleared: point reads that
 * reached the store (a row the batch wrote, or the hot-row cache holds,
 * is answered without one), puts and deletes staged, iterators made. */
typedef struct apply_batch_ops {
    uint64_t reads, puts, deletes, iterators;
} apply_batch_ops;
void apply_batch_ops_get(const apply_batch *b, apply_batch_ops *ops);
/* The genesis map: every partition's ranges before its first handoff. */
const rangemap *apply_batch_rangemap(const apply_batch *b);
int64_t apply_batch_window_ms(const apply_batch *b);
int64_t apply_batch_max_ids(const apply_batch *b);
/* 0 only in benches (apply_batch_set_stats). */
int apply_batch_stats_on(const apply_batch *b);
/* The `stats` rows this batch changed (stage.c's counters). */
statrows *apply_batch_stats_rows(apply_batch *b);
/* The batch's table of `indexes` 'c' rows (indexes.h, indexes_stage). */
statrows *apply_batch_index_counts(apply_batch *b);

#endif
