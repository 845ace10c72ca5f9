/* producer_time.h: the two clocks the library's threads use: a monotonic
 * millisecond count for deadlines and polling periods, and the absolute
 * CLOCK_REALTIME timespec that pthread_cond_timedwait wants. Header-only:
 * every file of the library reads the same clocks the same way.
 * Invariant: deadlines compared with each other are all monotonic; only a
 * condition-variable wait converts one to wall time, and only here. */
#ifndef OBJLOG_PRODUCER_TIME_H
#define OBJLOG_PRODUCER_TIME_H

#include <stdint.h>
#include <time.h>

static inline int64_t ptime_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Now plus ms as a CLOCK_REALTIME timespec (the condvars' clock). */
static inline void ptime_deadline(struct timespec *ts, int ms) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

#endif
