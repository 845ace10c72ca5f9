/* ratelimit.h: the state machine's part of admission control (ratelimit.c):
 * what a stored RateLimit may hold, and how SetRateLimit / DeleteRateLimit
 * change a bucket's. */
#ifndef OBJLOG_RATELIMIT_H
#define OBJLOG_RATELIMIT_H

#include <stddef.h>

#include "objlog.pb-c.h"

/* 1 when l is a storable RateLimit, else 0 with why. */
int ratelimit_valid(const Objlog__RateLimit *l, char *why, size_t why_size);
/* SetRateLimit / DeleteRateLimit: points *slot at the event's limit (which
 * the event keeps owning) or NULL. 0, or -1 with why (InvalidArgument). */
int ratelimit_settle(const Objlog__Event *ev, Objlog__RateLimit **slot, char *why,
                     size_t why_size);

#endif
