/* nkafka.h: one partition's change feed to Kafka, exactly once (nkafka.c):
 * a transactional producer per events partition whose transaction holds
 * the records and the partition's feed position (the next events offset
 * not delivered), committed as the offset of group "objlog.notify.TOPIC".
 * Not public outside query/notify. */
#ifndef OBJLOG_NKAFKA_H
#define OBJLOG_NKAFKA_H

#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

/* One events partition's delivery state. */
typedef struct nk_part {
    int32_t p;
    rd_kafka_t *tx;        /* transactional producer; NULL: none yet */
    int64_t pos;           /* committed position; -1 unknown (no producer) */
    char error[256];       /* the last failure, "" none */
} nk_part;

/* What a partition's producer and position need. */
typedef struct nk_env {
    const char *brokers;
    const char *topic;     /* the events topic */
    char group[300];       /* "objlog.notify." topic */
    rd_kafka_t *admin;     /* a consumer of group: committed offsets, topics */
    int timeout_ms;
    /* 1 on librdkafka's mock cluster (the embedded log), which keeps no
     * transactional offsets and writes no transaction markers: there the
     * position is also committed plainly after each transaction, and the
     * feed is at least once. -1 not known yet. */
    int mock;
    pthread_mutex_t mu;    /* mock, which any partition's thread may settle */
} nk_env;

/* The environment's client (admin). 0 or -1 with errstr. */
int nk_env_open(nk_env *e, const char *brokers, const char *topic, char *errstr, size_t es);
void nk_env_close(nk_env *e);

/* Starts the partition's producer (init_transactions fences whatever
 * producer of the same partition ran before, anywhere) and reads the
 * position it committed. 0, or -1 with pt->error. */
int nk_open(nk_env *e, nk_part *pt);
void nk_close(nk_part *pt);

/* One record to send: topic, key, value (borrowed). */
typedef struct nk_msg {
    const char *topic;
    const char *key;
    size_t kn;
    const char *value;
    size_t vn;
} nk_msg;

/* One transaction: the n messages and the position `next`. 0 committed
 * (pt->pos = next), -1 not (pt->error; the producer is closed when it is
 * fenced or in a fatal state, so the next try starts over from the
 * committed position). */
int nk_deliver(nk_env *e, nk_part *pt, const nk_msg *m, size_t n, int64_t next);

/* Creates the target topic when missing (as the events topic). 0, -1. */
int nk_topic_ready(nk_env *e, const char *name, char *errstr, size_t es);

#endif
