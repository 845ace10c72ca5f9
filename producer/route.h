/* route.h: how a producer routes its writes (route.c): the range map it
 * stamps and routes by, swapped when a handoff publishes a new one, and
 * the range a handoff holds, whose writes wait in the producer (parked)
 * instead of reaching a partition that would answer WrongRange.
 *
 * Invariant: a write is routed and handed to librdkafka under the read
 * side of one lock, and the hold is set under its write side; so once
 * proute_hold returned, every write routed before it is in librdkafka's
 * queue (the caller flushes it) and every later one into the range is
 * parked. Maps replaced stay allocated until the producer goes: a writer
 * may still be reading one. Internal to libobjlog_producer. */
#ifndef OBJLOG_PRODUCER_ROUTE_H
#define OBJLOG_PRODUCER_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "rangemap.h"
#include "writeop.h"

typedef struct proute proute;

/* Takes rm. NULL when out of memory (rm destroyed). */
proute *proute_new(rangemap *rm);
void proute_destroy(proute *r);

/* Begins one write's routing: the map to stamp and route by, valid until
 * proute_end (the read lock is held in between). */
const rangemap *proute_begin(proute *r);
void proute_end(proute *r);
/* Between begin and end: 1 if route key rk lies in the held range. */
int proute_is_held(proute *r, const uint8_t *rk, size_t n);
/* Between begin and end: keeps op (its bytes saved) until the hold ends. */
void proute_park(proute *r, write_op *op);

/* Holds [start, end) (end_n 0: to the end). -1 when a hold is already
 * set or out of memory. */
int proute_hold(proute *r, const uint8_t *start, size_t start_n, const uint8_t *end,
                size_t end_n);
/* Ends the hold; rm (taken, may be NULL: the map stays) becomes the map.
 * Returns the parked ops, linked by op->next, for the caller to send. */
write_op *proute_release(proute *r, rangemap *rm);
/* proute_release, then sends the parked ops: each stamped with the
 * epoch of the map now in force and routed by it (one that cannot be is
 * completed FAILED). */
void proute_release_send(proute *r, rangemap *rm);
/* A write a partition answered WrongRange: 1 when the current map is
 * newer than the one it was stamped with (op now stamped with it and its
 * send_partition set: produce it), 0 when it is not (refresh the map
 * first), -1 on a corrupt payload or out of memory. */
int proute_reroute(proute *r, write_op *op);
/* rm (taken) becomes the map if it is newer than the current one. */
void proute_set_map(proute *r, rangemap *rm);
/* Writes parked so far. */
uint64_t proute_parked_total(proute *r);
/* The current map's epoch. */
uint32_t proute_epoch(proute *r);

#endif
