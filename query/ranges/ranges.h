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
#include "objlog_logger.h"

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
#define RANGES_RELAY_SLOTS 64

typedef struct ranges_state {
    pthread_mutex_t run_mu;      /* one handoff at a time */
    int slot;                    /* server slot of the HTTP jobs */
    atomic_uint_fast64_t done[RANGES_KINDS][2]; /* [kind][0 ok, 1 failed] */
    atomic_uint_fast64_t imported;
    atomic_uint_fast64_t seconds_us, held_us, held_max_us;
    int test_pause_ms;           /* tests only: between RangeOut and RangeIn */
    /* Automatic splits (autosplit.c; the ranges thread's own): rate 0 off. */
    unsigned auto_rate;          /* events/s a partition must keep up */
    int auto_seconds;            /* ... for this many seconds in a row */
    int as_nparts;
    int64_t *as_prev;            /* applied offset at the last tick, -1 none */
    int *as_hot;                 /* consecutive seconds at or above the rate */
    int64_t *as_quiet_until;     /* no split before (monotonic ms) */
    int64_t *as_hot_from;        /* applied offset where the hot stretch began */
    int64_t as_prev_ms;
    atomic_uint_fast64_t auto_splits[2]; /* [0 ok, 1 failed] */
    int held_at_start;           /* the finisher's first handoff is held already */
    /* Markers the finisher saw pending, and since when (coordinator.c). */
    struct {
        int32_t p;
        int64_t off;
        double since;
    } pending[16];
    int npending;
    objlog_logger_limit finish_log; /* a handoff that cannot be finished, said */
    struct control_watch *watch; /* follows the control topic (rangesthread.c) */
    /* Relays of bucket settings sent lately (relay.c; the ranges thread's). */
    struct {
        int32_t p;
        uint64_t seq;
        int64_t at_ms;
        size_t len;
        uint8_t start[300];
    } relay[RANGES_RELAY_SLOTS];
    int relay_n;
    atomic_uint_fast64_t relays; /* BucketRelay events sent */
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
/* In a cluster one node runs every handoff, so that maps are made one
 * after another: the active node of this partition. */
#define RANGES_COORDINATOR_PARTITION 0
/* 1 when this node runs handoffs (always outside a cluster); else 0 with
 * url the node that does ("" none now). */
int ranges_coordinator(objlog_query *q, char *url, size_t n);

/* Finishes what a handoff left in the log (a RangeOut without its
 * RangeIn, a map applied but not published), when this node applies both
 * partitions; does nothing while a handoff runs here. The ranges thread
 * (the finisher) calls it every second, then ticks the automatic splits. */
void ranges_finish(objlog_query *q);
/* Before the node takes requests: the range of a RangeOut still waiting
 * for its RangeIn is held (this node's writes to it wait for the
 * finisher), or else a map the partitions reached but the control topic
 * did not is published. */
void ranges_finish_prepare(objlog_query *q);
/* rangesthread.c: the ranges thread (the finisher, then the automatic
 * splits, once a second): started once the service is built, stopped
 * before it is torn down. 0 or -1. */
int ranges_finisher_start(objlog_query *q);
void ranges_finisher_stop(objlog_query *q);

/* autosplit.c: automatic splits. ranges_autosplit_conf sets them up
 * (rate 0: off) before the ranges thread starts; the thread ticks them
 * once a second. 0, or -1 out of memory. */
int ranges_autosplit_conf(objlog_query *q, unsigned rate, int seconds);
void ranges_autosplit_tick(objlog_query *q, int64_t now_ms);

/* 1 if this node applies p (active) and has applied everything p's log
 * held a moment ago (a fresh end offset): a node still catching up (a
 * rebuild, a restart) must not take what it has not applied yet for
 * missing, nor two partitions seen at different points for a change. */
int ranges_caught_up(objlog_query *q, int32_t p);

/* DeleteBucket of a bucket with ranges on several partitions: answers
 * BucketNotEmpty when this view shows something in it, else merges its
 * ranges back (off the event loop) and then runs the request's route
 * again, so that its home partition decides it with every key. 1 taken
 * (answered or parked), 0 go on as usual (a re-run, a bucket held whole). */
int ranges_delete_spread(http_ctx *c, const char *bucket);

/* Relays of bucket settings (relay.c): for each range inside a bucket on
 * a partition other than its home whose copy of the settings is older
 * than the home's, a BucketRelay to it. The ranges thread's. */
void ranges_relay_tick(objlog_query *q);

/* rangeshttp.c: POST /v1/ranges/{split,move,merge} with a JSON body
 * {"bucket":B,"key":K,"to_partition":Q}; answered when the handoff is
 * complete, off the event loop. */
void ranges_post(http_ctx *c, ranges_kind kind);

#endif
