/* indexes.h: attribute indexes inside the state machine (issue 15 item 2).
 * Internal to the materializer; the row layout is in materializer.h.
 *
 * apply.c calls three things:
 *   - indexes_op for PutIndex / DropIndex / BuildIndex (bucket ops);
 *   - indexes_key_keep / _begin / _end around every key op, so that the
 *     `indexes` rows change in the same batch as the key's `objects` row;
 *   - indexes_key_done when the event is decided.
 * Like apply.c, everything here reads only the event, the store as of the
 * log prefix (through the batch) and the bucket record: replay rebuilds the
 * same rows whatever the batch boundaries. */
#ifndef OBJLOG_MATERIALIZER_INDEXES_H
#define OBJLOG_MATERIALIZER_INDEXES_H

#include "apply.h"

#define INDEXES_BUILD_DEFAULT 1000   /* keys per BuildIndex with max_keys 0 */
#define INDEXES_BUILD_MAX 10000

/* What a key op needs: the bucket's record when it has any index, and the
 * key's `objects` row before the op. */
typedef struct indexes_key {
    Objlog__BucketRecord *br;   /* owned; NULL: the bucket has no index */
    char *old;                  /* the `objects` row before (rocksdb_free) */
    size_t old_len;
} indexes_key;

/* Takes *br (setting it NULL) when the bucket has indexes. */
void indexes_key_keep(indexes_key *ik, Objlog__BucketRecord **br);
/* Before the op stages anything. 0 or -1 (errstr). */
int indexes_key_begin(apply_batch *b, indexes_key *ik, const keybuf *route,
                      char *errstr, size_t es);
/* After the op changed the key's `objects` row: moves the key's entries and
 * counters from the old row's values to the new row's. 0 or -1. */
int indexes_key_end(apply_batch *b, indexes_key *ik, const char *bucket,
                    const keybuf *route, ProtobufCBinaryData key, char *errstr,
                    size_t es);
void indexes_key_done(indexes_key *ik);

/* Decides PutIndex / DropIndex / BuildIndex on the bucket's record br and
 * stages their rows. *code/msg get the outcome (left alone when OK).
 * 1: OK and br changed (the caller saves it), 0: no change to save (OK or
 * rejected), -1 storage error (errstr). */
int indexes_op(apply_batch *b, const Objlog__Event *ev, uint64_t seq,
               Objlog__BucketRecord *br, Objlog__OutcomeCode *code, char *msg,
               size_t msg_size, char *errstr, size_t es);

#endif
