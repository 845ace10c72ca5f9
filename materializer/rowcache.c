/* rowcache.c: a batch's cache of its hot rows (rowcache.h). A handful of
 * rows per batch, so a linear scan beats hashing; when the slots are full
 * the oldest-inserted one goes. */
#include "rowcache.h"

#include <stdlib.h>
#include <string.h>

void rowcache_init(rowcache *c) { memset(c, 0, sizeof(*c)); }

static void entry_free(rowcache_entry *e) {
    free(e->key);
    free(e->val);
    memset(e, 0, sizeof(*e));
}

void rowcache_clear(rowcache *c) {
    for (int i = 0; i < ROWCACHE_MAX; i++)
        entry_free(&c->e[i]);
    c->next_victim = 0;
}

static rowcache_entry *find(rowcache *c, int cf, const void *k, size_t kn) {
    for (int i = 0; i < ROWCACHE_MAX; i++) {
        rowcache_entry *e = &c->e[i];
        if (e->key && e->cf == cf && e->key_len == kn && memcmp(e->key, k, kn) == 0)
            return e;
    }
    return NULL;
}

static char *dup_bytes(const void *p, size_t n) {
    char *d = malloc(n ? n : 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

int rowcache_get(rowcache *c, int cf, const void *k, size_t kn, char **v,
                 size_t *vn) {
    rowcache_entry *e = find(c, cf, k, kn);
    if (!e)
        return 0;
    *vn = e->val_len;
    *v = NULL;
    if (!e->val)
        return 1;
    *v = dup_bytes(e->val, e->val_len);
    return *v ? 1 : -1;
}

void rowcache_set(rowcache *c, int cf, const void *k, size_t kn, const void *v,
                  size_t vn) {
    rowcache_entry *e = find(c, cf, k, kn);
    if (!e) {
        for (int i = 0; i < ROWCACHE_MAX && !e; i++)
            if (!c->e[i].key)
                e = &c->e[i];
        if (!e) {
            e = &c->e[c->next_victim];
            c->next_victim = (c->next_victim + 1) % ROWCACHE_MAX;
        }
        entry_free(e);
        e->key = dup_bytes(k, kn);
        if (!e->key)
            return;
        e->cf = cf;
        e->key_len = kn;
    }
    free(e->val);
    e->val = v ? dup_bytes(v, vn) : NULL;
    e->val_len = v ? vn : 0;
    if (v && !e->val)
        entry_free(e); /* forget rather than claim absence */
}
