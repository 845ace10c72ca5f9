/* lifecycle.h: the pure rules of S3-style bucket lifecycle:
 * which rule applies to a version, an upload or a delete marker, and from
 * which log time it is due. One copy of these rules serves both sides: the
 * lifecycle worker (query/workers/lifecycle.c) uses them to find due work in a
 * view, the state machine (apply.c) re-checks an Expire event with them at
 * the event's own log time. Nothing here reads a clock: every "now" is a
 * caller's argument (the state machine passes the Kafka timestamp).
 *
 * Days, as S3 counts them ("adding the number of days specified in the
 * rule to the object creation time and rounding the resulting time to the
 * next day midnight UTC", S3 User Guide, lifecycle expiration):
 *   due_ms(since, days) = ceil((since + days * 86,400,000) / 86,400,000)
 *                         * 86,400,000
 * where `since` is the version's log time (Expiration), the log time of
 * the next newer version, i.e. when it became noncurrent
 * (NoncurrentVersionExpiration), or the CreateUpload's log time
 * (AbortIncompleteMultipartUpload). Expiration by date: due from that
 * date (which must be a midnight UTC). An item is due when log time >=
 * due_ms. ExpiredObjectDeleteMarker: a current delete marker that is its
 * key's only version is due at once.
 *
 * Filters (every condition set must hold): key prefix, tags and
 * user-metadata pairs (each present with that exact value), size strictly
 * greater / less than. Delete markers and uploads have no size or tags
 * here: they match a filter only by its prefix, and only when the filter
 * has no tag, metadata or size condition.
 */
#ifndef OBJLOG_LIFECYCLE_H
#define OBJLOG_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "objlog.pb-c.h"

#define OBJLOG_LC_DAY_MS 86400000LL
#define OBJLOG_LC_MAX_RULES 1000          /* S3's limit */
#define OBJLOG_LC_MAX_ID 255
#define OBJLOG_LC_MAX_NEWER_NONCURRENT 100 /* S3's limit */
#define OBJLOG_LC_MAX_DAYS 36500          /* 100 years; keeps the sums in range */

/* Checks a configuration as S3 does; 0, or -1 with errstr naming the rule
 * and what is wrong (unique non-empty ids, at most 1000 rules, at least
 * one action, Days > 0, Date at midnight UTC, no Days with Date, no
 * ExpiredObjectDeleteMarker with Days/Date, NewerNoncurrentVersions only
 * with NoncurrentDays, no tag filter with ExpiredObjectDeleteMarker or
 * AbortIncompleteMultipartUpload, size_greater_than < size_less_than). */
int objlog_lc_validate(Objlog__LifecycleRule *const *rules, size_t n,
                       char *errstr, size_t errstr_size);

/* When something that started at since_ms is `days` old (above). */
int64_t objlog_lc_due_ms(int64_t since_ms, uint32_t days);

/* The rule of br named id, NULL if none. */
const Objlog__LifecycleRule *objlog_lc_rule(const Objlog__BucketRecord *br,
                                            const char *id);

/* 1 if the filter holds for key (meta NULL: a delete marker or an upload,
 * see above), else 0. */
int objlog_lc_match(const Objlog__LifecycleFilter *f, const uint8_t *key,
                    size_t kn, const Objlog__ObjectMeta *meta);

/* One version of a key as the rules see it. */
typedef struct objlog_lc_version {
    const uint8_t *key;
    size_t key_len;
    const Objlog__VersionRecord *rec;
    uint32_t position;        /* 0 = the key's newest */
    int64_t newer_ms;         /* position > 0: log time of the next newer */
    uint64_t versions;        /* the key's versions, markers included */
} objlog_lc_version;

/* The action rule r takes on v (an Objlog__ExpireAction), and from when
 * (*due_ms), or -1 when the rule does not apply to v at all. r must be
 * enabled (the caller checks). */
int objlog_lc_version_action(const Objlog__LifecycleRule *r,
                             const objlog_lc_version *v, int64_t *due_ms);

/* 1 (with *due_ms) if rule r aborts the upload of key initiated at
 * initiated_ms, else 0. */
int objlog_lc_upload_action(const Objlog__LifecycleRule *r, const uint8_t *key,
                            size_t kn, int64_t initiated_ms, int64_t *due_ms);

/* Walks one key in it (a `versions` iterator, over the store or a batch):
 * seeks route key rk, reads the key header (the version count) and gives
 * fn each version, newest first (v->rec valid during the call only); fn
 * returning non-zero stops the walk with that value. Leaves it on the
 * first row after the key (or where fn stopped). 0 when the walk ended,
 * fn's value, or -1 with errstr (corrupt row or iterator error). */
typedef int objlog_lc_walk_fn(void *arg, const objlog_lc_version *v);
int objlog_lc_walk_key(rocksdb_iterator_t *it, const uint8_t *rk, size_t rn,
                       const uint8_t *key, size_t kn, objlog_lc_walk_fn *fn,
                       void *arg, char *errstr, size_t errstr_size);

#endif
