/* control.h: what the compacted topic objlog.control holds
 * (docs/ARCHITECTURE.md, "Keys and column families" and "Processes").
 *  - key "rangemap": the range map as data. The newest wins. When the topic
 *    holds none, callers fall back to the default map for the events
 *    topic's partition count (epoch 1), which is also what objlogd
 *    publishes first.
 *  - key "rangemap.genesis": the first map (epoch 1), written with it:
 *    every partition's ranges before its first handoff, which the state
 *    machine needs to replay a log whose map has moved on since. A log
 *    from before handoffs has none; its one map is the genesis.
 *  - key "logid": the log's identity, text "v1 <32 hex digits> <kind>",
 *    kind "kafka" or "embedded" (librdkafka's in-memory mock cluster).
 *    Drawn at random by whoever creates the topics, once; with the Kafka
 *    cluster id it tells a view which log it was built from (a recreated
 *    topic set gets a new one). kcat shows it as it is. */
#ifndef OBJLOG_CONTROL_H
#define OBJLOG_CONTROL_H

#include <librdkafka/rdkafka.h>

#include "rangemap.h"

#define CONTROL_RANGEMAP_KEY "rangemap"
#define CONTROL_GENESIS_KEY "rangemap.genesis"
#define CONTROL_DEFAULT_EPOCH 1
#define CONTROL_LOGID_KEY "logid"

typedef struct control_logid {
    char id[33];     /* 32 lowercase hex digits, NUL-terminated */
    int embedded;    /* the log is an embedded (mock, in-memory) cluster */
} control_logid;

/* A short-lived producer handle on brokers for metadata, admin calls and
 * control messages (quiet log, never auto-creates topics). NULL with
 * errstr. */
/* As control_client_new, logging through log_cb (librdkafka's default
 * when NULL), its errors prefixed "what: ". */
rd_kafka_t *control_client_new_logged(const char *brokers,
                                      void (*log_cb)(const rd_kafka_t *, int,
                                                     const char *, const char *),
                                      const char *what, char *errstr,
                                      size_t errstr_size);
rd_kafka_t *control_client_new(const char *brokers, char *errstr,
                               size_t errstr_size);

/* Number of partitions of topic, or -1 with errstr. */
int control_topic_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms,
                             char *errstr, size_t errstr_size);

/* Reads the newest range map from control_topic, or builds the default one
 * for events_topic's partition count when there is none. NULL with errstr. */
rangemap *control_load_rangemap(rd_kafka_t *rk, const char *control_topic,
                                const char *events_topic, int timeout_ms,
                                char *errstr, size_t errstr_size);

/* As control_load_rangemap, and *genesis (the caller destroys it) gets the
 * genesis map. */
rangemap *control_load_rangemaps(rd_kafka_t *rk, const char *control_topic,
                                 const char *events_topic, int timeout_ms,
                                 rangemap **genesis, char *errstr, size_t errstr_size);

/* Publishes rm to control_topic (synchronously: waits for the ack); an
 * epoch-1 map is published as the genesis too. rk is a handle of
 * control_client_new*, whose delivery reports carry the ack; as right
 * after the topic was made a client may take it for missing for a
 * moment, that error is retried within timeout_ms. */
int control_publish_rangemap(rd_kafka_t *rk, const char *control_topic,
                             const rangemap *rm, int timeout_ms, char *errstr,
                             size_t errstr_size);

/* A reader that follows partition 0 of control_topic from its start (a
 * handoff's map reaches every node that watches), or NULL with errstr.
 * It has no consumer group (librdkafka's per-partition consume API): it
 * commits nothing, and so never waits for a group coordinator, which
 * after broker faults may not answer for minutes. */
typedef struct control_watch control_watch;
/* log_cb as control_client_new_logged's. */
control_watch *control_watch_new(const char *brokers, const char *control_topic,
                                 void (*log_cb)(const rd_kafka_t *, int, const char *,
                                                const char *),
                                 char *errstr, size_t errstr_size);
void control_watch_free(control_watch *w);
/* The newest range map among the messages the watch has received since
 * the last poll (the caller destroys it), or NULL: none. Never blocks. */
rangemap *control_watch_poll(control_watch *w);

/* Newest log id in control_topic: 1 found, 0 none, -1 error (errstr). */
int control_load_logid(rd_kafka_t *rk, const char *control_topic,
                       int timeout_ms, control_logid *out, char *errstr,
                       size_t errstr_size);

/* Draws a new random log id and publishes it (waits for the ack, as
 * control_publish_rangemap does). */
int control_publish_logid(rd_kafka_t *rk, const char *control_topic,
                          int embedded, int timeout_ms, control_logid *out,
                          char *errstr, size_t errstr_size);

#endif
