/* apply.h: internal interface of the state machine (apply.c). Not public:
 * the query service reads the layout documented in materializer.h
 * instead; the row layouts apply shares with the store are in rows.h. */
#ifndef OBJLOG_APPLY_H
#define OBJLOG_APPLY_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "keycodec.h"
#include "materializer.h"
#include "objlog.pb-c.h"
#include "rangemap.h"

/* ---- the state machine ---- */

/* One batch in progress: reads see the store plus every earlier write of
 * the batch (WriteBatchWithIndex). The caller owns store and rm; the batch
 * owns wb until apply_batch_destroy. */
typedef struct apply_batch apply_batch;

apply_batch *apply_batch_new(objlog_store *store, const rangemap *rm);
void apply_batch_destroy(apply_batch *b);
/* The underlying batch (to write it with rocksdb_write_writebatch_wi). */
rocksdb_writebatch_wi_t *apply_batch_wb(apply_batch *b);
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

/* Decodes a message payload. NULL (and why) if it is not an applicable
 * Event: not protobuf, no operation set, or no bucket. */
Objlog__Event *apply_decode(const void *payload, size_t n, char *why,
                            size_t why_size);

/* Decides and stages the outcome of ev at (partition, offset); log_time_ms
 * is the Kafka message timestamp. *code (optional) gets the outcome code.
 * 0, or -1 on a storage error (errstr): the batch must then be abandoned. */
int apply_event(apply_batch *b, int32_t partition, int64_t offset,
                int64_t log_time_ms, const Objlog__Event *ev,
                Objlog__OutcomeCode *code, char *errstr, size_t errstr_size);

/* Stages the InvalidEvent outcome of an undecodable message and counts it
 * in meta "dlq" of partition. */
int apply_invalid(apply_batch *b, int32_t partition, int64_t offset,
                  int64_t log_time_ms, const char *why, char *errstr,
                  size_t errstr_size);

/* Stages meta "applied" of partition = next_offset. */
void apply_set_applied(apply_batch *b, int32_t partition, int64_t next_offset);

/* ---- for the state machine's own modules (indexes.c) ----
 * Reads and writes through the batch, as apply.c's own ops make them. */
int apply_batch_get(apply_batch *b, objlog_cf cf, const void *k, size_t kn,
                    char **v, size_t *vn, char *errstr, size_t es);
void apply_batch_put(apply_batch *b, objlog_cf cf, const void *k, size_t kn,
                     const void *v, size_t vn);
void apply_batch_del(apply_batch *b, objlog_cf cf, const void *k, size_t kn);
rocksdb_iterator_t *apply_batch_iter(apply_batch *b, objlog_cf cf);
/* The batch's table of `indexes` 'c' rows (indexes.h, indexes_stage). */
struct statrows *apply_batch_index_counts(apply_batch *b);

#endif
