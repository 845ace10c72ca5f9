/* stage.c: the rows one event stages through its batch, for the rules
 * in apply.c: bucket records, the per-key header and version rows, the
 * key's `objects` row, upload and part rows, and the usage counters that
 * count all of them (stats CF).
 *
 * Invariant: every row an op changes is staged here together with its
 * share of the counters, and the `objects` row's new state is noted for
 * the counters and the indexes (objects_noted), so the counters and index
 * rows of a batch are exact as of the rows it writes, whatever op wrote
 * them. Deciding whether an op may change anything is apply.c's. */
#include "stage.h"

#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 found (*out owned by the caller), 0 absent, -1 error. */
int stage_load_bucket(apply_ev *a, Objlog__BucketRecord **out) {
    char *v;
    size_t vn;
    *out = NULL;
    int rc = apply_batch_get(a->b, OBJLOG_CF_BUCKETS, a->stake.data, a->stake.len,
                             &v, &vn, a->errstr, a->es);
    if (rc <= 0)
        return rc;
    *out = objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out) {
        snprintf(a->errstr, a->es, "bucket %s: corrupt record", a->ev->bucket);
        return -1;
    }
    return 1;
}

int stage_save_bucket(apply_ev *a, const Objlog__BucketRecord *r) {
    return apply_batch_put_msg(a->b, OBJLOG_CF_BUCKETS, a->stake.data, a->stake.len,
                               &r->base, a->errstr, a->es);
}

int stage_load_header(apply_ev *a, objlog_key_header *h) {
    memset(h, 0, sizeof(*h));
    if (a->versioning != OBJLOG__VERSIONING__VERSIONING_UNVERSIONED) {
        char *v;
        size_t vn;
        int rc = apply_batch_get(a->b, OBJLOG_CF_VERSIONS, a->route.data, a->route.len,
                                 &v, &vn, a->errstr, a->es);
        if (rc < 0)
            return -1;
        if (rc == 1) {
            rc = objlog_key_header_decode(v, vn, h);
            rocksdb_free(v);
            if (rc < 0) {
                snprintf(a->errstr, a->es, "key header in %s: corrupt", a->ev->bucket);
                return -1;
            }
            return 1;
        }
    }
    /* No header row: the key has no version, or only the null version
     * written while the bucket was Unversioned, which `objects` shows. */
    if (!a->obj_live_before)
        return 0;
    if (!a->obj_null_before) {
        snprintf(a->errstr, a->es, "key header in %s: missing for a version that is not "
                                   "the null version", a->ev->bucket);
        return -1;
    }
    h->versions = 1;
    h->has_null = 1;
    h->null_seq = a->obj_seq_before;
    return 1;
}

void stage_save_header(apply_ev *a, const objlog_key_header *h) {
    if (a->versioning == OBJLOG__VERSIONING__VERSIONING_UNVERSIONED)
        return;
    if (h->versions == 0) {
        apply_batch_del(a->b, OBJLOG_CF_VERSIONS, a->route.data, a->route.len);
        return;
    }
    uint8_t v[APPLY_HEADER_LEN];
    apply_header_encode(h, v);
    apply_batch_put(a->b, OBJLOG_CF_VERSIONS, a->route.data, a->route.len, v, sizeof(v));
}

/* version_row(b,k,seq) built from the route key already at hand. */
static int version_row(apply_ev *a, uint64_t seq, keybuf *row) {
    keybuf_init(row);
    if (keybuf_append(row, a->route.data, a->route.len) < 0 ||
        keycodec_append_be64(row, UINT64_MAX - seq) < 0) {
        keybuf_free(row);
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    return 0;
}

/* The record at row of cf (row taken and freed) as the batch sees it,
 * unpacked as desc: 1 found (*out owned by the caller), 0 absent, -1
 * error; a row that does not unpack is "<what> in <bucket>: corrupt". */
static int load_record(apply_ev *a, objlog_cf cf, keybuf *row,
                       const ProtobufCMessageDescriptor *desc, const char *what,
                       ProtobufCMessage **out) {
    char *v;
    size_t vn;
    *out = NULL;
    int rc = apply_batch_get(a->b, cf, row->data, row->len, &v, &vn, a->errstr, a->es);
    keybuf_free(row);
    if (rc <= 0)
        return rc;
    *out = protobuf_c_message_unpack(desc, NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out) {
        snprintf(a->errstr, a->es, "%s in %s: corrupt", what, a->ev->bucket);
        return -1;
    }
    return 1;
}

int stage_load_version(apply_ev *a, uint64_t seq, Objlog__VersionRecord **out) {
    keybuf row;
    ProtobufCMessage *m = NULL;
    int rc = version_row(a, seq, &row) < 0 ? -1
             : load_record(a, OBJLOG_CF_VERSIONS, &row, &objlog__version_record__descriptor,
                           "version record", &m);
    *out = (Objlog__VersionRecord *)m;
    return rc;
}

int stage_delete_version(apply_ev *a, uint64_t seq) {
    Objlog__VersionRecord *r = NULL;
    /* The version `objects` showed when the op began needs no read: its
     * row is that row (a key's newest live version), counters and all. */
    int current = a->obj_live_before && seq == a->obj_seq_before && !a->obj_staged;
    if (current) {
        a->d.versions--;
        a->d.version_bytes -= (int64_t)a->obj_size_before;
    }
    int rc = current ? 0 : stage_load_version(a, seq, &r);
    if (rc < 0)
        return -1;
    keybuf row;
    if (version_row(a, seq, &row) < 0) {
        if (r)
            objlog__version_record__free_unpacked(r, NULL);
        return -1;
    }
    char vid[KEYCODEC_VERSION_ID_LEN];
    if (current)
        keycodec_version_id(seq, vid);
    blobrefs_from f = {.key = a->ev->key.data, .kn = a->ev->key.len,
                       .version_id = current ? (a->obj_null_before ? "null" : vid) : NULL};
    if (current) {
        rc = blobrefs_remove_ids(a->b, &a->blobs, a->blobs.cur, a->blobs.ncur,
                                 BLOBREFS_VERSION, row.data, row.len, &f, a->errstr, a->es);
    } else if (rc == 1) {
        if (r->delete_marker) {
            a->d.delete_markers--;
        } else {
            a->d.versions--;
            a->d.version_bytes -= (int64_t)(r->meta ? r->meta->size : 0);
        }
        char **ids = NULL;
        size_t n = 0;
        f.version_id = r->version_id;
        rc = blobrefs_ids_of(r->meta, &ids, &n) < 0 ? -2
             : blobrefs_remove_ids(a->b, &a->blobs, ids, n, BLOBREFS_VERSION, row.data,
                                   row.len, &f, a->errstr, a->es);
        if (rc == -2)
            snprintf(a->errstr, a->es, "out of memory");
        blobrefs_ids_free(ids, n);
        objlog__version_record__free_unpacked(r, NULL);
    }
    apply_batch_del(a->b, OBJLOG_CF_VERSIONS, row.data, row.len);
    keybuf_free(&row);
    return rc < 0 ? -1 : 0;
}

/* Every write of the key's `objects` row notes the row's new state here,
 * for stage_key_end; row (malloc'd or NULL, taken) goes to the indexes. */
static void objects_noted(apply_ev *a, int live, uint64_t size, uint8_t *row,
                          size_t n) {
    a->obj_staged = 1;
    a->obj_live_after = live;
    a->obj_size_after = size;
    indexes_key_staged(&a->ix, row, n);
}

static void objects_del(apply_ev *a) {
    apply_batch_del(a->b, OBJLOG_CF_OBJECTS, a->route.data, a->route.len);
    objects_noted(a, 0, 0, NULL, 0);
}

void stage_clear_current(apply_ev *a) { objects_del(a); }

/* Writes a new newest version (or marker) at a->seq. A new version always
 * has the highest seq of its key, so it is what `objects` must show. */
int stage_add_version(apply_ev *a, const char *version_id, int marker,
                      Objlog__ObjectMeta *meta) {
    Objlog__VersionRecord r = OBJLOG__VERSION_RECORD__INIT;
    Objlog__ObjectMeta empty = OBJLOG__OBJECT_META__INIT;
    r.key = a->ev->key;
    r.seq = a->seq;
    r.version_id = (char *)version_id;
    r.delete_marker = marker;
    r.meta = marker ? NULL : (meta ? meta : &empty);
    r.log_time_ms = a->log_time_ms;
    if (marker) {
        a->d.delete_markers++;
    } else {
        a->d.versions++;
        a->d.version_bytes += (int64_t)(r.meta->size);
    }
    keybuf row;
    if (version_row(a, a->seq, &row) < 0)
        return -1;
    int rc = apply_batch_put_msg(a->b, OBJLOG_CF_VERSIONS, row.data, row.len,
                                 &r.base, a->errstr, a->es);
    if (rc == 0 && !marker)
        rc = blobrefs_add_meta(a->b, r.meta, BLOBREFS_VERSION, row.data, row.len, a->errstr,
                               a->es);
    keybuf_free(&row);
    if (rc < 0)
        return -1;
    if (marker) {
        objects_del(a);
        return 0;
    }
    size_t n;
    uint8_t *buf = apply_batch_pack(&r.base, &n, a->errstr, a->es);
    if (!buf)
        return -1;
    apply_batch_put(a->b, OBJLOG_CF_OBJECTS, a->route.data, a->route.len, buf, n);
    objects_noted(a, 1, r.meta->size, buf, n);
    return 0;
}

int stage_rewrite_version(apply_ev *a, const Objlog__VersionRecord *r) {
    keybuf row;
    if (version_row(a, r->seq, &row) < 0)
        return -1;
    int rc = apply_batch_put_msg(a->b, OBJLOG_CF_VERSIONS, row.data, row.len, &r->base,
                                 a->errstr, a->es);
    keybuf_free(&row);
    if (rc < 0 || !a->obj_live_before || r->seq != a->obj_seq_before || a->obj_staged)
        return rc < 0 ? -1 : 0;
    size_t n;
    uint8_t *buf = apply_batch_pack(&r->base, &n, a->errstr, a->es);
    if (!buf)
        return -1;
    apply_batch_put(a->b, OBJLOG_CF_OBJECTS, a->route.data, a->route.len, buf, n);
    objects_noted(a, 1, r->meta ? r->meta->size : 0, buf, n);
    return 0;
}

/* Makes `objects` show the key's newest version if it is live, else
 * nothing. Used after a version other than a new newest one changed. */
int stage_refresh_current(apply_ev *a) {
    rocksdb_iterator_t *it = apply_batch_iter(a->b, OBJLOG_CF_VERSIONS);
    const uint8_t *rk = a->route.data;
    size_t rn = a->route.len;
    int found = 0;
    rocksdb_iter_seek(it, (const char *)rk, rn);
    for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn < rn || memcmp(k, rk, rn) != 0)
            break;
        if (kn != rn + 8)
            continue; /* the header row */
        size_t vn;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__VersionRecord *r =
            objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
        if (!r) {
            snprintf(a->errstr, a->es, "version record in %s: corrupt", a->ev->bucket);
            rocksdb_iter_destroy(it);
            return -1;
        }
        if (!r->delete_marker) {
            /* v may point into the batch itself, which the put can grow
             * (and move): put a copy. */
            char *copy = malloc(vn ? vn : 1);
            if (!copy) {
                objlog__version_record__free_unpacked(r, NULL);
                rocksdb_iter_destroy(it);
                snprintf(a->errstr, a->es, "out of memory");
                return -1;
            }
            memcpy(copy, v, vn);
            apply_batch_put(a->b, OBJLOG_CF_OBJECTS, rk, rn, copy, vn);
            objects_noted(a, 1, r->meta ? r->meta->size : 0, (uint8_t *)copy, vn);
            found = 1;
        }
        objlog__version_record__free_unpacked(r, NULL);
        break;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(a->errstr, a->es, "scan versions: %s", err);
        rocksdb_free(err);
        return -1;
    }
    if (!found)
        objects_del(a);
    return 0;
}

/* Keeps the bucket's tenant for the stats rows. 0 or -1. */
int stage_set_tenant(apply_ev *a, const char *tenant) {
    free(a->tenant);
    a->tenant = strdup(tenant ? tenant : "");
    if (!a->tenant) {
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    return 0;
}

/* ---- usage counters (stats CF; layout in materializer.h) ----
 *
 * Every event that changes a counted row accumulates its change in a->d
 * while it stages the rows; apply_decide then adds a->d to the bucket's,
 * its tenant's and the global row, in the same batch. Noncurrent versions
 * are not tracked row by row: per key, noncurrent = versions - (1 if the
 * newest row is live), and the newest row is live iff `objects` holds it,
 * so noncurrent changes by Δversions - Δobjects (bytes likewise). */

static uint64_t *stats_field(Objlog__UsageStats *u, int i) {
    uint64_t *f[] = {&u->objects, &u->bytes, &u->versions, &u->version_bytes,
                     &u->noncurrent_versions, &u->noncurrent_bytes,
                     &u->delete_markers, &u->uploads, &u->upload_part_bytes,
                     &u->buckets};
    return f[i];
}

static int64_t *delta_field(stats_delta *d, int i) {
    int64_t *f[] = {&d->objects, &d->bytes, &d->versions, &d->version_bytes,
                    &d->noncurrent_versions, &d->noncurrent_bytes,
                    &d->delete_markers, &d->uploads, &d->upload_part_bytes,
                    &d->buckets};
    return f[i];
}
#define STATS_FIELDS 10

static int delta_is_zero(stats_delta *d) {
    for (int i = 0; i < STATS_FIELDS; i++)
        if (*delta_field(d, i))
            return 0;
    return 1;
}

/* The stats row at k as the batch sees it (loaded from the store on first
 * touch; absent = all zero, present 0). NULL on error (errstr). */
statrow *stage_stats_row(apply_batch *b, const keybuf *k, char *errstr, size_t es) {
    statrow *r = statrows_find(apply_batch_stats_rows(b), k->data, k->len);
    if (r)
        return r;
    char *v;
    size_t vn;
    int rc = apply_batch_get(b, OBJLOG_CF_STATS, k->data, k->len, &v, &vn, errstr, es);
    if (rc < 0)
        return NULL;
    Objlog__UsageStats *u =
        rc ? objlog__usage_stats__unpack(NULL, vn, (const uint8_t *)v) : NULL;
    if (rc)
        rocksdb_free(v);
    if (rc && !u) {
        snprintf(errstr, es, "stats row: corrupt record");
        return NULL;
    }
    r = statrows_insert(apply_batch_stats_rows(b), k->data, k->len);
    if (r && u) {
        r->present = 1;
        for (int i = 0; i < STATS_FIELDS; i++)
            *stats_field(&r->u, i) = *stats_field(u, i);
    }
    if (u)
        objlog__usage_stats__free_unpacked(u, NULL);
    if (!r)
        snprintf(errstr, es, "out of memory");
    return r;
}

/* Adds d to the row at k (unsigned wrap-around: the final values are
 * exact). drop_empty: delete the row when no bucket is left (tenant and
 * global rows). */
static int stats_add(apply_batch *b, const keybuf *k, stats_delta *d,
                     int drop_empty, char *errstr, size_t es) {
    statrow *r = stage_stats_row(b, k, errstr, es);
    if (!r)
        return -1;
    for (int i = 0; i < STATS_FIELDS; i++)
        *stats_field(&r->u, i) += (uint64_t)*delta_field(d, i);
    r->present = !(drop_empty && r->u.buckets == 0);
    r->dirty = 1;
    return 0;
}

int stage_stats_shift(apply_batch *b, int32_t p, const char *tenant,
                      const Objlog__UsageStats *u, int sign, int count_bucket, char *errstr,
                      size_t es) {
    if (!apply_batch_stats_on(b))
        return 0;
    Objlog__UsageStats c = *u;
    c.buckets = count_bucket ? 1 : 0; /* a bucket's own row never counts buckets */
    stats_delta d;
    for (int i = 0; i < STATS_FIELDS; i++)
        *delta_field(&d, i) = sign * (int64_t)*stats_field(&c, i);
    keybuf k;
    keybuf_init(&k);
    int rc = objlog_stats_tenant_key(&k, tenant, p) < 0 ? -2
             : stats_add(b, &k, &d, 1, errstr, es);
    if (rc == 0)
        rc = objlog_stats_global_key(&k, p) < 0 ? -2 : stats_add(b, &k, &d, 1, errstr, es);
    keybuf_free(&k);
    if (rc == -2)
        snprintf(errstr, es, "out of memory");
    return rc < 0 ? -1 : 0;
}

int stage_stats_put(apply_batch *b, const keybuf *k, const Objlog__UsageStats *u,
                    int present) {
    if (!apply_batch_stats_on(b))
        return 0;
    statrow *r = statrows_find(apply_batch_stats_rows(b), k->data, k->len);
    if (!r)
        r = statrows_insert(apply_batch_stats_rows(b), k->data, k->len);
    if (!r)
        return -1;
    Objlog__UsageStats c = OBJLOG__USAGE_STATS__INIT;
    for (int i = 0; i < STATS_FIELDS; i++)
        *stats_field(&c, i) = *stats_field((Objlog__UsageStats *)u, i);
    r->u = c;
    r->present = present;
    r->dirty = 1;
    return 0;
}

/* Sets the row at k to all zero (present) or absent, without reading it. */
int stage_stats_reset(apply_batch *b, const keybuf *k, int present) {
    Objlog__UsageStats zero = OBJLOG__USAGE_STATS__INIT;
    return stage_stats_put(b, k, &zero, present);
}

/* Stages every changed row into the WriteBatch. Cannot fail: a row packs
 * into at most 10 varints of 11 bytes. */
void stage_stats_flush(apply_batch *b) {
    statrows *t = apply_batch_stats_rows(b);
    for (size_t i = 0; i < t->n; i++) {
        statrow *r = &t->rows[i];
        if (!r->dirty)
            continue;
        uint8_t buf[STATS_FIELDS * 11];
        if (r->present)
            apply_batch_put(b, OBJLOG_CF_STATS, r->key, r->key_len, buf,
                            objlog__usage_stats__pack(&r->u, buf));
        else
            apply_batch_del(b, OBJLOG_CF_STATS, r->key, r->key_len);
        r->dirty = 0;
    }
}

/* Stages a->d into this partition's stake row of the bucket (stake.h) and
 * into its rows of the tenant and of the global sums: every row belongs
 * to one partition, the event's, so a partition's rows are a function of
 * its log alone.
 * The bucket's own row never counts buckets (DeleteBucket removes it); the
 * tenant's and the global row go when their bucket count drops to 0 (all
 * their other counters are 0 then: only an empty bucket is deleted). */
int stage_stats_commit(apply_ev *a) {
    if (!apply_batch_stats_on(a->b) || delta_is_zero(&a->d))
        return 0;
    keybuf k;
    int rc = 0;
    int64_t nb = a->d.buckets;
    keybuf_init(&k);
    if (a->ev->op_case != OBJLOG__EVENT__OP_DELETE_BUCKET) {
        a->d.buckets = 0;
        rc = objlog_stats_stake_key(&k, a->stake.data, a->stake.len);
        if (rc < 0)
            rc = -2;
        else
            rc = stats_add(a->b, &k, &a->d, 0, a->errstr, a->es);
        a->d.buckets = nb;
    }
    if (rc == 0 && objlog_stats_tenant_key(&k, a->tenant ? a->tenant : "", a->partition) < 0)
        rc = -2;
    if (rc == 0)
        rc = stats_add(a->b, &k, &a->d, 1, a->errstr, a->es);
    if (rc == 0 && objlog_stats_global_key(&k, a->partition) < 0)
        rc = -2;
    if (rc == 0)
        rc = stats_add(a->b, &k, &a->d, 1, a->errstr, a->es);
    keybuf_free(&k);
    if (rc == -2)
        snprintf(a->errstr, a->es, "out of memory");
    return rc < 0 ? -1 : 0;
}

/* The size of the version in `objects` row v. 0 or -1 (corrupt). */
/* Notes the current version a->obj_*_before from its `objects` row. */
static int row_note(apply_ev *a, const char *v, size_t vn) {
    Objlog__VersionRecord *r =
        objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
    if (!r) {
        snprintf(a->errstr, a->es, "object record in %s: corrupt", a->ev->bucket);
        return -1;
    }
    a->obj_size_before = r->meta ? r->meta->size : 0;
    a->obj_seq_before = r->seq;
    a->obj_null_before = strcmp(r->version_id, "null") == 0;
    int rc = blobrefs_note_current(&a->blobs, r->meta);
    objlog__version_record__free_unpacked(r, NULL);
    if (rc < 0)
        snprintf(a->errstr, a->es, "out of memory");
    return rc;
}

/* Before a key op stages anything: remembers the current live version
 * (for the counters, the header of a key without one, and the bucket's
 * indexes: one read for all). */
int stage_key_begin(apply_ev *a) {
    a->obj_staged = 0;
    a->obj_live_before = 0;
    a->obj_size_before = 0;
    a->obj_seq_before = 0;
    a->obj_null_before = 0;
    if (blobrefs_note_current(&a->blobs, NULL) < 0) {
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    char *v = NULL;
    size_t vn = 0;
    int rc = apply_batch_get(a->b, OBJLOG_CF_OBJECTS, a->route.data, a->route.len,
                             &v, &vn, a->errstr, a->es);
    if (rc < 0)
        return -1;
    if (rc == 1 && row_note(a, v, vn) < 0) {
        rocksdb_free(v);
        return -1;
    }
    a->obj_live_before = rc;
    indexes_key_begin(&a->ix, rc == 1 ? v : NULL, vn);
    return 0;
}

/* After a key op staged its rows: objects/bytes and noncurrent deltas,
 * from the `objects` row's state noted by objects_noted (none:
 * the op left it as it was). */
int stage_key_end(apply_ev *a) {
    if (indexes_key_end(a->b, &a->ix, a->ev->bucket, a->ev->key, a->errstr, a->es) < 0)
        return -1;
    if (!apply_batch_stats_on(a->b))
        return 0;
    int live = a->obj_staged ? a->obj_live_after : a->obj_live_before;
    uint64_t size = a->obj_staged ? a->obj_size_after : a->obj_size_before;
    a->d.objects += live - a->obj_live_before;
    a->d.bytes += (int64_t)size - (int64_t)a->obj_size_before;
    a->d.noncurrent_versions = a->d.versions - a->d.objects;
    a->d.noncurrent_bytes = a->d.version_bytes - a->d.bytes;
    return 0;
}

/* 1 if cf has any row under the bucket (in `versions`: a version or a
 * delete marker; in `uploads`: an in-progress multipart upload). */
int stage_bucket_has_rows(apply_ev *a, objlog_cf cf) {
    rocksdb_iterator_t *it = apply_batch_iter(a->b, cf);
    rocksdb_iter_seek(it, (const char *)a->bpart.data, a->bpart.len);
    int found = 0;
    if (rocksdb_iter_valid(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        found = kn >= a->bpart.len && memcmp(k, a->bpart.data, a->bpart.len) == 0;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(a->errstr, a->es, "scan %s: %s", objlog_cf_name(cf), err);
        rocksdb_free(err);
        return -1;
    }
    return found;
}

/* upload row = route_key(b,k) ‖ enc(upload_id) */
int stage_upload_row(apply_ev *a, const char *upload_id, keybuf *row) {
    keybuf_init(row);
    if (keybuf_append(row, a->route.data, a->route.len) < 0 ||
        keycodec_append_enc(row, (const uint8_t *)upload_id,
                            strlen(upload_id)) < 0) {
        keybuf_free(row);
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    return 0;
}

/* part row = upload row ‖ be32(part_number) */
int stage_part_row(apply_ev *a, const char *upload_id, uint32_t part, keybuf *row) {
    uint8_t be[4];
    apply_put_be32(be, part);
    if (stage_upload_row(a, upload_id, row) < 0)
        return -1;
    if (keybuf_append(row, be, sizeof(be)) < 0) {
        keybuf_free(row);
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    return 0;
}

int stage_load_upload(apply_ev *a, const char *upload_id, Objlog__UploadRecord **out) {
    keybuf row;
    ProtobufCMessage *m = NULL;
    int rc = stage_upload_row(a, upload_id, &row) < 0 ? -1
             : load_record(a, OBJLOG_CF_UPLOADS, &row, &objlog__upload_record__descriptor,
                           "upload record", &m);
    *out = (Objlog__UploadRecord *)m;
    return rc;
}

int stage_load_part(apply_ev *a, const char *upload_id, uint32_t part,
                    Objlog__PartRecord **out) {
    keybuf row;
    ProtobufCMessage *m = NULL;
    int rc = stage_part_row(a, upload_id, part, &row) < 0 ? -1
             : load_record(a, OBJLOG_CF_UPLOADS, &row, &objlog__part_record__descriptor,
                           "part record", &m);
    *out = (Objlog__PartRecord *)m;
    return rc;
}

/* The end of a scan of `uploads`: rc, or -1 when the iterator failed. */
static int stage_uploads_iter_end(apply_ev *a, rocksdb_iterator_t *it, int rc) {
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (!err)
        return rc;
    snprintf(a->errstr, a->es, "scan uploads: %s", err);
    rocksdb_free(err);
    return -1;
}

/* Part numbers recorded for an upload (ascending), as the batch sees them,
 * and their blob ids (blobs[i] of parts[i], "" for none). *parts and
 * *blobs are owned by the caller (free; blobrefs_ids_free). 0 or -1. */
static int list_parts(apply_ev *a, const keybuf *urow, uint32_t **parts, char ***blobs,
                      size_t *n, uint64_t *bytes) {
    size_t cap = 0;
    *bytes = 0;
    *parts = NULL;
    *blobs = NULL;
    *n = 0;
    rocksdb_iterator_t *it = apply_batch_iter(a->b, OBJLOG_CF_UPLOADS);
    int rc = 0;
    for (rocksdb_iter_seek(it, (const char *)urow->data, urow->len);
         rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn < urow->len || memcmp(k, urow->data, urow->len) != 0)
            break;
        if (kn != urow->len + 4)
            continue; /* the upload row itself */
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            uint32_t *p = realloc(*parts, cap * sizeof(*p));
            char **bl = p ? realloc(*blobs, cap * sizeof(*bl)) : NULL;
            if (p)
                *parts = p;
            if (bl)
                *blobs = bl;
            if (!p || !bl) {
                snprintf(a->errstr, a->es, "out of memory");
                rc = -1;
                break;
            }
        }
        size_t vn;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__PartRecord *pr =
            objlog__part_record__unpack(NULL, vn, (const uint8_t *)v);
        if (!pr) {
            snprintf(a->errstr, a->es, "part record in %s: corrupt", a->ev->bucket);
            rc = -1;
            break;
        }
        *bytes += pr->size;
        char *blob = strdup(pr->blob_id ? pr->blob_id : "");
        objlog__part_record__free_unpacked(pr, NULL);
        if (!blob) {
            snprintf(a->errstr, a->es, "out of memory");
            rc = -1;
            break;
        }
        const uint8_t *be = k + urow->len;
        (*blobs)[*n] = blob;
        (*parts)[(*n)++] = (uint32_t)be[0] << 24 | (uint32_t)be[1] << 16 |
                           (uint32_t)be[2] << 8 | be[3];
    }
    return stage_uploads_iter_end(a, it, rc);
}

/* Removes the upload row and all its part rows. The part numbers are read
 * first: deleting from the batch while iterating it would invalidate the
 * iterator's keys. At most 10,001 rows. */
int stage_remove_upload(apply_ev *a, const char *upload_id) {
    keybuf row;
    uint32_t *parts;
    char **blobs;
    size_t n;
    uint64_t bytes;
    if (stage_upload_row(a, upload_id, &row) < 0)
        return -1;
    int rc = list_parts(a, &row, &parts, &blobs, &n, &bytes);
    a->d.uploads--;
    a->d.upload_part_bytes -= (int64_t)bytes;
    if (rc == 0)
        apply_batch_del(a->b, OBJLOG_CF_UPLOADS, row.data, row.len);
    keybuf_free(&row);
    for (size_t i = 0; i < n && rc == 0; i++) {
        keybuf prow;
        rc = stage_part_row(a, upload_id, parts[i], &prow);
        if (rc == 0) {
            blobrefs_from f = {.key = a->ev->key.data, .kn = a->ev->key.len,
                               .upload_id = upload_id};
            apply_batch_del(a->b, OBJLOG_CF_UPLOADS, prow.data, prow.len);
            rc = blobrefs_remove(a->b, &a->blobs, blobs[i], BLOBREFS_PART, prow.data,
                                 prow.len, &f, a->errstr, a->es);
            keybuf_free(&prow);
        }
    }
    free(parts);
    blobrefs_ids_free(blobs, n);
    return rc;
}

/* The keys of every row of the bucket in `uploads` (upload rows and their
 * parts, as the batch sees them), with the counts they held. */
typedef struct bucket_rows {
    keybuf *keys;
    size_t n, cap;
    int64_t uploads, part_bytes;
    /* The part rows that name a blob: keys[part[i]] names blob[i], of
     * upload[i] (an index into ups, the upload records read). */
    size_t *part, *upload, nref, capref;
    char **blob;
    Objlog__UploadRecord **ups;
    size_t nups;
} bucket_rows;

static void bucket_rows_free(bucket_rows *r) {
    for (size_t i = 0; i < r->n; i++)
        keybuf_free(&r->keys[i]);
    free(r->keys);
    free(r->part);
    free(r->upload);
    blobrefs_ids_free(r->blob, r->nref);
    for (size_t i = 0; i < r->nups; i++)
        objlog__upload_record__free_unpacked(r->ups[i], NULL);
    free(r->ups);
}

/* Notes that the part row about to be keys[r->n] names blob (taken). */
static int bucket_rows_ref(bucket_rows *r, char *blob) {
    if (r->nref == r->capref) {
        size_t cap = r->capref ? r->capref * 2 : 16;
        size_t *pa = realloc(r->part, cap * sizeof(*pa));
        if (pa)
            r->part = pa;
        size_t *up = realloc(r->upload, cap * sizeof(*up));
        if (up)
            r->upload = up;
        char **bl = realloc(r->blob, cap * sizeof(*bl));
        if (bl)
            r->blob = bl;
        if (!pa || !up || !bl) {
            free(blob);
            return -1;
        }
        r->capref = cap;
    }
    r->part[r->nref] = r->n;
    r->upload[r->nref] = r->nups - 1;
    r->blob[r->nref++] = blob;
    return 0;
}

static int bucket_rows_upload(bucket_rows *r, const char *v, size_t vn) {
    Objlog__UploadRecord *u = objlog__upload_record__unpack(NULL, vn, (const uint8_t *)v);
    if (!u)
        return -1;
    Objlog__UploadRecord **g = realloc(r->ups, (r->nups + 1) * sizeof(*g));
    if (!g) {
        objlog__upload_record__free_unpacked(u, NULL);
        return -1;
    }
    r->ups = g;
    r->ups[r->nups++] = u;
    return 0;
}

static int bucket_rows_add(apply_ev *a, bucket_rows *r, const char *k, size_t kn) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        keybuf *p = realloc(r->keys, cap * sizeof(*p));
        if (!p)
            goto oom;
        r->keys = p;
        r->cap = cap;
    }
    keybuf_init(&r->keys[r->n]);
    if (keybuf_append(&r->keys[r->n], k, kn) < 0)
        goto oom;
    r->n++;
    return 0;
oom:
    snprintf(a->errstr, a->es, "out of memory");
    return -1;
}

/* An upload row, or one of its parts (its row ‖ be32): rows sort so that
 * an upload's parts follow it. */
static int bucket_rows_scan(apply_ev *a, bucket_rows *r) {
    rocksdb_iterator_t *it = apply_batch_iter(a->b, OBJLOG_CF_UPLOADS);
    int rc = 0;
    size_t up = SIZE_MAX; /* index of the last upload row */
    for (rocksdb_iter_seek(it, (const char *)a->bpart.data, a->bpart.len);
         rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (kn < a->bpart.len || memcmp(k, a->bpart.data, a->bpart.len) != 0)
            break;
        const keybuf *u = up == SIZE_MAX ? NULL : &r->keys[up];
        int part = u && kn == u->len + 4 && memcmp(k, u->data, u->len) == 0;
        if (part) {
            const char *v = rocksdb_iter_value(it, &vn);
            Objlog__PartRecord *pr = objlog__part_record__unpack(NULL, vn, (const uint8_t *)v);
            if (!pr) {
                snprintf(a->errstr, a->es, "part record in %s: corrupt", a->ev->bucket);
                rc = -1;
                break;
            }
            r->part_bytes += (int64_t)pr->size;
            int named = pr->blob_id && pr->blob_id[0] && r->nups;
            char *blob = named ? strdup(pr->blob_id) : NULL;
            objlog__part_record__free_unpacked(pr, NULL);
            if (named && (!blob || bucket_rows_ref(r, blob) < 0)) {
                snprintf(a->errstr, a->es, "out of memory");
                rc = -1;
                break;
            }
        } else {
            r->uploads++;
            up = r->n;
            const char *v = rocksdb_iter_value(it, &vn);
            if (bucket_rows_upload(r, v, vn) < 0) {
                snprintf(a->errstr, a->es, "upload record in %s: corrupt", a->ev->bucket);
                rc = -1;
                break;
            }
        }
        rc = bucket_rows_add(a, r, k, kn);
    }
    return stage_uploads_iter_end(a, it, rc);
}

int stage_drop_bucket_uploads(apply_ev *a) {
    bucket_rows r = {0};
    int rc = bucket_rows_scan(a, &r);
    for (size_t i = 0; rc == 0 && i < r.n; i++)
        apply_batch_del(a->b, OBJLOG_CF_UPLOADS, r.keys[i].data, r.keys[i].len);
    for (size_t i = 0; rc == 0 && i < r.nref; i++) {
        const Objlog__UploadRecord *u = r.ups[r.upload[i]];
        const keybuf *row = &r.keys[r.part[i]];
        blobrefs_from f = {.key = u->key.data, .kn = u->key.len, .upload_id = u->upload_id};
        rc = blobrefs_remove(a->b, &a->blobs, r.blob[i], BLOBREFS_PART, row->data, row->len,
                             &f, a->errstr, a->es);
    }
    bucket_rows_free(&r);
    if (rc == 0) {
        a->d.uploads -= r.uploads;
        a->d.upload_part_bytes -= r.part_bytes;
    }
    return rc;
}
