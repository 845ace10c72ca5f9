/* test_viewcrash.c: a view is a cache of the log.
 * Owns the claim that with the WAL off (the default) a view killed before
 * its memtables were flushed loses exactly what it had not flushed,
 * effects and applied offsets together, and converges to the same state
 * by applying the rest again from the log; and that the flusher bounds
 * what a quiet view keeps in memory only.
 *
 * A machine crash drops what only the page cache or the process held;
 * with the WAL off a SIGKILL already drops every unflushed memtable, so
 * SIGKILL before a flush is the machine-crash model:
 *   (1) a view with no flush timer (OBJLOG_FLUSH_INTERVAL_MS=0) applies
 *       A writes and stops cleanly (its close flushes): the store's
 *       applied offsets equal the log end L1;
 *   (2) restarted, it acknowledges B more writes (ack=applied) and is
 *       SIGKILLed: the store's applied offsets are still L1 (the older
 *       offsets, nothing newer reached disk);
 *   (3) restarted, it applies again up to the log end L2, every one of
 *       the A + B objects reads back with its own etag, and the view
 *       dumps byte for byte like a rebuild of the log into an empty dir;
 *   (4) with the timer (OBJLOG_FLUSH_INTERVAL_MS=200) a view that
 *       acknowledged writes and then sat quiet for 2 s keeps them across
 *       a SIGKILL: its store's applied offsets equal the log end.
 * Mock cluster (the log outlives the view: an `objlogd --kafka-only`). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "httpc.h"
#include "storedump.h"
#include "viewproc.h"

#define VC_PARTS 4
#define VC_A 120
#define VC_B 180
#define VC_BUCKET "crash"

static viewtest_frame F;
static viewproc V;

static int64_t vc_sum(const int64_t *o) {
    int64_t s = 0;
    for (int p = 0; p < VC_PARTS; p++)
        s += o[p];
    return s;
}

static void vc_start(const char *flush_ms) {
    char why[512];
    setenv("OBJLOG_WAL", "off", 1);
    setenv("OBJLOG_FLUSH_INTERVAL_MS", flush_ms, 1);
    if (viewproc_start(&V, 120000, why, sizeof(why)) < 0)
        fail_msg("view: %s (stderr: %s)", why, V.log);
}

static void vc_put(httpc *c, int i) {
    char path[128], body[128];
    snprintf(path, sizeof(path), "/v1/buckets/" VC_BUCKET "/objects/k%04d", i);
    snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"e%04d\"}", i, i);
    httpc_resp r;
    assert_int_equal(httpc_do(c, "PUT", path, body, NULL, &r), 0);
    if (r.status != 200)
        fail_msg("PUT k%04d: %ld %s", i, r.status, r.body);
}

static void vc_bucket(void) {
    httpc *c = httpc_new(V.url);
    httpc_resp r;
    assert_int_equal(httpc_do(c, "PUT", "/v1/buckets/" VC_BUCKET, "{}", NULL, &r), 0);
    assert_int_equal(r.status, 200);
    httpc_destroy(c);
}

static void vc_puts(int from, int to) {
    httpc *c = httpc_new(V.url);
    for (int i = from; i < to; i++)
        vc_put(c, i);
    httpc_destroy(c);
}

static void vc_log_end(int64_t *hi) {
    char why[256];
    if (viewproc_log_end(testlog_bootstrap(F.log), VC_PARTS, hi, why, sizeof(why)) < 0)
        fail_msg("log end: %s", why);
}

static void vc_applied(int64_t *applied) {
    char why[256];
    if (storedump_applied(F.data1, VC_PARTS, applied, why, sizeof(why)) < 0)
        fail_msg("store: %s", why);
}

static void vc_expect_offsets(const int64_t *got, const int64_t *want, const char *when) {
    for (int p = 0; p < VC_PARTS; p++)
        if (got[p] != want[p])
            fail_msg("%s: partition %d applied offset %lld, want %lld", when, p,
                     (long long)got[p], (long long)want[p]);
}

static int setup(void **state) {
    (void)state;
    char why[512];
    F.t0 = viewtest_ms();
    if (viewtest_frame_start(&F, VC_PARTS, "rebuild", why, sizeof(why)) < 0)
        fail_msg("%s", why);
    viewproc_init(&V, testlog_bootstrap(F.log), F.data1, 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    viewproc_kill(&V);
    viewtest_frame_stop(&F, "test_viewcrash");
    return 0;
}

static void crash_before_a_flush_resumes_from_older_offsets(void **state) {
    (void)state;
    F.failed = 1;
    /* (1) */
    vc_start("0");
    vc_bucket();
    vc_puts(0, VC_A);
    assert_int_equal(viewproc_stop(&V, 30000), 0);
    int64_t l1[VC_PARTS], a1[VC_PARTS];
    vc_log_end(l1);
    vc_applied(a1);
    vc_expect_offsets(a1, l1, "after a clean stop");
    assert_int_equal(vc_sum(l1), VC_A + 1);

    /* (2) */
    vc_start("0");
    vc_puts(VC_A, VC_A + VC_B);
    viewproc_kill(&V);
    int64_t l2[VC_PARTS], a2[VC_PARTS];
    vc_log_end(l2);
    assert_int_equal(vc_sum(l2), VC_A + VC_B + 1);
    vc_applied(a2);
    vc_expect_offsets(a2, l1, "after SIGKILL before any flush");

    /* (3) */
    vc_start("0");
    char why[512];
    if (viewproc_wait_applied(V.url, VC_PARTS, l2, 60000, why, sizeof(why)) < 0)
        fail_msg("re-apply: %s", why);
    httpc *c = httpc_new(V.url);
    httpc_resp r;
    for (int i = 0; i < VC_A + VC_B; i++) {
        char path[128], want[32];
        snprintf(path, sizeof(path), "/v1/buckets/" VC_BUCKET "/objects/k%04d", i);
        assert_int_equal(httpc_do(c, "GET", path, NULL, NULL, &r), 0);
        if (r.status != 200)
            fail_msg("GET k%04d after the crash: %ld %s", i, r.status, r.body);
        snprintf(want, sizeof(want), "\"e%04d\"", i);
        if (!strstr(r.body, want))
            fail_msg("GET k%04d: %s lacks etag %s", i, r.body, want);
    }
    httpc_destroy(c);
    size_t rows[OBJLOG_CF_COUNT];
    int64_t events = 0;
    if (viewproc_rebuild_equal(&V, F.data2, VC_PARTS, rows, &events, why, sizeof(why)) < 0)
        fail_msg("rebuild: %s", why);
    assert_int_equal(events, VC_A + VC_B + 1);
    assert_int_equal(rows[OBJLOG_CF_OBJECTS], VC_A + VC_B);
    F.failed = 0;
}

static void the_flusher_bounds_what_a_quiet_view_loses(void **state) {
    (void)state;
    F.failed = 1;
    vc_start("200");
    vc_bucket();
    vc_puts(0, VC_A);
    sleep(2);
    viewproc_kill(&V);
    int64_t l[VC_PARTS], a[VC_PARTS];
    vc_log_end(l);
    vc_applied(a);
    vc_expect_offsets(a, l, "after 2 s quiet and SIGKILL, with a 200 ms flush timer");
    assert_int_equal(vc_sum(a), VC_A + 1);
    F.failed = 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(crash_before_a_flush_resumes_from_older_offsets, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_flusher_bounds_what_a_quiet_view_loses, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
