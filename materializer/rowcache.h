/* rowcache.h: a batch's cache of its few hot rows (bucket records, meta
 * rows: outcomes-low marks, applied offsets), internal to apply.c.
 *
 * Nearly every event of a batch reads its bucket's record and its
 * partition's outcomes-low mark; through the WriteBatchWithIndex each such
 * read searches the batch's index and then the store. The cache answers
 * them from memory after the first.
 *
 * Invariant: an entry always equals what the batch-over-store read would
 * return: apply.c puts every write and delete of a cached column family
 * through rowcache_set, and the cache is cleared with its batch. An entry
 * may be dropped at any time (the read then goes to the batch again). */
#ifndef OBJLOG_ROWCACHE_H
#define OBJLOG_ROWCACHE_H

#include <stddef.h>

#define ROWCACHE_MAX 32

typedef struct rowcache_entry {
    int cf;
    char *key;           /* NULL: slot free */
    size_t key_len;
    char *val;           /* NULL: the row is known absent */
    size_t val_len;
} rowcache_entry;

typedef struct rowcache {
    rowcache_entry e[ROWCACHE_MAX];
    unsigned next_victim; /* round robin once full */
} rowcache;

void rowcache_init(rowcache *c);
void rowcache_clear(rowcache *c);

/* 1 cached: *v is a malloc'd copy of the value (free() it; NULL if the row
 * is absent), 0 not cached, -1 out of memory. */
int rowcache_get(rowcache *c, int cf, const void *k, size_t kn, char **v,
                 size_t *vn);

/* Records the row's value as the batch now sees it (v NULL: deleted or
 * absent). Out of memory only forgets the row. */
void rowcache_set(rowcache *c, int cf, const void *k, size_t kn, const void *v,
                  size_t vn);

#endif
