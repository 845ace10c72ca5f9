/* matkafka.h: the materializer's Kafka clients (matkafka.c). Not
 * public. */
#ifndef OBJLOG_MATKAFKA_H
#define OBJLOG_MATKAFKA_H

#include <librdkafka/rdkafka.h>

#include "matint.h"

/* A consumer of conf's topic for m: assigned and committing nothing by
 * itself, auto.offset.reset=error; in cluster mode a cooperative group
 * member (assign.c takes its rebalances). NULL with errstr. */
rd_kafka_t *mat_consumer_new(objlog_materializer *m, const objlog_materializer_conf *conf,
                             char *errstr, size_t es);
/* The DLQ producer: idempotent, acks=all, no linger. NULL with errstr. */
rd_kafka_t *mat_dlq_new(objlog_materializer *m, const objlog_materializer_conf *conf,
                        char *errstr, size_t es);
/* Sends msg to m's DLQ with why and its partition and offset in headers,
 * and waits for the ack, retrying while m runs. Any thread (one send at
 * a time). 0 acked, -1 stopping before it was acked. */
int mat_dlq_send(objlog_materializer *m, const rd_kafka_message_t *msg, const char *why);

#endif
