/* mixload.h: the mixed write workload of the fault tests (test_faults,
 * test_soak) and its exact end check.
 *
 * Writer threads, each of one kind and one channel, run until stopped:
 *   plain   PUT of a fresh key (lib: async calls, a window in flight)
 *   create  If-None-Match: * on a fresh key (must win), then again with a
 *           new request id (must lose, 412)
 *   delete  PUT of a fresh key, then an unconditional DELETE (a marker)
 *   cas     If-Match increments of a shared counter (its value is the
 *           version's size and user metadata "n"), one lib and one gateway
 *           writer per counter, re-reading after a 412 with a token read
 *           at its own newest write
 * Channels: lib = libobjlog_producer, ack=applied, *_sync (plain: async);
 * gw = the view's HTTP gateway, ack=applied, X-Objlog-Request-Id set by
 * the client so that a transport error is retryable too. Every bucket is
 * versioned, so a write applied twice shows as an extra version.
 *
 * Every write carries a request id the writer draws; a write that ends
 * UNKNOWN/FAILED (lib), 503 / 5xx / no answer (gw) is retried with the
 * SAME request id and arguments until it has a definite outcome, which is
 * how the contract says a client resolves it (docs/ARCHITECTURE.md,
 * "How a write flows"). A resolved write is classified: definite at once;
 * retry answered with the original outcome (the version id names an
 * earlier event than the retry's);
 * applied by the retry (the first attempt never applied); 412 on retry.
 *
 * mixload_check lists every version of every bucket and matches them to
 * the writes by etag (unique per logical write; its retries share it):
 * lost = an acknowledged write whose version is missing; duplicated = a
 * second version of one logical write (or an If-None-Match loser that
 * won); phantom = a version no acknowledged write made (a write told 412
 * that applied anyway). CAS counters must hold exactly the acknowledged
 * increments, as a gap-free chain. */
#ifndef OBJLOG_TEST_MIXLOAD_H
#define OBJLOG_TEST_MIXLOAD_H

#include <stdint.h>
#include <stdio.h>

typedef enum mix_kind { MIX_PLAIN, MIX_CREATE, MIX_DELETE, MIX_CAS, MIX_KINDS } mix_kind;
typedef enum mix_channel { MIX_LIB, MIX_GW, MIX_CHANNELS } mix_channel;

#define MIX_MAX_PHASES 16
#define MIX_MAX_COUNTERS 8

typedef struct mixload_conf {
    const char *boot;            /* Kafka bootstrap */
    const char *url;             /* the view: query.url and the gateway */
    int counters;                /* CAS counters, 1..MIX_MAX_COUNTERS */
    int lib_outcome_timeout_ms;  /* outcome.timeout.ms of the lib writers */
    int gw_timeout_ms;           /* timeout_ms of a gateway write */
    int plain_window;            /* async lib plain writes in flight */
    int pace_ms;                 /* pause between a sync writer's writes */
    int strong_reader;           /* 1: a thread doing strong reads (the default
                                    read-index fence) of every bucket in turn,
                                    as readers would during faults; counted,
                                    never asserted (a 503 is not a stale read) */
} mixload_conf;

typedef struct mixload mixload;

/* Per kind and channel. A logical write is one request id. */
typedef struct mix_counts {
    long attempted;              /* logical writes started */
    long acked;                  /* definite OK */
    long rejected;               /* definite 412 (expected: losers, CAS races) */
    long errors;                 /* any other definite answer: a failure */
    long unknown_events;         /* UNKNOWN/FAILED/503/5xx/no answer, all attempts */
    long unknown_writes;         /* writes that saw at least one */
    long res_original;           /* ...resolved: the retry returned the first outcome */
    long res_retry_applied;      /* ...resolved: the first attempt never applied */
    long res_retry_rejected;     /* ...resolved: 412 on the retry */
    long unresolved;             /* no definite outcome at the end: a failure */
    long max_call_ms;            /* longest single call / HTTP request */
} mix_counts;

typedef struct mix_phase_stats {
    char name[48];
    long completed;              /* definite outcomes in the phase */
    long acked;
    long unknown_events;
    long max_first_ms;           /* longest acked write answered at its 1st attempt */
    long max_total_ms;           /* longest acked write, retries included */
} mix_phase_stats;

typedef struct mixload_report {
    mix_counts c[MIX_KINDS][MIX_CHANNELS];
    mix_phase_stats phase[MIX_MAX_PHASES];
    int phases;
    long versions_seen;          /* versions + markers listed */
    long lost, duplicated, phantom, wrong;
    long cas_acked[MIX_MAX_COUNTERS];
    long cas_value[MIX_MAX_COUNTERS]; /* the counter's final value (GET) */
    long cas_chain_breaks;       /* consecutive versions not differing by 1 */
    long gw_transport_errors, gw_503, gw_other_5xx;
    long read_503;               /* reads (CAS, end check) answered 503, retried */
    char read_503_first[256];
    long strong_ok, strong_503, strong_other; /* the strong reader's answers */
    long strong_503_streak_ms;   /* longest run of 503s for one bucket */
    char strong_503_first[256], strong_503_last[256];
    char first_problem[512];
} mixload_report;

/* Creates the buckets and counters through the library (ack=applied,
 * retried with their request ids). NULL with why. */
mixload *mixload_new(const mixload_conf *conf, char *why, size_t why_size);
/* Starts every writer thread. 0 or -1. */
int mixload_start(mixload *m);
/* Names the current phase (a fault); writes completing from now on count
 * toward it. phase < MIX_MAX_PHASES. */
void mixload_phase(mixload *m, int phase, const char *name);
/* Live totals over all writers, for progress lines. */
void mixload_totals(mixload *m, long *attempted, long *acked, long *unknown_events);
/* Partition of counter k's key (for picking a busy partition's leader). */
int mixload_counter_partition(const mixload *m, int k);
/* Partition of the newest acknowledged write of a kind (a bucket lives in
 * one key range, so in one partition unless split); -1 before any. */
int mixload_kind_partition(mixload *m, mix_kind k);
/* Reads the writers and the check retried after a 503; first keeps the
 * first such answer. */
long mixload_read_503(mixload *m, char *first, size_t first_size);
/* Stops the writers after their current write; each keeps retrying an
 * unresolved write for up to resolve_ms more. Joins them. */
void mixload_stop(mixload *m, int resolve_ms);
/* The exact end check against the view at url. Precondition: the writers
 * are stopped and the view has applied the log end (viewproc_wait_applied),
 * so its reads with consistency=eventual are the whole log's state.
 * Fills r; 0 when nothing is lost, duplicated, phantom, wrong, erroneous
 * or unresolved and every counter is exact, else -1 (r->first_problem). */
int mixload_check(mixload *m, const char *url, mixload_report *r);
/* Human-readable tables of r. */
void mixload_print(const mixload_report *r, FILE *f);
/* One-line totals: attempted/acked over everything, etc. */
void mixload_sum(const mixload_report *r, mix_counts *total);
void mixload_destroy(mixload *m);

const char *mix_kind_name(mix_kind k);
const char *mix_channel_name(mix_channel c);

#endif
