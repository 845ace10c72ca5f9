/* rangewait.h: whether a RangeIn may apply now, and the imports that the
 * RangeIns waiting here need (rangewait.c). Internal to the materializer:
 * its apply lanes ask, the cluster's importer reads what waits through
 * objlog_materializer_range_wait. */
#ifndef OBJLOG_RANGEWAIT_H
#define OBJLOG_RANGEWAIT_H

#include <stdint.h>

#include "batch.h"
#include "materializer.h"
#include "objlog.pb-c.h"

typedef struct rangewait rangewait;

rangewait *rangewait_new(int nparts);
void rangewait_free(rangewait *w);
/* The RangeIn ri at (q, off), staged by a lane whose batch b holds q:
 * 1 it may apply now, 0 it waits (for its source to apply its RangeOut
 * here, or for the range's import, which it then asks for). */
int rangewait_ready(objlog_materializer *m, rangewait *w, apply_batch *b, int32_t q,
                    int64_t off, const Objlog__RangeIn *ri);

#endif
