/* rangesthread.c: the ranges thread of a node: once a second it takes a
 * newer range map the control topic got (a handoff another node ran) for
 * this node's readers and writers, finishes what a handoff left in the
 * log (coordinator.c, ranges_finish) and ticks the automatic splits
 * (autosplit.c); five times a second it relays bucket settings to the
 * partitions holding ranges inside their buckets (relay.c). Started once the service is built,
 * before the server takes requests, after what a crash left was held or
 * published (ranges_finish_prepare); stopped before the service goes.
 *
 * Invariant: the thread never runs a handoff while another runs here: both
 * of its calls go through the coordinator's run lock. */
#include "core.h"
#include "ranges.h"

#include <stdatomic.h>
#include <time.h>

#include "control.h"
#include "objlog_logger.h"
#include "producer_event.h"
#include "rangemap.h"

/* A newer map on the control topic: this node's readers and writers take
 * it (each its own copy). */
static void watch_tick(objlog_query *q) {
    rangemap *rm = q->ranges->watch ? control_watch_poll(q->ranges->watch) : NULL;
    if (!rm || rangemap_epoch(rm) <= rangemap_epoch(objlog_materializer_rangemap(q->m))) {
        rangemap_destroy(rm);
        return;
    }
    objlog_logf(OBJLOG_LEVEL_INFO, "ranges", "range map epoch %u from the control topic",
                rangemap_epoch(rm));
    producer_set_rangemap(q->producer, rangemap_copy(rm));
    objlog_materializer_set_rangemap(q->m, rm);
}

static void *finisher_main(void *arg) {
    objlog_query *q = arg;
    while (!atomic_load(&q->ranges->finisher_stop)) {
        for (int i = 0; i < 10 && !atomic_load(&q->ranges->finisher_stop); i++) {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
            if (i % 2 == 1)
                ranges_relay_tick(q);
        }
        if (atomic_load(&q->ranges->finisher_stop))
            break;
        watch_tick(q);
        ranges_finish(q);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        ranges_autosplit_tick(q, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
    }
    return NULL;
}

int ranges_finisher_start(objlog_query *q) {
    char err[256];
    q->ranges->watch = control_watch_new(q->brokers, q->control_topic, objlog_logger_rdkafka,
                                         err, sizeof(err));
    if (!q->ranges->watch)
        objlog_logf(OBJLOG_LEVEL_WARNING, "ranges", "no watch on the control topic (%s): this node takes a "
                                 "newer range map only when a write meets WrongRange",
                    err);
    ranges_finish_prepare(q);
    if (pthread_create(&q->ranges->finisher, NULL, finisher_main, q) != 0) {
        control_watch_free(q->ranges->watch);
        q->ranges->watch = NULL;
        return -1;
    }
    q->ranges->finisher_on = 1;
    return 0;
}

void ranges_finisher_stop(objlog_query *q) {
    if (!q->ranges || !q->ranges->finisher_on)
        return;
    atomic_store(&q->ranges->finisher_stop, 1);
    pthread_join(q->ranges->finisher, NULL);
    q->ranges->finisher_on = 0;
    control_watch_free(q->ranges->watch);
    q->ranges->watch = NULL;
}
