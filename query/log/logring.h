/* logring.h: a node's recent warnings and errors, kept in memory for
 * GET /v1/log, the status page and /metrics. A query service owns one
 * (service.c) and makes it the logger's sink (objlog_logger_set_sink)
 * for as long as it lives: the ring is the service's, not the process's.
 *
 * Each line it takes gets the next seq: 1, 2, 3, ... (they begin again
 * with each ring, so with each process). It keeps the last `capacity`
 * lines; an older line is gone, but stays counted by its level. */
#ifndef OBJLOG_LOGRING_H
#define OBJLOG_LOGRING_H

#include <stddef.h>
#include <stdint.h>

#define LOGRING_CAPACITY 200     /* a query service's ring */
#define LOGRING_MSG_MAX 512      /* message bytes kept: a longer one is cut, ending in "..." */
#define LOGRING_COMPONENT_MAX 31

/* Two severities: a line below OBJLOG_LEVEL_ERR (CRIT) is an error too. */
typedef enum logring_level { LOGRING_WARN = 0, LOGRING_ERROR = 1, LOGRING_LEVELS } logring_level;

typedef struct logring_line {
    uint64_t seq;
    int64_t ms;                  /* CLOCK_REALTIME: the logged line's own timestamp */
    logring_level level;
    char component[LOGRING_COMPONENT_MAX + 1];
    char msg[LOGRING_MSG_MAX + 1]; /* valid UTF-8: a byte that is not becomes '?' */
} logring_line;

typedef struct logring logring;

/* NULL when out of memory (or capacity is 0). */
logring *logring_new(size_t capacity);
/* Never while it is the logger's sink. NULL is fine. */
void logring_destroy(logring *r);
size_t logring_capacity(const logring *r);

/* An objlog_logger_sink_fn; ring is a logring. A line less severe than
 * OBJLOG_LEVEL_WARNING is not taken. Never logs. */
void logring_add(void *ring, int64_t ms, int level, const char *component, const char *msg);

/* What a read asks for. */
typedef struct logring_want {
    logring_level level;         /* LOGRING_WARN: warnings and errors; LOGRING_ERROR: errors */
    int paged;                   /* 1: the first lines past after; 0: the newest lines */
    uint64_t after;              /* a seq (paged) */
    size_t limit;                /* 1..capacity */
} logring_want;

typedef struct logring_page {
    size_t n;                    /* lines copied, oldest first */
    /* Every line up to this seq was looked at: the next page is the lines
     * after it. Below the after asked when the ring holds no line that
     * far on (a new process: its seqs began again). */
    uint64_t next_after;
    uint64_t counts[LOGRING_LEVELS]; /* lines taken since the ring was made */
} logring_page;

/* The lines of want (at most want->limit, into out) and the counts, all
 * from one moment of the ring. */
void logring_read(logring *r, const logring_want *want, logring_line *out, logring_page *pg);
/* The counts alone (/metrics). */
void logring_counts(logring *r, uint64_t counts[LOGRING_LEVELS]);
/* The level's name on the wire ("warn", "error"); NULL for another. */
const char *logring_level_name(logring_level level);

#endif
