/* quota.c: the producer's tenant-quota pre-check. When
 * tenant.quota.tenant and a max are configured, one small thread reads
 * GET {query.url}/v1/tenants/{t}/stats every tenant.quota.refresh.ms and
 * keeps the last answer; put_object and complete_upload compare that
 * cached usage with the limits and refuse up front, without any HTTP on
 * the caller's path. This is advisory and stale by up to refresh.ms plus
 * the stats view's own lag; the exact, deterministic limit is the bucket
 * quota the state machine enforces (QuotaExceeded).
 *
 * Invariant: `have`, `objects`, `bytes` and `error` change only under
 * lock, written by the refresh thread; a failed refresh keeps the last
 * good numbers (fail-open: an unreachable query service never blocks
 * writes, it only lets them through unchecked).
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

#define QUOTA_MAX_BODY (1024 * 1024)
#define QUOTA_HTTP_TIMEOUT_MS 5000

struct quota {
    char *url;                   /* .../v1/tenants/{escaped}/stats */
    struct curl_slist *auth;     /* query.token's header, NULL none */
    char *tenant;
    uint64_t max_bytes, max_objects;
    int refresh_ms;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop;                    /* guarded by lock */
    int have;                    /* a refresh has succeeded */
    uint64_t objects, bytes;     /* the tenant's usage at the last refresh */
    uint64_t refreshes;          /* successful refreshes (tests) */
    char error[160];             /* why the last refresh failed, or "" */
};

static int quota_parse(const char *body, uint64_t *objects, uint64_t *bytes,
                       char *err, size_t err_size) {
    json_t *j = json_loads(body, 0, NULL);
    json_t *o = json_object_get(j, "objects"), *b = json_object_get(j, "bytes");
    if (!json_is_integer(o) || !json_is_integer(b)) {
        snprintf(err, err_size, "tenant stats: no objects/bytes in the answer");
        json_decref(j);
        return -1;
    }
    *objects = (uint64_t)json_integer_value(o);
    *bytes = (uint64_t)json_integer_value(b);
    json_decref(j);
    return 0;
}

/* One GET of the tenant's stats; updates the cache under lock. A tenant
 * the view has never seen (404) has no usage yet: zero. */
static void quota_refresh(quota *q, CURL *h) {
    bodybuf body = {.max = QUOTA_MAX_BODY};
    char err[160] = "";
    uint64_t objects = 0, bytes = 0;
    long status = 0;
    CURLcode rc = qhttp_get(h, q->url, q->auth, QUOTA_HTTP_TIMEOUT_MS, &body, &status);
    if (rc != CURLE_OK)
        snprintf(err, sizeof(err), "tenant stats: %s", curl_easy_strerror(rc));
    else if (status != 200 && status != 404)
        snprintf(err, sizeof(err), "tenant stats: HTTP %ld", status);
    else if (status == 200)
        quota_parse(body.data ? body.data : "", &objects, &bytes, err, sizeof(err));
    bodybuf_free(&body);
    pthread_mutex_lock(&q->lock);
    snprintf(q->error, sizeof(q->error), "%s", err);
    if (!err[0]) {
        q->have = 1;
        q->objects = objects;
        q->bytes = bytes;
        q->refreshes++;
    }
    pthread_mutex_unlock(&q->lock);
}

static void *quota_main(void *arg) {
    quota *q = arg;
    CURL *h = curl_easy_init();
    pthread_mutex_lock(&q->lock);
    while (!q->stop) {
        struct timespec until;
        ptime_deadline(&until, q->refresh_ms);
        while (!q->stop &&
               pthread_cond_timedwait(&q->wake, &q->lock, &until) != ETIMEDOUT)
            ;
        if (q->stop)
            break;
        pthread_mutex_unlock(&q->lock);
        if (h)
            quota_refresh(q, h);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    curl_easy_cleanup(h);
    return NULL;
}

static int quota_build_url(quota *q, const char *base, char *errstr,
                           size_t errstr_size) {
    CURL *h = curl_easy_init();
    char *e = h ? curl_easy_escape(h, q->tenant, 0) : NULL;
    size_t n = strlen(base) + (e ? strlen(e) : 0) + 32;
    q->url = e ? malloc(n) : NULL;
    if (q->url)
        snprintf(q->url, n, "%s/v1/tenants/%s/stats", base, e);
    curl_free(e);
    if (h) {
        /* The first refresh runs here, before any write, so a producer
         * starts with the tenant's usage rather than unchecked. */
        if (q->url)
            quota_refresh(q, h);
        curl_easy_cleanup(h);
    }
    if (!q->url) {
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    return 0;
}

int quota_new(const objlog_producer_conf *conf, quota **out, char *errstr,
              size_t errstr_size) {
    *out = NULL;
    if (!conf->quota_max_bytes && !conf->quota_max_objects)
        return 0;
    if (!conf->quota_tenant) {
        snprintf(errstr, errstr_size,
                 "tenant.quota.tenant is required with tenant.quota.max_*");
        return -1;
    }
    if (!conf->query_url) {
        snprintf(errstr, errstr_size, "query.url is required with tenant.quota.*");
        return -1;
    }
    quota *q = calloc(1, sizeof(*q));
    if (!q || !(q->tenant = strdup(conf->quota_tenant))) {
        free(q);
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    q->max_bytes = conf->quota_max_bytes;
    q->max_objects = conf->quota_max_objects;
    q->refresh_ms = conf->quota_refresh_ms;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->wake, NULL);
    if (conf->query_token && !(q->auth = qhttp_auth_header(conf->query_token, NULL))) {
        snprintf(errstr, errstr_size, "out of memory");
        quota_destroy(q);
        return -1;
    }
    if (quota_build_url(q, conf->query_url, errstr, errstr_size) < 0) {
        quota_destroy(q);
        return -1;
    }
    if (pthread_create(&q->thread, NULL, quota_main, q) != 0) {
        snprintf(errstr, errstr_size, "tenant quota thread: %s", strerror(errno));
        quota_destroy(q);
        return -1;
    }
    q->started = 1;
    *out = q;
    return 0;
}

void quota_destroy(quota *q) {
    if (!q)
        return;
    if (q->started) {
        pthread_mutex_lock(&q->lock);
        q->stop = 1;
        pthread_cond_signal(&q->wake);
        pthread_mutex_unlock(&q->lock);
        pthread_join(q->thread, NULL);
    }
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->lock);
    curl_slist_free_all(q->auth);
    free(q->url);
    free(q->tenant);
    free(q);
}

/* Both tenant limits refuse with one message shape, so a caller matching
 * on it (or a person reading it) sees the same words for either limit;
 * max 0 means no limit. */
static int quota_limit_reached(const char *tenant, const char *setting,
                               const char *verb, uint64_t used,
                               const char *unit, uint64_t max, char *errstr,
                               size_t errstr_size) {
    if (!max || used < max)
        return 0;
    snprintf(errstr, errstr_size,
             "tenant quota exceeded (tenant.quota.%s): tenant \"%s\" "
             "%s %llu %s of %llu",
             setting, tenant, verb, (unsigned long long)used, unit,
             (unsigned long long)max);
    return -1;
}

int quota_check(quota *q, char *errstr, size_t errstr_size) {
    if (!q)
        return 0;
    pthread_mutex_lock(&q->lock);
    uint64_t objects = q->objects, bytes = q->bytes;
    int have = q->have;
    pthread_mutex_unlock(&q->lock);
    if (!have)
        return 0;
    if (quota_limit_reached(q->tenant, "max_bytes", "uses", bytes, "bytes",
                            q->max_bytes, errstr, errstr_size) < 0 ||
        quota_limit_reached(q->tenant, "max_objects", "has", objects, "objects",
                            q->max_objects, errstr, errstr_size) < 0)
        return -1;
    return 0;
}
