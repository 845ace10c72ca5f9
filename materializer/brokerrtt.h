/* brokerrtt.h: the brokers' round-trip times from librdkafka's statistics
 * (brokerrtt.c; objlog_materializer_broker_rtts reads them). Not public. */
#ifndef OBJLOG_BROKERRTT_H
#define OBJLOG_BROKERRTT_H

#include <stddef.h>

#include <librdkafka/rdkafka.h>

/* librdkafka's statistics callback of the consumer (opaque: the
 * materializer), on the materializer thread from consumer_poll. */
int brokerrtt_stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque);

#endif
