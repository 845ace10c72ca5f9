/* blobgc.c: the blob directory's garbage collector (blobgc.h): one
 * thread that reads the blob-release topic and runs collection rounds
 * (blob.h's rule) over the candidates the records name, with the view as
 * the judge: the fence (every partition applied up to the log end offset
 * read under the round's lock) and objlog_store_blob_referenced.
 *
 * Invariant: a record's position is committed only past records whose
 * candidates are settled; a candidate held for another try (a write in
 * flight names it, a check failed, the fence was not met) keeps its
 * partition's commit at its record, so a crash or restart reads it again.
 * A delete happens only inside blob_collect, so only with the round's
 * lock held and its fence met. */
#define _GNU_SOURCE
#include "blobgc.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "kafkaconf.h"
#include "objlog_logger.h"
#include "watermark.h"

#define BLOBGC_GROUP "objlog.blobgc"
#define BLOBGC_POLL_MS 100
#define BLOBGC_ROUND_MAX 1024      /* candidates per round: bounds the lock's hold */
#define BLOBGC_WAITING_MAX 8192    /* held candidates; past it, reading pauses */
#define BLOBGC_RETRY_MS 1000       /* a held candidate's first retry, doubling */
#define BLOBGC_RETRY_MAX_MS 60000
#define BLOBGC_CLOSE_MS 3000       /* the consumer's close, at most */
#define BLOBGC_END_OFFSETS_MS 2000 /* one ListOffsets round trip, at most */

typedef struct gc_cand {
    char id[BLOB_ID_LEN + 1];
    int32_t part;                /* the record's, and its offset: the commit */
    int64_t off;                 /* stays at or below it while held */
    int64_t due_ms;
    int tries;
} gc_cand;

struct blobgc {
    blobgc_conf conf;
    char *brokers, *topic;
    rd_kafka_t *rk;
    pthread_t thread;
    atomic_int stop;
    /* the thread's own */
    gc_cand *cands;
    size_t ncands, cap;
    int64_t *next;               /* per release-topic partition: next offset; -1 none */
    int64_t *committed;          /* what was last committed; -1 none */
    int nparts;
    int paused;
    int64_t last_round_ms, commit_due;
    objlog_logger_limit warn_limit;
    /* counters (any thread) */
    atomic_uint_fast64_t candidates, deleted, deleted_bytes, referenced, pending, absent,
        errors, rounds, waiting;
    pthread_mutex_t mu;          /* last_error */
    char last_error[512];
};

static int64_t gc_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Kept for the status and logged (at most once a minute); the caller
 * counts. */
static void gc_error(blobgc *g, const char *what, const char *why) {
    pthread_mutex_lock(&g->mu);
    snprintf(g->last_error, sizeof(g->last_error), "%.100s: %.400s", what, why);
    pthread_mutex_unlock(&g->mu);
    objlog_logf_limited(&g->warn_limit, OBJLOG_LEVEL_WARNING, "blobgc", "%s: %s (retried)",
                        what, why);
}

/* ------------------------------------------------ the fence and the check */

/* Every partition applied up to the log end offset read now: each write
 * produced before the call is in the view (fence.c's strong read, as a
 * blocking wait). Sliced so that a stop is seen within BLOBGC_POLL_MS. */
static int gc_fence(void *arg, char *errstr, size_t es) {
    blobgc *g = arg;
    int n = objlog_materializer_partitions(g->conf.m), rc = -1;
    int64_t until = gc_mono_ms() + g->conf.fence_timeout_ms;
    int32_t *ps = malloc(sizeof(*ps) * (size_t)(n + 1)), failed = -1;
    int64_t *ends = malloc(sizeof(*ends) * (size_t)(n + 1));
    if (!ps || !ends) {
        snprintf(errstr, es, "out of memory");
        goto out;
    }
    for (int p = 0; p < n; p++) {
        rd_kafka_resp_err_t le;
        ps[p] = p;
        /* The refresher fetches every second: stale means unreachable. */
        int64_t age = wm_health(g->conf.wm, p, &le);
        if (age < 0 || age > WM_STALE_MS) {
            snprintf(errstr, es, "the log's end offset of partition %d is not known (%s)", p,
                     le ? rd_kafka_err2str(le) : "not fetched lately");
            goto out;
        }
    }
    rd_kafka_resp_err_t err = wm_end_offsets(g->conf.wm, ps, n, BLOBGC_END_OFFSETS_MS, ends,
                                             &failed);
    if (err) {
        snprintf(errstr, es, "end offset of partition %d: %s", failed, rd_kafka_err2str(err));
        goto out;
    }
    for (int i = 0; i < n; i++) {
        while (objlog_materializer_applied(g->conf.m, ps[i]) < ends[i]) {
            int64_t left = until - gc_mono_ms();
            if (atomic_load(&g->stop)) {
                snprintf(errstr, es, "stopping");
                goto out;
            }
            if (left <= 0) {
                snprintf(errstr, es, "partition %d did not apply up to offset %lld within %d "
                         "ms", ps[i], (long long)ends[i], g->conf.fence_timeout_ms);
                goto out;
            }
            int w = objlog_materializer_wait_applied(g->conf.m, ps[i], ends[i] - 1,
                                                     left < BLOBGC_POLL_MS ? (int)left
                                                                           : BLOBGC_POLL_MS);
            if (w < 0) {
                char why[256];
                snprintf(errstr, es, "partition %d is not applied here: %s", ps[i],
                         objlog_materializer_partition_error(g->conf.m, ps[i], why,
                                                             sizeof(why))
                             ? why
                             : "stopping");
                goto out;
            }
        }
    }
    rc = 0;
out:
    free(ps);
    free(ends);
    return rc;
}

/* A node not in a cluster answers for every partition. */
static int gc_keep_all(void *arg, int32_t partition) {
    (void)arg;
    (void)partition;
    return 1;
}

static int gc_referenced(void *arg, const char *id, char *errstr, size_t es) {
    blobgc *g = arg;
    return objlog_store_blob_referenced(g->conf.store, objlog_materializer_rangemap(g->conf.m),
                                        gc_keep_all, NULL, id, errstr, es);
}

/* ---------------------------------------------------------- candidates */

/* The record's blob id: its key, else the value's "blobId". 0 or -1. */
static int gc_record_id(const rd_kafka_message_t *m, char *id) {
    if (m->key && m->key_len == BLOB_ID_LEN) {
        memcpy(id, m->key, BLOB_ID_LEN);
        id[BLOB_ID_LEN] = '\0';
        if (blob_id_valid(id))
            return 0;
    }
    json_t *v = m->payload ? json_loadb(m->payload, m->len, 0, NULL) : NULL;
    const char *s = json_string_value(json_object_get(v, "blobId"));
    int rc = blob_id_valid(s) ? 0 : -1;
    if (rc == 0)
        memcpy(id, s, BLOB_ID_LEN + 1);
    json_decref(v);
    return rc;
}

static int gc_track(blobgc *g, int32_t part) {
    if (part < g->nparts)
        return 0;
    int n = part + 1;
    int64_t *next = realloc(g->next, sizeof(*next) * (size_t)n);
    if (next)
        g->next = next;
    int64_t *com = next ? realloc(g->committed, sizeof(*com) * (size_t)n) : NULL;
    if (!com)
        return -1;
    g->committed = com;
    for (int p = g->nparts; p < n; p++)
        g->next[p] = g->committed[p] = -1;
    g->nparts = n;
    return 0;
}

/* A record taken: its id becomes a candidate (one per id, at the earliest
 * record naming it, which is where its partition's commit must stop). */
static void gc_take(blobgc *g, const rd_kafka_message_t *m) {
    char id[BLOB_ID_LEN + 1];
    if (gc_track(g, m->partition) < 0)
        return; /* not moved: read again after a restart */
    g->next[m->partition] = m->offset + 1;
    if (gc_record_id(m, id) < 0) {
        objlog_logf(OBJLOG_LEVEL_DEBUG, "blobgc", "%s [%d] @%lld: no blob id, skipped",
                    g->topic, (int)m->partition, (long long)m->offset);
        return;
    }
    atomic_fetch_add(&g->candidates, 1);
    /* Held already for an earlier record of this partition: that one
     * holds the commit. (Another partition's record is a candidate of its
     * own, as that partition's commit must wait too.) */
    for (size_t i = 0; i < g->ncands; i++)
        if (g->cands[i].part == m->partition && memcmp(g->cands[i].id, id, BLOB_ID_LEN) == 0)
            return;
    if (g->ncands == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 256;
        gc_cand *c = realloc(g->cands, sizeof(*c) * cap);
        if (!c) {
            g->next[m->partition] = m->offset; /* read it again later */
            return;
        }
        g->cands = c;
        g->cap = cap;
    }
    gc_cand *c = &g->cands[g->ncands++];
    memcpy(c->id, id, sizeof(c->id));
    c->part = m->partition;
    c->off = m->offset;
    c->due_ms = 0;
    c->tries = 0;
    atomic_store(&g->waiting, g->ncands);
}

static void gc_retry_later(gc_cand *c, int64_t now) {
    int64_t d = (int64_t)BLOBGC_RETRY_MS << (c->tries < 6 ? c->tries : 6);
    c->due_ms = now + (d < BLOBGC_RETRY_MAX_MS ? d : BLOBGC_RETRY_MAX_MS);
    c->tries++;
}

/* ---------------------------------------------------------------- rounds */

/* One round over the candidates due (at most BLOBGC_ROUND_MAX). A fence
 * is first met without the lock, so the locked one (which holds every
 * keep of the store) is a round trip, not a catch-up. */
static void gc_round(blobgc *g, int64_t now) {
    const char *ids[BLOBGC_ROUND_MAX];
    size_t at[BLOBGC_ROUND_MAX], n = 0;
    for (size_t i = 0; i < g->ncands && n < BLOBGC_ROUND_MAX; i++)
        if (g->cands[i].due_ms <= now) {
            at[n] = i;
            ids[n++] = g->cands[i].id;
        }
    if (!n)
        return;
    g->last_round_ms = now;
    char err[512];
    blob_gc_fate fate[BLOBGC_ROUND_MAX];
    uint64_t freed = 0;
    blob_gc_check chk = {.fence = gc_fence, .referenced = gc_referenced, .arg = g};
    if (gc_fence(g, err, sizeof(err)) < 0 ||
        blob_collect(g->conf.bs, ids, n, &chk, fate, &freed, err, sizeof(err)) < 0) {
        if (!atomic_load(&g->stop)) {
            atomic_fetch_add(&g->errors, 1);
            gc_error(g, "collection round (nothing deleted)", err);
        }
        for (size_t k = 0; k < n; k++)
            gc_retry_later(&g->cands[at[k]], now);
        return;
    }
    atomic_fetch_add(&g->rounds, 1);
    if (*err) /* counted below, by candidate */
        gc_error(g, "collection round", err);
    size_t nd = 0;
    for (size_t k = 0; k < n; k++) {
        gc_cand *c = &g->cands[at[k]];
        switch (fate[k]) {
        case BLOB_GC_DELETED: atomic_fetch_add(&g->deleted, 1); nd++; break;
        case BLOB_GC_ABSENT: atomic_fetch_add(&g->absent, 1); break;
        case BLOB_GC_REFERENCED: atomic_fetch_add(&g->referenced, 1); break;
        case BLOB_GC_PENDING: atomic_fetch_add(&g->pending, 1); break;
        case BLOB_GC_ERROR: atomic_fetch_add(&g->errors, 1); break;
        }
        if (fate[k] == BLOB_GC_PENDING || fate[k] == BLOB_GC_ERROR)
            gc_retry_later(c, now);
        else
            c->id[0] = '\0'; /* settled: removed below */
    }
    atomic_fetch_add(&g->deleted_bytes, freed);
    size_t w = 0;
    for (size_t i = 0; i < g->ncands; i++)
        if (g->cands[i].id[0])
            g->cands[w++] = g->cands[i];
    g->ncands = w;
    atomic_store(&g->waiting, w);
    if (nd)
        objlog_logf(OBJLOG_LEVEL_DEBUG, "blobgc", "%s: %zu blobs deleted (%llu bytes), %zu "
                    "held", blobstore_dir(g->conf.bs), nd, (unsigned long long)freed, w);
}

/* Commits each partition's position: the next record, or the earliest
 * record of a candidate still held there. Asynchronous: a commit lost is
 * records read twice, and a candidate read twice is harmless. */
static void gc_commit(blobgc *g) {
    rd_kafka_topic_partition_list_t *l = NULL;
    for (int p = 0; p < g->nparts; p++) {
        int64_t pos = g->next[p];
        for (size_t i = 0; pos >= 0 && i < g->ncands; i++)
            if (g->cands[i].part == p && g->cands[i].off < pos)
                pos = g->cands[i].off;
        if (pos < 0 || pos == g->committed[p])
            continue;
        if (!l)
            l = rd_kafka_topic_partition_list_new(g->nparts);
        rd_kafka_topic_partition_list_add(l, g->topic, p)->offset = pos;
        g->committed[p] = pos;
    }
    if (l) {
        rd_kafka_commit(g->rk, l, 1);
        rd_kafka_topic_partition_list_destroy(l);
    }
}

/* Past BLOBGC_WAITING_MAX held candidates reading pauses until half are
 * settled (the thread keeps polling, so it stays in its group). */
static void gc_flow(blobgc *g) {
    int want = g->ncands >= (g->paused ? BLOBGC_WAITING_MAX / 2 : BLOBGC_WAITING_MAX);
    if (!want && !g->paused)
        return;
    rd_kafka_topic_partition_list_t *a = NULL;
    if (rd_kafka_assignment(g->rk, &a) || !a)
        return;
    if (want) /* again each time: a rebalance's new assignment is not paused */
        rd_kafka_pause_partitions(g->rk, a);
    else
        rd_kafka_resume_partitions(g->rk, a);
    g->paused = want;
    rd_kafka_topic_partition_list_destroy(a);
}

/* ---------------------------------------------------------- the thread */

static int gc_quiet_error(rd_kafka_resp_err_t e) {
    return e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
           e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC || e == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
           e == RD_KAFKA_RESP_ERR__PARTITION_EOF;
}

static void gc_poll(blobgc *g) {
    int timeout = BLOBGC_POLL_MS;
    for (int k = 0; k < 1000 && !atomic_load(&g->stop); k++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(g->rk, timeout);
        if (!m)
            return;
        timeout = 0; /* take what is there, then go on */
        if (!m->err)
            gc_take(g, m);
        else if (gc_quiet_error(m->err)) /* the notifier creates it on its first record */
            objlog_logf(OBJLOG_LEVEL_DEBUG, "blobgc", "%s: %s (waiting)", g->topic,
                        rd_kafka_message_errstr(m));
        else
            objlog_logf_limited(&g->warn_limit, OBJLOG_LEVEL_WARNING, "blobgc", "%s: %s",
                                g->topic, rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
    }
}

static void *gc_main(void *arg) {
    blobgc *g = arg;
    while (!atomic_load(&g->stop)) {
        gc_flow(g);
        gc_poll(g);
        int64_t now = gc_mono_ms();
        if (g->ncands && now - g->last_round_ms >= g->conf.round_interval_ms) {
            gc_round(g, now);
            gc_commit(g);
            g->commit_due = now + g->conf.round_interval_ms;
        } else if (now >= g->commit_due) { /* records of no candidate move it too */
            gc_commit(g);
            g->commit_due = now + g->conf.round_interval_ms;
        }
    }
    return NULL;
}

/* Closes the consumer within BLOBGC_CLOSE_MS (with the brokers gone a
 * plain close waits for its requests to time out; materializer.c does the
 * same). The group's commits are only positions: a close cut short
 * loses none that the async commits did not already send. */
static void gc_close(rd_kafka_t *rk) {
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_error_t *e = rd_kafka_consumer_close_queue(rk, q);
    int64_t until = gc_mono_ms() + BLOBGC_CLOSE_MS;
    while (!e && !rd_kafka_consumer_closed(rk) && gc_mono_ms() < until) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 100);
        if (ev)
            rd_kafka_event_destroy(ev);
    }
    int closed = !e && rd_kafka_consumer_closed(rk);
    if (e)
        rd_kafka_error_destroy(e);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy_flags(rk, closed ? 0 : RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
}

static rd_kafka_t *gc_consumer(blobgc *g, char *errstr, size_t es) {
    char tmp[256];
    rd_kafka_conf_t *c = objlog_kafka_conf_new(g->brokers, errstr, es);
    if (!c)
        return NULL;
    /* earliest: the records written before the group first committed;
     * the topic's metadata often enough to find it soon once created. */
    if (rd_kafka_conf_set(c, "group.id", BLOBGC_GROUP, tmp, sizeof(tmp)) ||
        rd_kafka_conf_set(c, "isolation.level", "read_committed", tmp, sizeof(tmp)) ||
        rd_kafka_conf_set(c, "enable.auto.commit", "false", tmp, sizeof(tmp)) ||
        rd_kafka_conf_set(c, "auto.offset.reset", "earliest", tmp, sizeof(tmp)) ||
        rd_kafka_conf_set(c, "topic.metadata.refresh.interval.ms", "2000", tmp,
                          sizeof(tmp)) ||
        rd_kafka_conf_set(c, "reconnect.backoff.max.ms", "1000", tmp, sizeof(tmp))) {
        snprintf(errstr, es, "blob collector: %s", tmp);
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(c, objlog_logger_rdkafka);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, tmp, sizeof(tmp));
    if (!rk) {
        snprintf(errstr, es, "blob collector: %s", tmp);
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, g->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        snprintf(errstr, es, "blob collector: subscribe to %s: %s", g->topic,
                 rd_kafka_err2str(err));
        rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        return NULL;
    }
    return rk;
}

static void gc_free(blobgc *g) {
    free(g->cands);
    free(g->next);
    free(g->committed);
    free(g->brokers);
    free(g->topic);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

blobgc *blobgc_new(const blobgc_conf *c, char *errstr, size_t errstr_size) {
    if (!c->bs || blobstore_remote(c->bs)) {
        snprintf(errstr, errstr_size, "blob collector: only a local --blob-dir is collected");
        return NULL;
    }
    blobgc *g = calloc(1, sizeof(*g));
    if (!g) {
        snprintf(errstr, errstr_size, "blob collector: out of memory");
        return NULL;
    }
    g->conf = *c;
    if (g->conf.round_interval_ms <= 0)
        g->conf.round_interval_ms = 500;
    if (g->conf.fence_timeout_ms <= 0)
        g->conf.fence_timeout_ms = 10000;
    pthread_mutex_init(&g->mu, NULL);
    g->warn_limit.interval_ms = 60000;
    g->brokers = strdup(c->brokers);
    g->topic = strdup(c->topic);
    if (!g->brokers || !g->topic) {
        snprintf(errstr, errstr_size, "blob collector: out of memory");
        gc_free(g);
        return NULL;
    }
    if (!(g->rk = gc_consumer(g, errstr, errstr_size))) {
        gc_free(g);
        return NULL;
    }
    if (pthread_create(&g->thread, NULL, gc_main, g) != 0) {
        snprintf(errstr, errstr_size, "blob collector: pthread_create: %s", strerror(errno));
        rd_kafka_destroy_flags(g->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        gc_free(g);
        return NULL;
    }
    objlog_logf(OBJLOG_LEVEL_INFO, "blobgc", "collecting %s: candidates from topic %s (group "
                "%s)", blobstore_dir(c->bs), g->topic, BLOBGC_GROUP);
    return g;
}

void blobgc_destroy(blobgc *g) {
    if (!g)
        return;
    atomic_store(&g->stop, 1);
    pthread_join(g->thread, NULL);
    gc_close(g->rk);
    gc_free(g);
}

/* ---------------------------------------------------------- reporting */

void blobgc_totals_get(blobgc *g, blobgc_totals *t) {
    *t = (blobgc_totals){
        .candidates = atomic_load(&g->candidates), .deleted = atomic_load(&g->deleted),
        .deleted_bytes = atomic_load(&g->deleted_bytes),
        .referenced = atomic_load(&g->referenced), .pending = atomic_load(&g->pending),
        .absent = atomic_load(&g->absent), .errors = atomic_load(&g->errors),
        .rounds = atomic_load(&g->rounds), .waiting = atomic_load(&g->waiting)};
}

json_t *blobgc_status_json(blobgc *g) {
    blobgc_totals t;
    char last[512];
    blobgc_totals_get(g, &t);
    pthread_mutex_lock(&g->mu);
    snprintf(last, sizeof(last), "%s", g->last_error);
    pthread_mutex_unlock(&g->mu);
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "topic",
                     g->topic, "candidates", (json_int_t)t.candidates, "deleted",
                     (json_int_t)t.deleted, "deleted_bytes", (json_int_t)t.deleted_bytes,
                     "referenced", (json_int_t)t.referenced, "pending", (json_int_t)t.pending,
                     "absent", (json_int_t)t.absent, "errors", (json_int_t)t.errors, "rounds",
                     (json_int_t)t.rounds, "waiting", (json_int_t)t.waiting, "last_error",
                     last);
}

void blobgc_metrics(FILE *f, blobgc *g) {
    if (!g)
        return;
    blobgc_totals t;
    blobgc_totals_get(g, &t);
    fprintf(f,
            "# HELP objlog_blobgc_candidates_total Blob-release records taken by the blob "
            "collector.\n"
            "# TYPE objlog_blobgc_candidates_total counter\n"
            "objlog_blobgc_candidates_total %llu\n"
            "# HELP objlog_blobgc_deleted_total Blob files the collector deleted.\n"
            "# TYPE objlog_blobgc_deleted_total counter\n"
            "objlog_blobgc_deleted_total %llu\n"
            "# HELP objlog_blobgc_deleted_bytes_total Bytes of the blob files deleted.\n"
            "# TYPE objlog_blobgc_deleted_bytes_total counter\n"
            "objlog_blobgc_deleted_bytes_total %llu\n"
            "# HELP objlog_blobgc_skipped_total Candidates a round kept: still referenced, "
            "named by a write in flight (tried again), or not in the store.\n"
            "# TYPE objlog_blobgc_skipped_total counter\n"
            "objlog_blobgc_skipped_total{reason=\"referenced\"} %llu\n"
            "objlog_blobgc_skipped_total{reason=\"pending\"} %llu\n"
            "objlog_blobgc_skipped_total{reason=\"absent\"} %llu\n"
            "# HELP objlog_blobgc_errors_total Checks, deletes and round fences that failed "
            "(tried again).\n"
            "# TYPE objlog_blobgc_errors_total counter\n"
            "objlog_blobgc_errors_total %llu\n"
            "# HELP objlog_blobgc_rounds_total Collection rounds run.\n"
            "# TYPE objlog_blobgc_rounds_total counter\n"
            "objlog_blobgc_rounds_total %llu\n"
            "# HELP objlog_blobgc_waiting Candidates held for another try.\n"
            "# TYPE objlog_blobgc_waiting gauge\n"
            "objlog_blobgc_waiting %llu\n",
            (unsigned long long)t.candidates, (unsigned long long)t.deleted,
            (unsigned long long)t.deleted_bytes, (unsigned long long)t.referenced,
            (unsigned long long)t.pending, (unsigned long long)t.absent,
            (unsigned long long)t.errors, (unsigned long long)t.rounds,
            (unsigned long long)t.waiting);
}
