/* blobgc.h: the blob directory's garbage collector, a thread of objlogd
 * (--blob-dir with --blob-release-topic, on a node not in a cluster). It
 * reads the blob-release records the notifier delivers (key: the blob id;
 * a record makes the id a candidate only: a copy or equal bytes may still
 * name it) and runs collection rounds (blob.h's rule, blob_collect) whose
 * fence and reference check are the view's: every partition applied up to
 * the log end offset read under the round's lock, then
 * objlog_store_blob_referenced over every partition.
 *
 * Invariant: a record's position is committed only once its candidate is
 * settled (deleted, absent or referenced); a candidate that a write in
 * flight names, or whose check failed, is retried with a backoff and holds
 * its partition's commit, so a restart reads it again. Nothing is deleted
 * without a fence met within its timeout. */
#ifndef OBJLOG_QUERY_BLOBGC_H
#define OBJLOG_QUERY_BLOBGC_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "blob.h"
#include "materializer.h"

typedef struct blobgc blobgc;
typedef struct wm_cache wm_cache;

typedef struct blobgc_conf {
    const char *brokers;
    const char *topic;           /* the blob-release records' */
    blobstore *bs;               /* the local backend's */
    objlog_store *store;
    objlog_materializer *m;      /* applies every partition (one node) */
    wm_cache *wm;                /* the log's end offsets (watermark.h) */
    int round_interval_ms;       /* between rounds at least; 0: 500 */
    int fence_timeout_ms;        /* a round's fence; 0: 10,000 */
} blobgc_conf;

/* Starts the thread (the consumer joins group objlog.blobgc and waits
 * quietly for the topic, which the notifier creates on its first
 * delivery). NULL with errstr. */
blobgc *blobgc_new(const blobgc_conf *c, char *errstr, size_t errstr_size);
/* Stops the thread: a round's fence gives up, the consumer is closed
 * within a bounded wait. NULL is a no-op. */
void blobgc_destroy(blobgc *g);

/* Counters since start. */
typedef struct blobgc_totals {
    uint64_t candidates;         /* release records taken (valid ids) */
    uint64_t deleted;            /* files unlinked */
    uint64_t deleted_bytes;
    uint64_t referenced;         /* skipped: still named by a version or part */
    uint64_t pending;            /* skipped for now: a write or copy in flight */
    uint64_t absent;             /* nothing to delete: not in the store */
    uint64_t errors;             /* checks, unlinks or fences that failed */
    uint64_t rounds;             /* rounds that ran (fence met) */
    uint64_t waiting;            /* candidates held now, to be tried again */
} blobgc_totals;
void blobgc_totals_get(blobgc *g, blobgc_totals *t);

/* {"topic","candidates","deleted","deleted_bytes","referenced","pending",
 *  "absent","errors","rounds","waiting","last_error"} */
json_t *blobgc_status_json(blobgc *g);

/* The objlog_blobgc_* families of /metrics; nothing for NULL. */
void blobgc_metrics(FILE *f, blobgc *g);

#endif
