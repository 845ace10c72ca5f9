/* rangemap.h: which partition owns a route key (docs/ARCHITECTURE.md,
 * "Keys and column families").
 *
 * A range map is a sorted list of (start route key -> partition) with an
 * epoch. Range i covers [start_i, start_{i+1}); the first start is the empty
 * key, so every route key has exactly one owner. It is data, not code: it
 * travels as the RangeMap protobuf (objlog.proto) so ranges can be split
 * later without a release. The default map for N partitions splits the
 * 16-bit bucket-hash space evenly, so a bucket's keys stay in one range.
 */
#ifndef OBJLOG_RANGEMAP_H
#define OBJLOG_RANGEMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct rangemap rangemap;

/* A range's start is a route key or a prefix of one: at most a bucket
 * part and an encoded key of the longest bucket name and object key. */
#define RANGEMAP_START_MAX 4096
#define RANGEMAP_MAX_RANGES 65536

rangemap *rangemap_new_default(int partitions, uint32_t epoch);
rangemap *rangemap_decode(const uint8_t *buf, size_t n, char *errstr,
                          size_t errstr_size);
/* Serialized RangeMap; caller frees *out. 0 or -1. */
int rangemap_encode(const rangemap *rm, uint8_t **out, size_t *n);
void rangemap_destroy(rangemap *rm);
/* A copy of rm, or NULL (out of memory). */
rangemap *rangemap_copy(const rangemap *rm);

uint32_t rangemap_epoch(const rangemap *rm);
int rangemap_count(const rangemap *rm);
/* Index of the range holding route key k. */
int rangemap_index(const rangemap *rm, const uint8_t *k, size_t n);
/* Partition that owns route_key. */
int rangemap_partition(const rangemap *rm, const uint8_t *route_key, size_t n);
/* Range of entry i: start (inclusive) and end (exclusive; *end_len = 0 and
 * *end = NULL for the last range, meaning "to the end"). */
int rangemap_entry(const rangemap *rm, int i, const uint8_t **start,
                   size_t *start_len, const uint8_t **end, size_t *end_len,
                   int *partition);
/* 1 if route_key belongs to partition under this map, else 0. */
int rangemap_owns(const rangemap *rm, int partition, const uint8_t *route_key,
                  size_t n);
/* Index of the range that starts exactly at k, or -1. */
int rangemap_start_index(const rangemap *rm, const uint8_t *k, size_t n);
/* How the ranges that overlap [s, e) (en 0: no end) sit on partition p:
 * *all 1 if every one is p's, *none 1 if none is. */
void rangemap_covers(const rangemap *rm, const uint8_t *s, size_t sn, const uint8_t *e,
                     size_t en, int p, int *all, int *none);

/* The map operations of a handoff. Each returns a new map at rm's epoch
 * + 1 (rm unchanged; the caller destroys both), or NULL with errstr
 * naming what is wrong (an unknown partition, a key that is or is not a
 * range start, the first range, out of memory). partitions: the topic's
 * partition count (to must be below it). */
/* Splits the range holding at into [its start, at) on its partition and
 * [at, its end) on partition to (to may be its own: a split alone). */
rangemap *rangemap_split(const rangemap *rm, const uint8_t *at, size_t n, int to,
                         int partitions, char *errstr, size_t errstr_size);
/* Gives the range starting at start to partition to. */
rangemap *rangemap_move(const rangemap *rm, const uint8_t *start, size_t n, int to,
                        int partitions, char *errstr, size_t errstr_size);
/* Merges the range starting at start into the range before it, whose
 * partition then holds both. */
rangemap *rangemap_merge(const rangemap *rm, const uint8_t *start, size_t n,
                         char *errstr, size_t errstr_size);

#endif
