/* producer_int.h: internals shared by the files of libobjlog_producer (not
 * installed, not part of the public API): the interfaces between the core
 * (producer.c), configuration (conf.c), argument checks (validate.c), the
 * outcome fetcher (fetch.c), the tenant quota (quota.c) and admission
 * (admit.c). The write_op they pass around is writeop.h's.
 *
 * Invariant: the core calls the other parts; they reach back only through
 * writeop.h (to finish an op), never into producer.c.
 */
#ifndef OBJLOG_PRODUCER_INT_H
#define OBJLOG_PRODUCER_INT_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

#include "objlog_producer.h"
#include "writeop.h"

#define PRODUCER_DEFAULT_TOPIC "objlog.events"
#define PRODUCER_DEFAULT_CONTROL_TOPIC "objlog.control"
#define PRODUCER_DEFAULT_OUTCOME_TIMEOUT_MS 10000
#define PRODUCER_DEFAULT_QUOTA_REFRESH_MS 1000

struct objlog_producer_conf {
    char *bootstrap;
    char *topic;
    char *control_topic;
    char *query_url;
    char *query_token;           /* query.token: Bearer token, NULL none */
    int ack_applied;            /* 1: ack=applied, 0: ack=logged */
    int outcome_timeout_ms;
    int unknown_retries;        /* re-produces before UNKNOWN (0..100) */
    char *quota_tenant;         /* tenant.quota.tenant, or NULL */
    uint64_t quota_max_bytes;   /* tenant.quota.max_bytes; 0 = none */
    uint64_t quota_max_objects; /* tenant.quota.max_objects; 0 = none */
    int quota_refresh_ms;       /* tenant.quota.refresh.ms */
    int admission;              /* admission=on */
    int admission_refresh_ms;   /* admission.refresh.ms */
    rd_kafka_conf_t *kconf;     /* kafka.* properties (and bootstrap) */
    objlog_log_cb *log_cb;      /* NULL: stderr */
    void *log_opaque;
};

/* Checks, each filling errstr and returning -1 on a bad argument. */
int validate_bucket(const char *bucket, char *errstr, size_t errstr_size);
int validate_key(const char *key, size_t key_len, char *errstr,
                 size_t errstr_size);
int validate_meta(const objlog_object_meta *meta, char *errstr,
                  size_t errstr_size);
int validate_version_id(const char *version_id, char *errstr,
                        size_t errstr_size);
int validate_upload_id(const char *upload_id, char *errstr,
                       size_t errstr_size);
int validate_part_number(uint32_t part_number, char *errstr,
                         size_t errstr_size);
/* Field lengths (validate.c's FIELD_*); what names the field in errstr. */
int validate_etag(const char *what, const char *etag, char *errstr, size_t errstr_size);
int validate_blob_id(const char *blob_id, char *errstr, size_t errstr_size);
/* A part's etag: the MD5 of its bytes, 32 hex digits, optionally quoted. */
int validate_part_etag(const char *etag, char *errstr, size_t errstr_size);
int validate_completed_parts(const objlog_completed_part *parts,
                             size_t n_parts, char *errstr, size_t errstr_size);

/* The outcome fetcher: one thread with a curl multi handle that asks the
 * query service for the outcome of each logged write (ack=applied). */
typedef struct fetcher fetcher;
/* reroute (may be NULL): called on the fetcher thread for an op whose
 * outcome is WrongRange and that may still be resent; 0 when it took the
 * op back to librdkafka (its delivery report submits it again), -1 when
 * the op is to complete with that outcome. */
typedef int fetch_reroute_fn(void *arg, write_op *op);
fetcher *fetcher_new(const char *query_url, const char *token, fetch_reroute_fn *reroute,
                     void *reroute_arg, char *errstr, size_t errstr_size);
/* Takes op; its callback runs later from the fetcher thread. */
void fetcher_submit(fetcher *f, write_op *op);
/* Stops the thread; the caller has already waited for every op. */
void fetcher_destroy(fetcher *f);
/* HTTP requests made for outcomes so far (any thread). */
uint64_t fetcher_requests(fetcher *f);

/* The tenant-quota pre-check (quota.c). quota_new sets *out to NULL when
 * no tenant.quota.max_* is configured; quota_check(NULL) always passes.
 * quota_check: 0, or -1 with errstr naming the quota when the tenant's
 * cached usage is already at or over it (never blocks on HTTP). */
typedef struct quota quota;
int quota_new(const objlog_producer_conf *conf, quota **out, char *errstr,
              size_t errstr_size);
int quota_check(quota *q, char *errstr, size_t errstr_size);
void quota_destroy(quota *q);

/* Admission (admit.c): with admission=on, a library
 * thread polls the query service for the partitions whose writes slow
 * down and the rate limits of the buckets this producer writes; a write
 * over them is not sent. padmit_new sets *out to NULL when admission is
 * off; padmit_refuse(NULL, ...) never refuses. */
typedef struct padmit padmit;
int padmit_new(const objlog_producer_conf *conf, padmit **out, char *errstr,
               size_t errstr_size);
/* 1 when a write of bucket to partition must not be sent: res gets status
 * SLOW_DOWN, error_code "SlowDown" and "... retry after N s". Else 0. */
int padmit_refuse(padmit *a, const char *bucket, int32_t partition,
                  objlog_write_result *res);
/* Takes op (refused, counted outstanding): its callback runs on the
 * admission thread, never on the caller's. */
void padmit_defer(padmit *a, write_op *op);
/* After every deferred op completed (flush). */
void padmit_destroy(padmit *a);
#endif
