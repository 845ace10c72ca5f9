/* test_http_watermark.c: the coalesced end-offset cache of the query
 * service (query/watermark/watermark.c) with its broker round trip replaced by a
 * fake that answers with the log end as of when it was handled, then
 * blocks until the test releases it. That makes the one dangerous
 * interleaving deterministic: a write acknowledged while a request is in
 * flight, and a strong read that arrives after the ack, over one partition
 * (wm_end_offset) or several (wm_end_offsets). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "watermark.h"

typedef struct fake {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t broker_end;          /* the partition's end offset "now" */
    int calls;                   /* requests started */
    int released;                /* requests allowed to answer */
} fake;

static rd_kafka_resp_err_t fake_fetch(void *opaque, int32_t p, int timeout_ms,
                                      int64_t *end) {
    (void)p;
    (void)timeout_ms;
    fake *f = opaque;
    pthread_mutex_lock(&f->mu);
    int me = ++f->calls;
    *end = f->broker_end;        /* handled now; the answer comes later */
    pthread_cond_broadcast(&f->cv);
    while (f->released < me)
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static void fake_set_end(fake *f, int64_t end) {
    pthread_mutex_lock(&f->mu);
    f->broker_end = end;
    pthread_mutex_unlock(&f->mu);
}

static void fake_release(fake *f, int n) {
    pthread_mutex_lock(&f->mu);
    f->released = n;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Waits (bounded) until n requests have started; returns calls. */
static int fake_wait_calls(fake *f, int n) {
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < 500 && f->calls < n; i++) {
        pthread_mutex_unlock(&f->mu);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&f->mu);
    }
    int c = f->calls;
    pthread_mutex_unlock(&f->mu);
    return c;
}

static int fake_calls(fake *f) {
    return fake_wait_calls(f, 0);
}

typedef struct reader {
    wm_cache *w;
    int fresh;
    int timeout_ms;
    pthread_t th;
    int64_t end;
    rd_kafka_resp_err_t err;
    atomic_int done;
} reader;

static void *reader_main(void *arg) {
    reader *r = arg;
    r->err = wm_end_offset(r->w, 0, r->fresh, r->timeout_ms, &r->end);
    atomic_store(&r->done, 1);
    return NULL;
}

static void reader_start(reader *r, wm_cache *w, int fresh, int timeout_ms) {
    r->w = w;
    r->fresh = fresh;
    r->timeout_ms = timeout_ms;
    r->end = -1;
    atomic_store(&r->done, 0);
    assert_int_equal(pthread_create(&r->th, NULL, reader_main, r), 0);
}

static void settle(void) {
    struct timespec ts = {0, 150 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

typedef struct fixture {
    fake f;
    wm_cache *w;
} fixture;

static int setup(void **state) {
    fixture *x = calloc(1, sizeof(*x));
    char err[256];
    pthread_mutex_init(&x->f.mu, NULL);
    pthread_cond_init(&x->f.cv, NULL);
    /* never contacted: the fake answers every request */
    x->w = wm_new("127.0.0.1:1", "objlog.events", 1, err, sizeof(err));
    if (!x->w)
        return -1;
    wm_set_fetch(x->w, fake_fetch, &x->f);
    *state = x;
    return 0;
}

static int teardown(void **state) {
    fixture *x = *state;
    fake_release(&x->f, 1 << 30);
    wm_destroy(x->w);
    pthread_mutex_destroy(&x->f.mu);
    pthread_cond_destroy(&x->f.cv);
    free(x);
    return 0;
}

/* A strong read arriving while a request is in flight must not take that
 * request's answer (it predates a write acked before the read arrived); a
 * lag read may. Still one request in flight at a time. */
static void test_fresh_skips_request_in_flight(void **state) {
    fixture *x = *state;
    reader a, b, c;
    fake_set_end(&x->f, 5);
    reader_start(&a, x->w, 1, 5000);
    assert_int_equal(fake_wait_calls(&x->f, 1), 1);
    fake_set_end(&x->f, 6);      /* a write is acked at offset 5 */
    reader_start(&b, x->w, 1, 5000); /* strong read after that ack */
    reader_start(&c, x->w, 0, 5000); /* /v1/lag */
    settle();
    assert_int_equal(fake_calls(&x->f), 1); /* never two in flight */
    assert_false(atomic_load(&b.done));
    fake_release(&x->f, 1);
    pthread_join(a.th, NULL);
    pthread_join(c.th, NULL);
    assert_int_equal(a.end, 5);
    assert_int_equal(c.end, 5);
    assert_int_equal(fake_wait_calls(&x->f, 2), 2);
    settle();
    assert_false(atomic_load(&b.done));
    fake_release(&x->f, 2);
    pthread_join(b.th, NULL);
    assert_int_equal(b.err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(b.end, 6);  /* sees the acked write */
    assert_int_equal(wm_requests(x->w), 2);
    assert_int_equal(wm_last_end(x->w, 0), 6);
}

/* 16 strong readers arriving during one request share the next one. */
static void test_readers_share_next_request(void **state) {
    fixture *x = *state;
    reader a, r[16];
    uint64_t before = wm_requests(x->w);
    int calls = fake_calls(&x->f);
    fake_set_end(&x->f, 10);
    reader_start(&a, x->w, 1, 5000);
    assert_int_equal(fake_wait_calls(&x->f, calls + 1), calls + 1);
    fake_set_end(&x->f, 11);
    for (int i = 0; i < 16; i++)
        reader_start(&r[i], x->w, 1, 5000);
    settle();
    fake_release(&x->f, calls + 1);
    pthread_join(a.th, NULL);
    assert_int_equal(a.end, 10);
    assert_int_equal(fake_wait_calls(&x->f, calls + 2), calls + 2);
    fake_set_end(&x->f, 12);     /* after the shared request was handled */
    fake_release(&x->f, calls + 2);
    for (int i = 0; i < 16; i++) {
        pthread_join(r[i].th, NULL);
        assert_int_equal(r[i].err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(r[i].end, 11);
    }
    assert_int_equal(wm_requests(x->w) - before, 2);
}

/* A reader whose deadline passes while it waits gets __TIMED_OUT. */
static void test_wait_is_bounded(void **state) {
    fixture *x = *state;
    reader a, b;
    int calls = fake_calls(&x->f);
    reader_start(&a, x->w, 1, 5000);
    assert_int_equal(fake_wait_calls(&x->f, calls + 1), calls + 1);
    reader_start(&b, x->w, 1, 50);
    pthread_join(b.th, NULL);
    assert_int_equal(b.err, RD_KAFKA_RESP_ERR__TIMED_OUT);
    fake_release(&x->f, calls + 1);
    pthread_join(a.th, NULL);
    assert_int_equal(a.err, RD_KAFKA_RESP_ERR_NO_ERROR);
    int64_t end;
    assert_int_equal(wm_end_offset(x->w, 1, 1, 50, &end),
                     RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION);
}

typedef struct p2_arg {
    wm_cache *w;
    int64_t *end;
} p2_arg;

static void *p2_reader_main(void *arg) {
    p2_arg *a = arg;
    if (wm_end_offset(a->w, 2, 1, 5000, a->end) != RD_KAFKA_RESP_ERR_NO_ERROR)
        *a->end = -2;
    return NULL;
}

typedef struct many_reader {
    wm_cache *w;
    int32_t ps[4];
    int64_t ends[4];
    int32_t failed;
    pthread_t th;
    rd_kafka_resp_err_t err;
    atomic_int done;
} many_reader;

static void *many_main(void *arg) {
    many_reader *m = arg;
    m->err = wm_end_offsets(m->w, m->ps, 4, 5000, m->ends, &m->failed);
    atomic_store(&m->done, 1);
    return NULL;
}

/* A read over 4 partitions (wm_end_offsets) while partition 2 has a
 * request in flight that predates an acked write: it fetches the idle
 * partitions itself, and for partition 2 waits for that request, then
 * starts the next one; every end it returns covers the write. */
static void test_many_partitions_fresh(void **state) {
    (void)state;
    fake f = {0};
    char err[256];
    pthread_mutex_init(&f.mu, NULL);
    pthread_cond_init(&f.cv, NULL);
    wm_cache *w = wm_new("127.0.0.1:1", "objlog.events", 4, err, sizeof(err));
    assert_non_null(w);
    wm_set_fetch(w, fake_fetch, &f);
    fake_set_end(&f, 20);
    int64_t end2 = -1;
    p2_arg a2 = {w, &end2};
    many_reader m = {.w = w, .ps = {0, 1, 2, 3}};
    pthread_t t2;
    assert_int_equal(pthread_create(&t2, NULL, p2_reader_main, &a2), 0);
    assert_int_equal(fake_wait_calls(&f, 1), 1);
    fake_set_end(&f, 21);        /* a write is acked at offset 20 */
    assert_int_equal(pthread_create(&m.th, NULL, many_main, &m), 0);
    assert_int_equal(fake_wait_calls(&f, 2), 2); /* partition 0, by m */
    fake_release(&f, 3);         /* partition 2's old request, 0 and 1 */
    pthread_join(t2, NULL);
    assert_int_equal(end2, 20);
    assert_int_equal(fake_wait_calls(&f, 4), 4); /* partition 3 */
    settle();
    assert_false(atomic_load(&m.done));
    fake_release(&f, 4);
    /* Partition 2 answered 20, from before the read: it asks again. */
    assert_int_equal(fake_wait_calls(&f, 5), 5);
    settle();
    assert_false(atomic_load(&m.done));
    fake_release(&f, 5);
    pthread_join(m.th, NULL);
    assert_int_equal(m.err, RD_KAFKA_RESP_ERR_NO_ERROR);
    for (int i = 0; i < 4; i++)
        assert_int_equal(m.ends[i], 21);
    assert_int_equal(wm_requests(w), 5);
    int32_t bad[4] = {0, 1, 9, 3};
    int64_t ends[4];
    int32_t failed = -1;
    assert_int_equal(wm_end_offsets(w, bad, 4, 50, ends, &failed),
                     RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION);
    assert_int_equal(failed, 9);
    fake_release(&f, 1 << 30);
    wm_destroy(w);
    pthread_mutex_destroy(&f.mu);
    pthread_cond_destroy(&f.cv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_skips_request_in_flight),
        cmocka_unit_test(test_readers_share_next_request),
        cmocka_unit_test(test_wait_is_bounded),
        cmocka_unit_test(test_many_partitions_fresh),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
