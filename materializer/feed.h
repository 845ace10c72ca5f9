/* feed.h: the change feed as the state machine stages it (feed.c). An
 * applied change that a bucket's notification configuration matches
 * becomes a FeedRecord row in the same batch as the change, so the feed is
 * a function of the log prefix like every other row: a replica or a
 * replay has the same rows, a crash loses none, and the notifier
 * (query/notify) only reads them. Rows live as long as the partition's
 * outcomes (the dedup window and bound), trimmed in 1,024-offset steps. Not
 * public. */
#ifndef OBJLOG_FEED_H
#define OBJLOG_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "objlog.pb-c.h"

/* 'n' be32(p) be64(off) be16(i): the i-th record of the event at (p, off). */
#define FEED_KEY_LEN 15
/* Offsets trimmed at once (a power of two): feed rows go when the
 * partition's oldest kept outcome crosses a multiple of it. */
#define FEED_TRIM_STEP 1024
/* "EEEEEEEEPPPPPPPPOOOOOOOOOOOO": the partition's range map epoch, the
 * partition and the offset, upper-case hex, fixed width. */
#define FEED_SEQUENCER_LEN 28

void feed_key(uint8_t out[FEED_KEY_LEN], int32_t p, int64_t off, uint16_t i);
/* The sequencer of the event at (p, off) applied under map epoch. Within
 * a partition it follows the offset; a key whose range moves to another
 * partition gets a higher epoch there, so string order is a key's log
 * order everywhere. out holds FEED_SEQUENCER_LEN + 1. */
void feed_sequencer(char *out, uint32_t epoch, int32_t p, int64_t off);

/* The configurations in force for one key operation: the bucket record
 * the key gate loaded, kept (or borrowed from the indexes, which may have
 * kept it first) while it has configurations. */
typedef struct feed_bucket {
    Objlog__BucketRecord *owned;
    const Objlog__BucketRecord *br;
} feed_bucket;

/* Keeps *br (taking it, *br = NULL) when it has configurations; else, when
 * *br was already taken, borrows `taken` (the indexes' copy of the same
 * record) if that has them. */
void feed_bucket_keep(feed_bucket *fb, Objlog__BucketRecord **br,
                      const Objlog__BucketRecord *taken);
void feed_bucket_done(feed_bucket *fb);

/* One applied change, as a record describes it. */
typedef struct feed_change {
    const char *event_name;      /* S3's without "s3:": "ObjectCreated:Put" */
    const char *bucket;
    const uint8_t *key;
    size_t key_len;
    uint64_t size;
    const char *etag;
    const char *version_id;      /* "" in an unversioned bucket */
    int64_t log_time_ms;
    ProtobufCBinaryData request_id;
    const char *owner;
} feed_change;

/* Stages one row per configuration of fb that matches ch, numbered from
 * *next (advanced). 0, or -1 with errstr. */
int feed_stage(apply_batch *b, int32_t p, int64_t off, uint32_t epoch, const feed_bucket *fb,
               const feed_change *ch, uint16_t *next, char *errstr, size_t es);

/* Stages r as the i-th record of the event at (p, off). 0 or -1. */
int feed_stage_record(apply_batch *b, int32_t p, int64_t off, uint16_t i,
                      const Objlog__FeedRecord *r, char *errstr, size_t es);

/* After the partition's oldest kept outcome moved from old_low to new_low:
 * when that crossed a multiple of FEED_TRIM_STEP, deletes p's feed rows
 * below the last multiple crossed. 0 or -1. */
int feed_trim(apply_batch *b, int32_t p, int64_t old_low, int64_t new_low, char *errstr,
              size_t es);

/* The offset below which p's feed rows are trimmed, given its oldest kept
 * outcome (meta "olow"): what the notifier can no longer deliver. */
int64_t feed_trimmed_below(int64_t olow);

#endif
