/* test_logring.c: query/log/logring.c, the ring of a node's recent
 * warnings and errors behind GET /v1/log, alone and as the logger's sink:
 * one rule per test, exact lines, seqs and counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "logring.h"
#include "objlog_logger.h"

#define CAP 8

static void add(logring *r, int level, const char *component, int i) {
    char msg[64];
    snprintf(msg, sizeof(msg), "line %d", i);
    logring_add(r, 1000 * (int64_t)i, level, component, msg);
}

/* A read of the ring into lines (room for CAP); its page. */
static logring_page read_ring(logring *r, logring_level level, int paged, uint64_t after,
                              size_t limit, logring_line *lines) {
    logring_want want = {.level = level, .paged = paged, .after = after, .limit = limit};
    logring_page pg;
    memset(&pg, 0xa5, sizeof(pg));
    logring_read(r, &want, lines, &pg);
    return pg;
}

/* Lines first_seq.. in order, consecutive, each "line SEQ" of SEQ s. */
static void assert_lines(const logring_line *lines, size_t n, uint64_t first_seq) {
    for (size_t i = 0; i < n; i++) {
        char want[64];
        snprintf(want, sizeof(want), "line %llu", (unsigned long long)(first_seq + i));
        assert_int_equal(lines[i].seq, first_seq + i);
        assert_string_equal(lines[i].msg, want);
        assert_int_equal(lines[i].ms, 1000 * (int64_t)(first_seq + i));
    }
}

static void wrap_keeps_the_last_capacity_lines_in_order(void **state) {
    (void)state;
    logring *r = logring_new(CAP);
    assert_non_null(r);
    assert_int_equal(logring_capacity(r), CAP);
    for (int i = 1; i <= 21; i++)
        add(r, i % 3 ? OBJLOG_LEVEL_WARNING : OBJLOG_LEVEL_ERR, "comp", i);
    logring_line lines[CAP];
    logring_page pg = read_ring(r, LOGRING_WARN, 0, 0, CAP, lines);
    assert_int_equal(pg.n, CAP);
    assert_lines(lines, pg.n, 14);
    assert_int_equal(pg.next_after, 21);
    assert_string_equal(lines[0].component, "comp");
    assert_int_equal(lines[0].level, LOGRING_WARN); /* 14 */
    assert_int_equal(lines[1].level, LOGRING_ERROR); /* 15 */
    /* a shorter tail is the newest lines, still oldest first */
    pg = read_ring(r, LOGRING_WARN, 0, 0, 3, lines);
    assert_int_equal(pg.n, 3);
    assert_lines(lines, pg.n, 19);
    assert_int_equal(pg.next_after, 21);
    logring_destroy(r);
}

static void after_pages_forward_from_a_seq(void **state) {
    (void)state;
    logring *r = logring_new(CAP);
    for (int i = 1; i <= 21; i++)
        add(r, OBJLOG_LEVEL_WARNING, "comp", i);
    logring_line lines[CAP];
    logring_page pg = read_ring(r, LOGRING_WARN, 1, 15, 3, lines);
    assert_int_equal(pg.n, 3);
    assert_lines(lines, pg.n, 16);
    assert_int_equal(pg.next_after, 18);
    pg = read_ring(r, LOGRING_WARN, 1, pg.next_after, 3, lines);
    assert_int_equal(pg.n, 3);
    assert_lines(lines, pg.n, 19);
    assert_int_equal(pg.next_after, 21);
    pg = read_ring(r, LOGRING_WARN, 1, pg.next_after, 3, lines);
    assert_int_equal(pg.n, 0);
    assert_int_equal(pg.next_after, 21);
    /* lines the ring dropped: the page starts at its oldest, the gap shows */
    pg = read_ring(r, LOGRING_WARN, 1, 3, 2, lines);
    assert_int_equal(pg.n, 2);
    assert_lines(lines, pg.n, 14);
    assert_int_equal(pg.next_after, 15);
    /* after 0 is from the first line held */
    pg = read_ring(r, LOGRING_WARN, 1, 0, CAP, lines);
    assert_int_equal(pg.n, CAP);
    assert_lines(lines, pg.n, 14);
    assert_int_equal(pg.next_after, 21);
    /* a seq past the newest (an earlier process's): next_after falls back */
    pg = read_ring(r, LOGRING_WARN, 1, 100, CAP, lines);
    assert_int_equal(pg.n, 0);
    assert_int_equal(pg.next_after, 21);
    logring_destroy(r);
}

static void counts_by_level_include_dropped_lines(void **state) {
    (void)state;
    logring *r = logring_new(4);
    int i = 1;
    for (int k = 0; k < 5; k++)
        add(r, OBJLOG_LEVEL_WARNING, "w", i++);
    for (int k = 0; k < 3; k++)
        add(r, OBJLOG_LEVEL_ERR, "e", i++);
    add(r, 2, "crit", i++); /* CRIT counts as an error */
    uint64_t counts[LOGRING_LEVELS];
    logring_counts(r, counts);
    assert_int_equal(counts[LOGRING_WARN], 5);
    assert_int_equal(counts[LOGRING_ERROR], 4);
    logring_line lines[CAP];
    logring_page pg = read_ring(r, LOGRING_WARN, 0, 0, 4, lines);
    assert_int_equal(pg.counts[LOGRING_WARN], 5);
    assert_int_equal(pg.counts[LOGRING_ERROR], 4);
    assert_int_equal(pg.n, 4);
    assert_lines(lines, pg.n, 6);
    assert_int_equal(lines[3].level, LOGRING_ERROR);
    assert_string_equal(lines[3].component, "crit");
    assert_string_equal(logring_level_name(LOGRING_WARN), "warn");
    assert_string_equal(logring_level_name(LOGRING_ERROR), "error");
    logring_destroy(r);
}

static void level_error_skips_warnings_and_pages_past_them(void **state) {
    (void)state;
    logring *r = logring_new(CAP);
    /* 1 W, 2 E, 3 W, 4 W, 5 E, 6 W */
    static const int levels[] = {OBJLOG_LEVEL_WARNING, OBJLOG_LEVEL_ERR, OBJLOG_LEVEL_WARNING,
                                 OBJLOG_LEVEL_WARNING, OBJLOG_LEVEL_ERR, OBJLOG_LEVEL_WARNING};
    for (int i = 0; i < 6; i++)
        add(r, levels[i], "c", i + 1);
    logring_line lines[CAP];
    logring_page pg = read_ring(r, LOGRING_ERROR, 0, 0, CAP, lines);
    assert_int_equal(pg.n, 2);
    assert_int_equal(lines[0].seq, 2);
    assert_int_equal(lines[1].seq, 5);
    assert_int_equal(pg.next_after, 6);
    pg = read_ring(r, LOGRING_ERROR, 0, 0, 1, lines);
    assert_int_equal(pg.n, 1);
    assert_int_equal(lines[0].seq, 5);
    assert_int_equal(pg.next_after, 6); /* a tail looked at every line */
    pg = read_ring(r, LOGRING_ERROR, 1, 0, 1, lines);
    assert_int_equal(pg.n, 1);
    assert_int_equal(lines[0].seq, 2);
    assert_int_equal(pg.next_after, 2);
    pg = read_ring(r, LOGRING_ERROR, 1, 2, 1, lines);
    assert_int_equal(pg.n, 1);
    assert_int_equal(lines[0].seq, 5);
    assert_int_equal(pg.next_after, 5);
    pg = read_ring(r, LOGRING_ERROR, 1, 5, 1, lines);
    assert_int_equal(pg.n, 0);
    assert_int_equal(pg.next_after, 6); /* the warning at 6 was looked at */
    logring_destroy(r);
}

static void info_and_quieter_lines_are_never_stored(void **state) {
    (void)state;
    logring *r = logring_new(CAP);
    add(r, OBJLOG_LEVEL_NOTICE, "c", 1);
    add(r, OBJLOG_LEVEL_INFO, "c", 2);
    add(r, OBJLOG_LEVEL_DEBUG, "c", 3);
    logring_line lines[CAP];
    logring_page pg = read_ring(r, LOGRING_WARN, 0, 0, CAP, lines);
    assert_int_equal(pg.n, 0);
    assert_int_equal(pg.next_after, 0);
    assert_int_equal(pg.counts[LOGRING_WARN], 0);
    assert_int_equal(pg.counts[LOGRING_ERROR], 0);
    add(r, OBJLOG_LEVEL_WARNING, "c", 1); /* the first line taken is seq 1 */
    pg = read_ring(r, LOGRING_WARN, 0, 0, CAP, lines);
    assert_int_equal(pg.n, 1);
    assert_lines(lines, 1, 1);
    logring_destroy(r);
}

static void a_long_message_is_cut_at_a_character(void **state) {
    (void)state;
    logring *r = logring_new(CAP);
    char msg[1024];
    memset(msg, 'a', 600);
    msg[600] = '\0';
    logring_add(r, 1, OBJLOG_LEVEL_WARNING, "c", msg);
    /* 508 'a' then U+00E9: it would end at byte 510, past the 509 kept */
    memset(msg, 'a', 508);
    memcpy(msg + 508, "\xc3\xa9tail and more", 15);
    logring_add(r, 2, OBJLOG_LEVEL_WARNING, "c", msg);
    /* exactly LOGRING_MSG_MAX bytes: kept whole */
    memset(msg, 'b', LOGRING_MSG_MAX);
    msg[LOGRING_MSG_MAX] = '\0';
    logring_add(r, 3, OBJLOG_LEVEL_WARNING, "a-component-name-longer-than-31-bytes", msg);
    /* bytes that start no character become '?', one each: a lone or
     * truncated lead, a surrogate, an overlong '/' */
    logring_add(r, 4, OBJLOG_LEVEL_WARNING, "c",
                "bad \xff\xc3 and \xed\xa0\x80 \xe0\x80\xaf ok \xe2\x82\xac");
    logring_line lines[CAP];
    logring_page pg = read_ring(r, LOGRING_WARN, 0, 0, CAP, lines);
    assert_int_equal(pg.n, 4);
    assert_int_equal(strlen(lines[0].msg), LOGRING_MSG_MAX);
    assert_memory_equal(lines[0].msg + LOGRING_MSG_MAX - 3, "...", 4);
    for (int i = 0; i < LOGRING_MSG_MAX - 3; i++)
        assert_int_equal(lines[0].msg[i], 'a');
    assert_int_equal(strlen(lines[1].msg), 508 + 3);
    assert_string_equal(lines[1].msg + 508, "...");
    assert_int_equal(strlen(lines[2].msg), LOGRING_MSG_MAX);
    assert_int_equal(lines[2].msg[LOGRING_MSG_MAX - 1], 'b');
    assert_string_equal(lines[2].component, "a-component-name-longer-than...");
    assert_string_equal(lines[3].msg, "bad ?? and ??? ??? ok \xe2\x82\xac");
    logring_destroy(r);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void the_logger_hands_the_sink_what_it_emits(void **state) {
    (void)state;
    logring *r = logring_new(CAP), *other = logring_new(CAP);
    assert_int_equal(objlog_logger_set_sink(logring_add, r), 0);
    assert_int_equal(objlog_logger_set_sink(logring_add, other), -1); /* one sink */
    int64_t t0 = now_ms();
    objlog_logf(OBJLOG_LEVEL_WARNING, "test", "disk %d%% full", 91);
    objlog_logf(OBJLOG_LEVEL_INFO, "test", "an info line");
    objlog_logf(OBJLOG_LEVEL_ERR, "store", "write failed: %s", "EIO");
    objlog_logger_limit lim = {.interval_ms = 60000};
    assert_int_equal(objlog_logf_limited(&lim, OBJLOG_LEVEL_WARNING, "http", "accept: EMFILE"), 1);
    assert_int_equal(objlog_logf_limited(&lim, OBJLOG_LEVEL_WARNING, "http", "accept: EMFILE"), 0);
    int64_t t1 = now_ms();
    assert_int_equal(objlog_logger_set_sink(NULL, NULL), 0);
    objlog_logf(OBJLOG_LEVEL_ERR, "test", "after the sink went");
    logring_line lines[CAP];
    logring_page pg = read_ring(r, LOGRING_WARN, 0, 0, CAP, lines);
    assert_int_equal(pg.n, 3);
    assert_string_equal(lines[0].component, "test");
    assert_string_equal(lines[0].msg, "disk 91% full");
    assert_int_equal(lines[0].level, LOGRING_WARN);
    assert_true(lines[0].ms >= t0 && lines[0].ms <= t1);
    assert_string_equal(lines[1].component, "store");
    assert_string_equal(lines[1].msg, "write failed: EIO");
    assert_int_equal(lines[1].level, LOGRING_ERROR);
    assert_string_equal(lines[2].component, "http");
    assert_string_equal(lines[2].msg, "accept: EMFILE");
    assert_int_equal(pg.next_after, 3);
    pg = read_ring(other, LOGRING_WARN, 0, 0, CAP, lines);
    assert_int_equal(pg.n, 0);
    logring_destroy(other);
    logring_destroy(r);
}

/* ---- librdkafka's repeated lines (its mock broker logs every failed
 * accept in a busy loop): a thread's line equal to its previous one is
 * counted, not written, and the count told before its next other line;
 * another thread's same line is its own. */

#define MOCK_LINE "Failed to accept mock broker socket: Too many open files"

static void *kafka_logger_main(void *arg) {
    (void)arg;
    objlog_logger_rdkafka(NULL, 3, "MOCK", MOCK_LINE);
    return NULL;
}

static void a_repeated_kafka_line_is_counted_not_written(void **state) {
    (void)state;
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
    assert_true(saved >= 0 && null >= 0);
    dup2(null, STDERR_FILENO);
    logring *r = logring_new(CAP);
    assert_int_equal(objlog_logger_set_sink(logring_add, r), 0);
    for (int i = 0; i < 1000; i++)
        objlog_logger_rdkafka(NULL, 3, "MOCK", MOCK_LINE);
    objlog_logger_rdkafka(NULL, 3, "ERROR", "3/3 brokers are down");
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, kafka_logger_main, NULL), 0);
    pthread_join(t, NULL);
    objlog_logger_rdkafka(NULL, 3, "ERROR", "3/3 brokers are down"); /* again: counted */
    objlog_logger_rdkafka(NULL, 7, "MOCK", "a debug line"); /* below the level */
    objlog_logger_rdkafka(NULL, 3, "MOCK", MOCK_LINE);
    assert_int_equal(objlog_logger_set_sink(NULL, NULL), 0);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(null);
    logring_line lines[CAP];
    logring_page pg = read_ring(r, LOGRING_WARN, 0, 0, CAP, lines);
    assert_int_equal(pg.n, 6);
    assert_string_equal(lines[0].msg, "-: MOCK: " MOCK_LINE);
    assert_string_equal(lines[1].msg, "-: MOCK: " MOCK_LINE " (999 like it suppressed)");
    assert_string_equal(lines[2].msg, "-: ERROR: 3/3 brokers are down");
    assert_string_equal(lines[3].msg, "-: MOCK: " MOCK_LINE); /* the other thread's */
    assert_string_equal(lines[4].msg, "-: ERROR: 3/3 brokers are down (1 like it suppressed)");
    assert_string_equal(lines[5].msg, "-: MOCK: " MOCK_LINE);
    for (size_t i = 0; i < pg.n; i++) {
        assert_string_equal(lines[i].component, "kafka");
        assert_int_equal(lines[i].level, LOGRING_ERROR);
    }
    logring_destroy(r);
}

/* ---- the sink swapped while threads log: once a clearing call returns,
 * no thread writes into the ring it removed, so it may be freed at once
 * (under ASan a late write is a use after free) */

#define LOGGERS 4
#define LINES_EACH 400

static void *logger_main(void *arg) {
    (void)arg;
    for (int i = 0; i < LINES_EACH; i++)
        objlog_logf(OBJLOG_LEVEL_WARNING, "race", "line %d", i);
    return NULL;
}

static void the_sink_may_change_while_threads_log(void **state) {
    (void)state;
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
    assert_true(saved >= 0 && null >= 0);
    dup2(null, STDERR_FILENO); /* 1,600 lines are noise */
    pthread_t t[LOGGERS];
    for (int i = 0; i < LOGGERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, logger_main, NULL), 0);
    uint64_t taken = 0;
    for (int round = 0; round < 200; round++) {
        logring *r = logring_new(CAP);
        assert_int_equal(objlog_logger_set_sink(logring_add, r), 0);
        sched_yield();
        assert_int_equal(objlog_logger_set_sink(NULL, NULL), 0);
        uint64_t counts[LOGRING_LEVELS];
        logring_counts(r, counts);
        taken += counts[LOGRING_WARN];
        logring_destroy(r); /* no thread is inside it any more */
    }
    for (int i = 0; i < LOGGERS; i++)
        pthread_join(t[i], NULL);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(null);
    assert_true(taken <= LOGGERS * LINES_EACH);
    logring *r = logring_new(CAP);
    assert_int_equal(objlog_logger_set_sink(logring_add, r), 0);
    objlog_logf(OBJLOG_LEVEL_WARNING, "race", "the last one");
    assert_int_equal(objlog_logger_set_sink(NULL, NULL), 0);
    logring_line lines[CAP];
    logring_page pg = read_ring(r, LOGRING_WARN, 0, 0, CAP, lines);
    assert_int_equal(pg.n, 1);
    assert_int_equal(lines[0].seq, 1);
    assert_string_equal(lines[0].msg, "the last one");
    logring_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wrap_keeps_the_last_capacity_lines_in_order),
        cmocka_unit_test(after_pages_forward_from_a_seq),
        cmocka_unit_test(counts_by_level_include_dropped_lines),
        cmocka_unit_test(level_error_skips_warnings_and_pages_past_them),
        cmocka_unit_test(info_and_quieter_lines_are_never_stored),
        cmocka_unit_test(a_long_message_is_cut_at_a_character),
        cmocka_unit_test(the_logger_hands_the_sink_what_it_emits),
        cmocka_unit_test(the_sink_may_change_while_threads_log),
        cmocka_unit_test(a_repeated_kafka_line_is_counted_not_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
