/* rangetest.h: what the range tests (test_ranges, test_bucket_ranges)
 * share about a running objlogd: JSON requests that assert their status,
 * a handoff asked for and printed, the map's epoch, a /metrics counter,
 * and a restart with extra environment. Test-only; these assert
 * (cmocka), so they run on the test's main thread. */
#ifndef OBJLOG_TEST_RANGETEST_H
#define OBJLOG_TEST_RANGETEST_H

#include <jansson.h>

#include "httpc.h"
#include "viewproc.h"

/* method path with body; asserts the status is want; the answer parsed. */
json_t *rt_req_json(httpc *h, const char *method, const char *path, const char *body,
                    long want);
/* POST /v1/ranges/<kind> body (200 asserted), its figures printed. */
json_t *rt_handoff(httpc *h, const char *kind, const char *body);
/* The epoch of the node's range map. */
long rt_map_epoch(httpc *h);
/* The value of the /metrics line starting with series (name, labels and
 * the space before the value), -1 if there is none. */
long rt_metric(httpc *h, const char *series);
/* A test group's frame: a log of `partitions` and one view on it (live);
 * 0, or -1 said on stderr. The end kills the view and stops the frame,
 * named for its test. */
int rt_group_start(viewtest_frame *f, viewproc *live, int partitions);
void rt_group_stop(viewtest_frame *f, viewproc *live, const char *test);
/* Stops live and starts it again with env (NAME, VALUE pairs, NULL-ended)
 * in its environment, taken away again for later starts. */
void rt_restart_live(viewproc *live, const char *const *env);

#endif
