/* bench_int.h: internals of `objlog bench`, shared by its files: the bench
 * struct one run keeps, and the helpers the modes reuse: the objlogd
 * processes (bench_daemon.c), the produce / wait / GET phases
 * (bench_phase.c), the views the bench starts on its log (bench_view.c).
 * Not installed; every includer defines _GNU_SOURCE first. The modes'
 * entry points are here too, for bench_main (bench.c): bench_e2e.c,
 * bench_modes.c, bench_list.c, bench_stats.c, bench_ranges.c, bench_apply.c (its RocksDB
 * baselines in bench_apply_rocks.c, bench_apply.h); cleanup in
 * bench_clean.c; --conditional has its own header (bench_cond.h).
 * Invariant: one bench a process; b->lock guards the fields the producer
 * callback and the worker threads share (a GET thread writes only its own
 * slice of lat_ms). */
#ifndef OBJLOG_BENCH_INT_H
#define OBJLOG_BENCH_INT_H

#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench_cond.h"
#include "cli.h"
#include "objlog_producer.h"

#define BENCH_MAX_PARTS 1024
/* --stats: puts per bucket. A bucket's events share one partition (the
 * range map routes by bucket hash), the embedded log keeps ~5 MB per
 * partition (~30,000 such events), and a replay needs the log whole. */
#define STATS_PER_BUCKET 20000
#define STATS_DEFAULT_PARTS 8    /* objlogd's default --partitions */
#define STATS_ROUNDS_MAX 16
#define BENCH_WAIT_MS 120000

typedef struct bench {
    const char *url;
    const char *brokers;
    char url_buf[128];
    char brokers_buf[512];
    int count, threads, gets, json;
    const char *consistency;
    /* our own objlogd, if we started one */
    pid_t daemon;
    int daemon_out;
    char tmpdir[64];
    char bucket[64];
    objlog_producer *p;
    pthread_mutex_t lock;
    int64_t last_offset[BENCH_MAX_PARTS];
    long done, failed;
    char first_error[256];
    double *lat_ms;              /* one per GET */
    long get_errors;
    char last_token[64];         /* of the latest completed write */
    int partitions;              /* our objlogd's --partitions; 0: default */
    /* --list */
    int list, list_requests, list_fresh;
    long list_keys, list_deleted, list_live, list_versions, list_queued;
    /* --conditional: bench_cond.c */
    int conditional;
    /* --consistency-modes */
    int modes, write_rate;
    int bg_stop;                 /* set under lock to end the writer */
    long bg_writes;
    bench_cond_args cond;
    /* --stats */
    int stats, rounds;
    int stats_nbuckets;          /* one per partition, <= STATS_PER_BUCKET puts */
    char (*stats_buckets)[64];
    void *sread;                 /* the stats_read the GET threads share */
    /* --apply */
    int apply, apply_buckets;
    int apply_threads;           /* --apply-threads: objlogd's; 0 its default */
    int lifecycle;               /* --lifecycle: bench_lifecycle.c */
    int notify;                  /* --notify: bench_notify.c */
    int rates_given, seconds_given; /* --rates, --seconds on the command line */
    /* --checkpoint: bench_ckpt.c (in this process, no objlogd) */
    int ckpt;
    int indexes;                 /* --indexes: bench_index.c */
    int ranges, ranges_round;    /* --ranges: bench_ranges.c; the round it writes */
    int ranges_mode;             /* ... its buckets or one bucket's keys */
    char ranges_bucket[32];      /* ... that one bucket */
    /* --s3: bench_s3.c (our objlogd's S3 listener) */
    int s3, s3_heads;
    int s3_bytes;                /* --s3-bytes: bench_s3bytes.c */
    char s3_url[128];
    /* --s3-forward A,B: two nodes' S3 listeners (bench_s3bytes.c) */
    char s3_fwd[2][128];
    void *apply_run;             /* the apply_run its producer threads share */
    /* With --url the buckets this run created, removed at the end unless
     * --keep (bench_clean). Only buckets whose creation was confirmed are
     * listed, so a name that collided with someone else's is never ours. */
    int keep;
    char (*created)[64];
    int n_created;
    void *clean;                 /* the clean_batch the delete threads share */
} bench;

typedef struct bench_thread {
    bench *b;
    int index;
    pthread_t th;
} bench_thread;

/* Set by SIGINT while a bench against someone else's objlogd runs; every
 * loop that issues writes or requests checks it. */
extern volatile sig_atomic_t bench_interrupted;

int64_t bench_mono_us(void);

/* ---- processes (bench_daemon.c) ---- */

/* Where objlogd is: next to this objlog in the build tree, else PATH. */
void bench_objlogd_path(char *out, size_t n);
/* nftw callback: removes every entry (FTW_DEPTH). */
int bench_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw);
/* SIGTERM, then SIGKILL after 10 s; reaps the child. */
void bench_child_stop(pid_t pid);
/* Reads OBJLOG_* lines of fd until OBJLOG_READY: the listen URL (and the
 * bootstrap servers when the daemon holds the log). -1 after 60 s, at EOF
 * or once bench_interrupted. */
int bench_ready_lines(int fd, char *url, size_t un, char *brokers, size_t bn);
/* The same, also the S3 listener's URL (OBJLOG_S3_LISTEN) into s3. */
int bench_ready_lines_s3(int fd, char *url, size_t un, char *brokers, size_t bn, char *s3,
                         size_t sn);
/* Starts the bench's own objlogd (embedded log, S3 listener beside it) in
 * a temp dir: b->url and b->brokers point at it. 0, or -1 (said on stderr,
 * with the tail of its log); bench_daemon_stop either way. */
int bench_daemon_start(bench *b);
/* Stops our objlogd, if any, and removes its temp dir. A no-op after. */
void bench_daemon_stop(bench *b);

/* ---- views of the bench's log (bench_view.c) ---- */

/* A second objlogd the bench started: `objlogd --brokers b->brokers` on an
 * empty --data under dir, listening on url. */
typedef struct bench_view {
    pid_t pid;
    int out;                     /* its stdout (OBJLOG_* lines) */
    char dir[64];
    char url[128];
} bench_view;

/* Starts a view of b->brokers' log with the extra objlogd options (NULL-
 * ended, at most 8; NULL: none) and waits until it is ready. 0, or -1
 * (said on stderr); call bench_view_stop either way. */
int bench_view_start(bench *b, const char *const *extra, bench_view *v);
/* Stops the view's process group (SIGTERM, then SIGKILL after 10 s),
 * reaps the view and removes its dir. A no-op once stopped. */
void bench_view_stop(bench_view *v);
/* The last lines of the view's log, on stderr. */
void bench_view_log_tail(const bench_view *v);
/* Sum over partitions of "applied" (or "end") in GET url/v1/lag; -1 on
 * error or when a partition stopped (the view says why in its log). */
long bench_lag_sum(CURL *h, const char *url, const char *field);

/* ---- phases (bench_phase.c) ---- */

/* Producer callback (opaque: the bench): last offset per partition, first
 * error, last token. */
void bench_cb(const objlog_write_result *r, void *opaque);
void bench_key(int i, char *out, size_t n);
/* bench_thread fn: its share of b->count puts into b->bucket. */
void *bench_produce_main(void *arg);
/* Runs fn on n threads (bench_thread.index 0..n-1) and joins them. */
int bench_run_n_threads(bench *b, int n, void *(*fn)(void *));
int bench_run_threads(bench *b, void *(*fn)(void *));
int bench_producer_open(bench *b);
/* Remembers a bucket this run made, for bench_clean. 0, or -1 on memory. */
int bench_created(bench *b, const char *bucket);
int bench_create_bucket_named(bench *b, CURL *h, const char *bucket);
/* A new bench-PID-TIME bucket, its name in b->bucket. */
int bench_create_bucket(bench *b, CURL *h);
/* Waits until the last offset of every partition is applied. 0; -1 on
 * failure; -2 when the view stopped a partition (the log dropped events
 * before it applied them, say): said on stderr either way. */
int bench_wait_applied(bench *b, CURL *h);
/* Flushes the producer and waits until everything produced so far is
 * applied: 0; -1 after failed writes or as bench_wait_applied (-2 too),
 * said on stderr. */
int bench_settle(bench *b, CURL *h);
/* bench_thread fn: its share of b->gets GETs at b->consistency, latencies
 * into b->lat_ms. */
void *bench_get_main(void *arg);
int bench_cmp_double(const void *a, const void *b);
double bench_percentile(const double *sorted, long n, double q);
double bench_rate(long n, double s);

/* ---- the modes, for bench_main; each returns a CLI exit code ---- */

int bench_e2e_run(bench *b);   /* no mode flag: bench_e2e.c */
int bench_modes_run(bench *b); /* --consistency-modes: bench_modes.c */
int bench_list_run(bench *b);  /* --list: bench_list.c */
int bench_stats_run(bench *b); /* --stats: bench_stats.c */
int bench_lifecycle_run(bench *b); /* --lifecycle: bench_lifecycle.c */
int bench_notify_run(bench *b); /* --notify: bench_notify.c */
int bench_apply_run(bench *b); /* --apply: bench_apply.c */
int bench_ckpt_run(bench *b);  /* --checkpoint: bench_ckpt.c */
int bench_index_run(bench *b); /* --indexes: bench_index.c */
int bench_s3_run(bench *b);    /* --s3: bench_s3.c */
int bench_s3bytes_run(bench *b);
int bench_s3forward_run(bench *b); /* --s3-bytes: bench_s3bytes.c */
int bench_ranges_run(bench *b); /* --ranges: bench_ranges.c */
/* --indexes, part (c): over HTTP against b->url (bench_index_http.c). 0/-1. */
int bench_index_http_run(bench *b);
/* --apply against our own embedded log: 0 when the run fits in it (~5 MB
 * a partition), else -1 with why. */
int bench_apply_check(const bench *b, char *why, size_t n);
/* Removes every bucket b->created names, with what is in it, and says so
 * in one line: bench_clean.c. */
int bench_clean(bench *b);

#endif
