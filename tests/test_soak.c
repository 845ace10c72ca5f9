/* test_soak.c: kill -9 soak of the view on a real Kafka.
 * Owns the claim that SIGKILLing `objlogd --brokers` over and over, under
 * mixed writes, loses no acknowledged write and applies none twice.
 *
 * A 3-node KRaft cluster (testlog.h) holds the log; one view serves on a
 * fixed port, so clients keep their URL across restarts. The mixed writers
 * of mixload.h run throughout: plain PUTs, If-None-Match creates, PUT then
 * DELETE, If-Match CAS counters, through libobjlog_producer (ack=applied)
 * and through the view's own HTTP gateway. OBJLOG_SOAK_CYCLES times
 * (default 5; ops/soak.sh runs 50): after a random 0.5..2.5 s of writes
 * (seeded: OBJLOG_TEST_SEED replays one) the view is SIGKILLed and
 * restarted on the same data directory and port, at once or after up to
 * 0.3 s; every 5th cycle it stays down 4 s, longer than the writers'
 * 3 s outcome wait. Writes in flight then end UNKNOWN (lib) or without an
 * answer (gateway): each is retried with its request id until it has a
 * definite outcome.
 *
 * At the end (mixload_check, exact): every acknowledged write is in the
 * view exactly once, nothing unacknowledged applied, every CAS counter
 * equals its acknowledged increments; the view has applied the log end and
 * equals, byte for byte, a second view rebuilt from the topic into an
 * empty directory. One progress line per cycle and a SOAK_SUMMARY line.
 * Real Kafka only: skipped with a message under OBJLOG_TEST_LOG=mock. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mixload.h"
#include "proc.h"
#include "testlog.h"
#include "viewproc.h"

#define SK_PARTITIONS 4
#define SK_DEFAULT_CYCLES 5

typedef struct stest {
    viewtest_frame f;
    viewproc view;
    mixload *load;
} stest;

static stest T;

static void sk_say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "soak [%7.1fs] ", (double)(viewtest_ms() - T.f.t0) / 1000.0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int setup(void **state) {
    (void)state;
    T.f.t0 = viewtest_ms();
    if (!testlog_is_kafka())
        return 0;
    char why[512];
    if (viewtest_frame_start(&T.f, SK_PARTITIONS, "rebuild", why, sizeof(why)) < 0)
        fail_msg("%s", why);
    sk_say("3-node Kafka up at %s", testlog_bootstrap(T.f.log));
    int port = viewproc_free_port();
    assert_true(port > 0);
    viewproc_init(&T.view, testlog_bootstrap(T.f.log), T.f.data1, port);
    if (viewproc_start(&T.view, 120000, why, sizeof(why)) < 0)
        fail_msg("%s", why);
    sk_say("view at %s (stderr: %s)", T.view.url, T.view.log);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (T.load)
        mixload_destroy(T.load);
    T.load = NULL;
    viewproc_kill(&T.view);
    viewtest_frame_stop(&T.f, "test_soak");
    return 0;
}

static int sk_env_int(const char *name, int dflt, int lo, int hi) {
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi)
        fail_msg("%s must be an integer in %d..%d (got '%s')", name, lo, hi, v);
    return (int)x;
}

static void view_sigkill_cycles_lose_and_duplicate_nothing(void **state) {
    (void)state;
    if (!testlog_is_kafka()) {
        fprintf(stderr, "test_soak: needs a real Kafka cluster (OBJLOG_TEST_LOG=kafka); "
                        "skipped under %s\n", testlog_kind());
        skip();
    }
    int cycles = sk_env_int("OBJLOG_SOAK_CYCLES", SK_DEFAULT_CYCLES, 1, 100000);
    const unsigned seed0 = (unsigned)sk_env_int("OBJLOG_TEST_SEED",
                                                (int)(time(NULL) & 0x7fffffff), 0, 0x7fffffff);
    unsigned seed = seed0;
    sk_say("%d SIGKILL/restart cycles of the view; seed %u (OBJLOG_TEST_SEED replays it)",
           cycles, seed0);
    char why[512];
    T.f.failed = 1;
    /* Short outcome waits, so a kill does leave writes UNKNOWN to resolve. */
    mixload_conf mc = {.boot = testlog_bootstrap(T.f.log), .url = T.view.url, .counters = 2,
                       .lib_outcome_timeout_ms = 3000, .gw_timeout_ms = 3000,
                       .plain_window = 8, .pace_ms = 10};
    T.load = mixload_new(&mc, why, sizeof(why));
    if (!T.load)
        fail_msg("%s", why);
    assert_int_equal(mixload_start(T.load), 0);
    mixload_phase(T.load, 0, "kill cycles");
    long long soak_start = viewtest_ms(), max_restart = 0, sum_restart = 0;
    for (int cycle = 1; cycle <= cycles; cycle++) {
        int run_ms = 500 + (int)(rand_r(&seed) % 2000);
        int down_ms = cycle % 5 == 0 ? 4000 : (int)(rand_r(&seed) % 300);
        usleep((useconds_t)run_ms * 1000);
        viewproc_kill(&T.view);
        usleep((useconds_t)down_ms * 1000);
        long long t = viewtest_ms();
        if (viewproc_start(&T.view, 120000, why, sizeof(why)) < 0)
            fail_msg("cycle %d: restart: %s", cycle, why);
        long long restart = viewtest_ms() - t;
        sum_restart += restart;
        if (restart > max_restart)
            max_restart = restart;
        long a, k, u;
        mixload_totals(T.load, &a, &k, &u);
        sk_say("cycle %d/%d: SIGKILL after %d ms of writes, down %d ms, ready again in %lld ms; "
               "writes attempted %ld, acked %ld, unknown answers %ld", cycle, cycles, run_ms,
               down_ms, restart, a, k, u);
    }
    usleep(2000 * 1000); /* writes against the last incarnation too */
    long long soak_ms = viewtest_ms() - soak_start;

    sk_say("stopping the writers; unresolved writes get 120 s more of retries");
    mixload_stop(T.load, 120000);
    int64_t hi[SK_PARTITIONS];
    if (viewproc_log_end(testlog_bootstrap(T.f.log), SK_PARTITIONS, hi, why, sizeof(why)) < 0 ||
        viewproc_wait_applied(T.view.url, SK_PARTITIONS, hi, 120000, why, sizeof(why)) < 0)
        fail_msg("the view did not apply the log end: %s (stderr: %s)", why, T.view.log);
    mixload_report rep;
    int check = mixload_check(T.load, T.view.url, &rep);
    mixload_print(&rep, stderr);

    size_t rows[OBJLOG_CF_COUNT] = {0};
    int64_t events = 0;
    sk_say("rebuilding a view from the topic into an empty directory");
    int rebuild = viewproc_rebuild_equal(&T.view, T.f.data2, SK_PARTITIONS, rows, &events, why,
                                         sizeof(why));
    if (rebuild == 0)
        sk_say("rebuild: identical to the live view (%lld events; rows: versions %zu, objects "
               "%zu, outcomes %zu)", (long long)events, rows[OBJLOG_CF_VERSIONS],
               rows[OBJLOG_CF_OBJECTS], rows[OBJLOG_CF_OUTCOMES]);
    else
        sk_say("rebuild: %s", why);

    mix_counts t;
    mixload_sum(&rep, &t);
    fprintf(stderr,
            "SOAK_SUMMARY cycles=%d seed=%u attempted=%ld acked=%ld rejected412=%ld errors=%ld "
            "lost=%ld duplicated=%ld phantom=%ld unknown_answers=%ld unknown_writes=%ld "
            "resolved_original=%ld resolved_applied_by_retry=%ld resolved_412=%ld "
            "unresolved=%ld counters=%ld/%ld,%ld/%ld restart_ms_avg=%lld restart_ms_max=%lld "
            "longest_write_ms=%ld events=%lld rebuild=%s soak_wall=%.1fs wall=%.1fs\n",
            cycles, seed0, t.attempted, t.acked, t.rejected, t.errors, rep.lost, rep.duplicated,
            rep.phantom, t.unknown_events, t.unknown_writes, t.res_original,
            t.res_retry_applied, t.res_retry_rejected, t.unresolved, rep.cas_value[0],
            rep.cas_acked[0], rep.cas_value[1], rep.cas_acked[1], sum_restart / cycles,
            max_restart, rep.phase[0].max_total_ms, (long long)events,
            rebuild == 0 ? "identical" : "DIFFERENT", (double)soak_ms / 1000.0,
            (double)(viewtest_ms() - T.f.t0) / 1000.0);
    if (check != 0)
        fail_msg("end check: %s (view stderr: %s)", rep.first_problem, T.view.log);
    if (rebuild != 0)
        fail_msg("rebuild: %s", why);
    assert_int_equal(rep.lost, 0);
    assert_int_equal(rep.duplicated, 0);
    assert_int_equal(t.unresolved, 0);
    assert_true(t.acked > 0);
    assert_int_equal(T.view.starts, cycles + 1);
    T.f.failed = 0;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(view_sigkill_cycles_lose_and_duplicate_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
