/* test_linearizable.c: linearizability of reads, tested.
 *
 * Writers (libobjlog_producer, ack=applied) PUT unique etags to 3 hot keys
 * while readers GET them over HTTP; every operation is recorded with its
 * invoke and response time (CLOCK_MONOTONIC) and the value written or read
 * (404 = the initial, empty value). A Wing & Gong search in Lowe's form
 * (memoized on the set of linearized operations plus the register value)
 * then decides, key by key, whether the history is linearizable for a
 * single-key register. The checker is unit-tested on hand-made histories.
 *
 * The log is the mock cluster of `objlogd --kafka-only` or a real 3-node
 * Kafka (testlog.h), started once for the whole program; each run starts
 * its own views on empty data directories and writes to a bucket of its
 * own, so every history starts empty. Run 1: one view serves the
 * producer's outcomes and the reads. Run 2: the
 * producer takes its outcomes from a normal view A while the readers read
 * a view B whose materializer sleeps 30 ms per batch
 * (objlogd --test-apply-delay-ms): a write completes as soon as A applied it,
 * so B lags completed writes. In both runs `strong` and `token` histories
 * must be linearizable; in run 2 `eventual` reads must be caught stale,
 * which shows that the fence is what protects the other two.
 *
 * Token readers use a shared per-key token: the highest offset of every
 * write to the key that has completed. A writer publishes it before taking
 * its response time and a reader loads it after taking its invoke time, so
 * the token covers every write that precedes the read in real time; a
 * reader's own token alone would promise read-your-writes only.
 *
 * Invariant: every process and thread the test starts is stopped by it;
 * worker threads never assert, they count, and the main thread asserts
 * after joining them. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"
#include "lincheck.h"
#include "objlog_producer.h"
#include "proc.h"
#include "testlog.h"

#define N_KEYS 3
#define N_WRITERS 4
#define N_READERS 4
#define READS_PER_READER 60
#define MIN_PHASE_WRITES 20 /* completed writes (seeds included) a phase needs */
#define MAX_WRITES_PER_WRITER 60
#define APPLY_DELAY "30"

/* ==== unit tests of the checker ==== */

#define W(a, b, v) {LIN_WRITE, a, b, v}
#define R(a, b, v) {LIN_READ, a, b, v}
#define CHECK(h) lin_check(h, sizeof(h) / sizeof(h[0]))

static void checker_accepts_a_sequential_history(void **state) {
    (void)state;
    lin_op h[] = {R(0, 5, ""), W(10, 20, "a"), R(21, 30, "a"), W(31, 40, "b"),
                  R(41, 50, "b"), R(51, 60, "b")};
    assert_int_equal(CHECK(h), 1);
    lin_op empty[1] = {R(0, 1, "")};
    assert_int_equal(lin_check(empty, 0), 1);
}

static void checker_rejects_a_stale_read(void **state) {
    (void)state;
    /* b completed before the read started, yet it returned a. */
    lin_op h[] = {W(0, 10, "a"), W(11, 20, "b"), R(21, 30, "a")};
    assert_int_equal(CHECK(h), 0);
    assert_int_equal(lin_stale_reads(h, 3), 1);
    /* The initial value after a completed write. */
    lin_op h2[] = {W(0, 10, "a"), R(11, 20, "")};
    assert_int_equal(CHECK(h2), 0);
    assert_int_equal(lin_stale_reads(h2, 2), 1);
    /* A value nobody wrote. */
    lin_op h3[] = {W(0, 10, "a"), R(11, 20, "zz")};
    assert_int_equal(CHECK(h3), 0);
    /* Reads going back in time: new, then old, both after both writes began
     * (b concurrent with both reads, a still open), but a was seen before b
     * started, so a precedes b and can not come back. */
    lin_op h4[] = {W(0, 100, "a"), R(30, 40, "a"), W(50, 150, "b"), R(80, 90, "b"),
                   R(95, 99, "a")};
    assert_int_equal(CHECK(h4), 0);
    assert_int_equal(lin_stale_reads(h4, 5), 0); /* only the search sees this one */
}

static void checker_accepts_concurrent_overlaps(void **state) {
    (void)state;
    /* A read overlapping a write may see either value, and two overlapping
     * writes may take effect in either order. */
    lin_op h[] = {W(0, 100, "a"), R(10, 20, ""), R(30, 40, "a"), W(50, 150, "b"),
                  R(60, 70, "a"), R(80, 90, "b"), R(160, 170, "b")};
    assert_int_equal(CHECK(h), 1);
    lin_op h2[] = {W(0, 50, "a"), W(10, 60, "b"), R(70, 80, "a")};
    assert_int_equal(CHECK(h2), 1); /* b then a */
    lin_op h3[] = {W(0, 50, "a"), W(10, 60, "b"), R(70, 80, "b")};
    assert_int_equal(CHECK(h3), 1);
    /* Touching is not preceding: a response at t and an invoke at t overlap. */
    lin_op h4[] = {W(0, 10, "a"), W(10, 20, "b"), R(20, 30, "a")};
    assert_int_equal(CHECK(h4), 1);
    assert_int_equal(lin_stale_reads(h4, 3), 0);
    assert_int_equal(lin_overlapping_reads(h, 7), 4);
    assert_int_equal(lin_overlapping_reads(h4, 3), 1);
}

static void checker_places_unknown_writes_anywhere_or_nowhere(void **state) {
    (void)state;
    lin_op late[] = {W(0, T_UNKNOWN, "c"), R(10, 20, ""), R(30, 40, "c"), R(50, 60, "c")};
    assert_int_equal(CHECK(late), 1);
    lin_op never[] = {W(0, T_UNKNOWN, "c"), W(5, 8, "a"), R(10, 20, "a")};
    assert_int_equal(CHECK(never), 1);
    lin_op after_a[] = {W(0, T_UNKNOWN, "c"), W(5, 8, "a"), R(10, 20, "c"), R(30, 40, "a")};
    assert_int_equal(CHECK(after_a), 0); /* c seen after a completed, then a again */
    lin_op once[] = {W(0, T_UNKNOWN, "c"), R(10, 20, "c"), R(30, 40, "")};
    assert_int_equal(CHECK(once), 0);
    /* An unknown write is never the "newer write" of a stale read. */
    lin_op unk[] = {W(0, 10, "a"), W(11, T_UNKNOWN, "c"), R(30, 40, "a")};
    assert_int_equal(lin_stale_reads(unk, 3), 0);
    assert_int_equal(CHECK(unk), 1);
}

/* Random histories of a real sequential register: each op gets a
 * linearization point, and its interval is stretched around it. Every such
 * history is linearizable and the search must say so quickly; then one
 * read per history is moved past a completed newer write and must fail. */
static void checker_on_random_register_histories(void **state) {
    (void)state;
    unsigned seed = 12345;
    for (int round = 0; round < 50; round++) {
        size_t n = 200;
        lin_op *h = calloc(n, sizeof(*h));
        char cur[48] = "";
        for (size_t i = 0; i < n; i++) {
            int64_t point = (int64_t)i * 100;
            int64_t before = rand_r(&seed) % 400, after = rand_r(&seed) % 400;
            h[i].invoke = point - before;
            h[i].response = point + after;
            if (rand_r(&seed) % 3 == 0) {
                h[i].kind = LIN_WRITE;
                snprintf(h[i].value, sizeof(h[i].value), "r%d-w%zu", round, i);
                snprintf(cur, sizeof(cur), "%s", h[i].value);
                if (rand_r(&seed) % 20 == 0)
                    h[i].response = T_UNKNOWN;
            } else {
                h[i].kind = LIN_READ;
                snprintf(h[i].value, sizeof(h[i].value), "%s", cur);
            }
        }
        assert_int_equal(lin_check(h, n), 1);
        /* A late read returning the initial value after completed writes. */
        h[n - 1] = (lin_op){LIN_READ, (int64_t)n * 100 + 1000, (int64_t)n * 100 + 1100, ""};
        assert_int_equal(lin_check(h, n), 0);
        assert_true(lin_stale_reads(h, n) >= 1);
        free(h);
    }
}

/* ==== the processes ==== */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* The log lives for the whole program; the views (and their data
 * directories under root) for one test. */
typedef struct cluster {
    char objlogd[512];
    char boot[1024];
    testlog *log;
    char root[256];
    char url_a[128], url_b[128]; /* A: producer outcomes; B: reads */
    proc *view_a, *view_b;
} cluster;

static cluster C;

/* delay_ms: NULL, or the materializer's test-only sleep per batch. */
static proc *start_view(const char *data, const char *delay_ms, char *url, size_t url_size) {
    char *delay[] = {"--test-apply-delay-ms", (char *)delay_ms, NULL};
    proc *p = testlog_start_view(C.log, data, delay_ms ? delay : NULL, url, url_size);
    assert_non_null(p);
    return p;
}

/* Once per program: the log. */
static int group_setup(void **state) {
    (void)state;
    proc_bin("query/objlogd", C.objlogd, sizeof(C.objlogd));
    C.log = testlog_start(4);
    if (!C.log)
        return -1;
    snprintf(C.boot, sizeof(C.boot), "%s", testlog_bootstrap(C.log));
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    testlog_stop(C.log);
    C.log = NULL;
    return 0;
}

/* Per test: fresh views on the program's log. */
static int views_start(int delayed_reader_view) {
    assert_non_null(C.log);
    assert_int_equal(proc_tmpdir(C.root, sizeof(C.root)), 0);
    char data[300];
    snprintf(data, sizeof(data), "%s/a", C.root);
    C.view_a = start_view(data, NULL, C.url_a, sizeof(C.url_a));
    if (!delayed_reader_view) {
        snprintf(C.url_b, sizeof(C.url_b), "%s", C.url_a);
        return 0;
    }
    snprintf(data, sizeof(data), "%s/b", C.root);
    C.view_b = start_view(data, APPLY_DELAY, C.url_b, sizeof(C.url_b));
    return 0;
}

static int setup_plain(void **state) {
    (void)state;
    return views_start(0);
}

static int setup_delayed(void **state) {
    (void)state;
    return views_start(1);
}

static int teardown(void **state) {
    (void)state;
    if (C.view_b)
        proc_stop(C.view_b, 10000);
    if (C.view_a)
        proc_stop(C.view_a, 10000);
    C.view_a = C.view_b = NULL;
    if (C.root[0])
        proc_rmtree(C.root);
    C.root[0] = C.url_a[0] = C.url_b[0] = '\0';
    return 0;
}

static objlog_producer *new_producer(void) {
    char err[512];
    objlog_producer_conf *c = objlog_producer_conf_new();
    if (objlog_producer_conf_set(c, "bootstrap.servers", C.boot, err, sizeof(err)) ||
        objlog_producer_conf_set(c, "query.url", C.url_a, err, sizeof(err)) ||
        objlog_producer_conf_set(c, "ack", "applied", err, sizeof(err)) ||
        objlog_producer_conf_set(c, "kafka.linger.ms", "1", err, sizeof(err))) {
        objlog_producer_conf_destroy(c);
        fail_msg("producer conf: %s", err);
    }
    objlog_producer *p = objlog_producer_new(c, err, sizeof(err));
    if (!p)
        fail_msg("producer: %s", err);
    return p;
}

/* ==== one phase: writers and readers of one consistency mode ==== */

typedef struct phase {
    const char *mode; /* strong, token, eventual */
    const char *bucket;
    char keys[N_KEYS][16];
    objlog_producer *p;
    lin_hist hist[N_KEYS];
    _Atomic int64_t tok_offset[N_KEYS]; /* highest completed write, -1 none */
    atomic_int tok_partition[N_KEYS];
    atomic_int readers_left, writers_left;
    atomic_int writes_ok, writes_unknown, writes_bad;
    atomic_int reads_ok, reads_404, reads_503, reads_bad;
    char first_bad[256];
    pthread_mutex_t lock;
} phase;

typedef struct worker {
    phase *ph;
    int no;
    pthread_t th;
} worker;

static void phase_bad(phase *ph, atomic_int *counter, const char *fmt, ...) {
    pthread_mutex_lock(&ph->lock);
    if (!ph->first_bad[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ph->first_bad, sizeof(ph->first_bad), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&ph->lock);
    atomic_fetch_add(counter, 1);
}

static void publish_token(phase *ph, int k, const objlog_write_result *res) {
    atomic_store(&ph->tok_partition[k], res->partition);
    int64_t cur = atomic_load(&ph->tok_offset[k]);
    while (cur < res->offset &&
           !atomic_compare_exchange_weak(&ph->tok_offset[k], &cur, res->offset))
        ;
}

/* One PUT, recorded. The token is published before the response time is
 * taken (see the header comment). */
static void write_one(phase *ph, int k, const char *etag) {
    char err[256];
    objlog_object_meta m = {.size = 1, .etag = etag};
    objlog_write_result res;
    int64_t inv = now_ns();
    int rc = objlog_producer_put_object_sync(ph->p, ph->bucket, ph->keys[k], strlen(ph->keys[k]),
                                             &m, NULL, &res, err, sizeof(err));
    if (rc != 0) {
        phase_bad(ph, &ph->writes_bad, "put %s rejected up front: %s", etag, err);
        return;
    }
    if (res.status == OBJLOG_STATUS_OK) {
        publish_token(ph, k, &res);
        hist_add(&ph->hist[k], LIN_WRITE, inv, now_ns(), etag);
        atomic_fetch_add(&ph->writes_ok, 1);
        return;
    }
    if (res.status == OBJLOG_STATUS_UNKNOWN || res.status == OBJLOG_STATUS_FAILED) {
        /* It may have reached the log: it may take effect any time after
         * its invoke, or never. */
        hist_add(&ph->hist[k], LIN_WRITE, inv, T_UNKNOWN, etag);
        atomic_fetch_add(&ph->writes_unknown, 1);
        return;
    }
    phase_bad(ph, &ph->writes_bad, "put %s: %s %s", etag, objlog_status_name(res.status),
              res.error_code);
}

static void *writer_main(void *arg) {
    worker *w = arg;
    phase *ph = w->ph;
    unsigned seed = (unsigned)(w->no * 7919 + 17);
    for (int i = 0; i < MAX_WRITES_PER_WRITER && atomic_load(&ph->readers_left) > 0; i++) {
        char etag[48];
        snprintf(etag, sizeof(etag), "%s-w%d-%d", ph->mode, w->no, i);
        write_one(ph, rand_r(&seed) % N_KEYS, etag);
        sleep_us(5000 + rand_r(&seed) % 10000);
    }
    atomic_fetch_sub(&ph->writers_left, 1);
    return NULL;
}

/* One GET, recorded unless it failed (a 503 under a fence is a refusal, not
 * an answer, so it has no place in the history). */
static void read_one(phase *ph, httpc *c, int k) {
    char path[512], tok[64] = "";
    int64_t inv = now_ns();
    if (!strcmp(ph->mode, "token"))
        snprintf(tok, sizeof(tok), "&token=%d.%lld", atomic_load(&ph->tok_partition[k]),
                 (long long)atomic_load(&ph->tok_offset[k]));
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?consistency=%s%s", ph->bucket,
             ph->keys[k], ph->mode, tok);
    httpc_resp resp;
    if (httpc_do(c, "GET", path, NULL, NULL, &resp) != 0) {
        phase_bad(ph, &ph->reads_bad, "GET %s: transport error", path);
        return;
    }
    int64_t rsp = now_ns();
    if (resp.status == 503) {
        atomic_fetch_add(&ph->reads_503, 1);
        return;
    }
    if (resp.status == 404 && strstr(resp.body, "NoSuchKey")) {
        hist_add(&ph->hist[k], LIN_READ, inv, rsp, "");
        atomic_fetch_add(&ph->reads_404, 1);
        return;
    }
    json_t *j = resp.status == 200 ? json_loads(resp.body, 0, NULL) : NULL;
    const char *etag = j ? json_string_value(json_object_get(j, "etag")) : NULL;
    if (!etag || !etag[0])
        phase_bad(ph, &ph->reads_bad, "GET %s: %ld %.120s", path, resp.status, resp.body);
    else {
        hist_add(&ph->hist[k], LIN_READ, inv, rsp, etag);
        atomic_fetch_add(&ph->reads_ok, 1);
    }
    json_decref(j);
}

/* A reader does its READS_PER_READER reads, and goes on while fewer than
 * MIN_PHASE_WRITES writes completed and writers still run: a write costs a
 * replicated produce plus an apply on real Kafka (tens of ms on two busy
 * cores), a token read far less, so a fixed read count could end a phase
 * before it saw enough writes to overlap. */
static void *reader_main(void *arg) {
    worker *w = arg;
    phase *ph = w->ph;
    unsigned seed = (unsigned)(w->no * 104729 + 3);
    httpc *c = httpc_new(C.url_b);
    for (int i = 0; i < READS_PER_READER ||
                    (atomic_load(&ph->writes_ok) < MIN_PHASE_WRITES &&
                     atomic_load(&ph->writers_left) > 0);
         i++) {
        read_one(ph, c, rand_r(&seed) % N_KEYS);
        sleep_us(1000 + rand_r(&seed) % 3000);
    }
    httpc_destroy(c);
    atomic_fetch_sub(&ph->readers_left, 1);
    return NULL;
}

typedef struct phase_result {
    int ops[N_KEYS];      /* per key */
    int verdict[N_KEYS];  /* lin_check */
    int stale[N_KEYS];    /* lin_stale_reads */
    int overlapping;      /* lin_overlapping_reads, all keys */
    int reads, writes, unknown, r503;
} phase_result;

/* Runs one phase on fresh keys (so each history starts empty), then checks
 * every key's history. Each key gets one seed write first, so token readers
 * always have a token. */
static void run_phase(const char *mode, const char *bucket, phase_result *out) {
    phase *ph = calloc(1, sizeof(*ph));
    ph->mode = mode;
    ph->bucket = bucket;
    pthread_mutex_init(&ph->lock, NULL);
    for (int k = 0; k < N_KEYS; k++) {
        snprintf(ph->keys[k], sizeof(ph->keys[k]), "%s-k%d", mode, k);
        pthread_mutex_init(&ph->hist[k].mu, NULL);
        atomic_init(&ph->tok_offset[k], -1);
    }
    atomic_init(&ph->readers_left, N_READERS);
    atomic_init(&ph->writers_left, N_WRITERS);
    ph->p = new_producer();
    for (int k = 0; k < N_KEYS; k++) {
        char etag[48];
        snprintf(etag, sizeof(etag), "%s-seed-%d", mode, k);
        write_one(ph, k, etag);
    }
    int64_t t0 = now_ns();
    worker ws[N_WRITERS + N_READERS];
    for (int i = 0; i < N_WRITERS + N_READERS; i++) {
        ws[i] = (worker){.ph = ph, .no = i};
        pthread_create(&ws[i].th, NULL, i < N_WRITERS ? writer_main : reader_main, &ws[i]);
    }
    for (int i = 0; i < N_WRITERS + N_READERS; i++)
        pthread_join(ws[i].th, NULL);
    objlog_producer_destroy(ph->p);
    int64_t t1 = now_ns();

    memset(out, 0, sizeof(*out));
    for (int k = 0; k < N_KEYS; k++) {
        lin_hist *h = &ph->hist[k];
        int64_t c0 = now_ns();
        out->ops[k] = (int)h->n;
        out->verdict[k] = lin_check(h->ops, h->n);
        out->stale[k] = lin_stale_reads(h->ops, h->n);
        out->overlapping += lin_overlapping_reads(h->ops, h->n);
        fprintf(stderr, "  %s key %s: %zu ops, %s, %d stale reads (check %.1f ms)\n", mode,
                ph->keys[k], h->n,
                out->verdict[k] == 1 ? "linearizable"
                                     : out->verdict[k] == 0 ? "NOT linearizable" : "search bound",
                out->stale[k], (now_ns() - c0) / 1e6);
    }
    out->reads = atomic_load(&ph->reads_ok) + atomic_load(&ph->reads_404);
    out->writes = atomic_load(&ph->writes_ok);
    out->unknown = atomic_load(&ph->writes_unknown);
    out->r503 = atomic_load(&ph->reads_503);
    fprintf(stderr, "%s: %d reads (%d 404, %d 503, %d overlapping a write), %d writes "
                    "(%d unknown) in %.0f ms\n", mode, out->reads, atomic_load(&ph->reads_404),
            out->r503, out->overlapping, out->writes, out->unknown, (t1 - t0) / 1e6);
    int bad = atomic_load(&ph->writes_bad) + atomic_load(&ph->reads_bad);
    char first_bad[256];
    snprintf(first_bad, sizeof(first_bad), "%s", ph->first_bad);
    for (int k = 0; k < N_KEYS; k++) {
        free(ph->hist[k].ops);
        pthread_mutex_destroy(&ph->hist[k].mu);
    }
    pthread_mutex_destroy(&ph->lock);
    free(ph);
    if (bad)
        fail_msg("%s: %d failed operations, first: %s", mode, bad, first_bad);
    /* Enough happened for the verdict to mean something. */
    assert_true(out->reads >= N_READERS * READS_PER_READER / 2);
    assert_true(out->writes >= MIN_PHASE_WRITES);
    assert_true(out->overlapping > 0);
}

static void create_bucket(const char *bucket) {
    objlog_producer *p = new_producer();
    char err[256];
    objlog_write_result res;
    int rc = objlog_producer_create_bucket_sync(p, bucket, "acme", OBJLOG_VERSIONING_UNVERSIONED,
                                                NULL, &res, err, sizeof(err));
    objlog_producer_destroy(p);
    assert_int_equal(rc, 0);
    if (res.status != OBJLOG_STATUS_OK)
        fail_msg("create %s: %s %s", bucket, res.error_code, res.error_message);
}

static void assert_linearizable(const char *mode, const phase_result *r) {
    for (int k = 0; k < N_KEYS; k++) {
        if (r->verdict[k] != 1)
            fail_msg("%s key %d: history of %d ops is not linearizable (verdict %d, %d stale "
                     "reads)", mode, k, r->ops[k], r->verdict[k], r->stale[k]);
        assert_int_equal(r->stale[k], 0);
    }
}

/* Each test writes a bucket of its own: the log outlives the test. */
static void strong_and_token_reads_are_linearizable(void **state) {
    (void)state;
    create_bucket("lin-plain");
    phase_result r;
    run_phase("strong", "lin-plain", &r);
    assert_linearizable("strong", &r);
    run_phase("token", "lin-plain", &r);
    assert_linearizable("token", &r);
}

static void under_apply_delay_fenced_reads_stay_linearizable(void **state) {
    (void)state;
    create_bucket("lin-delayed");
    phase_result r;
    run_phase("strong", "lin-delayed", &r);
    assert_linearizable("strong", &r);
    run_phase("token", "lin-delayed", &r);
    assert_linearizable("token", &r);

    /* The same load without a fence: the delayed view is caught stale. */
    run_phase("eventual", "lin-delayed", &r);
    int stale = 0, rejected = 0;
    for (int k = 0; k < N_KEYS; k++) {
        stale += r.stale[k];
        rejected += r.verdict[k] == 0;
        if (r.stale[k] > 0)
            assert_int_equal(r.verdict[k], 0); /* the search agrees */
    }
    fprintf(stderr, "eventual under a %s ms apply delay: %d of %d reads stale, %d of %d keys "
                    "not linearizable\n", APPLY_DELAY, stale, r.reads, rejected, N_KEYS);
    assert_true(stale > 0);
    assert_true(rejected > 0);
}

/* "objects" of a stats answer at path on view B; -1 on any failure. */
static long stats_objects(httpc *c, const char *path) {
    httpc_resp resp;
    if (httpc_do(c, "GET", path, NULL, NULL, &resp) != 0 || resp.status != 200)
        return -1;
    json_t *j = json_loads(resp.body, 0, NULL);
    long n = j ? (long)json_integer_value(json_object_get(j, "objects")) : -1;
    json_decref(j);
    return n;
}

/* Stats reads fence every partition at once (watermark.c,
 * wm_end_offsets): on the delayed view B, a strong read right after a put
 * completed (applied by A) counts it, globally and in its bucket, every
 * time; eventual reads at the same moments are caught short, which shows
 * the fence is what makes the strong ones exact. Buckets on several
 * partitions, so one read spans them. The global count starts from what
 * the earlier tests left in the log (read strong before the first put). */
static void strong_stats_reads_count_every_completed_write(void **state) {
    (void)state;
    const char *buckets[4] = {"st-a", "st-b", "st-c", "st-d"};
    for (int i = 0; i < 4; i++)
        create_bucket(buckets[i]);
    objlog_producer *p = new_producer();
    httpc *c = httpc_new(C.url_b);
    assert_non_null(c);
    long per_bucket[4] = {0}, stale = 0;
    long base = stats_objects(c, "/v1/stats?consistency=strong");
    assert_true(base >= 0);
    for (int i = 0; i < 24; i++) {
        char key[16], err[256], path[128];
        snprintf(key, sizeof(key), "k%02d", i);
        objlog_object_meta meta = {.size = 10, .etag = key};
        objlog_write_result res;
        assert_int_equal(objlog_producer_put_object_sync(p, buckets[i % 4], key, strlen(key),
                                                         &meta, NULL, &res, err, sizeof(err)),
                         0);
        if (res.status != OBJLOG_STATUS_OK)
            fail_msg("put %d: %s %s", i, res.error_code, res.error_message);
        per_bucket[i % 4]++;
        long eventual = stats_objects(c, "/v1/stats?consistency=eventual");
        assert_true(eventual >= 0 && eventual <= base + i + 1);
        stale += eventual < base + i + 1;
        assert_int_equal(stats_objects(c, "/v1/stats?consistency=strong"), base + i + 1);
        snprintf(path, sizeof(path), "/v1/buckets/%s/stats?consistency=strong", buckets[i % 4]);
        assert_int_equal(stats_objects(c, path), per_bucket[i % 4]);
    }
    fprintf(stderr, "stats under a %s ms apply delay: %ld of 24 eventual reads short\n",
            APPLY_DELAY, stale);
    assert_true(stale > 0);
    httpc_destroy(c);
    objlog_producer_destroy(p);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checker_accepts_a_sequential_history),
        cmocka_unit_test(checker_rejects_a_stale_read),
        cmocka_unit_test(checker_accepts_concurrent_overlaps),
        cmocka_unit_test(checker_places_unknown_writes_anywhere_or_nowhere),
        cmocka_unit_test(checker_on_random_register_histories),
        cmocka_unit_test_setup_teardown(strong_and_token_reads_are_linearizable, setup_plain,
                                        teardown),
        cmocka_unit_test_setup_teardown(under_apply_delay_fenced_reads_stay_linearizable,
                                        setup_delayed, teardown),
        cmocka_unit_test_setup_teardown(strong_stats_reads_count_every_completed_write,
                                        setup_delayed, teardown),
    };
    const char *only = getenv("OBJLOG_TEST_FILTER");
    if (only && *only)
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
