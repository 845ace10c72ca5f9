/* test_logdown.c: the log goes away and comes back.
 * Owns the claim that a view whose whole Kafka cluster dies stays bounded
 * and honest, and recovers by itself when the cluster returns.
 *
 * One `objlogd --brokers` view (view1), a versioned bucket and objects in
 * it; gateway writers (PUT, ack=applied, timeout_ms=2000, a request id of
 * their own), a reader of existing objects with consistency=eventual, a
 * strong reader (the default read-index fence, timeout_ms=2000) and a
 * /readyz poller run throughout. Then every broker is SIGKILLed. While the
 * log is down:
 *   (1) every gateway write answers within timeout_ms + 3 s, with 503 and
 *       a JSON body naming its request id (the X-Objlog-Request-Id header
 *       echoed): no write hangs;
 *   (2) /readyz answers 503 (ready false, a reason) within 15 s of the
 *       kill, each call in under 2 s;
 *   (3) eventual GETs of existing objects answer 200, each in under 1 s:
 *       no HTTP worker waits on a broker;
 *   (4) strong GETs answer (503) within timeout_ms + 3 s, never hang;
 *   (5) a second view (view2, its own --data) with a write pending
 *       (timeout_ms=30000) exits 0 within 5 s of SIGTERM; so does a
 *       cluster node (view3, `--cluster ld`, alone in its group), whose
 *       membership refresher and group consumer ask brokers that are
 *       gone.
 * Then every broker starts again and, without restarting view1:
 *   (6) /readyz answers 200 within 60 s; new writes answer 200; strong
 *       GETs answer 200;
 *   (7) every write not answered 200 resolves by retrying it with its
 *       request id (200), and each key's object carries the etag of the
 *       last acknowledged write to it; every acknowledged write is in the
 *       version list exactly once (nothing lost, nothing applied twice).
 *
 * Each writer owns its keys and, once a write to a key is unanswered or
 * 503, writes that key no more until the end resolves it: "the last
 * acknowledged write" of a key is then well defined.
 *
 * Every check is evaluated and printed (LOGDOWN_CHECK lines, then one
 * LOGDOWN_SUMMARY line with the measured numbers) before the test fails
 * on the first failed one. Real Kafka only: skipped under mock. Every
 * process (the broker JVM, both views) is a child that dies with the test.
 * The HTTP client here is libcurl with a per-call timeout (httpc.h has a
 * fixed 30 s one): a call that hangs is measured, not waited out. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "testlog.h"
#include "viewproc.h"

#define LD_PARTITIONS 2
#define LD_BUCKET "ld-bucket"
#define LD_WRITERS 3
#define LD_KEYS 24                 /* per writer */
#define LD_TIMEOUT_MS 2000         /* timeout_ms of the load's writes and strong reads */
#define LD_MARGIN_MS 3000          /* the correctness bound's margin */
#define LD_HANG_MS 10000           /* beyond the bound: the client gives up (a hang) */
#define LD_OUTAGE_MS 15000         /* brokers down this long */
#define LD_READYZ_FAIL_MS 15000
#define LD_READYZ_CALL_MS 2000
#define LD_EVENTUAL_MS 1000
#define LD_SIGTERM_MS 5000
#define LD_RECOVER_MS 60000
#define LD_MAX_WRITES 20000

/* Phases a call is counted in: the one it started in, except that a call
 * in flight when the brokers were killed counts as "at kill" (outage
 * behaviour too: it must be answered in time as well). */
enum { PH_BEFORE, PH_KILL, PH_OUTAGE, PH_RESTART, PH_AFTER, PH_COUNT };
static const char *const ph_name[PH_COUNT] = {"before", "at kill", "outage", "restart", "after"};

/* ------------------------------------------------------------ http client */

typedef struct ld_resp {
    long status;       /* 0: no answer (transport error or client timeout) */
    long ms;
    char body[65536];
    size_t len;
    char rid[80];      /* X-Objlog-Request-Id of the answer */
    char err[CURL_ERROR_SIZE];
} ld_resp;

static size_t ld_body_cb(char *p, size_t sz, size_t n, void *arg) {
    ld_resp *r = arg;
    size_t k = sz * n, room = sizeof(r->body) - 1 - r->len;
    memcpy(r->body + r->len, p, k < room ? k : room);
    r->len += k < room ? k : room;
    r->body[r->len] = '\0';
    return k;
}

static size_t ld_header_cb(char *p, size_t sz, size_t n, void *arg) {
    ld_resp *r = arg;
    size_t k = sz * n;
    static const char name[] = "x-objlog-request-id:";
    if (k > sizeof(name) - 1 && strncasecmp(p, name, sizeof(name) - 1) == 0) {
        const char *v = p + sizeof(name) - 1;
        while (*v == ' ')
            v++;
        size_t vl = strcspn(v, "\r\n");
        snprintf(r->rid, sizeof(r->rid), "%.*s", (int)(vl < 79 ? vl : 79), v);
    }
    return k;
}

/* One request on h (keep-alive), given up after client_ms. rid: sent as
 * X-Objlog-Request-Id when set. Returns r->status. */
static long ld_http(CURL *h, const char *method, const char *url, const char *body,
                    const char *rid, long client_ms, ld_resp *r) {
    memset(r, 0, sizeof(*r));
    curl_easy_reset(h);
    struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
    char rh[96];
    if (rid) {
        snprintf(rh, sizeof(rh), "X-Objlog-Request-Id: %s", rid);
        hl = curl_slist_append(hl, rh);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, ld_body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, ld_header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, client_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->err);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    long long t0 = viewtest_ms();
    CURLcode rc = curl_easy_perform(h);
    r->ms = (long)(viewtest_ms() - t0);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    else if (!r->err[0])
        snprintf(r->err, sizeof(r->err), "%s", curl_easy_strerror(rc));
    curl_slist_free_all(hl);
    return r->status;
}

/* snprintf for messages that may be cut short (never checked by -Wformat-truncation). */
static void ld_fmt(char *out, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, n, fmt, ap);
    va_end(ap);
}

/* A string field of a JSON body ("a.b" looks inside object a), copied. */
static int ld_json_str(const char *body, const char *path, char *out, size_t out_size) {
    json_t *j = json_loads(body, 0, NULL), *v = j;
    char name[64];
    const char *p = path;
    out[0] = '\0';
    while (v && *p) {
        size_t n = strcspn(p, ".");
        snprintf(name, sizeof(name), "%.*s", (int)n, p);
        v = json_object_get(v, name);
        p += n + (p[n] == '.');
    }
    int ok = json_is_string(v);
    if (ok)
        snprintf(out, out_size, "%s", json_string_value(v));
    json_decref(j);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------------ state */

typedef struct ld_write {
    char key[32];
    char etag[48];
    char rid[33];
    int phase;        /* when it was sent first */
    long first_status;
    int acked;        /* 200 at last */
    int retries;      /* at the end */
    int resolved;     /* acked by a retry at the end */
} ld_write;

/* Per phase and kind of call. */
typedef struct ld_stat {
    long n, ok, s503, other, noanswer;
    long max_ms;
    long over_bound;  /* answers later than the kind's bound */
    char first_bad[300];
} ld_stat;

enum { K_WRITE, K_EVENTUAL, K_STRONG, K_READYZ, K_COUNT };
static const char *const k_name[K_COUNT] = {"write", "eventual GET", "strong GET", "readyz"};

typedef struct ld_key {
    char name[32];
    int expected;     /* index of its last acknowledged write, -1 none */
    int blocked;      /* a write to it awaits the end's resolution */
} ld_key;

typedef struct ldtest {
    viewtest_frame f;
    viewproc v1, v2;
    proc *v3;                 /* a cluster node: its stop with the log down */
    char v3_url[128], v3_log[320];
    long long t_kill, t_restart;
    atomic_int phase, stop;
    atomic_int writers_ready;
    pthread_mutex_t mu;
    ld_stat st[PH_COUNT][K_COUNT];
    ld_write *w;
    int nw;
    ld_key keys[LD_WRITERS][LD_KEYS];
    long write_rid_problems;  /* non-200 answers not naming the request id */
    char write_rid_first[300];
    /* readyz */
    long readyz_fail_ms;      /* kill -> first 503, -1 none */
    int readyz_reason_ok;     /* that answer: ready false and a reason */
    char readyz_reason[256];
    long readyz_flaps;        /* 200 during the outage after the first 503 */
    long readyz_recover_ms;   /* restart -> first 200, -1 none */
    atomic_int readyz_ok_again;
    long after_last_bad_ms;   /* /readyz 200 again -> the last write not answered 200 */
    unsigned seq;
} ldtest;

static ldtest T;

static void ld_say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "logdown [%6.1fs] ", (double)(viewtest_ms() - T.f.t0) / 1000.0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* A request id unique in this run (the topic is new for every run). */
static void ld_rid(char out[33]) {
    pthread_mutex_lock(&T.mu);
    unsigned s = ++T.seq;
    pthread_mutex_unlock(&T.mu);
    snprintf(out, 33, "%08x%08x%016llx", (unsigned)getpid(), s,
             (unsigned long long)viewtest_ms() * 2654435761ULL);
}

/* Counts call r (started in phase ph); returns the phase it counted in. */
static int ld_record(int ph, int kind, const ld_resp *r, long bound_ms, const char *what) {
    if (ph == PH_BEFORE && atomic_load(&T.phase) != PH_BEFORE)
        ph = PH_KILL;
    pthread_mutex_lock(&T.mu);
    ld_stat *s = &T.st[ph][kind];
    s->n++;
    if (r->status == 200)
        s->ok++;
    else if (r->status == 503)
        s->s503++;
    else if (r->status == 0)
        s->noanswer++;
    else
        s->other++;
    if (r->ms > s->max_ms)
        s->max_ms = r->ms;
    int bad = r->ms >= bound_ms || r->status == 0;
    if (bad)
        s->over_bound++;
    /* After recovery every answer must be a 200: keep the first that is
     * not, whatever its time. */
    if ((bad || (ph == PH_AFTER && r->status != 200)) && !s->first_bad[0])
        ld_fmt(s->first_bad, sizeof(s->first_bad), "%s: %ld after %ld ms %.150s%s", what,
                 r->status, r->ms, r->status ? r->body : r->err, r->status ? "" : " (no answer)");
    pthread_mutex_unlock(&T.mu);
    return ph;
}

static void ld_url(char *out, size_t n, const viewproc *v, const char *path) {
    snprintf(out, n, "%s%s", v->url, path);
}

static char *ld_put_body(const ld_write *w) {
    json_t *j = json_pack("{s:I, s:s, s:s}", "size", (json_int_t)strlen(w->etag), "etag",
                          w->etag, "content_type", "text/plain");
    char *b = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return b;
}

/* One attempt of write w at view v. */
static long ld_put(CURL *h, const viewproc *v, const ld_write *w, int timeout_ms, long client_ms,
                   ld_resp *r) {
    char path[256], url[400];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?ack=applied&timeout_ms=%d",
             LD_BUCKET, w->key, timeout_ms);
    ld_url(url, sizeof(url), v, path);
    char *body = ld_put_body(w);
    long st = ld_http(h, "PUT", url, body, w->rid, client_ms, r);
    free(body);
    return st;
}

/* A non-200 gateway answer must name the request id, body and header. */
static void ld_check_rid(const ld_write *w, const ld_resp *r) {
    char brid[80];
    if (r->status == 200 || r->status == 0)
        return;
    int ok = r->status == 503 && ld_json_str(r->body, "error.request_id", brid, sizeof(brid)) == 0 &&
             strcasecmp(brid, w->rid) == 0 && strcasecmp(r->rid, w->rid) == 0;
    if (ok)
        return;
    pthread_mutex_lock(&T.mu);
    if (!T.write_rid_problems++)
        ld_fmt(T.write_rid_first, sizeof(T.write_rid_first),
                 "%s rid %s: %ld header rid '%s' body %.150s", w->key, w->rid, r->status, r->rid,
                 r->body);
    pthread_mutex_unlock(&T.mu);
}

static int ld_new_write(const char *key, const char *etag, int ph) {
    pthread_mutex_lock(&T.mu);
    int i = T.nw < LD_MAX_WRITES ? T.nw++ : -1;
    pthread_mutex_unlock(&T.mu);
    if (i < 0)
        return -1;
    ld_write *w = &T.w[i];
    snprintf(w->key, sizeof(w->key), "%s", key);
    snprintf(w->etag, sizeof(w->etag), "%s", etag);
    ld_rid(w->rid);
    w->phase = ph;
    return i;
}

/* ---------------------------------------------------------------- threads */

static void *ld_writer(void *arg) {
    int no = (int)(intptr_t)arg;
    CURL *h = curl_easy_init();
    ld_resp *r = malloc(sizeof(*r));
    char etag[48];
    int seq = 0, next = 0;
    /* The initial objects first: a retried write per key until acked. */
    for (int k = 0; k < LD_KEYS; k++) {
        ld_key *key = &T.keys[no][k];
        snprintf(etag, sizeof(etag), "init-%d-%d", no, k);
        int i = ld_new_write(key->name, etag, PH_BEFORE);
        for (int a = 0; a < 20; a++) {
            ld_put(h, &T.v1, &T.w[i], 10000, 20000, r);
            if (a == 0)
                T.w[i].first_status = r->status;
            if (r->status == 200)
                break;
            usleep(200 * 1000);
        }
        T.w[i].acked = r->status == 200;
        key->expected = T.w[i].acked ? i : -1;
        key->blocked = !T.w[i].acked;
    }
    atomic_fetch_add(&T.writers_ready, 1);
    while (!atomic_load(&T.stop)) {
        int k = -1;
        for (int t = 0; t < LD_KEYS && k < 0; t++, next = (next + 1) % LD_KEYS)
            if (!T.keys[no][next].blocked)
                k = next;
        if (k < 0) {
            usleep(100 * 1000);
            continue;
        }
        ld_key *key = &T.keys[no][k];
        snprintf(etag, sizeof(etag), "w%d-%d", no, ++seq);
        int ph = atomic_load(&T.phase);
        int i = ld_new_write(key->name, etag, ph);
        if (i < 0)
            break;
        ld_put(h, &T.v1, &T.w[i], LD_TIMEOUT_MS, LD_TIMEOUT_MS + LD_HANG_MS, r);
        T.w[i].first_status = r->status;
        ld_record(ph, K_WRITE, r, LD_TIMEOUT_MS + LD_MARGIN_MS, "PUT");
        ld_check_rid(&T.w[i], r);
        if (r->status == 200) {
            T.w[i].acked = 1;
            key->expected = i;
        } else {
            if (ph == PH_AFTER) {
                pthread_mutex_lock(&T.mu);
                T.after_last_bad_ms = (long)(viewtest_ms() - T.t_restart - T.readyz_recover_ms);
                pthread_mutex_unlock(&T.mu);
            }
            key->blocked = 1; /* resolved at the end, by its request id */
        }
        usleep(20 * 1000);
    }
    free(r);
    curl_easy_cleanup(h);
    return NULL;
}

/* Reads every writer's keys in turn; strong: the default fence. */
static void *ld_reader(void *arg) {
    int strong = (int)(intptr_t)arg;
    CURL *h = curl_easy_init();
    ld_resp *r = malloc(sizeof(*r));
    char path[256], url[400];
    int i = 0;
    while (!atomic_load(&T.stop)) {
        const ld_key *key = &T.keys[i % LD_WRITERS][(i / LD_WRITERS) % LD_KEYS];
        i++;
        if (strong)
            snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?timeout_ms=%d", LD_BUCKET,
                     key->name, LD_TIMEOUT_MS);
        else
            snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?consistency=eventual",
                     LD_BUCKET, key->name);
        ld_url(url, sizeof(url), &T.v1, path);
        int ph = atomic_load(&T.phase);
        ld_http(h, "GET", url, NULL, NULL, strong ? LD_TIMEOUT_MS + LD_HANG_MS : LD_HANG_MS, r);
        if (strong)
            ld_record(ph, K_STRONG, r, LD_TIMEOUT_MS + LD_MARGIN_MS, "strong GET");
        else
            ld_record(ph, K_EVENTUAL, r, LD_EVENTUAL_MS, "eventual GET");
        usleep(20 * 1000);
    }
    free(r);
    curl_easy_cleanup(h);
    return NULL;
}

static void *ld_readyz(void *arg) {
    (void)arg;
    CURL *h = curl_easy_init();
    ld_resp *r = malloc(sizeof(*r));
    char url[400];
    ld_url(url, sizeof(url), &T.v1, "/readyz");
    while (!atomic_load(&T.stop)) {
        int ph = atomic_load(&T.phase);
        ld_http(h, "GET", url, NULL, NULL, LD_HANG_MS, r);
        long long now = viewtest_ms();
        ld_record(ph, K_READYZ, r, LD_READYZ_CALL_MS, "GET /readyz");
        ph = atomic_load(&T.phase); /* as of the answer */
        pthread_mutex_lock(&T.mu);
        if ((ph == PH_OUTAGE || ph == PH_RESTART) && r->status == 503 &&
            T.readyz_fail_ms < 0 && T.readyz_recover_ms < 0) {
            T.readyz_fail_ms = (long)(now - T.t_kill);
            json_t *j = json_loads(r->body, 0, NULL);
            json_t *ready = json_object_get(j, "ready");
            const char *why = json_string_value(json_object_get(j, "reason"));
            T.readyz_reason_ok = json_is_false(ready) && why && *why;
            ld_fmt(T.readyz_reason, sizeof(T.readyz_reason), "%s", why ? why : r->body);
            json_decref(j);
        } else if (ph == PH_OUTAGE && r->status == 200 && T.readyz_fail_ms >= 0) {
            T.readyz_flaps++;
        }
        if (ph >= PH_RESTART && r->status == 200 && T.readyz_recover_ms < 0) {
            T.readyz_recover_ms = (long)(now - T.t_restart);
            atomic_store(&T.readyz_ok_again, 1);
        }
        pthread_mutex_unlock(&T.mu);
        usleep(200 * 1000);
    }
    free(r);
    curl_easy_cleanup(h);
    return NULL;
}

/* (5): a write pending at view2 (timeout_ms=30000) while SIGTERM arrives. */
typedef struct ld_pending {
    int w;
    ld_resp r;
    atomic_int sent;
} ld_pending;

static void *ld_pending_writer(void *arg) {
    ld_pending *p = arg;
    CURL *h = curl_easy_init();
    atomic_store(&p->sent, 1);
    ld_put(h, &T.v2, &T.w[p->w], 30000, 40000, &p->r);
    T.w[p->w].first_status = p->r.status;
    curl_easy_cleanup(h);
    return NULL;
}

/* ----------------------------------------------------------------- checks */

typedef struct ld_checks {
    int n, failed;
    char first[600];
} ld_checks;

static void ld_check(ld_checks *c, int ok, const char *name, const char *fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    c->n++;
    fprintf(stderr, "LOGDOWN_CHECK %-4s %s: %s\n", ok ? "PASS" : "FAIL", name, detail);
    if (!ok && !c->failed++)
        snprintf(c->first, sizeof(c->first), "%s: %s", name, detail);
}

static void ld_print_stats(void) {
    fprintf(stderr, "%-8s %-13s %6s %6s %6s %6s %8s %7s %9s\n", "phase", "call", "n", "200",
            "503", "other", "noanswer", "max_ms", "over_bnd");
    for (int p = 0; p < PH_COUNT; p++)
        for (int k = 0; k < K_COUNT; k++) {
            const ld_stat *s = &T.st[p][k];
            fprintf(stderr, "%-8s %-13s %6ld %6ld %6ld %6ld %8ld %7ld %9ld%s%s\n", ph_name[p],
                    k_name[k], s->n, s->ok, s->s503, s->other, s->noanswer, s->max_ms,
                    s->over_bound, s->first_bad[0] ? "  first: " : "", s->first_bad);
        }
}

/* A kind's calls while the log was down: in flight at the kill or sent
 * during the outage. */
static ld_stat ld_down(int kind) {
    ld_stat d = T.st[PH_KILL][kind];
    const ld_stat *o = &T.st[PH_OUTAGE][kind];
    d.n += o->n;
    d.ok += o->ok;
    d.s503 += o->s503;
    d.other += o->other;
    d.noanswer += o->noanswer;
    d.over_bound += o->over_bound;
    d.max_ms = o->max_ms > d.max_ms ? o->max_ms : d.max_ms;
    if (!d.first_bad[0])
        memcpy(d.first_bad, o->first_bad, sizeof(d.first_bad));
    return d;
}

/* ------------------------------------------------------------ setup, etc. */

static int setup(void **state) {
    (void)state;
    T.f.t0 = viewtest_ms();
    pthread_mutex_init(&T.mu, NULL);
    T.readyz_fail_ms = T.readyz_recover_ms = T.after_last_bad_ms = -1;
    if (!testlog_is_kafka())
        return 0;
    curl_global_init(CURL_GLOBAL_ALL);
    T.w = calloc(LD_MAX_WRITES, sizeof(*T.w));
    assert_non_null(T.w);
    char why[512];
    if (viewtest_frame_start(&T.f, LD_PARTITIONS, "view2", why, sizeof(why)) < 0)
        fail_msg("%s", why);
    ld_say("%d-node Kafka up at %s", testlog_nodes(T.f.log), testlog_bootstrap(T.f.log));
    viewproc_init(&T.v1, testlog_bootstrap(T.f.log), T.f.data1, 0);
    viewproc_init(&T.v2, testlog_bootstrap(T.f.log), T.f.data2, 0);
    if (viewproc_start(&T.v1, 120000, why, sizeof(why)) < 0 ||
        viewproc_start(&T.v2, 120000, why, sizeof(why)) < 0)
        fail_msg("%s", why);
    char data3[300], *v3_flags[] = {"--cluster", "ld", NULL};
    snprintf(data3, sizeof(data3), "%.250s/view3", T.f.root);
    snprintf(T.v3_log, sizeof(T.v3_log), "%.250s/view3.log", T.f.root);
    T.v3 = testlog_start_view_err(T.f.log, data3, v3_flags, T.v3_log, T.v3_url,
                                  sizeof(T.v3_url));
    if (!T.v3)
        fail_msg("the cluster node did not start (stderr: %s)", T.v3_log);
    ld_say("view1 at %s (stderr: %s), view2 at %s (stderr: %s), cluster node view3 at %s "
           "(stderr: %s)", T.v1.url, T.v1.log, T.v2.url, T.v2.log, T.v3_url, T.v3_log);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    viewproc_kill(&T.v1);
    viewproc_kill(&T.v2);
    if (T.v3)
        proc_kill(T.v3);
    viewtest_frame_stop(&T.f, "test_logdown");
    free(T.w);
    if (testlog_is_kafka())
        curl_global_cleanup();
    return 0;
}

/* Retries write i at view1 with its request id (timeout_ms=10000) until
 * 200 or the deadline. 0 acked. */
static int ld_resolve(CURL *h, int i, long long deadline, ld_resp *r) {
    ld_write *w = &T.w[i];
    while (viewtest_ms() < deadline) {
        w->retries++;
        ld_put(h, &T.v1, w, 10000, 20000, r);
        if (r->status == 200) {
            char etag[64];
            ld_json_str(r->body, "etag", etag, sizeof(etag));
            w->acked = w->resolved = strcmp(etag, w->etag) == 0;
            return w->acked ? 0 : -1;
        }
        if (r->status != 503 && r->status != 0)
            return -1; /* a definite non-200: not an acknowledgement */
        usleep(300 * 1000);
    }
    return -1;
}

typedef struct ld_version {
    char key[32], etag[48];
} ld_version;

/* Every version of the bucket (eventual: the caller waited for the log
 * end), in listing order: by key, newest first. -1 with why. */
static int ld_list_versions(CURL *h, ld_version **out, long *n, char *why, size_t ws) {
    char path[1024], url[1200], km[128] = "", vm[64] = "";
    long cap = 1024;
    ld_resp *r = malloc(sizeof(*r));
    *n = 0;
    *out = malloc((size_t)cap * sizeof(**out));
    for (int page = 0; page < 1000; page++) {
        snprintf(path, sizeof(path),
                 "/v1/buckets/%s/versions?max_keys=100&consistency=eventual%s%s%s%s", LD_BUCKET,
                 km[0] ? "&key_marker=" : "", km, vm[0] ? "&version_id_marker=" : "", vm);
        ld_url(url, sizeof(url), &T.v1, path);
        if (ld_http(h, "GET", url, NULL, NULL, 20000, r) != 200) {
            ld_fmt(why, ws, "GET %.200s: %ld %.200s", path, r->status, r->body);
            free(r);
            return -1;
        }
        json_t *j = json_loads(r->body, 0, NULL), *v;
        if (!j) {
            ld_fmt(why, ws, "GET %.200s: a body larger than %zu bytes or not JSON", path,
                     sizeof(r->body) - 1);
            free(r);
            return -1;
        }
        size_t i;
        json_array_foreach(json_object_get(j, "versions"), i, v) {
            if (*n == cap)
                *out = realloc(*out, (size_t)(cap *= 2) * sizeof(**out));
            ld_version *lv = &(*out)[(*n)++];
            const char *s = json_string_value(json_object_get(v, "key"));
            snprintf(lv->key, sizeof(lv->key), "%s", s ? s : "");
            s = json_string_value(json_object_get(v, "etag"));
            snprintf(lv->etag, sizeof(lv->etag), "%s", s ? s : "");
        }
        int more = json_is_true(json_object_get(j, "is_truncated"));
        if (more) {
            const char *a = json_string_value(json_object_get(j, "next_key_marker"));
            const char *b = json_string_value(json_object_get(j, "next_version_id_marker"));
            snprintf(km, sizeof(km), "%s", a ? a : "");
            snprintf(vm, sizeof(vm), "%s", b ? b : "");
        }
        json_decref(j);
        if (!more) {
            free(r);
            return 0;
        }
    }
    free(r);
    snprintf(why, ws, "the version listing never ended");
    return -1;
}

/* --------------------------------------------------------------- the test */

static void log_down_and_back(void **state) {
    (void)state;
    if (!testlog_is_kafka()) {
        fprintf(stderr, "test_logdown: needs a real Kafka cluster (OBJLOG_TEST_LOG=kafka); "
                        "skipped under %s\n", testlog_kind());
        skip();
    }
    T.f.failed = 1;
    ld_checks ck = {0};
    CURL *h = curl_easy_init();
    ld_resp *r = malloc(sizeof(*r));
    char url[512], why[512];

    /* A versioned bucket, so a write applied twice shows as two versions. */
    ld_url(url, sizeof(url), &T.v1, "/v1/buckets/" LD_BUCKET "?timeout_ms=10000");
    for (int a = 0; a < 20 && ld_http(h, "PUT", url, "{\"versioning\":\"Enabled\"}", NULL, 20000,
                                       r) != 200; a++)
        usleep(300 * 1000);
    if (r->status != 200)
        fail_msg("create bucket: %ld %s", r->status, r->status ? r->body : r->err);
    for (int w = 0; w < LD_WRITERS; w++)
        for (int k = 0; k < LD_KEYS; k++)
            snprintf(T.keys[w][k].name, sizeof(T.keys[w][k].name), "k-%d-%02d", w, k);

    pthread_t wt[LD_WRITERS], rt[2], zt;
    for (int w = 0; w < LD_WRITERS; w++)
        assert_int_equal(pthread_create(&wt[w], NULL, ld_writer, (void *)(intptr_t)w), 0);
    while (atomic_load(&T.writers_ready) < LD_WRITERS)
        usleep(50 * 1000);
    ld_say("%d objects written; readers and /readyz poller start", T.nw);
    for (int s = 0; s < 2; s++)
        assert_int_equal(pthread_create(&rt[s], NULL, ld_reader, (void *)(intptr_t)s), 0);
    assert_int_equal(pthread_create(&zt, NULL, ld_readyz, NULL), 0);
    usleep(3000 * 1000);
    ld_say("baseline: %d writes so far", T.nw);

    /* The log goes away. */
    for (int n = 1; n <= testlog_nodes(T.f.log); n++)
        assert_int_equal(testlog_node_kill(T.f.log, n), 0);
    T.t_kill = viewtest_ms();
    atomic_store(&T.phase, PH_OUTAGE);
    ld_say("SIGKILLed all %d brokers", testlog_nodes(T.f.log));

    /* (5) view2: a write pending, then SIGTERM. */
    usleep(1500 * 1000);
    ld_pending pend = {0};
    pend.w = ld_new_write("sigterm-k", "sigterm-1", PH_OUTAGE);
    pthread_t pt;
    assert_int_equal(pthread_create(&pt, NULL, ld_pending_writer, &pend), 0);
    while (!atomic_load(&pend.sent))
        usleep(10 * 1000);
    usleep(1000 * 1000);
    long long ts = viewtest_ms();
    int st = proc_stop(T.v2.p, 8000);
    long sigterm_ms = (long)(viewtest_ms() - ts);
    T.v2.p = NULL;
    pthread_join(pt, NULL);
    int sigterm_exit = st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    ts = viewtest_ms();
    int st3 = proc_stop(T.v3, 8000);
    long v3_ms = (long)(viewtest_ms() - ts);
    T.v3 = NULL;
    int v3_exit = st3 >= 0 && WIFEXITED(st3) ? WEXITSTATUS(st3) : -1;
    ld_say("view3 (cluster node): SIGTERM -> %s %d after %ld ms",
           st3 < 0 ? "killed (no exit in 8 s), status" : "exit", v3_exit, v3_ms);
    ld_say("view2: SIGTERM with a write pending -> %s %d after %ld ms; the write got %ld %.150s",
           st < 0 ? "killed (no exit in 8 s), status" : "exit", sigterm_exit, sigterm_ms,
           pend.r.status, pend.r.status ? pend.r.body : pend.r.err);

    while (viewtest_ms() - T.t_kill < LD_OUTAGE_MS)
        usleep(100 * 1000);

    /* The log comes back. */
    atomic_store(&T.phase, PH_RESTART);
    T.t_restart = viewtest_ms();
    for (int n = 1; n <= testlog_nodes(T.f.log); n++)
        assert_int_equal(testlog_node_start(T.f.log, n), 0);
    int back = testlog_wait_ready(T.f.log, 120000);
    ld_say("brokers restarted%s (%lld ms)", back == 0 ? ", serving metadata" : ": NOT READY",
           viewtest_ms() - T.t_restart);
    while (!atomic_load(&T.readyz_ok_again) && viewtest_ms() - T.t_restart < LD_RECOVER_MS)
        usleep(100 * 1000);
    atomic_store(&T.phase, PH_AFTER);
    ld_say("/readyz %s", atomic_load(&T.readyz_ok_again) ? "is 200 again" : "NOT 200 in 60 s");
    usleep(3000 * 1000);

    /* (6) a fresh write and strong reads of every key, from here. */
    int probe = ld_new_write("probe-k", "probe-1", PH_AFTER);
    long probe_first = ld_put(h, &T.v1, &T.w[probe], LD_TIMEOUT_MS, LD_TIMEOUT_MS + LD_HANG_MS, r);
    T.w[probe].first_status = probe_first;
    if (probe_first == 200)
        T.w[probe].acked = 1;
    long strong_first_fail = 0, strong_ok = 0;
    char strong_bad[300] = "";
    for (int w = 0; w < LD_WRITERS; w++)
        for (int k = 0; k < LD_KEYS; k++) {
            char path[256];
            snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?timeout_ms=%d", LD_BUCKET,
                     T.keys[w][k].name, LD_TIMEOUT_MS);
            ld_url(url, sizeof(url), &T.v1, path);
            if (ld_http(h, "GET", url, NULL, NULL, LD_TIMEOUT_MS + LD_HANG_MS, r) == 200)
                strong_ok++;
            else if (!strong_first_fail++)
                ld_fmt(strong_bad, sizeof(strong_bad), "%s: %ld %.200s", path, r->status,
                         r->status ? r->body : r->err);
        }

    atomic_store(&T.stop, 1);
    for (int w = 0; w < LD_WRITERS; w++)
        pthread_join(wt[w], NULL);
    for (int s = 0; s < 2; s++)
        pthread_join(rt[s], NULL);
    pthread_join(zt, NULL);
    ld_say("load stopped: %d writes", T.nw);

    /* (7) every write not answered 200 resolves by its request id. */
    long unacked = 0, resolved = 0, unresolved = 0, res_max_retries = 0;
    char unres_first[400] = "";
    long long deadline = viewtest_ms() + 40000;
    for (int i = 0; i < T.nw; i++) {
        if (T.w[i].acked)
            continue;
        unacked++;
        if (ld_resolve(h, i, deadline, r) == 0) {
            resolved++;
            if (T.w[i].retries > res_max_retries)
                res_max_retries = T.w[i].retries;
        } else if (!unresolved++) {
            ld_fmt(unres_first, sizeof(unres_first), "%s (etag %s, rid %s): %ld %.200s",
                     T.w[i].key, T.w[i].etag, T.w[i].rid, r->status,
                     r->status ? r->body : r->err);
        }
    }
    /* Every resolved write is now its key's last acknowledged one. */
    for (int w = 0; w < LD_WRITERS; w++)
        for (int k = 0; k < LD_KEYS; k++)
            for (int i = 0; i < T.nw; i++)
                if (T.w[i].resolved && !strcmp(T.w[i].key, T.keys[w][k].name))
                    T.keys[w][k].expected = i;
    ld_say("resolution: %ld writes not answered 200 at first, %ld resolved, %ld unresolved",
           unacked, resolved, unresolved);

    /* The end state, as of the whole log. */
    int64_t hi[LD_PARTITIONS];
    int applied = viewproc_log_end(testlog_bootstrap(T.f.log), LD_PARTITIONS, hi, why,
                                   sizeof(why)) == 0 &&
                  viewproc_wait_applied(T.v1.url, LD_PARTITIONS, hi, 30000, why, sizeof(why)) == 0;
    if (!applied)
        ld_say("the view did not apply the log end: %s", why);
    long wrong = 0;
    char wrong_first[300] = "";
    int nkeys = 0;
    for (int w = 0; w < LD_WRITERS; w++)
        for (int k = 0; k < LD_KEYS; k++) {
            const ld_key *key = &T.keys[w][k];
            char path[256], etag[64] = "";
            nkeys++;
            snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?consistency=eventual",
                     LD_BUCKET, key->name);
            ld_url(url, sizeof(url), &T.v1, path);
            if (ld_http(h, "GET", url, NULL, NULL, 10000, r) == 200)
                ld_json_str(r->body, "etag", etag, sizeof(etag));
            const char *want = key->expected >= 0 ? T.w[key->expected].etag : "(none)";
            if (strcmp(etag, want) != 0 && !wrong++)
                ld_fmt(wrong_first, sizeof(wrong_first), "%s: etag '%s', last acked '%s' (%ld)",
                         key->name, etag, want, r->status);
        }
    ld_version *vs = NULL;
    long nv = 0, lost = 0, dup = 0, phantom = 0, acked_total = 0;
    char lost_first[200] = "", dup_first[200] = "", phantom_first[200] = "";
    int listed = ld_list_versions(h, &vs, &nv, why, sizeof(why)) == 0;
    if (listed) {
        for (int i = 0; i < T.nw; i++) {
            if (!T.w[i].acked)
                continue;
            acked_total++;
            int seen = 0;
            for (long v = 0; v < nv; v++)
                seen += !strcmp(vs[v].key, T.w[i].key) && !strcmp(vs[v].etag, T.w[i].etag);
            if (seen == 0 && !lost++)
                snprintf(lost_first, sizeof(lost_first), "%s etag %s", T.w[i].key, T.w[i].etag);
            if (seen > 1 && !dup++)
                snprintf(dup_first, sizeof(dup_first), "%s etag %s x%d", T.w[i].key, T.w[i].etag,
                         seen);
        }
        for (long v = 0; v < nv; v++) {
            int made = 0;
            for (int i = 0; i < T.nw && !made; i++)
                made = T.w[i].acked && !strcmp(vs[v].key, T.w[i].key) &&
                       !strcmp(vs[v].etag, T.w[i].etag);
            if (!made && !phantom++)
                snprintf(phantom_first, sizeof(phantom_first), "%s etag %s", vs[v].key,
                         vs[v].etag);
        }
    } else {
        ld_say("listing versions: %s", why);
    }
    free(vs);

    /* ---- the checks, all printed ---- */
    ld_print_stats();
    const ld_stat *wo = &T.st[PH_OUTAGE][K_WRITE];
    long wmax = 0, wover = 0, w503 = 0;
    const char *wbad = "";
    for (int p = 0; p < PH_COUNT; p++) {
        const ld_stat *s = &T.st[p][K_WRITE];
        wmax = s->max_ms > wmax ? s->max_ms : wmax;
        wover += s->over_bound;
        w503 += s->s503;
        if (!wbad[0] && s->first_bad[0])
            wbad = s->first_bad;
    }
    ld_check(&ck, wo->n > 0 && wover == 0,
             "1 writes answer within timeout_ms+3000",
             "%ld writes during the outage, every phase's max %ld ms (bound %d), %ld over "
             "the bound or unanswered%s%s", wo->n, wmax, LD_TIMEOUT_MS + LD_MARGIN_MS, wover,
             wbad[0] ? "; first: " : "", wbad);
    ld_check(&ck, wo->n > 0 && wo->s503 == wo->n && T.write_rid_problems == 0,
             "1 outage writes answer 503 naming the request id",
             "%ld of %ld outage writes 503 (other %ld, no answer %ld); %ld non-200 answers "
             "without the request id in body+header%s%s", wo->s503, wo->n, wo->other,
             wo->noanswer, T.write_rid_problems, T.write_rid_first[0] ? "; first: " : "",
             T.write_rid_first);
    ld_stat zd = ld_down(K_READYZ), ed = ld_down(K_EVENTUAL), sd = ld_down(K_STRONG);
    long zmax = zd.max_ms;
    ld_check(&ck, T.readyz_fail_ms >= 0 && T.readyz_fail_ms <= LD_READYZ_FAIL_MS &&
                      T.readyz_reason_ok,
             "2 /readyz answers 503 with a reason after the kill",
             "first 503 %ld ms after the kill (bound %d), reason '%s'%s", T.readyz_fail_ms,
             LD_READYZ_FAIL_MS, T.readyz_reason, T.readyz_reason_ok ? "" : " (no ready:false+reason)");
    ld_check(&ck, zd.over_bound == 0 && T.readyz_flaps == 0,
             "2 /readyz stays 503 and answers each call < 2000 ms",
             "%ld calls while down, max %ld ms, %ld over 2000 ms or unanswered, %ld 200s "
             "after the first 503%s%s", zd.n, zmax, zd.over_bound, T.readyz_flaps,
             zd.first_bad[0] ? "; first: " : "", zd.first_bad);
    const ld_stat *eo = &ed;
    ld_check(&ck, eo->n > 0 && eo->ok == eo->n && eo->over_bound == 0,
             "3 eventual GETs answer 200 < 1000 ms during the outage",
             "%ld GETs, %ld 200, max %ld ms, %ld over 1000 ms or unanswered%s%s", eo->n, eo->ok,
             eo->max_ms, eo->over_bound, eo->first_bad[0] ? "; first: " : "", eo->first_bad);
    const ld_stat *so = &sd;
    ld_check(&ck, so->n > 0 && so->over_bound == 0 && so->other == 0,
             "4 strong GETs answer (503) within timeout_ms+3000 during the outage",
             "%ld GETs: %ld 503, %ld 200, %ld other, %ld unanswered; max %ld ms%s%s", so->n,
             so->s503, so->ok, so->other, so->noanswer, so->max_ms,
             so->first_bad[0] ? "; first: " : "", so->first_bad);
    ld_check(&ck, st >= 0 && sigterm_exit == 0 && sigterm_ms < LD_SIGTERM_MS,
             "5 SIGTERM with a write pending exits 0 within 5000 ms",
             "exit %s%d after %ld ms (the pending write got %ld)",
             st < 0 ? "by SIGKILL, status " : "", sigterm_exit, sigterm_ms, pend.r.status);
    ld_check(&ck, st3 >= 0 && v3_exit == 0 && v3_ms < LD_SIGTERM_MS,
             "5 a cluster node's SIGTERM exits 0 within 5000 ms",
             "exit %s%d after %ld ms (stderr: %s)", st3 < 0 ? "by SIGKILL, status " : "",
             v3_exit, v3_ms, T.v3_log);
    ld_check(&ck, T.readyz_recover_ms >= 0 && T.readyz_recover_ms <= LD_RECOVER_MS,
             "6 /readyz 200 again without restarting objlogd",
             "%ld ms after the brokers' start (bound %d)", T.readyz_recover_ms, LD_RECOVER_MS);
    const ld_stat *wa = &T.st[PH_AFTER][K_WRITE];
    ld_check(&ck, probe_first == 200 && wa->n > 0 && wa->ok == wa->n,
             "6 new writes answer 200 after recovery",
             "probe write %ld; writers after /readyz: %ld of %ld 200 (503 %ld, other %ld, "
             "unanswered %ld; the last one answered %ld ms after /readyz was 200)%s%s",
             probe_first, wa->ok, wa->n, wa->s503, wa->other, wa->noanswer,
             T.after_last_bad_ms, wa->first_bad[0] ? "; first: " : "", wa->first_bad);
    ld_check(&ck, strong_first_fail == 0 && T.st[PH_AFTER][K_STRONG].ok > 0,
             "6 strong GETs answer 200 after recovery",
             "%ld of %d keys 200 (%ld failed%s%s); strong reader after /readyz: %ld of %ld 200",
             strong_ok, nkeys, strong_first_fail, strong_bad[0] ? ", first: " : "", strong_bad,
             T.st[PH_AFTER][K_STRONG].ok, T.st[PH_AFTER][K_STRONG].n);
    ld_check(&ck, unresolved == 0,
             "7 every write not answered 200 resolves by its request id",
             "%ld writes, %ld resolved (max %ld retries), %ld unresolved%s%s", unacked, resolved,
             res_max_retries, unresolved, unres_first[0] ? "; first: " : "", unres_first);
    ld_check(&ck, applied && wrong == 0,
             "7 each key holds its last acknowledged write",
             "%d keys, %ld wrong%s%s", nkeys, wrong, wrong_first[0] ? "; first: " : "",
             wrong_first);
    ld_check(&ck, listed && lost == 0 && dup == 0 && phantom == 0,
             "7 no acknowledged write lost or applied twice",
             "%ld acked writes, %ld versions: lost %ld%s%s, duplicated %ld%s%s, unacknowledged "
             "%ld%s%s", acked_total, nv, lost, lost ? " " : "", lost_first, dup,
             dup ? " " : "", dup_first, phantom, phantom ? " " : "", phantom_first);

    fprintf(stderr,
            "LOGDOWN_SUMMARY checks=%d failed=%d writes=%d writes_503=%ld outage_writes=%ld "
            "max_write_ms=%ld readyz_fail_ms=%ld readyz_max_call_ms=%ld readyz_recover_ms=%ld "
            "max_eventual_ms=%ld eventual_outage=%ld/%ld_200 max_strong_ms=%ld "
            "strong_outage=%ld_503/%ld_200/%ld_other/%ld_unanswered sigterm_ms=%ld "
            "sigterm_exit=%d resolved=%ld/%ld lost=%ld dup=%ld wrong=%ld wall=%.1fs\n",
            ck.n, ck.failed, T.nw, w503, wo->n, wmax, T.readyz_fail_ms, zmax,
            T.readyz_recover_ms, eo->max_ms, eo->ok, eo->n, so->max_ms, so->s503, so->ok,
            so->other, so->noanswer, sigterm_ms, sigterm_exit, resolved, unacked, lost, dup,
            wrong, (double)(viewtest_ms() - T.f.t0) / 1000.0);
    free(r);
    curl_easy_cleanup(h);
    if (ck.failed)
        fail_msg("%d of %d checks failed; first: %s (view stderr: %s)", ck.failed, ck.n, ck.first,
                 T.v1.log);
    T.f.failed = 0;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(log_down_and_back),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
