/* linload.h: a load that records single-key histories across cluster
 * nodes for the linearizability checker (lincheck.h): 2 writers PUT fresh
 * etags to LINLOAD_HOT hot keys of one bucket and 2 readers GET them with
 * strong consistency, each request through the next of the given nodes in
 * turn. test_cluster and test_standby run it through a SIGKILL of a node.
 *
 * Every read is counted (sent, answered 200/404), so a test can state
 * read availability during a fault as well as correctness. */
#ifndef OBJLOG_TEST_LINLOAD_H
#define OBJLOG_TEST_LINLOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lincheck.h"

#define LINLOAD_HOT 3
#define LINLOAD_MAX_NODES 8

typedef struct linload {
    char urls[LINLOAD_MAX_NODES][128];
    int nurls;
    char bucket[64];
    atomic_int stop;
    atomic_long seq;
    lin_hist h[LINLOAD_HOT];
    atomic_long done_after_kill;   /* completed writes invoked after kill_ns */
    atomic_long reads_sent, reads_answered;
    atomic_long writes_sent, writes_done;
    atomic_llong first_write_after_kill_ns; /* completion time, 0 none yet */
    int64_t kill_ns;               /* set by the test before the fault, 0 before */
    pthread_t t[4];
} linload;

int64_t linload_now_ns(void);
/* Starts the 4 threads on urls[0..n) (n <= LINLOAD_MAX_NODES). 0 or -1. */
int linload_start(linload *L, const char *const *urls, int n, const char *bucket);
/* Stops the load and checks every key's history: 1 all linearizable, 0 a
 * key is not (or its history was too big to check); msg says which, or
 * sums up the histories. */
int linload_finish(linload *L, char *msg, size_t n);

#endif
