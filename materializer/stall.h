/* stall.h: the state of a store that cannot write (a full disk, an I/O
 * error), for the materializer thread that writes it and for anyone who
 * asks (readiness, metrics, the write gateway).
 *
 * A failed write of a batch stalls the store: every partition waits, and
 * the materializer retries with a capped exponential backoff
 * (STALL_FIRST_MS doubling to STALL_MAX_MS) until a write succeeds. The
 * first failure of a stall is logged at once, later ones at most once per
 * logger interval with a count; the end of a stall is logged once.
 *
 * Invariant: only the materializer thread moves the state (failed,
 * cleared, written); the published part (stalled or not, the last error,
 * the failure count) may be read by any thread at any time. */
#ifndef OBJLOG_STALL_H
#define OBJLOG_STALL_H

#include <stddef.h>
#include <stdint.h>

#include "matlog.h"

#define STALL_FIRST_MS 100
#define STALL_MAX_MS 5000

typedef struct stall stall;

stall *stall_new(void);
void stall_destroy(stall *s);
/* Where its lines go (a copy is kept; default stderr). */
void stall_set_log(stall *s, const matlog *log);

/* A store write failed with err at now_ms (CLOCK_MONOTONIC): counted,
 * published, logged (limited); the next retry is one backoff later. */
void stall_failed(stall *s, const char *err, int64_t now_ms);
/* A write went through at now_ms: a stall ends (published, logged once).
 * The backoff restarts only after batch (a batch of events, not a retry's
 * probe) was written: a disk at its edge that takes a probe and fails the
 * next batch keeps backing off. */
void stall_written(stall *s, int batch, int64_t now_ms);
/* ms until the next retry is due (0: due now), or -1 when not stalled. */
int64_t stall_wait_ms(const stall *s, int64_t now_ms);

/* Any thread: 1 while stalled (why, when given, gets the last error). */
int stall_active(stall *s, char *why, size_t why_size);
/* Any thread: store writes that failed since start. */
uint64_t stall_errors(stall *s);

#endif
