/* admit.h: admission control at the edge of both APIs (admit.c): token
 * buckets per bucket and tenant, a bucket's own limit from its record
 * (read through the fenced read path, hence above read/), and the
 * hot-partition guard. */
#ifndef OBJLOG_QUERY_ADMIT_H
#define OBJLOG_QUERY_ADMIT_H

#include <stdio.h>

#include "server.h"

typedef struct admit admit;

/* ---- admit.c: admission control ---- */
typedef struct admit_conf {
    uint32_t bucket_rps, bucket_burst;  /* default per bucket; 0: none */
    uint32_t tenant_rps, tenant_burst;  /* per tenant; 0: none */
    int64_t slowdown_lag;               /* writes slow down past it; 0: off */
} admit_conf;
typedef enum admit_reason {
    ADMIT_OK = 0, ADMIT_BUCKET, ADMIT_TENANT, ADMIT_HOT_PARTITION, ADMIT_REASONS
} admit_reason;
/* One request as the decision sees it. */
typedef struct admit_target {
    const char *bucket;
    const char *tenant;                 /* "" or NULL: no tenant limit */
    const Objlog__RateLimit *limit;     /* the bucket's own; NULL: default */
    int write;
    int64_t lag;                        /* writes: their partition's lag */
} admit_target;
admit *admit_new(const admit_conf *conf);   /* NULL out of memory */
void admit_destroy(admit *a);
/* The decision on a clock of microseconds (tests pass a fake one): OK, or
 * the reason with *retry_s (Retry-After, whole seconds, at least 1). */
admit_reason admit_decide(admit *a, const admit_target *t, int64_t now_us,
                          int64_t *retry_s);
const char *admit_reason_name(admit_reason r);
uint64_t admit_rejected(admit *a, const char *bucket, admit_reason why);
void admit_metrics(FILE *f, admit *a);
/* Before a bucket-scoped request is read or logged (key: its object key,
 * "" for the bucket): 0 admitted, -1 after answering 503 SlowDown. */
int admit_request(http_ctx *c, const char *bucket, const uint8_t *key, size_t kn);
int64_t admit_partition_lag(objlog_query *q, int32_t p);
void admit_get_rate_limit(http_ctx *c, const char *bucket); /* GET .../ratelimit */
void admit_get_status(http_ctx *c);                         /* GET /v1/admission */

#endif
