/* stall.c: a store that cannot write (stall.h). Owns the backoff, what
 * is published about a stall and what is logged about it; the
 * materializer thread decides when to write and calls in with each
 * write's result.
 *
 * Invariant: `active` is 1 exactly from a failed write to the next write
 * that went through, and `err` holds the last failure's text while it is
 * 1. Readers take `mu` only when they want the text. */
#include "stall.h"


#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stall {
    /* The materializer thread's. */
    int backoff_ms;              /* 0: no failure since the last batch written */
    int64_t retry_at_ms;         /* when active: the next retry is due */
    int64_t since_ms;            /* when active: the first failure of this stall */
    uint64_t failures;           /* of this stall */
    matlog log;
    matlog_limit limit;
    /* Published. */
    atomic_int active;
    atomic_uint_fast64_t errors; /* since start */
    pthread_mutex_t mu;
    char err[512];               /* under mu */
};

stall *stall_new(void) {
    stall *s = calloc(1, sizeof(*s));
    if (s)
        pthread_mutex_init(&s->mu, NULL);
    return s;
}

void stall_set_log(stall *s, const matlog *log) { s->log = *log; }

void stall_destroy(stall *s) {
    if (!s)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void stall_failed(stall *s, const char *err, int64_t now_ms) {
    if (!atomic_load(&s->active)) {
        s->since_ms = now_ms;
        s->failures = 0;
        /* Each stall's first failure is logged at once, whatever the last
         * stall's lines were. */
        s->limit.next_ms = 0;
        s->limit.suppressed = 0;
    }
    s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : STALL_FIRST_MS;
    if (s->backoff_ms > STALL_MAX_MS)
        s->backoff_ms = STALL_MAX_MS;
    s->retry_at_ms = now_ms + s->backoff_ms;
    s->failures++;
    pthread_mutex_lock(&s->mu);
    snprintf(s->err, sizeof(s->err), "%s", err);
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_add(&s->errors, 1);
    atomic_store(&s->active, 1);
    matlog_printf_limited(&s->log, &s->limit, MATLOG_ERR, "materializer",
                          "the store cannot write: %s; applying is paused on every "
                          "partition, next retry in %d ms (%llu failed writes in %.1f s)",
                          err, s->backoff_ms, (unsigned long long)s->failures,
                          (double)(now_ms - s->since_ms) / 1000.0);
}

void stall_written(stall *s, int batch, int64_t now_ms) {
    if (batch)
        s->backoff_ms = 0;
    if (!atomic_load(&s->active))
        return;
    atomic_store(&s->active, 0);
    matlog_printf(&s->log, MATLOG_NOTICE, "materializer",
                  "the store writes again after %llu failed writes in %.1f s: applying "
                  "resumes from the stored offsets",
                  (unsigned long long)s->failures, (double)(now_ms - s->since_ms) / 1000.0);
}

int64_t stall_wait_ms(const stall *s, int64_t now_ms) {
    if (!atomic_load(&s->active))
        return -1;
    return s->retry_at_ms > now_ms ? s->retry_at_ms - now_ms : 0;
}

int stall_active(stall *s, char *why, size_t why_size) {
    if (!atomic_load(&s->active))
        return 0;
    if (why && why_size) {
        pthread_mutex_lock(&s->mu);
        snprintf(why, why_size, "%s", s->err);
        pthread_mutex_unlock(&s->mu);
    }
    return 1;
}

uint64_t stall_errors(stall *s) { return atomic_load(&s->errors); }
