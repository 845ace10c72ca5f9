/* admit.c: admission control at objlogd's edge. Every
 * bucket-scoped request of the JSON API and of the S3 endpoint passes
 * admit_request before it is read or logged: per-bucket and per-tenant
 * token buckets (tokenbucket.h) and, for writes, the hot-partition guard.
 * A refused request is answered 503 SlowDown with Retry-After and counted
 * in objlog_admission_rejected_total{bucket,reason}; it never reaches the
 * log, so the state machine never sees it.
 *
 * Where the limits come from: a bucket's own RateLimit is in its bucket
 * record (SetRateLimit events, decided by the state machine); without one
 * the --rate-limit-bucket default applies; --rate-limit-tenant bounds all
 * requests of a tenant's buckets (tenant "" has none). The bucket record is
 * cached per bucket and read again whenever its partition has applied
 * anything since (objlog_materializer_applied moved): a limit takes effect
 * with the first request after its event applied, with no timer.
 *
 * Invariant: token state and counters change only under `mu`; a request
 * that is refused by a later check gives back the tokens the earlier ones
 * took, so a refusal costs no quota and the counters count each refused
 * request exactly once, under the first reason that refused it.
 */
#include "core.h"
#include "admit.h"
#include "read.h"
#include "server.h"
#include "watermark.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keycodec.h"
#include "rangemap.h"
#include "tokenbucket.h"

#define ADMIT_SLOTS 4096
#define ADMIT_TENANT_MAX 256

static const char *const admit_reason_names[ADMIT_REASONS] = {
    "ok", "bucket", "tenant", "hot_partition"};

typedef struct admit_entry admit_entry;
struct admit_entry {
    char *name;                  /* bucket or tenant */
    admit_entry *next;           /* chain of its slot */
    tokenbucket all, write;
    uint64_t rejected[ADMIT_REASONS];
    /* buckets: the record as of `applied` on partition `part` */
    int cached;
    int64_t applied;
    char tenant[ADMIT_TENANT_MAX + 1];
    int has_limit;
    Objlog__RateLimit limit;
};

struct admit {
    admit_conf conf;
    pthread_mutex_t mu;
    admit_entry *buckets[ADMIT_SLOTS];
    admit_entry *tenants[ADMIT_SLOTS];
};

const char *admit_reason_name(admit_reason r) {
    return r >= 0 && r < ADMIT_REASONS ? admit_reason_names[r] : "?";
}

admit *admit_new(const admit_conf *conf) {
    admit *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->conf = *conf;
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

static void admit_free_chain(admit_entry **slots) {
    for (int i = 0; i < ADMIT_SLOTS; i++)
        for (admit_entry *e = slots[i], *n; e; e = n) {
            n = e->next;
            free(e->name);
            free(e);
        }
}

void admit_destroy(admit *a) {
    if (!a)
        return;
    admit_free_chain(a->buckets);
    admit_free_chain(a->tenants);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

const admit_conf *admit_get_conf(const admit *a) { return &a->conf; }

static uint32_t admit_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h % ADMIT_SLOTS;
}

/* Under mu: the entry of name, created when absent; NULL out of memory. */
static admit_entry *admit_entry_get(admit_entry **slots, const char *name) {
    uint32_t h = admit_hash(name);
    for (admit_entry *e = slots[h]; e; e = e->next)
        if (strcmp(e->name, name) == 0)
            return e;
    admit_entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->name = strdup(name))) {
        free(e);
        return NULL;
    }
    e->next = slots[h];
    slots[h] = e;
    return e;
}

static void admit_refund(tokenbucket *b, uint32_t rps) {
    if (rps)
        b->micro += TOKENBUCKET_UNIT;
}

/* Under mu: the token checks of t, in order bucket, bucket writes, tenant. */
static admit_reason admit_tokens(admit *a, admit_entry *be, const admit_target *t,
                                 int64_t now_us, int64_t *retry_us) {
    uint32_t rps = a->conf.bucket_rps, burst = a->conf.bucket_burst;
    uint32_t wrps = 0, wburst = 0;
    if (t->limit) {
        rps = t->limit->rps;
        burst = t->limit->burst;
        wrps = t->limit->write_rps;
        wburst = t->limit->write_burst;
    }
    if (!t->write)
        wrps = 0;
    if (!tokenbucket_take(&be->all, rps, burst, now_us, retry_us))
        return ADMIT_BUCKET;
    if (!tokenbucket_take(&be->write, wrps, wburst, now_us, retry_us)) {
        admit_refund(&be->all, rps);
        return ADMIT_BUCKET;
    }
    if (!t->tenant || !*t->tenant || !a->conf.tenant_rps)
        return ADMIT_OK;
    admit_entry *te = admit_entry_get(a->tenants, t->tenant);
    if (te && !tokenbucket_take(&te->all, a->conf.tenant_rps, a->conf.tenant_burst,
                                now_us, retry_us)) {
        admit_refund(&be->all, rps);
        admit_refund(&be->write, wrps);
        return ADMIT_TENANT;
    }
    return ADMIT_OK;
}

admit_reason admit_decide(admit *a, const admit_target *t, int64_t now_us,
                          int64_t *retry_s) {
    int64_t retry_us = 0;
    admit_reason r = ADMIT_OK;
    pthread_mutex_lock(&a->mu);
    admit_entry *be = admit_entry_get(a->buckets, t->bucket);
    if (!be) { /* out of memory: admission is advisory, let it through */
        pthread_mutex_unlock(&a->mu);
        return ADMIT_OK;
    }
    if (t->write && a->conf.slowdown_lag > 0 && t->lag > a->conf.slowdown_lag)
        r = ADMIT_HOT_PARTITION;
    else
        r = admit_tokens(a, be, t, now_us, &retry_us);
    if (r != ADMIT_OK)
        be->rejected[r]++;
    pthread_mutex_unlock(&a->mu);
    if (retry_s)
        *retry_s = r == ADMIT_OK ? 0 : tokenbucket_retry_seconds(retry_us);
    return r;
}

uint64_t admit_rejected(admit *a, const char *bucket, admit_reason why) {
    uint64_t n = 0;
    pthread_mutex_lock(&a->mu);
    uint32_t h = admit_hash(bucket);
    for (admit_entry *e = a->buckets[h]; e; e = e->next)
        if (strcmp(e->name, bucket) == 0)
            n = e->rejected[why];
    pthread_mutex_unlock(&a->mu);
    return n;
}

void admit_metrics(FILE *f, admit *a) {
    fputs("# HELP objlog_admission_rejected_total Requests answered 503 SlowDown "
          "by admission control, before the log, per bucket and reason.\n"
          "# TYPE objlog_admission_rejected_total counter\n", f);
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < ADMIT_SLOTS; i++)
        for (admit_entry *e = a->buckets[i]; e; e = e->next)
            for (int r = ADMIT_BUCKET; r < ADMIT_REASONS; r++) {
                if (!e->rejected[r])
                    continue;
                /* bucket names are [a-z0-9.-]: nothing to escape */
                fprintf(f, "objlog_admission_rejected_total{bucket=\"%s\",reason=\"%s\"} %llu\n",
                        e->name, admit_reason_names[r], (unsigned long long)e->rejected[r]);
            }
    pthread_mutex_unlock(&a->mu);
}

/* ------------------------------------------------------------------ HTTP */

typedef struct admit_info {
    int exists;
    char tenant[ADMIT_TENANT_MAX + 1];
    int has_limit;
    Objlog__RateLimit limit;
} admit_info;

static int64_t admit_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int32_t admit_partition(objlog_query *q, const char *bucket, const uint8_t *key,
                               size_t kn) {
    keybuf rk;
    keybuf_init(&rk);
    int32_t p = -1;
    if (keycodec_route_key(&rk, bucket, strlen(bucket), key, kn) == 0)
        p = rangemap_partition(objlog_materializer_rangemap(q->m), rk.data, rk.len);
    keybuf_free(&rk);
    return p;
}

/* The bucket's record from the store (no fence: admission acts on what
 * this node has applied). 0, or -1 on a read error (admitted then). */
static int admit_read_record(objlog_query *q, const char *bucket, admit_info *out) {
    memset(out, 0, sizeof(*out));
    view *v = view_open(q->store);
    if (!v)
        return -1;
    view_bucket b;
    char err[256];
    view_rc rc = view_get_bucket(v, bucket, &b, err, sizeof(err));
    view_close(v);
    if (rc == VIEW_NO_SUCH_BUCKET)
        return 0;
    if (rc != VIEW_OK)
        return -1;
    out->exists = 1;
    snprintf(out->tenant, sizeof(out->tenant), "%s", b.record->tenant ? b.record->tenant : "");
    if (b.record->rate_limit) {
        out->has_limit = 1;
        out->limit = *b.record->rate_limit;
        out->limit.base.unknown_fields = NULL;
        out->limit.base.n_unknown_fields = 0;
    }
    view_bucket_free(&b);
    return 0;
}

/* The cached record, read again when the bucket's partition applied
 * anything since it was cached. Buckets that do not exist are not cached
 * (no state for names nobody created). */
static void admit_lookup(objlog_query *q, const char *bucket, int32_t part, admit_info *out) {
    admit *a = q->admit;
    int64_t applied = part >= 0 ? objlog_materializer_applied(q->m, part) : -1;
    pthread_mutex_lock(&a->mu);
    uint32_t h = admit_hash(bucket);
    for (admit_entry *e = a->buckets[h]; e; e = e->next)
        if (e->cached && e->applied == applied && strcmp(e->name, bucket) == 0) {
            out->exists = 1;
            memcpy(out->tenant, e->tenant, sizeof(out->tenant));
            out->has_limit = e->has_limit;
            out->limit = e->limit;
            pthread_mutex_unlock(&a->mu);
            return;
        }
    pthread_mutex_unlock(&a->mu);
    if (admit_read_record(q, bucket, out) < 0 || !out->exists)
        return;
    pthread_mutex_lock(&a->mu);
    admit_entry *e = admit_entry_get(a->buckets, bucket);
    if (e) {
        e->cached = 1;
        e->applied = applied;
        memcpy(e->tenant, out->tenant, sizeof(e->tenant));
        e->has_limit = out->has_limit;
        e->limit = out->limit;
    }
    pthread_mutex_unlock(&a->mu);
}

/* Events in the log of p this node has not applied yet (0 when it does
 * not apply p, or no end offset is known). */
int64_t admit_partition_lag(objlog_query *q, int32_t p) {
    if (p < 0 || !objlog_materializer_applies(q->m, p))
        return 0;
    int64_t end = wm_last_end(q->wm, p);
    int64_t applied = objlog_materializer_applied(q->m, p);
    return end > applied ? end - applied : 0;
}

static void admit_reply(http_ctx *c, const char *bucket, admit_reason r, int64_t retry_s,
                        int32_t part, int64_t lag) {
    char ra[32];
    snprintf(ra, sizeof(ra), "%lld", (long long)retry_s);
    http_add_header(c, "Retry-After", ra);
    char msg[320];
    if (r == ADMIT_HOT_PARTITION)
        snprintf(msg, sizeof(msg),
                 "partition %d lags %lld events (more than --slowdown-lag %lld): "
                 "writes to it slow down; retry after %lld s",
                 (int)part, (long long)lag, (long long)c->q->admit->conf.slowdown_lag,
                 (long long)retry_s);
    else
        snprintf(msg, sizeof(msg), "%s %s is over its request-rate limit; retry after %lld s",
                 r == ADMIT_TENANT ? "the tenant of bucket" : "bucket", bucket,
                 (long long)retry_s);
    json_t *extra = json_pack("{s:s, s:I}", "reason", admit_reason_name(r), "retry_after_s",
                              (json_int_t)retry_s);
    http_reply_error_rid(c, 503, "SlowDown", c->request_id, msg, extra);
}

int admit_request(http_ctx *c, const char *bucket, const uint8_t *key, size_t kn) {
    objlog_query *q = c->q;
    /* A parked read runs its route again: it was admitted the first time. */
    if (!q->admit || c->fenced)
        return 0;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(c->req);
    int write = cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD;
    admit_info info;
    admit_lookup(q, bucket, admit_partition(q, bucket, (const uint8_t *)"", 0), &info);
    if (!info.exists)
        return 0; /* NoSuchBucket (or a CreateBucket) follows: nothing to limit */
    int32_t part = write ? admit_partition(q, bucket, key, kn) : -1;
    int64_t lag = write ? admit_partition_lag(q, part) : 0;
    admit_target t = {.bucket = bucket, .tenant = info.tenant,
                      .limit = info.has_limit ? &info.limit : NULL, .write = write,
                      .lag = lag};
    int64_t retry_s;
    admit_reason r = admit_decide(q->admit, &t, admit_now_us(), &retry_s);
    if (r == ADMIT_OK)
        return 0;
    admit_reply(c, bucket, r, retry_s, part, lag);
    return -1;
}

/* ------------------------------------------------------------- reading */

static json_t *admit_limit_json(uint32_t rps, uint32_t burst) {
    return json_pack("{s:I, s:I}", "rps", (json_int_t)rps, "burst",
                     (json_int_t)(rps ? tokenbucket_depth(rps, burst) : 0));
}

/* GET /v1/buckets/{b}/ratelimit: the limit in force (fenced on the
 * bucket's partition, so a read after the SetRateLimit's token sees it). */
void admit_get_rate_limit(http_ctx *c, const char *bucket) {
    view_bucket b;
    if (read_bucket_record(c, bucket, &b) < 0)
        return;
    admit_conf none = {0};
    const admit_conf *ac = c->q->admit ? &c->q->admit->conf : &none;
    const Objlog__RateLimit *l = b.record->rate_limit;
    const char *source = l ? "bucket" : ac->bucket_rps ? "default" : "none";
    json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:s, s:o, s:I}", "bucket", bucket, "source",
                          source,
                          "all", admit_limit_json(l ? l->rps : ac->bucket_rps,
                                                  l ? l->burst : ac->bucket_burst),
                          "write", admit_limit_json(l ? l->write_rps : 0,
                                                    l ? l->write_burst : 0),
                          "tenant", b.record->tenant ? b.record->tenant : "",
                          "tenant_limit",
                          admit_limit_json(b.record->tenant && *b.record->tenant
                                               ? ac->tenant_rps : 0,
                                           ac->tenant_burst),
                          "slowdown_lag", (json_int_t)ac->slowdown_lag);
    view_bucket_free(&b);
    http_reply_json(c, 200, j);
}

/* GET /v1/admission: the defaults and each partition's lag and whether
 * its writes slow down (what a producer with admission=on polls). */
void admit_get_status(http_ctx *c) {
    objlog_query *q = c->q;
    admit_conf none = {0};
    const admit_conf *ac = q->admit ? &q->admit->conf : &none;
    json_t *parts = json_array();
    int n = objlog_materializer_partitions(q->m);
    for (int p = 0; p < n; p++) {
        int64_t lag = admit_partition_lag(q, p);
        json_array_append_new(parts, json_pack("{s:i, s:I, s:b}", "partition", p, "lag",
                                               (json_int_t)lag, "slow",
                                               ac->slowdown_lag > 0 && lag > ac->slowdown_lag));
    }
    http_reply_json(c, 200, json_pack("{s:o, s:o, s:I, s:o}", "bucket_default",
                                      admit_limit_json(ac->bucket_rps, ac->bucket_burst),
                                      "tenant_default",
                                      admit_limit_json(ac->tenant_rps, ac->tenant_burst),
                                      "slowdown_lag", (json_int_t)ac->slowdown_lag,
                                      "partitions", parts));
}
