/* workers.h: what works in the background of objlogd's service: the
 * lifecycle worker (lifecycle.c: due rules into Expire events), the
 * attribute index backfill (ixdriver.c: BuildIndex steps), and the
 * lifecycle configuration as both APIs read and write it (lcconf.c). */
#ifndef OBJLOG_QUERY_WORKERS_H
#define OBJLOG_QUERY_WORKERS_H

#include <stdint.h>
#include <stdio.h>

#include "server.h"
#include "view.h"

/* ---- lifecycle.c: the lifecycle worker ---- */
typedef struct lc_worker lc_worker;
/* What the worker knows of one bucket with rules. */
typedef struct lc_status {
    char bucket[64];
    uint32_t rules;
    uint64_t due;                /* due at the last scan, less decided since */
    int64_t oldest_due_ms;       /* worker clock; 0 none */
    uint64_t expired, skipped;   /* Expire outcomes OK / LifecycleSkipped */
    int64_t last_scan_ms;        /* worker clock */
    uint64_t scans;
    double last_rate;            /* Expire events decided per second, last pass */
} lc_status;
/* interval_ms 0: no thread (status answers "no scan yet"). */
lc_worker *lc_worker_new(objlog_query *q, int interval_ms, int64_t clock_offset_ms,
                         int max_rate, char *errstr, size_t errstr_size);
void lc_worker_destroy(lc_worker *w);
int64_t lc_worker_now_ms(const lc_worker *w); /* wall + the test offset */
/* 1 with *out when the worker scanned bucket with rules, else 0. */
int lc_worker_status(lc_worker *w, const char *bucket, lc_status *out);
void lc_worker_metrics(FILE *f, lc_worker *w);

/* ---- ixdriver.c: attribute index backfill ---- */
/* The backfill driver: appends BuildIndex events for the building indexes
 * of the partitions this node applies as active (ixdriver.c). */
typedef struct ixdriver ixdriver;
ixdriver *ixdriver_new(objlog_query *q, char *errstr, size_t errstr_size);
void ixdriver_stop(ixdriver *d);      /* before the producer goes */
void ixdriver_destroy(ixdriver *d);   /* after it (its callbacks touch d) */

/* ---- lcconf.c: a bucket's lifecycle configuration, for both APIs ---- */

/* The bucket record with its rules, through a fenced view: 1 with *b
 * (caller frees), 0 after replying (404 NoSuchLifecycleConfiguration when
 * it has none, in the request's API's format) or parking. */
int lcconf_read(http_ctx *c, const char *bucket, view_bucket *b);
/* A SetLifecycle event of bucket with sl's rules (NULL: none, which
 * removes the configuration) through the gateway: the answer is c's
 * write's. sl stays the caller's. */
void lcconf_write(http_ctx *c, const char *bucket, Objlog__SetLifecycle *sl);


#endif
