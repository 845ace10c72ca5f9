/* stage.h: the rows one event stages through its batch (stage.c), for the
 * state machine's rules in apply.c: bucket records, the key header and
 * version rows, the key's `objects` row, uploads and parts, and the usage
 * counters that count them. Not public. */
#ifndef OBJLOG_STAGE_H
#define OBJLOG_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "blobrefs.h"
#include "dedup.h"
#include "feed.h"
#include "indexes.h"
#include "keycodec.h"
#include "materializer.h"
#include "objlog.pb-c.h"
#include "statrows.h"

/* Signed change of every UsageStats counter made by one event. */
typedef struct stats_delta {
    int64_t objects, bytes, versions, version_bytes, noncurrent_versions,
        noncurrent_bytes, delete_markers, uploads, upload_part_bytes, buckets;
} stats_delta;

/* One event being decided (apply.c) and what it staged so far. */
typedef struct apply_ev {
    apply_batch *b;
    const Objlog__Event *ev;
    int32_t partition;
    int64_t offset;
    int64_t log_time_ms;
    uint64_t seq;
    keybuf route;  /* route_key(bucket, key), key "" for bucket ops */
    keybuf bpart;  /* bucket_part(bucket) */
    keybuf stake;  /* this partition's `buckets` row of it (stake.h) */
    apply_result res;
    char *errstr;
    size_t es;
    /* Usage delta of this event (stats CF), staged only if it succeeds. */
    stats_delta d;
    Objlog__Versioning versioning; /* the bucket's, for key ops */
    int obj_live_before;     /* the `objects` row before a key op */
    uint64_t obj_size_before;
    uint64_t obj_seq_before; /* ... its version's seq, */
    int obj_null_before;     /* and whether that is the null version */
    /* ... and after, once the op staged it (objects_noted), so
     * the counters need not read it back. */
    int obj_staged, obj_live_after;
    uint64_t obj_size_after;
    char *tenant;            /* the bucket's tenant once loaded (owned) */
    indexes_key ix;          /* the bucket's indexes, for key ops */
    /* The change feed (feed.h): the bucket's notification configurations
     * for key ops, the change an OK op made (event name NULL: none), the
     * partition's map epoch (for the sequencer) and the rows staged. */
    feed_bucket feed;
    const char *feed_event;
    uint64_t feed_size;
    const char *feed_etag;
    uint32_t map_epoch;
    uint16_t feed_n;
    blobrefs_ev blobs;       /* blob references removed (blobrefs.h) */
} apply_ev;

/* Loaders of a record as the batch sees it: 1 found (*out owned by the
 * caller), 0 absent, -1 error (a->errstr; a corrupt row is an error). */
int stage_load_bucket(apply_ev *a, Objlog__BucketRecord **out);
int stage_load_version(apply_ev *a, uint64_t seq, Objlog__VersionRecord **out);
int stage_load_upload(apply_ev *a, const char *upload_id, Objlog__UploadRecord **out);
int stage_load_part(apply_ev *a, const char *upload_id, uint32_t part,
                    Objlog__PartRecord **out);

int stage_save_bucket(apply_ev *a, const Objlog__BucketRecord *r);
/* The key's header (after stage_key_begin): 1 the key has versions, 0
 * none (*h all zero), -1 error. A key whose versions are its null version
 * alone has no header row: `objects` shows that version, and says so. */
int stage_load_header(apply_ev *a, objlog_key_header *h);
/* Writes the header row, or deletes it when the key has no version left;
 * an Unversioned bucket's keys never have one (their one version is the
 * null version, which `objects` shows). */
void stage_save_header(apply_ev *a, const objlog_key_header *h);
/* Deletes the version row at seq, with its counters. 0 or -1. */
int stage_delete_version(apply_ev *a, uint64_t seq);
/* Writes a new newest version (or marker) at a->seq. A new version always
 * has the highest seq of its key, so it is what `objects` must show. */
int stage_add_version(apply_ev *a, const char *version_id, int marker,
                      Objlog__ObjectMeta *meta);
/* Writes r again in place (its seq; an attribute changed, never its size),
 * and the `objects` row too when r is the key's current version (after
 * stage_key_begin, so the bucket's indexes see the change). 0 or -1. */
int stage_rewrite_version(apply_ev *a, const Objlog__VersionRecord *r);
/* Makes `objects` show the key's newest version if it is live, else
 * nothing. Used after a version other than a new newest one changed. */
int stage_refresh_current(apply_ev *a);
/* Removes every in-progress upload of the bucket (its rows and its
 * parts') on this partition, with their counts: DeleteBucket takes them
 * with it, as S3 does. 0 or -1. */
int stage_drop_bucket_uploads(apply_ev *a);
/* Makes `objects` show nothing: the key has no version left. */
void stage_clear_current(apply_ev *a);
/* Keeps the bucket's tenant for the stats rows. 0 or -1. */
int stage_set_tenant(apply_ev *a, const char *tenant);
/* 1 if cf has any row under the bucket (in `versions`: a version or a
 * delete marker; in `uploads`: an in-progress multipart upload). */
int stage_bucket_has_rows(apply_ev *a, objlog_cf cf);

/* ---- uploads ---- */

/* upload row = route_key(b,k) ‖ enc(upload_id) */
int stage_upload_row(apply_ev *a, const char *upload_id, keybuf *row);
/* part row = upload row ‖ be32(part_number) */
int stage_part_row(apply_ev *a, const char *upload_id, uint32_t part, keybuf *row);
/* Removes the upload row and all its part rows. The part numbers are read
 * first: deleting from the batch while iterating it would invalidate the
 * iterator's keys. At most 10,001 rows. */
int stage_remove_upload(apply_ev *a, const char *upload_id);

/* ---- usage counters (stats CF; layout in materializer.h) ---- */

/* The stats row at k as the batch sees it (loaded from the store on first
 * touch; absent = all zero, present 0). NULL on error (errstr). */
statrow *stage_stats_row(apply_batch *b, const keybuf *k, char *errstr, size_t es);
/* Usage u of a bucket's keys leaves (sign -1) or joins (sign +1)
 * partition p's rows of its tenant and of the global sums, as a handoff
 * moves them between partitions (stake.c); with the bucket itself in
 * their bucket counts if count_bucket. 0 or -1. */
int stage_stats_shift(apply_batch *b, int32_t p, const char *tenant,
                      const Objlog__UsageStats *u, int sign, int count_bucket, char *errstr,
                      size_t es);
/* Sets the row at k to u (present) or absent. 0 or -1 out of memory. */
int stage_stats_put(apply_batch *b, const keybuf *k, const Objlog__UsageStats *u,
                    int present);
/* Sets the row at k to all zero (present) or absent, without reading it. */
int stage_stats_reset(apply_batch *b, const keybuf *k, int present);
/* Stages every changed row into the WriteBatch. Cannot fail: a row packs
 * into at most 10 varints of 11 bytes. */
void stage_stats_flush(apply_batch *b);
/* Stages a->d into the bucket's row and into this partition's rows of the
 * tenant and of the global sums (stage.c says why per partition). */
int stage_stats_commit(apply_ev *a);
/* Before a key op stages anything: remembers the current live version,
 * and hands its row to the bucket's indexes (one read for both). */
int stage_key_begin(apply_ev *a);
/* After a key op staged its rows: objects/bytes and noncurrent deltas,
 * from the `objects` row's state noted by objects_noted (none: the op left
 * it as it was). */
int stage_key_end(apply_ev *a);

#endif
