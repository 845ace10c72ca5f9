/* producer_event.h: an in-tree door into libobjlog_producer for objlogd's
 * own writers (not installed, not exported by the shared library): a
 * prepared Event, with the Kafka message timestamp chosen by the caller.
 *
 * Used for the events that have no public call (SetLifecycle from the
 * gateway, Expire from the lifecycle worker, query/workers/lifecycle.c). The
 * timestamp matters because the state machine reads it as the event's log
 * time: the lifecycle worker stamps its Expire events with its own clock
 * (which tests shift by days), 0 means librdkafka's "now". Everything else
 * (request id, routing, delivery, callbacks) is the library's usual path.
 */
#ifndef OBJLOG_PRODUCER_EVENT_H
#define OBJLOG_PRODUCER_EVENT_H

#include <stdint.h>

#include "objlog.pb-c.h"
#include "objlog_producer.h"
#include "rangemap.h"

/* ev: bucket, key and op set by the caller (borrowed during the call);
 * the library fills request id, range epoch and producer timestamp. 0
 * (cb will run once), or -1 with errstr (bad bucket or key; no cb). */
int producer_write_event(objlog_producer *p, Objlog__Event *ev, int64_t msg_ts_ms,
                         const objlog_write_opts *opts, objlog_write_cb *cb,
                         void *opaque, char *errstr, size_t errstr_size);

/* A handoff's RangeOut or RangeIn (op set by the caller), to partition
 * with Kafka key kafka_key: no bucket, no routing, no hold, no
 * admission. The request id comes from opts as usual. 0 or -1. */
int producer_write_to_partition(objlog_producer *p, Objlog__Event *ev, int32_t partition,
                                const uint8_t *kafka_key, size_t key_n,
                                const objlog_write_opts *opts, objlog_write_cb *cb,
                                void *opaque, char *errstr, size_t errstr_size);

/* A range handoff run by objlogd (query/ranges): from here until
 * producer_release_range, writes whose route keys lie in [start, end)
 * (end_n 0: to the end) wait in the producer, and every write routed
 * before is flushed to the log (within timeout_ms) before this returns.
 * 0, or -1 with errstr (a hold already set; the flush timed out, and the
 * hold is released). */
int producer_hold_range(objlog_producer *p, const uint8_t *start, size_t start_n,
                        const uint8_t *end, size_t end_n, int timeout_ms, char *errstr,
                        size_t errstr_size);
/* Ends the hold: rm (taken; NULL keeps the map) becomes the map, and the
 * writes that waited go out, stamped with its epoch and routed by it. */
void producer_release_range(objlog_producer *p, rangemap *rm);
/* ack=logged only, before the first write: the bytes of the last n
 * logged writes are kept (keptsends.h), for producer_reroute_logged. 0,
 * or -1 (ack=applied, already on, out of memory). */
int producer_keep_logged(objlog_producer *p, size_t n);
/* The write logged at (partition, offset) with request id rid met
 * WrongRange: sent again, same request id and bytes, by the newest range
 * map (read from the control topic when the one in hand is not newer than
 * the write's; waits for it, bounded); cb reports where it landed as for
 * a new write. Blocks up to about 10 s: not on an event loop. 0, or -1
 * with errstr (its bytes no longer kept, no newer map). */
int producer_reroute_logged(objlog_producer *p, int32_t partition, int64_t offset,
                            const uint8_t rid[OBJLOG_REQUEST_ID_LEN], objlog_write_cb *cb,
                            void *opaque, char *errstr, size_t errstr_size);
/* rm (taken) becomes the map the producer routes by if it is newer. */
void producer_set_rangemap(objlog_producer *p, rangemap *rm);
/* A copy of the map the producer routes by (the caller destroys it), or
 * NULL out of memory. */
rangemap *producer_map_copy(objlog_producer *p);
/* Writes that waited out a handoff's hold so far. */
uint64_t producer_held_writes(objlog_producer *p);
/* The epoch of the map the producer routes by. */
uint32_t producer_map_epoch(objlog_producer *p);

#endif
