/* catchup.c: the materializer's backlog, its apply rate and the batch
 * size they call for (catchup.h). Invariant: written by the consumer
 * thread only; readers take a copy under the materializer's lock. */
#include "catchup.h"

void catchup_init(catchup *c, int64_t now_ms) {
    *c = (catchup){.win_start_ms = now_ms, .last_log_ms = now_ms};
}

static double catchup_eta(const catchup *c) {
    if (c->backlog <= 0)
        return 0;
    return c->rate > 0 ? (double)c->backlog / c->rate : -1;
}

void catchup_note(catchup *c, const matlog *log, int64_t now_ms, uint64_t applied_total,
                  int64_t backlog) {
    c->backlog = backlog > 0 ? backlog : 0;
    if (now_ms - c->win_start_ms >= CATCHUP_WINDOW_MS) {
        c->rate = (double)(applied_total - c->win_start_events) * 1000.0 /
                  (double)(now_ms - c->win_start_ms);
        c->win_start_ms = now_ms;
        c->win_start_events = applied_total;
    }
    if (!c->behind && c->backlog >= CATCHUP_BULK_BACKLOG) {
        c->behind = 1;
        c->last_log_ms = now_ms;
        matlog_printf(log, MATLOG_INFO, "materializer",
                      "applying a backlog of %lld events in batches of up to %d",
                      (long long)c->backlog, CATCHUP_BULK_BATCH);
        return;
    }
    if (c->behind && c->backlog < CATCHUP_BULK_BACKLOG / 10) {
        c->behind = 0;
        matlog_printf(log, MATLOG_INFO, "materializer", "backlog applied (%.0f events/s)",
                      c->rate);
        return;
    }
    if (c->behind && now_ms - c->last_log_ms >= CATCHUP_LOG_MS) {
        c->last_log_ms = now_ms;
        double eta = catchup_eta(c);
        if (eta >= 0)
            matlog_printf(log, MATLOG_INFO, "materializer",
                          "backlog: %lld events to apply, %.0f events/s, about %.0f s left",
                          (long long)c->backlog, c->rate, eta);
        else
            matlog_printf(log, MATLOG_INFO, "materializer", "backlog: %lld events to apply",
                          (long long)c->backlog);
    }
}

void catchup_figures_get(const catchup *c, catchup_figures *f) {
    f->backlog = c->backlog;
    f->rate = c->rate;
    f->eta_s = catchup_eta(c);
}

int catchup_batch(const catchup *c, int batch_max) {
    return c->behind && CATCHUP_BULK_BATCH > batch_max ? CATCHUP_BULK_BATCH : batch_max;
}
