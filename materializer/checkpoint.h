/* checkpoint.h: a copy of one partition's rows, from one store to another
 * (a cluster node's "fast bootstrap"). A node given a partition it has
 * never applied imports a peer's checkpoint of it and replays only the
 * log's tail from the checkpoint's applied offset, never from offset 0.
 *
 * What "the rows of partition p" are (materializer.h has each layout):
 *   versions, objects, uploads, buckets: keys the range map gives to p;
 *   stats:    rows objlog_stats_row_partition() gives to p;
 *   outcomes: 'o' be32(p) ... (a request id is in its first outcome's
 *             row: there is no row of its own);
 *   meta:     "applied", "dlq", "olow" ‖ be32(p). Never the store's own
 *             rows ("logident", "tokensecret", "nostats").
 *
 * Stream format, version 2 (integers big-endian; version 1 carried the
 * rows of store format 3, 'r' rows and Unversioned keys' headers, which a
 * format-4 store must not take in):
 *
 *   header   "OBJLCKPT"                  8 bytes, magic
 *            be32 format version         2
 *            be32 flags                  bit 0: the source keeps no stats
 *                                        view (meta "nostats", bench only)
 *            be16 n, n bytes             the source's meta "logident" text
 *                                        ("v1 <kind> <log id> <cluster id>")
 *            be32 range map epoch
 *            be32 partition
 *            be64 applied                next offset to apply of partition
 *   rows     u8 'R', u8 cf (objlog_cf), be32 key length, be32 value length,
 *            key, value                  any number, CFs in objlog_cf order
 *   trailer  u8 'E', be64 rows, be64 bytes before the 'E',
 *            32 bytes SHA-256 of every byte before these 32
 *
 * A range stream (flags bit 1) carries one range as the partition that
 * gave it away held it at its RangeOut (a handoff between nodes): the
 * header's partition and offset are the RangeOut's (p, X), its epoch the
 * RangeOut's map's, and be32 n, start, be32 n, end (n 0: no end) follow
 * the offset. Its rows: the route-keyed rows in [start, end), the home
 * bucket and usage rows of the buckets that start in it, and the 'x'
 * be32(p) be64(X) rows (the RangeOut's marker, its request records). The
 * importer first deletes what it holds of those, writes the rows, and
 * writes the marker last, in the synced WriteBatch that ends the import:
 * the RangeIn that waits for it applies only then. Meta "rimporting"
 * be32(p) be64(X) marks an import in progress; objlog_store_open deletes
 * the range's rows of one that did not finish.
 *
 * All rows and the applied offset are read from one RocksDB snapshot, so
 * they are one state of the view: the state after applying every event
 * below `applied`. Importing it and then applying the log from `applied`
 * on gives the rows a replay from 0 would.
 *
 * Crash rule: an import first writes meta "importing" ‖ be32(p) (value:
 * be32 1 ‖ the RangeMap it imports under) in the same WriteBatch as the
 * first deletes of p's old rows, and deletes it in the WriteBatch that
 * writes p's meta rows, after the whole stream checked out. A store that
 * opens with the marker crashed mid-import: objlog_store_open purges
 * partition p (it is then "never applied") and drops the marker, so a
 * half-imported partition is never served or applied. A failed import
 * does the same at once.
 *
 * Export, import, purge and fetch read or write whole partitions: never
 * on an event loop (objlog_ckpt_importing is one point read). */
#ifndef OBJLOG_CHECKPOINT_H
#define OBJLOG_CHECKPOINT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "materializer.h"
#include "rangemap.h"

#define OBJLOG_CKPT_MAGIC "OBJLCKPT"
#define OBJLOG_CKPT_VERSION 2
#define OBJLOG_CKPT_FLAG_NO_STATS 1u
#define OBJLOG_CKPT_FLAG_RANGE 2u
/* Meta row of an import in progress (crash rule above). */
#define OBJLOG_CKPT_META_IMPORTING "importing"
/* Meta "ckbase" ‖ be32(p): the applied offset of the last checkpoint of
 * p imported here (absent: p was applied from the log from offset 0).
 * Below it this store did not apply p's events itself: a RangeOut there
 * handed its range to a map this store may never have held (rangewait). */
#define OBJLOG_CKPT_META_BASE "ckbase"
/* Meta "rimported" be32(p) be64(X): the range p gave away at X was
 * imported here (its RangeIn may apply; the RangeIn deletes the row). */
size_t objlog_ckpt_rimported_key(uint8_t out[32], int32_t p, int64_t off);

/* Results besides 0. */
#define OBJLOG_CKPT_ERROR (-1)
#define OBJLOG_CKPT_NEVER_APPLIED (-2) /* export: applied offset 0 here */
#define OBJLOG_CKPT_IMPORTING (-3)     /* export: an import of p runs here */
#define OBJLOG_CKPT_NOT_YET (-4)       /* export: p has not applied the RangeOut */
#define OBJLOG_CKPT_NO_HANDOFF (-5)    /* export: no RangeOut kept at (p, X) here */
#define OBJLOG_CKPT_MOVED_ON (-6)      /* export: p holds part of the range again */

/* ---- export ---- */

/* Takes the next n bytes of the stream; 0, or -1 to stop the export (a
 * closed peer, a full disk). */
typedef int (*objlog_ckpt_write_fn)(void *opaque, const void *data, size_t n);

typedef struct objlog_ckpt_info {
    int64_t applied;             /* the checkpoint's applied offset */
    uint64_t rows;               /* rows in the stream */
    uint64_t bytes;              /* whole stream, trailer included */
} objlog_ckpt_info;

/* Writes partition p's checkpoint to write(). 0 (info filled when not
 * NULL), OBJLOG_CKPT_NEVER_APPLIED, OBJLOG_CKPT_IMPORTING, or
 * OBJLOG_CKPT_ERROR with errstr (a read failed, write() returned -1). */
int objlog_ckpt_export(objlog_store *s, const rangemap *rm, int32_t p,
                       objlog_ckpt_write_fn write, void *opaque,
                       objlog_ckpt_info *info, char *errstr, size_t errstr_size);

/* Writes the range stream of the RangeOut at (p, off): the range as p
 * held it there (format above). 0 (info->applied = off), OBJLOG_CKPT_NOT_YET
 * (p applied here stops before off), OBJLOG_CKPT_NO_HANDOFF (no RangeOut
 * marker at (p, off) here, or p was copied here from a checkpoint past
 * off), OBJLOG_CKPT_MOVED_ON (p's map holds part of
 * the range again: its rows are no longer those of off), or
 * OBJLOG_CKPT_ERROR, each with errstr. */
int objlog_ckpt_export_handoff(objlog_store *s, int32_t p, int64_t off,
                               objlog_ckpt_write_fn write, void *opaque,
                               objlog_ckpt_info *info, char *errstr, size_t errstr_size);

/* ---- import ---- */

typedef struct objlog_ckpt_progress {
    uint64_t bytes;              /* stream bytes taken so far */
    uint64_t rows;               /* rows taken so far */
    uint64_t total_bytes;        /* the whole stream (Content-Length); 0
                                    unknown */
} objlog_ckpt_progress;
/* Called after each fed chunk that completed rows; cheap callers only. */
typedef void (*objlog_ckpt_progress_fn)(void *opaque, const objlog_ckpt_progress *pr);

typedef struct objlog_ckpt_import objlog_ckpt_import;

/* An import of partition p into s, under range map rm (both borrowed:
 * they outlive the import). Nothing is written until the stream's header
 * is checked: magic, version, flags, log identity (equal to s's own
 * meta "logident"; s must have one), epoch (rm's) and partition. NULL
 * with errstr. The caller must not apply or serve p until the import
 * finished (then p's applied offset is the checkpoint's). */
objlog_ckpt_import *objlog_ckpt_import_new(objlog_store *s, const rangemap *rm,
                                           int32_t p, char *errstr,
                                           size_t errstr_size);
/* An import of the range stream of the RangeOut at (p, off) into s,
 * expected to move [start, end) (en 0: no end) under map epoch epoch
 * (the RangeIn's): a header that says otherwise is refused before
 * anything is written. Finishing gives *applied = off. The bytes are
 * copied; nothing is borrowed. */
objlog_ckpt_import *objlog_ckpt_import_handoff_new(objlog_store *s, int32_t p, int64_t off,
                                                   uint32_t epoch, const uint8_t *start,
                                                   size_t sn, const uint8_t *end, size_t en,
                                                   char *errstr, size_t errstr_size);
void objlog_ckpt_import_set_progress(objlog_ckpt_import *im,
                                     objlog_ckpt_progress_fn fn, void *opaque);
/* The stream's expected size, when known (Content-Length). */
void objlog_ckpt_import_set_total(objlog_ckpt_import *im, uint64_t total_bytes);
/* The next n bytes of the stream, in chunks of any size. 0, or -1 with
 * errstr: the import failed (every later call fails the same way). A
 * failure in the header (magic, version, identity, epoch, partition)
 * leaves the store as it was; any later one leaves p with no rows and no
 * marker. */
int objlog_ckpt_import_feed(objlog_ckpt_import *im, const void *data, size_t n,
                            char *errstr, size_t errstr_size);
/* The stream ended. 0 with *applied = p's applied offset now: the rows are
 * durable (synced). -1 with errstr (truncated, checksum mismatch, ...):
 * p holds no rows and no marker. */
int objlog_ckpt_import_finish(objlog_ckpt_import *im, int64_t *applied,
                              char *errstr, size_t errstr_size);
/* Frees; an import neither finished nor failed is abandoned: p is purged
 * and its marker removed. */
void objlog_ckpt_import_destroy(objlog_ckpt_import *im);
const objlog_ckpt_progress *objlog_ckpt_import_progress(const objlog_ckpt_import *im);

/* ---- whole partitions ---- */

/* Deletes every row of p (layout above) and p's import marker. 0, or -1
 * with errstr. */
int objlog_ckpt_purge(objlog_store *s, const rangemap *rm, int32_t p,
                      char *errstr, size_t errstr_size);
/* Finishes the crash rule: purges every partition that has an import
 * marker, under the range map kept in it. The number purged, or -1 with
 * errstr. objlog_store_open calls it. */
int objlog_ckpt_recover(objlog_store *s, char *errstr, size_t errstr_size);
/* 1 while p has an import marker (an import runs, or crashed and the
 * store was not reopened), 0 none, -1 read error. */
int objlog_ckpt_importing(objlog_store *s, int32_t p);

/* ---- fetch (checkpoint_fetch.c, libcurl) ---- */

/* GETs base_url/v1/partitions/p/checkpoint and imports it into s (as
 * objlog_ckpt_import_new). Bounded: fails when the whole transfer takes
 * more than timeout_ms (0: 10 minutes) or no byte arrives for 30 s (a
 * stuck peer). progress (may be NULL) sees bytes, rows and the
 * Content-Length. 0 with *applied, or -1 with errstr (naming the URL and
 * what failed: the peer's error answer, a timeout, the import's check).
 * On -1 the store is as before when the stream's header was never
 * accepted (no answer, an error answer, another log's checkpoint), else p
 * holds no rows and no marker. cancel (may be NULL): once it is nonzero
 * the transfer stops within about a second and the fetch fails
 * ("cancelled"), so a stopping objlogd does not wait for a big copy.
 * headers (may be NULL): sent with the request (a peer's signature);
 * ca_file (may be NULL): the CAs an https:// peer's certificate is
 * checked against (NULL: the system's). */
struct curl_slist;
int objlog_ckpt_fetch(objlog_store *s, const rangemap *rm, const char *base_url,
                      const struct curl_slist *headers, const char *ca_file, int32_t p,
                      int timeout_ms,
                      objlog_ckpt_progress_fn progress,
                      void *opaque, const atomic_int *cancel, int64_t *applied,
                      char *errstr, size_t errstr_size);
/* The same for any import (objlog_ckpt_import_handoff_new's, say) from
 * url, which it then owns (destroyed, abandoned unless finished). */
int objlog_ckpt_fetch_into(objlog_ckpt_import *im, const char *url,
                           const struct curl_slist *headers, const char *ca_file,
                           int timeout_ms, objlog_ckpt_progress_fn progress, void *opaque,
                           const atomic_int *cancel, int64_t *applied, char *errstr,
                           size_t errstr_size);

#endif
