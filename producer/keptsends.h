/* keptsends.h: the bytes of a producer's recent ack=logged writes, kept
 * by (partition, offset) so that objlogd's gateway, which waits for their
 * outcomes itself, can send one again when its partition answered
 * WrongRange (its range moved after it was routed): keptsends.c. Off
 * unless producer_keep_logged turned it on. Internal to
 * libobjlog_producer.
 *
 * Invariant: at most n writes are kept, the oldest going first; a kept
 * write's bytes are exactly what was logged (request id, timestamp). */
#ifndef OBJLOG_PRODUCER_KEPTSENDS_H
#define OBJLOG_PRODUCER_KEPTSENDS_H

#include <stddef.h>
#include <stdint.h>

#include "writeop.h"

typedef struct keptsends keptsends;

keptsends *keptsends_new(size_t n);
void keptsends_free(keptsends *k);
/* Takes the saved bytes of op, logged at (op->res.partition,
 * op->res.offset): op's payload and route key move here. */
void keptsends_put(keptsends *k, write_op *op);
/* Copies the bytes kept for (partition, offset) into op (payload, route
 * key, Kafka timestamp). 0, or -1: not kept (any more), or out of memory. */
int keptsends_get(keptsends *k, int32_t partition, int64_t offset, write_op *op);

#endif
