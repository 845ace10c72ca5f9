/* matlog.h: where the materializer's and the store's lines go (matlog.c):
 * the host's callback (objlog_materializer_log_cb, materializer.h) or,
 * without one, stderr. The materializer never names the process logger,
 * which belongs to the daemon. Not public. */
#ifndef OBJLOG_MATLOG_H
#define OBJLOG_MATLOG_H

#include <stdint.h>

#include "materializer.h"

/* syslog's levels, as the callback gets them. */
#define MATLOG_ERR 3
#define MATLOG_WARNING 4
#define MATLOG_NOTICE 5
#define MATLOG_INFO 6

typedef struct matlog {
    objlog_materializer_log_cb *cb; /* NULL: stderr */
    void *opaque;
} matlog;

/* One line (log may be NULL: stderr). At most MATLOG_LINE_MAX - 1 bytes;
 * a longer one is cut and ends in "...". */
#define MATLOG_LINE_MAX 3072
void matlog_printf(const matlog *log, int level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A line that may repeat (one per consumer error while the brokers are
 * away): at most one per interval_ms; the next line written says how many
 * were dropped. The state is the caller's and used from one thread. */
typedef struct matlog_limit {
    int interval_ms;            /* 0: 10,000 */
    int64_t next_ms;            /* CLOCK_MONOTONIC; 0 = never written */
    uint64_t suppressed;
} matlog_limit;

/* 1 if the line was written, 0 if it was counted as suppressed. */
int matlog_printf_limited(const matlog *log, matlog_limit *limit, int level,
                          const char *component, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
