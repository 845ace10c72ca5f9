/* test_conditional.c: conditional writes, retries and replay determinism as
 * separate processes. The log is the mock cluster
 * of `objlogd --kafka-only` or a real 3-node Kafka (testlog.h, one per run
 * of this program), `objlogd --brokers` is the view, and every write goes
 * through libobjlog_producer with ack=applied.
 *
 * - Races: 16 threads here and 16 in a second process (this binary again,
 *   re-executed with --racer) put If-None-Match: * on the same 1,000 keys:
 *   exactly one winner per key, every loser 412 PreconditionFailed, and GET
 *   returns the winner's version id and etag (the etag names
 *   process/thread).
 * - CAS counter: 8 writers increment user metadata "n" 500 times each with
 *   If-Match retry loops; the final value is exactly 4,000.
 * - Replay: a mixed workload (conditional wins and losses, deletes, three
 *   versioning states, retries with the same request id, raw duplicates of
 *   earlier events re-produced to the same partition) is replayed into an
 *   empty data directory; the two stores are identical in every CF, and the
 *   duplicates changed nothing.
 * On real Kafka every write is a replicated produce plus an apply, tens of
 * ms on two busy cores, and each racer thread and the CAS chain are
 * serial: there the race has 250 keys and the writers increment 30 times
 * each (exactly 240), with the same checks; under the sanitizers, 500 keys
 * and 150 increments each (exactly 1,200).
 * Invariant: every process and thread the test starts is stopped by it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"
#include "materializer.h"
#include "objlog_producer.h"
#include "proc.h"
#include "testlog.h"

#define RACE_KEYS 1000      /* the most; race_keys() says how many this run uses */
#define RACE_KEYS_KAFKA 250
/* Under the sanitizers each write costs several times as much, here and
 * in objlogd: half the race and under a third of the CAS chain (it was
 * the suite's longest test there), the same checks; the plain build runs
 * them whole. */
#if defined(__SANITIZE_ADDRESS__)
#define RACE_KEYS_MOCK 500
#define CAS_INCREMENTS_MOCK 150
#else
#define RACE_KEYS_MOCK RACE_KEYS
#define CAS_INCREMENTS_MOCK 500
#endif
#define RACE_THREADS 16
#define CAS_WRITERS 8
#define CAS_INCREMENTS_KAFKA 30
#define REPLAY_KEYS 60
#define N_PARTITIONS 8

typedef struct ctest {
    char root[256], data1[300], data2[300];
    char objlogd[512];
    char self[512];
    char boot[1024];
    char url[128];
    testlog *log;
    proc *view;
} ctest;

static ctest T;

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- producers (shared by the test and the racer process) ---- */

/* linger: the library's default (5 ms) batches many concurrent writers,
 * which is what a CPU-bound 2-core run needs; the CAS writers form one
 * serial chain on one key, where every millisecond of linger is latency. */
static objlog_producer *producer_open(const char *boot, const char *url, const char *linger,
                                      char *err, size_t es) {
    objlog_producer_conf *c = objlog_producer_conf_new();
    if (objlog_producer_conf_set(c, "bootstrap.servers", boot, err, es) ||
        objlog_producer_conf_set(c, "query.url", url, err, es) ||
        objlog_producer_conf_set(c, "ack", "applied", err, es) ||
        objlog_producer_conf_set(c, "outcome.timeout.ms", "60000", err, es) ||
        (linger && objlog_producer_conf_set(c, "kafka.linger.ms", linger, err, es))) {
        objlog_producer_conf_destroy(c);
        return NULL;
    }
    return objlog_producer_new(c, err, es);
}

static objlog_producer *new_producer(const char *linger) {
    char err[512];
    objlog_producer *p = producer_open(T.boot, T.url, linger, err, sizeof(err));
    if (!p)
        fail_msg("producer: %s", err);
    return p;
}

/* ---- the race: shared by both processes ---- */

typedef struct race_slot {
    char version_id[24];
    char etag[32];
} race_slot;

typedef struct race {
    objlog_producer *p;
    int proc_no;
    race_slot wins[RACE_KEYS];   /* filled by the thread that won the key here */
    atomic_int won, lost, other;
    char first_error[512];
    pthread_mutex_t lock;
} race;

typedef struct race_thread {
    race *r;
    int thread_no;
    pthread_t th;
} race_thread;

static void race_key(int k, char *out, size_t n) { snprintf(out, n, "race/k%04d", k); }

/* Keys raced for in this run; the racer inherits OBJLOG_TEST_LOG, so both
 * processes agree. Every count has 1,000's prime factors (2, 5) only, so
 * every stride below stays coprime with it. */
static int race_keys(void) { return testlog_is_kafka() ? RACE_KEYS_KAFKA : RACE_KEYS_MOCK; }

static void race_other(race *r, const char *what, const objlog_write_result *res) {
    pthread_mutex_lock(&r->lock);
    if (atomic_fetch_add(&r->other, 1) == 0)
        snprintf(r->first_error, sizeof(r->first_error), "%s: %s %s %.200s", what,
                 res ? objlog_status_name(res->status) : "rejected up front",
                 res ? res->error_code : "", res ? res->error_message : "");
    pthread_mutex_unlock(&r->lock);
}

/* Each thread tries every key, in its own order: a start and a stride
 * coprime with race_keys(), both different per (process, thread). */
static void *race_main(void *arg) {
    static const int strides[] = {1, 3, 7, 9, 11, 13, 17, 19, 21, 23, 27, 29, 31, 33, 37, 39,
                                  41, 43, 47, 49, 51, 53, 57, 59, 61, 63, 67, 69, 71, 73, 77, 79};
    race_thread *t = arg;
    race *r = t->r;
    int id = r->proc_no * RACE_THREADS + t->thread_no;
    int nkeys = race_keys();
    int stride = strides[id], start = (id * 397) % nkeys;
    for (int i = 0; i < nkeys; i++) {
        int k = (start + i * stride) % nkeys;
        char key[32], etag[32], err[256];
        race_key(k, key, sizeof(key));
        snprintf(etag, sizeof(etag), "p%d-t%02d-k%04d", r->proc_no, t->thread_no, k);
        objlog_object_meta m = {.size = (uint64_t)k, .etag = etag};
        objlog_write_opts o = {.if_none_match = 1};
        objlog_write_result res;
        if (objlog_producer_put_object_sync(r->p, "race", key, strlen(key), &m, &o, &res, err,
                                            sizeof(err)) != 0) {
            race_other(r, err, NULL);
            continue;
        }
        if (res.status == OBJLOG_STATUS_OK) {
            pthread_mutex_lock(&r->lock);
            snprintf(r->wins[k].version_id, sizeof(r->wins[k].version_id), "%s", res.version_id);
            snprintf(r->wins[k].etag, sizeof(r->wins[k].etag), "%s", etag);
            pthread_mutex_unlock(&r->lock);
            atomic_fetch_add(&r->won, 1);
        } else if (res.status == OBJLOG_STATUS_REJECTED &&
                   !strcmp(res.error_code, "PreconditionFailed")) {
            atomic_fetch_add(&r->lost, 1);
        } else {
            race_other(r, key, &res);
        }
    }
    return NULL;
}

static void race_run(race *r) {
    race_thread ts[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        ts[i] = (race_thread){.r = r, .thread_no = i};
        pthread_create(&ts[i].th, NULL, race_main, &ts[i]);
    }
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(ts[i].th, NULL);
}

/* The second process: `test_conditional --racer BOOT URL`. Prints
 * RACER_READY, waits for SIGUSR1 (so both processes start together), races
 * as process 1, then prints one "W <key> <version_id> <etag>" line per key
 * it won and "RACER_DONE <won> <lost> <other>". Exit 0 unless it could not
 * run at all. */
static int racer_main(const char *boot, const char *url) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    /* SIGTERM stays pending until we exit on our own, so the test's
     * proc_stop after RACER_DONE sees a clean exit 0. */
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* before any thread exists */
    race *r = calloc(1, sizeof(*r));
    char err[512];
    r->proc_no = 1;
    pthread_mutex_init(&r->lock, NULL);
    r->p = producer_open(boot, url, NULL, err, sizeof(err));
    if (!r->p) {
        fprintf(stderr, "racer: producer: %s\n", err);
        return 1;
    }
    printf("RACER_READY\n");
    fflush(stdout);
    sigset_t go;
    sigemptyset(&go);
    sigaddset(&go, SIGUSR1);
    int sig;
    sigwait(&go, &sig);
    race_run(r);
    objlog_producer_destroy(r->p);
    for (int k = 0; k < race_keys(); k++)
        if (r->wins[k].etag[0])
            printf("W %d %s %s\n", k, r->wins[k].version_id, r->wins[k].etag);
    if (r->first_error[0])
        printf("RACER_ERROR %s\n", r->first_error);
    printf("RACER_DONE %d %d %d\n", atomic_load(&r->won), atomic_load(&r->lost),
           atomic_load(&r->other));
    fflush(stdout);
    pthread_mutex_destroy(&r->lock);
    free(r);
    return 0;
}

/* ---- setup: the log and one view ---- */

static proc *start_view(const char *data, char *url, size_t url_size) {
    proc *p = testlog_start_view(T.log, data, NULL, url, url_size);
    assert_non_null(p);
    return p;
}

static int setup(void **state) {
    (void)state;
    assert_int_equal(proc_tmpdir(T.root, sizeof(T.root)), 0);
    snprintf(T.data1, sizeof(T.data1), "%s/view1", T.root);
    snprintf(T.data2, sizeof(T.data2), "%s/view2", T.root);
    proc_bin("query/objlogd", T.objlogd, sizeof(T.objlogd));
    ssize_t n = readlink("/proc/self/exe", T.self, sizeof(T.self) - 1);
    assert_true(n > 0);
    T.self[n] = '\0';
    T.log = testlog_start(N_PARTITIONS);
    assert_non_null(T.log);
    snprintf(T.boot, sizeof(T.boot), "%s", testlog_bootstrap(T.log));
    T.view = start_view(T.data1, T.url, sizeof(T.url));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (T.view)
        proc_stop(T.view, 10000);
    testlog_stop(T.log);
    proc_rmtree(T.root);
    return 0;
}

/* ---- small helpers ---- */

static void create_bucket(objlog_producer *p, const char *bucket, objlog_versioning v) {
    char err[256];
    objlog_write_result res;
    assert_int_equal(objlog_producer_create_bucket_sync(p, bucket, "acme", v, NULL, &res, err,
                                                        sizeof(err)), 0);
    if (res.status != OBJLOG_STATUS_OK)
        fail_msg("create %s: %s %s", bucket, res.error_code, res.error_message);
}

static json_t *get_json(httpc *c, const char *path, long want_status) {
    httpc_resp resp;
    assert_int_equal(httpc_do(c, "GET", path, NULL, NULL, &resp), 0);
    if (resp.status != want_status)
        fail_msg("GET %s: status %ld, body %s", path, resp.status, resp.body);
    json_t *j = json_loads(resp.body, 0, NULL);
    assert_non_null(j);
    return j;
}

static const char *jstr(json_t *j, const char *name) {
    const char *s = json_string_value(json_object_get(j, name));
    return s ? s : "";
}

/* Every version and delete marker of a bucket, paged 1000 at a time. */
static void count_versions(httpc *c, const char *bucket, long *versions, long *markers) {
    char path[1024], km[256] = "", vm[64] = "";
    *versions = *markers = 0;
    for (int page = 0;; page++) {
        assert_true(page < 100);
        char *ekm = httpc_escape(c, km, strlen(km));
        snprintf(path, sizeof(path), "/v1/buckets/%s/versions?max_keys=1000%s%s%s%s", bucket,
                 km[0] ? "&key_marker=" : "", km[0] ? ekm : "", vm[0] ? "&version_id_marker=" : "",
                 vm);
        free(ekm);
        json_t *j = get_json(c, path, 200);
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(j, "versions"), i, v) {
            if (json_is_true(json_object_get(v, "delete_marker")))
                (*markers)++;
            else
                (*versions)++;
        }
        int more = json_is_true(json_object_get(j, "is_truncated"));
        if (more) {
            snprintf(km, sizeof(km), "%s", jstr(j, "next_key_marker"));
            snprintf(vm, sizeof(vm), "%s", jstr(j, "next_version_id_marker"));
        }
        json_decref(j);
        if (!more)
            return;
    }
}

/* ---- 16 threads in each of 2 processes race If-None-Match ---- */

static void parse_racer_output(proc *rp, race_slot *theirs, int *won, int *lost, int *other) {
    char line[512];
    for (;;) {
        assert_int_equal(proc_wait_line(rp, "", line, sizeof(line), 300000), 0);
        if (!strncmp(line, "RACER_DONE ", 11)) {
            assert_int_equal(sscanf(line + 11, "%d %d %d", won, lost, other), 3);
            return;
        }
        if (!strncmp(line, "RACER_ERROR ", 12)) {
            fprintf(stderr, "racer: %s\n", line + 12);
            continue;
        }
        int k;
        char vid[24], etag[32];
        assert_int_equal(sscanf(line, "W %d %23s %31s", &k, vid, etag), 3);
        assert_true(k >= 0 && k < race_keys());
        snprintf(theirs[k].version_id, sizeof(theirs[k].version_id), "%s", vid);
        snprintf(theirs[k].etag, sizeof(theirs[k].etag), "%s", etag);
    }
}

static void if_none_match_race_has_one_winner_per_key(void **state) {
    (void)state;
    objlog_producer *admin = new_producer(NULL);
    create_bucket(admin, "race", OBJLOG_VERSIONING_ENABLED);
    objlog_producer_destroy(admin);

    char *argv[] = {T.self, "--racer", T.boot, T.url, NULL};
    proc *rp = proc_spawn(argv, NULL);
    assert_non_null(rp);
    assert_int_equal(proc_wait_line(rp, "RACER_READY", NULL, 0, 60000), 0);
    race *r = calloc(1, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
    r->p = new_producer(NULL);
    int64_t t0 = mono_ms();
    kill(rp->pid, SIGUSR1);
    race_run(r);
    objlog_producer_destroy(r->p);
    race_slot *theirs = calloc(RACE_KEYS, sizeof(*theirs));
    int won = 0, lost = 0, other = 0;
    parse_racer_output(rp, theirs, &won, &lost, &other);
    int64_t elapsed = mono_ms() - t0;
    assert_int_equal(proc_stop(rp, 10000), 0);
    fprintf(stderr, "race: %d writes from 2 processes x %d threads in %lld ms; wins here %d, "
                    "there %d\n", 2 * RACE_THREADS * race_keys(), RACE_THREADS,
            (long long)elapsed, atomic_load(&r->won), won);
    if (atomic_load(&r->other) || other)
        fail_msg("writes neither won nor 412: %d here (%s), %d in the racer",
                 atomic_load(&r->other), r->first_error, other);
    assert_int_equal(atomic_load(&r->won) + won, race_keys());
    assert_int_equal(atomic_load(&r->lost) + lost, (2 * RACE_THREADS - 1) * race_keys());

    httpc *c = httpc_new(T.url);
    for (int k = 0; k < race_keys(); k++) {
        int here = r->wins[k].etag[0] != '\0', there = theirs[k].etag[0] != '\0';
        if (here + there != 1)
            fail_msg("key %d: %d winners", k, here + there);
        const race_slot *w = here ? &r->wins[k] : &theirs[k];
        assert_int_equal(w->etag[1] - '0', here ? 0 : 1);
        char key[32], path[256];
        race_key(k, key, sizeof(key));
        /* Every write completed with its applied outcome from this view, so
         * the view already holds them all: eventual reads see the end. */
        snprintf(path, sizeof(path), "/v1/buckets/race/objects/race%%2Fk%04d?consistency=eventual", k);
        json_t *j = get_json(c, path, 200);
        assert_string_equal(jstr(j, "etag"), w->etag);
        assert_string_equal(jstr(j, "version_id"), w->version_id);
        json_decref(j);
    }
    long versions, markers;
    count_versions(c, "race", &versions, &markers);
    assert_int_equal(versions, race_keys()); /* losers left no version behind */
    assert_int_equal(markers, 0);
    httpc_destroy(c);
    free(theirs);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* ---- CAS counter, 8 writers x 500 If-Match increments ---- */

typedef struct cas_writer {
    objlog_producer *p;
    int no;
    int increments;
    const char *init_token;      /* of the write that created the counter */
    long retries;
    char error[512];
    pthread_t th;
} cas_writer;

/* Reads the counter as of the writer's own last event (its token): at
 * least as new as whatever made that write lose. */
static int cas_read(httpc *c, const char *token, char *etag, size_t es, long *n) {
    char path[256];
    snprintf(path, sizeof(path), "/v1/buckets/cas/objects/counter?consistency=token&token=%s",
             token);
    httpc_resp resp;
    if (httpc_do(c, "GET", path, NULL, NULL, &resp) != 0 || resp.status != 200)
        return -1;
    json_t *j = json_loads(resp.body, 0, NULL);
    snprintf(etag, es, "%s", jstr(j, "etag"));
    const char *v = json_string_value(json_object_get(json_object_get(j, "user_metadata"), "n"));
    *n = v ? strtol(v, NULL, 10) : -1;
    json_decref(j);
    return *n >= 0 ? 0 : -1;
}

static void *cas_main(void *arg) {
    cas_writer *w = arg;
    httpc *c = httpc_new(T.url);
    char etag[80] = "", token[64] = "", err[256];
    long n = 0;
    int known = 0; /* etag/n are those of our own last successful write */
    snprintf(token, sizeof(token), "%s", w->init_token);
    for (int done = 0, attempt = 0; done < w->increments; attempt++) {
        if (!known && cas_read(c, token, etag, sizeof(etag), &n) < 0) {
            snprintf(w->error, sizeof(w->error), "writer %d: read failed", w->no);
            break;
        }
        char next[80], val[24];
        snprintf(next, sizeof(next), "w%d-a%d", w->no, attempt); /* unique per write */
        snprintf(val, sizeof(val), "%ld", n + 1);
        objlog_user_meta um = {"n", val};
        objlog_object_meta m = {.size = 8, .etag = next, .user_meta = &um, .n_user_meta = 1};
        objlog_write_opts o = {.if_match = etag};
        objlog_write_result res;
        if (objlog_producer_put_object_sync(w->p, "cas", "counter", 7, &m, &o, &res, err,
                                            sizeof(err)) != 0) {
            snprintf(w->error, sizeof(w->error), "writer %d: %s", w->no, err);
            break;
        }
        snprintf(token, sizeof(token), "%s", res.token);
        if (res.status == OBJLOG_STATUS_OK) {
            snprintf(etag, sizeof(etag), "%s", next);
            n++;
            done++;
            known = 1;
        } else if (res.status == OBJLOG_STATUS_REJECTED &&
                   !strcmp(res.error_code, "PreconditionFailed")) {
            w->retries++;
            known = 0;

        } else {
            snprintf(w->error, sizeof(w->error), "writer %d: %s %s %s", w->no,
                     objlog_status_name(res.status), res.error_code, res.error_message);
            break;
        }
    }
    httpc_destroy(c);
    return NULL;
}

static void cas_counter_reaches_exactly_writers_times_increments(void **state) {
    (void)state;
    int increments = testlog_is_kafka() ? CAS_INCREMENTS_KAFKA : CAS_INCREMENTS_MOCK;
    objlog_producer *p = new_producer("0");
    create_bucket(p, "cas", OBJLOG_VERSIONING_ENABLED);
    char err[256];
    objlog_user_meta um = {"n", "0"};
    objlog_object_meta m = {.size = 8, .etag = "init", .user_meta = &um, .n_user_meta = 1};
    objlog_write_opts o = {.if_none_match = 1};
    objlog_write_result res;
    assert_int_equal(objlog_producer_put_object_sync(p, "cas", "counter", 7, &m, &o, &res, err,
                                                     sizeof(err)), 0);
    assert_int_equal(res.status, OBJLOG_STATUS_OK);
    cas_writer w[CAS_WRITERS];
    int64_t t0 = mono_ms();
    for (int i = 0; i < CAS_WRITERS; i++) {
        w[i] = (cas_writer){.p = p, .no = i, .increments = increments,
                            .init_token = res.token};
        pthread_create(&w[i].th, NULL, cas_main, &w[i]);
    }
    long retries = 0;
    for (int i = 0; i < CAS_WRITERS; i++) {
        pthread_join(w[i].th, NULL);
        retries += w[i].retries;
    }
    objlog_producer_destroy(p);
    for (int i = 0; i < CAS_WRITERS; i++)
        if (w[i].error[0])
            fail_msg("%s", w[i].error);
    fprintf(stderr, "cas: %d increments in %lld ms, %ld PreconditionFailed retries\n",
            CAS_WRITERS * increments, (long long)(mono_ms() - t0), retries);
    httpc *c = httpc_new(T.url);
    json_t *j = get_json(c, "/v1/buckets/cas/objects/counter", 200);
    char want_n[16];
    snprintf(want_n, sizeof(want_n), "%d", CAS_WRITERS * increments);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "user_metadata"), "n")),
                        want_n);
    json_decref(j);
    long versions, markers;
    count_versions(c, "cas", &versions, &markers);
    assert_int_equal(versions, CAS_WRITERS * increments + 1); /* no lost or extra write */
    assert_int_equal(markers, 0);
    httpc_destroy(c);
}

/* ---- replay determinism after a mixed workload ---- */

/* One write of the workload and what it must decide. */
typedef struct step {
    objlog_write_result res;
    objlog_status want;
    const char *want_code;       /* "" or the error code */
    int same_as;                 /* >= 0: a retry of that step: same version id */
    atomic_int done;
} step;

typedef struct workload {
    step *s;
    int n, cap;
} workload;

static void step_cb(const objlog_write_result *res, void *opaque) {
    step *s = opaque;
    s->res = *res;
    atomic_store(&s->done, 1);
}

static step *wl_next(workload *w, objlog_status want, const char *code) {
    assert_true(w->n < w->cap);
    step *s = &w->s[w->n++];
    s->want = want;
    s->want_code = code;
    s->same_as = -1;
    return s;
}

static void wl_put(objlog_producer *p, workload *w, const char *bucket, const char *key,
                   const char *etag, const char *if_match, int inm, const uint8_t *rid,
                   objlog_status want, const char *code) {
    char err[256];
    step *s = wl_next(w, want, code);
    objlog_object_meta m = {.size = strlen(etag), .etag = etag, .content_type = "text/plain"};
    objlog_write_opts o = {.if_match = if_match, .if_none_match = inm, .request_id = rid};
    if (objlog_producer_put_object(p, bucket, key, strlen(key), &m, &o, step_cb, s, err,
                                   sizeof(err)) != 0)
        fail_msg("put %s/%s: %s", bucket, key, err);
}

static void wl_delete(objlog_producer *p, workload *w, const char *bucket, const char *key,
                      const char *if_match, const uint8_t *rid, objlog_status want,
                      const char *code) {
    char err[256];
    step *s = wl_next(w, want, code);
    objlog_write_opts o = {.if_match = if_match, .request_id = rid};
    if (objlog_producer_delete_object(p, bucket, key, strlen(key), NULL, &o, step_cb, s, err,
                                      sizeof(err)) != 0)
        fail_msg("delete %s/%s: %s", bucket, key, err);
}

static const char *const replay_buckets[] = {"rpl-v", "rpl-u", "rpl-s"};

/* Per key, in log order (one key = one partition, produced in order):
 * create (wins), create again (412), If-Match the current etag (wins),
 * If-Match a stale etag (412), the same If-Match again with the winner's
 * request id (the stored outcome: same version id); every third key then
 * loses a DELETE on a stale etag, wins one on the current etag, and is
 * created again with If-None-Match: * (S3: a delete marker as the newest
 * version means the key does not exist, so the create succeeds). */
static void wl_key(objlog_producer *p, workload *w, const char *bucket, int k, uint8_t rids[3][16]) {
    char key[32], e1[40], e2[40], e3[40];
    snprintf(key, sizeof(key), "mix/%03d", k);
    snprintf(e1, sizeof(e1), "%s-%03d-1", bucket, k);
    snprintf(e2, sizeof(e2), "%s-%03d-2", bucket, k);
    snprintf(e3, sizeof(e3), "%s-%03d-3", bucket, k);
    for (int i = 0; i < 3; i++)
        assert_int_equal(getrandom(rids[i], 16, 0), 16);
    wl_put(p, w, bucket, key, e1, NULL, 1, NULL, OBJLOG_STATUS_OK, "");
    wl_put(p, w, bucket, key, "loser", NULL, 1, NULL, OBJLOG_STATUS_REJECTED, "PreconditionFailed");
    int won = w->n;
    wl_put(p, w, bucket, key, e2, e1, 0, rids[0], OBJLOG_STATUS_OK, "");
    wl_put(p, w, bucket, key, "stale", e1, 0, NULL, OBJLOG_STATUS_REJECTED, "PreconditionFailed");
    wl_put(p, w, bucket, key, e2, e1, 0, rids[0], OBJLOG_STATUS_OK, "");
    w->s[w->n - 1].same_as = won;
    if (k % 3)
        return;
    wl_delete(p, w, bucket, key, e1, NULL, OBJLOG_STATUS_REJECTED, "PreconditionFailed");
    int del = w->n;
    wl_delete(p, w, bucket, key, e2, rids[1], OBJLOG_STATUS_OK, "");
    wl_delete(p, w, bucket, key, e2, rids[1], OBJLOG_STATUS_OK, ""); /* retried */
    w->s[w->n - 1].same_as = del;
    wl_put(p, w, bucket, key, e3, NULL, 1, rids[2], OBJLOG_STATUS_OK, "");
}

static void wl_check(const workload *w) {
    for (int i = 0; i < w->n; i++) {
        const step *s = &w->s[i];
        if (s->res.status != s->want || strcmp(s->res.error_code, s->want_code))
            fail_msg("step %d: %s %s (%s), want %s %s", i, objlog_status_name(s->res.status),
                     s->res.error_code, s->res.error_message, objlog_status_name(s->want),
                     s->want_code);
        if (s->same_as >= 0) {
            const step *o = &w->s[s->same_as];
            assert_string_equal(s->res.version_id, o->res.version_id);
            assert_memory_equal(s->res.request_id, o->res.request_id, 16);
            assert_int_equal(s->res.delete_marker, o->res.delete_marker);
            assert_true(s->res.offset != o->res.offset); /* a second event, deduped */
        }
    }
}

/* ---- raw duplicates: the exact bytes of an earlier event, same partition ---- */

typedef struct raw_msg {
    int32_t partition;
    int64_t offset;              /* where the copy landed */
    void *key, *value;
    size_t key_len, value_len;
    rd_kafka_headers_t *headers;
} raw_msg;

static rd_kafka_t *kafka_client(rd_kafka_type_t type) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", T.boot, err, sizeof(err)),
                     RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof(err));
    if (!rk)
        fail_msg("rd_kafka_new: %s", err);
    return rk;
}

static void raw_fetch(rd_kafka_t *rk, int32_t partition, int64_t offset, raw_msg *out) {
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, "objlog.events", NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, partition, offset), 0);
    rd_kafka_message_t *m = rd_kafka_consume(rkt, partition, 10000);
    assert_non_null(m);
    assert_int_equal(m->err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(m->offset, offset);
    out->partition = partition;
    out->key_len = m->key_len;
    out->value_len = m->len;
    out->key = malloc(m->key_len + 1);
    out->value = malloc(m->len + 1);
    memcpy(out->key, m->key, m->key_len);
    memcpy(out->value, m->payload, m->len);
    rd_kafka_headers_t *h = NULL;
    out->headers = rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR
                       ? rd_kafka_headers_copy(h) : NULL;
    rd_kafka_message_destroy(m);
    rd_kafka_consume_stop(rkt, partition);
    rd_kafka_topic_destroy(rkt);
}

static void raw_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    (void)opaque;
    raw_msg *r = m->_private;
    r->offset = m->err ? -2 : m->offset;
}

static void raw_produce_all(raw_msg *msgs, int n) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", T.boot, err, sizeof(err)),
                     RD_KAFKA_CONF_OK);
    rd_kafka_conf_set_dr_msg_cb(conf, raw_dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    assert_non_null(rk);
    for (int i = 0; i < n; i++) {
        raw_msg *r = &msgs[i];
        r->offset = -1;
        rd_kafka_resp_err_t e = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC("objlog.events"), RD_KAFKA_V_PARTITION(r->partition),
            RD_KAFKA_V_KEY(r->key, r->key_len), RD_KAFKA_V_VALUE(r->value, r->value_len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(r),
            RD_KAFKA_V_HEADERS(r->headers ? r->headers : rd_kafka_headers_new(0)),
            RD_KAFKA_V_END);
        assert_int_equal(e, RD_KAFKA_RESP_ERR_NO_ERROR);
        r->headers = NULL; /* owned by librdkafka now */
    }
    assert_int_equal(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(rk);
    for (int i = 0; i < n; i++)
        assert_true(msgs[i].offset >= 0);
}

/* The outcome GET /v1/writes gives for p.off; 1 if it answers 200. */
static json_t *outcome_of(httpc *c, int32_t p, int64_t off) {
    char path[128];
    snprintf(path, sizeof(path), "/v1/writes/%d.%lld?timeout_ms=20000", (int)p, (long long)off);
    return get_json(c, path, 200);
}

/* ---- both views at the log end, then a store comparison ---- */

static void wait_log_end(const char *url) {
    rd_kafka_t *rk = kafka_client(RD_KAFKA_CONSUMER);
    httpc *c = httpc_new(url);
    for (int p = 0; p < N_PARTITIONS; p++) {
        int64_t lo, hi;
        assert_int_equal(rd_kafka_query_watermark_offsets(rk, "objlog.events", p, &lo, &hi, 10000),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        if (hi == 0)
            continue;
        /* A replay under a sanitizer on busy cores can take minutes: fail
         * only when the view stops making progress for 60 s. */
        int64_t deadline = mono_ms() + 60000, last_applied = -1;
        for (;;) {
            char path[128];
            httpc_resp resp;
            snprintf(path, sizeof(path), "/v1/writes/%d.%lld?timeout_ms=5000", p, (long long)(hi - 1));
            assert_int_equal(httpc_do(c, "GET", path, NULL, NULL, &resp), 0);
            if (resp.status == 200)
                break;
            const char *a = resp.status == 503 ? strstr(resp.body, "\"applied\":") : NULL;
            int64_t applied = a ? strtoll(a + 10, NULL, 10) : -1;
            if (applied > last_applied) {
                last_applied = applied;
                deadline = mono_ms() + 60000;
            }
            if (resp.status != 503 || mono_ms() > deadline)
                fail_msg("GET %s on %s: %ld %s", path, url, resp.status, resp.body);
        }
    }
    httpc_destroy(c);
    rd_kafka_destroy(rk);
}

/* The logical dump of a stopped view's store (objlog_store_dump: every
 * row of every CF, outcomes included), malloc'd; rows per CF counted. */
static char *dump_store(const char *dir, size_t *len, size_t rows[OBJLOG_CF_COUNT]) {
    char err[512], *buf = NULL;
    objlog_store *s = objlog_store_open(dir, err, sizeof(err));
    if (!s)
        fail_msg("%s", err);
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    if (objlog_store_dump(s, f, err, sizeof(err)) != 0)
        fail_msg("dump %s: %s", dir, err);
    fclose(f);
    objlog_store_close(s);
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++)
        rows[cf] = 0;
    for (char *line = buf; line < buf + *len;) {
        char *nl = memchr(line, '\n', (size_t)(buf + *len - line));
        assert_non_null(nl);
        for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++) {
            size_t n = strlen(objlog_cf_name(cf));
            if (!strncmp(line, objlog_cf_name(cf), n) && line[n] == ' ')
                rows[cf]++;
        }
        line = nl + 1;
    }
    return buf;
}

static void compare_stores(const char *a, const char *b, size_t rows[OBJLOG_CF_COUNT]) {
    size_t la, lb, rows_b[OBJLOG_CF_COUNT];
    char *da = dump_store(a, &la, rows), *db = dump_store(b, &lb, rows_b);
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++)
        if (rows[cf] != rows_b[cf])
            fail_msg("cf %s: %zu rows vs %zu", objlog_cf_name(cf), rows[cf], rows_b[cf]);
    size_t i = 0;
    while (i < la && i < lb && da[i] == db[i])
        i++;
    if (la != lb || i < la)
        fail_msg("dumps differ at byte %zu (of %zu and %zu): %.120s | %.120s", i, la, lb,
                 da + (i < la ? i : la), db + (i < lb ? i : lb));
    free(da);
    free(db);
}

#define N_DUPS 12

static void replay_with_retries_and_duplicates_is_identical(void **state) {
    (void)state;
    int64_t t0 = mono_ms();
    objlog_producer *p = new_producer(NULL);
    char err[256];
    objlog_write_result res;
    create_bucket(p, "rpl-v", OBJLOG_VERSIONING_ENABLED);
    create_bucket(p, "rpl-u", OBJLOG_VERSIONING_UNVERSIONED);
    create_bucket(p, "rpl-s", OBJLOG_VERSIONING_ENABLED);
    /* rs: one real version per key while Enabled, the rest Suspended. */
    for (int k = 0; k < REPLAY_KEYS; k += 3) {
        char key[32];
        snprintf(key, sizeof(key), "mix/%03d", k);
        objlog_object_meta m = {.size = 1, .etag = "pre"};
        assert_int_equal(objlog_producer_put_object_sync(p, "rpl-s", key, strlen(key), &m, NULL, &res,
                                                         err, sizeof(err)), 0);
        assert_int_equal(res.status, OBJLOG_STATUS_OK);
        /* ...and moved aside so If-None-Match can still create it. */
        assert_int_equal(objlog_producer_delete_object_sync(p, "rpl-s", key, strlen(key), NULL, NULL,
                                                            &res, err, sizeof(err)), 0);
        assert_int_equal(res.status, OBJLOG_STATUS_OK);
    }
    assert_int_equal(objlog_producer_set_versioning_sync(p, "rpl-s", OBJLOG_VERSIONING_SUSPENDED, NULL,
                                                         &res, err, sizeof(err)), 0);
    assert_int_equal(res.status, OBJLOG_STATUS_OK);

    workload w = {.cap = 3 * REPLAY_KEYS * 9};
    w.s = calloc((size_t)w.cap, sizeof(step));
    uint8_t(*rids)[3][16] = calloc(3 * REPLAY_KEYS, sizeof(*rids));
    for (int k = 0; k < REPLAY_KEYS; k++)
        for (int b = 0; b < 3; b++)
            wl_key(p, &w, replay_buckets[b], k, rids[k * 3 + b]);
    assert_int_equal(objlog_producer_flush(p, 120000), 0);
    for (int i = 0; i < w.n; i++)
        assert_int_equal(atomic_load(&w.s[i].done), 1);
    wl_check(&w);
    /* A retry long after the first attempt completed: the stored outcome. */
    objlog_object_meta m2 = {.size = 9, .etag = "rpl-v-000-2", .content_type = "text/plain"};
    objlog_write_opts ro = {.if_match = "rpl-v-000-1", .request_id = rids[0][0]};
    assert_int_equal(objlog_producer_put_object_sync(p, "rpl-v", "mix/000", 7, &m2, &ro, &res, err,
                                                     sizeof(err)), 0);
    assert_int_equal(res.status, OBJLOG_STATUS_OK);
    assert_string_equal(res.version_id, w.s[2].res.version_id);
    objlog_producer_destroy(p);

    httpc *c = httpc_new(T.url);
    long before[3][2];
    for (int b = 0; b < 3; b++)
        count_versions(c, replay_buckets[b], &before[b][0], &before[b][1]);
    /* rv: 2 versions per key, every third key 1 marker and 1 more version. */
    int thirds = (REPLAY_KEYS + 2) / 3;
    assert_int_equal(before[0][0], 2 * REPLAY_KEYS + thirds);
    assert_int_equal(before[0][1], thirds);
    /* ru: one current object per key, nothing else. */
    assert_int_equal(before[1][0], REPLAY_KEYS);
    assert_int_equal(before[1][1], 0);
    /* rs: the null version per key (its null marker, if any, replaced by
     * the re-create), plus every third key's Enabled-era version and marker. */
    assert_int_equal(before[2][0], REPLAY_KEYS + thirds);
    assert_int_equal(before[2][1], thirds);

    /* Duplicates: the exact bytes of winners, losers, deletes and retries. */
    raw_msg dups[N_DUPS] = {0};
    int src[N_DUPS];
    rd_kafka_t *rk = kafka_client(RD_KAFKA_CONSUMER);
    for (int i = 0; i < N_DUPS; i++) {
        src[i] = (i * 37) % w.n;
        raw_fetch(rk, w.s[src[i]].res.partition, w.s[src[i]].res.offset, &dups[i]);
    }
    rd_kafka_destroy(rk);
    raw_produce_all(dups, N_DUPS);
    for (int i = 0; i < N_DUPS; i++) {
        const step *s = &w.s[src[i]];
        json_t *j = outcome_of(c, dups[i].partition, dups[i].offset);
        assert_string_equal(jstr(j, "status"), s->want == OBJLOG_STATUS_OK ? "ok" : "rejected");
        assert_string_equal(jstr(j, "code"), s->want == OBJLOG_STATUS_OK ? "OK" : s->want_code);
        assert_string_equal(jstr(j, "request_id"), s->res.request_id_hex);
        assert_string_equal(jstr(j, "version_id"), s->res.version_id);
        json_decref(j);
        free(dups[i].key);
        free(dups[i].value);
    }
    for (int b = 0; b < 3; b++) {
        long v, d;
        count_versions(c, replay_buckets[b], &v, &d);
        assert_int_equal(v, before[b][0]);
        assert_int_equal(d, before[b][1]);
    }
    httpc_destroy(c);

    /* Replay the whole topic into an empty directory. */
    char url2[128];
    proc *view2 = start_view(T.data2, url2, sizeof(url2));
    wait_log_end(url2);
    wait_log_end(T.url);
    assert_int_equal(proc_stop(view2, 20000), 0);
    assert_int_equal(proc_stop(T.view, 20000), 0);
    T.view = NULL;
    size_t rows[OBJLOG_CF_COUNT] = {0};
    compare_stores(T.data1, T.data2, rows);
    fprintf(stderr, "replay: %d workload steps, %d duplicates in %lld ms; rows: versions %zu, "
                    "objects %zu, outcomes %zu\n", w.n, N_DUPS, (long long)(mono_ms() - t0),
            rows[OBJLOG_CF_VERSIONS], rows[OBJLOG_CF_OBJECTS], rows[OBJLOG_CF_OUTCOMES]);
    assert_int_equal(rows[OBJLOG_CF_BUCKETS], 3 + 2); /* + race, cas */
    assert_true(rows[OBJLOG_CF_OUTCOMES] > (size_t)w.n);
    free(rids);
    free(w.s);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc == 4 && !strcmp(argv[1], "--racer"))
        return racer_main(argv[2], argv[3]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(if_none_match_race_has_one_winner_per_key),
        cmocka_unit_test(cas_counter_reaches_exactly_writers_times_increments),
        cmocka_unit_test(replay_with_retries_and_duplicates_is_identical),
    };
    const char *only = getenv("OBJLOG_TEST_FILTER"); /* e.g. "replay*" */
    if (only && *only)
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, setup, teardown);
}
