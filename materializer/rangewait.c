/* rangewait.c: when the RangeIn of a handoff may apply on its target q,
 * and which ranges must be imported for it (docs/ARCHITECTURE.md, "Ranges
 * move").
 *
 * The RangeIn from (p, X) reads the range as p held it at X: the rows
 * under the range's route keys, and the RangeOut's marker and request
 * records ('x' be32(p) be64(X)). It may apply once those are in this
 * store: when this store applied p's event X itself (past X, and not
 * from a checkpoint of p taken after X, which under the next map no
 * longer carries the range: meta "ckbase"), or when an import of the
 * range wrote them (meta "rimported", written last, checkpoint.h). A
 * RangeIn that the state machine will answer from what it has (a repeat,
 * a stale one: q's map is already at its epoch) never waits.
 *
 * Invariant: an import is asked for only while no partition applied here
 * holds any of the range under its own map, nor is p applied here: the
 * rows it replaces belong to no partition of this store, and no lane
 * writes them while it runs. One slot per target partition, under mu. */
#include "rangewait.h"

#include "checkpoint.h"
#include "matint.h"
#include "rows.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct rw_slot {
    int want;
    objlog_range_wait w;
} rw_slot;

struct rangewait {
    pthread_mutex_t mu;
    int nparts;
    rw_slot *slots;
};

rangewait *rangewait_new(int nparts) {
    rangewait *w = calloc(1, sizeof(*w));
    if (!w || !(w->slots = calloc((size_t)nparts, sizeof(*w->slots)))) {
        free(w);
        return NULL;
    }
    w->nparts = nparts;
    pthread_mutex_init(&w->mu, NULL);
    return w;
}

void objlog_range_wait_free(objlog_range_wait *w) {
    free(w->start);
    free(w->end);
    w->start = w->end = NULL;
}

void rangewait_free(rangewait *w) {
    if (!w)
        return;
    for (int i = 0; i < w->nparts; i++)
        objlog_range_wait_free(&w->slots[i].w);
    pthread_mutex_destroy(&w->mu);
    free(w->slots);
    free(w);
}

static void rw_clear(rangewait *w, int32_t q) {
    pthread_mutex_lock(&w->mu);
    w->slots[q].want = 0;
    objlog_range_wait_free(&w->slots[q].w);
    pthread_mutex_unlock(&w->mu);
}

static uint8_t *rw_dup(const ProtobufCBinaryData *d) {
    uint8_t *c = malloc(d->len ? d->len : 1);
    if (c && d->len)
        memcpy(c, d->data, d->len);
    return c;
}

static void rw_want(rangewait *w, int32_t q, int64_t off, const Objlog__RangeIn *ri) {
    pthread_mutex_lock(&w->mu);
    rw_slot *s = &w->slots[q];
    if (!s->want || s->w.offset != off) {
        objlog_range_wait_free(&s->w);
        s->w = (objlog_range_wait){.partition = q, .offset = off, .from = ri->from_partition,
                                   .from_offset = ri->from_offset, .epoch = ri->map->epoch,
                                   .start = rw_dup(&ri->start), .end = rw_dup(&ri->end),
                                   .sn = ri->start.len, .en = ri->end.len};
        s->want = s->w.start && s->w.end;
    }
    pthread_mutex_unlock(&w->mu);
}

/* 1 when the range was imported here for this RangeIn, 0 not, -1 error. */
static int rw_imported(apply_batch *b, const Objlog__RangeIn *ri) {
    uint8_t k[32];
    size_t kn = objlog_ckpt_rimported_key(k, ri->from_partition, ri->from_offset);
    char *v = NULL, err[128];
    size_t vn = 0;
    int rc = apply_batch_get(b, OBJLOG_CF_META, k, kn, &v, &vn, err, sizeof(err));
    rocksdb_free(v);
    return rc;
}

/* The offset from which this store applied partition p itself (the last
 * checkpoint of p imported here; 0 from the log's start). */
static int64_t rw_base(apply_batch *b, int32_t p) {
    uint8_t k[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(k, OBJLOG_CKPT_META_BASE, p);
    char *v = NULL, err[128];
    size_t vn = 0;
    int rc = apply_batch_get(b, OBJLOG_CF_META, k, kn, &v, &vn, err, sizeof(err));
    int64_t base = rc == 1 && vn == 8 ? (int64_t)apply_get_be64((const uint8_t *)v) : 0;
    rocksdb_free(v);
    return rc < 0 ? INT64_MAX : base;
}

/* 1 when a partition applied here other than q holds some of the range
 * under its own map (it will hand it on through this store's log order). */
static int rw_held_here(objlog_materializer *m, int32_t q, const Objlog__RangeIn *ri) {
    for (int32_t r = 0; r < m->nparts; r++) {
        if (r == q || objlog_materializer_role(m, r) == OBJLOG_ROLE_NONE)
            continue;
        char err[128] = "";
        rangemap *own = objlog_store_partition_map(m->store, r, err, sizeof(err));
        if (!own && err[0])
            return 1; /* unreadable: wait rather than import over it */
        int all, none;
        rangemap_covers(own ? own : m->rm, ri->start.data, ri->start.len, ri->end.data,
                        ri->end.len, r, &all, &none);
        rangemap_destroy(own);
        if (!none)
            return 1;
    }
    return 0;
}

int rangewait_ready(objlog_materializer *m, rangewait *w, apply_batch *b, int32_t q,
                    int64_t off, const Objlog__RangeIn *ri) {
    int32_t from = ri->from_partition;
    if (from < 0 || from >= m->nparts || !ri->map)
        return 1; /* refused by the state machine */
    pthread_mutex_lock(&m->mu);
    int64_t applied = m->applied[from];
    pthread_mutex_unlock(&m->mu);
    char err[128];
    const rangemap *own = apply_batch_partition_map(b, q, err, sizeof(err));
    /* Ready: a repeat (q's map has the epoch), the range imported, or the
     * RangeOut applied by this store itself (not skipped over by a
     * checkpoint of the source, which may not carry the range). */
    if (!own || rangemap_epoch(own) >= ri->map->epoch || rw_imported(b, ri) != 0 ||
        (applied > ri->from_offset && rw_base(b, from) <= ri->from_offset)) {
        rw_clear(w, q);
        return 1;
    }
    if ((objlog_materializer_fetches(m, from) && applied <= ri->from_offset) ||
        rw_held_here(m, q, ri))
        return 0; /* the range comes through this store's own log order */
    rw_want(w, q, off, ri);
    return 0;
}

int objlog_materializer_range_wait(objlog_materializer *m, int32_t partition,
                                   objlog_range_wait *out) {
    rangewait *w = m->rwait;
    if (!w || partition < 0 || partition >= w->nparts)
        return 0;
    pthread_mutex_lock(&w->mu);
    const rw_slot *s = &w->slots[partition];
    int want = s->want;
    if (want) {
        *out = s->w;
        out->start = rw_dup(&(ProtobufCBinaryData){s->w.sn, s->w.start});
        out->end = rw_dup(&(ProtobufCBinaryData){s->w.en, s->w.end});
        want = out->start && out->end;
        if (!want)
            objlog_range_wait_free(out);
    }
    pthread_mutex_unlock(&w->mu);
    return want;
}
