/* lifecycle.c: the lifecycle worker. One thread per
 * objlogd that, every interval, scans a snapshot of the views for buckets
 * with lifecycle rules, finds what is due (current and noncurrent
 * versions, lone delete markers, incomplete uploads: the rules of
 * materializer/lifecycle.h) on the partitions this node applies as ACTIVE,
 * and appends one Expire event per item through the gateway's producer,
 * pinned to the version (seq) or upload it saw. It then waits for each
 * outcome and counts it. The state machine decides: an item overwritten or
 * a rule changed after the scan is skipped there, never here.
 *
 * Invariants: the worker holds no state that matters for correctness. Due
 * work lives in the durable view: a restart (or a lost Expire) only means
 * the next scan finds the item again, and an Expire that lands twice is
 * LifecycleSkipped the second time. At most LC_INFLIGHT Expire events are
 * outstanding at once, and at most LC_MAX_ITEMS are collected per bucket
 * and pass (the rest wait for the next pass, still counted as due), so a
 * backlog of millions costs bounded memory and a bounded share of the log.
 * Its clock is wall + a test-only offset; the Expire's Kafka timestamp is
 * that clock, so the state machine judges the age at the time the worker
 * judged it (or later). Unless the events topic stamps messages itself
 * (LogAppendTime, what objlogd creates): then the log's clock is the
 * broker's, and an Expire the worker judged due by a clock running ahead
 * of it is NotDue. Each outcome tells how far behind the log's clock was
 * (the Expire's own log time against the worker's clock when it sent it);
 * the worker judges by its clock less that, and stops a pass at the first
 * NotDue, so a skewed clock costs one batch of NotDue events, not one per
 * due item per pass.
 */
#include "core.h"
#include "workers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lifecycle.h"
#include "outcome.h"
#include "producer_event.h"

#define LC_INFLIGHT 256
#define LC_MAX_ITEMS 100000
#define LC_WAIT_MS 500     /* one wait for an outcome; re-checked for stop */
#define LC_BUCKETS_MAX 4096 /* buckets with rules tracked for status */

/* One due item of a pass. */
typedef struct lc_item {
    uint8_t *key;
    size_t key_len;
    char rule_id[OBJLOG_LC_MAX_ID + 1];
    int action;
    uint64_t seq;
    char upload_id[KEYCODEC_VERSION_ID_LEN];
    int64_t due_ms;
    int64_t sent_ms;             /* the worker's uncorrected clock at send */
    /* filled by the producer callback */
    int status;
    int32_t partition;
    int64_t offset;
} lc_item;

struct lc_worker {
    objlog_query *q;
    int interval_ms;
    int64_t clock_offset_ms;
    int max_rate;                /* Expire events per second; 0: unbounded */
    int64_t paced_until_us;      /* max_rate: when the next batch may go */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int stopping;         /* read unlocked by the scan loops */
    int pending;                 /* callbacks not yet run (under mu) */
    lc_status *st;               /* per bucket (under mu) */
    size_t nst;
    atomic_uint_fast64_t expired, skipped, not_due, failed, scans;
    char error[300];             /* the batch's first failure (under mu) */
    /* How far the log's clock ran behind ours at the last outcome (>= 0). */
    atomic_int_fast64_t log_behind_ms;
};

/* Below this, the difference is the log's latency, not a clock skew. */
#define LC_SKEW_MIN_MS 1000

/* Wall + the test offset, as the Expire's Kafka timestamp. */
static int64_t lc_clock_ms(const lc_worker *w) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 +
           (w ? w->clock_offset_ms : 0);
}

int64_t lc_worker_now_ms(const lc_worker *w) {
    return lc_clock_ms(w) - (w ? atomic_load(&w->log_behind_ms) : 0);
}

/* Learns the log's clock from one outcome of an Expire sent at sent_ms. */
static void lc_learn_clock(lc_worker *w, int64_t sent_ms, int64_t log_time_ms) {
    int64_t behind = sent_ms - log_time_ms;
    int64_t was = atomic_exchange(&w->log_behind_ms, behind > LC_SKEW_MIN_MS ? behind : 0);
    if (behind > LC_SKEW_MIN_MS && was <= LC_SKEW_MIN_MS)
        objlog_logf(OBJLOG_LEVEL_WARNING, "lifecycle",
                    "the log's clock runs %lld ms behind this node's lifecycle clock "
                    "(a LogAppendTime topic stamps with the broker's): judging due "
                    "times by the log's", (long long)behind);
}

/* ------------------------------------------------------------- status */

/* The status row of bucket (created); NULL when the table is full. */
static lc_status *lc_status_row(lc_worker *w, const char *bucket) {
    for (size_t i = 0; i < w->nst; i++)
        if (strcmp(w->st[i].bucket, bucket) == 0)
            return &w->st[i];
    if (w->nst == LC_BUCKETS_MAX)
        return NULL;
    lc_status *s = &w->st[w->nst++];
    memset(s, 0, sizeof(*s));
    snprintf(s->bucket, sizeof(s->bucket), "%s", bucket);
    return s;
}

int lc_worker_status(lc_worker *w, const char *bucket, lc_status *out) {
    int found = 0;
    memset(out, 0, sizeof(*out));
    if (!w)
        return 0;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->nst; i++)
        if (strcmp(w->st[i].bucket, bucket) == 0) {
            *out = w->st[i];
            found = 1;
        }
    pthread_mutex_unlock(&w->mu);
    return found;
}

void lc_worker_metrics(FILE *f, lc_worker *w) {
    if (!w)
        return;
    int64_t now = lc_worker_now_ms(w);
    fputs("# HELP objlog_lifecycle_due Items due for expiration and not yet "
          "expired, per bucket (as of the last scan, less what was decided since).\n"
          "# TYPE objlog_lifecycle_due gauge\n", f);
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->nst; i++)
        fprintf(f, "objlog_lifecycle_due{bucket=\"%s\"} %llu\n", w->st[i].bucket,
                (unsigned long long)w->st[i].due);
    fputs("# HELP objlog_lifecycle_oldest_due_age_seconds How long the oldest "
          "due item has been due, per bucket (0: nothing due).\n"
          "# TYPE objlog_lifecycle_oldest_due_age_seconds gauge\n", f);
    for (size_t i = 0; i < w->nst; i++) {
        const lc_status *s = &w->st[i];
        double age = s->due && s->oldest_due_ms ? (double)(now - s->oldest_due_ms) / 1000.0 : 0;
        fprintf(f, "objlog_lifecycle_oldest_due_age_seconds{bucket=\"%s\"} %.3f\n",
                s->bucket, age < 0 ? 0 : age);
    }
    fputs("# HELP objlog_lifecycle_expirations_total Expire events applied with "
          "OK, per bucket.\n# TYPE objlog_lifecycle_expirations_total counter\n", f);
    for (size_t i = 0; i < w->nst; i++)
        fprintf(f, "objlog_lifecycle_expirations_total{bucket=\"%s\"} %llu\n",
                w->st[i].bucket, (unsigned long long)w->st[i].expired);
    pthread_mutex_unlock(&w->mu);
    fprintf(f, "# HELP objlog_lifecycle_outcomes_total Expire events by outcome.\n"
               "# TYPE objlog_lifecycle_outcomes_total counter\n"
               "objlog_lifecycle_outcomes_total{outcome=\"OK\"} %llu\n"
               "objlog_lifecycle_outcomes_total{outcome=\"LifecycleSkipped\"} %llu\n"
               "objlog_lifecycle_outcomes_total{outcome=\"NotDue\"} %llu\n"
               "objlog_lifecycle_outcomes_total{outcome=\"failed\"} %llu\n"
               "# HELP objlog_lifecycle_scans_total Lifecycle scans completed.\n"
               "# TYPE objlog_lifecycle_scans_total counter\n"
               "objlog_lifecycle_scans_total %llu\n",
            (unsigned long long)atomic_load(&w->expired),
            (unsigned long long)atomic_load(&w->skipped),
            (unsigned long long)atomic_load(&w->not_due),
            (unsigned long long)atomic_load(&w->failed),
            (unsigned long long)atomic_load(&w->scans));
}

/* --------------------------------------------------------------- scan */

typedef struct lc_scan {
    lc_worker *w;
    const Objlog__BucketRecord *br;
    int64_t now;
    lc_item *items;
    size_t n, cap;
    uint64_t due;                /* all due, also beyond LC_MAX_ITEMS */
    int64_t oldest_due_ms;
    char err[256];
} lc_scan;

static int lc_add(lc_scan *s, const uint8_t *key, size_t kn, const char *rule,
                  int action, uint64_t seq, const char *upload_id, int64_t due_ms) {
    s->due++;
    if (!s->oldest_due_ms || due_ms < s->oldest_due_ms)
        s->oldest_due_ms = due_ms;
    if (s->n == LC_MAX_ITEMS)
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        lc_item *it = realloc(s->items, cap * sizeof(*it));
        if (!it)
            return -1;
        s->items = it;
        s->cap = cap;
    }
    lc_item *it = &s->items[s->n];
    memset(it, 0, sizeof(*it));
    if (!(it->key = malloc(kn ? kn : 1)))
        return -1;
    memcpy(it->key, key, kn);
    it->key_len = kn;
    snprintf(it->rule_id, sizeof(it->rule_id), "%s", rule);
    it->action = action;
    it->seq = seq;
    snprintf(it->upload_id, sizeof(it->upload_id), "%s", upload_id ? upload_id : "");
    it->due_ms = due_ms;
    s->n++;
    return 0;
}

/* Walk callback: the first enabled rule that has this version due. */
static int lc_scan_version(void *arg, const objlog_lc_version *v) {
    lc_scan *s = arg;
    for (size_t i = 0; i < s->br->n_lifecycle; i++) {
        const Objlog__LifecycleRule *r = s->br->lifecycle[i];
        int64_t due;
        if (!r->enabled)
            continue;
        int act = objlog_lc_version_action(r, v, &due);
        if (act < 0 || due > s->now)
            continue;
        return lc_add(s, v->key, v->key_len, r->id, act, v->rec->seq, NULL, due) < 0 ? -1 : 0;
    }
    return 0;
}

/* 1 if this node applies the partition of route key rk as ACTIVE. */
static int lc_mine(lc_worker *w, const uint8_t *rk, size_t rn) {
    const rangemap *rm = objlog_materializer_rangemap(w->q->m);
    int32_t p = rangemap_partition(rm, rk, rn);
    return objlog_materializer_role(w->q->m, p) == OBJLOG_ROLE_ACTIVE;
}

static int lc_prefix_has(rocksdb_iterator_t *it, const keybuf *pre) {
    if (!rocksdb_iter_valid(it))
        return 0;
    size_t n;
    const char *k = rocksdb_iter_key(it, &n);
    return n >= pre->len && memcmp(k, pre->data, pre->len) == 0;
}

static int lc_scan_versions(lc_scan *s, rocksdb_readoptions_t *ro, const keybuf *pre) {
    objlog_store *st = s->w->q->store;
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(st), ro, objlog_store_cf(st, OBJLOG_CF_VERSIONS));
    int rc = 0;
    rocksdb_iter_seek(it, (const char *)pre->data, pre->len);
    keybuf rk, b, key;
    keybuf_init(&rk);
    keybuf_init(&b);
    keybuf_init(&key);
    while (rc == 0 && !s->w->stopping && lc_prefix_has(it, pre)) {
        size_t n, used;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &n);
        /* A key's first row: its header, or (a key of an Unversioned
         * bucket has none) its one version row. */
        if (!objlog_versions_row_is_header(k, n)) {
            if (n < 8) {
                snprintf(s->err, sizeof(s->err), "bad versions row");
                rc = -1;
                break;
            }
            n -= 8;
        }
        keybuf_reset(&rk);
        keybuf_reset(&b);
        keybuf_reset(&key);
        if (keybuf_append(&rk, k, n) < 0 ||
            keycodec_parse_route_key(k, n, &b, &key, &used) < 0) {
            snprintf(s->err, sizeof(s->err), "bad versions row");
            rc = -1;
            break;
        }
        if (!lc_mine(s->w, rk.data, rk.len)) {
            rocksdb_iter_next(it);
            continue;
        }
        rc = objlog_lc_walk_key(it, rk.data, rk.len, key.data, key.len, lc_scan_version,
                                s, s->err, sizeof(s->err));
    }
    keybuf_free(&rk);
    keybuf_free(&b);
    keybuf_free(&key);
    rocksdb_iter_destroy(it);
    return rc < 0 ? -1 : 0;
}

static int lc_scan_uploads(lc_scan *s, rocksdb_readoptions_t *ro, const keybuf *pre) {
    objlog_store *st = s->w->q->store;
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(st), ro, objlog_store_cf(st, OBJLOG_CF_UPLOADS));
    int rc = 0;
    for (rocksdb_iter_seek(it, (const char *)pre->data, pre->len);
         rc == 0 && !s->w->stopping && lc_prefix_has(it, pre); rocksdb_iter_next(it)) {
        size_t n, vn, rkl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &n);
        if (objlog_uploads_row_kind(k, n, &rkl, NULL, NULL, NULL) != OBJLOG_UPLOADS_ROW_UPLOAD ||
            !lc_mine(s->w, k, rkl))
            continue;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__UploadRecord *u = objlog__upload_record__unpack(NULL, vn, (const uint8_t *)v);
        if (!u) {
            snprintf(s->err, sizeof(s->err), "bad upload record");
            rc = -1;
            break;
        }
        for (size_t i = 0; i < s->br->n_lifecycle; i++) {
            const Objlog__LifecycleRule *r = s->br->lifecycle[i];
            int64_t due;
            if (r->enabled &&
                objlog_lc_upload_action(r, u->key.data, u->key.len, u->initiated_ms, &due) &&
                due <= s->now) {
                rc = lc_add(s, u->key.data, u->key.len, r->id,
                            OBJLOG__EXPIRE_ACTION__EXPIRE_ABORT_UPLOAD, 0, u->upload_id, due);
                break;
            }
        }
        objlog__upload_record__free_unpacked(u, NULL);
    }
    rocksdb_iter_destroy(it);
    return rc;
}

/* ------------------------------------------------------------- issue */

typedef struct lc_cb {
    lc_worker *w;
    lc_item *it;
} lc_cb;

static void lc_logged_cb(const objlog_write_result *res, void *opaque) {
    lc_cb *cb = opaque;
    cb->it->status = res->status;
    cb->it->partition = res->partition;
    cb->it->offset = res->offset;
    pthread_mutex_lock(&cb->w->mu);
    if (res->status != OBJLOG_STATUS_LOGGED && !cb->w->error[0])
        snprintf(cb->w->error, sizeof(cb->w->error), "%s: %.256s",
                 objlog_status_name(res->status), res->error_message);
    cb->w->pending--;
    pthread_cond_broadcast(&cb->w->cv);
    pthread_mutex_unlock(&cb->w->mu);
}

static int lc_send(lc_worker *w, const char *bucket, lc_item *it, lc_cb *cb, int64_t ts) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__Expire ex = OBJLOG__EXPIRE__INIT;
    ex.rule_id = it->rule_id;
    ex.action = (Objlog__ExpireAction)it->action;
    ex.version_seq = it->seq;
    ex.upload_id = it->upload_id;
    ev.bucket = (char *)bucket;
    ev.key.data = it->key;
    ev.key.len = it->key_len;
    ev.op_case = OBJLOG__EVENT__OP_EXPIRE;
    ev.expire = &ex;
    cb->w = w;
    cb->it = it;
    it->status = OBJLOG_STATUS_UNKNOWN;
    char err[256];
    pthread_mutex_lock(&w->mu);
    w->pending++;
    pthread_mutex_unlock(&w->mu);
    if (producer_write_event(w->q->producer, &ev, ts, NULL, lc_logged_cb, cb, err,
                             sizeof(err)) == 0)
        return 0;
    pthread_mutex_lock(&w->mu);
    w->pending--;
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_lock(&w->mu);
    if (!w->error[0])
        snprintf(w->error, sizeof(w->error), "%.256s", err);
    pthread_mutex_unlock(&w->mu);
    return -1;
}

/* The outcome of one logged Expire, counted (and into *st). */
static void lc_count(lc_worker *w, lc_item *it, const char *bucket) {
    Objlog__OutcomeCode code = OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT;
    int known = 0;
    if (it->status == OBJLOG_STATUS_LOGGED) {
        int rc = 1;
        while (!w->stopping &&
               (rc = objlog_materializer_wait_applied(w->q->m, it->partition, it->offset,
                                                      LC_WAIT_MS)) == 1)
            ;
        Objlog__Outcome *o = NULL;
        char err[256];
        if (rc == 0 && objlog_store_get_outcome(w->q->store, it->partition, it->offset,
                                                &o, err, sizeof(err)) == 1) {
            code = o->code;
            known = 1;
            lc_learn_clock(w, it->sent_ms, o->log_time_ms);
            objlog__outcome__free_unpacked(o, NULL);
        }
    }
    pthread_mutex_lock(&w->mu);
    lc_status *s = lc_status_row(w, bucket);
    if (s && s->due)
        s->due--;
    if (known && code == OBJLOG__OUTCOME_CODE__OUTCOME_OK) {
        atomic_fetch_add(&w->expired, 1);
        if (s)
            s->expired++;
    } else if (known && code == OBJLOG__OUTCOME_CODE__OUTCOME_NOT_DUE) {
        atomic_fetch_add(&w->not_due, 1);
    } else if (known) {
        atomic_fetch_add(&w->skipped, 1);
        if (s)
            s->skipped++;
    } else {
        atomic_fetch_add(&w->failed, 1);
    }
    pthread_mutex_unlock(&w->mu);
}

static int64_t lc_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* --lifecycle-max-rate: waits (woken early by a stop) until a batch of n
 * may go, so the worker's Expire events never pass max_rate a second and
 * a backlog leaves the log and the state machine to foreground writes. */
static void lc_pace(lc_worker *w, size_t n) {
    if (w->max_rate <= 0)
        return;
    int64_t now = lc_mono_us();
    if (w->paced_until_us < now)
        w->paced_until_us = now;
    int64_t wait_us = w->paced_until_us - now;
    w->paced_until_us += (int64_t)n * 1000000 / w->max_rate;
    if (wait_us <= 0)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_us / 1000000;
    until.tv_nsec += (long)(wait_us % 1000000) * 1000;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->stopping && pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&w->mu);
}

/* Issues the pass's items LC_INFLIGHT at a time, each batch logged then
 * awaited. A batch with a NotDue outcome ends the pass for the bucket: the
 * log's clock is behind ours (lc_learn_clock), and the next scan judges
 * the rest by it. So does a batch with an Expire the log refused (brokers
 * down, a timestamp the topic rejects): the next scan tries again, and one
 * warning per pass says why. */
static void lc_issue(lc_worker *w, const char *bucket, lc_scan *s) {
    lc_cb cbs[LC_INFLIGHT];
    for (size_t from = 0; from < s->n && !w->stopping; from += LC_INFLIGHT) {
        size_t to = from + LC_INFLIGHT < s->n ? from + LC_INFLIGHT : s->n;
        lc_pace(w, to - from);
        if (w->stopping)
            break;
        int64_t ts = lc_clock_ms(w);
        pthread_mutex_lock(&w->mu);
        w->error[0] = '\0';
        pthread_mutex_unlock(&w->mu);
        for (size_t i = from; i < to; i++) {
            s->items[i].sent_ms = ts;
            if (lc_send(w, bucket, &s->items[i], &cbs[i - from], ts) < 0)
                s->items[i].status = OBJLOG_STATUS_UNKNOWN;
        }
        pthread_mutex_lock(&w->mu);
        while (w->pending > 0)
            pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
        uint64_t not_due = atomic_load(&w->not_due), failed = atomic_load(&w->failed);
        for (size_t i = from; i < to; i++)
            lc_count(w, &s->items[i], bucket);
        if (atomic_load(&w->failed) != failed) {
            pthread_mutex_lock(&w->mu);
            objlog_logf(OBJLOG_LEVEL_WARNING, "lifecycle",
                        "Expire events of %s failed (%s): retried at the next scan", bucket,
                        w->error[0] ? w->error : "no outcome");
            pthread_mutex_unlock(&w->mu);
            break;
        }
        if (atomic_load(&w->not_due) != not_due)
            break;
    }
}

/* --------------------------------------------------------------- pass */

static void lc_scan_free(lc_scan *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->items[i].key);
    free(s->items);
}

/* Scans bucket br on a snapshot of its own, released before the Expire
 * events go: a snapshot held while they apply would keep every version
 * and tombstone they make from compaction until the pass ends. */
static void lc_bucket_pass(lc_worker *w, const Objlog__BucketRecord *br) {
    lc_scan s;
    memset(&s, 0, sizeof(s));
    s.w = w;
    s.br = br;
    s.now = lc_worker_now_ms(w);
    rocksdb_t *db = objlog_store_db(w->q->store);
    const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(db);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(ro, snap);
    keybuf pre;
    keybuf_init(&pre);
    int rc = keycodec_bucket_part(&pre, br->name, strlen(br->name));
    if (rc == 0)
        rc = lc_scan_versions(&s, ro, &pre);
    if (rc == 0)
        rc = lc_scan_uploads(&s, ro, &pre);
    keybuf_free(&pre);
    rocksdb_readoptions_destroy(ro);
    rocksdb_release_snapshot(db, snap);
    if (rc < 0)
        objlog_logf(OBJLOG_LEVEL_WARNING, "lifecycle", "scan of %s: %s", br->name, s.err);
    pthread_mutex_lock(&w->mu);
    lc_status *st = lc_status_row(w, br->name);
    if (st) {
        st->due = s.due;
        st->oldest_due_ms = s.oldest_due_ms;
        st->rules = (uint32_t)br->n_lifecycle;
        st->last_scan_ms = s.now;
        st->scans++;
    }
    pthread_mutex_unlock(&w->mu);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    lc_issue(w, br->name, &s);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    pthread_mutex_lock(&w->mu);
    if ((st = lc_status_row(w, br->name)) && s.n)
        st->last_rate = secs > 0 ? (double)s.n / secs : 0;
    pthread_mutex_unlock(&w->mu);
    lc_scan_free(&s);
}

/* Forgets the status of buckets that no longer have rules (or exist). */
static void lc_status_keep(lc_worker *w, char **names, size_t n) {
    pthread_mutex_lock(&w->mu);
    size_t j = 0;
    for (size_t i = 0; i < w->nst; i++) {
        int keep = 0;
        for (size_t k = 0; k < n && !keep; k++)
            keep = strcmp(names[k], w->st[i].bucket) == 0;
        if (keep)
            w->st[j++] = w->st[i];
    }
    w->nst = j;
    pthread_mutex_unlock(&w->mu);
}

/* The records of the buckets that have rules into *out (malloc'd), read
 * from one iterator that is gone before any bucket is scanned. How many,
 * or -1 out of memory (nothing kept). */
static long lc_rule_buckets(lc_worker *w, Objlog__BucketRecord ***out) {
    objlog_store *st = w->q->store;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(st), ro,
                                                        objlog_store_cf(st, OBJLOG_CF_BUCKETS));
    Objlog__BucketRecord **v = NULL;
    size_t n = 0, cap = 0;
    long rc = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn, bn;
        int32_t stake;
        const char *key = rocksdb_iter_key(it, &kn);
        if (objlog_bucket_row_kind(key, kn, &bn, &stake) != 0)
            continue; /* a stake's copy: the home record has the rules */
        const char *val = rocksdb_iter_value(it, &vn);
        Objlog__BucketRecord *br = objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)val);
        if (!br || !br->n_lifecycle || !br->name) {
            objlog__bucket_record__free_unpacked(br, NULL);
            continue;
        }
        if (n == cap) {
            Objlog__BucketRecord **g = realloc(v, (cap ? 2 * cap : 16) * sizeof(*v));
            if (!g) {
                objlog__bucket_record__free_unpacked(br, NULL);
                rc = -1;
                break;
            }
            v = g;
            cap = cap ? 2 * cap : 16;
        }
        v[n++] = br;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    if (rc < 0) {
        for (size_t i = 0; i < n; i++)
            objlog__bucket_record__free_unpacked(v[i], NULL);
        free(v);
        return -1;
    }
    *out = v;
    return (long)n;
}

static void lc_pass(lc_worker *w) {
    Objlog__BucketRecord **brs = NULL;
    long n = lc_rule_buckets(w, &brs);
    char **names = n > 0 ? calloc((size_t)n, sizeof(*names)) : NULL;
    for (long i = 0; i < n; i++) {
        if (names)
            names[i] = brs[i]->name;
        if (!w->stopping)
            lc_bucket_pass(w, brs[i]);
    }
    if (!w->stopping && n >= 0 && (names || n == 0))
        lc_status_keep(w, names, (size_t)n);
    for (long i = 0; i < n; i++)
        objlog__bucket_record__free_unpacked(brs[i], NULL);
    free(brs);
    free(names);
    atomic_fetch_add(&w->scans, 1);
}

static void *lc_main(void *arg) {
    lc_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        pthread_mutex_unlock(&w->mu);
        lc_pass(w);
        pthread_mutex_lock(&w->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += w->interval_ms / 1000;
        until.tv_nsec += (long)(w->interval_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!w->stopping &&
               pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

lc_worker *lc_worker_new(objlog_query *q, int interval_ms, int64_t clock_offset_ms,
                         int max_rate, char *errstr, size_t errstr_size) {
    lc_worker *w = calloc(1, sizeof(*w));
    if (!w || !(w->st = calloc(LC_BUCKETS_MAX, sizeof(*w->st)))) {
        free(w);
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    w->q = q;
    w->interval_ms = interval_ms;
    w->clock_offset_ms = clock_offset_ms;
    w->max_rate = max_rate;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (interval_ms > 0) {
        if (pthread_create(&w->thread, NULL, lc_main, w) != 0) {
            snprintf(errstr, errstr_size, "lifecycle worker: cannot start a thread");
            lc_worker_destroy(w);
            return NULL;
        }
        w->started = 1;
    }
    return w;
}

void lc_worker_destroy(lc_worker *w) {
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->started)
        pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->st);
    free(w);
}
