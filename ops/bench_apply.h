/* bench_apply.h: what `objlog bench --apply` (bench_apply.c) hands its
 * RocksDB baselines (bench_apply_rocks.c): the PUT events of the run, as
 * the live phase produced them, and the figures a baseline measures. Not
 * installed; includers define _GNU_SOURCE first.
 * Invariant: event i of a run is the PUT of key bench_key(i) into bucket
 * i % nbuckets, size i, etag "etag-<i>", content type
 * application/octet-stream, wherever it is written (log or store). */
#ifndef OBJLOG_BENCH_APPLY_H
#define OBJLOG_BENCH_APPLY_H

#include <stddef.h>

#define BENCH_APPLY_BATCH 1000       /* events per batch, as objlogd's batch_max */
#define BENCH_APPLY_CONTENT_TYPE "application/octet-stream"

/* The run's events: bucket j lives on partition part[j]. */
typedef struct bench_apply_load {
    long count;
    int nbuckets;
    char (*buckets)[64];
    const int *part;
    int nparts;
    int progress;                /* 1: a progress line on stderr every 2 s */
    int threads;                 /* rocksdb-raw's writers, as the views' apply threads */
} bench_apply_load;

/* What one baseline did and how long its RocksDB calls took. */
typedef struct bench_apply_rocks_fig {
    double seconds;
    long reads, puts;            /* RocksDB calls in the timed batches */
    size_t block_cache_bytes, memtable_bytes;   /* the store's budget */
} bench_apply_rocks_fig;

/* Writes l's events into a fresh objlog store in a temp dir (removed
 * after), WAL off as objlogd writes its views by default: with pattern 0
 * the two rows of each PUT in WriteBatches, each batch split by partition
 * over l->threads writers (partition p on writer p % threads, as objlogd's
 * apply threads own them); with 1 every read and write apply.c makes for
 * it in WriteBatchWithIndexes, on one thread. 0, or -1 with errstr. */
int bench_apply_rocks(const bench_apply_load *l, int pattern, bench_apply_rocks_fig *f,
                      char *errstr, size_t errstr_size);

#endif
