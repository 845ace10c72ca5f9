/* deadline.h: a CLOCK_MONOTONIC deadline some milliseconds from now, for
 * the timed waits (pthread_cond_timedwait on a monotonic condattr) of the
 * materializer and the query service's watermark. */
#ifndef OBJLOG_SCHEMAS_DEADLINE_H
#define OBJLOG_SCHEMAS_DEADLINE_H

#include <time.h>

/* *ts = now (CLOCK_MONOTONIC) + ms. Here, not in each waiter, so that the
 * materializer and the watermark normalise tv_nsec the same way. */
void deadline_after_ms(struct timespec *ts, int ms);

#endif
