/* rangemap.c: sorted range list with binary search. Invariant: entries are
 * strictly increasing by start and entries[0].start is empty; decode checks
 * both so a corrupt control message cannot produce an ambiguous owner. */
#include "rangemap.h"

#include "objlog.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct range_entry {
    uint8_t start[64];
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

rangemap *rangemap_new_default(int partitions, uint32_t epoch) {
    if (partitions < 1 || partitions > 65536)
        return NULL;
    rangemap *rm = calloc(1, sizeof(*rm));
    if (!rm)
        return NULL;
    rm->e = calloc((size_t)partitions, sizeof(*rm->e));
    if (!rm->e) {
        free(rm);
        return NULL;
    }
    rm->epoch = epoch;
    rm->n = partitions;
    for (int i = 0; i < partitions; i++) {
        rm->e[i].partition = i;
        if (i == 0)
            continue;
        /* ceil(i * 65536 / N): each range gets an equal share of hashes. */
        uint32_t h = (uint32_t)(((uint64_t)i * 65536 + (uint64_t)partitions - 1) /
                                (uint64_t)partitions);
        rm->e[i].start[0] = (uint8_t)(h >> 8);
        rm->e[i].start[1] = (uint8_t)h;
        rm->e[i].start_len = 2;
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
    rm = calloc(1, sizeof(*rm));
    rm->e = calloc(m->n_ranges, sizeof(*rm->e));
    rm->epoch = m->epoch;
    rm->n = (int)m->n_ranges;
    for (size_t i = 0; i < m->n_ranges; i++) {
        ProtobufCBinaryData s = m->ranges[i]->start;
        if (s.len > sizeof(rm->e[i].start) ||
            (i > 0 && key_cmp(rm->e[i - 1].start, rm->e[i - 1].start_len,
                              s.data, s.len) >= 0)) {
            snprintf(errstr, errstr_size,
                     "range map: range %zu start is too long or out of order", i);
            rangemap_destroy(rm);
            rm = NULL;
            goto out;
        }
        if (s.len)
            memcpy(rm->e[i].start, s.data, s.len);
        rm->e[i].start_len = s.len;
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
    free(rm->e);
    free(rm);
}

uint32_t rangemap_epoch(const rangemap *rm) { return rm->epoch; }
int rangemap_count(const rangemap *rm) { return rm->n; }

static int rangemap_index(const rangemap *rm, const uint8_t *k, size_t n) {
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
    *start = rm->e[i].start;
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
