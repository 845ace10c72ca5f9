/* lincheck.h: histories of one register (a key) as clients saw them, and
 * a linearizability checker (Wing & Gong in Lowe's formulation) for them:
 * test_linearizable (one view) and test_cluster (across nodes during
 * faults) record operations with their invocation and response times and
 * ask whether some order of them is a register's. A write whose outcome
 * the client never learnt has response T_UNKNOWN: it may have taken effect
 * at any point after its invocation, or never. */
#ifndef OBJLOG_TEST_LINCHECK_H
#define OBJLOG_TEST_LINCHECK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define T_UNKNOWN INT64_MAX /* response time of a write that may never end */

typedef enum lin_kind { LIN_WRITE, LIN_READ } lin_kind;

typedef struct lin_op {
    lin_kind kind;
    int64_t invoke, response; /* ns; response T_UNKNOWN: may take effect or not */
    char value[48];           /* etag written or read; "" = absent (404) */
} lin_op;

typedef struct lin_hist {
    lin_op *ops;
    size_t n, cap;
    pthread_mutex_t mu;
} lin_hist;

/* Appends one op (thread-safe: h->mu). */
void hist_add(lin_hist *h, lin_kind kind, int64_t inv, int64_t resp, const char *value);
/* 1: the history of one key is linearizable for a register that starts
 * empty; 0: it is not; -1: the search passed its memory bound. */
int lin_check(const lin_op *ops, size_t n);
/* Reads stale beyond doubt (a write completed between the read's value's
 * write and the read). */
int lin_stale_reads(const lin_op *ops, size_t n);
/* Reads whose interval overlaps some write's. */
int lin_overlapping_reads(const lin_op *ops, size_t n);

#endif
