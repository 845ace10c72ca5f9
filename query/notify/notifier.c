/* notifier.c: the change feed's delivery thread (notifier.h). Owns, per
 * events partition this node applies as ACTIVE, the cursor over its feed
 * records and the producer that delivers them; a partition that goes
 * elsewhere loses its producer here, and the node that takes it fences
 * this one and resumes from the committed position (nkafka.h).
 *
 * The notifier's own thread watches the partitions; a partition with a
 * Kafka record to deliver gets a thread of its own (part_main) that
 * delivers until the partition leaves this node.
 *
 * Invariant: the records read are those of applied batches only (a
 * batch's rows are written atomically, in offset order), so a position
 * committed past an offset never skips a record that appears later; a
 * view that a crash rolled back re-applies the same records, which the
 * position already covers. */
#include "notifier.h"

#include "nkafka.h"
#include "nwebhook.h"
#include "nrecord.h"
#include "notify.h"
#include "objlog_logger.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOTIFIER_IDLE_MS 5          /* between passes with nothing to do */
#define NOTIFIER_BACKOFF_MAX_MS 10000
#define NOTIFIER_BACKLOG_EVERY_MS 1000
#define NOTIFIER_BACKLOG_MAX 1000000

/* One events partition. */
typedef struct np {
    nk_part k;
    int64_t cursor;        /* next offset to read (>= k.pos once open) */
    int64_t seen_applied;  /* applied offset when last found idle */
    int64_t retry_at_ms;
    int backoff_ms;
    uint64_t backlog;      /* Kafka records >= k.pos, counted now and then */
    int64_t oldest_ms;
    int64_t backlog_at_ms;
    /* What status readers see (under the notifier's mu): k as of the end
     * of the partition's last pass. */
    int shown_open;
    int64_t shown_pos;
    char shown_error[256];
    /* Its delivery thread, once it has a producer: each partition commits
     * its own transactions, so one slow commit delays no other partition.
     * 0 none, 1 running, 2 ended (to be joined); under the notifier's mu. */
    pthread_t thread;
    int thread_state;
    struct notifier *n;
} np;

struct notifier {
    objlog_store *store;
    objlog_materializer *m;
    char *region;
    char *release_topic;   /* BlobReleased records' topic; NULL: not sent */
    int batch;
    nk_env env;
    int nparts;
    np *parts;
    char **topics;         /* targets known to exist */
    size_t ntopics;
    pthread_t thread;
    pthread_mutex_t mu;    /* the counters and each np's status fields */
    pthread_cond_t cv;
    int stopping, started;
    uint64_t delivered, transactions, failures, trimmed, released;
    nw *webhooks;          /* the webhook lanes (nwebhook.h) */
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wall_ms(int64_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *out = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return 0;
}

static int is_release(const Objlog__FeedRecord *r) {
    return r->blob_id && r->blob_id[0] && strcmp(r->event_name, "BlobReleased") == 0;
}

/* The Kafka topic r goes to: its configuration's, the release topic for a
 * BlobReleased record, or NULL (a webhook's, or releases not sent). */
static const char *kafka_topic(const notifier *n, const Objlog__FeedRecord *r) {
    if (is_release(r))
        return n->release_topic;
    if (r->arn && strncmp(r->arn, NOTIFY_ARN_KAFKA, strlen(NOTIFY_ARN_KAFKA)) == 0)
        return r->arn + strlen(NOTIFY_ARN_KAFKA);
    return NULL;
}

/* ---- reading a partition's records ---- */

typedef struct batch_msgs {
    nk_msg *m;
    size_t n, cap, released;
    int64_t last_off;
    int failed;
} batch_msgs;

static void batch_free(batch_msgs *b) {
    for (size_t i = 0; i < b->n; i++) {
        free((char *)b->m[i].key);
        free((char *)b->m[i].value);
        free((char *)b->m[i].topic);
    }
    free(b->m);
}

typedef struct collect_arg {
    notifier *n;
    batch_msgs *b;
} collect_arg;

static int collect(void *arg, int64_t off, uint16_t i, const Objlog__FeedRecord *r) {
    (void)i;
    collect_arg *c = arg;
    batch_msgs *b = c->b;
    b->last_off = off;
    const char *topic = kafka_topic(c->n, r);
    if (!topic)
        return 0;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        nk_msg *g = realloc(b->m, nc * sizeof(*g));
        if (!g)
            return -1;
        b->m = g;
        b->cap = nc;
    }
    nk_msg *m = &b->m[b->n];
    memset(m, 0, sizeof(*m));
    m->topic = strdup(topic);
    if (is_release(r)) {
        /* keyed by blob id: a blob's releases stay in order in one partition */
        m->key = strdup(r->blob_id);
        m->kn = strlen(r->blob_id);
        m->value = nrecord_release_json(r, &m->vn);
        b->released++;
    } else {
        m->key = nrecord_kafka_key(r, &m->kn);
        m->value = nrecord_json(r, c->n->region, &m->vn);
    }
    b->n++;
    return m->topic && m->key && m->value ? 0 : -1;
}

typedef struct find_arg {
    const notifier *n;
    int64_t found;         /* offset of the first Kafka record, -1 none */
    int64_t last;          /* last offset read */
} find_arg;

static int first_kafka(void *arg, int64_t off, uint16_t i, const Objlog__FeedRecord *r) {
    (void)i;
    find_arg *f = arg;
    f->last = off;
    if (!kafka_topic(f->n, r))
        return 0;
    f->found = off;
    return 1;
}

/* Whether p has a Kafka record at or after pt->cursor (or the feed's
 * trim): 1 yes, 0 no (the cursor moves past what was read, so records
 * for other targets are read once). */
static int find_kafka(notifier *n, np *pt) {
    int64_t low = objlog_store_feed_low(n->store, pt->k.p);
    find_arg f = {n, -1, -1};
    char err[256] = "";
    if (objlog_store_feed_scan(n->store, pt->k.p, pt->cursor > low ? pt->cursor : low,
                               SIZE_MAX, first_kafka, &f, err, sizeof(err)) < 0 && err[0])
        objlog_logf(OBJLOG_LEVEL_ERR, "notify", "partition %d: %s", pt->k.p, err);
    if (f.found >= 0)
        return 1;
    if (f.last >= 0)
        pt->cursor = f.last + 1;
    return 0;
}

typedef struct count_arg {
    const notifier *nt;
    uint64_t n;
    int64_t oldest_ms;
} count_arg;

static int count_kafka(void *arg, int64_t off, uint16_t i, const Objlog__FeedRecord *r) {
    (void)off;
    (void)i;
    count_arg *c = arg;
    if (kafka_topic(c->nt, r)) {
        if (!c->n)
            c->oldest_ms = r->log_time_ms;
        c->n++;
    }
    return c->n >= NOTIFIER_BACKLOG_MAX;
}

static void backlog_count(notifier *n, np *pt) {
    int64_t t = now_ms();
    pthread_mutex_lock(&n->mu);
    pt->shown_open = pt->k.tx != NULL;
    pt->shown_pos = pt->k.pos;
    memcpy(pt->shown_error, pt->k.error, sizeof(pt->shown_error));
    pthread_mutex_unlock(&n->mu);
    if (t - pt->backlog_at_ms < NOTIFIER_BACKLOG_EVERY_MS)
        return;
    count_arg c = {n, 0, 0};
    char err[256] = "";
    int64_t from = pt->k.pos >= 0 ? pt->k.pos : objlog_store_feed_low(n->store, pt->k.p);
    objlog_store_feed_scan(n->store, pt->k.p, from, SIZE_MAX, count_kafka, &c, err,
                           sizeof(err));
    pthread_mutex_lock(&n->mu);
    pt->backlog = c.n;
    pt->oldest_ms = c.oldest_ms;
    pt->backlog_at_ms = t;
    pthread_mutex_unlock(&n->mu);
}

/* ---- delivering ---- */

static int topic_known(notifier *n, const char *t) {
    int known = 0;
    pthread_mutex_lock(&n->mu);
    for (size_t i = 0; i < n->ntopics && !known; i++)
        known = strcmp(n->topics[i], t) == 0;
    pthread_mutex_unlock(&n->mu);
    return known;
}

static int topics_ready(notifier *n, np *pt, const batch_msgs *b) {
    for (size_t i = 0; i < b->n; i++) {
        const char *t = b->m[i].topic;
        if (topic_known(n, t))
            continue;
        char err[256];
        if (nk_topic_ready(&n->env, t, err, sizeof(err)) < 0) {
            snprintf(pt->k.error, sizeof(pt->k.error), "topic %.60s: %.180s", t, err);
            return -1;
        }
        pthread_mutex_lock(&n->mu);
        char **g = realloc(n->topics, (n->ntopics + 1) * sizeof(*g));
        char *d = strdup(t);
        if (g)
            n->topics = g;
        if (g && d)
            n->topics[n->ntopics++] = d;
        pthread_mutex_unlock(&n->mu);
        if (!g || !d) {
            free(d);
            return -1;
        }
    }
    return 0;
}

static void pass_failed(notifier *n, np *pt) {
    pt->backoff_ms = pt->backoff_ms ? pt->backoff_ms * 2 : 100;
    if (pt->backoff_ms > NOTIFIER_BACKOFF_MAX_MS)
        pt->backoff_ms = NOTIFIER_BACKOFF_MAX_MS;
    pt->retry_at_ms = now_ms() + pt->backoff_ms;
    pthread_mutex_lock(&n->mu);
    n->failures++;
    pthread_mutex_unlock(&n->mu);
    objlog_logf(OBJLOG_LEVEL_WARNING, "notify",
                "partition %d: change feed to Kafka not delivered (%s); retrying in %d ms",
                pt->k.p, pt->k.error, pt->backoff_ms);
}

/* Opens the partition's producer once it has a Kafka record to deliver.
 * 1 open, 0 nothing to deliver, -1 failed. */
static int part_open(notifier *n, np *pt) {
    if (!find_kafka(n, pt))
        return 0;
    if (nk_open(&n->env, &pt->k) < 0)
        return -1;
    int64_t low = objlog_store_feed_low(n->store, pt->k.p);
    pt->cursor = pt->k.pos;
    if (pt->k.pos > 0 && pt->k.pos < low) {
        pthread_mutex_lock(&n->mu);
        n->trimmed++;
        pthread_mutex_unlock(&n->mu);
        objlog_logf(OBJLOG_LEVEL_ERR, "notify",
                    "partition %d: the committed position %lld is behind the feed's trim "
                    "(%lld): records in between, if any, were not delivered",
                    pt->k.p, (long long)pt->k.pos, (long long)low);
        pt->cursor = low;
    }
    objlog_logf(OBJLOG_LEVEL_INFO, "notify", "partition %d: delivering the change feed to "
                "Kafka from offset %lld", pt->k.p, (long long)pt->cursor);
    return 1;
}

/* One pass over an ACTIVE partition: 1 did something (go again soon), 0
 * idle, -1 failed (backoff set). */
static int part_pass(notifier *n, np *pt) {
    if (!pt->k.tx) {
        int rc = part_open(n, pt);
        if (rc <= 0)
            return rc;
    }
    batch_msgs b = {.last_off = -1};
    collect_arg ca = {n, &b};
    char err[256] = "";
    long got = objlog_store_feed_scan(n->store, pt->k.p, pt->cursor, (size_t)n->batch, collect,
                                      &ca, err, sizeof(err));
    int rc = 0;
    if (got < 0) {
        snprintf(pt->k.error, sizeof(pt->k.error), "read the feed: %.200s",
                 err[0] ? err : "out of memory");
        rc = -1;
    } else if (got == 0) {
        rc = 0;
    } else if (b.n == 0) {
        pt->cursor = b.last_off + 1; /* none for Kafka: nothing to commit */
        rc = 1;
    } else if (topics_ready(n, pt, &b) < 0 ||
               nk_deliver(&n->env, &pt->k, b.m, b.n, b.last_off + 1) < 0) {
        rc = -1;
    } else {
        pt->cursor = pt->k.pos;
        pt->backoff_ms = 0;
        pthread_mutex_lock(&n->mu);
        n->delivered += b.n;
        n->released += b.released;
        n->transactions++;
        pthread_mutex_unlock(&n->mu);
        rc = 1;
    }
    batch_free(&b);
    if (rc < 0) {
        if (pt->k.tx)
            pt->cursor = pt->k.pos; /* records of an aborted transaction go again */
        pass_failed(n, pt);
    }
    return rc;
}

/* Waits up to ms on the notifier's condition (destroy wakes it). Returns
 * 1 when the notifier stops. */
static int nap(notifier *n, int ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += ms * 1000000L;
    while (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&n->mu);
    if (!n->stopping)
        pthread_cond_timedwait(&n->cv, &n->mu, &until);
    int stop = n->stopping;
    pthread_mutex_unlock(&n->mu);
    return stop;
}

static int active(notifier *n, int32_t p) {
    return objlog_materializer_role(n->m, p) == OBJLOG_ROLE_ACTIVE;
}

/* One partition's deliveries, while it is applied here as ACTIVE. */
static void *part_main(void *arg) {
    np *pt = arg;
    notifier *n = pt->n;
    for (int stop = 0; !stop && active(n, pt->k.p);) {
        int rc = now_ms() < pt->retry_at_ms ? 0 : part_pass(n, pt);
        backlog_count(n, pt);
        stop = rc > 0 ? nap(n, 0) : nap(n, NOTIFIER_IDLE_MS);
    }
    if (pt->k.tx && !n->stopping)
        objlog_logf(OBJLOG_LEVEL_INFO, "notify", "partition %d: no longer applied here; "
                    "its change feed goes with it", pt->k.p);
    nk_close(&pt->k);
    pt->cursor = 0;
    pt->seen_applied = -1;
    pthread_mutex_lock(&n->mu);
    pt->backlog = 0;
    pt->shown_open = 0;
    pt->shown_pos = -1;
    pt->thread_state = 2;
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

/* The watcher's look at one partition without a delivery thread: one is
 * started once the partition has a Kafka record to deliver. */
static void watch(notifier *n, np *pt) {
    pthread_mutex_lock(&n->mu);
    int state = pt->thread_state;
    pthread_mutex_unlock(&n->mu);
    if (state == 2) {
        pthread_join(pt->thread, NULL);
        pt->thread_state = 0;
    }
    if (state == 1 || !active(n, pt->k.p) || now_ms() < pt->retry_at_ms)
        return;
    int64_t applied = objlog_materializer_applied(n->m, pt->k.p);
    if (applied == pt->seen_applied)
        return; /* nothing new since it was last found idle */
    int rc = part_open(n, pt);
    if (rc == 0)
        pt->seen_applied = applied;
    if (rc < 0)
        pass_failed(n, pt);
    if (rc <= 0)
        return;
    pt->n = n;
    pthread_mutex_lock(&n->mu);
    pt->thread_state = pthread_create(&pt->thread, NULL, part_main, pt) == 0 ? 1 : 0;
    pthread_mutex_unlock(&n->mu);
    if (!pt->thread_state) {
        objlog_logf(OBJLOG_LEVEL_ERR, "notify", "partition %d: cannot start a delivery "
                    "thread", pt->k.p);
        nk_close(&pt->k);
    }
}

static void *notifier_main(void *arg) {
    notifier *n = arg;
    do {
        for (int p = 0; p < n->nparts; p++)
            watch(n, &n->parts[p]);
    } while (!nap(n, NOTIFIER_IDLE_MS));
    return NULL;
}

notifier *notifier_new(objlog_store *store, objlog_materializer *m, const notifier_conf *c,
                       char *errstr, size_t es) {
    notifier *n = calloc(1, sizeof(*n));
    int parts = objlog_materializer_partitions(m);
    if (!n || !(n->parts = calloc((size_t)parts, sizeof(*n->parts))) ||
        !(n->region = strdup(c->region && c->region[0] ? c->region : "us-east-1")) ||
        (c->release_topic && !(n->release_topic = strdup(c->release_topic)))) {
        if (n) {
            free(n->parts);
            free(n->region);
        }
        free(n);
        snprintf(errstr, es, "notifier: out of memory");
        return NULL;
    }
    n->store = store;
    n->m = m;
    n->nparts = parts;
    n->batch = c->batch > 0 ? c->batch : 1000;
    for (int p = 0; p < parts; p++) {
        n->parts[p].k.p = p;
        n->parts[p].k.pos = -1;
        n->parts[p].shown_pos = -1;
        n->parts[p].seen_applied = -1;
    }
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    if (nk_env_open(&n->env, c->brokers, c->topic, errstr, es) < 0 ||
        !(n->webhooks = nw_new(store, m, n->env.admin, c->topic, n->region, errstr, es))) {
        notifier_destroy(n);
        return NULL;
    }
    if (pthread_create(&n->thread, NULL, notifier_main, n) != 0) {
        snprintf(errstr, es, "notifier: cannot start a thread");
        notifier_destroy(n);
        return NULL;
    }
    n->started = 1;
    return n;
}

void notifier_destroy(notifier *n) {
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->stopping = 1;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    if (n->started)
        pthread_join(n->thread, NULL);
    for (int p = 0; p < n->nparts; p++)
        if (n->parts[p].thread_state)
            pthread_join(n->parts[p].thread, NULL);
    nw_destroy(n->webhooks);
    for (int p = 0; p < n->nparts; p++)
        nk_close(&n->parts[p].k);
    nk_env_close(&n->env);
    for (size_t i = 0; i < n->ntopics; i++)
        free(n->topics[i]);
    free(n->topics);
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
    free(n->parts);
    free(n->region);
    free(n->release_topic);
    free(n);
}

void notifier_totals_get(notifier *n, notifier_totals *t) {
    memset(t, 0, sizeof(*t));
    pthread_mutex_lock(&n->mu);
    t->delivered = n->delivered;
    t->transactions = n->transactions;
    t->failures = n->failures;
    t->trimmed = n->trimmed;
    t->released = n->released;
    for (int p = 0; p < n->nparts; p++) {
        const np *pt = &n->parts[p];
        t->backlog += pt->backlog;
        if (pt->backlog && (!t->oldest_ms || pt->oldest_ms < t->oldest_ms))
            t->oldest_ms = pt->oldest_ms;
        t->producers += pt->shown_open;
    }
    pthread_mutex_unlock(&n->mu);
}

json_t *notifier_status_json(notifier *n) {
    notifier_totals t;
    notifier_totals_get(n, &t);
    int64_t wall;
    wall_ms(&wall);
    json_t *parts = json_array();
    pthread_mutex_lock(&n->mu);
    for (int p = 0; p < n->nparts; p++) {
        const np *pt = &n->parts[p];
        if (!pt->shown_open && !pt->shown_error[0] && !pt->backlog)
            continue;
        double age = pt->backlog && pt->oldest_ms ? (double)(wall - pt->oldest_ms) / 1000.0 : 0;
        json_array_append_new(parts, json_pack("{s:i, s:I, s:I, s:f, s:s}", "partition", p,
                                               "position", (json_int_t)pt->shown_pos, "backlog",
                                               (json_int_t)pt->backlog, "oldest_age_seconds",
                                               age < 0 ? 0 : age, "error", pt->shown_error));
    }
    pthread_mutex_unlock(&n->mu);
    double age = t.oldest_ms ? (double)(wall - t.oldest_ms) / 1000.0 : 0;
    return json_pack("{s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:i, s:o}}", "webhook",
                     nw_status_json(n->webhooks), "kafka", "delivered",
                     (json_int_t)t.delivered, "blob_releases", (json_int_t)t.released,
                     "transactions", (json_int_t)t.transactions,
                     "failures", (json_int_t)t.failures, "trimmed", (json_int_t)t.trimmed,
                     "backlog", (json_int_t)t.backlog, "oldest_age_seconds", age < 0 ? 0 : age,
                     "producers", t.producers, "partitions", parts);
}

void notifier_metrics(FILE *f, notifier *n) {
    if (!n)
        return;
    notifier_totals t;
    nw_totals h;
    notifier_totals_get(n, &t);
    nw_totals_get(n->webhooks, &h);
    int64_t wall;
    wall_ms(&wall);
    double age = t.oldest_ms ? (double)(wall - t.oldest_ms) / 1000.0 : 0;
    double hage = h.oldest_ms ? (double)(wall - h.oldest_ms) / 1000.0 : 0;
    fprintf(f,
            "# HELP objlog_notify_records_total Change-feed records delivered (Kafka: "
            "committed; webhook: answered 2xx).\n"
            "# TYPE objlog_notify_records_total counter\n"
            "objlog_notify_records_total{target=\"kafka\"} %llu\n"
            "objlog_notify_records_total{target=\"webhook\"} %llu\n"
            "# HELP objlog_notify_blob_releases_total BlobReleased records committed to "
            "--blob-release-topic (counted in the kafka records too).\n"
            "# TYPE objlog_notify_blob_releases_total counter\n"
            "objlog_notify_blob_releases_total %llu\n"
            "# HELP objlog_notify_transactions_total Kafka transactions of the change feed "
            "committed.\n"
            "# TYPE objlog_notify_transactions_total counter\n"
            "objlog_notify_transactions_total %llu\n"
            "# HELP objlog_notify_failures_total Deliveries of the change feed that failed "
            "and will be retried.\n"
            "# TYPE objlog_notify_failures_total counter\n"
            "objlog_notify_failures_total{target=\"kafka\"} %llu\n"
            "objlog_notify_failures_total{target=\"webhook\"} %llu\n"
            "# HELP objlog_notify_trimmed_total Partitions whose committed position was "
            "behind the feed's trim (records may be lost).\n"
            "# TYPE objlog_notify_trimmed_total counter\n"
            "objlog_notify_trimmed_total %llu\n"
            "# HELP objlog_notify_backlog_records Change-feed records applied here and "
            "not yet delivered.\n"
            "# TYPE objlog_notify_backlog_records gauge\n"
            "objlog_notify_backlog_records{target=\"kafka\"} %llu\n"
            "objlog_notify_backlog_records{target=\"webhook\"} %llu\n"
            "# HELP objlog_notify_backlog_oldest_seconds Age (log time) of the oldest "
            "record not yet delivered; 0 none.\n"
            "# TYPE objlog_notify_backlog_oldest_seconds gauge\n"
            "objlog_notify_backlog_oldest_seconds{target=\"kafka\"} %.3f\n"
            "objlog_notify_backlog_oldest_seconds{target=\"webhook\"} %.3f\n",
            (unsigned long long)t.delivered, (unsigned long long)h.delivered,
            (unsigned long long)t.released, (unsigned long long)t.transactions, (unsigned long long)t.failures,
            (unsigned long long)h.failures, (unsigned long long)t.trimmed,
            (unsigned long long)t.backlog, (unsigned long long)h.backlog, age < 0 ? 0 : age,
            hage < 0 ? 0 : hage);
    nw_metrics(f, n->webhooks);
}
