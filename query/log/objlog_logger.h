/* objlog_logger.h: the logger of objlogd and its components.
 *
 * Every line carries a UTC timestamp (ISO 8601, milliseconds), a level and
 * the component that wrote it, as text or as one JSON object per line:
 *
 *   2026-11-23T20:09:14.123Z WARN http: out of file descriptors ...
 *   {"ts":"2026-11-23T20:09:14.123Z","level":"warn","component":"http","msg":"..."}
 *
 * A node that has a name (objlogd --node-name; a cluster node's default
 * is its advertised host:port) puts it on every line, so that the lines
 * of several nodes on one terminal or in one collector say whose they are:
 *
 *   2026-11-23T20:09:14.123Z [node-2] WARN cluster: ...
 *   {"ts":"...","node":"node-2","level":"warn",...}
 *
 * The configuration (format, level, access log) is process config: set in
 * main before any thread starts, read-only afterwards; the sink (below) is
 * the exception, swapped under a lock while others log. A line is written
 * with one write(2), so lines from different threads never interleave.
 * Levels are syslog's (as librdkafka's log callback gets them). */
#ifndef OBJLOG_LOGGER_H
#define OBJLOG_LOGGER_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#define OBJLOG_LEVEL_ERR 3
#define OBJLOG_LEVEL_WARNING 4
#define OBJLOG_LEVEL_NOTICE 5
#define OBJLOG_LEVEL_INFO 6
#define OBJLOG_LEVEL_DEBUG 7

/* "text" (the default) or "json"; -1 for any other name. */
int objlog_logger_set_format(const char *name);
/* Lines above this level (less severe) are dropped; default INFO. */
void objlog_logger_set_level(int level);
/* The node's name on every line from now on: 1..OBJLOG_NODE_NAME_MAX
 * letters, digits and . _ : - @; set once (safe while other threads log).
 * 0, or -1 with errstr (a bad name, or set already). */
#define OBJLOG_NODE_NAME_MAX 64
int objlog_logger_set_node(const char *name, char *errstr, size_t errstr_size);
/* The name set, or NULL. */
const char *objlog_logger_node(void);
/* The access log: one line per answered request, in the same format.
 * "-" is stderr, anything else a file opened for appending. 0 or -1 with
 * errstr. objlog_logger_close closes it. */
int objlog_logger_open_access(const char *path, char *errstr, size_t errstr_size);
int objlog_logger_access_enabled(void);
void objlog_logger_close(void);

/* Who else gets the lines at OBJLOG_LEVEL_WARNING or more severe, once
 * each as it is written (not those the level drops, nor those a limit
 * suppresses): its CLOCK_REALTIME ms (the line's timestamp), level,
 * component and message (already cut as the line is). It runs on the
 * thread that logs, under the logger's read lock: it must be quick and
 * must not log. */
typedef void objlog_logger_sink_fn(void *arg, int64_t ms, int level, const char *component,
                                   const char *msg);
/* The one sink, or none (fn NULL): 0, or -1 when fn would replace another
 * sink (clear it first). Safe while other threads log; once a clearing
 * call returns, no thread is inside the old sink, so arg may be freed. */
int objlog_logger_set_sink(objlog_logger_sink_fn *fn, void *arg);

void objlog_logf(int level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A line that may repeat (one per failed accept, per bad peer): at most
 * one per interval_ms; the next line written says how many were dropped.
 * The state is the caller's and used from one thread at a time. */
typedef struct objlog_logger_limit {
    int interval_ms;            /* 0: 10,000 */
    int64_t next_ms;            /* CLOCK_MONOTONIC; 0 = never written */
    uint64_t suppressed;
} objlog_logger_limit;

/* 1 if the line was written, 0 if it was counted as suppressed. */
int objlog_logf_limited(objlog_logger_limit *limit, int level, const char *component,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* One answered request, for the access log. */
typedef struct objlog_access_entry {
    const char *method;
    const char *path;           /* the URI as sent, query string included */
    int status;
    size_t bytes;               /* body bytes of the answer */
    double seconds;             /* from dispatch to the answer handed to the socket */
    const char *request_id;
    const char *peer;           /* "address:port" */
} objlog_access_entry;

void objlog_logger_access(const objlog_access_entry *a);

/* A librdkafka log callback (rd_kafka_conf_set_log_cb) that writes through
 * this logger as component "kafka", naming the handle and facility. */
void objlog_logger_rdkafka(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

/* A stream whose lines are logged at level (for code that reports to a
 * FILE, such as topic creation); fclose it. NULL when out of memory. */
FILE *objlog_logger_stream(int level, const char *component);

/* "2026-11-23T20:09:14.123Z" for a CLOCK_REALTIME time in ms; out needs 25. */
void objlog_logger_format_time(int64_t ms, char *out, size_t out_size);

#endif
