/* indexes.c: attribute indexes of a bucket: their
 * definitions in the bucket record (BucketRecord.indexes), their rows in the
 * `indexes` column family (layout in materializer.h), and the three events
 * that change them.
 *
 * Invariant (what a query relies on): for every index of a bucket, the 'e'
 * rows are exactly {one per key whose `objects` row has the field} when the
 * index is ready, restricted to keys <= IndexDef.cursor while it is
 * building; the 'c' rows are the count and byte sum of the 'e' rows per
 * value. Both change in the same WriteBatch as the `objects` row they
 * follow (indexes_key_end), so they are exact as of the applied offsets.
 * A 'c' row changes with every key op on its value: within a batch it
 * lives in the batch's counter table (indexes_stage), loaded on first
 * touch and staged once before the write, so every read of a 'c' row in
 * the state machine goes through that table (count_add, op_drop).
 *
 * Backfill is part of the log, not a background job: PutIndex on a bucket
 * that holds objects makes the index "building" with an empty cursor; each
 * BuildIndex event indexes the next max_keys `objects` rows after the
 * cursor (in key order, as the batch sees them) and moves the cursor past
 * them; the step that finds no row left makes the index ready. A key op on
 * a key <= cursor maintains the index, one on a key > cursor leaves it to
 * the cursor, which will index whatever the key holds when it gets there.
 * So the rows are a function of the log prefix: replay (with any batch
 * boundaries) rebuilds them byte for byte, and no scan outside the log's
 * order can race a write.
 *
 * Like the stats 'b' rows, all rows of a bucket's indexes sit under
 * route_key(b, "") and belong to that key's partition: today every key of
 * a bucket routes there (docs/ARCHITECTURE.md, bucket quotas). */
#include "indexes.h"

#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INDEXES_DROP_CHUNK 4096

/* ---- names, fields, keys (public: the query service reads the layout) ---- */

int objlog_index_name_valid(const char *name, char *why, size_t ws) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > OBJLOG_INDEX_NAME_MAX) {
        snprintf(why, ws, "index name must be 1-%d characters", OBJLOG_INDEX_NAME_MAX);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) {
            snprintf(why, ws, "index name %s: only A-Z a-z 0-9 - _ . are allowed", name);
            return 0;
        }
    }
    return 1;
}

/* The KEY of "user_metadata.KEY" / "tag.KEY", or NULL for another field. */
static const char *field_key(const char *field, int *is_tag) {
    if (strncmp(field, "user_metadata.", 14) == 0) {
        *is_tag = 0;
        return field + 14;
    }
    if (strncmp(field, "tag.", 4) == 0) {
        *is_tag = 1;
        return field + 4;
    }
    return NULL;
}

int objlog_index_field_valid(const char *field, char *why, size_t ws) {
    if (!field)
        field = "";
    if (strcmp(field, "content_type") == 0 || strcmp(field, "storage_class") == 0)
        return 1;
    int is_tag;
    const char *k = field_key(field, &is_tag);
    if (k && *k && strlen(k) <= OBJLOG_INDEX_FIELD_KEY_MAX)
        return 1;
    if (!*field) {
        snprintf(why, ws, "index field is required: content_type, storage_class, "
                 "user_metadata.KEY or tag.KEY");
        return 0;
    }
    snprintf(why, ws,
             "index field %s: must be content_type, storage_class, "
             "user_metadata.KEY or tag.KEY (KEY 1-%d bytes)",
             field, OBJLOG_INDEX_FIELD_KEY_MAX);
    return 0;
}

int objlog_index_prefix(keybuf *kb, const char *bucket, char kind, const char *name) {
    keybuf_reset(kb);
    uint8_t k = (uint8_t)kind;
    if (keycodec_route_key(kb, bucket, strlen(bucket), (const uint8_t *)"", 0) < 0 ||
        keybuf_append(kb, &k, 1) < 0 ||
        keycodec_append_enc(kb, (const uint8_t *)name, strlen(name)) < 0)
        return -1;
    return 0;
}

static int meta_find(Objlog__UserMeta **m, size_t n, const char *name,
                     const char **v, size_t *vn) {
    for (size_t i = 0; i < n; i++) {
        if (m[i]->name && strcmp(m[i]->name, name) == 0) {
            *v = m[i]->value ? m[i]->value : "";
            *vn = strlen(*v);
            return 1;
        }
    }
    return 0;
}

int objlog_index_value(const char *field, const Objlog__VersionRecord *r,
                       const char **v, size_t *vn) {
    const Objlog__ObjectMeta *m = r->meta;
    if (r->delete_marker || !m)
        return 0;
    if (strcmp(field, "content_type") == 0) {
        *v = m->content_type ? m->content_type : "";
        *vn = strlen(*v);
        return *vn > 0;
    }
    if (strcmp(field, "storage_class") == 0) {
        *v = m->storage_class && *m->storage_class ? m->storage_class : "STANDARD";
        *vn = strlen(*v);
        return 1;
    }
    int is_tag;
    const char *k = field_key(field, &is_tag);
    if (!k)
        return 0;
    return is_tag ? meta_find(m->tags, m->n_tags, k, v, vn)
                  : meta_find(m->user_metadata, m->n_user_metadata, k, v, vn);
}

void objlog_index_lm_put(uint8_t out[8], int64_t ms) {
    uint64_t u = (uint64_t)ms ^ (1ULL << 63);
    for (int i = 7; i >= 0; i--, u >>= 8)
        out[i] = (uint8_t)u;
}

/* ---- rows ---- */

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    return c ? c : (an > bn) - (an < bn);
}

/* The batch's 'c' row at k, loaded on first touch. NULL on error. */
static statrow *count_row(apply_batch *b, const keybuf *k, char *errstr, size_t es) {
    statrows *t = apply_batch_index_counts(b);
    statrow *r = statrows_find(t, k->data, k->len);
    if (r)
        return r;
    char *v;
    size_t vn;
    int rc = apply_batch_get(b, OBJLOG_CF_INDEXES, k->data, k->len, &v, &vn, errstr, es);
    if (rc < 0)
        return NULL;
    uint64_t n = 0, bytes = 0;
    if (rc == 1 && vn == 16) {
        n = apply_get_be64((const uint8_t *)v);
        bytes = apply_get_be64((const uint8_t *)v + 8);
    }
    if (rc == 1)
        rocksdb_free(v);
    r = statrows_insert(t, k->data, k->len);
    if (!r) {
        snprintf(errstr, es, "out of memory");
        return NULL;
    }
    r->u.objects = n;
    r->u.bytes = bytes;
    r->present = n != 0;
    return r;
}

/* Adds (dn, dbytes) to the 'c' row at k (unsigned wrap-around: the final
 * values are exact); the row goes at count 0. */
static int count_add(apply_batch *b, const keybuf *k, int64_t dn, int64_t dbytes,
                     char *errstr, size_t es) {
    statrow *r = count_row(b, k, errstr, es);
    if (!r)
        return -1;
    r->u.objects += (uint64_t)dn;
    r->u.bytes += (uint64_t)dbytes;
    r->present = r->u.objects != 0;
    r->dirty = 1;
    return 0;
}

void indexes_stage(apply_batch *b, statrows *t) {
    for (size_t i = 0; i < t->n; i++) {
        statrow *r = &t->rows[i];
        if (!r->dirty)
            continue;
        r->dirty = 0;
        if (!r->present) {
            apply_batch_del(b, OBJLOG_CF_INDEXES, r->key, r->key_len);
            continue;
        }
        uint8_t nv[16];
        apply_put_be64(nv, r->u.objects);
        apply_put_be64(nv + 8, r->u.bytes);
        apply_batch_put(b, OBJLOG_CF_INDEXES, r->key, r->key_len, nv, sizeof(nv));
    }
}

/* Every 'c' row of the table under prefix p becomes absent (DropIndex:
 * delete_prefix removes what the batch and the store hold). */
static void counts_forget(apply_batch *b, const keybuf *p) {
    statrows *t = apply_batch_index_counts(b);
    for (size_t i = 0; i < t->n; i++) {
        statrow *r = &t->rows[i];
        if (r->key_len < p->len || memcmp(r->key, p->data, p->len) != 0)
            continue;
        r->u.objects = r->u.bytes = 0;
        r->present = 0;
        r->dirty = 1;
    }
}

/* kb = the 'c' row key of (bucket, index name, value); *kind_at = where
 * the kind byte sits, so the caller can turn it into the 'e' prefix. */
static int count_key(keybuf *kb, const char *bucket, const char *name, const char *val,
                     size_t vn, size_t *kind_at) {
    keybuf_reset(kb);
    if (keycodec_route_key(kb, bucket, strlen(bucket), (const uint8_t *)"", 0) < 0)
        return -1;
    *kind_at = kb->len;
    uint8_t k = OBJLOG_INDEX_COUNT;
    if (keybuf_append(kb, &k, 1) < 0 ||
        keycodec_append_enc(kb, (const uint8_t *)name, strlen(name)) < 0 ||
        keycodec_append_enc(kb, (const uint8_t *)val, vn) < 0)
        return -1;
    return 0;
}

/* Adds (sign 1) or removes (sign -1) the entry of version r (raw: its
 * `objects` row) in index d, and its value's counters. The 'e' key is the
 * 'c' key with the other kind byte, then last-modified and the key. */
static int entry_apply(apply_batch *b, const char *bucket, const Objlog__IndexDef *d,
                       const Objlog__VersionRecord *r, const char *raw, size_t rawn,
                       int sign, char *errstr, size_t es) {
    const char *val;
    size_t vn;
    if (!r || !objlog_index_value(d->field, r, &val, &vn))
        return 0;
    keybuf ek, ck;
    keybuf_init(&ek);
    keybuf_init(&ck);
    int rc = -2;
    uint8_t lm[8];
    size_t kind_at;
    objlog_index_lm_put(lm, r->log_time_ms);
    if (count_key(&ck, bucket, d->name, val, vn, &kind_at) == 0 &&
        keybuf_append(&ek, ck.data, ck.len) == 0 &&
        (!d->with_last_modified || keybuf_append(&ek, lm, 8) == 0) &&
        keycodec_append_enc(&ek, r->key.data, r->key.len) == 0) {
        ek.data[kind_at] = OBJLOG_INDEX_ENTRY;
        if (sign > 0)
            apply_batch_put(b, OBJLOG_CF_INDEXES, ek.data, ek.len, raw, rawn);
        else
            apply_batch_del(b, OBJLOG_CF_INDEXES, ek.data, ek.len);
        uint64_t size = r->meta ? r->meta->size : 0;
        rc = count_add(b, &ck, sign, sign * (int64_t)size, errstr, es);
    }
    keybuf_free(&ek);
    keybuf_free(&ck);
    if (rc == -2)
        snprintf(errstr, es, "out of memory");
    return rc < 0 ? -1 : 0;
}

/* Whether index d holds key (see the invariant above). */
static int maintained(const Objlog__IndexDef *d, ProtobufCBinaryData key) {
    return !d->building ||
           (d->cursor.len && bytes_cmp(key.data, key.len, d->cursor.data, d->cursor.len) <= 0);
}

/* ---- key ops ---- */

void indexes_key_keep(indexes_key *ik, Objlog__BucketRecord **br) {
    if (!*br || (*br)->n_indexes == 0 || ik->br)
        return;
    ik->br = *br;
    *br = NULL;
}

int indexes_key_wants(const indexes_key *ik) { return ik->br != NULL; }

void indexes_key_begin(indexes_key *ik, char *old, size_t old_len) {
    if (ik->old)
        rocksdb_free(ik->old);
    free(ik->now);
    ik->old = NULL;
    ik->now = NULL;
    ik->staged = 0;
    if (!ik->br) {
        if (old)
            rocksdb_free(old);
        return;
    }
    ik->old = old;
    ik->old_len = old ? old_len : 0;
}

void indexes_key_staged(indexes_key *ik, uint8_t *row, size_t n) {
    free(ik->now);
    ik->now = NULL;
    if (!ik->br) {
        free(row);
        return;
    }
    ik->now = row;
    ik->now_len = row ? n : 0;
    ik->staged = 1;
}

static Objlog__VersionRecord *record_of(const char *raw, size_t n, int *bad) {
    if (!raw)
        return NULL;
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, n, (const uint8_t *)raw);
    if (!r)
        *bad = 1;
    return r;
}

int indexes_key_end(apply_batch *b, indexes_key *ik, const char *bucket,
                    ProtobufCBinaryData key, char *errstr, size_t es) {
    if (!ik->br || !ik->staged)
        return 0;
    const char *nv = (const char *)ik->now;
    size_t nn = ik->now_len;
    if (!nv == !ik->old && (!nv || bytes_cmp((const uint8_t *)nv, nn,
                                             (const uint8_t *)ik->old, ik->old_len) == 0))
        return 0; /* unchanged */
    int rc = 0, bad = 0;
    Objlog__VersionRecord *o = record_of(ik->old, ik->old_len, &bad);
    Objlog__VersionRecord *n = record_of(nv, nn, &bad);
    if (bad) {
        snprintf(errstr, es, "object record in %s: corrupt", bucket);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < ik->br->n_indexes; i++) {
        const Objlog__IndexDef *d = ik->br->indexes[i];
        if (!maintained(d, key))
            continue;
        rc = entry_apply(b, bucket, d, o, ik->old, ik->old_len, -1, errstr, es);
        if (rc == 0)
            rc = entry_apply(b, bucket, d, n, nv, nn, 1, errstr, es);
    }
    objlog__version_record__free_unpacked(o, NULL);
    objlog__version_record__free_unpacked(n, NULL);
    return rc;
}

void indexes_key_done(indexes_key *ik) {
    objlog__bucket_record__free_unpacked(ik->br, NULL);
    if (ik->old)
        rocksdb_free(ik->old);
    free(ik->now);
    memset(ik, 0, sizeof(*ik));
}

/* ---- index events ---- */

typedef struct ix_res {
    Objlog__OutcomeCode *code;
    char *msg;
    size_t msg_size;
} ix_res;

static void ix_reject(ix_res *r, Objlog__OutcomeCode code, const char *fmt,
                      const char *arg) {
    *r->code = code;
    snprintf(r->msg, r->msg_size, fmt, arg);
}

static int ix_find(const Objlog__BucketRecord *br, const char *name) {
    for (size_t i = 0; i < br->n_indexes; i++)
        if (strcmp(br->indexes[i]->name, name) == 0)
            return (int)i;
    return -1;
}

static int iter_error(rocksdb_iterator_t *it, char *errstr, size_t es) {
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (!err)
        return 0;
    snprintf(errstr, es, "scan: %s", err);
    rocksdb_free(err);
    return -1;
}

static int starts_with(const char *k, size_t kn, const keybuf *p) {
    return kn >= p->len && memcmp(k, p->data, p->len) == 0;
}

/* 1 if bucket has an `objects` row (as the batch sees it), 0, -1. */
static int bucket_has_objects(apply_batch *b, const char *bucket, char *errstr, size_t es) {
    keybuf bp;
    keybuf_init(&bp);
    if (keycodec_bucket_part(&bp, bucket, strlen(bucket)) < 0) {
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_OBJECTS);
    rocksdb_iter_seek(it, (const char *)bp.data, bp.len);
    int has = 0;
    if (rocksdb_iter_valid(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        has = starts_with(k, kn, &bp);
    }
    int rc = iter_error(it, errstr, es);
    rocksdb_iter_destroy(it);
    keybuf_free(&bp);
    return rc < 0 ? -1 : has;
}

static int op_put(apply_batch *b, const Objlog__Event *ev, uint64_t seq,
                  Objlog__BucketRecord *br, ix_res *r, char *errstr, size_t es) {
    const Objlog__PutIndex *pi = ev->put_index;
    char why[256];
    if (!objlog_index_name_valid(pi->name, why, sizeof(why)) ||
        !objlog_index_field_valid(pi->field, why, sizeof(why))) {
        ix_reject(r, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT, "%s", why);
        return 0;
    }
    int at = ix_find(br, pi->name);
    if (at >= 0) {
        const Objlog__IndexDef *d = br->indexes[at];
        if (strcmp(d->field, pi->field) == 0 && !d->with_last_modified == !pi->with_last_modified)
            return 0; /* the same definition again: OK, nothing to do */
        ix_reject(r, OBJLOG__OUTCOME_CODE__OUTCOME_INDEX_ALREADY_EXISTS,
                  "index %s exists with another definition (drop it first)", pi->name);
        return 0;
    }
    if (br->n_indexes >= OBJLOG_INDEXES_MAX) {
        char n[16];
        snprintf(n, sizeof(n), "%d", OBJLOG_INDEXES_MAX);
        ix_reject(r, OBJLOG__OUTCOME_CODE__OUTCOME_TOO_MANY_INDEXES,
                  "a bucket has at most %s indexes", n);
        return 0;
    }
    int has = bucket_has_objects(b, ev->bucket, errstr, es);
    if (has < 0)
        return -1;
    Objlog__IndexDef *d = malloc(sizeof(*d));
    Objlog__IndexDef **arr = realloc(br->indexes, (br->n_indexes + 1) * sizeof(*arr));
    if (arr)
        br->indexes = arr;
    if (d)
        objlog__index_def__init(d);
    if (!d || !arr || !(d->name = strdup(pi->name)) || !(d->field = strdup(pi->field))) {
        if (d && d->name != protobuf_c_empty_string)
            free(d->name);
        free(d);
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    d->with_last_modified = pi->with_last_modified;
    d->building = has;
    d->created_seq = seq;
    size_t pos = 0;
    while (pos < br->n_indexes && strcmp(br->indexes[pos]->name, d->name) < 0)
        pos++;
    memmove(br->indexes + pos + 1, br->indexes + pos,
            (br->n_indexes - pos) * sizeof(*arr));
    br->indexes[pos] = d;
    br->n_indexes++;
    return 1;
}

/* Deletes every row under prefix p, a chunk of keys at a time (the batch
 * must not change under a live iterator over it). */
static int delete_prefix(apply_batch *b, const keybuf *p, char *errstr, size_t es) {
    keybuf *keys = calloc(INDEXES_DROP_CHUNK, sizeof(*keys));
    if (!keys) {
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    int rc = 0;
    for (;;) {
        size_t n = 0;
        rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_INDEXES);
        for (rocksdb_iter_seek(it, (const char *)p->data, p->len);
             rc == 0 && n < INDEXES_DROP_CHUNK && rocksdb_iter_valid(it);
             rocksdb_iter_next(it)) {
            size_t kn;
            const char *k = rocksdb_iter_key(it, &kn);
            if (!starts_with(k, kn, p))
                break;
            keybuf_init(&keys[n]);
            if (keybuf_append(&keys[n++], k, kn) < 0) {
                snprintf(errstr, es, "out of memory");
                rc = -1;
            }
        }
        if (rc == 0)
            rc = iter_error(it, errstr, es);
        rocksdb_iter_destroy(it);
        for (size_t i = 0; i < n; i++) {
            if (rc == 0)
                apply_batch_del(b, OBJLOG_CF_INDEXES, keys[i].data, keys[i].len);
            keybuf_free(&keys[i]);
        }
        if (rc < 0 || n < INDEXES_DROP_CHUNK)
            break;
    }
    free(keys);
    return rc;
}

static int op_drop(apply_batch *b, const Objlog__Event *ev, Objlog__BucketRecord *br,
                   ix_res *r, char *errstr, size_t es) {
    const char *name = ev->drop_index->name;
    int at = ix_find(br, name);
    if (at < 0) {
        ix_reject(r, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_INDEX,
                  "index %s does not exist", name);
        return 0;
    }
    keybuf p;
    keybuf_init(&p);
    int rc = 0;
    static const char kinds[] = {OBJLOG_INDEX_ENTRY, OBJLOG_INDEX_COUNT};
    for (size_t i = 0; rc == 0 && i < sizeof(kinds); i++) {
        rc = objlog_index_prefix(&p, ev->bucket, kinds[i], name);
        if (rc < 0)
            snprintf(errstr, es, "out of memory");
        else
            rc = delete_prefix(b, &p, errstr, es);
        if (rc == 0 && kinds[i] == OBJLOG_INDEX_COUNT)
            counts_forget(b, &p);
    }
    keybuf_free(&p);
    if (rc < 0)
        return -1;
    objlog__index_def__free_unpacked(br->indexes[at], NULL);
    memmove(br->indexes + at, br->indexes + at + 1,
            (br->n_indexes - (size_t)at - 1) * sizeof(*br->indexes));
    br->n_indexes--;
    return 1;
}

/* The `objects` rows one build step indexes, copied out of the iterator. */
typedef struct build_rows {
    keybuf *rows;
    size_t n;
    int more;               /* a row exists after the last one taken */
} build_rows;

static void build_rows_free(build_rows *br) {
    for (size_t i = 0; i < br->n; i++)
        keybuf_free(&br->rows[i]);
    free(br->rows);
}

/* Up to max rows of bucket's `objects` after key cursor (all if empty). */
static int build_collect(apply_batch *b, const char *bucket, ProtobufCBinaryData cursor,
                         uint32_t max, build_rows *out, char *errstr, size_t es) {
    keybuf bp, start;
    keybuf_init(&bp);
    keybuf_init(&start);
    memset(out, 0, sizeof(*out));
    out->rows = calloc(max, sizeof(*out->rows));
    if (!out->rows || keycodec_bucket_part(&bp, bucket, strlen(bucket)) < 0 ||
        (cursor.len ? keycodec_route_key(&start, bucket, strlen(bucket), cursor.data, cursor.len)
                    : keybuf_append(&start, bp.data, bp.len)) < 0) {
        keybuf_free(&bp);
        keybuf_free(&start);
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    int rc = 0;
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_OBJECTS);
    for (rocksdb_iter_seek(it, (const char *)start.data, start.len);
         rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (!starts_with(k, kn, &bp))
            break;
        if (cursor.len && kn == start.len && memcmp(k, start.data, kn) == 0)
            continue; /* the cursor's own key was indexed by the last step */
        if (out->n == max) {
            out->more = 1;
            break;
        }
        const char *v = rocksdb_iter_value(it, &vn);
        keybuf_init(&out->rows[out->n]);
        if (keybuf_append(&out->rows[out->n++], v, vn) < 0) {
            snprintf(errstr, es, "out of memory");
            rc = -1;
        }
    }
    if (rc == 0)
        rc = iter_error(it, errstr, es);
    rocksdb_iter_destroy(it);
    keybuf_free(&bp);
    keybuf_free(&start);
    return rc;
}

static int set_cursor(Objlog__IndexDef *d, ProtobufCBinaryData key) {
    uint8_t *c = NULL;
    if (key.len) {
        c = malloc(key.len);
        if (!c)
            return -1;
        memcpy(c, key.data, key.len);
    }
    free(d->cursor.data);
    d->cursor.data = c;
    d->cursor.len = key.len;
    return 0;
}

static int op_build(apply_batch *b, const Objlog__Event *ev, Objlog__BucketRecord *br,
                    ix_res *r, char *errstr, size_t es) {
    const Objlog__BuildIndex *bi = ev->build_index;
    int at = ix_find(br, bi->name);
    if (at < 0) {
        ix_reject(r, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_INDEX,
                  "index %s does not exist", bi->name);
        return 0;
    }
    Objlog__IndexDef *d = br->indexes[at];
    if (!d->building)
        return 0; /* ready: a late or duplicate step changes nothing */
    uint32_t max = bi->max_keys ? bi->max_keys : INDEXES_BUILD_DEFAULT;
    if (max > INDEXES_BUILD_MAX)
        max = INDEXES_BUILD_MAX;
    build_rows rows;
    int rc = build_collect(b, ev->bucket, d->cursor, max, &rows, errstr, es);
    for (size_t i = 0; rc == 0 && i < rows.n; i++) {
        int bad = 0;
        Objlog__VersionRecord *v =
            record_of((const char *)rows.rows[i].data, rows.rows[i].len, &bad);
        if (bad) {
            snprintf(errstr, es, "object record in %s: corrupt", ev->bucket);
            rc = -1;
            break;
        }
        rc = entry_apply(b, ev->bucket, d, v, (const char *)rows.rows[i].data,
                         rows.rows[i].len, 1, errstr, es);
        if (rc == 0 && set_cursor(d, v->key) < 0) {
            snprintf(errstr, es, "out of memory");
            rc = -1;
        }
        objlog__version_record__free_unpacked(v, NULL);
    }
    if (rc == 0) {
        d->scanned += rows.n;
        if (!rows.more) {
            ProtobufCBinaryData none = {0, NULL};
            d->building = 0;
            (void)set_cursor(d, none);
        }
    }
    build_rows_free(&rows);
    return rc < 0 ? -1 : 1;
}

int indexes_op(apply_batch *b, const Objlog__Event *ev, uint64_t seq,
               Objlog__BucketRecord *br, Objlog__OutcomeCode *code, char *msg,
               size_t msg_size, char *errstr, size_t es) {
    ix_res r = {code, msg, msg_size};
    switch (ev->op_case) {
    case OBJLOG__EVENT__OP_PUT_INDEX:
        return op_put(b, ev, seq, br, &r, errstr, es);
    case OBJLOG__EVENT__OP_DROP_INDEX:
        return op_drop(b, ev, br, &r, errstr, es);
    case OBJLOG__EVENT__OP_BUILD_INDEX:
        return op_build(b, ev, br, &r, errstr, es);
    default:
        return 0;
    }
}
