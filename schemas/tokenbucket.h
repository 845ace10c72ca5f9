/* tokenbucket.h: the token bucket of admission control,
 * shared by objlogd's edge (query/admit/admit.c) and the producer library
 * (producer/admit.c). Pure arithmetic on a caller-supplied clock, so tests
 * drive it with a fake one.
 *
 * Exactness: tokens are kept in micro-tokens (1,000,000 per request) and
 * time in microseconds, so a refill of rps tokens per second adds exactly
 * rps micro-tokens per microsecond: integer arithmetic, no drift, and a
 * bucket refilled for t us holds min(burst, before + t * rps) exactly.
 *
 * Invariant: 0 <= micro <= burst * TOKENBUCKET_UNIT after every call; the
 * clock may stand still or go back (then nothing is refilled).
 */
#ifndef OBJLOG_TOKENBUCKET_H
#define OBJLOG_TOKENBUCKET_H

#include <stdint.h>

#define TOKENBUCKET_UNIT 1000000LL   /* micro-tokens per request */

typedef struct tokenbucket {
    int64_t micro;               /* tokens held, in micro-tokens */
    int64_t last_us;             /* clock of the last refill */
    int started;                 /* 0: full at the first take */
} tokenbucket;

/* The depth a setting means: burst, or max(rps, 1) when burst is 0. */
uint32_t tokenbucket_depth(uint32_t rps, uint32_t burst);

/* Refills for the time since the last call, then takes one token. rps 0:
 * no limit (always 1). 1 taken; 0 refused, with *retry_us (optional) the
 * wait until one token is there (rounded up to a whole microsecond). */
int tokenbucket_take(tokenbucket *b, uint32_t rps, uint32_t burst, int64_t now_us,
                     int64_t *retry_us);

/* Whole seconds a client waits for retry_us (Retry-After), at least 1. */
int64_t tokenbucket_retry_seconds(int64_t retry_us);

#endif
