/* ckptimport.c: a checkpoint stream fed back into a store, as its bytes
 * arrive (checkpoint.h draws the format and the crash rule).
 *
 * Invariant: nothing is written before the header checked out (magic,
 * version, log identity, epoch, partition or handoff); rows the stream's
 * scope does not cover are refused, so a wrong or hostile stream cannot
 * reach another partition's rows; a failure after the header leaves the
 * scope empty. */
#include "checkpoint.h"
#include "ckptint.h"

#include "matlog.h"
#include "rows.h"
#include "store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* ---- import ---- */

enum {
    ST_FIXED,      /* magic, version, flags, identity length */
    ST_IDENT,      /* the identity text */
    ST_TAIL,       /* epoch, partition, applied */
    ST_RANGE_LENS, /* a range stream: start and end lengths */
    ST_RANGE_KEYS, /* ... start, end */
    ST_TAG,        /* 'R' a row, 'E' the trailer */
    ST_ROW_HEAD,   /* cf, key length, value length */
    ST_ROW_BODY,   /* key, value */
    ST_TRAILER,    /* rows, bytes */
    ST_SHA,        /* the hash (not hashed itself) */
    ST_DONE
};

typedef struct ckpt_meta_row {
    keybuf key, value;
} ckpt_meta_row;

struct objlog_ckpt_import {
    objlog_store *s;
    const rangemap *rm;
    int32_t p;
    char ident[CKPT_IDENT_MAX + 1]; /* the store's own meta "logident" */
    size_t ident_len;
    int no_stats;                /* the store keeps no stats view */
    int state;
    size_t need;                 /* bytes of the current element */
    keybuf pend;                 /* ... taken so far */
    uint64_t pos;                /* stream offset of the current element */
    EVP_MD_CTX *sha;
    int64_t applied;             /* the header's */
    uint8_t cf;                  /* the current row's */
    uint32_t klen, vlen;
    uint64_t body_bytes;         /* stream offset of the 'E' */
    rocksdb_writebatch_t *wb;
    size_t staged;               /* bytes staged in wb */
    ckpt_meta_row meta[CKPT_META_N];
    size_t nmeta;
    int begun;                   /* the marker is written: p is ours */
    int failed;
    int finished;
    char err[512];
    objlog_ckpt_progress pr;
    objlog_ckpt_progress_fn progress;
    void *progress_opaque;
    /* A range stream's import (objlog_ckpt_import_handoff_new). */
    int range;
    ckpt_range r;                /* points into rstart, rend */
    keybuf rstart, rend;
    uint32_t repoch;
    uint32_t rsn, ren;           /* the header's lengths */
    keybuf mark_v;               /* the RangeOut's marker row, written last */
    int have_mark;
};

static objlog_ckpt_import *import_alloc(objlog_store *s, const rangemap *rm, int32_t p,
                                        char *errstr, size_t errstr_size) {
    if (p < 0) {
        snprintf(errstr, errstr_size, "partition %d is not a partition", p);
        return NULL;
    }
    objlog_ckpt_import *im = calloc(1, sizeof(*im));
    if (!im) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    im->s = s;
    im->rm = rm;
    im->p = p;
    im->need = CKPT_FIXED_LEN;
    keybuf_init(&im->pend);
    keybuf_init(&im->rstart);
    keybuf_init(&im->rend);
    keybuf_init(&im->mark_v);
    for (size_t i = 0; i < CKPT_META_N; i++) {
        keybuf_init(&im->meta[i].key);
        keybuf_init(&im->meta[i].value);
    }
    im->sha = EVP_MD_CTX_new();
    im->wb = rocksdb_writebatch_create();
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    int rc = 0;
    size_t idn = 0, nsn = 0;
    char *id = ckpt_meta_get(s, ro, "logident", 8, &idn, &rc, errstr, errstr_size);
    char *ns = ckpt_meta_get(s, ro, APPLY_META_NO_STATS, strlen(APPLY_META_NO_STATS), &nsn,
                             &rc, errstr, errstr_size);
    rocksdb_readoptions_destroy(ro);
    im->no_stats = ns != NULL;
    rocksdb_free(ns);
    if (id && idn > 0 && idn <= CKPT_IDENT_MAX) {
        memcpy(im->ident, id, idn);
        im->ident_len = idn;
    } else if (rc == 0) {
        snprintf(errstr, errstr_size, id ? "this store's log identity is corrupt"
                 : "this store records no log identity yet: bind it to its log "
                   "(objlog_store_bind_log) before importing a checkpoint");
        rc = -1;
    }
    rocksdb_free(id);
    if (rc == 0 && (!im->sha || !im->wb || EVP_DigestInit_ex(im->sha, EVP_sha256(), NULL) != 1)) {
        snprintf(errstr, errstr_size, "out of memory");
        rc = -1;
    }
    if (rc < 0) {
        objlog_ckpt_import_destroy(im);
        return NULL;
    }
    return im;
}

objlog_ckpt_import *objlog_ckpt_import_new(objlog_store *s, const rangemap *rm,
                                           int32_t p, char *errstr,
                                           size_t errstr_size) {
    return import_alloc(s, rm, p, errstr, errstr_size);
}

objlog_ckpt_import *objlog_ckpt_import_handoff_new(objlog_store *s, int32_t p, int64_t off,
                                                   uint32_t epoch, const uint8_t *start,
                                                   size_t sn, const uint8_t *end, size_t en,
                                                   char *errstr, size_t errstr_size) {
    objlog_ckpt_import *im = import_alloc(s, NULL, p, errstr, errstr_size);
    if (!im)
        return NULL;
    im->range = 1;
    im->repoch = epoch;
    im->r.from = p;
    im->r.from_off = off;
    if (keybuf_append(&im->rstart, start, sn) < 0 || keybuf_append(&im->rend, end, en) < 0) {
        snprintf(errstr, errstr_size, "out of memory");
        objlog_ckpt_import_destroy(im);
        return NULL;
    }
    im->r.start = im->rstart.data;
    im->r.sn = im->rstart.len;
    im->r.end = im->rend.data;
    im->r.en = im->rend.len;
    return im;
}

void objlog_ckpt_import_set_progress(objlog_ckpt_import *im, objlog_ckpt_progress_fn fn,
                                     void *opaque) {
    im->progress = fn;
    im->progress_opaque = opaque;
}

void objlog_ckpt_import_set_total(objlog_ckpt_import *im, uint64_t total_bytes) {
    im->pr.total_bytes = total_bytes;
}

const objlog_ckpt_progress *objlog_ckpt_import_progress(const objlog_ckpt_import *im) {
    return &im->pr;
}

/* Records why the import failed (the first reason only). -1. */
static int import_fail(objlog_ckpt_import *im, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int import_fail(objlog_ckpt_import *im, const char *fmt, ...) {
    if (im->failed)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(im->err, sizeof(im->err), fmt, ap);
    va_end(ap);
    im->failed = 1;
    return -1;
}

/* A range import that failed: its rows and its marker go. */
static int import_range_purge(objlog_ckpt_import *im, char *why, size_t wn) {
    uint8_t mk[32];
    size_t mn = ckpt_range_marker_key(mk, &im->r);
    int rc = ckpt_range_purge_into(im->s, &im->r, im->wb, why, wn);
    if (rc == 0) {
        rocksdb_writebatch_delete_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                                     (const char *)mk, mn);
        rc = ckpt_write(im->s, im->wb, 1, why, wn);
    }
    return rc;
}

/* After a failure: nothing of p stays, nor the marker. */
static void import_abandon(objlog_ckpt_import *im) {
    if (!im->begun)
        return;
    im->begun = 0;
    rocksdb_writebatch_clear(im->wb);
    char why[256];
    if ((im->range ? import_range_purge(im, why, sizeof(why))
                   : objlog_ckpt_purge(im->s, im->rm, im->p, why, sizeof(why))) < 0) {
        /* The marker stays: the next open purges p. */
        matlog_printf(store_log(im->s), MATLOG_ERR, "checkpoint",
                      "partition %d: removing a failed import: %s "
                      "(it is removed when the store opens next)", im->p, why);
        size_t n = strlen(im->err);
        snprintf(im->err + n, sizeof(im->err) - n, "; removing its rows failed too: %s", why);
    }
}

/* A range's header checked out: the range's old rows here go, with the
 * import's marker (its value: the range) in the same first WriteBatch. */
static int import_range_begin(objlog_ckpt_import *im) {
    uint8_t mk[32], lens[4];
    size_t mn = ckpt_range_marker_key(mk, &im->r);
    keybuf v;
    keybuf_init(&v);
    apply_put_be32(lens, (uint32_t)im->r.sn);
    int rc = keybuf_append(&v, lens, 4) < 0 || keybuf_append(&v, im->r.start, im->r.sn) < 0;
    apply_put_be32(lens, (uint32_t)im->r.en);
    rc = rc || keybuf_append(&v, lens, 4) < 0 || keybuf_append(&v, im->r.end, im->r.en) < 0;
    if (rc) {
        keybuf_free(&v);
        return import_fail(im, "out of memory");
    }
    rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                              (const char *)mk, mn, (const char *)v.data, v.len);
    keybuf_free(&v);
    im->begun = 1;
    char why[256];
    if (ckpt_range_purge_into(im->s, &im->r, im->wb, why, sizeof(why)) < 0 ||
        ckpt_write(im->s, im->wb, 0, why, sizeof(why)) < 0)
        return import_fail(im, "clearing the range: %s", why);
    return 0;
}

/* The header checked out: p is ours from here. The marker goes in the
 * first WriteBatch together with the first deletes of p's old rows. */
static int import_begin(objlog_ckpt_import *im) {
    if (im->range)
        return import_range_begin(im);
    uint8_t *enc = NULL;
    size_t en = 0;
    if (rangemap_encode(im->rm, &enc, &en) < 0)
        return import_fail(im, "out of memory");
    keybuf v;
    keybuf_init(&v);
    uint8_t ver[4], mk[APPLY_META_KEY_MAX];
    apply_put_be32(ver, CKPT_MARKER_VERSION);
    int rc = keybuf_append(&v, ver, 4) || keybuf_append(&v, enc, en) ? -1 : 0;
    free(enc);
    if (rc < 0) {
        keybuf_free(&v);
        return import_fail(im, "out of memory");
    }
    size_t mn = ckpt_marker_key(mk, im->p);
    rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                              (const char *)mk, mn, (const char *)v.data, v.len);
    keybuf_free(&v);
    im->begun = 1;
    char why[256];
    if (ckpt_purge_into(im->s, im->rm, im->p, im->wb, why, sizeof(why)) < 0 ||
        ckpt_write(im->s, im->wb, 0, why, sizeof(why)) < 0)
        return import_fail(im, "clearing partition %d: %s", im->p, why);
    return 0;
}

static int import_fixed(objlog_ckpt_import *im, const uint8_t *b) {
    if (memcmp(b, OBJLOG_CKPT_MAGIC, 8) != 0)
        return import_fail(im, "not a checkpoint (no %s magic at byte 0)",
                           OBJLOG_CKPT_MAGIC);
    uint32_t ver = apply_get_be32(b + 8), flags = apply_get_be32(b + 12);
    if (ver != OBJLOG_CKPT_VERSION)
        return import_fail(im, "checkpoint format version %u; this objlog reads %d", ver,
                           OBJLOG_CKPT_VERSION);
    if (flags & ~(OBJLOG_CKPT_FLAG_NO_STATS | OBJLOG_CKPT_FLAG_RANGE))
        return import_fail(im, "checkpoint flags 0x%x unknown", flags);
    if (!!(flags & OBJLOG_CKPT_FLAG_RANGE) != im->range)
        return import_fail(im, im->range ? "a partition's checkpoint, not a range's"
                                         : "a range's checkpoint, not a partition's");
    if (!!(flags & OBJLOG_CKPT_FLAG_NO_STATS) != im->no_stats)
        return import_fail(im, "the checkpoint's view %s the usage stats and this one %s: "
                           "they cannot be mixed",
                           flags & OBJLOG_CKPT_FLAG_NO_STATS ? "lacks" : "keeps",
                           im->no_stats ? "lacks them" : "keeps them");
    size_t n = (size_t)b[16] << 8 | b[17];
    if (n == 0 || n > CKPT_IDENT_MAX)
        return import_fail(im, "checkpoint header: log identity of %zu bytes", n);
    im->state = ST_IDENT;
    im->need = n;
    return 0;
}

static int import_ident(objlog_ckpt_import *im, const uint8_t *b, size_t n) {
    if (n != im->ident_len || memcmp(b, im->ident, n) != 0)
        return import_fail(im, "checkpoint of another log: it was built from \"%.*s\", this "
                           "store from \"%.*s\"", (int)n, (const char *)b,
                           (int)im->ident_len, im->ident);
    im->state = ST_TAIL;
    im->need = CKPT_TAIL_LEN;
    return 0;
}

/* A range stream's header after its offset: the range must be the one
 * this import expects. */
static int import_range_tail(objlog_ckpt_import *im, const uint8_t *b) {
    uint32_t epoch = apply_get_be32(b), part = apply_get_be32(b + 4);
    if (part != (uint32_t)im->r.from || im->applied != im->r.from_off)
        return import_fail(im, "the range given away at %u.%lld, not at %d.%lld", part,
                           (long long)im->applied, im->r.from, (long long)im->r.from_off);
    if (epoch != im->repoch)
        return import_fail(im, "range taken under map epoch %u; its RangeIn has epoch %u",
                           epoch, im->repoch);
    im->state = ST_RANGE_LENS;
    im->need = CKPT_RANGE_LENS;
    return 0;
}

static int import_range_lens(objlog_ckpt_import *im, const uint8_t *b) {
    im->rsn = apply_get_be32(b);
    im->ren = apply_get_be32(b + 4);
    if (im->rsn != im->r.sn || im->ren != im->r.en)
        return import_fail(im, "the stream moves another range (bounds of %u and %u bytes, "
                           "not %zu and %zu)", im->rsn, im->ren, im->r.sn, im->r.en);
    im->state = ST_RANGE_KEYS;
    im->need = (size_t)im->rsn + im->ren;
    if (im->need)
        return 0;
    im->state = ST_TAG;
    im->need = 1;
    return import_begin(im);
}

static int import_range_keys(objlog_ckpt_import *im, const uint8_t *b) {
    if ((im->r.sn && memcmp(b, im->r.start, im->r.sn) != 0) ||
        (im->r.en && memcmp(b + im->r.sn, im->r.end, im->r.en) != 0))
        return import_fail(im, "the stream moves another range than the RangeIn's");
    im->state = ST_TAG;
    im->need = 1;
    return import_begin(im);
}

static int import_tail(objlog_ckpt_import *im, const uint8_t *b) {
    uint32_t epoch = apply_get_be32(b), part = apply_get_be32(b + 4);
    im->applied = (int64_t)apply_get_be64(b + 8);
    if (im->range)
        return import_range_tail(im, b);
    if (epoch != rangemap_epoch(im->rm))
        return import_fail(im, "checkpoint taken under range map epoch %u; this node uses "
                           "epoch %u", epoch, rangemap_epoch(im->rm));
    if (part != (uint32_t)im->p)
        return import_fail(im, "checkpoint of partition %u, not of partition %d", part,
                           im->p);
    if (im->applied <= 0)
        return import_fail(im, "checkpoint with applied offset %lld",
                           (long long)im->applied);
    im->state = ST_TAG;
    im->need = 1;
    return import_begin(im);
}

static int import_tag(objlog_ckpt_import *im, uint8_t tag) {
    if (tag == 'R') {
        im->state = ST_ROW_HEAD;
        im->need = CKPT_ROW_HEAD_LEN;
    } else if (tag == 'E') {
        im->body_bytes = im->pos;
        im->state = ST_TRAILER;
        im->need = CKPT_TRAILER_LEN;
    } else {
        return import_fail(im, "corrupt checkpoint: byte 0x%02x at offset %llu is neither "
                           "a row nor the trailer", tag, (unsigned long long)im->pos);
    }
    return 0;
}

static int import_row_head(objlog_ckpt_import *im, const uint8_t *b) {
    im->cf = b[0];
    im->klen = apply_get_be32(b + 1);
    im->vlen = apply_get_be32(b + 5);
    if (im->cf >= OBJLOG_CF_COUNT || im->klen == 0 || im->klen > CKPT_KEY_MAX ||
        im->vlen > CKPT_VALUE_MAX)
        return import_fail(im, "corrupt checkpoint: row %llu at offset %llu: cf %u, key %u "
                           "bytes, value %u bytes", (unsigned long long)im->pr.rows,
                           (unsigned long long)im->pos - 1, im->cf, im->klen, im->vlen);
    im->state = ST_ROW_BODY;
    im->need = (size_t)im->klen + im->vlen;
    return 0;
}

/* Meta rows wait for the last WriteBatch: until then p reads as never
 * applied, whatever happens. */
static int import_meta(objlog_ckpt_import *im, const uint8_t *k, const uint8_t *v) {
    for (size_t i = 0; i < im->nmeta; i++)
        if (im->meta[i].key.len == im->klen && !memcmp(im->meta[i].key.data, k, im->klen))
            return import_fail(im, "corrupt checkpoint: meta row %.*s twice",
                               (int)im->klen - 4, (const char *)k);
    ckpt_meta_row *m = &im->meta[im->nmeta];
    if (im->nmeta >= CKPT_META_N || keybuf_append(&m->key, k, im->klen) < 0 ||
        keybuf_append(&m->value, v, im->vlen) < 0)
        return import_fail(im, "out of memory");
    im->nmeta++;
    return 0;
}

/* A range stream's row: one of the range's, and its RangeOut marker is
 * kept for the last WriteBatch. */
static int import_range_row(objlog_ckpt_import *im, const uint8_t *k, const uint8_t *v) {
    if (ckpt_range_row(&im->r, im->cf, k, im->klen) != 1)
        return import_fail(im, "corrupt range checkpoint: row %llu (%s) lies outside the "
                           "range", (unsigned long long)im->pr.rows - 1,
                           objlog_cf_name(im->cf));
    if (im->cf != OBJLOG_CF_OUTCOMES || im->klen != APPLY_OUTCOME_KEY_LEN)
        return 1;
    if (im->have_mark)
        return import_fail(im, "corrupt range checkpoint: its RangeOut marker twice");
    im->have_mark = 1;
    return keybuf_append(&im->mark_v, v, im->vlen) < 0 ? import_fail(im, "out of memory") : 0;
}

static int import_row(objlog_ckpt_import *im, const uint8_t *b) {
    const uint8_t *k = b, *v = b + im->klen;
    int part = im->range ? im->p : ckpt_row_part(im->rm, im->cf, k, im->klen);
    im->pr.rows++;
    im->state = ST_TAG;
    im->need = 1;
    int rr = im->range ? import_range_row(im, k, v) : 1;
    if (rr <= 0)
        return rr;
    if (part != im->p)
        return import_fail(im, "corrupt checkpoint: row %llu (%s) belongs to %s",
                           (unsigned long long)im->pr.rows - 1, objlog_cf_name(im->cf),
                           part < 0 ? "no partition" : "another partition");
    if (im->cf == OBJLOG_CF_META)
        return import_meta(im, k, v);
    rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, (objlog_cf)im->cf),
                              (const char *)k, im->klen, (const char *)v, im->vlen);
    im->staged += (size_t)im->klen + im->vlen + 16;
    if (im->staged < CKPT_BATCH_BYTES)
        return 0;
    im->staged = 0;
    char why[256];
    if (ckpt_write(im->s, im->wb, 0, why, sizeof(why)) < 0)
        return import_fail(im, "%s", why);
    return 0;
}

static int import_trailer(objlog_ckpt_import *im, const uint8_t *b) {
    uint64_t rows = apply_get_be64(b), bytes = apply_get_be64(b + 8);
    if (rows != im->pr.rows || bytes != im->body_bytes)
        return import_fail(im, "corrupt checkpoint: the trailer counts %llu rows in %llu "
                           "bytes, the stream held %llu in %llu",
                           (unsigned long long)rows, (unsigned long long)bytes,
                           (unsigned long long)im->pr.rows,
                           (unsigned long long)im->body_bytes);
    im->state = ST_SHA;
    im->need = CKPT_SHA_LEN;
    return 0;
}

static int import_sha(objlog_ckpt_import *im, const uint8_t *b) {
    uint8_t sha[CKPT_SHA_LEN];
    unsigned int n = 0;
    EVP_DigestFinal_ex(im->sha, sha, &n);
    if (memcmp(sha, b, CKPT_SHA_LEN) != 0)
        return import_fail(im, "checkpoint checksum mismatch: the SHA-256 of its %llu bytes "
                           "differs from the trailer's (corrupted in transit or on disk)",
                           (unsigned long long)im->pos);
    im->state = ST_DONE;
    im->need = 0;
    return 0;
}

/* The current element (im->pend, im->need bytes) is whole. */
static int import_step(objlog_ckpt_import *im) {
    const uint8_t *b = im->pend.data;
    size_t n = im->pend.len;
    int st = im->state, rc;
    if (st != ST_SHA)
        EVP_DigestUpdate(im->sha, b, n);
    switch (st) {
    case ST_FIXED: rc = import_fixed(im, b); break;
    case ST_IDENT: rc = import_ident(im, b, n); break;
    case ST_TAIL: rc = import_tail(im, b); break;
    case ST_RANGE_LENS: rc = import_range_lens(im, b); break;
    case ST_RANGE_KEYS: rc = import_range_keys(im, b); break;
    case ST_TAG: rc = import_tag(im, b[0]); break;
    case ST_ROW_HEAD: rc = import_row_head(im, b); break;
    case ST_ROW_BODY: rc = import_row(im, b); break;
    case ST_TRAILER: rc = import_trailer(im, b); break;
    default: rc = import_sha(im, b); break;
    }
    im->pos += n;
    keybuf_reset(&im->pend);
    return rc;
}

static int import_error(objlog_ckpt_import *im, char *errstr, size_t es) {
    import_abandon(im);
    if (im->range)
        snprintf(errstr, es, "import of the range partition %d gave away at offset %lld: %s",
                 im->p, (long long)im->r.from_off, im->err);
    else
        snprintf(errstr, es, "import of partition %d: %s", im->p, im->err);
    return -1;
}

int objlog_ckpt_import_feed(objlog_ckpt_import *im, const void *data, size_t n,
                            char *errstr, size_t errstr_size) {
    const uint8_t *p = data;
    if (im->finished)
        import_fail(im, "fed after it finished");
    while (n > 0 && !im->failed) {
        if (im->state == ST_DONE) {
            import_fail(im, "corrupt checkpoint: %zu bytes after its trailer", n);
            break;
        }
        size_t take = im->need - im->pend.len;
        take = take < n ? take : n;
        if (keybuf_append(&im->pend, p, take) < 0) {
            import_fail(im, "out of memory");
            break;
        }
        p += take;
        n -= take;
        im->pr.bytes += take;
        if (im->pend.len == im->need)
            import_step(im);
    }
    if (im->failed)
        return import_error(im, errstr, errstr_size);
    if (im->progress)
        im->progress(im->progress_opaque, &im->pr);
    return 0;
}

static const char *import_state_name(int st) {
    switch (st) {
    case ST_FIXED: case ST_IDENT: case ST_TAIL: case ST_RANGE_LENS: case ST_RANGE_KEYS:
        return "in its header";
    case ST_TAG: return "before its trailer";
    case ST_ROW_HEAD: case ST_ROW_BODY: return "inside a row";
    default: return "inside its trailer";
    }
}

/* A range's last WriteBatch: the RangeOut's marker in (the RangeIn that
 * waits for it may apply from here), the import's marker out, synced. */
static int import_range_commit(objlog_ckpt_import *im) {
    if (!im->have_mark)
        return import_fail(im, "corrupt range checkpoint: no RangeOut marker in it");
    char why[256];
    if (ckpt_write(im->s, im->wb, 0, why, sizeof(why)) < 0)
        return import_fail(im, "%s", why);
    uint8_t x[APPLY_OUTCOME_KEY_LEN], mk[32];
    x[0] = 'x';
    apply_put_be32(x + 1, (uint32_t)im->r.from);
    apply_put_be64(x + 5, (uint64_t)im->r.from_off);
    size_t mn = ckpt_range_marker_key(mk, &im->r);
    rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_OUTCOMES),
                              (const char *)x, sizeof(x), (const char *)im->mark_v.data,
                              im->mark_v.len);
    uint8_t rk[32];
    size_t rn = objlog_ckpt_rimported_key(rk, im->r.from, im->r.from_off);
    rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                              (const char *)rk, rn, "", 0);
    rocksdb_writebatch_delete_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                                 (const char *)mk, mn);
    if (ckpt_write(im->s, im->wb, 1, why, sizeof(why)) < 0)
        return import_fail(im, "%s", why);
    im->begun = 0;
    return 0;
}

/* The last WriteBatch: p's meta rows in, the marker out, synced. */
static int import_commit(objlog_ckpt_import *im) {
    if (im->range)
        return import_range_commit(im);
    const ckpt_meta_row *applied = NULL;
    uint8_t ak[APPLY_META_KEY_MAX];
    size_t an = apply_meta_key(ak, APPLY_META_APPLIED, im->p);
    for (size_t i = 0; i < im->nmeta; i++)
        if (im->meta[i].key.len == an && !memcmp(im->meta[i].key.data, ak, an))
            applied = &im->meta[i];
    if (!applied || applied->value.len != 8 ||
        (int64_t)apply_get_be64(applied->value.data) != im->applied)
        return import_fail(im, "corrupt checkpoint: its \"applied\" row does not hold the "
                           "header's offset %lld", (long long)im->applied);
    char why[256];
    if (ckpt_write(im->s, im->wb, 0, why, sizeof(why)) < 0)
        return import_fail(im, "%s", why);
    for (size_t i = 0; i < im->nmeta; i++)
        rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                                  (const char *)im->meta[i].key.data, im->meta[i].key.len,
                                  (const char *)im->meta[i].value.data,
                                  im->meta[i].value.len);
    uint8_t mk[APPLY_META_KEY_MAX], base[8];
    size_t mn = ckpt_marker_key(mk, im->p);
    rocksdb_writebatch_delete_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                                 (const char *)mk, mn);
    mn = apply_meta_key(mk, OBJLOG_CKPT_META_BASE, im->p);
    apply_put_be64(base, (uint64_t)im->applied);
    rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                              (const char *)mk, mn, (const char *)base, sizeof(base));
    if (ckpt_write(im->s, im->wb, 1, why, sizeof(why)) < 0)
        return import_fail(im, "%s", why);
    im->begun = 0;
    return 0;
}

int objlog_ckpt_import_finish(objlog_ckpt_import *im, int64_t *applied, char *errstr,
                              size_t errstr_size) {
    if (!im->failed && im->finished)
        import_fail(im, "finished twice");
    if (!im->failed && im->state != ST_DONE)
        import_fail(im, "truncated checkpoint: the stream ended after %llu bytes, %s",
                    (unsigned long long)im->pr.bytes, import_state_name(im->state));
    if (!im->failed)
        import_commit(im);
    if (im->failed)
        return import_error(im, errstr, errstr_size);
    im->finished = 1;
    *applied = im->applied;
    return 0;
}

void objlog_ckpt_import_destroy(objlog_ckpt_import *im) {
    if (!im)
        return;
    if (im->begun) {
        import_fail(im, "abandoned");
        import_abandon(im);
    }
    keybuf_free(&im->pend);
    keybuf_free(&im->rstart);
    keybuf_free(&im->rend);
    keybuf_free(&im->mark_v);
    for (size_t i = 0; i < CKPT_META_N; i++) {
        keybuf_free(&im->meta[i].key);
        keybuf_free(&im->meta[i].value);
    }
    if (im->wb)
        rocksdb_writebatch_destroy(im->wb);
    EVP_MD_CTX_free(im->sha);
    free(im);
}

