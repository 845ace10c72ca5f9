/* stake.c: a bucket across ranges (docs/ARCHITECTURE.md, "A bucket across
 * ranges").
 *
 * A range may start inside a bucket, so a bucket's keys may lie on several
 * partitions. Its home partition (the one holding route_key(b, ""), where
 * every bucket event routes) keeps the bucket record and usage row under
 * bucket_part(b) as ever; every other partition holding some of its keys
 * keeps a stake of its own: a copy of the record at bucket_part(b)
 * be32(p) in `buckets` (the settings its keys are applied by, and the
 * share of the quota it holds) and the usage of its keys at 'b'
 * bucket_part(b) be32(p) in `stats`. An object event reads and writes its
 * own partition's stake only, so each partition's rows stay a function of
 * its own log, and two apply lanes never write one row.
 *
 * A handoff moves stakes: RangeOut on P counts what the moving keys hold
 * (P's rows of them are final from there on), takes it out of P's stake
 * and leaves it in the marker row; RangeIn on Q adds it to Q's.
 *
 * Invariants: the usage rows of a bucket's stakes sum to the usage of its
 * keys; with a quota, their allowances sum to the quota (escrow: a write
 * is refused when it would take its own stake past its allowance, so no
 * acknowledged write takes the bucket past its quota). */
#include "stake.h"

#include "keycodec.h"
#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bytes_cmp(const uint8_t *x, size_t xn, const uint8_t *y, size_t yn) {
    size_t m = xn < yn ? xn : yn;
    int c = m ? memcmp(x, y, m) : 0;
    return c ? c : (xn < yn ? -1 : xn > yn);
}

static int oom(char *errstr, size_t es) {
    snprintf(errstr, es, "out of memory");
    return -1;
}

/* [lo, hi): every row key of the bucket (bpart ends with enc's 00 01, so
 * bumping its last byte bounds them all). */
static int bucket_span(const uint8_t *bpart, size_t bn, keybuf *lo, keybuf *hi) {
    keybuf_reset(lo);
    keybuf_reset(hi);
    if (keybuf_append(lo, bpart, bn) < 0 || keybuf_append(hi, bpart, bn) < 0)
        return -1;
    hi->data[hi->len - 1]++;
    return 0;
}

static int home_of(const rangemap *rm, int32_t p, const uint8_t *bpart, size_t bn) {
    uint8_t rk[512];
    if (bn + 2 > sizeof(rk))
        return -1;
    memcpy(rk, bpart, bn);
    rk[bn] = 0x00;
    rk[bn + 1] = 0x01; /* enc("") */
    return rangemap_owns(rm, p, rk, bn + 2);
}

static int key_under(const rangemap *rm, int32_t p, const uint8_t *bpart, size_t bn,
                     keybuf *out) {
    int home = home_of(rm, p, bpart, bn);
    if (home < 0)
        return -1;
    if (home) {
        keybuf_reset(out);
        return keybuf_append(out, bpart, bn);
    }
    return objlog_bucket_stake_key(out, bpart, bn, p);
}

int stake_key(apply_batch *b, int32_t p, const uint8_t *bpart, size_t bn, keybuf *out,
              char *errstr, size_t es) {
    const rangemap *rm = apply_batch_partition_map(b, p, errstr, es);
    if (!rm)
        return -1;
    return key_under(rm, p, bpart, bn, out) < 0 ? oom(errstr, es) : 0;
}

/* How the bucket's keys sit on p under rm: *all every one is p's, *none
 * none is. 0 or -1 (out of memory). */
static int bucket_covers(const rangemap *rm, int32_t p, const uint8_t *bpart, size_t bn,
                         int *all, int *none) {
    keybuf lo, hi;
    keybuf_init(&lo);
    keybuf_init(&hi);
    int rc = bucket_span(bpart, bn, &lo, &hi);
    if (rc == 0)
        rangemap_covers(rm, lo.data, lo.len, hi.data, hi.len, p, all, none);
    keybuf_free(&lo);
    keybuf_free(&hi);
    return rc;
}

/* 1 if p holds some of the bucket's keys under rm, 0 none, -1 error. */
static int holds_any(const rangemap *rm, int32_t p, const uint8_t *bpart, size_t bn) {
    int all, none;
    return bucket_covers(rm, p, bpart, bn, &all, &none) < 0 ? -1 : !none;
}

int stake_spread(apply_batch *b, int32_t p, const uint8_t *bpart, size_t bn, char *errstr,
                 size_t es) {
    const rangemap *rm = apply_batch_partition_map(b, p, errstr, es);
    int all, none;
    if (!rm)
        return -1;
    return bucket_covers(rm, p, bpart, bn, &all, &none) < 0 ? oom(errstr, es) : !all;
}

int stake_bucket_gate(apply_ev *a) {
    const char *what;
    switch (a->ev->op_case) {
    case OBJLOG__EVENT__OP_DELETE_BUCKET: what = "deleted"; break;
    case OBJLOG__EVENT__OP_PUT_INDEX: what = "given an index"; break;
    default: return 1;
    }
    int spread = stake_spread(a->b, a->partition, a->bpart.data, a->bpart.len, a->errstr,
                              a->es);
    if (spread <= 0)
        return spread < 0 ? -1 : 1;
    a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_SPANS_RANGES;
    snprintf(a->res.message, sizeof(a->res.message),
             "bucket %s spans ranges on other partitions and cannot be %s until they are "
             "merged back into its first range (objlog ranges merge)",
             a->ev->bucket, what);
    return 0;
}

/* ---- the quota a stake enforces ---- */

void stake_quota_of(const Objlog__BucketRecord *r, stake_quota *q) {
    const Objlog__Quota *whole = r->quota, *held = r->allowance ? r->allowance : whole;
    q->max_bytes = whole && whole->max_bytes ? held->max_bytes : UINT64_MAX;
    q->max_objects = whole && whole->max_objects ? held->max_objects : UINT64_MAX;
    q->share = r->allowance != NULL;
}

int stake_quota_allows(apply_ev *a, const stake_quota *q, uint64_t size) {
    if (!apply_batch_stats_on(a->b) || (q->max_bytes == UINT64_MAX && q->max_objects == UINT64_MAX))
        return 1;
    keybuf k;
    keybuf_init(&k);
    statrow *row = objlog_stats_stake_key(&k, a->stake.data, a->stake.len) < 0
                       ? NULL : stage_stats_row(a->b, &k, a->errstr, a->es);
    keybuf_free(&k);
    if (!row)
        return -1;
    Objlog__UsageStats u = row->u;
    uint64_t objects = u.objects - (uint64_t)a->obj_live_before + 1;
    uint64_t bytes = u.bytes - a->obj_size_before + size;
    const char *what = NULL;
    if (objects > q->max_objects && objects > u.objects)
        what = "objects";
    else if (bytes > q->max_bytes && bytes > u.bytes)
        what = "bytes";
    if (!what)
        return 1;
    a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_QUOTA_EXCEEDED;
    snprintf(a->res.message, sizeof(a->res.message),
             q->share ? "the write would exceed the share of the bucket's quota of max %s that "
                        "its range holds (the bucket spans partitions)"
                      : "the write would exceed the bucket's quota of max %s",
             what);
    return 0;
}

/* ---- records and usage rows of a stake ---- */

static int load_record(apply_batch *b, const keybuf *k, Objlog__BucketRecord **out,
                       char *errstr, size_t es) {
    char *v;
    size_t vn;
    *out = NULL;
    int rc = apply_batch_get(b, OBJLOG_CF_BUCKETS, k->data, k->len, &v, &vn, errstr, es);
    if (rc <= 0)
        return rc;
    *out = objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out) {
        snprintf(errstr, es, "bucket record: corrupt");
        return -1;
    }
    return 1;
}

static int usage_get(apply_batch *b, const keybuf *stake, Objlog__UsageStats *u,
                     char *errstr, size_t es) {
    Objlog__UsageStats zero = OBJLOG__USAGE_STATS__INIT;
    *u = zero;
    if (!apply_batch_stats_on(b))
        return 0;
    keybuf k;
    keybuf_init(&k);
    statrow *r = objlog_stats_stake_key(&k, stake->data, stake->len) < 0
                     ? NULL : stage_stats_row(b, &k, errstr, es);
    keybuf_free(&k);
    if (!r)
        return -1;
    *u = r->u;
    return 0;
}

static int usage_put(apply_batch *b, const keybuf *stake, const Objlog__UsageStats *u,
                     int present, char *errstr, size_t es) {
    if (!apply_batch_stats_on(b))
        return 0;
    keybuf k;
    keybuf_init(&k);
    int rc = objlog_stats_stake_key(&k, stake->data, stake->len) < 0
                 ? oom(errstr, es) : stage_stats_put(b, &k, u, present);
    keybuf_free(&k);
    return rc < 0 ? oom(errstr, es) : 0;
}

/* u += sign * d, field by field. */
static void usage_add(Objlog__UsageStats *u, const Objlog__UsageStats *d, int sign) {
    u->objects += (uint64_t)sign * d->objects;
    u->bytes += (uint64_t)sign * d->bytes;
    u->versions += (uint64_t)sign * d->versions;
    u->version_bytes += (uint64_t)sign * d->version_bytes;
    u->noncurrent_versions += (uint64_t)sign * d->noncurrent_versions;
    u->noncurrent_bytes += (uint64_t)sign * d->noncurrent_bytes;
    u->delete_markers += (uint64_t)sign * d->delete_markers;
    u->uploads += (uint64_t)sign * d->uploads;
    u->upload_part_bytes += (uint64_t)sign * d->upload_part_bytes;
}

/* ---- counting what a span of keys holds ---- */

typedef void (*count_fn)(const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
                         Objlog__UsageStats *u, int *bad);

static void count_object(const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
                         Objlog__UsageStats *u, int *bad) {
    (void)k;
    (void)kn;
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, v);
    if (!r) {
        *bad = 1;
        return;
    }
    u->objects++;
    u->bytes += r->meta ? r->meta->size : 0;
    objlog__version_record__free_unpacked(r, NULL);
}

static void count_version(const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
                          Objlog__UsageStats *u, int *bad) {
    if (objlog_versions_row_is_header(k, kn))
        return;
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, v);
    if (!r) {
        *bad = 1;
        return;
    }
    if (r->delete_marker) {
        u->delete_markers++;
    } else {
        u->versions++;
        u->version_bytes += r->meta ? r->meta->size : 0;
    }
    objlog__version_record__free_unpacked(r, NULL);
}

static void count_upload(const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
                         Objlog__UsageStats *u, int *bad) {
    size_t rk;
    objlog_uploads_row kind = objlog_uploads_row_kind(k, kn, &rk, NULL, NULL, NULL);
    if (kind == OBJLOG_UPLOADS_ROW_UPLOAD) {
        u->uploads++;
        return;
    }
    Objlog__PartRecord *p = kind == OBJLOG_UPLOADS_ROW_INVALID
                                ? NULL : objlog__part_record__unpack(NULL, vn, v);
    if (!p) {
        *bad = 1;
        return;
    }
    u->upload_part_bytes += p->size;
    objlog__part_record__free_unpacked(p, NULL);
}

static int count_cf(apply_batch *b, objlog_cf cf, const keybuf *lo, const keybuf *hi,
                    count_fn fn, Objlog__UsageStats *u, char *errstr, size_t es) {
    rocksdb_iterator_t *it = apply_batch_iter(b, cf);
    int bad = 0;
    for (rocksdb_iter_seek(it, (const char *)lo->data, lo->len); !bad && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (bytes_cmp(k, kn, hi->data, hi->len) >= 0)
            break;
        const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
        fn(k, kn, v, vn, u, &bad);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err || bad) {
        snprintf(errstr, es, "count %s: %s", objlog_cf_name(cf), err ? err : "corrupt row");
        rocksdb_free(err);
        return -1;
    }
    return 0;
}

/* The usage of the keys in [lo, hi), counted from their rows. */
static int count_span(apply_batch *b, const keybuf *lo, const keybuf *hi,
                      Objlog__UsageStats *u, char *errstr, size_t es) {
    Objlog__UsageStats zero = OBJLOG__USAGE_STATS__INIT;
    *u = zero;
    if (!apply_batch_stats_on(b))
        return 0;
    if (count_cf(b, OBJLOG_CF_OBJECTS, lo, hi, count_object, u, errstr, es) < 0 ||
        count_cf(b, OBJLOG_CF_VERSIONS, lo, hi, count_version, u, errstr, es) < 0 ||
        count_cf(b, OBJLOG_CF_UPLOADS, lo, hi, count_upload, u, errstr, es) < 0)
        return -1;
    u->noncurrent_versions = u->versions - u->objects;
    u->noncurrent_bytes = u->version_bytes - u->bytes;
    return 0;
}

/* ---- escrow ---- */

/* The share of one quota dimension the target takes: what its keys use
 * plus half the source's headroom, never more than the source held. */
static uint64_t share_out(uint64_t held, uint64_t used, uint64_t moved, int keeps) {
    if (!keeps)
        return held;
    uint64_t headroom = held > used ? held - used : 0;
    uint64_t give = moved + headroom / 2;
    return give < held ? give : held;
}

/* Splits rec's allowance (the whole quota when it has none) between the
 * source (rec, left with *kept) and the target (*given). */
static void escrow_split(const Objlog__BucketRecord *rec, const Objlog__UsageStats *before,
                         const Objlog__UsageStats *moved, int keeps, Objlog__Quota *kept,
                         Objlog__Quota *given) {
    const Objlog__Quota *q = rec->quota;
    const Objlog__Quota *held = rec->allowance ? rec->allowance : q;
    given->max_bytes = q->max_bytes
                           ? share_out(held->max_bytes, before->bytes, moved->bytes, keeps)
                           : 0;
    given->max_objects =
        q->max_objects ? share_out(held->max_objects, before->objects, moved->objects, keeps)
                       : 0;
    kept->max_bytes = held->max_bytes - given->max_bytes;
    kept->max_objects = held->max_objects - given->max_objects;
}

static int has_quota(const Objlog__BucketRecord *r) {
    return r->quota && (r->quota->max_bytes || r->quota->max_objects);
}

static Objlog__Quota *quota_dup(const Objlog__Quota *q) {
    Objlog__Quota *c = malloc(sizeof(*c));
    if (c) {
        objlog__quota__init(c);
        c->max_bytes = q->max_bytes;
        c->max_objects = q->max_objects;
    }
    return c;
}

/* Sets r's allowance (an unpacked record's, so malloc'd) to a copy of a,
 * or none. 0 or -1. */
static int allowance_set(Objlog__BucketRecord *r, const Objlog__Quota *a) {
    Objlog__Quota *c = a ? quota_dup(a) : NULL;
    if (a && !c)
        return -1;
    free(r->allowance);
    r->allowance = c;
    return 0;
}

static Objlog__BucketRecord *record_copy(const Objlog__BucketRecord *r) {
    size_t n = objlog__bucket_record__get_packed_size(r);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return NULL;
    objlog__bucket_record__pack(r, buf);
    Objlog__BucketRecord *c = objlog__bucket_record__unpack(NULL, n, buf);
    free(buf);
    return c;
}

static int save_record(apply_batch *b, const keybuf *k, const Objlog__BucketRecord *r,
                       char *errstr, size_t es) {
    return apply_batch_put_msg(b, OBJLOG_CF_BUCKETS, k->data, k->len, &r->base, errstr, es);
}

/* ---- RangeOut ---- */

typedef struct out_ctx {
    apply_ev *a;
    const uint8_t *s, *e;
    size_t sn, en;
    const rangemap *cur, *nm;
    Objlog__RangeOut *marker;
} out_ctx;

static int marker_add(Objlog__RangeOut *m, const uint8_t *bpart, size_t bn,
                      Objlog__BucketRecord *rec, const Objlog__UsageStats *u) {
    Objlog__BucketStake *st = calloc(1, sizeof(*st));
    Objlog__UsageStats *uc = malloc(sizeof(*uc));
    uint8_t *bp = malloc(bn);
    Objlog__BucketStake **n = realloc(m->stakes, (m->n_stakes + 1) * sizeof(*n));
    if (n)
        m->stakes = n;
    if (!st || !uc || !bp || !n) {
        free(st);
        free(uc);
        free(bp);
        return -1;
    }
    objlog__bucket_stake__init(st);
    *uc = *u;
    memcpy(bp, bpart, bn);
    st->bucket_part.data = bp;
    st->bucket_part.len = bn;
    st->record = rec; /* taken */
    st->usage = uc;
    m->stakes[m->n_stakes++] = st;
    return 0;
}

void stake_marker_free(Objlog__RangeOut *m) {
    for (size_t i = 0; i < m->n_stakes; i++) {
        Objlog__BucketStake *st = m->stakes[i];
        free(st->bucket_part.data);
        if (st->record)
            objlog__bucket_record__free_unpacked(st->record, NULL);
        free(st->usage);
        free(st);
    }
    free(m->stakes);
    m->stakes = NULL;
    m->n_stakes = 0;
}

/* Why a bucket cannot be cut by this range, or NULL. Index rows are
 * per bucket (one count row per value), so both sides would write them. */
static const char *cut_refused(const Objlog__BucketRecord *r, int cut) {
    return cut && r->n_indexes ? "it has attribute indexes" : NULL;
}

static void refuse(apply_ev *a, const char *bucket, const char *why) {
    a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT;
    snprintf(a->res.message, sizeof(a->res.message),
             "RangeOut: the range cuts bucket %s, and %s", bucket, why);
}

/* 1 if the range cuts through the bucket (the source keeps some of its
 * keys, or the range starts or ends inside it), 0 not, -1 error. */
static int out_cuts(const out_ctx *c, const uint8_t *bpart, size_t bn, const keybuf *lo,
                    const keybuf *hi) {
    int keeps = holds_any(c->nm, c->a->partition, bpart, bn);
    if (keeps < 0)
        return -1;
    return keeps || bytes_cmp(lo->data, lo->len, c->s, c->sn) < 0 ||
           (c->en && bytes_cmp(hi->data, hi->len, c->e, c->en) > 0);
}

/* Checked for every bucket before any is changed (a refused event stages
 * nothing): 1 the range may take the bucket's part, 0 refused (a->res),
 * -1 error. */
static int out_allowed(out_ctx *c, const uint8_t *bpart, size_t bn) {
    apply_ev *a = c->a;
    keybuf lo, hi, before;
    keybuf_init(&lo), keybuf_init(&hi), keybuf_init(&before);
    Objlog__BucketRecord *rec = NULL;
    int rc = bucket_span(bpart, bn, &lo, &hi) < 0 ||
                     key_under(c->cur, a->partition, bpart, bn, &before) < 0
                 ? oom(a->errstr, a->es)
                 : load_record(a->b, &before, &rec, a->errstr, a->es);
    if (rc == 1) {
        int cut = out_cuts(c, bpart, bn, &lo, &hi);
        const char *why = cut > 0 ? cut_refused(rec, cut) : NULL;
        rc = cut < 0 ? oom(a->errstr, a->es) : why ? 0 : 1;
        if (why)
            refuse(a, rec->name, why);
    } else if (rc == 0) {
        rc = 1; /* no stake here: nothing of it moves */
    }
    if (rec)
        objlog__bucket_record__free_unpacked(rec, NULL);
    keybuf_free(&lo), keybuf_free(&hi), keybuf_free(&before);
    return rc;
}

/* One bucket of the moving range (out_allowed said yes). 1 done, -1
 * error. */
static int out_bucket(out_ctx *c, const uint8_t *bpart, size_t bn) {
    apply_ev *a = c->a;
    apply_batch *b = a->b;
    int32_t p = a->partition;
    keybuf lo, hi, mlo, mhi, before, after;
    keybuf_init(&lo), keybuf_init(&hi), keybuf_init(&mlo), keybuf_init(&mhi);
    keybuf_init(&before), keybuf_init(&after);
    Objlog__BucketRecord *rec = NULL, *given = NULL;
    int rc = -1;
    if (bucket_span(bpart, bn, &lo, &hi) < 0 || key_under(c->cur, p, bpart, bn, &before) < 0 ||
        key_under(c->nm, p, bpart, bn, &after) < 0) {
        oom(a->errstr, a->es);
        goto out;
    }
    int found = load_record(b, &before, &rec, a->errstr, a->es);
    if (found <= 0) {
        rc = found; /* no stake here: nothing of the bucket to move */
        if (found == 0)
            rc = 1;
        goto out;
    }
    int keeps = holds_any(c->nm, p, bpart, bn);
    if (keeps < 0) {
        oom(a->errstr, a->es);
        goto out;
    }
    /* The moving part of the bucket: [max(s, lo), min(e, hi)). */
    const keybuf *from = bytes_cmp(lo.data, lo.len, c->s, c->sn) < 0 ? NULL : &lo;
    if (keybuf_append(&mlo, from ? lo.data : c->s, from ? lo.len : c->sn) < 0 ||
        keybuf_append(&mhi, (c->en && bytes_cmp(c->e, c->en, hi.data, hi.len) < 0) ? c->e
                                                                                   : hi.data,
                      (c->en && bytes_cmp(c->e, c->en, hi.data, hi.len) < 0) ? c->en
                                                                             : hi.len) < 0) {
        oom(a->errstr, a->es);
        goto out;
    }
    Objlog__UsageStats held, moved;
    if (usage_get(b, &before, &held, a->errstr, a->es) < 0)
        goto out;
    if (keeps ? count_span(b, &mlo, &mhi, &moved, a->errstr, a->es) < 0 : (moved = held, 0))
        goto out;
    /* The target's copy: the record as it is here, with its share. */
    given = record_copy(rec);
    if (!given) {
        oom(a->errstr, a->es);
        goto out;
    }
    if (has_quota(rec)) {
        Objlog__Quota kept = OBJLOG__QUOTA__INIT, give = OBJLOG__QUOTA__INIT;
        escrow_split(rec, &held, &moved, keeps, &kept, &give);
        if (allowance_set(given, &give) < 0 || allowance_set(rec, &kept) < 0) {
            oom(a->errstr, a->es);
            goto out;
        }
    }
    if (keeps) {
        Objlog__UsageStats left = held;
        usage_add(&left, &moved, -1);
        if (save_record(b, &after, rec, a->errstr, a->es) < 0 ||
            usage_put(b, &after, &left, 1, a->errstr, a->es) < 0)
            goto out;
        /* The home moves out while P keeps keys: the home rows are the
         * target's from here, as the RangeIn will make them. */
        if (bytes_cmp(before.data, before.len, after.data, after.len) != 0 &&
            (save_record(b, &before, given, a->errstr, a->es) < 0 ||
             usage_put(b, &before, &moved, 1, a->errstr, a->es) < 0))
            goto out;
    } else if (before.len != bn) {
        apply_batch_del(b, OBJLOG_CF_BUCKETS, before.data, before.len);
        if (usage_put(b, &before, &held, 0, a->errstr, a->es) < 0)
            goto out;
    }
    if (apply_batch_stats_on(b) &&
        stage_stats_shift(b, p, rec->tenant, &moved, -1, !keeps, a->errstr, a->es) < 0)
        goto out;
    if (marker_add(c->marker, bpart, bn, given, &moved) < 0) {
        oom(a->errstr, a->es);
        goto out;
    }
    given = NULL;
    rc = 1;
out:
    if (rec)
        objlog__bucket_record__free_unpacked(rec, NULL);
    if (given)
        objlog__bucket_record__free_unpacked(given, NULL);
    keybuf_free(&lo), keybuf_free(&hi), keybuf_free(&mlo), keybuf_free(&mhi);
    keybuf_free(&before), keybuf_free(&after);
    return rc;
}

/* The bucket part of the bucket s lies inside (a range starting at one of
 * its keys) into out; 0 when s lies between buckets. 1, 0 or -1. */
static int bucket_inside(const uint8_t *s, size_t sn, keybuf *out) {
    keybuf name;
    size_t used = 0;
    keybuf_init(&name);
    int inside = sn > 2 && keycodec_decode_enc(s + 2, sn - 2, &name, &used) == 0 &&
                 2 + used < sn;
    keybuf_free(&name);
    keybuf_reset(out);
    if (!inside)
        return 0;
    return keybuf_append(out, s, 2 + used) < 0 ? -1 : 1;
}

int stake_range_out(apply_ev *a, const uint8_t *s, size_t sn, const uint8_t *e, size_t en,
                    const rangemap *cur, const rangemap *nm, Objlog__RangeOut *marker) {
    out_ctx c = {a, s, e, sn, en, cur, nm, marker};
    /* The bucket the range starts inside, by its part: its home row may
     * be another partition's (and on another node). Then the buckets
     * whose home rows lie in the range, gathered before any is changed
     * (out_bucket writes the CF scanned). */
    keybuf parts, first;
    keybuf_init(&parts);
    keybuf_init(&first);
    int rc = bucket_inside(s, sn, &first) < 0 ? oom(a->errstr, a->es) : 0;
    if (rc == 0 && first.len) {
        uint8_t len[2] = {(uint8_t)(first.len >> 8), (uint8_t)first.len};
        rc = keybuf_append(&parts, len, 2) < 0 || keybuf_append(&parts, first.data, first.len) < 0
                 ? oom(a->errstr, a->es) : 0;
    }
    rocksdb_iterator_t *it = apply_batch_iter(a->b, OBJLOG_CF_BUCKETS);
    for (rocksdb_iter_seek(it, (const char *)s, sn); rc == 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, bn;
        int32_t sp;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (en && bytes_cmp(k, kn, e, en) >= 0)
            break;
        if (objlog_bucket_row_kind(k, kn, &bn, &sp) != 0)
            continue;
        uint8_t len[2] = {(uint8_t)(kn >> 8), (uint8_t)kn};
        if (kn > 0xFFFF || keybuf_append(&parts, len, 2) < 0 || keybuf_append(&parts, k, kn) < 0)
            rc = oom(a->errstr, a->es);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(a->errstr, a->es, "scan buckets: %s", err);
        rocksdb_free(err);
        rc = -1;
    }
    int go = 1;
    for (size_t at = 0; rc == 0 && go == 1 && at < parts.len;) {
        size_t bn = ((size_t)parts.data[at] << 8) | parts.data[at + 1];
        go = out_allowed(&c, parts.data + at + 2, bn);
        rc = go < 0 ? -1 : 0;
        at += 2 + bn;
    }
    for (size_t at = 0; rc == 0 && go == 1 && at < parts.len;) {
        size_t bn = ((size_t)parts.data[at] << 8) | parts.data[at + 1];
        rc = out_bucket(&c, parts.data + at + 2, bn) < 0 ? -1 : 0;
        at += 2 + bn;
    }
    keybuf_free(&parts);
    keybuf_free(&first);
    return rc < 0 ? -1 : go;
}

/* ---- RangeIn ---- */

/* 1 if p holds every key of the bucket under rm (its stake is the whole
 * bucket: no allowance, the quota is its own). */
static int holds_all(const rangemap *rm, int32_t p, const uint8_t *bpart, size_t bn) {
    int all, none;
    return bucket_covers(rm, p, bpart, bn, &all, &none) == 0 && all;
}

static int in_stake(apply_ev *a, Objlog__BucketStake *st, const rangemap *cur,
                    const rangemap *nm) {
    apply_batch *b = a->b;
    int32_t q = a->partition;
    const uint8_t *bpart = st->bucket_part.data;
    size_t bn = st->bucket_part.len;
    if (!st->record || !st->usage || bn < 4) {
        snprintf(a->errstr, a->es, "handoff marker: a stake without its record");
        return -1;
    }
    keybuf before, after;
    keybuf_init(&before);
    keybuf_init(&after);
    Objlog__BucketRecord *mine = NULL;
    int had = holds_any(cur, q, bpart, bn);
    int rc = had < 0 || key_under(nm, q, bpart, bn, &after) < 0 ||
                     (had && key_under(cur, q, bpart, bn, &before) < 0)
                 ? oom(a->errstr, a->es) : 0;
    Objlog__UsageStats u = *st->usage;
    int whole = holds_all(nm, q, bpart, bn);
    if (rc == 0 && had)
        rc = load_record(b, &before, &mine, a->errstr, a->es) < 0 ? -1 : 0;
    if (rc == 0 && mine) {
        Objlog__UsageStats own;
        rc = usage_get(b, &before, &own, a->errstr, a->es);
        usage_add(&u, &own, +1);
        Objlog__BucketRecord *rec = st->record;
        Objlog__Quota sum = OBJLOG__QUOTA__INIT;
        if (has_quota(rec)) {
            const Objlog__Quota *x = rec->allowance ? rec->allowance : rec->quota;
            const Objlog__Quota *y = mine->allowance ? mine->allowance : mine->quota;
            sum.max_bytes = x->max_bytes + (y ? y->max_bytes : 0);
            sum.max_objects = x->max_objects + (y ? y->max_objects : 0);
        }
        /* The settings of the newer record; the allowances add up. */
        Objlog__BucketRecord *keep = rec->settings_seq > mine->settings_seq ? rec : mine;
        Objlog__Quota *old = keep->allowance;
        keep->allowance = has_quota(rec) && !whole ? &sum : NULL;
        if (rc == 0 && bytes_cmp(before.data, before.len, after.data, after.len) != 0) {
            apply_batch_del(b, OBJLOG_CF_BUCKETS, before.data, before.len);
            rc = usage_put(b, &before, &own, 0, a->errstr, a->es);
        }
        if (rc == 0)
            rc = save_record(b, &after, keep, a->errstr, a->es);
        keep->allowance = old;
    } else if (rc == 0) {
        Objlog__Quota *old = st->record->allowance;
        if (whole)
            st->record->allowance = NULL;
        rc = save_record(b, &after, st->record, a->errstr, a->es);
        st->record->allowance = old;
    }
    if (rc == 0)
        rc = usage_put(b, &after, &u, 1, a->errstr, a->es);
    if (rc == 0 && apply_batch_stats_on(b))
        rc = stage_stats_shift(b, q, st->record->tenant, st->usage, +1, !had, a->errstr,
                               a->es);
    if (mine)
        objlog__bucket_record__free_unpacked(mine, NULL);
    keybuf_free(&before);
    keybuf_free(&after);
    return rc;
}

int stake_range_in(apply_ev *a, Objlog__RangeOut *marker, const rangemap *cur,
                   const rangemap *nm) {
    for (size_t i = 0; i < marker->n_stakes; i++)
        if (in_stake(a, marker->stakes[i], cur, nm) < 0)
            return -1;
    return 0;
}

/* ---- settings that follow the home ---- */

/* One dimension of a quota change of a spread bucket, held = the home's
 * share: 1 (*to, its new share) or 0 refused. */
static int share_change(uint64_t old, uint64_t new, uint64_t held, uint64_t *to) {
    if (!new) {
        *to = 0; /* no limit any more: shares are moot */
        return 1;
    }
    if (!old)
        return 0; /* the other stakes hold no share to start from */
    if (new >= old) {
        *to = held + (new - old);
        return 1;
    }
    if (held < old - new)
        return 0; /* the cut needs shares other stakes hold */
    *to = held - (old - new);
    return 1;
}

int stake_quota_change(apply_ev *a, Objlog__BucketRecord *r, const Objlog__Quota *nq) {
    int spread = stake_spread(a->b, a->partition, a->bpart.data, a->bpart.len, a->errstr,
                              a->es);
    if (spread <= 0)
        return spread < 0 ? -1 : 1; /* the whole bucket here: the quota is its own */
    Objlog__Quota none = OBJLOG__QUOTA__INIT, share = OBJLOG__QUOTA__INIT;
    const Objlog__Quota *old = r->quota ? r->quota : &none, *nw = nq ? nq : &none;
    const Objlog__Quota *held = r->allowance ? r->allowance : old;
    if (share_change(old->max_bytes, nw->max_bytes, held->max_bytes, &share.max_bytes) &&
        share_change(old->max_objects, nw->max_objects, held->max_objects,
                     &share.max_objects))
        return allowance_set(r, &share) < 0 ? oom(a->errstr, a->es) : 1;
    a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_SPANS_RANGES;
    snprintf(a->res.message, sizeof(a->res.message),
             "bucket %s spans ranges on other partitions, which hold shares of its quota: "
             "it can be raised or removed, or lowered by at most the share its first range "
             "holds; merge its ranges for this change",
             a->ev->bucket);
    return 0;
}

int stake_relay(apply_ev *a) {
    const Objlog__BucketRelay *rl = a->ev->bucket_relay;
    if (!rl || !rl->record || !rl->record->name || strcmp(rl->record->name, a->ev->bucket)) {
        a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT;
        snprintf(a->res.message, sizeof(a->res.message), "BucketRelay without its bucket's record");
        return 0;
    }
    if (a->stake.len == a->bpart.len) {
        snprintf(a->res.message, sizeof(a->res.message),
                 "partition %d is bucket %s's home: nothing to relay", a->partition,
                 a->ev->bucket);
        return 0;
    }
    Objlog__BucketRecord *mine;
    int rc = stage_load_bucket(a, &mine);
    if (rc <= 0) {
        if (rc == 0) {
            a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET;
            snprintf(a->res.message, sizeof(a->res.message),
                     "partition %d holds no range of bucket %s", a->partition, a->ev->bucket);
        }
        return rc;
    }
    Objlog__BucketRecord *next = NULL;
    if (rl->record->settings_seq > mine->settings_seq) {
        next = record_copy(rl->record);
        if (!next) {
            objlog__bucket_record__free_unpacked(mine, NULL);
            return oom(a->errstr, a->es);
        }
        free(next->allowance); /* the share stays this stake's */
        next->allowance = mine->allowance;
        mine->allowance = NULL;
        rc = stage_save_bucket(a, next);
        objlog__bucket_record__free_unpacked(next, NULL);
    } else {
        snprintf(a->res.message, sizeof(a->res.message),
                 "partition %d has bucket %s's settings of seq %llu already", a->partition,
                 a->ev->bucket, (unsigned long long)mine->settings_seq);
    }
    objlog__bucket_record__free_unpacked(mine, NULL);
    return rc < 0 ? -1 : 0;
}
