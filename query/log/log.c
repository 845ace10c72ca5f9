/* log.c: the writer behind objlog_logger.h. Owns the process's log
 * configuration (set once in main, read-only while threads run), the
 * access log's descriptor and the sink's slot (swapped under its lock
 * while threads run). Invariant: each line, text or JSON, leaves in a
 * single write(2) of at most LOG_LINE_MAX bytes (longer messages are cut
 * and end in "..."), so concurrent writers never interleave; a line the
 * sink gets is one the level let through, with its time and message. */
#define _GNU_SOURCE
#include "objlog_logger.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kafkaconf.h"

#define LOG_LINE_MAX 4096
#define LOG_MSG_MAX 3072
#define LOG_LIMIT_DEFAULT_MS 10000

typedef struct log_conf {
    int json;
    int level;
    int access_fd;              /* -1: no access log */
    int access_owned;           /* opened here: closed by objlog_logger_close */
} log_conf;

static log_conf log_cfg = {.json = 0, .level = OBJLOG_LEVEL_INFO, .access_fd = -1};

/* The node's name is set once, but may be set after the first threads
 * started (a cluster node's default name has the port it bound): the
 * flag publishes the bytes written before it. */
static char log_node[OBJLOG_NODE_NAME_MAX + 1];
static atomic_int log_node_set;

int objlog_logger_set_node(const char *name, char *errstr, size_t errstr_size) {
    size_t n = strlen(name);
    if (n == 0 || n > OBJLOG_NODE_NAME_MAX) {
        snprintf(errstr, errstr_size, "a node name has 1 to %d characters (this has %zu)",
                 OBJLOG_NODE_NAME_MAX, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (!isalnum(ch) && !strchr("._:-@", ch)) {
            snprintf(errstr, errstr_size, "a node name is letters, digits and . _ : - @ "
                     "(character %zu is not)", i + 1);
            return -1;
        }
    }
    if (atomic_load_explicit(&log_node_set, memory_order_acquire)) {
        snprintf(errstr, errstr_size, "the node's name is set already (%s)", log_node);
        return -1;
    }
    memcpy(log_node, name, n + 1);
    atomic_store_explicit(&log_node_set, 1, memory_order_release);
    return 0;
}

const char *objlog_logger_node(void) {
    return atomic_load_explicit(&log_node_set, memory_order_acquire) ? log_node : NULL;
}

/* The sink may come and go while threads log (a query service sets it
 * and clears it): a line's call holds the read lock, so a clearing swap
 * waits until no thread is inside the sink it removes. */
static pthread_rwlock_t log_sink_lock = PTHREAD_RWLOCK_INITIALIZER;
static objlog_logger_sink_fn *log_sink;
static void *log_sink_arg;

int objlog_logger_set_sink(objlog_logger_sink_fn *fn, void *arg) {
    int rc = 0;
    pthread_rwlock_wrlock(&log_sink_lock);
    if (fn && log_sink) {
        rc = -1;
    } else {
        log_sink = fn;
        log_sink_arg = fn ? arg : NULL;
    }
    pthread_rwlock_unlock(&log_sink_lock);
    return rc;
}

static void log_sink_call(int64_t ms, int level, const char *component, const char *msg) {
    pthread_rwlock_rdlock(&log_sink_lock);
    if (log_sink)
        log_sink(log_sink_arg, ms, level, component, msg);
    pthread_rwlock_unlock(&log_sink_lock);
}

int objlog_logger_set_format(const char *name) {
    if (strcmp(name, "text") == 0)
        log_cfg.json = 0;
    else if (strcmp(name, "json") == 0)
        log_cfg.json = 1;
    else
        return -1;
    return 0;
}

void objlog_logger_set_level(int level) { log_cfg.level = level; }

int objlog_logger_open_access(const char *path, char *errstr, size_t errstr_size) {
    if (strcmp(path, "-") == 0) {
        log_cfg.access_fd = STDERR_FILENO;
        return 0;
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(errstr, errstr_size, "access log %s: %s", path, strerror(errno));
        return -1;
    }
    log_cfg.access_fd = fd;
    log_cfg.access_owned = 1;
    return 0;
}

int objlog_logger_access_enabled(void) { return log_cfg.access_fd >= 0; }

void objlog_logger_close(void) {
    if (log_cfg.access_owned)
        close(log_cfg.access_fd);
    log_cfg.access_fd = -1;
    log_cfg.access_owned = 0;
}

/* Days since 1970-01-01 to a proleptic Gregorian date (the civil-from-
 * days algorithm of Howard Hinnant's "chrono-compatible low-level date
 * algorithms"): no table, no locale, exact for every int64 day that has
 * a 4-digit year. */
static void log_civil(int64_t days, int64_t *y, unsigned *m, unsigned *d) {
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static char *log_digits(char *p, unsigned v, int n) {
    for (int i = n - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
    return p + n;
}

/* A listing formats one time per entry: by hand, not strftime and
 * snprintf (2,200 of 17,700 instructions an entry of a LIST cost). */
void objlog_logger_format_time(int64_t ms, char *out, size_t out_size) {
    int64_t s = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    unsigned msec = (unsigned)(ms - s * 1000);
    int64_t days = s >= 0 ? s / 86400 : (s - 86399) / 86400;
    unsigned sod = (unsigned)(s - days * 86400);
    int64_t y;
    unsigned mo, d;
    log_civil(days, &y, &mo, &d);
    if (out_size < 25 || y < 0 || y > 9999) { /* never for a log's times */
        if (out_size)
            snprintf(out, out_size, "%lld", (long long)ms);
        return;
    }
    char *p = log_digits(out, (unsigned)y, 4);
    *p++ = '-';
    p = log_digits(p, mo, 2);
    *p++ = '-';
    p = log_digits(p, d, 2);
    *p++ = 'T';
    p = log_digits(p, sod / 3600, 2);
    *p++ = ':';
    p = log_digits(p, sod / 60 % 60, 2);
    *p++ = ':';
    p = log_digits(p, sod % 60, 2);
    *p++ = '.';
    p = log_digits(p, msec, 3);
    *p++ = 'Z';
    *p = '\0';
}

static int64_t log_now_ms(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *log_level_name(int level) {
    switch (level) {
    case 0: case 1: case 2: return "CRIT";
    case OBJLOG_LEVEL_ERR: return "ERROR";
    case OBJLOG_LEVEL_WARNING: return "WARN";
    case OBJLOG_LEVEL_NOTICE: return "NOTICE";
    case OBJLOG_LEVEL_INFO: return "INFO";
    default: return "DEBUG";
    }
}

/* A partial write(2) of a short line to a pipe or file only happens on a
 * full disk or a closed reader: nothing better to do than drop the rest. */
static void log_write(int fd, const char *line, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, line, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        line += w;
        n -= (size_t)w;
    }
}

/* Keeps buf a line: cut at LOG_LINE_MAX - 1, newline-terminated. */
static size_t log_finish(char *buf, int n) {
    if (n < 0)
        n = 0;
    if (n >= LOG_LINE_MAX - 1) {
        memcpy(buf + LOG_LINE_MAX - 5, "...", 3);
        n = LOG_LINE_MAX - 2;
    }
    buf[n++] = '\n';
    return (size_t)n;
}

/* obj is consumed. Reals (the access log's seconds) with 6 significant
 * digits: a double's 17 show noise (0.00067181200000000004). */
static void log_emit_json(int fd, json_t *obj) {
    char buf[LOG_LINE_MAX];
    size_t n = obj ? json_dumpb(obj, buf, sizeof(buf) - 1,
                                JSON_COMPACT | JSON_REAL_PRECISION(6))
                   : 0;
    json_decref(obj);
    if (n == 0 || n >= sizeof(buf) - 1)
        return; /* out of memory, or a message past the cut: never half a JSON line */
    buf[n++] = '\n';
    log_write(fd, buf, n);
}

static void log_emit_line(int64_t ms, int level, const char *component, const char *msg) {
    const char *node = objlog_logger_node();
    char ts[32];
    objlog_logger_format_time(ms, ts, sizeof(ts));
    if (log_cfg.json) {
        char lower[8];
        const char *name = log_level_name(level);
        size_t i = 0;
        for (; name[i] && i < sizeof(lower) - 1; i++)
            lower[i] = (char)(name[i] | 0x20);
        lower[i] = '\0';
        log_emit_json(STDERR_FILENO, json_pack("{s:s, s:s?, s:s, s:s, s:s?}", "ts", ts,
                                               "node", node, "level", lower, "component",
                                               component, "msg", msg));
        return;
    }
    char buf[LOG_LINE_MAX];
    int n = snprintf(buf, sizeof(buf), "%s %s%s%s%s %s: %s", ts, node ? "[" : "",
                     node ? node : "", node ? "] " : "", log_level_name(level), component,
                     msg);
    log_write(STDERR_FILENO, buf, log_finish(buf, n));
}

static void log_emit(int level, const char *component, const char *msg) {
    int64_t ms = log_now_ms(CLOCK_REALTIME);
    log_emit_line(ms, level, component, msg);
    if (level <= OBJLOG_LEVEL_WARNING)
        log_sink_call(ms, level, component, msg);
}

static void log_vemit(int level, const char *component, const char *fmt, va_list ap) {
    char msg[LOG_MSG_MAX];
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    if (n >= (int)sizeof(msg))
        memcpy(msg + sizeof(msg) - 4, "...", 4);
    log_emit(level, component, msg);
}

void objlog_logf(int level, const char *component, const char *fmt, ...) {
    if (level > log_cfg.level)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vemit(level, component, fmt, ap);
    va_end(ap);
}

int objlog_logf_limited(objlog_logger_limit *limit, int level, const char *component,
                       const char *fmt, ...) {
    if (level > log_cfg.level)
        return 0;
    int64_t now = log_now_ms(CLOCK_MONOTONIC);
    if (limit->next_ms && now < limit->next_ms) {
        limit->suppressed++;
        return 0;
    }
    limit->next_ms = now + (limit->interval_ms > 0 ? limit->interval_ms
                                                   : LOG_LIMIT_DEFAULT_MS);
    char msg[LOG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if (n >= (int)sizeof(msg))
        n = (int)sizeof(msg) - 1;
    if (limit->suppressed)
        snprintf(msg + n, sizeof(msg) - (size_t)n, " (%llu like it suppressed)",
                 (unsigned long long)limit->suppressed);
    limit->suppressed = 0;
    log_emit(level, component, msg);
    return 1;
}

void objlog_logger_access(const objlog_access_entry *a) {
    if (log_cfg.access_fd < 0)
        return;
    const char *node = objlog_logger_node();
    char ts[32];
    objlog_logger_format_time(log_now_ms(CLOCK_REALTIME), ts, sizeof(ts));
    if (log_cfg.json) {
        log_emit_json(log_cfg.access_fd,
                      json_pack("{s:s, s:s?, s:s, s:s, s:s?, s:s, s:s, s:i, s:I, s:f, s:s}",
                                "ts", ts, "node", node, "level", "info", "component",
                                "access", "peer",
                                a->peer, "method", a->method, "path", a->path, "status",
                                a->status, "bytes", (json_int_t)a->bytes, "seconds",
                                a->seconds, "request_id", a->request_id));
        return;
    }
    char buf[LOG_LINE_MAX];
    int n = snprintf(buf, sizeof(buf), "%s %s%s%sINFO access: %s \"%s %s\" %d %zu %.6f %s",
                     ts, node ? "[" : "", node ? node : "", node ? "] " : "",
                     a->peer ? a->peer : "-", a->method, a->path, a->status, a->bytes,
                     a->seconds, a->request_id);
    log_write(log_cfg.access_fd, buf, log_finish(buf, n));
}

/* librdkafka repeats some lines in a loop: its mock broker (the embedded
 * log) logs each accept() that fails and polls again at once, thousands
 * of lines a second while the process is out of descriptors. A thread's
 * line equal to its previous one within LOG_LIMIT_DEFAULT_MS is counted,
 * not written; the count is told when that line next passes, or before
 * the thread's next other line. Per thread, as librdkafka's threads log
 * concurrently: the flood is one thread's. Lines are told apart by their
 * length and first 511 bytes. */
typedef struct log_repeat {
    char line[512];             /* the previous line's start */
    size_t len;                 /* its whole length */
    int level;
    int64_t until_ms;
    uint64_t suppressed;
} log_repeat;

static __thread log_repeat log_rdkafka_repeat;

void objlog_logger_rdkafka(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    log_repeat *r = &log_rdkafka_repeat;
    char line[LOG_MSG_MAX];
    int n = snprintf(line, sizeof(line), "%s: %s: %s", rk ? rd_kafka_name(rk) : "-", fac, buf);
    size_t len = n < 0 ? 0 : (size_t)n;
    int lvl = objlog_kafka_log_level(level, buf);
    if (lvl > log_cfg.level)
        return;
    int64_t now = log_now_ms(CLOCK_MONOTONIC);
    int same = len == r->len && strncmp(line, r->line, sizeof(r->line) - 1) == 0;
    if (same && now < r->until_ms) {
        r->suppressed++;
        return;
    }
    if (!same && r->suppressed)
        objlog_logf(r->level, "kafka", "%s (%llu like it suppressed)", r->line,
                    (unsigned long long)r->suppressed);
    if (same && r->suppressed)
        objlog_logf(lvl, "kafka", "%s (%llu like it suppressed)", line,
                    (unsigned long long)r->suppressed);
    else
        objlog_logf(lvl, "kafka", "%s", line);
    size_t keep = len < sizeof(r->line) - 1 ? len : sizeof(r->line) - 1;
    memcpy(r->line, line, keep);
    r->line[keep] = '\0';
    r->len = len;
    r->level = lvl;
    r->until_ms = now + LOG_LIMIT_DEFAULT_MS;
    r->suppressed = 0;
}

/* ---------------------------------------------------------------- streams */

typedef struct log_stream {
    int level;
    char component[32];
    char line[LOG_MSG_MAX];
    size_t len;
} log_stream;

static void log_stream_flush_line(log_stream *ls) {
    if (ls->len == 0)
        return;
    ls->line[ls->len] = '\0';
    objlog_logf(ls->level, ls->component, "%s", ls->line);
    ls->len = 0;
}

static ssize_t log_stream_write(void *cookie, const char *buf, size_t n) {
    log_stream *ls = cookie;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n' || ls->len == sizeof(ls->line) - 1)
            log_stream_flush_line(ls);
        if (buf[i] != '\n')
            ls->line[ls->len++] = buf[i];
    }
    return (ssize_t)n;
}

static int log_stream_close(void *cookie) {
    log_stream_flush_line(cookie);
    free(cookie);
    return 0;
}

FILE *objlog_logger_stream(int level, const char *component) {
    log_stream *ls = calloc(1, sizeof(*ls));
    if (!ls)
        return NULL;
    ls->level = level;
    snprintf(ls->component, sizeof(ls->component), "%s", component);
    cookie_io_functions_t io = {.write = log_stream_write, .close = log_stream_close};
    FILE *f = fopencookie(ls, "w", io);
    if (!f) {
        free(ls);
        return NULL;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    return f;
}
