/* topics.h: objlog's three Kafka topics as an operator needs them
 * (docs/ARCHITECTURE.md, "How a write flows", "The state machine's rules"
 * and "Processes"): which configs each is created with, and which settings
 * of an existing topic would lose data or break the state machine.
 *
 *   objlog.events  partitions = --partitions, replication min(3, brokers)
 *     cleanup.policy=delete, retention.ms=-1, retention.bytes=-1
 *                            views are rebuilt by replay: the whole log is
 *                            kept (compaction would drop versions)
 *     message.timestamp.type=LogAppendTime
 *                            the dedup window and lag in seconds are log
 *                            time; the broker's clock, not a producer's,
 *                            so a skewed client cannot move the window
 *     min.insync.replicas=min(2, replication), unclean.leader.election=false
 *                            an acked write survives the loss of one broker
 *   objlog.control 1 partition, cleanup.policy=compact (newest range map
 *                            and log id win), same replication settings
 *   objlog.dlq     1 partition, retention.ms=-1 (the evidence is kept)
 *
 * Invariant: objlog never changes the config of a topic that exists; it
 * reports what is unsafe and lets the operator decide (kafka-configs). */
#ifndef OBJLOG_TOPICS_H
#define OBJLOG_TOPICS_H

#include <stddef.h>
#include <stdio.h>

#include <librdkafka/rdkafka.h>

typedef struct objlog_topics {
    const char *events;      /* objlog.events */
    const char *control;     /* objlog.control */
    const char *dlq;         /* objlog.dlq */
    int partitions;          /* of events when it is created */
    int replication;         /* 0: min(3, brokers in the cluster) */
} objlog_topics;

/* Creates each missing topic with the configs above; a new control topic
 * also gets the default range map. One line per created topic goes to
 * report (may be NULL). Number of topics created (0 when all existed), or
 * -1 with errstr (unreachable cluster, a creation refused). */
int objlog_topics_create(const char *brokers, const objlog_topics *t,
                         int timeout_ms, FILE *report, char *errstr,
                         size_t errstr_size);

/* Checks the existing topics against the table above. Each problem is one
 * line appended to problems ("topic objlog.events: retention.ms=604800000
 * is finite: ..."). Returns the number of problems (0: safe), or -1 with
 * errstr (unreachable, a topic missing). */
int objlog_topics_check(const char *brokers, const objlog_topics *t,
                        int timeout_ms, char *problems, size_t problems_size,
                        char *errstr, size_t errstr_size);

/* Grows t->events to total partitions (Kafka's CreatePartitions). The
 * range map is published first if the control topic holds none, so the
 * genesis map stays the one of the old count; the new partitions hold no
 * range until a handoff moves one there, and every objlogd takes them at
 * its next start. *before gets the old count. 0, or -1 with errstr (total
 * not above the old count, an unreachable cluster, a refusal). */
int objlog_topics_add_partitions(const char *brokers, const objlog_topics *t, int total,
                                 int timeout_ms, int *before, char *errstr,
                                 size_t errstr_size);

/* A change-feed target topic (query/notify): creates name when missing,
 * with the partition count and replication factor of topic `like` (the
 * events topic), min.insync.replicas=min(2, replication), deletion by the
 * broker's retention. Through rk, any client of the cluster. 1 created, 0
 * it existed, -1 with errstr. */
int objlog_topics_create_like(rd_kafka_t *rk, const char *like, const char *name,
                              int timeout_ms, char *errstr, size_t errstr_size);

#endif
