/* bench_apply_rocks.c: the RocksDB baselines of `objlog bench --apply`
 * (bench_apply.c): the run's PUT events written straight into an objlog
 * store opened the way objlogd opens it (objlog_store_open_conf with
 * objlogd's block cache and memtable budget: its defaults, or
 * OBJLOG_BLOCK_CACHE_MB / OBJLOG_MEMTABLE_MB as objlogd reads them) in a
 * temp dir, in batches of BENCH_APPLY_BATCH events written with the WAL off
 * as the materializer writes them by default; no Kafka, no decoding, no
 * state machine:
 *   rocksdb-raw            per batch and writer, one WriteBatch with the 2
 *                          rows a PUT of a new key leaves: its `versions`
 *                          row and its `objects` row, with the keys and
 *                          values apply writes for it (the same
 *                          VersionRecord in both); each of load->threads
 *                          writers writes the rows of its partitions (p %
 *                          threads), as objlogd's apply threads do; every
 *                          batch is built before the clock starts, which
 *                          then runs from the writers' start to their end;
 *   rocksdb-apply-pattern  one WriteBatchWithIndex per batch with every
 *                          read (get_from_batch_and_db) and put that apply.c
 *                          makes for such a PUT into an unversioned bucket,
 *                          in its order, on a store that holds the buckets,
 *                          their stats rows and each partition's "olow" row
 *                          as a view does after the buckets were created.
 *
 * apply.c, per PUT of a new key into an unversioned bucket (no
 * preconditions, no quota), read from the code and pinned per event by
 * test_apply's operation counts:
 *   read  buckets  bucket_part(b)  object_gate > key_gate > load_bucket
 *   read  objects  route_key(b,k)  stage_key_begin (absent)
 *   put   versions version_row     stage_add_version (VersionRecord)
 *   put   objects  route_key(b,k)  stage_add_version (the same record)
 *   put   outcomes 'o' p offset    dedup_save_outcome (Outcome, with the
 *                                  request id: no row of its own)
 *   read  meta     "olow" p        dedup_trim > olow_get (nothing due)
 * (an Unversioned bucket's key has no header row, and a new request id
 * is looked up in memory); and per batch, for each `stats` row the
 * batch changed (each bucket's, its partition's tenant and global rows)
 * 1 read at its first touch (stage_stats_row) and 1 put, and
 * 1 put of meta "applied" per partition in the batch (apply_set_applied).
 * Since materializer/rowcache.c, apply reads the bucket and "olow" rows
 * through RocksDB only at their first touch in a batch; this pattern
 * keeps reading them every time (the cost without that cache).
 * Invariant: only RocksDB calls are timed: a batch's keys and values are
 * encoded before its clock starts, and each phase gets a fresh store. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rocksdb/c.h>

#include "bench_apply.h"
#include "bench_int.h"
#include "control.h"
#include "keycodec.h"
#include "materializer.h"
#include "objlog.pb-c.h"

#define ROCKS_VALUE_MAX 512
#define ROCKS_RID_LEN 16             /* request ids */
#define ROCKS_OKEY_LEN 13            /* 'o' be32(partition) be64(offset) */
#define ROCKS_META_KEY_MAX 16
#define ROCKS_STATS_MAX 110          /* 10 varints of at most 11 bytes */
#define ROCKS_PROGRESS_US 2000000

/* One PUT event's rows, encoded before its batch's clock starts. */
typedef struct rocks_ev {
    keybuf route;                /* route_key(b,k): the `objects` row */
    keybuf vrow;                 /* version_row(b,k,seq) */
    uint8_t rid[ROCKS_RID_LEN];  /* request id */
    uint8_t okey[ROCKS_OKEY_LEN];
    uint8_t rec[ROCKS_VALUE_MAX];    /* VersionRecord */
    size_t rec_n;
    uint8_t out[ROCKS_VALUE_MAX];    /* Outcome */
    size_t out_n;
    int bucket, part;
    int first_touch;             /* stats rows this event reads first: 0, 1, 3 */
} rocks_ev;

/* A `stats` row and its counters as the batches change them. */
typedef struct rocks_stat {
    keybuf key;
    Objlog__UsageStats u;
    uint8_t val[ROCKS_STATS_MAX];
    size_t val_n;
    int touched;                 /* by the batch being encoded */
} rocks_stat;

typedef struct rocks {
    const bench_apply_load *l;
    objlog_store *store;
    rocksdb_t *db;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    char dir[64];
    keybuf *bpart;               /* bucket_part(b): `buckets` rows */
    rocks_stat *stat;            /* nbuckets bucket rows, the tenant's, the global */
    int nstat;
    uint8_t (*olow)[ROCKS_META_KEY_MAX];
    uint8_t (*applied)[ROCKS_META_KEY_MAX];
    size_t olow_n, applied_n;
    int64_t *offset;             /* next offset per partition */
    uint8_t (*applied_val)[8];   /* the batch's "applied" value per partition */
    int *in_batch;               /* partitions of the batch, in order */
    int nin;
    uint64_t rng;
    int64_t log_ms;
    rocks_ev *ev;                /* BENCH_APPLY_BATCH */
    bench_apply_rocks_fig *f;
} rocks;

static void put_be32(uint8_t *p, uint32_t v) {
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

/* name ‖ be32(partition): the meta keys "applied" and "olow". */
static size_t meta_key(uint8_t out[ROCKS_META_KEY_MAX], const char *name, int p) {
    size_t n = strlen(name);
    memcpy(out, name, n);
    put_be32(out + n, (uint32_t)p);
    return n + 4;
}

static uint64_t rocks_rand(rocks *r) {
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    return r->rng;
}

/* objlogd's store budget: its env variables, else its defaults (0). */
static void rocks_conf(objlog_store_conf *c) {
    const char *names[2] = {"OBJLOG_BLOCK_CACHE_MB", "OBJLOG_MEMTABLE_MB"};
    size_t *fields[2] = {&c->block_cache_bytes, &c->memtable_bytes};
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        char *end = NULL;
        long mb = v && *v ? strtol(v, &end, 10) : 0;
        if (mb > 0 && end && !*end)
            *fields[i] = (size_t)mb << 20;
    }
}

static int rocks_fail(char *err, size_t es, const char *what, char *rerr) {
    snprintf(err, es, "%s: %s", what, rerr ? rerr : "out of memory");
    rocksdb_free(rerr);
    return -1;
}

static int rocks_pack(const ProtobufCMessage *m, uint8_t *out, size_t *n, char *err,
                      size_t es) {
    *n = protobuf_c_message_get_packed_size(m);
    if (*n > ROCKS_VALUE_MAX) {
        snprintf(err, es, "a record of %zu bytes is larger than the bench's buffer", *n);
        return -1;
    }
    protobuf_c_message_pack(m, out);
    return 0;
}

static void rocks_stat_pack(rocks_stat *s) {
    s->val_n = objlog__usage_stats__pack(&s->u, s->val);
}

static void rocks_free(rocks *r) {
    if (r->store)
        objlog_store_close(r->store);
    if (r->dir[0])
        nftw(r->dir, bench_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (r->wo)
        rocksdb_writeoptions_destroy(r->wo);
    if (r->ro)
        rocksdb_readoptions_destroy(r->ro);
    for (int i = 0; r->bpart && i < r->l->nbuckets; i++)
        keybuf_free(&r->bpart[i]);
    for (int i = 0; r->stat && i < r->nstat; i++)
        keybuf_free(&r->stat[i].key);
    for (int i = 0; r->ev && i < BENCH_APPLY_BATCH; i++) {
        keybuf_free(&r->ev[i].route);
        keybuf_free(&r->ev[i].vrow);
    }
    free(r->bpart);
    free(r->stat);
    free(r->olow);
    free(r->applied);
    free(r->offset);
    free(r->applied_val);
    free(r->in_batch);
    free(r->ev);
}

/* The temp dir, the store and every key that does not depend on an
 * event. */
static int rocks_open(rocks *r, char *err, size_t es) {
    const bench_apply_load *l = r->l;
    int np = l->nparts, nb = l->nbuckets;
    snprintf(r->dir, sizeof(r->dir), "/tmp/objlog-bench-rocks-XXXXXX");
    if (!mkdtemp(r->dir)) {
        snprintf(err, es, "mkdtemp: %s", strerror(errno));
        r->dir[0] = '\0';
        return -1;
    }
    char path[96];
    snprintf(path, sizeof(path), "%s/db", r->dir);
    objlog_store_conf conf;
    rocks_conf(&conf);
    r->f->block_cache_bytes = conf.block_cache_bytes ? conf.block_cache_bytes
                                                     : OBJLOG_STORE_BLOCK_CACHE_DEFAULT;
    r->f->memtable_bytes = conf.memtable_bytes ? conf.memtable_bytes
                                               : OBJLOG_STORE_MEMTABLE_DEFAULT;
    r->store = objlog_store_open_conf(path, &conf, err, es);
    if (!r->store)
        return -1;
    r->db = objlog_store_db(r->store);
    r->wo = rocksdb_writeoptions_create(); /* sync=false, WAL off: the views' default */
    rocksdb_writeoptions_disable_WAL(r->wo, 1);
    r->ro = rocksdb_readoptions_create();
    /* each bucket's row, then per partition the tenant's and the global */
    r->nstat = nb + 2 * np;
    r->bpart = calloc((size_t)nb, sizeof(*r->bpart));
    r->stat = calloc((size_t)r->nstat, sizeof(*r->stat));
    r->olow = calloc((size_t)np, sizeof(*r->olow));
    r->applied = calloc((size_t)np, sizeof(*r->applied));
    r->offset = calloc((size_t)np, sizeof(*r->offset));
    r->applied_val = calloc((size_t)np, sizeof(*r->applied_val));
    r->in_batch = calloc((size_t)np, sizeof(*r->in_batch));
    r->ev = calloc(BENCH_APPLY_BATCH, sizeof(*r->ev));
    if (!r->bpart || !r->stat || !r->olow || !r->applied || !r->offset ||
        !r->applied_val || !r->in_batch || !r->ev) {
        snprintf(err, es, "out of memory");
        return -1;
    }
    int bad = 0;
    for (int j = 0; j < nb; j++) {
        const char *b = l->buckets[j];
        keybuf_init(&r->bpart[j]);
        keybuf_init(&r->stat[j].key);
        bad |= keycodec_bucket_part(&r->bpart[j], b, strlen(b)) < 0 ||
               objlog_stats_bucket_key(&r->stat[j].key, b, strlen(b)) < 0;
        r->offset[l->part[j]]++; /* its CreateBucket comes first in the log */
    }
    for (int p = 0; p < np; p++) {
        keybuf_init(&r->stat[nb + p].key);
        keybuf_init(&r->stat[nb + np + p].key);
        bad |= objlog_stats_tenant_key(&r->stat[nb + p].key, "", p) < 0 ||
               objlog_stats_global_key(&r->stat[nb + np + p].key, p) < 0;
    }
    for (int i = 0; i < r->nstat; i++)
        objlog__usage_stats__init(&r->stat[i].u);
    for (int j = 0; j < nb; j++) {
        r->stat[nb + l->part[j]].u.buckets++;
        r->stat[nb + np + l->part[j]].u.buckets++;
    }
    for (int i = 0; i < r->nstat; i++)
        rocks_stat_pack(&r->stat[i]);
    for (int p = 0; p < np; p++) {
        r->olow_n = meta_key(r->olow[p], "olow", p);
        r->applied_n = meta_key(r->applied[p], "applied", p);
    }
    for (int i = 0; i < BENCH_APPLY_BATCH; i++) {
        keybuf_init(&r->ev[i].route);
        keybuf_init(&r->ev[i].vrow);
    }
    r->rng = 0x9e3779b97f4a7c15ULL;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->log_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (bad)
        snprintf(err, es, "out of memory");
    return bad ? -1 : 0;
}

/* What a view holds once the buckets were created (not timed): bucket
 * records, their zero stats rows, the tenant's and the global row, each
 * partition's "olow" and "applied". */
static int rocks_seed(rocks *r, char *err, size_t es) {
    const bench_apply_load *l = r->l;
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_column_family_handle_t *buckets = objlog_store_cf(r->store, OBJLOG_CF_BUCKETS);
    rocksdb_column_family_handle_t *stats = objlog_store_cf(r->store, OBJLOG_CF_STATS);
    rocksdb_column_family_handle_t *meta = objlog_store_cf(r->store, OBJLOG_CF_META);
    int rc = 0;
    int64_t *created = calloc((size_t)l->nparts, sizeof(*created));
    for (int j = 0; created && j < l->nbuckets && rc == 0; j++) {
        Objlog__BucketRecord br = OBJLOG__BUCKET_RECORD__INIT;
        uint8_t v[ROCKS_VALUE_MAX];
        size_t n;
        br.name = l->buckets[j];
        br.tenant = "";
        br.versioning = OBJLOG__VERSIONING__VERSIONING_UNVERSIONED;
        br.created_seq = keycodec_seq(CONTROL_DEFAULT_EPOCH, created[l->part[j]]++);
        br.created_ms = r->log_ms;
        rc = rocks_pack(&br.base, v, &n, err, es);
        if (rc == 0)
            rocksdb_writebatch_put_cf(wb, buckets, (const char *)r->bpart[j].data,
                                      r->bpart[j].len, (const char *)v, n);
    }
    for (int i = 0; i < r->nstat; i++)
        rocksdb_writebatch_put_cf(wb, stats, (const char *)r->stat[i].key.data,
                                  r->stat[i].key.len, (const char *)r->stat[i].val,
                                  r->stat[i].val_n);
    for (int p = 0; p < l->nparts; p++) {
        uint8_t low[16], next[8];
        put_be64(low, 0);
        put_be64(low + 8, (uint64_t)r->log_ms);
        put_be64(next, (uint64_t)r->offset[p]);
        rocksdb_writebatch_put_cf(wb, meta, (const char *)r->olow[p], r->olow_n,
                                  (const char *)low, sizeof(low));
        rocksdb_writebatch_put_cf(wb, meta, (const char *)r->applied[p], r->applied_n,
                                  (const char *)next, sizeof(next));
    }
    char *rerr = NULL;
    if (rc == 0 && created) {
        rocksdb_write(r->db, r->wo, wb, &rerr);
        if (rerr)
            rc = rocks_fail(err, es, "seed the store", rerr);
    } else if (!created) {
        rc = rocks_fail(err, es, "seed the store", NULL);
    }
    free(created);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

/* Encodes events first..first+n-1 into r->ev, and the values of the
 * stats rows and "applied" offsets their batch leaves. */
static int rocks_encode(rocks *r, long first, int n, char *err, size_t es) {
    const bench_apply_load *l = r->l;
    int nb = l->nbuckets;
    for (int i = 0; i < r->nstat; i++)
        r->stat[i].touched = 0;
    r->nin = 0;
    for (int k = 0; k < n; k++) {
        rocks_ev *e = &r->ev[k];
        long i = first + k;
        char key[32], etag[32];
        bench_key((int)i, key, sizeof(key));
        snprintf(etag, sizeof(etag), "etag-%ld", i);
        e->bucket = (int)(i % nb);
        e->part = l->part[e->bucket];
        int64_t off = r->offset[e->part]++;
        uint64_t seq = keycodec_seq(CONTROL_DEFAULT_EPOCH, off);
        const char *b = l->buckets[e->bucket];
        keybuf_reset(&e->route);
        keybuf_reset(&e->vrow);
        if (keycodec_route_key(&e->route, b, strlen(b), (const uint8_t *)key, strlen(key)) < 0 ||
            keybuf_append(&e->vrow, e->route.data, e->route.len) < 0 ||
            keycodec_append_be64(&e->vrow, UINT64_MAX - seq) < 0) {
            snprintf(err, es, "out of memory");
            return -1;
        }
        for (int w = 0; w < ROCKS_RID_LEN; w += 8) {
            uint64_t x = rocks_rand(r);
            memcpy(e->rid + w, &x, 8);
        }
        e->okey[0] = 'o';
        put_be32(e->okey + 1, (uint32_t)e->part);
        put_be64(e->okey + 5, (uint64_t)off);
        Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
        meta.size = (uint64_t)i;
        meta.etag = etag;
        meta.content_type = BENCH_APPLY_CONTENT_TYPE;
        Objlog__VersionRecord vr = OBJLOG__VERSION_RECORD__INIT;
        vr.key.data = (uint8_t *)key;
        vr.key.len = strlen(key);
        vr.seq = seq;
        vr.version_id = "null";
        vr.meta = &meta;
        vr.log_time_ms = r->log_ms + i / 100;
        Objlog__Outcome o = OBJLOG__OUTCOME__INIT;
        o.request_id.data = e->rid;
        o.request_id.len = ROCKS_RID_LEN;
        o.partition = e->part;
        o.offset = off;
        o.version_id = "null";
        o.etag = etag;
        o.log_time_ms = vr.log_time_ms;
        if (rocks_pack(&vr.base, e->rec, &e->rec_n, err, es) < 0 ||
            rocks_pack(&o.base, e->out, &e->out_n, err, es) < 0)
            return -1;
        /* the bucket's row, then (first event of the partition in the
         * batch) its partition's tenant and global rows: stats_commit's
         * order */
        int np = r->l->nparts, p = r->l->part[e->bucket];
        rocks_stat *touch[3] = {&r->stat[e->bucket], &r->stat[nb + p],
                                &r->stat[nb + np + p]};
        e->first_touch = 0;
        for (int t = 0; t < 3; t++) {
            if (!touch[t]->touched)
                e->first_touch |= 1 << t;
            touch[t]->touched = 1;
            touch[t]->u.objects++;
            touch[t]->u.bytes += (uint64_t)i;
            touch[t]->u.versions++;
            touch[t]->u.version_bytes += (uint64_t)i;
        }
        int seen = 0;
        for (int p = 0; p < r->nin && !seen; p++)
            seen = r->in_batch[p] == e->part;
        if (!seen)
            r->in_batch[r->nin++] = e->part;
        put_be64(r->applied_val[e->part], (uint64_t)r->offset[e->part]);
    }
    for (int i = 0; i < r->nstat; i++)
        if (r->stat[i].touched)
            rocks_stat_pack(&r->stat[i]);
    return 0;
}

/* ---- rocksdb-raw on several writers ---- */

typedef struct raw_writer {
    rocks *r;
    rocksdb_writebatch_t **wb;   /* one per batch (NULL: none of its rows) */
    long nwb;
    char err[256];
    int rc;
} raw_writer;

static void *raw_writer_run(void *arg) {
    raw_writer *w = arg;
    for (long i = 0; i < w->nwb && w->rc == 0 && !bench_interrupted; i++) {
        if (!w->wb[i])
            continue;
        char *rerr = NULL;
        rocksdb_write(w->r->db, w->r->wo, w->wb[i], &rerr);
        if (rerr)
            w->rc = rocks_fail(w->err, sizeof(w->err), "write batch", rerr);
    }
    return NULL;
}

/* Builds every batch of every writer (not timed), then times the writers
 * writing them at once. */
static int rocks_raw_threads(rocks *r, char *err, size_t es) {
    const bench_apply_load *l = r->l;
    int nt = l->threads > 0 ? l->threads : 1;
    long nb = (l->count + BENCH_APPLY_BATCH - 1) / BENCH_APPLY_BATCH;
    raw_writer *w = calloc((size_t)nt, sizeof(*w));
    int rc = w ? 0 : -1;
    for (int t = 0; t < nt && rc == 0; t++) {
        w[t] = (raw_writer){.r = r, .nwb = nb, .wb = calloc((size_t)nb, sizeof(void *))};
        rc = w[t].wb ? 0 : -1;
    }
    rocksdb_column_family_handle_t *versions = objlog_store_cf(r->store, OBJLOG_CF_VERSIONS);
    rocksdb_column_family_handle_t *objects = objlog_store_cf(r->store, OBJLOG_CF_OBJECTS);
    for (long bi = 0; rc == 0 && bi < nb; bi++) {
        long first = bi * BENCH_APPLY_BATCH;
        int n = (int)(l->count - first < BENCH_APPLY_BATCH ? l->count - first
                                                           : BENCH_APPLY_BATCH);
        rc = rocks_encode(r, first, n, err, es);
        for (int k = 0; k < n && rc == 0; k++) {
            const rocks_ev *e = &r->ev[k];
            raw_writer *o = &w[e->part % nt];
            if (!o->wb[bi])
                o->wb[bi] = rocksdb_writebatch_create();
            rocksdb_writebatch_put_cf(o->wb[bi], versions, (const char *)e->vrow.data,
                                      e->vrow.len, (const char *)e->rec, e->rec_n);
            rocksdb_writebatch_put_cf(o->wb[bi], objects, (const char *)e->route.data,
                                      e->route.len, (const char *)e->rec, e->rec_n);
        }
        r->f->puts += 2L * n;
    }
    if (rc < 0 && !err[0])
        snprintf(err, es, "out of memory");
    pthread_t *th = rc == 0 ? calloc((size_t)nt, sizeof(*th)) : NULL;
    int started = 0;
    int64_t t0 = bench_mono_us();
    for (; th && started < nt; started++)
        if (pthread_create(&th[started], NULL, raw_writer_run, &w[started]) != 0)
            break;
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    r->f->seconds = (double)(bench_mono_us() - t0) / 1e6;
    if (rc == 0 && started < nt) {
        snprintf(err, es, "cannot start %d writer threads", nt);
        rc = -1;
    }
    for (int t = 0; w && t < nt; t++) {
        if (rc == 0 && w[t].rc < 0) {
            snprintf(err, es, "%s", w[t].err);
            rc = -1;
        }
        for (long i = 0; w[t].wb && i < nb; i++)
            if (w[t].wb[i])
                rocksdb_writebatch_destroy(w[t].wb[i]);
        free(w[t].wb);
    }
    free(th);
    free(w);
    return rc;
}

/* One read as apply.c makes it (batch_get); the value is dropped. */
static int rocks_get(rocks *r, rocksdb_writebatch_wi_t *wb, objlog_cf cf, const void *k,
                     size_t kn, char *err, size_t es) {
    char *rerr = NULL;
    size_t vn;
    char *v = rocksdb_writebatch_wi_get_from_batch_and_db_cf(
        wb, r->db, r->ro, objlog_store_cf(r->store, cf), (const char *)k, kn, &vn, &rerr);
    rocksdb_free(v);
    r->f->reads++;
    return rerr ? rocks_fail(err, es, "read", rerr) : 0;
}

static void rocks_put(rocks *r, rocksdb_writebatch_wi_t *wb, objlog_cf cf, const void *k,
                      size_t kn, const void *v, size_t vn) {
    rocksdb_writebatch_wi_put_cf(wb, objlog_store_cf(r->store, cf), (const char *)k, kn,
                                 (const char *)v, vn);
    r->f->puts++;
}

/* rocksdb-apply-pattern: one batch of n events, apply.c's calls (top of
 * the file) in its order. */
static int rocks_pattern_batch(rocks *r, rocksdb_writebatch_wi_t *wb, int n, char *err,
                               size_t es) {
    int nb = r->l->nbuckets, rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        const rocks_ev *e = &r->ev[k];
        const keybuf *bp = &r->bpart[e->bucket];
        rc = rocks_get(r, wb, OBJLOG_CF_BUCKETS, bp->data, bp->len, err, es);
        if (rc == 0)
            rc = rocks_get(r, wb, OBJLOG_CF_OBJECTS, e->route.data, e->route.len, err, es);
        if (rc < 0)
            break;
        rocks_put(r, wb, OBJLOG_CF_VERSIONS, e->vrow.data, e->vrow.len, e->rec, e->rec_n);
        rocks_put(r, wb, OBJLOG_CF_OBJECTS, e->route.data, e->route.len, e->rec, e->rec_n);
        int np = r->l->nparts, p = r->l->part[e->bucket];
        const rocks_stat *touch[3] = {&r->stat[e->bucket], &r->stat[nb + p],
                                      &r->stat[nb + np + p]};
        for (int t = 0; t < 3 && rc == 0; t++)
            if (e->first_touch & (1 << t))
                rc = rocks_get(r, wb, OBJLOG_CF_STATS, touch[t]->key.data, touch[t]->key.len,
                               err, es);
        if (rc < 0)
            break;
        rocks_put(r, wb, OBJLOG_CF_OUTCOMES, e->okey, sizeof(e->okey), e->out, e->out_n);
        rc = rocks_get(r, wb, OBJLOG_CF_META, r->olow[e->part], r->olow_n, err, es);
    }
    for (int i = 0; i < r->nstat && rc == 0; i++)
        if (r->stat[i].touched)
            rocks_put(r, wb, OBJLOG_CF_STATS, r->stat[i].key.data, r->stat[i].key.len,
                      r->stat[i].val, r->stat[i].val_n);
    for (int p = 0; p < r->nin && rc == 0; p++)
        rocks_put(r, wb, OBJLOG_CF_META, r->applied[r->in_batch[p]], r->applied_n,
                  r->applied_val[r->in_batch[p]], 8);
    char *rerr = NULL;
    if (rc == 0)
        rocksdb_write_writebatch_wi(r->db, r->wo, wb, &rerr);
    rocksdb_writebatch_wi_clear(wb);
    return rc < 0 ? -1 : rerr ? rocks_fail(err, es, "write batch", rerr) : 0;
}

int bench_apply_rocks(const bench_apply_load *l, int pattern, bench_apply_rocks_fig *f,
                      char *errstr, size_t errstr_size) {
    rocks r = {.l = l, .f = f};
    memset(f, 0, sizeof(*f));
    errstr[0] = '\0';
    const char *name = pattern ? "rocksdb-apply-pattern" : "rocksdb-raw";
    int rc = rocks_open(&r, errstr, errstr_size);
    if (rc == 0 && !pattern) {
        if (l->progress)
            fprintf(stderr, "objlog: bench: %s: %d writer%s\n", name,
                    l->threads > 1 ? l->threads : 1, l->threads > 1 ? "s" : "");
        rc = rocks_raw_threads(&r, errstr, errstr_size);
        rocks_free(&r);
        return rc;
    }
    if (rc == 0)
        rc = rocks_seed(&r, errstr, errstr_size);
    /* overwrite_key as in apply_batch_new */
    rocksdb_writebatch_wi_t *wbi = rocksdb_writebatch_wi_create(0, 1);
    int64_t busy = 0, last = bench_mono_us();
    for (long first = 0; rc == 0 && first < l->count; first += BENCH_APPLY_BATCH) {
        int n = (int)(l->count - first < BENCH_APPLY_BATCH ? l->count - first
                                                           : BENCH_APPLY_BATCH);
        if (bench_interrupted) {
            snprintf(errstr, errstr_size, "interrupted");
            rc = -1;
            break;
        }
        rc = rocks_encode(&r, first, n, errstr, errstr_size);
        if (rc < 0)
            break;
        int64_t t0 = bench_mono_us();
        rc = rocks_pattern_batch(&r, wbi, n, errstr, errstr_size);
        int64_t t1 = bench_mono_us();
        busy += t1 - t0;
        if (l->progress && t1 - last >= ROCKS_PROGRESS_US) {
            fprintf(stderr, "objlog: bench: %s: %ld of %ld events written\n", name,
                    first + n, l->count);
            last = t1;
        }
    }
    f->seconds = (double)busy / 1e6;
    rocksdb_writebatch_wi_destroy(wbi);
    rocks_free(&r);
    return rc;
}
