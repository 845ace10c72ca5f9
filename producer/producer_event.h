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

/* ev: bucket, key and op set by the caller (borrowed during the call);
 * the library fills request id, range epoch and producer timestamp. 0
 * (cb will run once), or -1 with errstr (bad bucket or key; no cb). */
int producer_write_event(objlog_producer *p, Objlog__Event *ev, int64_t msg_ts_ms,
                         const objlog_write_opts *opts, objlog_write_cb *cb,
                         void *opaque, char *errstr, size_t errstr_size);

#endif
