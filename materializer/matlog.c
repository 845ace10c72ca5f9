/* matlog.c: the materializer's lines, handed to its host's callback
 * (matlog.h). Owns the formatting and the rate limit of repeated lines,
 * so a host's callback only ever gets finished lines.
 *
 * Invariant: a line is formatted here exactly as the process logger
 * formatted it when the materializer called it directly (same cut at
 * MATLOG_LINE_MAX, same "(N like it suppressed)" suffix), so a host that
 * forwards to that logger writes the same bytes as before. */
#include "matlog.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MATLOG_LIMIT_DEFAULT_MS 10000

static void matlog_emit(const matlog *log, int level, const char *component,
                        const char *line) {
    if (log && log->cb) {
        log->cb(log->opaque, level, component, line);
        return;
    }
    char buf[MATLOG_LINE_MAX + 64];
    snprintf(buf, sizeof(buf), "%s: %s\n", component, line);
    fputs(buf, stderr);
}

void matlog_printf(const matlog *log, int level, const char *component, const char *fmt, ...) {
    char line[MATLOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof(line))
        memcpy(line + sizeof(line) - 4, "...", 4);
    matlog_emit(log, level, component, line);
}

static int64_t matlog_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int matlog_printf_limited(const matlog *log, matlog_limit *limit, int level,
                          const char *component, const char *fmt, ...) {
    int64_t now = matlog_mono_ms();
    if (limit->next_ms && now < limit->next_ms) {
        limit->suppressed++;
        return 0;
    }
    limit->next_ms = now + (limit->interval_ms > 0 ? limit->interval_ms
                                                   : MATLOG_LIMIT_DEFAULT_MS);
    char line[MATLOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if (n >= (int)sizeof(line))
        n = (int)sizeof(line) - 1;
    if (limit->suppressed)
        snprintf(line + n, sizeof(line) - (size_t)n, " (%llu like it suppressed)",
                 (unsigned long long)limit->suppressed);
    limit->suppressed = 0;
    matlog_emit(log, level, component, line);
    return 1;
}
