/* viewix.c: queries over attribute indexes (view.h, "attribute indexes";
 * row layout in materializer.h) on the view's one snapshot.
 *
 * It owns turning a value / last-modified filter into one bounded seek over
 * the index's 'e' rows (objects) or 'c' rows (per-value counters). The 'e'
 * rows hold a copy of each key's `objects` row, so a query reads nothing
 * else: its cost per result is LIST's.
 *
 * Invariant (as LIST's): a page emits at most max items and reports
 * is_truncated only when one more matching row exists after them; the
 * position it hands on is exclusive and need not exist any more. */
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keycodec.h"

static int ix_cmp(const void *a, size_t an, const void *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int r = m ? memcmp(a, b, m) : 0;
    return r ? r : (an > bn) - (an < bn);
}

/* The first key past every key that starts with kb: kb with its last byte
 * incremented (the prefixes here end in enc()'s 00 01 terminator or a
 * be64, so no carry is ever needed but it is handled). */
static void ix_prefix_end(keybuf *kb) {
    while (kb->len && kb->data[kb->len - 1] == 0xFF)
        kb->len--;
    if (kb->len)
        kb->data[kb->len - 1]++;
}

typedef struct ix_scan {
    keybuf p;        /* the index's prefix (base kind enc(name)) */
    keybuf lo, hi;   /* [lo, hi): what the filters allow, before lm */
    keybuf after;    /* p ‖ position, or empty */
    rocksdb_readoptions_t *ro;
    rocksdb_iterator_t *it;
} ix_scan;

static void ix_scan_free(ix_scan *s) {
    if (s->it)
        rocksdb_iter_destroy(s->it);
    if (s->ro)
        rocksdb_readoptions_destroy(s->ro);
    keybuf_free(&s->p);
    keybuf_free(&s->lo);
    keybuf_free(&s->hi);
    keybuf_free(&s->after);
}

/* Range of the rows of kind the filters select; lm_seek: a composite
 * index queried with eq narrows by last-modified in the key itself. */
static int ix_scan_open(ix_scan *s, view *v, const char *bucket, char kind,
                        const Objlog__IndexDef *d, const view_index_req *r, int lm_seek) {
    memset(s, 0, sizeof(*s));
    keybuf_init(&s->p);
    keybuf_init(&s->lo);
    keybuf_init(&s->hi);
    keybuf_init(&s->after);
    if (objlog_index_prefix(&s->p, bucket, kind, d->name) < 0 ||
        keybuf_append(&s->lo, s->p.data, s->p.len) < 0 ||
        keybuf_append(&s->hi, s->p.data, s->p.len) < 0)
        return -1;
    uint8_t lm[8];
    if (r->has_eq) {
        if (keycodec_append_enc(&s->lo, r->eq, r->eq_len) < 0 ||
            keycodec_append_enc(&s->hi, r->eq, r->eq_len) < 0)
            return -1;
        if (lm_seek && r->has_lm_from) {
            objlog_index_lm_put(lm, r->lm_from);
            if (keybuf_append(&s->lo, lm, 8) < 0)
                return -1;
        }
        if (lm_seek && r->has_lm_to) {
            objlog_index_lm_put(lm, r->lm_to);
            if (keybuf_append(&s->hi, lm, 8) < 0)
                return -1;
        } else {
            ix_prefix_end(&s->hi);
        }
    } else {
        if (r->has_from && keycodec_append_enc(&s->lo, r->from, r->from_len) < 0)
            return -1;
        if (r->has_to) {
            if (keycodec_append_enc(&s->hi, r->to, r->to_len) < 0)
                return -1;
        } else {
            ix_prefix_end(&s->hi);
        }
    }
    if (r->after && (keybuf_append(&s->after, s->p.data, s->p.len) < 0 ||
                     keybuf_append(&s->after, r->after, r->after_len) < 0))
        return -1;
    s->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(s->ro, view_snapshot(v));
    rocksdb_readoptions_set_iterate_upper_bound(s->ro, (const char *)s->hi.data, s->hi.len);
    s->it = rocksdb_create_iterator_cf(objlog_store_db(view_store(v)), s->ro,
                                       objlog_store_cf(view_store(v), OBJLOG_CF_INDEXES));
    const keybuf *start = r->after && ix_cmp(s->after.data, s->after.len, s->lo.data,
                                             s->lo.len) >= 0
                              ? &s->after : &s->lo;
    rocksdb_iter_seek(s->it, (const char *)start->data, start->len);
    if (start == &s->after && rocksdb_iter_valid(s->it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(s->it, &kn);
        if (ix_cmp(k, kn, s->after.data, s->after.len) == 0)
            rocksdb_iter_next(s->it);
    }
    return 0;
}

static view_rc ix_scan_close(ix_scan *s, view_rc rc, char *errstr, size_t es) {
    char *err = NULL;
    if (s->it)
        rocksdb_iter_get_error(s->it, &err);
    ix_scan_free(s);
    if (err) {
        snprintf(errstr, es, "store scan: %s", err);
        rocksdb_free(err);
        return VIEW_ERROR;
    }
    if (rc == VIEW_ERROR && !*errstr)
        snprintf(errstr, es, "out of memory");
    return rc;
}

static int ix_lm_ok(const view_index_req *r, int64_t lm) {
    return (!r->has_lm_from || lm >= r->lm_from) && (!r->has_lm_to || lm < r->lm_to);
}

static int ix_set_next(view_index_page *out, const ix_scan *s, const char *k, size_t kn) {
    free(out->next.data);
    out->next.len = kn - s->p.len;
    out->next.data = malloc(out->next.len ? out->next.len : 1);
    if (!out->next.data)
        return -1;
    memcpy(out->next.data, k + s->p.len, out->next.len);
    return 0;
}

view_rc view_index_objects(view *v, const char *bucket, const Objlog__IndexDef *d,
                           const view_index_req *r, view_index_page *out,
                           char *errstr, size_t es) {
    memset(out, 0, sizeof(*out));
    if (es)
        errstr[0] = '\0';
    ix_scan s;
    if (ix_scan_open(&s, v, bucket, OBJLOG_INDEX_ENTRY, d, r, d->with_last_modified) < 0)
        return ix_scan_close(&s, VIEW_ERROR, errstr, es);
    view_rc rc = VIEW_OK;
    if (!(out->objects = calloc((size_t)r->max, sizeof(*out->objects))))
        return ix_scan_close(&s, VIEW_ERROR, errstr, es);
    for (; rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
        size_t kn, vn;
        const char *k = rocksdb_iter_key(s.it, &kn);
        const char *val = rocksdb_iter_value(s.it, &vn);
        if (ix_cmp(k, kn, s.lo.data, s.lo.len) < 0)
            continue;
        view_version tmp;
        memset(&tmp, 0, sizeof(tmp));
        Objlog__VersionRecord *rec =
            objlog__version_record__unpack(NULL, vn, (const uint8_t *)val);
        if (!rec) {
            snprintf(errstr, es, "corrupt index row");
            rc = VIEW_ERROR;
            break;
        }
        int ok = ix_lm_ok(r, rec->log_time_ms);
        ProtobufCBinaryData key = rec->key;
        if (ok && out->n_objects == (size_t)r->max) {
            out->is_truncated = 1;
            objlog__version_record__free_unpacked(rec, NULL);
            break;
        }
        if (ok) {
            view_version *o = &out->objects[out->n_objects];
            if (view_version_fill(o, key.data, key.len, val, vn) < 0 ||
                ix_set_next(out, &s, k, kn) < 0) {
                objlog__version_record__free_unpacked(rec, NULL);
                rc = VIEW_ERROR;
                break;
            }
            o->is_latest = 1;
            out->n_objects++;
        }
        objlog__version_record__free_unpacked(rec, NULL);
    }
    return ix_scan_close(&s, rc, errstr, es);
}

view_rc view_index_values(view *v, const char *bucket, const Objlog__IndexDef *d,
                          const view_index_req *r, view_index_page *out, char *errstr,
                          size_t es) {
    memset(out, 0, sizeof(*out));
    if (es)
        errstr[0] = '\0';
    ix_scan s;
    if (ix_scan_open(&s, v, bucket, OBJLOG_INDEX_COUNT, d, r, 0) < 0)
        return ix_scan_close(&s, VIEW_ERROR, errstr, es);
    out->values = calloc((size_t)r->max, sizeof(*out->values));
    out->counts = calloc((size_t)r->max, sizeof(*out->counts));
    out->bytes = calloc((size_t)r->max, sizeof(*out->bytes));
    if (!out->values || !out->counts || !out->bytes)
        return ix_scan_close(&s, VIEW_ERROR, errstr, es);
    view_rc rc = VIEW_OK;
    keybuf val;
    keybuf_init(&val);
    for (; rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
        size_t kn, vn, used = 0;
        const char *k = rocksdb_iter_key(s.it, &kn);
        const uint8_t *cv = (const uint8_t *)rocksdb_iter_value(s.it, &vn);
        if (ix_cmp(k, kn, s.lo.data, s.lo.len) < 0)
            continue;
        if (out->n_values == (size_t)r->max) {
            out->is_truncated = 1;
            break;
        }
        keybuf_reset(&val);
        if (vn != 16 || keycodec_decode_enc((const uint8_t *)k + s.p.len, kn - s.p.len, &val,
                                            &used) < 0) {
            snprintf(errstr, es, "corrupt index counter row");
            rc = VIEW_ERROR;
            break;
        }
        size_t i = out->n_values;
        out->values[i].data = malloc(val.len ? val.len : 1);
        if (!out->values[i].data || ix_set_next(out, &s, k, kn) < 0) {
            rc = VIEW_ERROR;
            break;
        }
        if (val.len)
            memcpy(out->values[i].data, val.data, val.len);
        out->values[i].len = val.len;
        uint64_t n = 0, b = 0;
        for (int j = 0; j < 8; j++) {
            n = (n << 8) | cv[j];
            b = (b << 8) | cv[8 + j];
        }
        out->counts[i] = n;
        out->bytes[i] = b;
        out->n_values++;
    }
    keybuf_free(&val);
    return ix_scan_close(&s, rc, errstr, es);
}

void view_index_page_free(view_index_page *p) {
    for (size_t i = 0; i < p->n_objects; i++)
        view_version_free(&p->objects[i]);
    free(p->objects);
    for (size_t i = 0; i < p->n_values; i++)
        free(p->values[i].data);
    free(p->values);
    free(p->counts);
    free(p->bytes);
    free(p->next.data);
    memset(p, 0, sizeof(*p));
}
