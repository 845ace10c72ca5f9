/* ridindex.c: the in-memory request-id index of one partition
 * (ridindex.h): open addressing with linear probing, deleted by backward
 * shift so that no tombstone ever lengthens a probe.
 *
 * Invariant: every stored pair sits at or after its home slot (h & mask)
 * with no free slot between, the table is at most half full, and a pair
 * (h, off) is stored at most once. */
#include "ridindex.h"

#include <stdlib.h>

#define RIDX_FREE INT64_MIN
#define RIDX_MIN_SLOTS 64

typedef struct ridx_slot {
    uint64_t h;
    int64_t off; /* RIDX_FREE: free */
} ridx_slot;

struct ridindex {
    ridx_slot *slot;
    size_t nslots; /* power of two */
    size_t n;
};

/* FNV-1a then a 64-bit finalizer (murmur3's fmix64): request ids are
 * random or near-sequential, and the finalizer spreads both over the low
 * bits the table uses. */
uint64_t ridindex_hash(const void *rid, size_t n) {
    const unsigned char *p = rid;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static ridx_slot *ridx_alloc(size_t nslots) {
    ridx_slot *s = malloc(nslots * sizeof(*s));
    if (!s)
        return NULL;
    for (size_t i = 0; i < nslots; i++)
        s[i].off = RIDX_FREE;
    return s;
}

ridindex *ridindex_new(void) {
    ridindex *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->slot = ridx_alloc(RIDX_MIN_SLOTS);
    if (!x->slot) {
        free(x);
        return NULL;
    }
    x->nslots = RIDX_MIN_SLOTS;
    return x;
}

void ridindex_free(ridindex *x) {
    if (!x)
        return;
    free(x->slot);
    free(x);
}

static void ridx_place(ridx_slot *slot, size_t mask, uint64_t h, int64_t off) {
    size_t i = (size_t)h & mask;
    while (slot[i].off != RIDX_FREE)
        i = (i + 1) & mask;
    slot[i] = (ridx_slot){h, off};
}

static int ridx_grow(ridindex *x) {
    size_t nslots = x->nslots * 2;
    ridx_slot *slot = ridx_alloc(nslots);
    if (!slot)
        return -1;
    for (size_t i = 0; i < x->nslots; i++)
        if (x->slot[i].off != RIDX_FREE)
            ridx_place(slot, nslots - 1, x->slot[i].h, x->slot[i].off);
    free(x->slot);
    x->slot = slot;
    x->nslots = nslots;
    return 0;
}

int ridindex_insert(ridindex *x, uint64_t h, int64_t off) {
    size_t mask = x->nslots - 1;
    for (size_t i = (size_t)h & mask; x->slot[i].off != RIDX_FREE; i = (i + 1) & mask)
        if (x->slot[i].h == h && x->slot[i].off == off)
            return 0;
    if (2 * (x->n + 1) > x->nslots && ridx_grow(x) < 0)
        return -1;
    ridx_place(x->slot, x->nslots - 1, h, off);
    x->n++;
    return 0;
}

void ridindex_remove(ridindex *x, uint64_t h, int64_t off) {
    size_t mask = x->nslots - 1;
    size_t i = (size_t)h & mask;
    while (x->slot[i].off != RIDX_FREE && !(x->slot[i].h == h && x->slot[i].off == off))
        i = (i + 1) & mask;
    if (x->slot[i].off == RIDX_FREE)
        return;
    /* Backward shift: pull each later pair of the run into the hole when
     * its home does not lie cyclically in (hole, its slot]. */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; x->slot[j].off != RIDX_FREE; j = (j + 1) & mask) {
        size_t home = (size_t)x->slot[j].h & mask;
        int stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (stays)
            continue;
        x->slot[hole] = x->slot[j];
        hole = j;
    }
    x->slot[hole].off = RIDX_FREE;
    x->n--;
}

size_t ridindex_find(const ridindex *x, uint64_t h, int64_t *offs, size_t max) {
    size_t mask = x->nslots - 1, n = 0;
    for (size_t i = (size_t)h & mask; x->slot[i].off != RIDX_FREE; i = (i + 1) & mask) {
        if (x->slot[i].h != h)
            continue;
        /* insertion sort, highest first: a request has one or two */
        size_t k = n < max ? n : max - 1;
        if (n >= max && (max == 0 || x->slot[i].off <= offs[max - 1])) {
            n++;
            continue;
        }
        while (k > 0 && offs[k - 1] < x->slot[i].off) {
            if (k < max)
                offs[k] = offs[k - 1];
            k--;
        }
        offs[k] = x->slot[i].off;
        n++;
    }
    return n;
}

size_t ridindex_count(const ridindex *x) { return x->n; }
