/* ranges.h: range handoffs run by this node (docs/ARCHITECTURE.md,
 * "Ranges move"): a split, a move or a merge of the range map, carried
 * out in log order by a RangeOut on the source partition and a RangeIn on
 * the target (coordinator.c), and POST /v1/ranges/{split,move,merge},
 * which run one off the event loop and answer when it is complete
 * (rangeshttp.c).
 *
 * Invariant: one handoff at a time per node; the map is published (control
 * topic, this node's readers and writers) only after the target applied
 * its RangeIn, and this node's writes into the moving range wait in the
 * producer from before the RangeOut until then, so none of them meets a
 * WrongRange. */
#ifndef OBJLOG_QUERY_RANGES_H
#define OBJLOG_QUERY_RANGES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "keycodec.h"

typedef struct objlog_query objlog_query;
typedef struct server server;
typedef struct http_ctx http_ctx;

typedef enum ranges_kind { RANGES_SPLIT = 0, RANGES_MOVE, RANGES_MERGE, RANGES_KINDS } ranges_kind;
const char *ranges_kind_name(ranges_kind k);

/* What a handoff is asked: the range holding bucket/key (key may be
 * empty: the bucket's first key), split there, moved, or merged into the
 * range before it; to: the target partition, -1 for the least loaded. */
typedef struct ranges_req {
    ranges_kind kind;
    char bucket[64];
    keybuf key;
    int to;
} ranges_req;

/* How it went: status 200, or an HTTP error with code and message. */
typedef struct ranges_result {
    int status;
    char code[40];
    char message[384];
    uint32_t epoch;              /* the new map's */
    int from, to;                /* partitions */
    int64_t out_offset, in_offset; /* the RangeOut's and RangeIn's, -1 none */
    uint32_t imported;           /* request records the target took */
    double seconds;              /* the whole handoff */
    double held_seconds;         /* how long this node's writes to the range waited */
} ranges_result;

/* The node's handoffs and their counters (/metrics). */
typedef struct ranges_state {
    pthread_mutex_t run_mu;      /* one handoff at a time */
    int slot;                    /* server slot of the HTTP jobs */
    atomic_uint_fast64_t done[RANGES_KINDS][2]; /* [kind][0 ok, 1 failed] */
    atomic_uint_fast64_t imported;
    atomic_uint_fast64_t seconds_us, held_us, held_max_us;
    int test_pause_ms;           /* tests only: between RangeOut and RangeIn */
    int held_at_start;           /* the finisher's first handoff is held already */
    pthread_t finisher;
    int finisher_on;
    atomic_int finisher_stop;
    /* The handoff under way (GET /v1/ranges shows its range "moving"). */
    pthread_mutex_t active_mu;
    int active;
    keybuf active_start;
} ranges_state;

ranges_state *ranges_new(server *s, char *errstr, size_t errstr_size);
void ranges_free(ranges_state *r);

/* 1 if the handoff under way moves keys of the range [s, e) (en 0: to
 * the end): its range starts there. */
int ranges_moving(ranges_state *r, const uint8_t *s, size_t sn, const uint8_t *e, size_t en);

/* coordinator.c: runs one handoff to the end (blocking: seconds). */
void ranges_run(objlog_query *q, const ranges_req *req, ranges_result *out);

/* Finishes what a handoff left in the log (a RangeOut without its
 * RangeIn, a map applied but not published), when this node applies both
 * partitions; does nothing while a handoff runs here. The finisher thread
 * calls it every second. */
void ranges_finish(objlog_query *q);
/* The finisher thread: started once the service runs, stopped before it
 * is torn down. 0 or -1. */
int ranges_finisher_start(objlog_query *q);
void ranges_finisher_stop(objlog_query *q);

/* rangeshttp.c: POST /v1/ranges/{split,move,merge} with a JSON body
 * {"bucket":B,"key":K,"to_partition":Q}; answered when the handoff is
 * complete, off the event loop. */
void ranges_post(http_ctx *c, ranges_kind kind);

#endif
