/* blobrefs.h: which rows name which blobs (blobrefs.c), and the
 * BlobReleased records of the change feed. Not public.
 *
 * The `blobs` CF holds one row per (blob id, referencing row):
 * enc(id) ‖ tag ‖ the referencing row's key, empty value. A version row
 * (tag 'v', its `versions` key) names meta.blob_id or its parts' blobs; a
 * part of an upload in progress (tag 'p', its `uploads` key) names its
 * blob. The row after the tag starts with the referencing key's route key,
 * so a row belongs to the partition that holds that key, and moves with
 * it in a handoff without being written again.
 *
 * A blob id is released in partition p when an event removes a row's
 * reference to it (a version deleted, replaced or expired, a part
 * replaced, an upload aborted, completed without it or dropped with its
 * bucket) and, once the event staged everything, no `blobs` row of a key
 * p holds names it. The decision reads only p's own rows (under p's own
 * map), so it is a function of p's log prefix, as every row is. A blob
 * named from several partitions (a copy into another bucket, equal bytes
 * in a content-addressed store) is released by each partition as its last
 * reference there goes; the blob store checks objlog_store_blob_referenced
 * before it frees one. */
#ifndef OBJLOG_BLOBREFS_H
#define OBJLOG_BLOBREFS_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "keycodec.h"
#include "objlog.pb-c.h"

#define BLOBREFS_VERSION 'v'
#define BLOBREFS_PART 'p'

/* One reference an event removed, until the event's end. */
typedef struct blobrefs_drop {
    char *id;
    uint8_t *key;         /* the object key whose row held it */
    size_t kn;
    char *version_id;     /* "" for a part */
    char *upload_id;      /* "" for a version */
} blobrefs_drop;

/* What one event knows of blob references: the ids of its key's current
 * version (read with the `objects` row, so deleting that version needs no
 * second read) and the references it removed. Zeroed; blobrefs_ev_free. */
typedef struct blobrefs_ev {
    char **cur;
    size_t ncur;
    blobrefs_drop *drops;
    size_t ndrops, cap;
} blobrefs_ev;

void blobrefs_ev_free(blobrefs_ev *e);
/* The current version's blob ids become m's (m NULL: none). 0 or -1
 * (out of memory). */
int blobrefs_note_current(blobrefs_ev *e, const Objlog__ObjectMeta *m);

/* Stages a `blobs` row for each distinct blob m names, referenced from
 * row (rn bytes) of kind tag. 0 or -1 (errstr). */
int blobrefs_add_meta(apply_batch *b, const Objlog__ObjectMeta *m, char tag, const uint8_t *row,
                      size_t rn, char *errstr, size_t es);
int blobrefs_add(apply_batch *b, const char *id, char tag, const uint8_t *row, size_t rn,
                 char *errstr, size_t es);

/* What a removed reference was: the key and version or upload. */
typedef struct blobrefs_from {
    const uint8_t *key;
    size_t kn;
    const char *version_id;
    const char *upload_id;
} blobrefs_from;

/* Deletes the `blobs` row of id from row and notes the drop. 0 or -1. */
int blobrefs_remove(apply_batch *b, blobrefs_ev *e, const char *id, char tag,
                    const uint8_t *row, size_t rn, const blobrefs_from *f, char *errstr,
                    size_t es);
/* The same for every distinct id of ids[0..n). */
int blobrefs_remove_ids(apply_batch *b, blobrefs_ev *e, char *const *ids, size_t n, char tag,
                        const uint8_t *row, size_t rn, const blobrefs_from *f, char *errstr,
                        size_t es);
/* The distinct non-empty blob ids m names (meta.blob_id, then its parts'),
 * appended to *ids (malloc'd strings). 0 or -1. */
int blobrefs_ids_of(const Objlog__ObjectMeta *m, char ***ids, size_t *n);
void blobrefs_ids_free(char **ids, size_t n);

/* The release context: the event, its bucket and who owns it. */
typedef struct blobrefs_event {
    int32_t p;
    int64_t off;
    uint32_t epoch;
    const char *bucket;
    int64_t log_time_ms;
    ProtobufCBinaryData request_id;
    const char *owner;
} blobrefs_event;

/* At the end of an OK event: a BlobReleased feed row for each id dropped
 * that no row of a key p holds still names, numbered from *next. 0 or
 * -1. */
int blobrefs_release(apply_batch *b, blobrefs_ev *e, const blobrefs_event *ev, uint16_t *next,
                     char *errstr, size_t es);

/* enc(id) ‖ tag ‖ row into k (initialised here). 0 or -1 (out of memory). */
int blobrefs_key(keybuf *k, const char *id, char tag, const uint8_t *row, size_t rn);
/* The referencing row's key inside `blobs` row k (*row, *rn), and the id
 * (appended to id when not NULL). 0, or -1 for a malformed row. */
int blobrefs_parse(const uint8_t *k, size_t kn, keybuf *id, const uint8_t **row, size_t *rn);

#endif
