/* nwebhook.h: the change feed to webhooks, at least once (nwebhook.c): one
 * lane per (events partition applied here as ACTIVE, bucket, configuration),
 * each POSTing its records one at a time in log order, retried with capped
 * exponential backoff, its position committed as the offset of its own
 * consumer group, so a dead endpoint holds back its own records only and
 * a restart or a partition move resumes where the last commit left it.
 * Not public outside query/notify. */
#ifndef OBJLOG_NWEBHOOK_H
#define OBJLOG_NWEBHOOK_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "materializer.h"

typedef struct nw nw;

/* admin: a client of the cluster for the lanes' group offsets (borrowed,
 * outlives nw). Starts a thread. NULL with errstr. */
nw *nw_new(objlog_store *store, objlog_materializer *m, rd_kafka_t *admin, const char *topic,
           const char *region, char *errstr, size_t es);
void nw_destroy(nw *w);

typedef struct nw_totals {
    uint64_t delivered;        /* records answered 2xx */
    uint64_t failures;         /* attempts that failed (retried) */
    uint64_t backlog;          /* records not yet delivered */
    int64_t oldest_ms;         /* log time of the oldest of them; 0 none */
    int lanes;
} nw_totals;
void nw_totals_get(nw *w, nw_totals *t);
/* {"delivered",...,"lanes":[{"partition","bucket","configuration","url",
 * "position","backlog","oldest_age_seconds","retry_in_seconds","error"}]} */
json_t *nw_status_json(nw *w);
/* objlog_notify_* families with target="webhook", and per configuration
 * objlog_notify_webhook_backlog_records{bucket,configuration}. */
void nw_metrics(FILE *f, nw *w);

#endif
