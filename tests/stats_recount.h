/* stats_recount.h: the exactness check of the usage counters,
 * shared by test_stats (apply.c driven directly) and
 * test_stats_kill (real objlogd views, SIGKILLed and replayed).
 *
 * A recount scans the views of a closed or quiescent store (`buckets`,
 * `objects`, `versions`, `uploads`) into the counters the stats view must
 * hold: per bucket, per tenant and partition (summed over its buckets on
 * that partition, .buckets = how many) and per partition (global); then
 * compares them field by field with the stored `stats` rows. A bucket's
 * partition is the range map's owner of route_key(b, ""). Invariant
 * checked: every existing bucket has its row, a tenant has a row on a
 * partition iff it has a bucket there, a partition has a 'g' row iff it
 * has a bucket, every stored row equals the recount exactly and names its
 * partition in its key (objlog_stats_row_partition), no other row exists
 * in the `stats` CF, and no `objects`/`versions`/`uploads` row belongs to
 * a bucket without a bucket record. Test-only; no cmocka inside, so both
 * tests report the first mismatch through errstr.
 */
#ifndef OBJLOG_TEST_STATS_RECOUNT_H
#define OBJLOG_TEST_STATS_RECOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "keycodec.h"
#include "materializer.h"
#include "rangemap.h"

/* UsageStats fields, in the proto's field order. */
enum {
    STATS_OBJECTS,
    STATS_BYTES,
    STATS_VERSIONS,
    STATS_VERSION_BYTES,
    STATS_NONCURRENT_VERSIONS,
    STATS_NONCURRENT_BYTES,
    STATS_DELETE_MARKERS,
    STATS_UPLOADS,
    STATS_UPLOAD_PART_BYTES,
    STATS_BUCKETS,
    STATS_NFIELDS
};

typedef struct stats_usage {
    uint64_t f[STATS_NFIELDS];
} stats_usage;

/* What a successful check covered. */
typedef struct stats_recount_summary {
    size_t buckets;      /* bucket rows compared (= buckets in the store) */
    size_t tenants;      /* distinct tenants with a bucket */
    size_t tenant_rows;  /* tenant rows compared (tenant, partition) */
    size_t globals;      /* 'g' rows compared (partitions with a bucket) */
    size_t rows;         /* rows in the `stats` CF (the three above) */
    stats_usage global;  /* the recounted sums of every partition */
} stats_recount_summary;

/* The UsageStats field name of STATS_* i ("objects", ...). */
const char *stats_field_name(int i);

/* Recounts s and compares. 0 when every stored row equals the recount
 * (sum filled, may be NULL); -1 with errstr naming the first mismatch
 * (which row, which field, stored and recounted values) or read error. */
int stats_recount_check(objlog_store *s, const rangemap *rm, stats_recount_summary *sum,
                        char *errstr, size_t errstr_size);

/* Rewrites s's stats rows in format 1 (before per-partition rows): one
 * 't' enc(tenant) row per tenant and one 'g' row, from the recount (not
 * from the stored rows), its request id and header rows as format 2
 * below, and removes meta "format": a store as an older objlogd left it, for the
 * upgrade test. 0, or -1 (errstr). */
/* Puts back the rows formats 2 and 3 kept and format 4 does not (a row
 * per request id: 'r' request_id in format 2, 'r' be32(p) request_id in
 * format 3; a header row for every key of an Unversioned bucket) and
 * marks s with that format. The request id rows put, or -1 (errstr). */
long stats_recount_write_format2(objlog_store *s, char *errstr, size_t errstr_size);
long stats_recount_write_format3(objlog_store *s, char *errstr, size_t errstr_size);
int stats_recount_write_format1(objlog_store *s, const rangemap *rm, char *errstr,
                                size_t errstr_size);

/* The stored `stats` row at key (objlog_stats_*_key). 1 found, 0 absent
 * (*out all zero), -1 read or decode error (errstr). */
int stats_recount_stored(objlog_store *s, const keybuf *key, stats_usage *out,
                         char *errstr, size_t errstr_size);

#endif
