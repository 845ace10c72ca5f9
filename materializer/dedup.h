/* dedup.h: the `outcomes` column family as the state machine keeps it
 * (dedup.c): each event's outcome, the request ids that make a retry get
 * its first outcome (rule 1), and the trim that bounds both (rule 4).
 * Not public. */
#ifndef OBJLOG_DEDUP_H
#define OBJLOG_DEDUP_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "keycodec.h"
#include "objlog.pb-c.h"

#define MD5_LEN 16
/* "<32 hex>-<count up to 10000>" */
#define MULTIPART_ETAG_MAX (2 * MD5_LEN + 1 + 5 + 1)

/* What apply decided for one event: its Outcome row but for the event's
 * own fields (partition, offset, request id, log time). */
typedef struct apply_result {
    Objlog__OutcomeCode code;
    char message[256];
    char version_id[KEYCODEC_VERSION_ID_LEN];
    const char *etag;
    int delete_marker;
    char upload_id[KEYCODEC_VERSION_ID_LEN];
    char etag_buf[MULTIPART_ETAG_MAX]; /* etag computed by Complete */
    uint32_t imported;                 /* RangeIn: request records taken */
} apply_result;

/* Stages the outcome res of the event at (p, off) with route key route
 * (NULL: none) into its 'o' row, the first outcome of request rid (none
 * when empty). A WrongRange outcome names its request but is not its
 * record: the producer resends that request, same id, to the partition
 * that holds its key. 0, or -1 (errstr). */
int dedup_save_outcome(apply_batch *b, int32_t p, int64_t off, int64_t log_time_ms,
                       ProtobufCBinaryData rid, const keybuf *route, const apply_result *res,
                       char *errstr, size_t es);

/* A handoff's request records (handoff.c). At its RangeOut (p, off), the
 * source copies the first outcomes of the requests whose route keys lie
 * in [start, end) (end_n 0: to the end) into 'x' be32(p) be64(off) rid
 * rows, which the source's trim never touches; *n gets how many. At its
 * RangeIn (q, off), the target moves those rows of (from, from_off) to
 * its own 'i' be32(q) be64(off) rid rows, which its request-id index
 * holds with the RangeIn's offset: a retry of such a request gets its
 * first outcome from the target as it would have from the source, within
 * the same window (the record's log time) and, for the bound, counted
 * from the RangeIn. They go when the RangeIn's own outcome is trimmed.
 * 0, or -1 (errstr). */
int dedup_export_range(apply_batch *b, int32_t p, int64_t off, const uint8_t *start,
                       size_t start_n, const uint8_t *end, size_t end_n, uint32_t *n,
                       char *errstr, size_t es);
int dedup_import_range(apply_batch *b, int32_t q, int64_t off, int32_t from,
                       int64_t from_off, uint32_t *n, char *errstr, size_t es);
/* Rule 1: a request id decided within the window and the bound. 1 handled
 * (*code set, the first outcome copied to this offset), 0 new, -1 error. */
int dedup_retry(apply_batch *b, int32_t p, int64_t off, int64_t now,
                const Objlog__Event *ev, Objlog__OutcomeCode *code, char *errstr,
                size_t es);
/* Rule 4, after the event at (p, off, now) stored its outcome: drops the
 * partition's oldest outcomes that are out of the
 * window or the bound, oldest offset first, and records the oldest kept
 * offset in meta "olow". Depends only on the log, so replay is exact. */
int dedup_trim(apply_batch *b, int32_t p, int64_t off, int64_t now, char *errstr,
               size_t es);

#endif
