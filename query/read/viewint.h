/* viewint.h: what the files of the view (view.c, viewlist.c, viewstats.c)
 * share and nobody else sees; view.h is their API. The view is split by
 * what a read walks: a point read (view.c), a prefix's key range
 * (viewlist.c), the usage counters' rows (viewstats.c). These are the
 * reads and the byte helpers all three build on.
 *
 * Invariant: every read here goes through the view's snapshot, so a view
 * function never mixes two states of the store, whichever file it is in. */
#ifndef OBJLOG_QUERY_VIEWINT_H
#define OBJLOG_QUERY_VIEWINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keycodec.h"
#include "view.h"

/* ------------------------------------ the byte helpers results are built with */

static inline view_rc view_oom(char *errstr, size_t es) {
    snprintf(errstr, es, "out of memory");
    return VIEW_ERROR;
}

static inline int bytes_set(view_bytes *b, const void *p, size_t n) {
    b->data = malloc(n ? n : 1);
    if (!b->data)
        return -1;
    if (n)
        memcpy(b->data, p, n);
    b->len = n;
    return 0;
}

static inline int bytes_cmp(const void *a, size_t an, const void *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int r = m ? memcmp(a, b, m) : 0;
    return r ? r : (an > bn) - (an < bn);
}

static inline int keybuf_cmp(const keybuf *a, const keybuf *b) {
    return bytes_cmp(a->data, a->len, b->data, b->len);
}

static inline int keybuf_set(keybuf *kb, const keybuf *from) {
    keybuf_reset(kb);
    return keybuf_append(kb, from->data, from->len);
}

/* Appends one zeroed element to *arr (length *n); NULL when out of memory. */
static inline void *array_push(void *arr, size_t *n, size_t elem) {
    char *p = realloc(*(void **)arr, (*n + 1) * elem);
    if (!p)
        return NULL;
    *(void **)arr = p;
    memset(p + *n * elem, 0, elem);
    return p + (*n)++ * elem;
}

/* ------------------------------------------ view.c: reads through the snapshot */

/* 1 found (*val: rocksdb_free), 0 missing, -1 error. */
int view_get(view *v, objlog_cf cf, const keybuf *k, char **val, size_t *vlen,
             char *errstr, size_t es);

/* An iterator over cf below the upper bound hi (hi must outlive it). */
typedef struct view_iter {
    rocksdb_readoptions_t *ro;
    rocksdb_iterator_t *it;
} view_iter;
void view_iter_open(view *v, objlog_cf cf, const keybuf *hi, view_iter *vi);
/* Closes; -1 with errstr if the iterator stopped on an error. */
int view_iter_close(view_iter *vi, char *errstr, size_t es);
void view_iter_seek(view_iter *vi, const keybuf *k);

/* VIEW_OK when bucket exists, VIEW_NO_SUCH_BUCKET, or VIEW_ERROR. */
view_rc view_bucket_check(view *v, const char *bucket, char *errstr, size_t es);

/* The newest version row of the key (marker or not): 1 found (*out
 * filled, is_latest 1), 0 the key has no versions, -1 error. */
int view_newest_row(view *v, const keybuf *rk, const uint8_t *key, size_t kn,
                    view_version *out, char *errstr, size_t es);
/* The key's null version seq from its header row: 1, 0 none, -1 error. */
int view_null_seq(view *v, const keybuf *rk, uint64_t *seq, char *errstr, size_t es);

#endif
