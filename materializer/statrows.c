/* statrows.c: the in-memory table of a batch's `stats` rows (statrows.h).
 * Open addressing over row indexes with linear probing; the table at most
 * half full, so a probe sequence always ends at an empty slot. */
#include "statrows.h"

#include <stdlib.h>
#include <string.h>

static uint64_t statrows_hash(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void statrows_init(statrows *t) { memset(t, 0, sizeof(*t)); }

void statrows_clear(statrows *t) {
    for (size_t i = 0; i < t->n; i++)
        free(t->rows[i].key);
    t->n = 0;
    if (t->slots)
        memset(t->slots, 0, t->nslots * sizeof(*t->slots));
}

void statrows_free(statrows *t) {
    statrows_clear(t);
    free(t->rows);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static size_t statrows_probe(const statrows *t, const uint8_t *key, size_t kn) {
    size_t mask = t->nslots - 1;
    size_t s = (size_t)statrows_hash(key, kn) & mask;
    for (;; s = (s + 1) & mask) {
        uint32_t i = t->slots[s];
        if (!i)
            return s;
        const statrow *r = &t->rows[i - 1];
        if (r->key_len == kn && memcmp(r->key, key, kn) == 0)
            return s;
    }
}

statrow *statrows_find(statrows *t, const uint8_t *key, size_t key_len) {
    if (!t->n)
        return NULL;
    uint32_t i = t->slots[statrows_probe(t, key, key_len)];
    return i ? &t->rows[i - 1] : NULL;
}

/* Doubles the slot array and re-inserts every row. */
static int statrows_grow_slots(statrows *t) {
    size_t ns = t->nslots ? t->nslots * 2 : 64;
    uint32_t *slots = calloc(ns, sizeof(*slots));
    if (!slots)
        return -1;
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
    for (size_t i = 0; i < t->n; i++)
        t->slots[statrows_probe(t, t->rows[i].key, t->rows[i].key_len)] = (uint32_t)i + 1;
    return 0;
}

statrow *statrows_insert(statrows *t, const uint8_t *key, size_t key_len) {
    if ((t->n + 1) * 2 > t->nslots && statrows_grow_slots(t) < 0)
        return NULL;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 32;
        statrow *rows = realloc(t->rows, cap * sizeof(*rows));
        if (!rows)
            return NULL;
        t->rows = rows;
        t->cap = cap;
    }
    statrow *r = &t->rows[t->n];
    Objlog__UsageStats zero = OBJLOG__USAGE_STATS__INIT;
    memset(r, 0, sizeof(*r));
    r->u = zero;
    r->key = malloc(key_len ? key_len : 1);
    if (!r->key)
        return NULL;
    memcpy(r->key, key, key_len);
    r->key_len = key_len;
    t->slots[statrows_probe(t, key, key_len)] = (uint32_t)++t->n;
    return r;
}
