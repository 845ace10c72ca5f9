/* apply.h: internal interface of the state machine (apply.c). Not public:
 * the query service reads the layout documented in materializer.h
 * instead; the row layouts apply shares with the store are in rows.h. */
#ifndef OBJLOG_APPLY_H
#define OBJLOG_APPLY_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "batch.h"
#include "materializer.h"
#include "objlog.pb-c.h"

/* ---- the state machine ---- */

/* The batch's WriteBatch with its counter rows staged (`stats`, index
 * counts): write it with objlog_store_write_view (or rocksdb_write). */
rocksdb_writebatch_t *apply_batch_wb(apply_batch *b);

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

#endif
