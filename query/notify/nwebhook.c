/* nwebhook.c: the change feed to webhooks, at least once (nwebhook.h).
 * Owns the lanes: per (events partition applied here as ACTIVE, bucket,
 * configuration, URL) a position, one request in flight at most, and its
 * backoff. The thread drives every lane's HTTP through one libcurl multi
 * handle, so a slow or dead endpoint holds back its own lane only.
 *
 * Invariant: a lane's position passes a record only after its endpoint
 * answered it 2xx, and positions only move forward; a position is
 * committed (its consumer group's offset of the events partition) after
 * the records below it were delivered, so a crash or a move repeats at
 * most what was delivered since the last commit, never skips. Records of a
 * lane go one at a time in offset order: per key, the order of the log.
 * Status readers see a snapshot the thread publishes, never its state. */
#include "nwebhook.h"

#include "nrecord.h"
#include "notify.h"
#include "objlog_logger.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#define NW_BACKOFF_MIN_MS 100
#define NW_BACKOFF_MAX_MS 10000
#define NW_RETRY_AFTER_MAX_MS 3600000
#define NW_COMMIT_EVERY_MS 1000
#define NW_REQUEST_TIMEOUT_MS 10000
#define NW_ADMIN_TIMEOUT_MS 5000
#define NW_BACKLOG_EVERY_MS 1000
#define NW_BACKLOG_MAX 1000000
#define NW_PUBLISH_EVERY_MS 200

typedef struct lane {
    int32_t p;
    char *bucket, *id, *arn, *url;
    char group[160];
    int64_t pos;           /* next offset to deliver */
    int64_t scanned;       /* no record of the lane in [pos, scanned) */
    int64_t committed;     /* as committed; -1 nothing yet */
    int64_t commit_at_ms;
    CURL *easy;            /* a request in flight */
    struct curl_slist *hdrs;
    char *body;
    int64_t cur_off;
    long retry_after_ms;   /* from the last answer's Retry-After; 0 none */
    int backoff_ms;
    int64_t retry_at_ms;
    uint64_t delivered, failures, backlog;
    int64_t oldest_ms, backlog_at_ms;
    char error[200];
} lane;

/* What status readers see of a lane. */
typedef struct lane_view {
    int32_t p;
    char bucket[64], id[256], url[256], error[200];
    int64_t pos, oldest_ms, retry_at_ms;
    uint64_t backlog;
} lane_view;

struct nw {
    objlog_store *store;
    objlog_materializer *m;
    rd_kafka_t *admin;
    char *topic, *region;
    CURLM *multi;
    lane **lanes;
    size_t n, cap;
    int64_t *discover;     /* per partition: next offset to look for new lanes */
    int nparts;
    int64_t published_ms;
    pthread_t thread;
    pthread_mutex_t mu;    /* stopping, the counters and the snapshot */
    int stopping, started;
    uint64_t delivered, failures;
    lane_view *view;
    size_t nview;
};

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int is_webhook(const Objlog__FeedRecord *r) {
    return r->arn && strncmp(r->arn, NOTIFY_ARN_WEBHOOK, strlen(NOTIFY_ARN_WEBHOOK)) == 0;
}

static int lane_is(const lane *l, int32_t p, const Objlog__FeedRecord *r) {
    return l->p == p && strcmp(l->bucket, r->bucket) == 0 && strcmp(l->id, r->config_id) == 0 &&
           strcmp(l->arn, r->arn) == 0;
}

/* ---- positions in Kafka ---- */

/* "objlog.webhook.TOPIC.HASH": one group per lane identity. */
static void lane_group(lane *l, const char *topic) {
    unsigned char md[32];
    unsigned int mn = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    EVP_DigestUpdate(c, l->bucket, strlen(l->bucket) + 1);
    EVP_DigestUpdate(c, l->id, strlen(l->id) + 1);
    EVP_DigestUpdate(c, l->arn, strlen(l->arn));
    EVP_DigestFinal_ex(c, md, &mn);
    EVP_MD_CTX_free(c);
    int w = snprintf(l->group, sizeof(l->group), "objlog.webhook.%.100s.", topic);
    for (int i = 0; i < 8 && w + 2 < (int)sizeof(l->group); i++, w += 2)
        snprintf(l->group + w, sizeof(l->group) - (size_t)w, "%02x", md[i]);
}

static rd_kafka_event_t *admin_wait(rd_kafka_queue_t *q) {
    return rd_kafka_queue_poll(q, NW_ADMIN_TIMEOUT_MS + 1000);
}

/* The lane's committed position: 0 read (*pos; 0 when none), -1 not. */
static int lane_read_pos(nw *w, lane *l, int64_t *pos) {
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(tp, w->topic, l->p);
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(l->group, tp);
    rd_kafka_topic_partition_list_destroy(tp);
    rd_kafka_queue_t *q = rd_kafka_queue_new(w->admin);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(w->admin, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    char tmp[128];
    rd_kafka_AdminOptions_set_request_timeout(o, NW_ADMIN_TIMEOUT_MS, tmp, sizeof(tmp));
    rd_kafka_ListConsumerGroupOffsets(w->admin, &req, 1, o, q);
    rd_kafka_event_t *ev = admin_wait(q);
    int rc = -1;
    if (ev && !rd_kafka_event_error(ev)) {
        size_t n = 0;
        const rd_kafka_group_result_t **g = rd_kafka_ListConsumerGroupOffsets_result_groups(
            rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
        const rd_kafka_topic_partition_list_t *got =
            n == 1 && !rd_kafka_group_result_error(g[0]) ? rd_kafka_group_result_partitions(g[0])
                                                         : NULL;
        if (got && got->cnt == 1 && !got->elems[0].err) {
            *pos = got->elems[0].offset < 0 ? 0 : got->elems[0].offset;
            rc = 0;
        }
    }
    if (rc < 0)
        snprintf(l->error, sizeof(l->error), "read the committed position: %s",
                 ev ? rd_kafka_event_error_string(ev) : "no answer");
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    return rc;
}

static void lane_commit(nw *w, lane *l) {
    if (l->pos == l->committed)
        return;
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(tp, w->topic, l->p)->offset = l->pos;
    rd_kafka_AlterConsumerGroupOffsets_t *req =
        rd_kafka_AlterConsumerGroupOffsets_new(l->group, tp);
    rd_kafka_topic_partition_list_destroy(tp);
    rd_kafka_queue_t *q = rd_kafka_queue_new(w->admin);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(w->admin, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS);
    char tmp[128];
    rd_kafka_AdminOptions_set_request_timeout(o, NW_ADMIN_TIMEOUT_MS, tmp, sizeof(tmp));
    int64_t at = l->pos;
    rd_kafka_AlterConsumerGroupOffsets(w->admin, &req, 1, o, q);
    rd_kafka_event_t *ev = admin_wait(q);
    int ok = 0;
    if (ev && !rd_kafka_event_error(ev)) {
        size_t n = 0;
        const rd_kafka_group_result_t **g = rd_kafka_AlterConsumerGroupOffsets_result_groups(
            rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &n);
        const rd_kafka_topic_partition_list_t *got =
            n == 1 && !rd_kafka_group_result_error(g[0]) ? rd_kafka_group_result_partitions(g[0])
                                                         : NULL;
        ok = got && got->cnt == 1 && !got->elems[0].err;
    }
    if (ok)
        l->committed = at;
    else
        objlog_logf(OBJLOG_LEVEL_WARNING, "notify", "webhook %s (partition %d): position "
                    "%lld not committed (%s); retried", l->url, l->p, (long long)at,
                    ev ? rd_kafka_event_error_string(ev) : "no answer");
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    rd_kafka_AlterConsumerGroupOffsets_destroy(req);
    l->commit_at_ms = mono_ms() + NW_COMMIT_EVERY_MS;
}

/* ---- lanes ---- */

static void lane_free(lane *l) {
    free(l->bucket);
    free(l->id);
    free(l->arn);
    free(l->url);
    free(l->body);
    curl_slist_free_all(l->hdrs);
    free(l);
}

static void lane_request_done(nw *w, lane *l) {
    if (l->easy) {
        curl_multi_remove_handle(w->multi, l->easy);
        curl_easy_cleanup(l->easy);
    }
    l->easy = NULL;
    free(l->body);
    l->body = NULL;
    curl_slist_free_all(l->hdrs);
    l->hdrs = NULL;
}

/* A new lane for record r of partition p, from its committed position. */
static lane *lane_new(nw *w, int32_t p, const Objlog__FeedRecord *r) {
    lane *l = calloc(1, sizeof(*l));
    notify_target t;
    char why[200];
    if (!l)
        return NULL;
    l->p = p;
    l->bucket = strdup(r->bucket);
    l->id = strdup(r->config_id);
    l->arn = strdup(r->arn);
    l->url = strdup(notify_target_parse(r->arn, &t, why, sizeof(why)) == 0 ? t.target : "");
    l->committed = -1;
    l->pos = -1;
    if (!l->bucket || !l->id || !l->arn || !l->url) {
        lane_free(l);
        return NULL;
    }
    lane_group(l, w->topic);
    return l;
}

static int lanes_add(nw *w, lane *l) {
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 16;
        lane **g = realloc(w->lanes, nc * sizeof(*g));
        if (!g)
            return -1;
        w->lanes = g;
        w->cap = nc;
    }
    w->lanes[w->n++] = l;
    return 0;
}

typedef struct discover_arg {
    nw *w;
    int32_t p;
    int64_t last;
} discover_arg;

static int discover_fn(void *arg, int64_t off, uint16_t i, const Objlog__FeedRecord *r) {
    (void)i;
    discover_arg *d = arg;
    d->last = off;
    if (!is_webhook(r))
        return 0;
    for (size_t k = 0; k < d->w->n; k++)
        if (lane_is(d->w->lanes[k], d->p, r))
            return 0;
    lane *l = lane_new(d->w, d->p, r);
    if (!l || lanes_add(d->w, l) < 0) {
        if (l)
            lane_free(l);
        return -1;
    }
    objlog_logf(OBJLOG_LEVEL_INFO, "notify", "partition %d: webhook %s of bucket %s "
                "(configuration %s) starts", d->p, l->url, l->bucket, l->id);
    return 0;
}

/* Lanes of partition p not known yet, from the records after the last look. */
static void discover(nw *w, int32_t p) {
    int64_t low = objlog_store_feed_low(w->store, p);
    discover_arg d = {w, p, -1};
    char err[256] = "";
    int64_t from = w->discover[p] > low ? w->discover[p] : low;
    if (objlog_store_feed_scan(w->store, p, from, SIZE_MAX, discover_fn, &d, err,
                               sizeof(err)) < 0 && err[0])
        objlog_logf(OBJLOG_LEVEL_ERR, "notify", "partition %d: %s", p, err);
    if (d.last >= 0)
        w->discover[p] = d.last + 1;
}

/* The partition left this node: its lanes go, their positions committed. */
static void drop_partition(nw *w, int32_t p) {
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++) {
        lane *l = w->lanes[i];
        if (l->p != p) {
            w->lanes[k++] = l;
            continue;
        }
        lane_request_done(w, l);
        if (l->pos >= 0)
            lane_commit(w, l);
        lane_free(l);
    }
    w->n = k;
    w->discover[p] = 0;
}

/* ---- one record at a time ---- */

typedef struct next_arg {
    const lane *l;
    int32_t p;
    const char *region;
    int64_t off, last;
    char *body;
} next_arg;

static int next_fn(void *arg, int64_t off, uint16_t i, const Objlog__FeedRecord *r) {
    (void)i;
    next_arg *a = arg;
    a->last = off;
    if (!lane_is(a->l, a->p, r))
        return 0;
    a->off = off;
    a->body = nrecord_json(r, a->region, NULL);
    return a->body ? 1 : -1;
}

static size_t header_fn(char *b, size_t size, size_t n, void *arg) {
    lane *l = arg;
    size_t len = size * n;
    if (len > 12 && strncasecmp(b, "Retry-After:", 12) == 0) {
        char v[64];
        size_t m = len - 12 < sizeof(v) - 1 ? len - 12 : sizeof(v) - 1;
        memcpy(v, b + 12, m);
        v[m] = '\0';
        char *end;
        long s = strtol(v, &end, 10);
        if (end != v && s >= 0) {
            l->retry_after_ms = s * 1000;
        } else {
            time_t t = curl_getdate(v, NULL);
            int64_t d = t > 0 ? (int64_t)t * 1000 - wall_ms() : 0;
            l->retry_after_ms = d > 0 ? (long)d : 0;
        }
        if (l->retry_after_ms > NW_RETRY_AFTER_MAX_MS)
            l->retry_after_ms = NW_RETRY_AFTER_MAX_MS;
    }
    return len;
}

static size_t discard_fn(char *b, size_t size, size_t n, void *arg) {
    (void)b;
    (void)arg;
    return size * n;
}

/* Starts the lane's next record, if it has one now. */
static void lane_start(nw *w, lane *l) {
    if (l->pos < 0) {
        int64_t pos;
        if (lane_read_pos(w, l, &pos) < 0) {
            l->retry_at_ms = mono_ms() + NW_BACKOFF_MAX_MS / 10;
            return;
        }
        l->pos = l->committed = pos;
        l->scanned = pos;
        l->error[0] = '\0';
    }
    next_arg a = {l, l->p, w->region, -1, -1, NULL};
    char err[256] = "";
    int64_t low = objlog_store_feed_low(w->store, l->p);
    int64_t from = l->scanned > l->pos ? l->scanned : l->pos;
    if (from < low) {
        objlog_logf(OBJLOG_LEVEL_ERR, "notify", "webhook %s (partition %d): position %lld is "
                    "behind the feed's trim (%lld): records in between, if any, were not "
                    "delivered", l->url, l->p, (long long)from, (long long)low);
        from = l->pos = low;
    }
    if (objlog_store_feed_scan(w->store, l->p, from, SIZE_MAX, next_fn, &a, err,
                               sizeof(err)) < 0 && !a.body) {
        snprintf(l->error, sizeof(l->error), "read the feed: %.150s", err);
        return;
    }
    if (!a.body) {
        if (a.last >= 0)
            l->scanned = a.last + 1;
        return;
    }
    l->body = a.body;
    l->cur_off = a.off;
    l->retry_after_ms = 0;
    l->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    if (!(l->easy = curl_easy_init()) || !l->hdrs) {
        lane_request_done(w, l);
        return;
    }
    curl_easy_setopt(l->easy, CURLOPT_URL, l->url);
    curl_easy_setopt(l->easy, CURLOPT_POSTFIELDS, l->body);
    curl_easy_setopt(l->easy, CURLOPT_HTTPHEADER, l->hdrs);
    curl_easy_setopt(l->easy, CURLOPT_TIMEOUT_MS, (long)NW_REQUEST_TIMEOUT_MS);
    curl_easy_setopt(l->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(l->easy, CURLOPT_HEADERFUNCTION, header_fn);
    curl_easy_setopt(l->easy, CURLOPT_HEADERDATA, l);
    curl_easy_setopt(l->easy, CURLOPT_WRITEFUNCTION, discard_fn);
    curl_easy_setopt(l->easy, CURLOPT_PRIVATE, l);
    curl_multi_add_handle(w->multi, l->easy);
}

static void lane_finished(nw *w, lane *l, CURLcode cc) {
    long code = 0;
    curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &code);
    if (cc == CURLE_OK && code >= 200 && code < 300) {
        l->pos = l->cur_off + 1;
        l->scanned = l->pos;
        l->delivered++;
        l->backoff_ms = 0;
        l->error[0] = '\0';
        pthread_mutex_lock(&w->mu);
        w->delivered++;
        pthread_mutex_unlock(&w->mu);
        lane_request_done(w, l);
        return;
    }
    if (cc != CURLE_OK)
        snprintf(l->error, sizeof(l->error), "%s", curl_easy_strerror(cc));
    else
        snprintf(l->error, sizeof(l->error), "HTTP %ld", code);
    l->failures++;
    l->backoff_ms = l->backoff_ms ? l->backoff_ms * 2 : NW_BACKOFF_MIN_MS;
    if (l->backoff_ms > NW_BACKOFF_MAX_MS)
        l->backoff_ms = NW_BACKOFF_MAX_MS;
    long wait = l->retry_after_ms > l->backoff_ms ? l->retry_after_ms : l->backoff_ms;
    l->retry_at_ms = mono_ms() + wait;
    pthread_mutex_lock(&w->mu);
    w->failures++;
    pthread_mutex_unlock(&w->mu);
    if (l->failures == 1 || l->backoff_ms >= NW_BACKOFF_MAX_MS)
        objlog_logf(OBJLOG_LEVEL_WARNING, "notify", "webhook %s (bucket %s, configuration %s): "
                    "%s; retrying in %ld ms", l->url, l->bucket, l->id, l->error, wait);
    lane_request_done(w, l);
}

typedef struct count_arg {
    const lane *l;
    int32_t p;
    uint64_t n;
    int64_t oldest_ms;
} count_arg;

static int count_fn(void *arg, int64_t off, uint16_t i, const Objlog__FeedRecord *r) {
    (void)off;
    (void)i;
    count_arg *c = arg;
    if (lane_is(c->l, c->p, r)) {
        if (!c->n)
            c->oldest_ms = r->log_time_ms;
        c->n++;
    }
    return c->n >= NW_BACKLOG_MAX;
}

static void lane_backlog(nw *w, lane *l, int64_t now) {
    if (now - l->backlog_at_ms < NW_BACKLOG_EVERY_MS || l->pos < 0)
        return;
    count_arg c = {l, l->p, 0, 0};
    char err[256] = "";
    objlog_store_feed_scan(w->store, l->p, l->pos, SIZE_MAX, count_fn, &c, err, sizeof(err));
    l->backlog = c.n;
    l->oldest_ms = c.oldest_ms;
    l->backlog_at_ms = now;
}

/* ---- the thread ---- */

static void publish(nw *w) {
    lane_view *v = calloc(w->n + 1, sizeof(*v));
    if (!v)
        return;
    for (size_t i = 0; i < w->n; i++) {
        const lane *l = w->lanes[i];
        v[i].p = l->p;
        snprintf(v[i].bucket, sizeof(v[i].bucket), "%s", l->bucket);
        snprintf(v[i].id, sizeof(v[i].id), "%s", l->id);
        snprintf(v[i].url, sizeof(v[i].url), "%s", l->url);
        snprintf(v[i].error, sizeof(v[i].error), "%s", l->error);
        v[i].pos = l->pos;
        v[i].backlog = l->backlog;
        v[i].oldest_ms = l->oldest_ms;
        v[i].retry_at_ms = l->easy ? 0 : l->retry_at_ms;
    }
    pthread_mutex_lock(&w->mu);
    free(w->view);
    w->view = v;
    w->nview = w->n;
    pthread_mutex_unlock(&w->mu);
}

static void pass(nw *w) {
    for (int p = 0; p < w->nparts; p++) {
        if (objlog_materializer_role(w->m, p) == OBJLOG_ROLE_ACTIVE)
            discover(w, p);
        else if (w->discover[p])
            drop_partition(w, p);
    }
    /* twice: a lane whose answer came goes on with its next record at once */
    for (int round = 0; round < 2; round++) {
        int64_t now = mono_ms();
        for (size_t i = 0; i < w->n; i++) {
            lane *l = w->lanes[i];
            if (!l->easy && now >= l->retry_at_ms)
                lane_start(w, l);
        }
        int running = 0;
        curl_multi_perform(w->multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(w->multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            lane *l = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&l);
            if (l)
                lane_finished(w, l, msg->data.result);
        }
    }
    int64_t now = mono_ms();
    for (size_t i = 0; i < w->n; i++) {
        lane *l = w->lanes[i];
        if (l->pos >= 0 && now >= l->commit_at_ms)
            lane_commit(w, l);
        lane_backlog(w, l, now);
    }
    if (now - w->published_ms >= NW_PUBLISH_EVERY_MS) {
        publish(w);
        w->published_ms = now;
    }
}

static void *nw_main(void *arg) {
    nw *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        int stop = w->stopping;
        pthread_mutex_unlock(&w->mu);
        if (stop)
            break;
        pass(w);
        int fds = 0;
        curl_multi_poll(w->multi, NULL, 0, 10, &fds);
    }
    for (size_t i = 0; i < w->n; i++) {
        lane_request_done(w, w->lanes[i]);
        if (w->lanes[i]->pos >= 0)
            lane_commit(w, w->lanes[i]);
    }
    return NULL;
}

nw *nw_new(objlog_store *store, objlog_materializer *m, rd_kafka_t *admin, const char *topic,
           const char *region, char *errstr, size_t es) {
    nw *w = calloc(1, sizeof(*w));
    int parts = objlog_materializer_partitions(m);
    if (!w || !(w->discover = calloc((size_t)parts, sizeof(*w->discover))) ||
        !(w->topic = strdup(topic)) || !(w->region = strdup(region)) ||
        !(w->multi = curl_multi_init())) {
        if (w) {
            free(w->discover);
            free(w->topic);
            free(w->region);
        }
        free(w);
        snprintf(errstr, es, "webhooks: out of memory");
        return NULL;
    }
    w->store = store;
    w->m = m;
    w->admin = admin;
    w->nparts = parts;
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, nw_main, w) != 0) {
        snprintf(errstr, es, "webhooks: cannot start a thread");
        nw_destroy(w);
        return NULL;
    }
    w->started = 1;
    return w;
}

void nw_destroy(nw *w) {
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_mutex_unlock(&w->mu);
    if (w->multi)
        curl_multi_wakeup(w->multi);
    if (w->started)
        pthread_join(w->thread, NULL);
    for (size_t i = 0; i < w->n; i++) {
        lane_request_done(w, w->lanes[i]);
        lane_free(w->lanes[i]);
    }
    free(w->lanes);
    if (w->multi)
        curl_multi_cleanup(w->multi);
    pthread_mutex_destroy(&w->mu);
    free(w->view);
    free(w->discover);
    free(w->topic);
    free(w->region);
    free(w);
}

void nw_totals_get(nw *w, nw_totals *t) {
    memset(t, 0, sizeof(*t));
    pthread_mutex_lock(&w->mu);
    t->delivered = w->delivered;
    t->failures = w->failures;
    t->lanes = (int)w->nview;
    for (size_t i = 0; i < w->nview; i++) {
        t->backlog += w->view[i].backlog;
        if (w->view[i].backlog && (!t->oldest_ms || w->view[i].oldest_ms < t->oldest_ms))
            t->oldest_ms = w->view[i].oldest_ms;
    }
    pthread_mutex_unlock(&w->mu);
}

static double age_s(int64_t ms, int64_t now) {
    double a = ms ? (double)(now - ms) / 1000.0 : 0;
    return a < 0 ? 0 : a;
}

json_t *nw_status_json(nw *w) {
    nw_totals t;
    nw_totals_get(w, &t);
    int64_t now = wall_ms(), mono = mono_ms();
    json_t *lanes = json_array();
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->nview; i++) {
        const lane_view *v = &w->view[i];
        double retry = v->retry_at_ms > mono ? (double)(v->retry_at_ms - mono) / 1000.0 : 0;
        json_array_append_new(
            lanes, json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:f, s:f, s:s}", "partition", v->p,
                             "bucket", v->bucket, "configuration", v->id, "url", v->url,
                             "position", (json_int_t)v->pos, "backlog", (json_int_t)v->backlog,
                             "oldest_age_seconds", v->backlog ? age_s(v->oldest_ms, now) : 0.0,
                             "retry_in_seconds", retry, "error", v->error));
    }
    pthread_mutex_unlock(&w->mu);
    return json_pack("{s:I, s:I, s:I, s:f, s:o}", "delivered", (json_int_t)t.delivered,
                     "failures", (json_int_t)t.failures, "backlog", (json_int_t)t.backlog,
                     "oldest_age_seconds", age_s(t.oldest_ms, now), "lanes", lanes);
}

/* A label value as Prometheus' text format takes it. */
static void label(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static void lane_labels(FILE *f, const char *family, const lane_view *v) {
    fprintf(f, "%s{bucket=\"", family);
    label(f, v->bucket);
    fputs("\",configuration=\"", f);
    label(f, v->id);
    fprintf(f, "\",partition=\"%d\"} ", v->p);
}

void nw_metrics(FILE *f, nw *w) {
    int64_t now = wall_ms();
    fputs("# HELP objlog_notify_webhook_backlog_records Change-feed records of one webhook "
          "configuration not yet delivered, per bucket and configuration (partitions this "
          "node applies).\n# TYPE objlog_notify_webhook_backlog_records gauge\n", f);
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->nview; i++) {
        lane_labels(f, "objlog_notify_webhook_backlog_records", &w->view[i]);
        fprintf(f, "%llu\n", (unsigned long long)w->view[i].backlog);
    }
    fputs("# HELP objlog_notify_webhook_backlog_oldest_seconds Age (log time) of the oldest "
          "record of one webhook configuration not yet delivered; 0 none.\n"
          "# TYPE objlog_notify_webhook_backlog_oldest_seconds gauge\n", f);
    for (size_t i = 0; i < w->nview; i++) {
        lane_labels(f, "objlog_notify_webhook_backlog_oldest_seconds", &w->view[i]);
        fprintf(f, "%.3f\n", w->view[i].backlog ? age_s(w->view[i].oldest_ms, now) : 0.0);
    }
    pthread_mutex_unlock(&w->mu);
}
