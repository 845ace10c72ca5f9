/* assign.h: which partitions the materializer applies (assign.c), for
 * materializer.c: the consumer group's rebalances, the standby placement
 * and the holds, all taken on the materializer thread. Not public. */
#ifndef OBJLOG_ASSIGN_H
#define OBJLOG_ASSIGN_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "materializer.h"

/* Incremental (cooperative) rebalance of the group consumer rk, inside its
 * polls or while it closes. */
void assign_rebalance(objlog_materializer *m, rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts);
/* The same as librdkafka's rebalance callback (opaque: m). */
void assign_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque);
/* Between batches: the standby placement's latest wish, and the holds and
 * releases asked since the last batch. */
void assign_standby_sync(objlog_materializer *m);
void assign_holds_sync(objlog_materializer *m);
/* p's position from its store (applied offset, and the log times of its
 * newest applied event): at start and when a hold ends. Returns the
 * applied offset. */
int64_t assign_position_load(objlog_materializer *m, int32_t p);

#endif
