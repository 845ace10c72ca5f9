/* test_linearizable.c: linearizability of reads, tested (issue 5 item 5).
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
#define T_UNKNOWN INT64_MAX /* response time of a write that may never end */

/* ==== histories and the checker ==== */

typedef enum lin_kind { LIN_WRITE, LIN_READ } lin_kind;

typedef struct lin_op {
    lin_kind kind;
    int64_t invoke, response; /* ns; response T_UNKNOWN: may take effect or not */
    char value[48];           /* etag written or read; "" = absent (404) */
} lin_op;

typedef struct lin_hist {
    lin_op *ops;
    size_t n, cap;
    pthread_mutex_t mu;
} lin_hist;

static void hist_add(lin_hist *h, lin_kind kind, int64_t inv, int64_t resp, const char *value) {
    pthread_mutex_lock(&h->mu);
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 256;
        h->ops = realloc(h->ops, h->cap * sizeof(*h->ops));
    }
    lin_op *o = &h->ops[h->n++];
    *o = (lin_op){.kind = kind, .invoke = inv, .response = resp};
    snprintf(o->value, sizeof(o->value), "%s", value);
    pthread_mutex_unlock(&h->mu);
}

/* The value id an op writes or reads: the index of the write that wrote it,
 * -1 for the initial value, -2 for a value no write in the history wrote. */
static int value_id(const lin_op *ops, size_t n, const char *value) {
    if (!value[0])
        return -1;
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind == LIN_WRITE && !strcmp(ops[i].value, value))
            return (int)i;
    return -2;
}

/* The memo: a set of (linearized-ops bitset, register value), open
 * addressing over a flat array of records of `words + 1` uint64s. */
typedef struct memo {
    size_t words, cap, used;
    uint64_t *recs; /* cap records; record[words] == 0 marks a free slot */
} memo;

static uint64_t memo_hash(const uint64_t *rec, size_t words) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i <= words; i++) {
        h ^= rec[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
    }
    return h;
}

static int memo_insert_raw(memo *m, const uint64_t *rec) {
    size_t stride = m->words + 1;
    for (size_t i = memo_hash(rec, m->words) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        uint64_t *slot = &m->recs[i * stride];
        if (slot[m->words] == 0) {
            memcpy(slot, rec, stride * sizeof(*rec));
            m->used++;
            return 1;
        }
        if (!memcmp(slot, rec, stride * sizeof(*rec)))
            return 0;
    }
}

/* 1 if (bits, state) was new (now inserted), 0 if seen before, -1 when the
 * memo would pass its size limit. */
static int memo_insert(memo *m, const uint64_t *bits, int state) {
    if (2 * (m->used + 1) > m->cap) {
        if (m->cap >= ((size_t)1 << 20))
            return -1;
        memo bigger = {.words = m->words, .cap = m->cap ? 2 * m->cap : 1024};
        bigger.recs = calloc(bigger.cap, (bigger.words + 1) * sizeof(uint64_t));
        for (size_t i = 0; i < m->cap; i++)
            if (m->recs[i * (m->words + 1) + m->words])
                memo_insert_raw(&bigger, &m->recs[i * (m->words + 1)]);
        free(m->recs);
        *m = bigger;
    }
    uint64_t rec[m->words + 1];
    memcpy(rec, bits, m->words * sizeof(*rec));
    rec[m->words] = (uint64_t)(state + 3); /* never 0: 0 is a free slot */
    return memo_insert_raw(m, rec);
}

/* Call and return entries, sorted by time, in a doubly linked list with a
 * sentinel at index 0. A write that may never end has no return entry. */
typedef struct lin_entry {
    int op, is_call, ret; /* ret: index of the call's return entry or -1 */
    int64_t t;
} lin_entry;

static int entry_cmp(const void *a, const void *b) {
    const lin_entry *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    /* Equal times overlap: calls first, so neither op precedes the other. */
    if (x->is_call != y->is_call)
        return x->is_call ? -1 : 1;
    return x->op - y->op;
}

typedef struct lin_list {
    int *next, *prev;
} lin_list;

static void list_unlink(lin_list *l, int e) {
    l->next[l->prev[e]] = l->next[e];
    if (l->next[e] >= 0)
        l->prev[l->next[e]] = l->prev[e];
}

static void list_relink(lin_list *l, int e) {
    l->next[l->prev[e]] = e;
    if (l->next[e] >= 0)
        l->prev[l->next[e]] = e;
}

/* 1: the history of one key is linearizable for a register that starts
 * empty; 0: it is not; -1: the search passed its memory bound. Lowe's
 * formulation of Wing & Gong: walk the calls still pending in time order;
 * linearize one (lift it out of the list) if the register allows it and the
 * (linearized set, value) pair is new; meeting a return entry means the op
 * it closes can no longer be placed, so undo the last choice. */
static int lin_check(const lin_op *ops, size_t n) {
    size_t ne = 1;
    lin_entry *ev = calloc(2 * n + 1, sizeof(*ev));
    int *vid = calloc(n + 1, sizeof(int));
    for (size_t i = 0; i < n; i++) {
        vid[i] = ops[i].kind == LIN_WRITE ? (int)i : value_id(ops, n, ops[i].value);
        ev[ne++] = (lin_entry){.op = (int)i, .is_call = 1, .t = ops[i].invoke};
        if (ops[i].response != T_UNKNOWN)
            ev[ne++] = (lin_entry){.op = (int)i, .is_call = 0, .t = ops[i].response};
    }
    qsort(ev + 1, ne - 1, sizeof(*ev), entry_cmp);
    int *ret_of = malloc((n + 1) * sizeof(int));
    for (size_t i = 0; i < n; i++)
        ret_of[i] = -1;
    for (size_t e = 1; e < ne; e++)
        if (!ev[e].is_call)
            ret_of[ev[e].op] = (int)e;
    for (size_t e = 1; e < ne; e++)
        ev[e].ret = ev[e].is_call ? ret_of[ev[e].op] : -1;
    lin_list l = {malloc(ne * sizeof(int)), malloc(ne * sizeof(int))};
    for (size_t e = 0; e < ne; e++) {
        l.next[e] = e + 1 < ne ? (int)e + 1 : -1;
        l.prev[e] = e ? (int)e - 1 : -1;
    }
    size_t remaining = 0; /* ops with a return entry still to linearize */
    for (size_t i = 0; i < n; i++)
        remaining += ops[i].response != T_UNKNOWN;
    memo m = {.words = (n + 63) / 64 ? (n + 63) / 64 : 1};
    uint64_t *bits = calloc(m.words, sizeof(uint64_t));
    int *stack_e = malloc((n + 1) * sizeof(int)), *stack_s = malloc((n + 1) * sizeof(int));
    int sp = 0, state = -1, result = 1, e = l.next[0];
    while (remaining > 0) {
        if (e < 0 || !ev[e].is_call) {
            if (sp == 0) {
                result = 0;
                break;
            }
            sp--;
            e = stack_e[sp];
            state = stack_s[sp];
            int op = ev[e].op;
            bits[op / 64] &= ~(1ULL << (op % 64));
            if (ev[e].ret >= 0) {
                list_relink(&l, ev[e].ret);
                remaining++;
            }
            list_relink(&l, e);
            e = l.next[e];
            continue;
        }
        int op = ev[e].op;
        int is_write = ops[op].kind == LIN_WRITE;
        if (!is_write && vid[op] != state) {
            e = l.next[e];
            continue;
        }
        int new_state = is_write ? op : state;
        bits[op / 64] |= 1ULL << (op % 64);
        int fresh = memo_insert(&m, bits, new_state);
        if (fresh < 0) {
            result = -1;
            break;
        }
        if (!fresh) {
            bits[op / 64] &= ~(1ULL << (op % 64));
            e = l.next[e];
            continue;
        }
        stack_e[sp] = e;
        stack_s[sp++] = state;
        state = new_state;
        list_unlink(&l, e);
        if (ev[e].ret >= 0) {
            list_unlink(&l, ev[e].ret);
            remaining--;
        }
        e = l.next[0];
    }
    free(stack_e);
    free(stack_s);
    free(bits);
    free(m.recs);
    free(l.next);
    free(l.prev);
    free(ret_of);
    free(vid);
    free(ev);
    return result;
}

/* Reads that are stale beyond doubt: read r returned v, yet some write w2
 * completed before r was invoked and w2 itself started after the write of v
 * completed (or v is the initial value), so w2 must be ordered between. */
static int lin_stale_reads(const lin_op *ops, size_t n) {
    int stale = 0;
    for (size_t r = 0; r < n; r++) {
        if (ops[r].kind != LIN_READ)
            continue;
        int v = value_id(ops, n, ops[r].value);
        for (size_t w = 0; w < n; w++) {
            if (ops[w].kind != LIN_WRITE || (int)w == v || ops[w].response == T_UNKNOWN ||
                ops[w].response >= ops[r].invoke)
                continue;
            if (v == -1 || (v >= 0 && ops[v].response < ops[w].invoke)) {
                stale++;
                break;
            }
        }
    }
    return stale;
}

/* Reads whose interval overlaps some write's: where the search has a
 * choice to make (a history without them is checked trivially). */
static int lin_overlapping_reads(const lin_op *ops, size_t n) {
    int count = 0;
    for (size_t r = 0; r < n; r++) {
        if (ops[r].kind != LIN_READ)
            continue;
        for (size_t w = 0; w < n; w++)
            if (ops[w].kind == LIN_WRITE && ops[w].invoke <= ops[r].response &&
                ops[r].invoke <= ops[w].response) {
                count++;
                break;
            }
    }
    return count;
}

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
