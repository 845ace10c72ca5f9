/* lanes.h: the apply threads of one materializer (lanes.c). Lane i owns
 * the partitions p with p % lanes_count() == i, active and standby alike:
 * one partition is never applied by two threads, and a partition stays on
 * its lane for the materializer's life. Each lane keeps its own batch,
 * so nothing of the state machine is shared between lanes but the store
 * (RocksDB is thread-safe) and the range map (read-only while applying).
 * Not public. */
#ifndef OBJLOG_LANES_H
#define OBJLOG_LANES_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "batch.h"

/* Outcome codes counted per outcome (Objlog__OutcomeCode is 0..12 today;
 * room for more without a layout change). */
#define MAT_OUTCOMES 32

/* One lane's share of a consumed batch and what applying it gave. */
typedef struct mat_lane {
    int index;
    apply_batch *batch;          /* owned */
    rd_kafka_message_t **msgs;   /* borrowed from the consumer's batch, in
                                    log order per partition */
    int n, cap;
    uint64_t outcomes[MAT_OUTCOMES];
    int dlq_n;
    int rc;                      /* 0, or -1: the lane's batch was abandoned */
    int store_failed;            /* -1 came from the store's write */
    char errstr[512];
} mat_lane;

/* What a lane does with its share; called on the lane's thread. */
typedef void lanes_fn(void *arg, mat_lane *l);

typedef struct lanes lanes;

/* n lanes (n >= 1), each with a batch over store and rm and room for
 * batch_max messages; threads for lanes 1..n-1 (lane 0 runs on the
 * caller's thread). NULL on failure. */
lanes *lanes_new(int n, int batch_max, objlog_store *store, const rangemap *rm, lanes_fn *fn,
                 void *arg);
void lanes_destroy(lanes *ls);
int lanes_count(const lanes *ls);
mat_lane *lanes_get(lanes *ls, int i);
/* Empties every lane's share and results (not its batch). */
void lanes_reset(lanes *ls);
/* Runs fn on every lane with messages, in parallel, and returns when all
 * are done. */
void lanes_run(lanes *ls);
/* The lanes a host with ncpu online cores and nparts partitions uses when
 * asked for `want` (0: one per core), 1..OBJLOG_APPLY_THREADS_MAX. */
int lanes_pick(int want, long ncpu, int nparts);

#endif
