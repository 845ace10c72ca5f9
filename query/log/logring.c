/* logring.c: the ring behind logring.h. Owns its lines and its counts,
 * behind its own mutex. It runs as the logger's sink, on whatever thread
 * logs and under the logger's lock, so it never logs and never blocks on
 * anything but that mutex.
 *
 * Invariant: the line of seq s sits at lines[(s - 1) % capacity], and the
 * ring holds exactly the seqs from max(1, next_seq - capacity) to
 * next_seq - 1, each once; counts[] sum to next_seq - 1. */
#include "logring.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "objlog_logger.h"

struct logring {
    pthread_mutex_t lock;
    size_t capacity;
    uint64_t next_seq;           /* the seq the next line gets; 1 in a new ring */
    uint64_t counts[LOGRING_LEVELS];
    logring_line *lines;         /* capacity of them */
};

logring *logring_new(size_t capacity) {
    if (capacity == 0)
        return NULL;
    logring *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->lines = calloc(capacity, sizeof(*r->lines));
    if (!r->lines) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    r->capacity = capacity;
    r->next_seq = 1;
    return r;
}

void logring_destroy(logring *r) {
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r->lines);
    free(r);
}

size_t logring_capacity(const logring *r) { return r->capacity; }

const char *logring_level_name(logring_level level) {
    switch (level) {
    case LOGRING_WARN: return "warn";
    case LOGRING_ERROR: return "error";
    default: return NULL;
    }
}

/* The length of the UTF-8 character at s (n bytes left), or 0 when s does
 * not start one: RFC 3629's table (no overlong forms, no surrogates,
 * nothing past U+10FFFF), what jansson takes as a JSON string. */
static size_t logring_utf8_len(const unsigned char *s, size_t n) {
    if (s[0] < 0x80)
        return 1;
    size_t k;
    unsigned lo = 0x80, hi = 0xBF;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        k = 2;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        k = 3;
        lo = s[0] == 0xE0 ? 0xA0 : lo;
        hi = s[0] == 0xED ? 0x9F : hi;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        k = 4;
        lo = s[0] == 0xF0 ? 0x90 : lo;
        hi = s[0] == 0xF4 ? 0x8F : hi;
    } else {
        return 0;
    }
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t j = 2; j < k; j++)
        if (s[j] < 0x80 || s[j] > 0xBF)
            return 0;
    return k;
}

/* src into dst (room for max bytes and a NUL) as valid UTF-8, so that
 * every line can be served as a JSON string: a byte that starts no
 * character becomes '?' (the same length), and a src longer than max is
 * cut at a character's boundary and ends in "...". */
static void logring_copy_text(char *dst, size_t max, const char *src) {
    const unsigned char *s = (const unsigned char *)src;
    size_t len = strlen(src), budget = len <= max ? max : max - 3, i = 0, n = 0;
    while (i < len) {
        size_t k = logring_utf8_len(s + i, len - i);
        size_t take = k ? k : 1;
        if (n + take > budget)
            break;
        if (k)
            memcpy(dst + n, s + i, k);
        else
            dst[n] = '?';
        n += take;
        i += take;
    }
    if (len > max) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
}

static logring_line *logring_at(logring *r, uint64_t seq) {
    return &r->lines[(seq - 1) % r->capacity];
}

static uint64_t logring_oldest(const logring *r) {
    return r->next_seq > r->capacity ? r->next_seq - r->capacity : 1;
}

void logring_add(void *ring, int64_t ms, int level, const char *component, const char *msg) {
    if (level > OBJLOG_LEVEL_WARNING)
        return;
    logring *r = ring;
    pthread_mutex_lock(&r->lock);
    logring_line *l = logring_at(r, r->next_seq);
    l->seq = r->next_seq++;
    l->ms = ms;
    l->level = level == OBJLOG_LEVEL_WARNING ? LOGRING_WARN : LOGRING_ERROR;
    logring_copy_text(l->component, LOGRING_COMPONENT_MAX, component ? component : "-");
    logring_copy_text(l->msg, LOGRING_MSG_MAX, msg ? msg : "");
    r->counts[l->level]++;
    pthread_mutex_unlock(&r->lock);
}

/* The seq the newest `limit` lines of at least `level` start at (next_seq
 * when there are none). */
static uint64_t logring_tail_start(logring *r, logring_level level, size_t limit) {
    uint64_t start = r->next_seq, oldest = logring_oldest(r);
    size_t found = 0;
    for (uint64_t s = r->next_seq - 1; s >= oldest && found < limit; s--)
        if (logring_at(r, s)->level >= level) {
            start = s;
            found++;
        }
    return start;
}

void logring_read(logring *r, const logring_want *want, logring_line *out, logring_page *pg) {
    pthread_mutex_lock(&r->lock);
    uint64_t newest = r->next_seq - 1, oldest = logring_oldest(r), from;
    if (!want->paged)
        from = logring_tail_start(r, want->level, want->limit);
    else if (want->after >= newest)
        from = newest + 1;
    else /* past lines the ring no longer holds: the seqs show the gap */
        from = want->after >= oldest ? want->after + 1 : oldest;
    pg->n = 0;
    pg->next_after = newest;
    for (uint64_t s = from; s <= newest && pg->n < want->limit; s++) {
        const logring_line *l = logring_at(r, s);
        if (l->level < want->level)
            continue;
        out[pg->n++] = *l;
        if (want->paged && pg->n == want->limit)
            pg->next_after = s; /* what follows is the next page's */
    }
    memcpy(pg->counts, r->counts, sizeof(pg->counts));
    pthread_mutex_unlock(&r->lock);
}

void logring_counts(logring *r, uint64_t counts[LOGRING_LEVELS]) {
    pthread_mutex_lock(&r->lock);
    memcpy(counts, r->counts, sizeof(r->counts));
    pthread_mutex_unlock(&r->lock);
}
