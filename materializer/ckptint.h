/* ckptint.h: what the checkpoint's export side (checkpoint.c) and its
 * importer (ckptimport.c) share: the stream's sizes, which row belongs to
 * which partition or handoff range, and the purges an import starts
 * with. Internal to the materializer. */
#ifndef OBJLOG_CKPTINT_H
#define OBJLOG_CKPTINT_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "checkpoint.h"
#include "keycodec.h"
#include "rows.h"

/* WriteBatches of the import and the purge stay below this (bounded
 * memory whatever the partition's size); export output is staged in
 * chunks of CKPT_OUT_CHUNK. */
#define CKPT_BATCH_BYTES ((size_t)4 << 20)
#define CKPT_OUT_CHUNK ((size_t)256 << 10)
/* Largest key / value a row may claim: far above any real row (keys are
 * route keys of <= 1024-byte object keys, values small records), so a
 * corrupt length fails instead of allocating gigabytes. */
#define CKPT_KEY_MAX ((uint32_t)64 << 10)
#define CKPT_VALUE_MAX ((uint32_t)16 << 20)
#define CKPT_IDENT_MAX 255
#define CKPT_SHA_LEN 32
#define CKPT_FIXED_LEN 18            /* magic, version, flags, ident length */
#define CKPT_TAIL_LEN 16             /* epoch, partition, applied */
#define CKPT_ROW_HEAD_LEN 9          /* cf, key length, value length */
#define CKPT_TRAILER_LEN 16          /* rows, bytes (after the 'E') */
#define CKPT_MARKER_VERSION 1
#define CKPT_RANGE_LENS 8            /* a range stream: start and end lengths */

/* Per-partition meta rows: name ‖ be32(p). */
#define CKPT_META_N 4
extern const char *const ckpt_meta_names[CKPT_META_N];

/* The partition row (cf, k) belongs to under rm, -1 for none (the store's
 * own meta rows, malformed rows). */
int ckpt_row_part(const rangemap *rm, int cf, const uint8_t *k, size_t kn);
int ckpt_iter_error(rocksdb_iterator_t *it, const char *what, char *errstr, size_t es);
/* Writes wb (then clears it), synced when sync. 0, or -1 (errstr). */
int ckpt_write(objlog_store *s, rocksdb_writebatch_t *wb, int sync, char *errstr, size_t es);
size_t ckpt_marker_key(uint8_t out[APPLY_META_KEY_MAX], int32_t p);
char *ckpt_meta_get(objlog_store *s, rocksdb_readoptions_t *ro, const void *key, size_t kn,
                    size_t *vn, int *rc, char *errstr, size_t es);
/* Stages (and writes past CKPT_BATCH_BYTES) the deletion of every row of
 * p into wb, after what wb holds; the caller writes the rest. */
int ckpt_purge_into(objlog_store *s, const rangemap *rm, int32_t p, rocksdb_writebatch_t *wb,
                    char *errstr, size_t es);

/* ---- a range as of its handoff ---- */

/* The range [start, end) (en 0: no end) that the RangeOut at (from,
 * from_off) gave away, as its source held it there. */
typedef struct ckpt_range {
    int32_t from;
    int64_t from_off;
    const uint8_t *start, *end;
    size_t sn, en;
} ckpt_range;

/* Whether row (cf, k) is one a range stream carries: route-keyed rows in
 * the range, the home bucket rows and home usage rows of the buckets it
 * holds, and the RangeOut's marker and request records ('x' be32(from)
 * be64(from_off) ...). 1 yes, 0 no, -1 out of memory. */
int ckpt_range_row(const ckpt_range *r, int cf, const uint8_t *k, size_t kn);
/* The meta row of a range import in progress ("rimporting" be32(from)
 * be64(from_off)); its value is the range (be32 n, start, be32 n, end). */
size_t ckpt_range_marker_key(uint8_t out[32], const ckpt_range *r);
/* Stages the deletion of every row ckpt_range_row takes into wb (writing
 * past CKPT_BATCH_BYTES). 0, or -1 (errstr). */
int ckpt_range_purge_into(objlog_store *s, const ckpt_range *r, rocksdb_writebatch_t *wb,
                          char *errstr, size_t es);

#endif
