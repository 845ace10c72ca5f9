/* blobrefs.c: the `blobs` CF (blobrefs.h) as the state machine keeps it,
 * the BlobReleased records it stages, and the reads of it that the blob
 * store's collector and GET /v1/blobs make (materializer.h).
 * Invariant: a `blobs` row exists exactly while the row it names (a
 * version or a part, same batch) names that blob; a release is staged in
 * the batch of the event that removed the last such row of its partition. */
#include "blobrefs.h"

#include "feed.h"
#include "materializer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void blobrefs_ids_free(char **ids, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

static int ids_has(char *const *ids, size_t n, const char *id) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0)
            return 1;
    return 0;
}

static int ids_push(char ***ids, size_t *n, const char *id) {
    if (!id || !id[0] || ids_has(*ids, *n, id))
        return 0;
    char **g = realloc(*ids, (*n + 1) * sizeof(*g));
    if (!g)
        return -1;
    *ids = g;
    if (!(g[*n] = strdup(id)))
        return -1;
    (*n)++;
    return 0;
}

int blobrefs_ids_of(const Objlog__ObjectMeta *m, char ***ids, size_t *n) {
    if (!m)
        return 0;
    if (ids_push(ids, n, m->blob_id) < 0)
        return -1;
    for (size_t i = 0; i < m->n_parts; i++)
        if (ids_push(ids, n, m->parts[i]->blob_id) < 0)
            return -1;
    return 0;
}

void blobrefs_ev_free(blobrefs_ev *e) {
    blobrefs_ids_free(e->cur, e->ncur);
    for (size_t i = 0; i < e->ndrops; i++) {
        free(e->drops[i].id);
        free(e->drops[i].key);
        free(e->drops[i].version_id);
        free(e->drops[i].upload_id);
    }
    free(e->drops);
    memset(e, 0, sizeof(*e));
}

int blobrefs_note_current(blobrefs_ev *e, const Objlog__ObjectMeta *m) {
    blobrefs_ids_free(e->cur, e->ncur);
    e->cur = NULL;
    e->ncur = 0;
    return blobrefs_ids_of(m, &e->cur, &e->ncur);
}

int blobrefs_key(keybuf *k, const char *id, char tag, const uint8_t *row, size_t rn) {
    keybuf_init(k);
    uint8_t t = (uint8_t)tag;
    if (keycodec_append_enc(k, (const uint8_t *)id, strlen(id)) < 0 ||
        keybuf_append(k, &t, 1) < 0 || keybuf_append(k, row, rn) < 0) {
        keybuf_free(k);
        return -1;
    }
    return 0;
}

int blobrefs_add(apply_batch *b, const char *id, char tag, const uint8_t *row, size_t rn,
                 char *errstr, size_t es) {
    if (!id || !id[0])
        return 0;
    keybuf k;
    if (blobrefs_key(&k, id, tag, row, rn) < 0) {
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    apply_batch_put(b, OBJLOG_CF_BLOBS, k.data, k.len, "", 0);
    keybuf_free(&k);
    return 0;
}

int blobrefs_add_meta(apply_batch *b, const Objlog__ObjectMeta *m, char tag, const uint8_t *row,
                      size_t rn, char *errstr, size_t es) {
    char **ids = NULL;
    size_t n = 0;
    int rc = blobrefs_ids_of(m, &ids, &n);
    if (rc < 0)
        snprintf(errstr, es, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = blobrefs_add(b, ids[i], tag, row, rn, errstr, es);
    blobrefs_ids_free(ids, n);
    return rc;
}

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

static int note_drop(blobrefs_ev *e, const char *id, const blobrefs_from *f) {
    if (e->ndrops == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 4;
        blobrefs_drop *g = realloc(e->drops, cap * sizeof(*g));
        if (!g)
            return -1;
        e->drops = g;
        e->cap = cap;
    }
    blobrefs_drop *d = &e->drops[e->ndrops];
    memset(d, 0, sizeof(*d));
    d->id = strdup(id);
    d->key = malloc(f->kn ? f->kn : 1);
    d->version_id = dup_or_empty(f->version_id);
    d->upload_id = dup_or_empty(f->upload_id);
    e->ndrops++;
    if (!d->id || !d->key || !d->version_id || !d->upload_id)
        return -1; /* blobrefs_ev_free frees what was made */
    if (f->kn)
        memcpy(d->key, f->key, f->kn);
    d->kn = f->kn;
    return 0;
}

int blobrefs_remove(apply_batch *b, blobrefs_ev *e, const char *id, char tag,
                    const uint8_t *row, size_t rn, const blobrefs_from *f, char *errstr,
                    size_t es) {
    if (!id || !id[0])
        return 0;
    keybuf k;
    if (blobrefs_key(&k, id, tag, row, rn) < 0 || note_drop(e, id, f) < 0) {
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    apply_batch_del(b, OBJLOG_CF_BLOBS, k.data, k.len);
    keybuf_free(&k);
    return 0;
}

int blobrefs_remove_ids(apply_batch *b, blobrefs_ev *e, char *const *ids, size_t n, char tag,
                        const uint8_t *row, size_t rn, const blobrefs_from *f, char *errstr,
                        size_t es) {
    for (size_t i = 0; i < n; i++)
        if (blobrefs_remove(b, e, ids[i], tag, row, rn, f, errstr, es) < 0)
            return -1;
    return 0;
}

int blobrefs_parse(const uint8_t *k, size_t kn, keybuf *id, const uint8_t **row, size_t *rn) {
    keybuf tmp;
    keybuf_init(&tmp);
    size_t used;
    int rc = keycodec_decode_enc(k, kn, id ? id : &tmp, &used);
    keybuf_free(&tmp);
    if (rc < 0 || used + 1 > kn || (k[used] != BLOBREFS_VERSION && k[used] != BLOBREFS_PART))
        return -1;
    *row = k + used + 1;
    *rn = kn - used - 1;
    return 0;
}

/* Calls on(arg, row, rn) for every `blobs` row of id through it (until on
 * returns non-zero, which is returned); 0 at the end, -1 on an error. */
typedef int ref_fn(void *arg, const uint8_t *row, size_t rn);

static int each_ref(rocksdb_iterator_t *it, const char *id, ref_fn *on, void *arg, char *errstr,
                    size_t es) {
    keybuf p;
    keybuf_init(&p);
    if (keycodec_append_enc(&p, (const uint8_t *)id, strlen(id)) < 0) {
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    int rc = 0;
    for (rocksdb_iter_seek(it, (const char *)p.data, p.len); rc == 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn <= p.len || memcmp(k, p.data, p.len) != 0)
            break;
        const uint8_t *row;
        size_t rn;
        if (blobrefs_parse(k, kn, NULL, &row, &rn) < 0)
            continue;
        rc = on(arg, row, rn);
    }
    keybuf_free(&p);
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (err) {
        snprintf(errstr, es, "scan blobs: %s", err);
        rocksdb_free(err);
        return -1;
    }
    return rc;
}

typedef struct owned_ctx {
    const rangemap *rm;
    int32_t p;
} owned_ctx;

static int row_owned(void *arg, const uint8_t *row, size_t rn) {
    const owned_ctx *o = arg;
    return rangemap_owns(o->rm, o->p, row, rn) == 1;
}

static int stage_release(apply_batch *b, const blobrefs_drop *d, const blobrefs_event *ev,
                         uint16_t *next, char *errstr, size_t es) {
    if (*next == UINT16_MAX) {
        snprintf(errstr, es, "more than %u feed records for one event", UINT16_MAX);
        return -1;
    }
    char seqr[FEED_SEQUENCER_LEN + 1];
    feed_sequencer(seqr, ev->epoch, ev->p, ev->off);
    Objlog__FeedRecord r = OBJLOG__FEED_RECORD__INIT;
    r.event_name = "BlobReleased";
    r.bucket = (char *)ev->bucket;
    r.key.data = d->key;
    r.key.len = d->kn;
    r.version_id = d->version_id;
    r.upload_id = d->upload_id;
    r.blob_id = d->id;
    r.sequencer = seqr;
    r.log_time_ms = ev->log_time_ms;
    r.request_id = ev->request_id;
    r.owner = (char *)(ev->owner ? ev->owner : "");
    return feed_stage_record(b, ev->p, ev->off, (*next)++, &r, errstr, es);
}

int blobrefs_release(apply_batch *b, blobrefs_ev *e, const blobrefs_event *ev, uint16_t *next,
                     char *errstr, size_t es) {
    if (!e->ndrops)
        return 0;
    const rangemap *rm = apply_batch_partition_map(b, ev->p, errstr, es);
    if (!rm)
        return -1;
    owned_ctx o = {rm, ev->p};
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_BLOBS);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < e->ndrops; i++) {
        const blobrefs_drop *d = &e->drops[i];
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(e->drops[j].id, d->id) == 0;
        if (seen)
            continue;
        int held = each_ref(it, d->id, row_owned, &o, errstr, es);
        if (held < 0)
            rc = -1;
        else if (!held)
            rc = stage_release(b, d, ev, next, errstr, es);
    }
    rocksdb_iter_destroy(it);
    return rc;
}

/* ---- reads for the blob store (materializer.h) ---- */

typedef struct kept_ctx {
    const rangemap *rm;
    objlog_blob_keep_fn *keep;
    void *karg;
} kept_ctx;

static int row_kept(void *arg, const uint8_t *row, size_t rn) {
    const kept_ctx *c = arg;
    int p = rangemap_partition(c->rm, row, rn);
    return p >= 0 && c->keep(c->karg, p);
}

static rocksdb_iterator_t *blobs_iter(objlog_store *s, rocksdb_readoptions_t **ro,
                                      const rocksdb_snapshot_t **snap) {
    *snap = rocksdb_create_snapshot(objlog_store_db(s));
    *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(*ro, *snap);
    return rocksdb_create_iterator_cf(objlog_store_db(s), *ro,
                                      objlog_store_cf(s, OBJLOG_CF_BLOBS));
}

static void blobs_iter_done(objlog_store *s, rocksdb_iterator_t *it, rocksdb_readoptions_t *ro,
                            const rocksdb_snapshot_t *snap) {
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    rocksdb_release_snapshot(objlog_store_db(s), snap);
}

int objlog_store_blob_referenced(objlog_store *s, const rangemap *rm,
                                 objlog_blob_keep_fn *keep, void *karg, const char *id,
                                 char *errstr, size_t errstr_size) {
    rocksdb_readoptions_t *ro;
    const rocksdb_snapshot_t *snap;
    rocksdb_iterator_t *it = blobs_iter(s, &ro, &snap);
    kept_ctx c = {rm, keep, karg};
    int rc = each_ref(it, id, row_kept, &c, errstr, errstr_size);
    blobs_iter_done(s, it, ro, snap);
    return rc < 0 ? -1 : rc != 0;
}

long objlog_store_blobs_scan(objlog_store *s, const rangemap *rm, objlog_blob_keep_fn *keep,
                             void *karg, const char *after, size_t max, objlog_blob_fn *fn,
                             void *arg, char *errstr, size_t errstr_size) {
    rocksdb_readoptions_t *ro;
    const rocksdb_snapshot_t *snap;
    rocksdb_iterator_t *it = blobs_iter(s, &ro, &snap);
    keybuf start, id, last;
    keybuf_init(&start);
    keybuf_init(&id);
    keybuf_init(&last);
    long got = 0;
    int have_last = 0, stop = 0;
    kept_ctx c = {rm, keep, karg};
    if (after && after[0] &&
        (keycodec_append_enc(&start, (const uint8_t *)after, strlen(after)) < 0 ||
         keybuf_append(&start, "\xff", 1) < 0)) {
        snprintf(errstr, errstr_size, "out of memory");
        got = -1;
    }
    /* enc(after) ‖ 0xff sorts after every row of `after` (a tag is 'p' or
     * 'v') and before the next id's. */
    if (got == 0)
        rocksdb_iter_seek(it, (const char *)start.data, start.len);
    for (; got >= 0 && !stop && (size_t)got < max && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        const uint8_t *row;
        size_t rn;
        keybuf_reset(&id);
        if (blobrefs_parse(k, kn, &id, &row, &rn) < 0 || !row_kept(&c, row, rn))
            continue;
        if (have_last && id.len == last.len && memcmp(id.data, last.data, id.len) == 0)
            continue;
        keybuf_reset(&last);
        if (keybuf_append(&last, id.data, id.len) < 0 || keybuf_append(&last, "", 1) < 0) {
            snprintf(errstr, errstr_size, "out of memory");
            got = -1;
            break;
        }
        last.len--; /* NUL-terminated for fn, compared without it */
        have_last = 1;
        got++;
        stop = fn(arg, (const char *)last.data, last.len) != 0;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (err) {
        snprintf(errstr, errstr_size, "scan blobs: %s", err);
        rocksdb_free(err);
        got = -1;
    }
    keybuf_free(&start);
    keybuf_free(&id);
    keybuf_free(&last);
    blobs_iter_done(s, it, ro, snap);
    return got;
}
