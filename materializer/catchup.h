/* catchup.h: how far behind the log the materializer is and how fast it
 * closes the gap (catchup.c): the backlog (events in the log past what is
 * applied, summed over the partitions applied here), the apply rate over
 * the last few seconds, the time left at that rate, and the batch size
 * that suits the backlog. Internal to the materializer.
 *
 * A view far behind (a rebuild, a new standby, a node without a peer to
 * copy from) applies in batches of CATCHUP_BULK_BATCH events instead of
 * the conf's batch_max: per-batch costs (the stats rows, the applied
 * offsets, one write and one publish per lane) are paid 8 times less
 * often, and nobody waits on the batch. It is behind from a backlog of
 * CATCHUP_BULK_BACKLOG events until the backlog falls under a tenth of
 * that; close to the log end the small batch keeps latency low. While behind it says so on the log every
 * CATCHUP_LOG_MS. Every decision here is local: none reaches the state
 * machine, whose results do not depend on batch boundaries. */
#ifndef OBJLOG_CATCHUP_H
#define OBJLOG_CATCHUP_H

#include <stdint.h>

#include "matlog.h"

#define CATCHUP_BULK_BACKLOG 100000  /* events behind: bulk batches */
#define CATCHUP_BULK_BATCH 8000
#define CATCHUP_WINDOW_MS 2000       /* rate window */
#define CATCHUP_LOG_MS 10000

typedef struct catchup {
    int64_t backlog;             /* events, at the last note */
    double rate;                 /* events/s over the last window */
    int64_t win_start_ms;
    uint64_t win_start_events;
    int64_t last_log_ms;
    int behind;                  /* 1 while reporting a backlog */
} catchup;

/* The figures published for /metrics: backlog (events), rate (events/s),
 * eta_s (seconds at that rate; -1 unknown, 0 caught up). */
typedef struct catchup_figures {
    int64_t backlog;
    double rate;
    double eta_s;
} catchup_figures;

void catchup_init(catchup *c, int64_t now_ms);
/* After a batch (or an idle poll): the total applied so far and the
 * backlog now. Logs the start, the progress and the end of a backlog. */
void catchup_note(catchup *c, const matlog *log, int64_t now_ms, uint64_t applied_total,
                  int64_t backlog);
void catchup_figures_get(const catchup *c, catchup_figures *f);
/* The batch size for the backlog: batch_max, or CATCHUP_BULK_BATCH when
 * far behind (never less than batch_max). */
int catchup_batch(const catchup *c, int batch_max);

#endif
