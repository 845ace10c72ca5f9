/* ridindex.h: the request ids one partition still remembers, in memory:
 * a multimap from a 64-bit hash of a request id to the offsets of the
 * request's first outcomes whose `outcomes` rows are kept (ridindex.c).
 * Internal to the state machine (batch.c holds one per partition, dedup.c
 * fills and asks it).
 *
 * It replaces a row per request id: a new request (nearly every event)
 * costs no read and no write for its dedup, and a retry reads only the
 * outcome row it gets back. The rows stay the truth: the index is a cache
 * of them, rebuilt by one scan of the partition's `outcomes` rows, and a
 * hash names candidates that the caller checks against the row's request
 * id, so a collision costs a read, never a wrong decision.
 *
 * Invariant: (h, off) is in the index iff the partition's outcome row at
 * off is kept, is a request's first outcome (Outcome.offset == off) and
 * h = ridindex_hash of its request id; a pair is in it at most once. */
#ifndef OBJLOG_RIDINDEX_H
#define OBJLOG_RIDINDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct ridindex ridindex;

ridindex *ridindex_new(void);
void ridindex_free(ridindex *x);
uint64_t ridindex_hash(const void *rid, size_t n);
/* 0, or -1 out of memory (the index is unchanged). */
int ridindex_insert(ridindex *x, uint64_t h, int64_t off);
/* Removes (h, off) if present. */
void ridindex_remove(ridindex *x, uint64_t h, int64_t off);
/* The offsets stored under h, highest first, into offs[0..max): returns
 * how many there are (which may exceed max; only max are written). */
size_t ridindex_find(const ridindex *x, uint64_t h, int64_t *offs, size_t max);
size_t ridindex_count(const ridindex *x);

#endif
