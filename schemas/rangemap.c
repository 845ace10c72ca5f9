/* rangemap.c: sorted range list with binary search, and the map
 * operations a handoff makes (a split, a move, a merge), each a new map at
 * the next epoch. Invariant: entries are strictly increasing by start and
 * entries[0].start is empty; decode and every operation keep both, so a
 * corrupt control message or a bad request cannot produce an ambiguous
 * owner. */
#include "rangemap.h"

#include "objlog.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct range_entry {
    uint8_t *start;              /* malloc'd; NULL when empty */
    size_t start_len;
    int partition;
} range_entry;

struct rangemap {
    uint32_t epoch;
    int n;
    range_entry *e;
};

static int key_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

/* An empty map of n entries at epoch (entries zeroed), or NULL. */
static rangemap *rm_alloc(int n, uint32_t epoch) {
    rangemap *rm = calloc(1, sizeof(*rm));
    if (!rm)
        return NULL;
    rm->e = calloc((size_t)n, sizeof(*rm->e));
    if (!rm->e) {
        free(rm);
        return NULL;
    }
    rm->epoch = epoch;
    rm->n = n;
    return rm;
}

/* Sets entry i's start to a copy of s. 0, or -1 out of memory. */
static int rm_set_start(rangemap *rm, int i, const uint8_t *s, size_t n) {
    free(rm->e[i].start);
    rm->e[i].start = NULL;
    rm->e[i].start_len = 0;
    if (n == 0)
        return 0;
    rm->e[i].start = malloc(n);
    if (!rm->e[i].start)
        return -1;
    memcpy(rm->e[i].start, s, n);
    rm->e[i].start_len = n;
    return 0;
}

rangemap *rangemap_new_default(int partitions, uint32_t epoch) {
    if (partitions < 1 || partitions > 65536)
        return NULL;
    rangemap *rm = rm_alloc(partitions, epoch);
    for (int i = 0; rm && i < partitions; i++) {
        rm->e[i].partition = i;
        if (i == 0)
            continue;
        /* ceil(i * 65536 / N): each range gets an equal share of hashes. */
        uint32_t h = (uint32_t)(((uint64_t)i * 65536 + (uint64_t)partitions - 1) /
                                (uint64_t)partitions);
        uint8_t start[2] = {(uint8_t)(h >> 8), (uint8_t)h};
        if (rm_set_start(rm, i, start, 2) < 0) {
            rangemap_destroy(rm);
            rm = NULL;
        }
    }
    return rm;
}

rangemap *rangemap_decode(const uint8_t *buf, size_t n, char *errstr,
                          size_t errstr_size) {
    Objlog__RangeMap *m = objlog__range_map__unpack(NULL, n, buf);
    if (!m) {
        snprintf(errstr, errstr_size, "range map: not a RangeMap message");
        return NULL;
    }
    rangemap *rm = NULL;
    if (m->n_ranges == 0 || m->ranges[0]->start.len != 0) {
        snprintf(errstr, errstr_size, "range map: first range must start at the empty key");
        goto out;
    }
    if (m->n_ranges > RANGEMAP_MAX_RANGES) {
        snprintf(errstr, errstr_size, "range map: %zu ranges; at most %d", m->n_ranges,
                 RANGEMAP_MAX_RANGES);
        goto out;
    }
    rm = rm_alloc((int)m->n_ranges, m->epoch);
    if (!rm) {
        snprintf(errstr, errstr_size, "range map: out of memory");
        goto out;
    }
    for (size_t i = 0; i < m->n_ranges; i++) {
        ProtobufCBinaryData s = m->ranges[i]->start;
        if (s.len > RANGEMAP_START_MAX ||
            (i > 0 && key_cmp(rm->e[i - 1].start, rm->e[i - 1].start_len,
                              s.data, s.len) >= 0)) {
            snprintf(errstr, errstr_size,
                     "range map: range %zu start is too long or out of order", i);
            rangemap_destroy(rm);
            rm = NULL;
            goto out;
        }
        if (rm_set_start(rm, (int)i, s.data, s.len) < 0) {
            snprintf(errstr, errstr_size, "range map: out of memory");
            rangemap_destroy(rm);
            rm = NULL;
            goto out;
        }
        rm->e[i].partition = m->ranges[i]->partition;
    }
out:
    objlog__range_map__free_unpacked(m, NULL);
    return rm;
}

int rangemap_encode(const rangemap *rm, uint8_t **out, size_t *n) {
    Objlog__RangeMap m = OBJLOG__RANGE_MAP__INIT;
    Objlog__RangeEntry *ents = calloc((size_t)rm->n, sizeof(*ents));
    Objlog__RangeEntry **ptrs = calloc((size_t)rm->n, sizeof(*ptrs));
    int rc = -1;
    if (!ents || !ptrs)
        goto out;
    for (int i = 0; i < rm->n; i++) {
        objlog__range_entry__init(&ents[i]);
        ents[i].start.data = (uint8_t *)rm->e[i].start;
        ents[i].start.len = rm->e[i].start_len;
        ents[i].partition = rm->e[i].partition;
        ptrs[i] = &ents[i];
    }
    m.epoch = rm->epoch;
    m.n_ranges = (size_t)rm->n;
    m.ranges = ptrs;
    *n = objlog__range_map__get_packed_size(&m);
    *out = malloc(*n ? *n : 1);
    if (!*out)
        goto out;
    objlog__range_map__pack(&m, *out);
    rc = 0;
out:
    free(ents);
    free(ptrs);
    return rc;
}

void rangemap_destroy(rangemap *rm) {
    if (!rm)
        return;
    for (int i = 0; i < rm->n; i++)
        free(rm->e[i].start);
    free(rm->e);
    free(rm);
}

rangemap *rangemap_copy(const rangemap *rm) {
    uint8_t *buf = NULL;
    size_t n = 0;
    char why[64];
    if (rangemap_encode(rm, &buf, &n) < 0)
        return NULL;
    rangemap *c = rangemap_decode(buf, n, why, sizeof(why));
    free(buf);
    return c;
}

uint32_t rangemap_epoch(const rangemap *rm) { return rm->epoch; }
int rangemap_count(const rangemap *rm) { return rm->n; }

int rangemap_index(const rangemap *rm, const uint8_t *k, size_t n) {
    /* Last entry whose start <= k; entries[0].start is empty so one exists. */
    int lo = 0, hi = rm->n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (key_cmp(rm->e[mid].start, rm->e[mid].start_len, k, n) <= 0)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int rangemap_partition(const rangemap *rm, const uint8_t *k, size_t n) {
    return rm->e[rangemap_index(rm, k, n)].partition;
}

int rangemap_entry(const rangemap *rm, int i, const uint8_t **start,
                   size_t *start_len, const uint8_t **end, size_t *end_len,
                   int *partition) {
    if (i < 0 || i >= rm->n)
        return -1;
    /* never NULL: callers compare with memcmp, even 0 bytes */
    *start = rm->e[i].start ? rm->e[i].start : (const uint8_t *)"";
    *start_len = rm->e[i].start_len;
    *end = i + 1 < rm->n ? rm->e[i + 1].start : NULL;
    *end_len = i + 1 < rm->n ? rm->e[i + 1].start_len : 0;
    *partition = rm->e[i].partition;
    return 0;
}

int rangemap_owns(const rangemap *rm, int partition, const uint8_t *k,
                  size_t n) {
    return rangemap_partition(rm, k, n) == partition;
}

/* ---- the map operations of a handoff ---- */

int rangemap_start_index(const rangemap *rm, const uint8_t *k, size_t n) {
    int i = rangemap_index(rm, k, n);
    return key_cmp(rm->e[i].start, rm->e[i].start_len, k, n) == 0 ? i : -1;
}

void rangemap_covers(const rangemap *rm, const uint8_t *s, size_t sn, const uint8_t *e,
                     size_t en, int p, int *all, int *none) {
    *all = 1;
    *none = 1;
    for (int i = 0; i < rangemap_count(rm); i++) {
        const uint8_t *rs, *re;
        size_t rsn, ren;
        int part;
        rangemap_entry(rm, i, &rs, &rsn, &re, &ren, &part);
        int before_end = !en || key_cmp(rs, rsn, e, en) < 0;
        int after_start = !re || key_cmp(re, ren, s, sn) > 0;
        if (!before_end || !after_start)
            continue;
        if (part == p)
            *none = 0;
        else
            *all = 0;
    }
}

/* rm with room for one entry more or less (delta +1 or -1) at index at:
 * entries before it copied, entries from it shifted; the new entry (+1)
 * zeroed. NULL out of memory. */
static rangemap *rm_reshape(const rangemap *rm, int at, int delta) {
    rangemap *out = rm_alloc(rm->n + delta, rm->epoch + 1);
    for (int i = 0, j = 0; out && i < rm->n; i++) {
        if (delta < 0 && i == at)
            continue;
        if (delta > 0 && j == at)
            j++;
        if (rm_set_start(out, j, rm->e[i].start, rm->e[i].start_len) < 0) {
            rangemap_destroy(out);
            return NULL;
        }
        out->e[j++].partition = rm->e[i].partition;
    }
    return out;
}

static int rm_check_partition(int to, int partitions, char *errstr, size_t es) {
    if (to >= 0 && to < partitions)
        return 0;
    snprintf(errstr, es, "unknown partition %d: the topic has partitions 0 to %d", to,
             partitions - 1);
    return -1;
}

static rangemap *rm_oom(char *errstr, size_t es) {
    snprintf(errstr, es, "out of memory");
    return NULL;
}

rangemap *rangemap_split(const rangemap *rm, const uint8_t *at, size_t n, int to,
                         int partitions, char *errstr, size_t es) {
    if (rm_check_partition(to, partitions, errstr, es) < 0)
        return NULL;
    if (n == 0 || n > RANGEMAP_START_MAX) {
        snprintf(errstr, es, "a split key must be 1 to %d bytes, not %zu", RANGEMAP_START_MAX,
                 n);
        return NULL;
    }
    if (rangemap_start_index(rm, at, n) >= 0) {
        snprintf(errstr, es, "a range already starts at that key");
        return NULL;
    }
    if (rm->n >= RANGEMAP_MAX_RANGES) {
        snprintf(errstr, es, "the map has its maximum of %d ranges", RANGEMAP_MAX_RANGES);
        return NULL;
    }
    int i = rangemap_index(rm, at, n);
    rangemap *out = rm_reshape(rm, i + 1, +1);
    if (!out || rm_set_start(out, i + 1, at, n) < 0) {
        rangemap_destroy(out);
        return rm_oom(errstr, es);
    }
    out->e[i + 1].partition = to;
    return out;
}

rangemap *rangemap_move(const rangemap *rm, const uint8_t *start, size_t n, int to,
                        int partitions, char *errstr, size_t es) {
    if (rm_check_partition(to, partitions, errstr, es) < 0)
        return NULL;
    int i = rangemap_start_index(rm, start, n);
    if (i < 0) {
        snprintf(errstr, es, "no range starts at that key");
        return NULL;
    }
    if (rm->e[i].partition == to) {
        snprintf(errstr, es, "the range is on partition %d already", to);
        return NULL;
    }
    rangemap *out = rm_reshape(rm, 0, 0);
    if (!out)
        return rm_oom(errstr, es);
    out->e[i].partition = to;
    return out;
}

rangemap *rangemap_merge(const rangemap *rm, const uint8_t *start, size_t n, char *errstr,
                         size_t es) {
    int i = rangemap_start_index(rm, start, n);
    if (i < 0) {
        snprintf(errstr, es, "no range starts at that key");
        return NULL;
    }
    if (i == 0) {
        snprintf(errstr, es, "the first range has no range before it to merge into");
        return NULL;
    }
    rangemap *out = rm_reshape(rm, i, -1);
    return out ? out : rm_oom(errstr, es);
}
