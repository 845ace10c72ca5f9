/* batch.c: one batch of the state machine in progress over the store.
 * Owns the staging every module of the state machine writes through
 * (apply, indexes, the counters): the plain WriteBatch that is written,
 * reads that see the batch's own earlier writes (the overlay of written
 * rows, overlay.h, then the store), iterators that see them (a
 * WriteBatchWithIndex built for a column family only once something
 * iterates it), the small cache of hot rows (bucket records, meta) in
 * front of the reads, the key range of the batch's deletes for the
 * janitor, and the count of what it asked of RocksDB.
 *
 * Invariant: a read through the batch answers what the store will hold
 * once the batch is written, so an event decides exactly as it would had
 * every earlier event of the batch been written on its own: every put and
 * delete goes to the WriteBatch, the overlay, the cache when its column
 * family is cached, and the index when its column family is indexed
 * (which holds every earlier write of that family from the moment it is
 * indexed); all are cleared with the batch. */
#include "batch.h"

#include "overlay.h"
#include "rows.h"
#include "ridindex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct apply_batch {
    objlog_store *store;
    rocksdb_t *db;
    const rangemap *rm;
    rocksdb_writebatch_t *wb;      /* what is written */
    overlay written;               /* its rows by key, for reads */
    rocksdb_writebatch_wi_t *ix;   /* its rows of the indexed families */
    unsigned indexed;              /* 1 << cf: cf is in ix */
    apply_batch_ops ops;
    rocksdb_readoptions_t *ro;
    /* Deletes staged in `objects` and `versions` and the key range they
     * span: the materializer's janitor compacts it (janitor.h). */
    uint64_t deletes;
    keybuf del_lo, del_hi;
    /* Dedup window (log time) and space bound: compile-time defaults,
     * changed only by tests (apply_batch_set_dedup_limits). */
    int64_t window_ms;
    int64_t max_ids;
    int no_stats;       /* bench only (apply_batch_set_stats) */
    /* The `stats` rows this batch changed, staged by apply_batch_wb
     * (apply.h). */
    statrows stats;
    /* The `indexes` 'c' rows this batch changed (indexes_stage). */
    statrows ixcounts;
    /* Hot rows (bucket records, meta) as the batch sees them. */
    rowcache hot;
    /* The request-id index of each partition this batch applies
     * (ridindex.h), as the batch sees the store: loaded at the store's
     * outcomes generation rids_gen; rids_touched[p]: changed since the
     * batch was last written, so dropped if it is cleared unwritten. */
    ridindex **rids;
    unsigned char *rids_touched;
    int32_t nrids;
    uint64_t rids_gen;
    /* Each partition's map (apply_batch_partition_map), cached like the
     * request-id index: pmap[p] its own map, or NULL with pmap_genesis[p]
     * (no row: the genesis map) or neither (not loaded);
     * pmap_touched[p] staged since the batch was last written. Maps a
     * partition stops using are kept in pmap_old until the batch goes: a
     * caller may still hold one. */
    rangemap **pmap;
    unsigned char *pmap_touched, *pmap_genesis;
    int32_t npmap;
    rangemap **pmap_old;
    size_t npmap_old;
};

apply_batch *apply_batch_new(objlog_store *store, const rangemap *rm) {
    apply_batch *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->store = store;
    b->db = objlog_store_db(store);
    b->rm = rm;
    b->wb = rocksdb_writebatch_create();
    /* overwrite_key: an iterator over the batch shows one entry per key. */
    b->ix = rocksdb_writebatch_wi_create(0, 1);
    overlay_init(&b->written);
    b->ro = rocksdb_readoptions_create();
    b->window_ms = OBJLOG_DEDUP_WINDOW_MS;
    b->max_ids = OBJLOG_DEDUP_MAX_IDS;
    statrows_init(&b->stats);
    statrows_init(&b->ixcounts);
    rowcache_init(&b->hot);
    return b;
}

void apply_batch_set_dedup_limits(apply_batch *b, int64_t window_ms,
                                  int64_t max_ids) {
    b->window_ms = window_ms;
    b->max_ids = max_ids > 0 ? max_ids : 1;
}

void apply_batch_set_stats(apply_batch *b, int on) { b->no_stats = !on; }

static void rids_drop(apply_batch *b, int32_t p) {
    ridindex_free(b->rids[p]);
    b->rids[p] = NULL;
    b->rids_touched[p] = 0;
}

/* Retires p's cached map (kept until the batch goes, see pmap_old). */
static void pmap_drop(apply_batch *b, int32_t p) {
    rangemap *rm = b->pmap[p];
    b->pmap[p] = NULL;
    b->pmap_touched[p] = 0;
    b->pmap_genesis[p] = 0;
    if (!rm)
        return;
    rangemap **o = realloc(b->pmap_old, (b->npmap_old + 1) * sizeof(*o));
    if (!o)
        abort(); /* as written_set: a map in use cannot be freed under it */
    b->pmap_old = o;
    o[b->npmap_old++] = rm;
}

void apply_batch_destroy(apply_batch *b) {
    if (!b)
        return;
    for (int32_t p = 0; p < b->npmap; p++)
        rangemap_destroy(b->pmap[p]);
    for (size_t i = 0; i < b->npmap_old; i++)
        rangemap_destroy(b->pmap_old[i]);
    free(b->pmap);
    free(b->pmap_touched);
    free(b->pmap_genesis);
    free(b->pmap_old);
    for (int32_t p = 0; p < b->nrids; p++)
        ridindex_free(b->rids[p]);
    free(b->rids);
    free(b->rids_touched);
    keybuf_free(&b->del_lo);
    keybuf_free(&b->del_hi);
    statrows_free(&b->stats);
    statrows_free(&b->ixcounts);
    rowcache_clear(&b->hot);
    overlay_free(&b->written);
    rocksdb_writebatch_destroy(b->wb);
    rocksdb_writebatch_wi_destroy(b->ix);
    rocksdb_readoptions_destroy(b->ro);
    free(b);
}

/* RocksDB counts every key comparison and block read in a thread-local
 * perf context unless the thread says not to (Debian's librocksdb
 * reaches it through __tls_get_addr: about a tenth of the instructions
 * of an applied event); nothing reads those counters. The thread that applies a
 * batch clears it first, so that thread stops counting. */
#define BATCH_PERF_DISABLE 1 /* rocksdb::PerfLevel::kDisable */

void apply_batch_clear(apply_batch *b) {
    rocksdb_set_perf_level(BATCH_PERF_DISABLE);
    rocksdb_writebatch_clear(b->wb);
    overlay_clear(&b->written);
    if (b->indexed)
        rocksdb_writebatch_wi_clear(b->ix);
    b->indexed = 0;
    memset(&b->ops, 0, sizeof(b->ops));
    statrows_clear(&b->stats);
    statrows_clear(&b->ixcounts);
    rowcache_clear(&b->hot);
    b->deletes = 0;
    keybuf_reset(&b->del_lo);
    keybuf_reset(&b->del_hi);
    /* Unwritten changes: the store never got them, so the index reloads. */
    for (int32_t p = 0; p < b->nrids; p++)
        if (b->rids_touched[p])
            rids_drop(b, p);
    for (int32_t p = 0; p < b->npmap; p++)
        if (b->pmap_touched[p])
            pmap_drop(b, p);
}

void apply_batch_written(apply_batch *b) {
    if (b->nrids)
        memset(b->rids_touched, 0, (size_t)b->nrids);
    if (b->npmap)
        memset(b->pmap_touched, 0, (size_t)b->npmap);
}

ridindex *apply_batch_rids(apply_batch *b, int32_t p) {
    uint64_t gen = objlog_store_outcomes_gen(b->store);
    if (gen != b->rids_gen) {
        for (int32_t q = 0; q < b->nrids; q++)
            rids_drop(b, q);
        for (int32_t q = 0; q < b->npmap; q++)
            pmap_drop(b, q);
        b->rids_gen = gen;
    }
    return p >= 0 && p < b->nrids ? b->rids[p] : NULL;
}

int apply_batch_rids_set(apply_batch *b, int32_t p, ridindex *x) {
    if (p >= b->nrids) {
        int32_t n = p + 1;
        ridindex **r = realloc(b->rids, (size_t)n * sizeof(*r));
        if (r)
            b->rids = r;
        unsigned char *t = r ? realloc(b->rids_touched, (size_t)n) : NULL;
        if (!t) {
            ridindex_free(x);
            return -1;
        }
        b->rids_touched = t;
        for (int32_t q = b->nrids; q < n; q++) {
            b->rids[q] = NULL;
            b->rids_touched[q] = 0;
        }
        b->nrids = n;
    }
    ridindex_free(b->rids[p]);
    b->rids[p] = x;
    b->rids_touched[p] = 1; /* loaded through the batch: its rows included */
    return 0;
}

void apply_batch_rids_touch(apply_batch *b, int32_t p) {
    if (p >= 0 && p < b->nrids)
        b->rids_touched[p] = 1;
}

/* Room for partition p in the map cache. 0, or -1 out of memory. */
static int pmap_grow(apply_batch *b, int32_t p) {
    if (p < b->npmap)
        return 0;
    int32_t n = p + 1;
    rangemap **m = realloc(b->pmap, (size_t)n * sizeof(*m));
    if (m)
        b->pmap = m;
    unsigned char *t = m ? realloc(b->pmap_touched, (size_t)n) : NULL;
    if (t)
        b->pmap_touched = t;
    unsigned char *g = t ? realloc(b->pmap_genesis, (size_t)n) : NULL;
    if (!g)
        return -1;
    b->pmap_genesis = g;
    for (int32_t q = b->npmap; q < n; q++) {
        b->pmap[q] = NULL;
        b->pmap_touched[q] = 0;
        b->pmap_genesis[q] = 0;
    }
    b->npmap = n;
    return 0;
}

const rangemap *apply_batch_partition_map(apply_batch *b, int32_t p, char *errstr,
                                          size_t es) {
    (void)apply_batch_rids(b, p); /* a new outcomes generation drops the maps too */
    if (p < b->npmap && (b->pmap[p] || b->pmap_genesis[p]))
        return b->pmap[p] ? b->pmap[p] : b->rm;
    uint8_t key[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(key, APPLY_META_RANGEMAP, p);
    char *v;
    size_t vn;
    int rc = apply_batch_get(b, OBJLOG_CF_META, key, kn, &v, &vn, errstr, es);
    if (rc < 0)
        return NULL;
    if (rc == 0) {
        if (pmap_grow(b, p) == 0)
            b->pmap_genesis[p] = 1;
        return b->rm;
    }
    char why[128];
    rangemap *rm = rangemap_decode((const uint8_t *)v, vn, why, sizeof(why));
    rocksdb_free(v);
    if (!rm) {
        snprintf(errstr, es, "ranges of partition %d: %s", p, why);
        return NULL;
    }
    if (pmap_grow(b, p) < 0) {
        rangemap_destroy(rm);
        snprintf(errstr, es, "out of memory");
        return NULL;
    }
    b->pmap[p] = rm;
    return rm;
}

int apply_batch_set_partition_map(apply_batch *b, int32_t p, rangemap *rm, char *errstr,
                                  size_t es) {
    uint8_t *enc = NULL;
    size_t en = 0;
    if (pmap_grow(b, p) < 0 || rangemap_encode(rm, &enc, &en) < 0) {
        rangemap_destroy(rm);
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    uint8_t key[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(key, APPLY_META_RANGEMAP, p);
    apply_batch_put(b, OBJLOG_CF_META, key, kn, enc, en);
    free(enc);
    pmap_drop(b, p);
    b->pmap[p] = rm;
    b->pmap_touched[p] = 1;
    return 0;
}

uint64_t apply_batch_deletes(const apply_batch *b, const keybuf **lo,
                             const keybuf **hi) {
    *lo = &b->del_lo;
    *hi = &b->del_hi;
    return b->deletes;
}

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    return c ? c : (an > bn) - (an < bn);
}

/* Widens [del_lo, del_hi] to cover k. Allocation failure only narrows
 * what gets compacted, never correctness, so it is ignored. */
static void note_delete(apply_batch *b, const void *k, size_t kn) {
    if (b->deletes++ == 0 || bytes_cmp(k, kn, b->del_lo.data, b->del_lo.len) < 0) {
        keybuf_reset(&b->del_lo);
        (void)keybuf_append(&b->del_lo, k, kn);
    }
    if (b->deletes == 1 || bytes_cmp(k, kn, b->del_hi.data, b->del_hi.len) > 0) {
        keybuf_reset(&b->del_hi);
        (void)keybuf_append(&b->del_hi, k, kn);
    }
}

static rocksdb_column_family_handle_t *cfh(apply_batch *b, objlog_cf cf) {
    return objlog_store_cf(b->store, cf);
}

/* The column families whose rows the batch caches (rowcache.h). */
static int hot_cf(objlog_cf cf) { return cf == OBJLOG_CF_BUCKETS || cf == OBJLOG_CF_META; }

/* The batch's own value of k: 1 written (*v a malloc'd copy, NULL when
 * deleted), 0 not written, -1 out of memory. */
static int written_get(apply_batch *b, objlog_cf cf, const void *k, size_t kn, char **v,
                       size_t *vn) {
    const char *w;
    if (!overlay_get(&b->written, (int)cf, k, kn, &w, vn))
        return 0;
    *v = NULL;
    if (!w)
        return 1;
    *v = malloc(*vn ? *vn : 1);
    if (!*v)
        return -1;
    memcpy(*v, w, *vn);
    return 1;
}

/* Value of key in cf as the batch sees it: 1 found (*v owned by the caller,
 * rocksdb_free), 0 absent, -1 error. */
int apply_batch_get(apply_batch *b, objlog_cf cf, const void *k, size_t kn,
                    char **v, size_t *vn, char *errstr, size_t es) {
    char *err = NULL;
    int hot = hot_cf(cf);
    int rc = hot ? rowcache_get(&b->hot, (int)cf, k, kn, v, vn) : 0;
    if (rc == 0)
        rc = written_get(b, cf, k, kn, v, vn);
    if (rc != 0) {
        if (rc < 0)
            snprintf(errstr, es, "out of memory");
        return rc < 0 ? -1 : *v ? 1 : 0;
    }
    b->ops.reads++;
    *v = rocksdb_get_cf(b->db, b->ro, cfh(b, cf), k, kn, vn, &err);
    if (err) {
        snprintf(errstr, es, "read %s: %s", objlog_cf_name(cf), err);
        rocksdb_free(err);
        return -1;
    }
    if (hot)
        rowcache_set(&b->hot, (int)cf, k, kn, *v, *v ? *vn : 0);
    return *v ? 1 : 0;
}

/* The overlay remembers every write: without it a later read would miss
 * the batch's own row and decide wrongly, so out of memory there aborts
 * the process (as RocksDB's own WriteBatch does on a failed allocation):
 * nothing was written, and the view applies the batch again at start. */
static void written_set(apply_batch *b, objlog_cf cf, const void *k, size_t kn,
                        const void *v, size_t vn) {
    if (overlay_set(&b->written, (int)cf, k, kn, v, vn) < 0)
        abort();
}

void apply_batch_put(apply_batch *b, objlog_cf cf, const void *k, size_t kn,
                     const void *v, size_t vn) {
    if (hot_cf(cf))
        rowcache_set(&b->hot, (int)cf, k, kn, v, vn);
    written_set(b, cf, k, kn, v ? v : "", vn); /* an empty value is a value */
    rocksdb_writebatch_put_cf(b->wb, cfh(b, cf), k, kn, v, vn);
    if (b->indexed & (1u << cf))
        rocksdb_writebatch_wi_put_cf(b->ix, cfh(b, cf), k, kn, v, vn);
    b->ops.puts++;
}

void apply_batch_del(apply_batch *b, objlog_cf cf, const void *k, size_t kn) {
    if (cf == OBJLOG_CF_OBJECTS || cf == OBJLOG_CF_VERSIONS)
        note_delete(b, k, kn);
    if (hot_cf(cf))
        rowcache_set(&b->hot, (int)cf, k, kn, NULL, 0);
    written_set(b, cf, k, kn, NULL, 0);
    rocksdb_writebatch_delete_cf(b->wb, cfh(b, cf), k, kn);
    if (b->indexed & (1u << cf))
        rocksdb_writebatch_wi_delete_cf(b->ix, cfh(b, cf), k, kn);
    b->ops.deletes++;
}

/* m packed into a malloc'd buffer (*n bytes), or NULL (errstr). */
uint8_t *apply_batch_pack(const ProtobufCMessage *m, size_t *n, char *errstr, size_t es) {
    *n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(*n ? *n : 1);
    if (!buf)
        snprintf(errstr, es, "out of memory");
    else
        protobuf_c_message_pack(m, buf);
    return buf;
}

int apply_batch_put_msg(apply_batch *b, objlog_cf cf, const void *k, size_t kn,
                        const ProtobufCMessage *m, char *errstr, size_t es) {
    size_t n;
    uint8_t *buf = apply_batch_pack(m, &n, errstr, es);
    if (!buf)
        return -1;
    apply_batch_put(b, cf, k, kn, buf, n);
    free(buf);
    return 0;
}

typedef struct index_fill {
    apply_batch *b;
    rocksdb_column_family_handle_t *cf;
} index_fill;

static void index_one(void *arg, const char *k, size_t kn, const char *v, size_t vn) {
    index_fill *f = arg;
    if (v)
        rocksdb_writebatch_wi_put_cf(f->b->ix, f->cf, k, kn, v, vn);
    else
        rocksdb_writebatch_wi_delete_cf(f->b->ix, f->cf, k, kn);
}

/* Iterator over cf that sees the batch's own writes on top of the store.
 * The first one of a family indexes the rows the batch wrote there; its
 * later writes are indexed as they come. */
rocksdb_iterator_t *apply_batch_iter(apply_batch *b, objlog_cf cf) {
    if (!(b->indexed & (1u << cf))) {
        index_fill f = {b, cfh(b, cf)};
        overlay_each(&b->written, (int)cf, index_one, &f);
        b->indexed |= 1u << cf;
    }
    b->ops.iterators++;
    rocksdb_iterator_t *base = rocksdb_create_iterator_cf(b->db, b->ro, cfh(b, cf));
    /* The returned iterator takes ownership of base. */
    return rocksdb_writebatch_wi_create_iterator_with_base_cf(b->ix, base,
                                                              cfh(b, cf));
}

/* ---- what the state machine's modules read of the batch ---- */

rocksdb_writebatch_t *apply_batch_staged(apply_batch *b) { return b->wb; }

void apply_batch_ops_get(const apply_batch *b, apply_batch_ops *ops) { *ops = b->ops; }

const rangemap *apply_batch_rangemap(const apply_batch *b) { return b->rm; }

int64_t apply_batch_window_ms(const apply_batch *b) { return b->window_ms; }

int64_t apply_batch_max_ids(const apply_batch *b) { return b->max_ids; }

int apply_batch_stats_on(const apply_batch *b) { return !b->no_stats; }

statrows *apply_batch_stats_rows(apply_batch *b) { return &b->stats; }

statrows *apply_batch_index_counts(apply_batch *b) { return &b->ixcounts; }
