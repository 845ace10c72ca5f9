/* overlay.h: the rows one batch has written, by column family and key,
 * as a hash table (overlay.c): what a read through the batch sees before
 * the store. Internal to batch.c.
 *
 * A batch staged in a WriteBatchWithIndex paid for a sorted index of
 * every row it wrote (a skip list insert per put, ~15k instructions),
 * although most rows are never read back and none is iterated but in a
 * few column families; point reads need only a hash lookup.
 *
 * Invariant: an entry holds the last value the batch wrote for its key
 * (value NULL: deleted); keys not in the table were not written by the
 * batch. The table owns copies of keys and values until overlay_clear. */
#ifndef OBJLOG_OVERLAY_H
#define OBJLOG_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

typedef struct overlay_entry {
    uint32_t hash;
    int cf;                  /* -1: slot free */
    char *key;               /* key ‖ value in one allocation */
    size_t key_len;
    char *val;               /* NULL: deleted */
    size_t val_len;
} overlay_entry;

typedef struct overlay {
    overlay_entry *slot;
    size_t nslots;           /* power of two, > 2 * n */
    size_t n;
} overlay;

void overlay_init(overlay *o);
void overlay_clear(overlay *o);
void overlay_free(overlay *o);
/* 1 written by the batch (*v NULL when deleted; *v points into the table,
 * valid until its next change), 0 not written. */
int overlay_get(const overlay *o, int cf, const void *k, size_t kn, const char **v,
                size_t *vn);
/* Records the key's new value (v NULL: deleted). 0, or -1 out of memory
 * (the table is unchanged). */
int overlay_set(overlay *o, int cf, const void *k, size_t kn, const void *v, size_t vn);
/* Calls fn for every entry of cf, in no particular order. */
void overlay_each(const overlay *o, int cf,
                  void (*fn)(void *arg, const char *k, size_t kn, const char *v, size_t vn),
                  void *arg);

#endif
