/* notifier.h: the change feed's delivery (query/notify): a thread of
 * objlogd that sends the feed records the state machine staged
 * (materializer/feed.h) for every partition this node applies as ACTIVE,
 * so delivery moves with the partition. Kafka targets get them exactly
 * once (nkafka.h). */
#ifndef OBJLOG_NOTIFIER_H
#define OBJLOG_NOTIFIER_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "materializer.h"

typedef struct notifier notifier;

typedef struct notifier_conf {
    const char *brokers;
    const char *topic;         /* the events topic */
    const char *region;        /* the records' awsRegion */
    int batch;                 /* records per transaction at most; 0: 1000 */
    const char *release_topic; /* BlobReleased records go there; NULL: dropped */
} notifier_conf;

/* Starts the thread. NULL with errstr. */
notifier *notifier_new(objlog_store *store, objlog_materializer *m, const notifier_conf *c,
                       char *errstr, size_t errstr_size);
/* Stops the thread (an open transaction is aborted by the producer's
 * destruction and its records go again with the next owner). */
void notifier_destroy(notifier *n);

/* Counters since start, and the backlog now (Kafka targets). */
typedef struct notifier_totals {
    uint64_t delivered;        /* records committed */
    uint64_t transactions;     /* committed */
    uint64_t failures;         /* transactions that did not commit */
    uint64_t trimmed;          /* positions found behind the feed's trim */
    uint64_t released;         /* of delivered: BlobReleased records */
    uint64_t backlog;          /* records applied, not yet delivered */
    int64_t oldest_ms;         /* log time of the oldest of them; 0 none */
    int producers;             /* partitions with a transactional producer */
} notifier_totals;
void notifier_totals_get(notifier *n, notifier_totals *t);

/* {"kafka":{totals...,"partitions":[{"partition":P,"position":N,
 * "backlog":N,"oldest_age_seconds":S,"error":"..."}]}} */
json_t *notifier_status_json(notifier *n);

/* The objlog_notify_* families of /metrics. */
void notifier_metrics(FILE *f, notifier *n);

#endif
