/* buckets.h: the read of buckets.c that the S3 endpoint's ListBuckets
 * (s3bucket.c) shares with GET /v1/buckets: the bucket records of this
 * node, by name, from one snapshot fenced on every partition. The answer's
 * shape (JSON or S3's XML) is each caller's. */
#ifndef OBJLOG_QUERY_BUCKETS_H
#define OBJLOG_QUERY_BUCKETS_H

#include "internal.h"

/* One listed bucket; record owned. */
typedef struct bucket_row {
    Objlog__BucketRecord *r;
} bucket_row;

typedef struct bucket_page {
    bucket_row *rows;            /* sorted by name, at most max + 1 */
    size_t n, max;               /* max: max_buckets + 1 (tells truncation) */
} bucket_page;

/* The first max buckets of tenant (every bucket for NULL or "") by name
 * into *p: 0 (free it with buckets_page_free), or -1 after replying 500
 * or parking on the fence (which runs c again). */
int buckets_read_all(http_ctx *c, const char *tenant, size_t max, bucket_page *p);
void buckets_page_free(bucket_page *p);

#endif
