/* control.h: the range map as data in the compacted topic objlog.control
 * (DESIGN §3). The newest message with key "rangemap" wins. When the topic
 * holds none, callers fall back to the default map for the events topic's
 * partition count (epoch 1), which is also what objlogd publishes first. */
#ifndef OBJLOG_CONTROL_H
#define OBJLOG_CONTROL_H

#include <librdkafka/rdkafka.h>

#include "rangemap.h"

#define CONTROL_RANGEMAP_KEY "rangemap"
#define CONTROL_DEFAULT_EPOCH 1

/* Number of partitions of topic, or -1 with errstr. */
int control_topic_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms,
                             char *errstr, size_t errstr_size);

/* Reads the newest range map from control_topic, or builds the default one
 * for events_topic's partition count when there is none. NULL with errstr. */
rangemap *control_load_rangemap(rd_kafka_t *rk, const char *control_topic,
                                const char *events_topic, int timeout_ms,
                                char *errstr, size_t errstr_size);

/* Publishes rm to control_topic (synchronously: waits for the ack). */
int control_publish_rangemap(rd_kafka_t *rk, const char *control_topic,
                             const rangemap *rm, int timeout_ms, char *errstr,
                             size_t errstr_size);

#endif
