/* matint.h: the materializer's state, shared by its parts: materializer.c
 * (the thread, its consumers, the published offsets), assign.c (which
 * partitions it applies) and brokerrtt.c (the brokers' round trips). Not
 * public: nothing outside those files reads the struct. */
#ifndef OBJLOG_MATINT_H
#define OBJLOG_MATINT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "batch.h"
#include "catchup.h"
#include "janitor.h"
#include "lanes.h"
#include "materializer.h"
#include "matlog.h"
#include "stall.h"

struct objlog_materializer {
    matlog log;           /* conf log_cb */
    matlog_limit log_consumer; /* consumer thread only */
    objlog_store *store;
    char *topic;
    char *dlq_topic;
    int batch_max;
    int batch_cap;        /* room in msgs: batch_max or a bulk batch */
    int batch_cur;        /* this gather's limit (catchup_batch) */
    int apply_delay_ms;
    int stats_view;       /* 0 only in benches (conf test_no_stats) */
    rd_kafka_t *consumer;
    rd_kafka_t *dlq;
    rangemap *rm;         /* the genesis map: what the state machine starts from */
    /* The current map, as the control topic last published it (readers
     * route by it); maps it replaced stay in old_maps until the
     * materializer goes, as a reader may still hold one. */
    _Atomic(rangemap *) cur_map;
    rangemap **old_maps;
    size_t nold_maps;
    int nparts;
    /* Cluster mode (conf cluster): the group assigns partitions to this
     * view; owned[p] is 1 while p is assigned here (always 1 otherwise).
     * Written by the materializer thread (the rebalance callback runs in
     * its polls, or while closing), read by anyone. */
    int cluster;
    int hold_new;         /* conf hold_new */
    atomic_int *owned;
    /* Standbys (conf standbys): a second consumer, assigned and never a
     * group member, applies the partitions the cluster's placement gives
     * this node besides the group's. standby[p] is 1 while p is assigned
     * to it and not to the group consumer (materializer thread writes,
     * anyone reads); standby_want is the placement's latest wish (under
     * mu; standby_dirty until the thread took it). Both consumers' queues
     * wake the thread through wake_fd, so neither waits on the other. */
    rd_kafka_t *standby_rk;
    atomic_int *standby;
    uint8_t *standby_want;
    int standby_dirty;
    int wake_fd[2];
    /* Holds (objlog_materializer_hold): partitions whose rows another
     * thread replaces (a checkpoint import). hold_want is asked under mu;
     * the thread takes it between batches, stops fetching p and sets
     * held[p] (anyone reads); a release re-reads p's applied offset from
     * the store and fetches from there. */
    uint8_t *hold_want;
    int hold_dirty;
    atomic_int *held;

    pthread_t thread;
    int started;
    atomic_int running;
    /* Idle pause (conf idle_pause_ms): paused is written by the
     * materializer thread only; kicked by anyone. */
    int idle_pause_ms;
    atomic_int paused;
    atomic_int kicked;

    /* Published state, guarded by mu; cv signals every change. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t *applied;
    char **perr;          /* stop reason per partition, NULL while running */
    int waits_cancelled;  /* cancel_waits: every wait_applied returns -1 */
    void (*progress)(void *opaque); /* set_progress_cb; runs on each broadcast */
    void *progress_opaque;
    uint64_t dlq_total;
    objlog_broker_rtt rtt[OBJLOG_MAX_BROKER_RTTS]; /* from the stats callback */
    int nrtt;
    uint64_t events_applied;
    uint64_t by_outcome[MAT_OUTCOMES]; /* events applied per outcome code */
    /* Log times (Kafka timestamps, ms; -1 unknown) per partition, for lag in
     * seconds: newest applied event, newest event taken from the log, and
     * the oldest taken but not yet applied (-1 when none is pending). */
    int64_t *applied_ts;
    int64_t *fetched_ts;
    int64_t *pending_ts;

    /* DLQ attempts: a lane numbers them under dlq_mu, the DR callback
     * (called from rd_kafka_flush on that same thread, dlq_mu held) acks
     * them. */
    pthread_mutex_t dlq_mu;
    uint64_t dlq_attempt;
    atomic_uint_fast64_t dlq_acked;

    /* Consumer-thread state; batch_next and batch_ts also written by the
     * lane owning each partition while it applies (lanes.h). */
    int64_t *next;        /* next offset to take per partition */
    int64_t *batch_next;  /* next offset after this batch, -1 untouched */
    int64_t *batch_ts;    /* log time of the batch's last event per partition */
    int64_t *wait_in;     /* the RangeIn this batch stopped at, -1 none (handoff.h) */
    int64_t wait_logged_ms; /* when a wait was last logged */
    struct rangewait *rwait; /* the RangeIns waiting for an import (rangewait.h) */
    uint64_t batch_outcomes[MAT_OUTCOMES];
    lanes *lanes;         /* the apply threads */
    catchup catchup;      /* the backlog and its rate (consumer thread) */
    int64_t catchup_at_ms; /* last backlog look */
    catchup_figures cfig; /* ... published under mu */
    rd_kafka_message_t **msgs;
    janitor *janitor;     /* compacts away tombstones of mass deletes */
    stall *stall;         /* the store's failed writes and their retries */
};

/* Wakes every waiter, blocked (cv) or not (progress); m->mu held. */
static inline void mat_broadcast(objlog_materializer *m) {
    pthread_cond_broadcast(&m->cv);
    if (m->progress)
        m->progress(m->progress_opaque);
}

/* 1 once p is stopped for good (mat_stop_partition). */
static inline int mat_partition_stopped(objlog_materializer *m, int32_t p) {
    pthread_mutex_lock(&m->mu);
    int s = m->perr[p] != NULL;
    pthread_mutex_unlock(&m->mu);
    return s;
}

/* 1 while p may be fetched: not stopped for good, not held. */
static inline int mat_runs(objlog_materializer *m, int32_t p) {
    return !atomic_load(&m->held[p]) && !mat_partition_stopped(m, p);
}

#endif
