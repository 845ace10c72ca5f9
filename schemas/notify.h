/* notify.h: the rules of a bucket's notification configurations (S3's
 * NotificationConfiguration): which event names exist, what a target ARN
 * may say, when two configurations overlap, and which configuration a
 * change matches. The S3 endpoint, the JSON API and the state machine check
 * configurations with this one module, so a configuration the edge takes is
 * one the state machine takes. Pure: no I/O; allocation only in
 * notify_target_parse's output. */
#ifndef OBJLOG_NOTIFY_H
#define OBJLOG_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "objlog.pb-c.h"

#define NOTIFY_CONFIGS_MAX 100    /* per bucket */
/* Event types in one configuration: S3 has 27, so more are repeats; it
 * bounds what one request body can make an edge hold. */
#define NOTIFY_EVENTS_MAX 100
#define NOTIFY_ID_MAX 255
#define NOTIFY_FILTER_MAX 1024    /* a prefix or suffix: a key's length */
#define NOTIFY_TOPIC_MAX 249      /* Kafka's */
#define NOTIFY_URL_MAX 2048

#define NOTIFY_ARN_KAFKA "arn:objlog:kafka:::"
#define NOTIFY_ARN_WEBHOOK "arn:objlog:webhook:::"

typedef enum notify_kind {
    NOTIFY_KAFKA = 0,   /* a topic of the cluster objlog runs on */
    NOTIFY_WEBHOOK = 1  /* an HTTP(S) endpoint, POSTed one record at a time */
} notify_kind;

/* A target ARN taken apart: kind, and the topic or the decoded URL
 * (NUL-terminated in target). 0, or -1 with why naming what is wrong. */
typedef struct notify_target {
    notify_kind kind;
    char target[NOTIFY_URL_MAX + 1];
} notify_target;
int notify_target_parse(const char *arn, notify_target *out, char *why, size_t wn);

/* 1 if name is one of S3's event types ("s3:ObjectCreated:Put", or a
 * wildcard such as "s3:ObjectCreated:*"), else 0. */
int notify_event_known(const char *name);

/* 1 if the configured event type pattern ("s3:ObjectRemoved:*") covers
 * the change's event name, given without "s3:" ("ObjectRemoved:Delete"). */
int notify_event_covers(const char *pattern, const char *event_name);

/* A bucket's configurations as a whole: at most NOTIFY_CONFIGS_MAX, each
 * with an id (1..255 bytes, unique), at least one known event type, a
 * target ARN notify_target_parse takes, filters within NOTIFY_FILTER_MAX;
 * no two sharing an event type with overlapping filters (S3's rule). 0, or
 * -1 with why in S3's words where S3 has them. */
int notify_configs_check(Objlog__NotifyConfig *const *c, size_t n, char *why, size_t wn);

/* 1 if the change (event name without "s3:", key bytes) is one c
 * notifies: an event type covers it and the key has c's prefix and
 * suffix. */
int notify_config_matches(const Objlog__NotifyConfig *c, const char *event_name,
                          const uint8_t *key, size_t key_len);

#endif
