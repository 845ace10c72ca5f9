/* ratelimit.c: the state machine's part of admission control:
 * SetRateLimit and DeleteRateLimit change a bucket's RateLimit
 * (BucketRecord.rate_limit). apply.c calls this from its bucket-settings
 * read-modify-write; nothing here reads anything but the event.
 *
 * Invariant: a stored RateLimit always passes ratelimit_valid, so the
 * query service's token buckets (query/admit/admit.c) never see a nonsense
 * value, and the decision is a function of the event alone: replay
 * stores the same record byte for byte.
 */
#include "ratelimit.h"

#include <stdio.h>

/* rps and burst of either class: a million per second per bucket is far
 * beyond what one objlogd serves; a larger figure is a typo. */
#define RATELIMIT_MAX 1000000u

static int ratelimit_class_ok(const char *what, uint32_t rps, uint32_t burst,
                              char *why, size_t why_size) {
    if (rps > RATELIMIT_MAX || burst > RATELIMIT_MAX) {
        snprintf(why, why_size, "%s: rate and burst are at most %u", what,
                 RATELIMIT_MAX);
        return 0;
    }
    if (burst && !rps) {
        snprintf(why, why_size, "%s: a burst needs a rate (rps 0 means no limit)",
                 what);
        return 0;
    }
    return 1;
}

int ratelimit_valid(const Objlog__RateLimit *l, char *why, size_t why_size) {
    if (!l) {
        snprintf(why, why_size, "SetRateLimit without a limit (DeleteRateLimit "
                                "returns a bucket to the default)");
        return 0;
    }
    return ratelimit_class_ok("rate limit", l->rps, l->burst, why, why_size) &&
           ratelimit_class_ok("write rate limit", l->write_rps, l->write_burst, why,
                              why_size);
}

int ratelimit_settle(const Objlog__Event *ev, Objlog__RateLimit **slot, char *why,
                     size_t why_size) {
    if (ev->op_case == OBJLOG__EVENT__OP_DELETE_RATE_LIMIT) {
        *slot = NULL;
        return 0;
    }
    const Objlog__RateLimit *l = ev->set_rate_limit->limit;
    if (!ratelimit_valid(l, why, why_size))
        return -1;
    *slot = (Objlog__RateLimit *)l;
    return 0;
}
