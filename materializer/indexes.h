/* indexes.h: attribute indexes inside the state machine.
 * Internal to the materializer; the row layout is in materializer.h.
 *
 * apply.c calls these:
 *   - indexes_op for PutIndex / DropIndex / BuildIndex (bucket ops);
 *   - indexes_key_keep / _begin / _staged / _end around every key op, so
 *     that the `indexes` rows change in the same batch as the key's
 *     `objects` row. apply.c hands over the rows it reads and stages
 *     anyway (the row before, each row it stages), so an index costs a key
 *     op no read of its own;
 *   - indexes_key_done when the event is decided;
 *   - indexes_stage just before the batch is written (apply_batch_wb).
 * Like apply.c, everything here reads only the event, the store as of the
 * log prefix (through the batch) and the bucket record: replay rebuilds the
 * same rows whatever the batch boundaries. */
#ifndef OBJLOG_MATERIALIZER_INDEXES_H
#define OBJLOG_MATERIALIZER_INDEXES_H

#include "batch.h"
#include "statrows.h"

#define INDEXES_BUILD_DEFAULT 1000   /* keys per BuildIndex with max_keys 0 */
#define INDEXES_BUILD_MAX 10000

/* What a key op needs: the bucket's record when it has any index, the
 * key's `objects` row before the op and the last one the op staged. */
typedef struct indexes_key {
    Objlog__BucketRecord *br;   /* owned; NULL: the bucket has no index */
    char *old;                  /* the `objects` row before (rocksdb_free) */
    size_t old_len;
    uint8_t *now;               /* the row staged last (free); NULL: deleted */
    size_t now_len;
    int staged;                 /* the op staged the `objects` row */
} indexes_key;

/* Takes *br (setting it NULL) when the bucket has indexes. */
void indexes_key_keep(indexes_key *ik, Objlog__BucketRecord **br);
/* 1 when the key op must hand its `objects` rows over (the bucket has an
 * index): apply.c reads the row before even when it keeps no stats. */
int indexes_key_wants(const indexes_key *ik);
/* Before the op stages anything: old (NULL: none) is the key's `objects`
 * row as the batch sees it, from apply_batch_get; taken over either way. */
void indexes_key_begin(indexes_key *ik, char *old, size_t old_len);
/* Each time the op stages the key's `objects` row: row (malloc'd, taken
 * over either way) is the value put, NULL for a delete. */
void indexes_key_staged(indexes_key *ik, uint8_t *row, size_t n);
/* After the op: moves the key's entries and counters from the row before
 * to the row staged last (nothing when the op staged none). 0 or -1. */
int indexes_key_end(apply_batch *b, indexes_key *ik, const char *bucket,
                    ProtobufCBinaryData key, char *errstr, size_t es);
void indexes_key_done(indexes_key *ik);

/* The batch's 'c' (counter) rows live in a statrows table until the batch
 * is written (a value's row changes with every key op of the batch that
 * touches the value): u.objects is the count, u.bytes the byte sum, every
 * other field 0. Stages each changed row into the batch (the write is
 * next). Cannot fail. */
void indexes_stage(apply_batch *b, statrows *counts);

/* Decides PutIndex / DropIndex / BuildIndex on the bucket's record br and
 * stages their rows. *code/msg get the outcome (left alone when OK).
 * 1: OK and br changed (the caller saves it), 0: no change to save (OK or
 * rejected), -1 storage error (errstr). */
int indexes_op(apply_batch *b, const Objlog__Event *ev, uint64_t seq,
               Objlog__BucketRecord *br, Objlog__OutcomeCode *code, char *msg,
               size_t msg_size, char *errstr, size_t es);

#endif
