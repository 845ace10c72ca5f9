/* handoff.h: the state machine's side of a range handoff (handoff.c):
 * which keys a partition holds, decided from its own log, and the two
 * events that move a range, RangeOut on the source and RangeIn on the
 * target (docs/ARCHITECTURE.md, "Ranges move"). Internal to the state
 * machine: apply.c calls it (rangewait.h decides when a RangeIn may
 * apply). */
#ifndef OBJLOG_HANDOFF_H
#define OBJLOG_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "objlog.pb-c.h"
#include "stage.h"

/* Rule 2: 1 if partition p holds route key rk under its own map, 0 not
 * (*epoch: that map's epoch), -1 error (errstr). */
int handoff_owns(apply_batch *b, int32_t p, const uint8_t *rk, size_t n, uint32_t *epoch,
                 char *errstr, size_t es);

/* 1 if k may bound a moving range: between two buckets (empty, a
 * bucket-hash prefix, a bucket part exactly) or at a key (route_key(b, k)
 * exactly), so that every row of a key stays on one side. */
int handoff_bound_ok(const uint8_t *k, size_t n);

/* The events; a->res says the outcome (InvalidArgument when the handoff
 * does not fit the partition's map). 0, or -1 on a storage error. */
int handoff_range_out(apply_ev *a);
int handoff_range_in(apply_ev *a);

#endif
