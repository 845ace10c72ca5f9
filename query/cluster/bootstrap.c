/* bootstrap.c: a cluster node copying a partition from a peer instead of
 * replaying the log from offset 0.
 *
 * The materializer holds every partition it is given (by the group or the
 * standby placement) that its store never applied (conf hold_new). The
 * cluster refresher (cluster.c) then offers each held partition here with
 * the peer whose copy is furthest along, or releases it when no reachable
 * peer has applied any of it (a new cluster: the log is all there is). It
 * also offers a partition this node applies but trails a peer's copy of by
 * BOOTSTRAP_GAP events or more. One thread runs one bootstrap at a time:
 * hold the partition (no batch of it in hand, reads go elsewhere), import
 * the peer's checkpoint (checkpoint.h), release it: the materializer goes
 * on from the checkpoint's applied offset, so only the log's tail is
 * replayed.
 *
 * It also imports a range for a RangeIn that waits for one (a handoff
 * from a partition applied on another node, materializer.h
 * objlog_range_wait): the peer's range stream of the RangeOut, written
 * under the range's route keys; the RangeIn applies once its marker
 * landed.
 *
 * Invariant: while a partition's rows are being replaced it is held, so
 * it is neither applied nor read here; a failed import leaves it empty
 * ("never applied"), and the next refresh offers it again. A range is
 * imported only while its RangeIn waits, so no partition here holds it. */
#include "core.h"
#include "cluster.h"
#include "server.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "checkpoint.h"
#include "nodeauth.h"

/* How long a hold may take: the batch in hand ends first. */
#define BOOT_HOLD_MS 10000
/* At most one progress line a second on stderr. */
#define BOOT_LOG_EVERY_MS 1000

struct bootstrap {
    objlog_query *q;             /* borrowed */
    int has_key;                 /* the fetches are signed (nodesign.c) */
    uint8_t key[NODEAUTH_KEY_LEN];
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int stop;             /* also cancels the transfer in flight */
    int32_t next_p;              /* the offered job, -1 none (under mu) */
    char next_url[CLUSTER_URL_MAX];
    int next_range;              /* ... a range for next_rw, not a partition */
    objlog_range_wait next_rw;
    /* The job running, under mu: its partition (-1 none), source and
     * progress. */
    int32_t cur_p;
    char cur_url[CLUSTER_URL_MAX];
    objlog_ckpt_progress pr;
    int64_t t0_ms, logged_ms;
    uint64_t ok, failed, bytes_total, rows_total; /* finished jobs */
    uint64_t rok, rfailed, rbytes, rrows, rms;   /* finished range imports */
    objlog_logger_limit range_log; /* a range import that keeps failing, said */
    char range_failed_url[CLUSTER_URL_MAX]; /* the last range import failed from */
};

static int64_t boot_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Import progress (the fetching thread): kept for /metrics, and a line on
 * stderr at most once a second with the rate and what is left. */
static void boot_progress(void *opaque, const objlog_ckpt_progress *pr) {
    bootstrap *b = opaque;
    int64_t now = boot_mono_ms();
    pthread_mutex_lock(&b->mu);
    b->pr = *pr;
    int say = now - b->logged_ms >= BOOT_LOG_EVERY_MS;
    if (say)
        b->logged_ms = now;
    int32_t p = b->cur_p;
    int64_t took = now - b->t0_ms;
    pthread_mutex_unlock(&b->mu);
    if (!say)
        return;
    double mbps = took > 0 ? (double)pr->bytes / 1e6 / ((double)took / 1000.0) : 0.0;
    if (pr->total_bytes > pr->bytes && mbps > 0)
        objlog_logf(OBJLOG_LEVEL_INFO, "bootstrap",
                    "partition %d: %.1f of %.1f MB (%d%%), %" PRIu64 " rows, %.1f MB/s, "
                    "ETA %.0f s", (int)p, (double)pr->bytes / 1e6,
                    (double)pr->total_bytes / 1e6,
                    (int)(100 * pr->bytes / pr->total_bytes), pr->rows, mbps,
                    (double)(pr->total_bytes - pr->bytes) / 1e6 / mbps);
    else
        objlog_logf(OBJLOG_LEVEL_INFO, "bootstrap",
                    "partition %d: %.1f MB, %" PRIu64 " rows, %.1f MB/s", (int)p,
                    (double)pr->bytes / 1e6, pr->rows, mbps);
}

/* A copy into partition p from url starts: what /metrics and the progress
 * lines show. Its start time. */
static int64_t boot_job_begin(bootstrap *b, int32_t p, const char *url) {
    int64_t t0 = boot_mono_ms();
    pthread_mutex_lock(&b->mu);
    b->cur_p = p;
    snprintf(b->cur_url, sizeof(b->cur_url), "%s", url);
    memset(&b->pr, 0, sizeof(b->pr));
    b->t0_ms = b->logged_ms = t0;
    pthread_mutex_unlock(&b->mu);
    return t0;
}

static void boot_run(bootstrap *b, int32_t p, const char *url) {
    objlog_query *q = b->q;
    char err[512];
    int64_t applied = 0, t0 = boot_job_begin(b, p, url);
    int rc = -1;
    if (!objlog_materializer_held(q->m, p) &&
        objlog_materializer_hold(q->m, p, BOOT_HOLD_MS) < 0) {
        snprintf(err, sizeof(err), "the materializer did not hold it within %d ms",
                 BOOT_HOLD_MS);
    } else {
        objlog_logf(OBJLOG_LEVEL_INFO, "bootstrap",
                    "partition %d: copying the checkpoint of %s (applied here: %" PRId64 ")",
                    (int)p, url, objlog_store_applied(q->store, p));
        char ckpt_url[1100];
        snprintf(ckpt_url, sizeof(ckpt_url), "%s/v1/partitions/%d/checkpoint", url, (int)p);
        struct curl_slist *hl = nodesign_curl(b->has_key ? b->key : NULL, "GET", ckpt_url, NULL);
        rc = objlog_ckpt_fetch(q->store, objlog_materializer_rangemap(q->m), url, hl,
                               tls_ca_file(q->tls), p, 0,
                               boot_progress, b, &b->stop, &applied, err, sizeof(err));
        curl_slist_free_all(hl);
        objlog_materializer_release(q->m, p);
    }
    int64_t took = boot_mono_ms() - t0;
    pthread_mutex_lock(&b->mu);
    objlog_ckpt_progress pr = b->pr;
    b->cur_p = -1;
    if (rc == 0) {
        b->ok++;
        b->bytes_total += pr.bytes;
        b->rows_total += pr.rows;
    } else {
        b->failed++;
    }
    pthread_mutex_unlock(&b->mu);
    if (rc == 0)
        objlog_logf(OBJLOG_LEVEL_INFO, "bootstrap",
                    "partition %d: %" PRIu64 " rows, %.1f MB from %s in %lld ms (%.0f rows/s); "
                    "applying the log from offset %" PRId64, (int)p, pr.rows,
                    (double)pr.bytes / 1e6, url, (long long)took,
                    took > 0 ? (double)pr.rows * 1000.0 / (double)took : 0.0, applied);
    else
        objlog_logf(OBJLOG_LEVEL_WARNING, "bootstrap",
                    "partition %d: copy from %s failed after %lld ms: %s; offered again at "
                    "the next refresh", (int)p, url, (long long)took, err);
}

/* Imports the range the RangeIn w waits for from the node at url. */
static void boot_range_run(bootstrap *b, objlog_range_wait *w, const char *url) {
    objlog_query *q = b->q;
    char err[512], ckpt_url[1200];
    int64_t applied = 0, t0 = boot_job_begin(b, w->partition, url);
    snprintf(ckpt_url, sizeof(ckpt_url), "%s/v1/partitions/%d/handoffs/%" PRId64 "/checkpoint",
             url, (int)w->from, w->from_offset);
    objlog_ckpt_import *im = objlog_ckpt_import_handoff_new(
        q->store, w->from, w->from_offset, w->epoch, w->start, w->sn, w->end, w->en, err,
        sizeof(err));
    int rc = -1;
    if (im) {
        struct curl_slist *hl = nodesign_curl(b->has_key ? b->key : NULL, "GET", ckpt_url, NULL);
        rc = objlog_ckpt_fetch_into(im, ckpt_url, hl, tls_ca_file(q->tls), 0, boot_progress, b,
                                    &b->stop, &applied, err, sizeof(err));
        curl_slist_free_all(hl);
    }
    int64_t took = boot_mono_ms() - t0;
    pthread_mutex_lock(&b->mu);
    objlog_ckpt_progress pr = b->pr;
    b->cur_p = -1;
    if (rc == 0) {
        b->rok++;
        b->rbytes += pr.bytes;
        b->rrows += pr.rows;
        b->rms += (uint64_t)took;
    } else {
        b->rfailed++;
    }
    snprintf(b->range_failed_url, sizeof(b->range_failed_url), "%s", rc == 0 ? "" : url);
    pthread_mutex_unlock(&b->mu);
    if (rc == 0)
        objlog_logf(OBJLOG_LEVEL_INFO, "ranges",
                    "partition %d: imported the range partition %d gave away at offset %"
                    PRId64 " from %s: %" PRIu64 " rows, %.1f MB in %lld ms; its RangeIn at %"
                    PRId64 " applies", (int)w->partition, (int)w->from, w->from_offset, url,
                    pr.rows, (double)pr.bytes / 1e6, (long long)took, w->offset);
    else /* offered again five times a second while it waits: said now and then */
        objlog_logf_limited(&b->range_log, OBJLOG_LEVEL_WARNING, "ranges",
                    "partition %d: importing the range partition %d gave away at offset %"
                    PRId64 " from %s failed after %lld ms: %s; tried again at the next refresh",
                    (int)w->partition, (int)w->from, w->from_offset, url, (long long)took, err);
}

static void *boot_main(void *arg) {
    bootstrap *b = arg;
    pthread_mutex_lock(&b->mu);
    while (!atomic_load(&b->stop)) {
        if (b->next_p < 0) {
            pthread_cond_wait(&b->cv, &b->mu);
            continue;
        }
        int32_t p = b->next_p;
        char url[CLUSTER_URL_MAX];
        snprintf(url, sizeof(url), "%s", b->next_url);
        int range = b->next_range;
        objlog_range_wait w = b->next_rw;
        memset(&b->next_rw, 0, sizeof(b->next_rw));
        b->next_p = -1;
        b->next_range = 0;
        pthread_mutex_unlock(&b->mu);
        if (range)
            boot_range_run(b, &w, url);
        else
            boot_run(b, p, url);
        objlog_range_wait_free(&w);
        pthread_mutex_lock(&b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

bootstrap *bootstrap_new(objlog_query *q, const uint8_t *key, char *errstr,
                         size_t errstr_size) {
    bootstrap *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    b->q = q;
    if (key) {
        memcpy(b->key, key, NODEAUTH_KEY_LEN);
        b->has_key = 1;
    }
    b->next_p = b->cur_p = -1;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    if (pthread_create(&b->thread, NULL, boot_main, b) != 0) {
        snprintf(errstr, errstr_size, "bootstrap thread: %s", strerror(errno));
        bootstrap_destroy(b);
        return NULL;
    }
    b->started = 1;
    return b;
}

void bootstrap_destroy(bootstrap *b) {
    if (!b)
        return;
    if (b->started) {
        pthread_mutex_lock(&b->mu);
        atomic_store(&b->stop, 1);
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
        pthread_join(b->thread, NULL);
    }
    objlog_range_wait_free(&b->next_rw);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    OPENSSL_cleanse(b->key, sizeof(b->key));
    free(b);
}

int bootstrap_busy(bootstrap *b, int32_t p) {
    pthread_mutex_lock(&b->mu);
    int busy = b->cur_p == p || b->next_p == p;
    pthread_mutex_unlock(&b->mu);
    return busy;
}

int bootstrap_idle(bootstrap *b) {
    pthread_mutex_lock(&b->mu);
    int idle = b->cur_p < 0 && b->next_p < 0;
    pthread_mutex_unlock(&b->mu);
    return idle;
}

int bootstrap_offer(bootstrap *b, int32_t p, const char *url) {
    pthread_mutex_lock(&b->mu);
    int taken = b->cur_p < 0 && b->next_p < 0;
    if (taken) {
        b->next_p = p;
        snprintf(b->next_url, sizeof(b->next_url), "%s", url);
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
    return taken;
}

int bootstrap_offer_range(bootstrap *b, const objlog_range_wait *w, const char *url) {
    uint8_t *start = malloc(w->sn ? w->sn : 1), *end = malloc(w->en ? w->en : 1);
    pthread_mutex_lock(&b->mu);
    int taken = start && end && b->cur_p < 0 && b->next_p < 0;
    if (taken) {
        b->next_p = w->partition;
        b->next_range = 1;
        b->next_rw = *w;
        b->next_rw.start = memcpy(start, w->start, w->sn);
        b->next_rw.end = memcpy(end, w->end, w->en);
        snprintf(b->next_url, sizeof(b->next_url), "%s", url);
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
    if (!taken) {
        free(start);
        free(end);
    }
    return taken;
}

static void boot_counter(FILE *f, const char *name, const char *help, uint64_t v) {
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", name, help, name, name, v);
}

static void boot_results(FILE *f, const char *name, const char *help, uint64_t ok,
                         uint64_t failed) {
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s{result=\"ok\"} %" PRIu64 "\n"
               "%s{result=\"failed\"} %" PRIu64 "\n", name, help, name, name, ok, name, failed);
}

int bootstrap_range_failed(bootstrap *b, const char *url) {
    pthread_mutex_lock(&b->mu);
    int failed = strcmp(b->range_failed_url, url) == 0;
    pthread_mutex_unlock(&b->mu);
    return failed;
}

void bootstrap_metrics(FILE *f, bootstrap *b) {
    pthread_mutex_lock(&b->mu);
    boot_results(f, "objlog_bootstraps_total",
                 "Partitions copied from a peer's checkpoint, by result.", b->ok, b->failed);
    boot_counter(f, "objlog_bootstrap_bytes_total",
                 "Checkpoint bytes imported by finished bootstraps.", b->bytes_total);
    boot_counter(f, "objlog_bootstrap_rows_total", "Rows imported by finished bootstraps.",
                 b->rows_total);
    fprintf(f, "# HELP objlog_bootstrap_partition The partition being copied now, -1 none.\n"
               "# TYPE objlog_bootstrap_partition gauge\nobjlog_bootstrap_partition %d\n",
            (int)b->cur_p);
    fprintf(f, "# HELP objlog_bootstrap_progress_bytes Bytes of the running copy so far, "
               "and its size (0 unknown).\n# TYPE objlog_bootstrap_progress_bytes gauge\n"
               "objlog_bootstrap_progress_bytes{of=\"done\"} %" PRIu64 "\n"
               "objlog_bootstrap_progress_bytes{of=\"total\"} %" PRIu64 "\n",
            b->cur_p >= 0 ? b->pr.bytes : 0, b->cur_p >= 0 ? b->pr.total_bytes : 0);
    boot_results(f, "objlog_range_imports_total",
                 "Ranges imported from a peer for a RangeIn (a handoff between nodes), by "
                 "result.", b->rok, b->rfailed);
    boot_counter(f, "objlog_range_import_rows_total", "Rows of the ranges imported.", b->rrows);
    boot_counter(f, "objlog_range_import_bytes_total", "Stream bytes of the ranges imported.",
                 b->rbytes);
    fprintf(f, "# HELP objlog_range_import_seconds_total Time the range imports took.\n"
               "# TYPE objlog_range_import_seconds_total counter\n"
               "objlog_range_import_seconds_total %.3f\n", (double)b->rms / 1000.0);
    pthread_mutex_unlock(&b->mu);
}
