/* viewproc.h: an `objlogd --brokers` view as a child process of a fault test
 * (test_faults, test_soak): start it on a fixed or
 * a kernel-chosen port (a restart after SIGKILL keeps the port, so clients
 * keep their URL), SIGKILL or stop it, wait until it has applied a
 * partition's log end, and check it against a view rebuilt from the topic
 * into an empty directory (storedump.h). A view's stderr goes to a log file
 * next to its data, so fifty restarts do not flood the test's output; the
 * test prints the path when something fails. */
#ifndef OBJLOG_TEST_VIEWPROC_H
#define OBJLOG_TEST_VIEWPROC_H

#include <stddef.h>
#include <stdint.h>

#include "materializer.h"
#include "proc.h"
#include "testlog.h"

typedef struct viewproc {
    proc *p;             /* NULL while not running */
    char objlogd[512];
    char boot[1024];
    char data[300];
    char log[320];       /* stderr of every start, appended */
    int port;            /* 0 until the first start chose one */
    char url[128];       /* http://127.0.0.1:port */
    int starts;
} viewproc;

/* A port in 12000..19999 (below Linux's ephemeral range, so no client
 * socket takes it between restarts) that nothing listens on now; 0 if
 * none was found. */
int viewproc_free_port(void);
/* Fills v (not started). port 0: the first start lets the kernel choose. */
void viewproc_init(viewproc *v, const char *boot, const char *data, int port);
/* Starts objlogd and waits for OBJLOG_READY. 0, or -1 with why. */
int viewproc_start(viewproc *v, int timeout_ms, char *why, size_t why_size);
/* SIGKILL and reap. */
void viewproc_kill(viewproc *v);
/* SIGTERM; 0 when it exited 0 within timeout_ms. */
int viewproc_stop(viewproc *v, int timeout_ms);

/* Log end (high watermark) of every partition of objlog.events. 0 or -1. */
int viewproc_log_end(const char *boot, int partitions, int64_t *hi, char *why,
                     size_t why_size);
/* Waits until the view at url has applied every partition up to hi[p]
 * (GET /v1/writes/p.(hi-1) answers 200). 0, or -1 with why. */
int viewproc_wait_applied(const char *url, int partitions, const int64_t *hi,
                          int timeout_ms, char *why, size_t why_size);

/* How long until a strong read (the default: a read-index fence on the
 * partition's end offset) of every bucket in buckets[0..n) answers 200 at
 * the view at url: ms, or -1 after timeout_ms (last = the last answer). */
long viewproc_strong_reads_ok(const char *url, const char *const *buckets, int n,
                              int timeout_ms, char *last, size_t last_size);

/* The replay check: starts a second view on the empty directory
 * rebuild_data, waits until both views applied the log end, stops both
 * (clean exits), checks each store's applied offsets equal the log end
 * and compares the two stores byte for byte. live is stopped afterwards
 * either way. rows[] = rows per CF. 0, or -1 with why. */
int viewproc_rebuild_equal(viewproc *live, const char *rebuild_data, int partitions,
                           size_t rows[OBJLOG_CF_COUNT], int64_t *events, char *why,
                           size_t why_size);

/* The frame the fault tests share (test_faults, test_soak, test_logdown):
 * a temporary root holding data1 (root/view1) and data2 (root/<second>),
 * and the log. */
typedef struct viewtest_frame {
    char root[256], data1[300], data2[300];
    testlog *log;
    long long t0;                /* viewtest_ms() at start */
    int failed;                  /* set by the test until it passes */
} viewtest_frame;
/* CLOCK_MONOTONIC in ms. */
long long viewtest_ms(void);
/* Makes the root and starts the log (testlog_start). 0, or -1 with why. */
int viewtest_frame_start(viewtest_frame *f, int partitions, const char *second,
                         char *why, size_t why_size);
/* Stops the log (its nodes are SIGKILLed: it is thrown away) and removes
 * the root, unless the test failed and OBJLOG_TEST_KEEP is set (then says
 * so, naming the test). */
void viewtest_frame_stop(viewtest_frame *f, const char *test);

#endif
