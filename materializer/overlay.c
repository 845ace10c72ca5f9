/* overlay.c: a batch's written rows by (column family, key): open
 * addressing with linear probing, FNV-1a hashes, one allocation per entry
 * (key and value together). Invariant: see overlay.h. */
#include "overlay.h"

#include <stdlib.h>
#include <string.h>

#define OVERLAY_MIN_SLOTS 1024

static uint32_t overlay_hash(int cf, const void *k, size_t kn) {
    uint32_t h = 2166136261u ^ (uint32_t)cf;
    const uint8_t *p = k;
    for (size_t i = 0; i < kn; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

void overlay_init(overlay *o) { memset(o, 0, sizeof(*o)); }

void overlay_clear(overlay *o) {
    if (o->n == 0)
        return;
    for (size_t i = 0; i < o->nslots; i++) {
        if (o->slot[i].cf >= 0)
            free(o->slot[i].key);
        o->slot[i].cf = -1;
    }
    o->n = 0;
}

void overlay_free(overlay *o) {
    overlay_clear(o);
    free(o->slot);
    memset(o, 0, sizeof(*o));
}

/* The slot of (cf, k), or of the free slot where it would go. */
static overlay_entry *overlay_find(const overlay *o, uint32_t h, int cf, const void *k,
                                   size_t kn) {
    size_t mask = o->nslots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        overlay_entry *e = &o->slot[i];
        if (e->cf < 0)
            return e;
        if (e->hash == h && e->cf == cf && e->key_len == kn && memcmp(e->key, k, kn) == 0)
            return e;
    }
}

static int overlay_grow(overlay *o) {
    size_t ns = o->nslots ? o->nslots * 2 : OVERLAY_MIN_SLOTS;
    overlay_entry *slot = malloc(ns * sizeof(*slot));
    if (!slot)
        return -1;
    for (size_t i = 0; i < ns; i++)
        slot[i].cf = -1;
    overlay old = *o;
    o->slot = slot;
    o->nslots = ns;
    for (size_t i = 0; i < old.nslots; i++)
        if (old.slot[i].cf >= 0)
            *overlay_find(o, old.slot[i].hash, old.slot[i].cf, old.slot[i].key,
                          old.slot[i].key_len) = old.slot[i];
    free(old.slot);
    return 0;
}

int overlay_get(const overlay *o, int cf, const void *k, size_t kn, const char **v,
                size_t *vn) {
    if (o->n == 0)
        return 0;
    const overlay_entry *e = overlay_find(o, overlay_hash(cf, k, kn), cf, k, kn);
    if (e->cf < 0)
        return 0;
    *v = e->val;
    *vn = e->val_len;
    return 1;
}

int overlay_set(overlay *o, int cf, const void *k, size_t kn, const void *v, size_t vn) {
    if (2 * (o->n + 1) > o->nslots && overlay_grow(o) < 0)
        return -1;
    uint32_t h = overlay_hash(cf, k, kn);
    overlay_entry *e = overlay_find(o, h, cf, k, kn);
    char *mem = malloc(kn + (v ? vn : 0) + 1);
    if (!mem)
        return -1;
    memcpy(mem, k, kn);
    if (v && vn)
        memcpy(mem + kn, v, vn);
    if (e->cf >= 0)
        free(e->key);
    else
        o->n++;
    *e = (overlay_entry){.hash = h, .cf = cf, .key = mem, .key_len = kn,
                         .val = v ? mem + kn : NULL, .val_len = v ? vn : 0};
    return 0;
}

void overlay_each(const overlay *o, int cf,
                  void (*fn)(void *arg, const char *k, size_t kn, const char *v, size_t vn),
                  void *arg) {
    for (size_t i = 0; i < o->nslots && o->n; i++)
        if (o->slot[i].cf == cf)
            fn(arg, o->slot[i].key, o->slot[i].key_len, o->slot[i].val, o->slot[i].val_len);
}
