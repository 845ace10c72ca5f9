/* admit.c: the producer's admission control. A frontend
 * that writes through this library never passes objlogd's edge, so with
 * admission=on the library applies the same two rules to its own writes:
 *   - hot partition: a write routed to a partition that objlogd reports
 *     slow (GET {query.url}/v1/admission: its apply lag is over
 *     --slowdown-lag) is not sent;
 *   - bucket rate limit: the bucket's limit in force (GET
 *     /v1/buckets/{b}/ratelimit: its own from the log, or objlogd's
 *     default), rps and write_rps, enforced by a token bucket per bucket in
 *     this producer. Each producer enforces it on its own writes: N
 *     producers of one bucket may reach N times the limit together (the
 *     limit is exact only at objlogd's edge, which all their readers pass).
 * Such a write completes with OBJLOG_STATUS_SLOW_DOWN, error_code
 * "SlowDown", on this module's thread, never on the caller's.
 *
 * Staleness: both come from a poll every admission.refresh.ms; a bucket
 * this producer has not written before is unchecked until the next poll
 * has read its limit (fail-open, as tenant.quota.*: an unreachable query
 * service keeps the last answers and never blocks a write).
 *
 * Invariant: the tables change only under lock; an op given to
 * padmit_defer is completed exactly once, by the thread, before
 * padmit_destroy returns (the producer flushes first).
 */
#include "producer_int.h"
#include "producer_time.h"
#include "qhttp.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenbucket.h"

#define PADMIT_MAX_BUCKETS 1024
#define PADMIT_MAX_PARTS 4096
#define PADMIT_MAX_BODY (1024 * 1024)
#define PADMIT_HTTP_TIMEOUT_MS 5000

typedef struct padmit_bucket {
    char *name;
    int known;                   /* a poll has read its limit */
    uint32_t rps, burst, write_rps, write_burst;
    tokenbucket all, write;
} padmit_bucket;

struct padmit {
    char *base;                  /* query.url */
    struct curl_slist *auth;     /* query.token's header, NULL none */
    int refresh_ms;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop;
    unsigned char slow[PADMIT_MAX_PARTS]; /* 1: writes to it slow down */
    padmit_bucket *buckets;
    size_t nbuckets;
    write_op *queue;             /* refused writes to complete */
};

/* GET url as JSON; NULL on any failure (*status gets the code). */
static json_t *padmit_get(const padmit *a, CURL *h, const char *url, long *status) {
    bodybuf body = {.max = PADMIT_MAX_BODY};
    *status = 0;
    curl_easy_reset(h);
    json_t *j = NULL;
    if (qhttp_get(h, url, a->auth, PADMIT_HTTP_TIMEOUT_MS, &body, status) == CURLE_OK &&
        *status == 200 && body.data)
        j = json_loads(body.data, 0, NULL);
    bodybuf_free(&body);
    return j;
}

static uint32_t padmit_u32(json_t *o, const char *a, const char *b) {
    json_t *v = json_object_get(json_object_get(o, a), b);
    return json_is_integer(v) && json_integer_value(v) > 0
               ? (uint32_t)json_integer_value(v) : 0;
}

static void padmit_poll_partitions(padmit *a, CURL *h) {
    char url[1100];
    long status;
    snprintf(url, sizeof(url), "%s/v1/admission", a->base);
    json_t *j = padmit_get(a, h, url, &status);
    json_t *parts = json_object_get(j, "partitions"), *e;
    size_t i;
    if (!json_is_array(parts)) {
        json_decref(j);
        return; /* keep the last answer */
    }
    pthread_mutex_lock(&a->lock);
    memset(a->slow, 0, sizeof(a->slow));
    json_array_foreach(parts, i, e) {
        json_int_t p = json_integer_value(json_object_get(e, "partition"));
        if (p >= 0 && p < PADMIT_MAX_PARTS)
            a->slow[p] = json_is_true(json_object_get(e, "slow"));
    }
    pthread_mutex_unlock(&a->lock);
    json_decref(j);
}

/* The limit of bucket i (its name copied out first: the table may grow
 * while the lock is dropped, but never shrinks or reorders). */
static void padmit_poll_bucket(padmit *a, CURL *h, size_t i) {
    char name[128], url[1300];
    long status;
    pthread_mutex_lock(&a->lock);
    snprintf(name, sizeof(name), "%s", a->buckets[i].name);
    pthread_mutex_unlock(&a->lock);
    snprintf(url, sizeof(url), "%s/v1/buckets/%s/ratelimit", a->base, name);
    json_t *j = padmit_get(a, h, url, &status);
    if (!j && status != 404)
        return;
    pthread_mutex_lock(&a->lock);
    padmit_bucket *b = &a->buckets[i];
    b->known = 1;
    b->rps = padmit_u32(j, "all", "rps");
    b->burst = padmit_u32(j, "all", "burst");
    b->write_rps = padmit_u32(j, "write", "rps");
    b->write_burst = padmit_u32(j, "write", "burst");
    pthread_mutex_unlock(&a->lock);
    json_decref(j);
}

static void padmit_poll(padmit *a, CURL *h) {
    padmit_poll_partitions(a, h);
    pthread_mutex_lock(&a->lock);
    size_t n = a->nbuckets;
    pthread_mutex_unlock(&a->lock);
    for (size_t i = 0; i < n; i++)
        padmit_poll_bucket(a, h, i);
}

/* Completes the refused writes queued so far (outside the lock: their
 * callbacks may write again, and be refused again). */
static void padmit_drain(padmit *a) {
    write_op *q = a->queue;
    a->queue = NULL;
    pthread_mutex_unlock(&a->lock);
    while (q) {
        write_op *next = q->next;
        writeop_complete(q);
        q = next;
    }
    pthread_mutex_lock(&a->lock);
}

static void *padmit_main(void *arg) {
    padmit *a = arg;
    CURL *h = curl_easy_init();
    int64_t next_poll = ptime_mono_ms() + a->refresh_ms;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        if (a->queue) {
            padmit_drain(a);
            continue;
        }
        if (a->stop)
            break;
        int64_t now = ptime_mono_ms();
        if (now >= next_poll) {
            pthread_mutex_unlock(&a->lock);
            if (h)
                padmit_poll(a, h);
            pthread_mutex_lock(&a->lock);
            next_poll = ptime_mono_ms() + a->refresh_ms;
            continue;
        }
        struct timespec until;
        ptime_deadline(&until, (int)(next_poll - now));
        pthread_cond_timedwait(&a->wake, &a->lock, &until);
    }
    pthread_mutex_unlock(&a->lock);
    curl_easy_cleanup(h);
    return NULL;
}

int padmit_new(const objlog_producer_conf *conf, padmit **out, char *errstr,
               size_t errstr_size) {
    *out = NULL;
    if (!conf->admission)
        return 0;
    if (!conf->query_url) {
        snprintf(errstr, errstr_size, "query.url is required with admission=on");
        return -1;
    }
    padmit *a = calloc(1, sizeof(*a));
    if (!a || !(a->base = strdup(conf->query_url)) ||
        !(a->buckets = calloc(PADMIT_MAX_BUCKETS, sizeof(*a->buckets))) ||
        (conf->query_token && !(a->auth = qhttp_auth_header(conf->query_token, NULL)))) {
        if (a) {
            curl_slist_free_all(a->auth);
    free(a->base);
            free(a->buckets);
        }
        free(a);
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    a->refresh_ms = conf->admission_refresh_ms;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->wake, NULL);
    /* The first poll before any write: hot partitions are known at once. */
    CURL *h = curl_easy_init();
    if (h) {
        padmit_poll(a, h);
        curl_easy_cleanup(h);
    }
    if (pthread_create(&a->thread, NULL, padmit_main, a) != 0) {
        snprintf(errstr, errstr_size, "admission thread: %s", strerror(errno));
        padmit_destroy(a);
        return -1;
    }
    a->started = 1;
    *out = a;
    return 0;
}

void padmit_destroy(padmit *a) {
    if (!a)
        return;
    if (a->started) {
        pthread_mutex_lock(&a->lock);
        a->stop = 1;
        pthread_cond_signal(&a->wake);
        pthread_mutex_unlock(&a->lock);
        pthread_join(a->thread, NULL);
    }
    for (size_t i = 0; i < a->nbuckets; i++)
        free(a->buckets[i].name);
    free(a->buckets);
    pthread_cond_destroy(&a->wake);
    pthread_mutex_destroy(&a->lock);
    curl_slist_free_all(a->auth);
    free(a->base);
    free(a);
}

/* Under lock: bucket's entry, added (unknown) when new; NULL when the
 * table is full (that bucket goes unchecked). */
static padmit_bucket *padmit_bucket_get(padmit *a, const char *bucket) {
    for (size_t i = 0; i < a->nbuckets; i++)
        if (strcmp(a->buckets[i].name, bucket) == 0)
            return &a->buckets[i];
    if (a->nbuckets == PADMIT_MAX_BUCKETS)
        return NULL;
    padmit_bucket *b = &a->buckets[a->nbuckets];
    if (!(b->name = strdup(bucket)))
        return NULL;
    a->nbuckets++;
    return b;
}

int padmit_refuse(padmit *a, const char *bucket, int32_t partition,
                  objlog_write_result *res) {
    if (!a)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, retry_us = 0;
    const char *why = NULL;
    pthread_mutex_lock(&a->lock);
    padmit_bucket *b = padmit_bucket_get(a, bucket);
    if (partition >= 0 && partition < PADMIT_MAX_PARTS && a->slow[partition]) {
        why = "its partition's apply lag is over objlogd's --slowdown-lag";
        retry_us = 1000000;
    } else if (b && b->known) {
        if (!tokenbucket_take(&b->all, b->rps, b->burst, now_us, &retry_us)) {
            why = "over the bucket's rate limit";
        } else if (!tokenbucket_take(&b->write, b->write_rps, b->write_burst, now_us,
                                     &retry_us)) {
            if (b->rps) /* give back the token the first limit took */
                b->all.micro += TOKENBUCKET_UNIT;
            why = "over the bucket's write rate limit";
        }
    }
    pthread_mutex_unlock(&a->lock);
    if (!why)
        return 0;
    res->status = OBJLOG_STATUS_SLOW_DOWN;
    snprintf(res->error_code, sizeof(res->error_code), "SlowDown");
    snprintf(res->error_message, sizeof(res->error_message),
             "not sent: bucket %s: %s; retry after %lld s", bucket, why,
             (long long)tokenbucket_retry_seconds(retry_us));
    return 1;
}

void padmit_defer(padmit *a, write_op *op) {
    pthread_mutex_lock(&a->lock);
    op->next = NULL;
    write_op **tail = &a->queue;
    while (*tail)
        tail = &(*tail)->next;
    *tail = op;
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->lock);
}
