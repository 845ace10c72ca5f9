/* store.c: the RocksDB instance behind every view (materializer.h). Owns
 * opening the database with its seven column families, the point reads
 * other components need (applied offsets, outcomes, the oldest kept
 * outcome) and the logical dump that replay-determinism tests compare;
 * objlog_store_open (storeopen.c) adds what must hold before anyone reads
 * a store. Invariant: the store is written only through one WriteBatch
 * per consumed batch (apply.c, materializer.c); everything here only
 * reads, so any thread may call it.
 *
 * Durability: a view is a cache of the log. By default view batches skip
 * the WAL and every flush is atomic across the column families (RocksDB's
 * atomic_flush), so the effects of a batch and the applied offsets it
 * carries always reach disk together; a crash of the process or the
 * machine loses the newest batches, effects and offsets alike, and the
 * view re-applies them from the log, which is exact (docs/ARCHITECTURE.md,
 * "Views are caches of the log"). A flusher thread bounds how long a write
 * stays in memory only (conf flush_interval_ms) and is the only thing that
 * starts a flush: RocksDB 7.8 aborts (an assertion Debian's build keeps)
 * when two atomic flushes with different reasons overlap (fixed in 8.0,
 * facebook/rocksdb#11111), so its own triggers (a full memtable, the
 * memory budget) are set out of reach and the flusher flushes once the
 * view writes since the last flush reach a quarter of the budget, every
 * flush with one reason. With conf wal on, batches go through the WAL
 * unsynced as before, without atomic flush: a process crash loses
 * nothing. Writes of rows that are not the log's never take the view's
 * path.
 *
 * A full disk: a failed write leaves RocksDB's background error standing
 * and writes stopped until its own recovery clears it (stall.h says how
 * the materializer waits for that); RocksDB's info log is kept to FATAL
 * lines so that it never writes to the full disk (see store_set_logging). */
#include "store.h"

#include "rows.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct objlog_store {
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_cache_t *cache;      /* shared by every column family */
    rocksdb_block_based_table_options_t *table;
    rocksdb_readoptions_t *ro;
    rocksdb_column_family_handle_t *deflt;
    rocksdb_column_family_handle_t *cf[OBJLOG_CF_COUNT];
    char *dir;
    matlog log;
    /* Durability (see the top): the view batches' write options, and the
     * flusher thread (with the WAL off, the only trigger of a flush). */
    int wal;
    int flush_interval_ms;     /* -1: no timer */
    size_t memtable_budget;    /* WAL off: flush when the bytes written
                                  since the last flush reach a quarter */
    atomic_size_t unflushed_bytes;
    /* WAL off: a flush failed (a full disk) and none has succeeded since.
     * View writes are refused meanwhile (with flush_err, under fmu): with
     * no WAL the disk is touched only by flushes, and a view that went on
     * applying into memory would hide the full disk until memory ran out. */
    atomic_int flush_failed;
    char flush_err[256];
    rocksdb_writeoptions_t *view_wo;
    atomic_int unflushed;
    atomic_uint_fast64_t flushes, flush_errors;
    pthread_mutex_t fmu;
    pthread_cond_t fcv;
    int flusher_started, flusher_stop;
    pthread_t flusher;
    /* Bumped whenever `outcomes` rows change other than through a batch
     * (a checkpoint import or purge): the batches' request-id indexes,
     * caches of those rows, reload when it moves. */
    atomic_uint_fast64_t outcomes_gen;
};

static const char *const store_cf_names[OBJLOG_CF_COUNT] = {
    "versions", "objects", "buckets", "uploads", "stats", "outcomes", "meta",
    "indexes", "blobs",
};

uint64_t objlog_store_outcomes_gen(objlog_store *s) { return atomic_load(&s->outcomes_gen); }

void objlog_store_outcomes_changed(objlog_store *s) { atomic_fetch_add(&s->outcomes_gen, 1); }

const char *objlog_cf_name(objlog_cf cf) {
    if ((int)cf < 0 || cf >= OBJLOG_CF_COUNT)
        return NULL;
    return store_cf_names[cf];
}

static void store_free_options(objlog_store *s) {
    if (s->view_wo)
        rocksdb_writeoptions_destroy(s->view_wo);
    if (s->ro)
        rocksdb_readoptions_destroy(s->ro);
    if (s->opts)
        rocksdb_options_destroy(s->opts);
    if (s->table)
        rocksdb_block_based_options_destroy(s->table);
    if (s->cache)
        rocksdb_cache_destroy(s->cache);
}

/* Every column family gets these options: the shared cache, and memtables
 * of a quarter of the budget each (so that the budget, not a single
 * column family, decides when to flush). */
static void store_set_memory(objlog_store *s, const objlog_store_conf *conf) {
    size_t cache = conf && conf->block_cache_bytes ? conf->block_cache_bytes
                                                   : OBJLOG_STORE_BLOCK_CACHE_DEFAULT;
    size_t mem = conf && conf->memtable_bytes ? conf->memtable_bytes
                                              : OBJLOG_STORE_MEMTABLE_DEFAULT;
    s->cache = rocksdb_cache_create_lru(cache);
    s->table = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(s->table, s->cache);
    /* Most point reads apply makes are of keys that do not exist yet (a
     * new request id, a new key's header and `objects` row): whole-key
     * bloom filters answer those without searching the memtables' skip
     * lists or reading SST blocks. 10 bits a key: ~1% false positives,
     * about 1.25 bytes a row in SSTs, 1/32 of each memtable. */
    rocksdb_block_based_options_set_filter_policy(s->table,
                                                  rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_block_based_options_set_whole_key_filtering(s->table, 1);
    rocksdb_options_set_memtable_whole_key_filtering(s->opts, 1);
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(s->opts, 1.0 / 32);
    rocksdb_options_set_block_based_table_factory(s->opts, s->table);
    rocksdb_options_set_db_write_buffer_size(s->opts, mem);
    rocksdb_options_set_write_buffer_size(s->opts, mem / 4 > (1 << 20) ? mem / 4 : 1 << 20);
    rocksdb_options_set_max_write_buffer_number(s->opts, 2);
}

/* RocksDB's info log (LOG in the data dir) kills the process on a full
 * disk: once one line fails to append, the next one trips an assert in
 * RocksDB 7.8's file writer (`sync_without_flush_called_`, compiled into
 * Debian's librocksdb), and a stalled store logs its recovery attempts
 * every 5 s. Only FATAL lines are logged (and the header at open): the
 * store's errors reach objlog's own log instead (stall.c). */
#define STORE_INFO_LOG_FATAL 4 /* rocksdb::InfoLogLevel::FATAL_LEVEL */
static void store_set_logging(objlog_store *s) {
    rocksdb_options_set_info_log_level(s->opts, STORE_INFO_LOG_FATAL);
}

/* Atomic flush keeps the column families of one batch together on disk
 * (without it each flushes alone and a crash could keep a batch's offset
 * without its rows, or the reverse); view batches skip the WAL unless
 * conf asks for it. */
static void store_set_durability(objlog_store *s, const objlog_store_conf *conf) {
    s->wal = conf && conf->wal == OBJLOG_STORE_WAL_ON;
    int iv = conf ? conf->flush_interval_ms : 0;
    s->flush_interval_ms = iv == 0 ? OBJLOG_STORE_FLUSH_INTERVAL_DEFAULT_MS : iv < 0 ? -1 : iv;
    s->memtable_budget = conf && conf->memtable_bytes ? conf->memtable_bytes
                                                      : OBJLOG_STORE_MEMTABLE_DEFAULT;
    s->view_wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(s->view_wo, !s->wal);
    if (s->wal)
        return;
    rocksdb_options_set_atomic_flush(s->opts, 1);
    /* The flusher alone flushes (see the top): no budget of RocksDB's
     * own, and a memtable as large as the whole budget, which the
     * flusher's quarter keeps out of reach (a memtable holds its rows and
     * ~50% of skip-list and arena overhead). The memtable bloom filter is
     * sized from the memtable: 1/128 of it, the same bytes as 1/32 of a
     * quarter (store_set_memory). */
    size_t mem = s->memtable_budget > (1 << 20) ? s->memtable_budget : 1 << 20;
    rocksdb_options_set_db_write_buffer_size(s->opts, 0);
    rocksdb_options_set_write_buffer_size(s->opts, mem);
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(s->opts, 1.0 / 128);
}

/* ---- flushing ---- */

/* The last flush's error while flush_failed. 1 set, 0 none. */
static int store_flush_failure(objlog_store *s, char *errstr, size_t errstr_size) {
    if (!atomic_load(&s->flush_failed))
        return 0;
    pthread_mutex_lock(&s->fmu);
    snprintf(errstr, errstr_size, "%s", s->flush_err);
    pthread_mutex_unlock(&s->fmu);
    return 1;
}

int objlog_store_write_view(objlog_store *s, rocksdb_writebatch_t *wb, char *errstr,
                            size_t errstr_size) {
    if (store_flush_failure(s, errstr, errstr_size))
        return -1;
    char *err = NULL;
    rocksdb_write(s->db, s->view_wo, wb, &err);
    if (err) {
        snprintf(errstr, errstr_size, "%s", err);
        rocksdb_free(err);
        return -1;
    }
    if (!s->wal) {
        atomic_store(&s->unflushed, 1);
        size_t n = 0;
        rocksdb_writebatch_data(wb, &n);
        atomic_fetch_add(&s->unflushed_bytes, n);
    }
    return 0;
}

/* An empty write answers RocksDB's background error, if any. */
static char *store_probe(objlog_store *s) {
    char *err = NULL;
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_write(s->db, s->view_wo, wb, &err);
    rocksdb_writebatch_destroy(wb);
    return err;
}

/* RocksDB 7.8's C API flushes one column family at a time, and a manual
 * flush of one family under atomic_flush flushes that family alone. A
 * CompactRange without bounds first flushes every family in one atomic
 * flush (DBImpl::CompactRangeInternal, SelectColumnFamiliesForAtomicFlush)
 * and waits for it: asked of the default family, which objlog never
 * writes, its compaction finds no file and ends there. */
int objlog_store_flush(objlog_store *s, char *errstr, size_t errstr_size) {
    /* While RocksDB recovers from a background error (a full disk) its
     * own recovery flushes: no flush of ours alongside it. */
    char *err = store_probe(s);
    if (!err) {
        atomic_store(&s->unflushed, 0);
        atomic_store(&s->unflushed_bytes, 0);
        rocksdb_compact_range_cf(s->db, s->deflt, NULL, 0, NULL, 0);
        /* CompactRange reports no error through the C API: the probe
         * returns RocksDB's background error if the flush failed. */
        err = store_probe(s);
    }
    if (err) {
        atomic_store(&s->unflushed, 1);
        atomic_fetch_add(&s->flush_errors, 1);
        snprintf(errstr, errstr_size, "flush: %s", err);
        rocksdb_free(err);
        if (!s->wal) {
            pthread_mutex_lock(&s->fmu);
            snprintf(s->flush_err, sizeof(s->flush_err), "%s", errstr);
            pthread_mutex_unlock(&s->fmu);
            atomic_store(&s->flush_failed, 1);
        }
        return -1;
    }
    atomic_store(&s->flush_failed, 0);
    atomic_fetch_add(&s->flushes, 1);
    return 0;
}

int objlog_store_probe(objlog_store *s, char *errstr, size_t errstr_size) {
    if (store_flush_failure(s, errstr, errstr_size))
        return -1;
    char *err = store_probe(s);
    if (!err)
        return 0;
    snprintf(errstr, errstr_size, "%s", err);
    rocksdb_free(err);
    return -1;
}

/* How often the flusher looks at the memtables' size. */
#define STORE_FLUSHER_TICK_MS 50

static int64_t store_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps one tick (or until stopped); fmu held. */
static void store_flusher_wait(objlog_store *s) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += (long)STORE_FLUSHER_TICK_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    while (!s->flusher_stop && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&s->fcv, &s->fmu, &ts);
}

static void *store_flusher_run(void *arg) {
    objlog_store *s = arg;
    int64_t last = store_mono_ms(), failed_at = -1;
    pthread_mutex_lock(&s->fmu);
    for (;;) {
        store_flusher_wait(s);
        if (s->flusher_stop)
            break;
        pthread_mutex_unlock(&s->fmu);
        int64_t now = store_mono_ms();
        int due = atomic_load(&s->flush_failed) ||
                  (atomic_load(&s->unflushed) &&
                   ((s->flush_interval_ms >= 0 && now - last >= s->flush_interval_ms) ||
                    atomic_load(&s->unflushed_bytes) >= s->memtable_budget / 4));
        /* after a failure, not before RocksDB's own recovery had a second */
        if (due && (failed_at < 0 || now - failed_at >= 1000)) {
            char why[256];
            last = now;
            failed_at = objlog_store_flush(s, why, sizeof(why)) < 0 ? now : -1;
            if (failed_at >= 0)
                matlog_printf(&s->log, MATLOG_ERR, "store", "%s (retried in 1 s)", why);
        }
        pthread_mutex_lock(&s->fmu);
    }
    pthread_mutex_unlock(&s->fmu);
    return NULL;
}

static int store_flusher_start(objlog_store *s) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->fcv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->fmu, NULL);
    if (s->wal)
        return 0;
    if (pthread_create(&s->flusher, NULL, store_flusher_run, s) != 0)
        return -1;
    s->flusher_started = 1;
    return 0;
}

static void store_flusher_stop(objlog_store *s) {
    if (!s->flusher_started)
        return;
    pthread_mutex_lock(&s->fmu);
    s->flusher_stop = 1;
    pthread_cond_signal(&s->fcv);
    pthread_mutex_unlock(&s->fmu);
    pthread_join(s->flusher, NULL);
    s->flusher_started = 0;
}

void objlog_store_durability_get(objlog_store *s, objlog_store_durability *d) {
    d->wal = s->wal;
    d->flush_interval_ms = s->flush_interval_ms;
    d->flushes = atomic_load(&s->flushes);
    d->flush_errors = atomic_load(&s->flush_errors);
    d->unflushed = atomic_load(&s->unflushed);
}

objlog_store *store_open_db(const char *dir, const objlog_store_conf *conf, char *errstr,
                            size_t errstr_size) {
    objlog_store *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    s->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(s->opts, 1);
    rocksdb_options_set_create_missing_column_families(s->opts, 1);
    if (conf)
        s->log = (matlog){conf->log_cb, conf->log_opaque};
    store_set_memory(s, conf);
    store_set_logging(s);
    store_set_durability(s, conf);
    s->ro = rocksdb_readoptions_create();

    const char *names[OBJLOG_CF_COUNT + 1];
    const rocksdb_options_t *cfopts[OBJLOG_CF_COUNT + 1];
    rocksdb_column_family_handle_t *handles[OBJLOG_CF_COUNT + 1];
    names[0] = "default";
    cfopts[0] = s->opts;
    for (int i = 0; i < OBJLOG_CF_COUNT; i++) {
        names[i + 1] = store_cf_names[i];
        cfopts[i + 1] = s->opts;
    }
    char *err = NULL;
    s->db = rocksdb_open_column_families(s->opts, dir, OBJLOG_CF_COUNT + 1,
                                         names, cfopts, handles, &err);
    if (err) {
        snprintf(errstr, errstr_size, "open store %s: %s", dir, err);
        rocksdb_free(err);
        store_free_options(s);
        free(s);
        return NULL;
    }
    s->deflt = handles[0];
    for (int i = 0; i < OBJLOG_CF_COUNT; i++)
        s->cf[i] = handles[i + 1];
    s->dir = strdup(dir);
    if (!s->dir || store_flusher_start(s) < 0) {
        snprintf(errstr, errstr_size, "open store %s: out of memory", dir);
        objlog_store_close(s);
        return NULL;
    }
    return s;
}

void objlog_store_close(objlog_store *s) {
    if (!s)
        return;
    store_flusher_stop(s);
    char why[256];
    /* RocksDB's close would flush too; this says so when it cannot. */
    if (s->dir && atomic_load(&s->unflushed) && objlog_store_flush(s, why, sizeof(why)) < 0)
        matlog_printf(&s->log, MATLOG_ERR, "store",
                      "%s: the view applies its newest events again at the next start", why);
    for (int i = 0; i < OBJLOG_CF_COUNT; i++)
        rocksdb_column_family_handle_destroy(s->cf[i]);
    rocksdb_column_family_handle_destroy(s->deflt);
    rocksdb_close(s->db);
    store_free_options(s);
    if (s->dir) {
        pthread_cond_destroy(&s->fcv);
        pthread_mutex_destroy(&s->fmu);
    }
    free(s->dir);
    free(s);
}

const char *objlog_store_dir(const objlog_store *s) { return s->dir; }

const matlog *store_log(const objlog_store *s) { return &s->log; }

rocksdb_t *objlog_store_db(objlog_store *s) { return s->db; }

void objlog_store_block_cache(objlog_store *s, size_t *usage, size_t *capacity) {
    *usage = rocksdb_cache_get_usage(s->cache);
    *capacity = rocksdb_cache_get_capacity(s->cache);
}

rocksdb_column_family_handle_t *objlog_store_cf(objlog_store *s, objlog_cf cf) {
    if ((int)cf < 0 || cf >= OBJLOG_CF_COUNT)
        return NULL;
    return s->cf[cf];
}

/* The first be64 of a meta row whose value is n bytes long; 0 when absent,
 * of another length or on error (a missing row and a fresh view mean the
 * same thing). */
static int64_t store_meta_be64(objlog_store *s, const uint8_t *key, size_t kn, size_t n) {
    size_t vn = 0;
    char *err = NULL;
    char *v = rocksdb_get_cf(s->db, s->ro, s->cf[OBJLOG_CF_META],
                             (const char *)key, kn, &vn, &err);
    if (err) {
        rocksdb_free(err);
        return 0;
    }
    int64_t r = (v && vn == n) ? (int64_t)apply_get_be64((const uint8_t *)v) : 0;
    rocksdb_free(v);
    return r;
}

int64_t objlog_store_applied(objlog_store *s, int32_t partition) {
    uint8_t key[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(key, APPLY_META_APPLIED, partition);
    return store_meta_be64(s, key, kn, 8);
}

uint64_t objlog_store_dlq_count(objlog_store *s, int32_t partition) {
    uint8_t key[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(key, APPLY_META_DLQ, partition);
    return (uint64_t)store_meta_be64(s, key, kn, 8);
}

int objlog_store_get_outcome(objlog_store *s, int32_t partition,
                             int64_t offset, Objlog__Outcome **out,
                             char *errstr, size_t errstr_size) {
    uint8_t key[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(key, partition, offset);
    size_t vn = 0;
    char *err = NULL;
    *out = NULL;
    char *v = rocksdb_get_cf(s->db, s->ro, s->cf[OBJLOG_CF_OUTCOMES],
                             (const char *)key, sizeof(key), &vn, &err);
    if (err) {
        snprintf(errstr, errstr_size, "read outcome %d.%lld: %s", partition,
                 (long long)offset, err);
        rocksdb_free(err);
        return -1;
    }
    if (!v)
        return offset < objlog_store_outcomes_low(s, partition)
                   ? OBJLOG_OUTCOME_TRIMMED
                   : OBJLOG_OUTCOME_NOT_FOUND;
    *out = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out) {
        snprintf(errstr, errstr_size, "outcome %d.%lld: corrupt record",
                 partition, (long long)offset);
        return -1;
    }
    return 1;
}

/* The `buckets` row at k: 1 (*out), 0 none, -1 error. */
static int store_bucket_row(objlog_store *s, const keybuf *k, const char *what,
                            Objlog__BucketRecord **out, char *errstr, size_t errstr_size) {
    size_t vn = 0;
    char *err = NULL;
    *out = NULL;
    char *v = rocksdb_get_cf(s->db, s->ro, s->cf[OBJLOG_CF_BUCKETS], (const char *)k->data,
                             k->len, &vn, &err);
    if (err) {
        snprintf(errstr, errstr_size, "read bucket %s: %s", what, err);
        rocksdb_free(err);
        return -1;
    }
    if (!v)
        return 0;
    *out = objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out) {
        snprintf(errstr, errstr_size, "bucket %s: corrupt record", what);
        return -1;
    }
    return 1;
}

int objlog_store_get_bucket(objlog_store *s, const char *bucket, Objlog__BucketRecord **out,
                            char *errstr, size_t errstr_size) {
    keybuf k;
    keybuf_init(&k);
    int rc = keycodec_bucket_part(&k, bucket, strlen(bucket)) < 0
                 ? -1 : store_bucket_row(s, &k, bucket, out, errstr, errstr_size);
    if (rc < 0 && k.len == 0)
        snprintf(errstr, errstr_size, "out of memory");
    keybuf_free(&k);
    return rc;
}

int objlog_store_get_bucket_stake(objlog_store *s, const uint8_t *bpart, size_t bn,
                                  int32_t partition, Objlog__BucketRecord **out, char *errstr,
                                  size_t errstr_size) {
    keybuf k;
    keybuf_init(&k);
    int rc = objlog_bucket_stake_key(&k, bpart, bn, partition) < 0
                 ? -1 : store_bucket_row(s, &k, "stake", out, errstr, errstr_size);
    if (rc < 0 && k.len == 0)
        snprintf(errstr, errstr_size, "out of memory");
    keybuf_free(&k);
    return rc;
}

int objlog_store_pending_handoff(objlog_store *s, int32_t partition, uint32_t after_epoch,
                                 int64_t *offset, Objlog__RangeOut **out, char *errstr,
                                 size_t errstr_size) {
    uint8_t pre[5] = {'x'};
    apply_put_be32(pre + 1, (uint32_t)partition);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ro, s->cf[OBJLOG_CF_OUTCOMES]);
    int rc = 0;
    *out = NULL;
    /* The marker is the 13-byte row; the longer ones after it are the
     * request records it set aside. */
    for (rocksdb_iter_seek(it, (const char *)pre, sizeof(pre)); rc == 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn < APPLY_OUTCOME_KEY_LEN || memcmp(k, pre, sizeof(pre)) != 0)
            break;
        if (kn != APPLY_OUTCOME_KEY_LEN)
            continue;
        const char *v = rocksdb_iter_value(it, &vn);
        *offset = (int64_t)apply_get_be64(k + 5);
        *out = objlog__range_out__unpack(NULL, vn, (const uint8_t *)v);
        rc = *out ? 1 : -1;
        if (!*out)
            snprintf(errstr, errstr_size, "handoff marker %d.%lld: corrupt", partition,
                     (long long)*offset);
        if (*out && (!(*out)->map || (*out)->map->epoch <= after_epoch)) {
            objlog__range_out__free_unpacked(*out, NULL); /* finished elsewhere */
            *out = NULL;
            rc = 0;
        }
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(errstr, errstr_size, "scan handoff markers: %s", err);
        rocksdb_free(err);
        if (*out)
            objlog__range_out__free_unpacked(*out, NULL);
        *out = NULL;
        rc = -1;
    }
    return rc;
}

int objlog_store_route_keys(objlog_store *s, int32_t partition, int64_t from,
                            void (*fn)(const uint8_t *rk, size_t n, void *arg), void *arg,
                            char *errstr, size_t errstr_size) {
    uint8_t start[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(start, partition, from < 0 ? 0 : from);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ro, s->cf[OBJLOG_CF_OUTCOMES]);
    for (rocksdb_iter_seek(it, (const char *)start, sizeof(start)); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn != APPLY_OUTCOME_KEY_LEN || memcmp(k, start, 5) != 0)
            break;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
        if (o && o->route_key.len)
            fn(o->route_key.data, o->route_key.len, arg);
        if (o)
            objlog__outcome__free_unpacked(o, NULL);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(errstr, errstr_size, "scan outcomes of partition %d: %s", partition, err);
        rocksdb_free(err);
        return -1;
    }
    return 0;
}

rangemap *objlog_store_partition_map(objlog_store *s, int32_t partition, char *errstr,
                                     size_t errstr_size) {
    uint8_t key[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(key, APPLY_META_RANGEMAP, partition), vn = 0;
    char *err = NULL;
    char *v = rocksdb_get_cf(s->db, s->ro, s->cf[OBJLOG_CF_META], (const char *)key, kn, &vn,
                             &err);
    if (err) {
        snprintf(errstr, errstr_size, "ranges of partition %d: %s", partition, err);
        rocksdb_free(err);
        return NULL;
    }
    if (!v) {
        errstr[0] = '\0';
        return NULL;
    }
    rangemap *rm = rangemap_decode((const uint8_t *)v, vn, errstr, errstr_size);
    rocksdb_free(v);
    return rm;
}

int64_t objlog_store_outcomes_low(objlog_store *s, int32_t partition) {
    uint8_t key[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(key, APPLY_META_OUTCOMES_LOW, partition);
    /* value: be64(low offset) be64(its log time) */
    return store_meta_be64(s, key, kn, 16);
}

/* ---- logical dump ---- */

static int store_put_hex(FILE *out, const uint8_t *p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        if (putc(digits[p[i] >> 4], out) == EOF ||
            putc(digits[p[i] & 15], out) == EOF)
            return -1;
    }
    return 0;
}

static int store_dump_cf(objlog_store *s, rocksdb_readoptions_t *ro,
                         objlog_cf cf, FILE *out, char *errstr, size_t es) {
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, ro, s->cf[cf]);
    int rc = 0;
    for (rocksdb_iter_seek_to_first(it); rc == 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const char *k = rocksdb_iter_key(it, &kn);
        const char *v = rocksdb_iter_value(it, &vn);
        if (cf == OBJLOG_CF_META && objlog_store_meta_is_local(k, kn))
            continue;
        if (fputs(store_cf_names[cf], out) == EOF || putc(' ', out) == EOF ||
            store_put_hex(out, (const uint8_t *)k, kn) < 0 ||
            putc(' ', out) == EOF ||
            store_put_hex(out, (const uint8_t *)v, vn) < 0 ||
            putc('\n', out) == EOF) {
            snprintf(errstr, es, "dump %s: write failed", store_cf_names[cf]);
            rc = -1;
        }
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(errstr, es, "dump %s: %s", store_cf_names[cf], err);
        rocksdb_free(err);
        rc = -1;
    }
    return rc;
}

int objlog_store_dump(objlog_store *s, FILE *out, char *errstr,
                      size_t errstr_size) {
    /* One snapshot, so the dump is one state even while the materializer
     * writes. */
    const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(s->db);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(ro, snap);
    int rc = 0;
    for (int i = 0; i < OBJLOG_CF_COUNT && rc == 0; i++)
        rc = store_dump_cf(s, ro, (objlog_cf)i, out, errstr, errstr_size);
    rocksdb_readoptions_destroy(ro);
    rocksdb_release_snapshot(s->db, snap);
    if (rc == 0 && fflush(out) != 0) {
        snprintf(errstr, errstr_size, "dump: write failed");
        rc = -1;
    }
    return rc;
}
