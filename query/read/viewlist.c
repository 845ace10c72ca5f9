/* viewlist.c: the listings of view.h (LIST, ListObjectVersions,
 * ListMultipartUploads, ListParts) and prefix usage: walks of one
 * prefix's key range, which share a skeleton (scan) that view.c's point
 * reads and viewstats.c's counters have no use for.
 *
 * It owns turning view.h requests into seeks over the column families of
 * materializer.h and rows back into owned structs. Every scan is bounded by
 * the prefix's key range [prefix_start, prefix_end) as the iterator's upper
 * bound, and every common prefix is left with one seek past everything
 * under it (prefix_end(prefix_start(b, cp))), never walked.
 *
 * Prefix usage is the one scan that walks under common prefixes (it sums
 * them): it reads every row of the range in order, bounded by max_rows per
 * call.
 *
 * Invariant: a listing emits at most max items (objects/versions/uploads
 * plus common prefixes) and reports is_truncated only when one more item
 * really exists after them, so a client following next markers sees every
 * item once, whatever the page size. Prefix usage keeps the same promise
 * for its groups: a group is emitted only once complete, and a page that
 * ends inside one hands it on, so each appears once with exact totals. */
#define _GNU_SOURCE
#include "viewint.h"

#include "listentry.h"
#include "pagearena.h"

/* ---------------------------------------------------------- prefix ranges */

/* The prefix's range [lo, hi) in bucket b. -1 when out of memory. */
static int view_prefix_range(const char *b, const uint8_t *p, size_t pn,
                             keybuf *lo, keybuf *hi) {
    if (keycodec_prefix_start(lo, b, strlen(b), p, pn) < 0 ||
        keybuf_append(hi, lo->data, lo->len) < 0)
        return -1;
    if (keycodec_prefix_end(hi) < 0)
        return -1; /* cannot happen: a bucket part ends in 0x00 0x01 ... */
    return 0;
}

/* Sets *k to the first position after every key starting with cp. */
static int view_past_prefix(keybuf *k, const char *b, const uint8_t *cp,
                            size_t n) {
    keybuf_reset(k);
    if (keycodec_prefix_start(k, b, strlen(b), cp, n) < 0)
        return -1;
    return keycodec_prefix_end(k);
}

/* Length of the common prefix key rolls into (prefix up to and including
 * the first delimiter after it), or 0 when it rolls into none. */
static size_t view_rollup(const keybuf *key, size_t pn, const uint8_t *delim,
                          size_t dn) {
    if (!dn || key->len <= pn)
        return 0;
    const uint8_t *d = memmem(key->data + pn, key->len - pn, delim, dn);
    return d ? (size_t)(d - key->data) + dn : 0;
}

/* -------------------------------------------------------- listing skeleton */

/* What every listing shares: the range, the cursor and the page. */
typedef struct scan {
    view *v;
    const char *bucket;
    const uint8_t *delim;
    size_t prefix_len, delim_len;
    const uint8_t *marker;       /* key marker for the rollup rule, or NULL */
    size_t marker_len;
    keybuf lo, hi, seek, tmp;
    keybuf bucket_buf, key;      /* the current row's decoded parts */
    view_iter vi;
    int max, count, truncated;
    page_arena *page;            /* the page's arena (its versions' memory) */
    char *errstr;
    size_t es;
} scan;

static int scan_init(scan *s, view *v, const char *bucket, const uint8_t *p,
                     size_t pn, const uint8_t *d, size_t dn, int max,
                     char *errstr, size_t es) {
    memset(s, 0, sizeof(*s));
    s->v = v;
    s->bucket = bucket;
    s->prefix_len = pn;
    s->delim = d;
    s->delim_len = dn;
    s->max = max;
    s->errstr = errstr;
    s->es = es;
    keybuf_init(&s->lo);
    keybuf_init(&s->hi);
    keybuf_init(&s->seek);
    keybuf_init(&s->tmp);
    keybuf_init(&s->bucket_buf);
    keybuf_init(&s->key);
    if (view_prefix_range(bucket, p, pn, &s->lo, &s->hi) < 0 ||
        keybuf_set(&s->seek, &s->lo) < 0)
        return -1;
    return 0;
}

static void scan_free(scan *s) {
    keybuf_free(&s->lo);
    keybuf_free(&s->hi);
    keybuf_free(&s->seek);
    keybuf_free(&s->tmp);
    keybuf_free(&s->bucket_buf);
    keybuf_free(&s->key);
}

/* Moves the start position forward to k (never backward). */
static int scan_start_at(scan *s, const keybuf *k) {
    return keybuf_cmp(k, &s->seek) > 0 ? keybuf_set(&s->seek, k) : 0;
}

/* Decodes the current row's key; returns the route key length or 0 when
 * the row is not ours (nothing we wrote: skipped). */
static size_t scan_row_key(scan *s, const uint8_t *row, size_t n) {
    size_t used = 0;
    keybuf_reset(&s->bucket_buf);
    keybuf_reset(&s->key);
    if (keycodec_parse_route_key(row, n, &s->bucket_buf, &s->key, &used) < 0)
        return 0;
    return used;
}

/* Handles a row whose key rolls into a common prefix. 0: not rolled up;
 * 1: handled (emitted or skipped, iterator moved past the prefix); 2: the
 * page is full (truncated); -1 error. emit stores the prefix. */
static int scan_rollup(scan *s, view_bytes **arr, size_t *n) {
    size_t cpl = view_rollup(&s->key, s->prefix_len, s->delim, s->delim_len);
    if (!cpl)
        return 0;
    /* A prefix at or before the marker was returned on an earlier page
     * (the marker is then inside it): skip it. */
    int seen = s->marker && bytes_cmp(s->key.data, cpl, s->marker, s->marker_len) <= 0;
    if (!seen) {
        if (s->count == s->max) {
            s->truncated = 1;
            return 2;
        }
        view_bytes *b = array_push(arr, n, sizeof(*b));
        if (!b || bytes_set(b, s->key.data, cpl) < 0)
            return -1;
        s->count++;
    }
    if (view_past_prefix(&s->tmp, s->bucket, s->key.data, cpl) < 0)
        return -1;
    view_iter_seek(&s->vi, &s->tmp);
    return 1;
}

/* The opening every listing shares: an empty errstr and page (out, of
 * out_size bytes), the page bound (0..VIEW_MAX_KEYS), the bucket, then the
 * scan of prefix p. VIEW_OK with s ready, else the answer (s then holds
 * nothing to free). One place, so no listing can answer with a stale page. */
static view_rc scan_open(scan *s, view *v, const char *bucket, const uint8_t *p,
                         size_t pn, const uint8_t *d, size_t dn, int max,
                         void *out, size_t out_size, char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    memset(out, 0, out_size);
    if (max < 0 || max > VIEW_MAX_KEYS)
        return VIEW_INVALID_ARGUMENT;
    view_rc rc = view_bucket_check(v, bucket, errstr, es);
    if (rc != VIEW_OK)
        return rc;
    if (scan_init(s, v, bucket, p, pn, d, dn, max, errstr, es) < 0) {
        scan_free(s);
        return view_oom(errstr, es);
    }
    return VIEW_OK;
}

/* Opens s's iterator over cf at s->seek. skip_equal: a row at exactly
 * s->seek was returned already (by an earlier page): start after it. */
static void scan_iter_open(scan *s, objlog_cf cf, int skip_equal) {
    view_iter_open(s->v, cf, &s->hi, &s->vi);
    view_iter_seek(&s->vi, &s->seek);
    if (skip_equal && rocksdb_iter_valid(s->vi.it)) {
        size_t kl;
        const char *k = rocksdb_iter_key(s->vi.it, &kl);
        if (bytes_cmp(k, kl, s->seek.data, s->seek.len) == 0)
            rocksdb_iter_next(s->vi.it);
    }
}

/* One listing's page loop: fills its page (out) from s's iterator. 0, or
 * -1 (errstr filled unless out of memory). */
typedef int scan_page_fn(scan *s, void *out);

/* Runs a listing set up by scan_open over cf (skip_equal: as for
 * scan_iter_open), then frees s. 0, or -1 with errstr. */
static int scan_run(scan *s, objlog_cf cf, int skip_equal, scan_page_fn *page, void *out) {
    scan_iter_open(s, cf, skip_equal);
    int r = page(s, out);
    if (view_iter_close(&s->vi, s->errstr, s->es) < 0)
        r = -1;
    else if (r < 0 && !s->errstr[0])
        view_oom(s->errstr, s->es);
    scan_free(s);
    return r;
}

/* Appends the current row, a stored VersionRecord, to the page's versions
 * (*arr, *n). NULL with errstr when corrupt or out of memory. */
static view_version *scan_push_version(scan *s, view_version **arr, size_t *n) {
    size_t vl;
    view_version *o = array_push(arr, n, sizeof(*o));
    const char *val = rocksdb_iter_value(s->vi.it, &vl);
    if (!o || list_entry_fill(o, s->key.data, s->key.len, val, vl, s->page) < 0) {
        if (o)
            (*n)--;
        snprintf(s->errstr, s->es, "corrupt version record or out of memory");
        return NULL;
    }
    return o;
}

/* A truncated page's next markers (versions, uploads): its last common
 * prefix with id "", or its last item's key and id. */
static int scan_next_markers(int last_is_prefix, const view_bytes *prefixes,
                             size_t n_prefixes, const view_bytes *key, const char *id,
                             view_bytes *next_key, char next_id[VIEW_ID_LEN]) {
    if (last_is_prefix) {
        const view_bytes *p = &prefixes[n_prefixes - 1];
        return bytes_set(next_key, p->data, p->len);
    }
    snprintf(next_id, VIEW_ID_LEN, "%s", id);
    return bytes_set(next_key, key->data, key->len);
}

/* ------------------------------------------------------------------- LIST */

void view_list_free(view_list *l) {
    for (size_t i = 0; i < l->n_objects; i++)
        view_version_free(&l->objects[i]);
    for (size_t i = 0; i < l->n_prefixes; i++)
        free(l->prefixes[i].data);
    free(l->objects);
    free(l->prefixes);
    free(l->next.data);
    page_arena_free(l->arena);
    memset(l, 0, sizeof(*l));
}

/* Sets the start after `last` (a key, or everything under a prefix). */
static int list_start_after(scan *s, view_pos_kind kind, const uint8_t *last,
                            size_t n, int *skip_equal) {
    int rc;
    if (kind == VIEW_POS_PREFIX)
        rc = view_past_prefix(&s->tmp, s->bucket, last, n);
    else
        rc = (keybuf_reset(&s->tmp),
              keycodec_route_key(&s->tmp, s->bucket, strlen(s->bucket), last, n));
    if (rc < 0)
        return -1;
    if (keybuf_cmp(&s->tmp, &s->seek) > 0) {
        *skip_equal = kind == VIEW_POS_KEY;
        return keybuf_set(&s->seek, &s->tmp);
    }
    return 0;
}

static int list_scan(scan *s, void *page) {
    view_list *out = page;
    for (; rocksdb_iter_valid(s->vi.it) && s->max > 0;) {
        size_t kl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s->vi.it, &kl);
        if (!scan_row_key(s, k, kl)) {
            rocksdb_iter_next(s->vi.it);
            continue;
        }
        size_t before = out->n_prefixes;
        int r = scan_rollup(s, &out->prefixes, &out->n_prefixes);
        if (r < 0)
            return -1;
        if (r == 2)
            break;
        if (r == 1) {
            if (out->n_prefixes > before)
                out->next_kind = VIEW_POS_PREFIX;
            continue;
        }
        if (s->count == s->max) {
            s->truncated = 1;
            break;
        }
        view_version *o = scan_push_version(s, &out->objects, &out->n_objects);
        if (!o)
            return -1;
        o->is_latest = 1;
        s->count++;
        out->next_kind = VIEW_POS_KEY;
        rocksdb_iter_next(s->vi.it);
    }
    out->is_truncated = s->truncated;
    if (!s->truncated) {
        out->next_kind = VIEW_POS_NONE;
        return 0;
    }
    const view_bytes *last = out->next_kind == VIEW_POS_PREFIX
                                 ? &out->prefixes[out->n_prefixes - 1]
                                 : &out->objects[out->n_objects - 1].key;
    return bytes_set(&out->next, last->data, last->len);
}

view_rc view_list_objects(view *v, const char *bucket, const view_list_req *req,
                          view_list *out, char *errstr, size_t es) {
    scan s;
    view_rc rc = scan_open(&s, v, bucket, req->prefix, req->prefix_len, req->delimiter,
                           req->delimiter_len, req->max_keys, out, sizeof(*out),
                           errstr, es);
    out->next_kind = VIEW_POS_NONE;
    if (rc != VIEW_OK)
        return rc;
    if (!(s.page = out->arena = page_arena_new())) {
        scan_free(&s);
        return view_oom(errstr, es);
    }
    int skip_equal = 0;
    if ((req->start_after_len &&
         list_start_after(&s, VIEW_POS_KEY, req->start_after, req->start_after_len,
                          &skip_equal) < 0) ||
        (req->after_kind != VIEW_POS_NONE &&
         list_start_after(&s, req->after_kind, req->after, req->after_len,
                          &skip_equal) < 0)) {
        scan_free(&s);
        return view_oom(errstr, es);
    }
    if (scan_run(&s, OBJLOG_CF_OBJECTS, skip_equal, list_scan, out) < 0) {
        view_list_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

/* ------------------------------------------------------ ListObjectVersions */

void view_versions_free(view_versions *l) {
    for (size_t i = 0; i < l->n_versions; i++)
        view_version_free(&l->versions[i]);
    for (size_t i = 0; i < l->n_prefixes; i++)
        free(l->prefixes[i].data);
    free(l->versions);
    free(l->prefixes);
    free(l->next_key_marker.data);
    page_arena_free(l->arena);
    memset(l, 0, sizeof(*l));
}

/* Start position from the markers. 1 ok, 0 invalid argument, -1 error. */
static int versions_start(scan *s, const view_versions_req *req, int *skip_equal) {
    const char *vid = req->version_id_marker && *req->version_id_marker
                          ? req->version_id_marker : NULL;
    int has_km = req->key_marker && req->key_marker_len;
    if (!has_km)
        return vid ? 0 : 1;
    s->marker = req->key_marker;
    s->marker_len = req->key_marker_len;
    keybuf_reset(&s->tmp);
    if (keycodec_route_key(&s->tmp, s->bucket, strlen(s->bucket), req->key_marker,
                           req->key_marker_len) < 0)
        return -1;
    if (!vid) {
        /* after every row of the key: its header and all its versions */
        if (keycodec_prefix_end(&s->tmp) < 0)
            return -1;
        return scan_start_at(s, &s->tmp) < 0 ? -1 : 1;
    }
    uint64_t seq;
    if (strcmp(vid, "null") == 0) {
        int rc = view_null_seq(s->v, &s->tmp, &seq, s->errstr, s->es);
        if (rc < 0)
            return -1;
        /* The null version went (deleted while a client paged): its place
         * among the key's versions is gone with it, so the page resumes at
         * the key's first version. A version may be listed twice; none
         * that stayed is skipped (a cleanup that pages while deleting
         * would otherwise leave versions behind). */
        if (rc == 0)
            return scan_start_at(s, &s->tmp) < 0 ? -1 : 1;
    } else if (keycodec_parse_version_id(vid, &seq) < 0) {
        return 0;
    }
    if (keycodec_append_be64(&s->tmp, UINT64_MAX - seq) < 0)
        return -1;
    if (keybuf_cmp(&s->tmp, &s->seek) > 0) {
        *skip_equal = 1;
        return keybuf_set(&s->seek, &s->tmp) < 0 ? -1 : 1;
    }
    return 1;
}

/* 1 if the version row (route key rk of length rkn, seq) is its key's
 * newest: used only for the first row after seeking into a key. */
static int versions_is_newest(scan *s, const uint8_t *row, size_t rkn,
                              uint64_t seq) {
    keybuf rk;
    keybuf_init(&rk);
    view_version newest = {0};
    int rc = keybuf_append(&rk, row, rkn) < 0
                 ? -1
                 : view_newest_row(s->v, &rk, s->key.data, s->key.len, &newest,
                                   s->errstr, s->es);
    int latest = rc == 1 && newest.seq == seq;
    view_version_free(&newest);
    keybuf_free(&rk);
    return rc < 0 ? -1 : latest;
}

/* 1 if the row (route key length rkn) belongs to another key than the
 * route key prev holds (then it is its key's first row: a key's rows are
 * contiguous, newest first). */
static int versions_new_key(const keybuf *prev, const uint8_t *row, size_t rkn) {
    return prev->len != rkn || memcmp(prev->data, row, rkn) != 0;
}

static int versions_scan(scan *s, void *page) {
    view_versions *out = page;
    int prev_header = 0, fresh = 1, last_is_prefix = 0, rc = 0;
    keybuf prev; /* the route key of the last row taken */
    keybuf_init(&prev);
    while (rc == 0 && rocksdb_iter_valid(s->vi.it) && s->max > 0) {
        size_t kl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s->vi.it, &kl);
        size_t rkn = scan_row_key(s, k, kl);
        if (!rkn || (rkn != kl && rkn + 8 != kl)) {
            rocksdb_iter_next(s->vi.it);
            continue;
        }
        size_t before = out->n_prefixes;
        int r = scan_rollup(s, &out->prefixes, &out->n_prefixes);
        if (r < 0) {
            rc = -1;
            break;
        }
        if (r == 2)
            break;
        if (r == 1) {
            if (out->n_prefixes > before)
                last_is_prefix = 1;
            prev_header = 0;
            fresh = 1;
            continue;
        }
        if (objlog_versions_row_is_header(k, kl)) { /* its versions follow */
            prev_header = 1;
            fresh = 0;
            keybuf_reset(&prev);
            if (keybuf_append(&prev, k, rkn) < 0)
                rc = view_oom(s->errstr, s->es);
            rocksdb_iter_next(s->vi.it);
            continue;
        }
        if (s->count == s->max) {
            s->truncated = 1;
            break;
        }
        uint64_t seq = keycodec_row_seq(k, kl);
        /* Newest: after its header; the first row of a key without one
         * (an Unversioned bucket's); or, first after a seek, asked. */
        int latest = prev_header || (!fresh && versions_new_key(&prev, k, rkn));
        if (!latest && fresh && (latest = versions_is_newest(s, k, rkn, seq)) < 0) {
            rc = -1;
            break;
        }
        keybuf_reset(&prev);
        if (keybuf_append(&prev, k, rkn) < 0) {
            rc = view_oom(s->errstr, s->es);
            break;
        }
        view_version *o = scan_push_version(s, &out->versions, &out->n_versions);
        if (!o) {
            rc = -1;
            break;
        }
        o->is_latest = latest;
        s->count++;
        last_is_prefix = 0;
        prev_header = fresh = 0;
        rocksdb_iter_next(s->vi.it);
    }
    keybuf_free(&prev);
    if (rc < 0)
        return -1;
    out->is_truncated = s->truncated;
    if (!s->truncated)
        return 0;
    const view_version *last = last_is_prefix ? NULL : &out->versions[out->n_versions - 1];
    return scan_next_markers(last_is_prefix, out->prefixes, out->n_prefixes,
                             last ? &last->key : NULL, last ? last->version_id : "",
                             &out->next_key_marker, out->next_version_id_marker);
}

view_rc view_list_versions(view *v, const char *bucket,
                           const view_versions_req *req, view_versions *out,
                           char *errstr, size_t es) {
    scan s;
    view_rc rc = scan_open(&s, v, bucket, req->prefix, req->prefix_len, req->delimiter,
                           req->delimiter_len, req->max_keys, out, sizeof(*out),
                           errstr, es);
    if (rc != VIEW_OK)
        return rc;
    if (!(s.page = out->arena = page_arena_new())) {
        scan_free(&s);
        return view_oom(errstr, es);
    }
    int skip_equal = 0;
    int st = versions_start(&s, req, &skip_equal);
    if (st <= 0) {
        scan_free(&s);
        if (st == 0)
            return VIEW_INVALID_ARGUMENT;
        return errstr[0] ? VIEW_ERROR : view_oom(errstr, es);
    }
    if (scan_run(&s, OBJLOG_CF_VERSIONS, skip_equal, versions_scan, out) < 0) {
        view_versions_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

/* ---------------------------------------------------------------- uploads */

static void view_upload_free(view_upload *u) {
    free(u->key.data);
    if (u->record)
        objlog__upload_record__free_unpacked(u->record, NULL);
    memset(u, 0, sizeof(*u));
}

void view_uploads_free(view_uploads *l) {
    for (size_t i = 0; i < l->n_uploads; i++)
        view_upload_free(&l->uploads[i]);
    for (size_t i = 0; i < l->n_prefixes; i++)
        free(l->prefixes[i].data);
    free(l->uploads);
    free(l->prefixes);
    free(l->next_key_marker.data);
    memset(l, 0, sizeof(*l));
}

static int view_upload_fill(view_upload *u, const uint8_t *key, size_t kn,
                            const char *val, size_t vlen) {
    Objlog__UploadRecord *r =
        objlog__upload_record__unpack(NULL, vlen, (const uint8_t *)val);
    if (!r)
        return -1;
    if (bytes_set(&u->key, key, kn) < 0) {
        objlog__upload_record__free_unpacked(r, NULL);
        return -1;
    }
    u->record = r;
    snprintf(u->upload_id, sizeof(u->upload_id), "%s", r->upload_id ? r->upload_id : "");
    u->initiated_ms = r->initiated_ms;
    return 0;
}

/* Start position from the markers; -1 when out of memory. */
static int uploads_start(scan *s, const view_uploads_req *req) {
    if (!req->key_marker || !req->key_marker_len)
        return 0; /* upload_id_marker alone is ignored, as in S3 */
    s->marker = req->key_marker;
    s->marker_len = req->key_marker_len;
    keybuf_reset(&s->tmp);
    if (keycodec_route_key(&s->tmp, s->bucket, strlen(s->bucket), req->key_marker,
                           req->key_marker_len) < 0)
        return -1;
    const char *uid = req->upload_id_marker;
    if (uid && *uid &&
        keycodec_append_enc(&s->tmp, (const uint8_t *)uid, strlen(uid)) < 0)
        return -1;
    /* past the key (or that upload of it) and all its part rows */
    if (keycodec_prefix_end(&s->tmp) < 0)
        return -1;
    return scan_start_at(s, &s->tmp);
}

static int uploads_scan(scan *s, void *page) {
    view_uploads *out = page;
    int last_is_prefix = 0, rc = 0;
    while (rocksdb_iter_valid(s->vi.it) && s->max > 0) {
        size_t kl, vl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s->vi.it, &kl);
        if (objlog_uploads_row_kind(k, kl, NULL, NULL, NULL, NULL) !=
                OBJLOG_UPLOADS_ROW_UPLOAD ||
            !scan_row_key(s, k, kl)) {
            rocksdb_iter_next(s->vi.it); /* a part row (or not ours) */
            continue;
        }
        size_t before = out->n_prefixes;
        int r = scan_rollup(s, &out->prefixes, &out->n_prefixes);
        if (r < 0 || r == 2) {
            rc = r < 0 ? -1 : 0;
            break;
        }
        if (r == 1) {
            if (out->n_prefixes > before)
                last_is_prefix = 1;
            continue;
        }
        if (s->count == s->max) {
            s->truncated = 1;
            break;
        }
        view_upload *u = array_push(&out->uploads, &out->n_uploads, sizeof(*u));
        const char *val = rocksdb_iter_value(s->vi.it, &vl);
        if (!u || view_upload_fill(u, s->key.data, s->key.len, val, vl) < 0) {
            if (u)
                out->n_uploads--;
            snprintf(s->errstr, s->es, "corrupt upload record or out of memory");
            rc = -1;
            break;
        }
        s->count++;
        last_is_prefix = 0;
        /* past this upload's part rows with one seek */
        keybuf_reset(&s->tmp);
        if (keybuf_append(&s->tmp, k, kl) < 0 || keycodec_prefix_end(&s->tmp) < 0) {
            rc = -1;
            break;
        }
        view_iter_seek(&s->vi, &s->tmp);
    }
    out->is_truncated = s->truncated;
    if (rc < 0 || !s->truncated)
        return rc;
    const view_upload *last = last_is_prefix ? NULL : &out->uploads[out->n_uploads - 1];
    return scan_next_markers(last_is_prefix, out->prefixes, out->n_prefixes,
                             last ? &last->key : NULL, last ? last->upload_id : "",
                             &out->next_key_marker, out->next_upload_id_marker);
}

view_rc view_list_uploads(view *v, const char *bucket,
                          const view_uploads_req *req, view_uploads *out,
                          char *errstr, size_t es) {
    scan s;
    view_rc rc = scan_open(&s, v, bucket, req->prefix, req->prefix_len, req->delimiter,
                           req->delimiter_len, req->max_uploads, out, sizeof(*out),
                           errstr, es);
    if (rc != VIEW_OK)
        return rc;
    if (uploads_start(&s, req) < 0) {
        scan_free(&s);
        return view_oom(errstr, es);
    }
    if (scan_run(&s, OBJLOG_CF_UPLOADS, 0, uploads_scan, out) < 0) {
        view_uploads_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

/* ------------------------------------------------------------------ parts */

void view_parts_free(view_parts *l) {
    for (size_t i = 0; i < l->n_parts; i++)
        if (l->parts[i].record)
            objlog__part_record__free_unpacked(l->parts[i].record, NULL);
    free(l->parts);
    view_upload_free(&l->upload);
    memset(l, 0, sizeof(*l));
}

/* Parts of the upload whose row is `row`, numbers above marker. */
static int parts_scan(view *v, const char *bucket, const uint8_t *key,
                      size_t kn, const char *upload_id, const keybuf *row,
                      uint32_t marker, int max, view_parts *out, char *errstr,
                      size_t es) {
    keybuf hi, seek;
    keybuf_init(&hi);
    keybuf_init(&seek);
    uint32_t first = marker == UINT32_MAX ? marker : marker + 1;
    int rc = keybuf_append(&hi, row->data, row->len) < 0 || keycodec_prefix_end(&hi) < 0 ||
                     objlog_uploads_part_key(&seek, bucket, strlen(bucket), key, kn,
                                             upload_id, first) < 0
                 ? view_oom(errstr, es) : 0;
    view_iter vi;
    view_iter_open(v, OBJLOG_CF_UPLOADS, &hi, &vi);
    view_iter_seek(&vi, &seek);
    for (; rc == 0 && max > 0 && rocksdb_iter_valid(vi.it); rocksdb_iter_next(vi.it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(vi.it, &kl);
        if (objlog_uploads_row_kind(k, kl, NULL, NULL, NULL, NULL) !=
            OBJLOG_UPLOADS_ROW_PART)
            continue;
        if (out->n_parts == (size_t)max) {
            out->is_truncated = 1;
            break;
        }
        const char *val = rocksdb_iter_value(vi.it, &vl);
        Objlog__PartRecord *r =
            objlog__part_record__unpack(NULL, vl, (const uint8_t *)val);
        view_part *p = r ? array_push(&out->parts, &out->n_parts, sizeof(*p)) : NULL;
        if (!p) {
            if (r)
                objlog__part_record__free_unpacked(r, NULL);
            snprintf(errstr, es, "corrupt part record or out of memory");
            rc = -1;
            break;
        }
        p->record = r;
        p->part_number = r->part_number;
        p->size = r->size;
        p->etag = r->etag ? r->etag : "";
        p->last_modified_ms = r->last_modified_ms;
        out->next_part_number_marker = r->part_number;
    }
    if (view_iter_close(&vi, errstr, es) < 0)
        rc = -1;
    keybuf_free(&hi);
    keybuf_free(&seek);
    return rc;
}

view_rc view_list_parts(view *v, const char *bucket, const uint8_t *key,
                        size_t key_len, const char *upload_id,
                        uint32_t part_number_marker, int max_parts,
                        view_parts *out, char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    memset(out, 0, sizeof(*out));
    if (max_parts < 0 || max_parts > VIEW_MAX_KEYS)
        return VIEW_INVALID_ARGUMENT;
    view_rc rc = view_bucket_check(v, bucket, errstr, es);
    if (rc != VIEW_OK)
        return rc;
    keybuf row;
    keybuf_init(&row);
    char *val = NULL;
    size_t vlen = 0;
    int g = objlog_uploads_upload_key(&row, bucket, strlen(bucket), key, key_len,
                                      upload_id) < 0
                ? view_oom(errstr, es)
                : view_get(v, OBJLOG_CF_UPLOADS, &row, &val, &vlen, errstr, es);
    if (g == 1 && view_upload_fill(&out->upload, key, key_len, val, vlen) < 0) {
        snprintf(errstr, es, "corrupt upload record");
        g = -1;
    }
    rocksdb_free(val);
    if (g == 1 && parts_scan(v, bucket, key, key_len, upload_id, &row,
                             part_number_marker, max_parts, out, errstr, es) < 0)
        g = -1;
    keybuf_free(&row);
    if (g == 1)
        return VIEW_OK;
    view_parts_free(out);
    return g == 0 ? VIEW_NO_SUCH_UPLOAD : VIEW_ERROR;
}

/* ----------------------------------------------------------- prefix usage */

/* meta.size of a stored VersionRecord (absent = 0); -1 if corrupt. */
static int view_record_size(const uint8_t *val, size_t n, uint64_t *size) {
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, n, val);
    if (!r)
        return -1;
    *size = r->meta ? r->meta->size : 0;
    objlog__version_record__free_unpacked(r, NULL);
    return 0;
}

void view_usage_page_free(view_usage_page *page) {
    for (size_t i = 0; i < page->n_groups; i++)
        free(page->groups[i].prefix.data);
    free(page->groups);
    free(page->after.data);
    memset(page, 0, sizeof(*page));
}

void view_usage_page_resume(const view_usage_page *page, view_usage_resume *r) {
    memset(r, 0, sizeof(*r));
    r->after = page->after.data;
    r->after_len = page->after.len;
    r->open_len = page->open_len;
    r->open_objects = page->open_objects;
    r->open_bytes = page->open_bytes;
    r->direct_objects = page->direct_objects;
    r->direct_bytes = page->direct_bytes;
    r->total_objects = page->total_objects;
    r->total_bytes = page->total_bytes;
}

/* The scan of one page: the listing skeleton plus the open group. */
typedef struct usage_scan {
    scan s;
    view_usage_page *out;
    int max_rows, max_prefixes;
    keybuf open;                 /* the open group's prefix; len 0 = none */
    keybuf last;                 /* the last key read */
} usage_scan;

/* A resume state this prefix/delimiter could have produced: the last key
 * is under the prefix, and the open group is that key's own rollup. */
static int usage_resume_valid(const view_usage_req *req, const keybuf *after) {
    const view_usage_resume *r = req->resume;
    if (r->after_len < req->prefix_len ||
        (req->prefix_len && memcmp(r->after, req->prefix, req->prefix_len) != 0))
        return 0;
    if (!r->open_len)
        return r->open_objects == 0 && r->open_bytes == 0;
    return view_rollup(after, req->prefix_len, req->delimiter,
                       req->delimiter_len) == r->open_len;
}

/* Moves the open group into the page's groups. -1 when out of memory. */
static int usage_close_group(usage_scan *u) {
    view_usage_page *o = u->out;
    view_usage_group *g = array_push(&o->groups, &o->n_groups, sizeof(*g));
    if (!g || bytes_set(&g->prefix, u->open.data, u->open.len) < 0) {
        if (g)
            o->n_groups--;
        return -1;
    }
    g->objects = o->open_objects;
    g->bytes = o->open_bytes;
    o->open_objects = o->open_bytes = 0;
    keybuf_reset(&u->open);
    return 0;
}

/* Counts the current row (key in u->s.key, rolling into cpl bytes). */
static int usage_count_row(usage_scan *u, size_t cpl) {
    view_usage_page *o = u->out;
    size_t vl;
    const char *val = rocksdb_iter_value(u->s.vi.it, &vl);
    uint64_t size;
    if (view_record_size((const uint8_t *)val, vl, &size) < 0) {
        snprintf(u->s.errstr, u->s.es, "corrupt version record in objects");
        return -1;
    }
    if (cpl && !u->open.len && keybuf_append(&u->open, u->s.key.data, cpl) < 0)
        return -1;
    if (cpl) {
        o->open_objects++;
        o->open_bytes += size;
    } else {
        o->direct_objects++;
        o->direct_bytes += size;
    }
    o->total_objects++;
    o->total_bytes += size;
    o->rows_scanned++;
    return keybuf_set(&u->last, &u->s.key);
}

/* The page loop. Each row first closes the open group if it does not
 * belong to it (the scan is past it, so it is complete), then is counted
 * unless a limit is reached: both limits stop with the row unread, so
 * is_truncated means one more row really exists. */
static int usage_scan_rows(usage_scan *u) {
    view_usage_page *o = u->out;
    while (rocksdb_iter_valid(u->s.vi.it)) {
        size_t kl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(u->s.vi.it, &kl);
        if (!scan_row_key(&u->s, k, kl)) {
            rocksdb_iter_next(u->s.vi.it); /* not a route key: not ours */
            continue;
        }
        size_t cpl = view_rollup(&u->s.key, u->s.prefix_len, u->s.delim,
                                 u->s.delim_len);
        int same = u->open.len && cpl == u->open.len &&
                   memcmp(u->s.key.data, u->open.data, cpl) == 0;
        if (u->open.len && !same) {
            if (usage_close_group(u) < 0)
                return -1;
            if (o->n_groups == (size_t)u->max_prefixes) {
                o->is_truncated = 1;
                return 0;
            }
        }
        if (o->rows_scanned == (uint64_t)u->max_rows) {
            o->is_truncated = 1;
            return 0;
        }
        if (usage_count_row(u, cpl) < 0)
            return -1;
        rocksdb_iter_next(u->s.vi.it);
    }
    /* end of the range: the open group is complete too */
    return u->open.len ? usage_close_group(u) : 0;
}

/* Seeds the counters and the position from req->resume. */
static int usage_start(usage_scan *u, const view_usage_req *req) {
    const view_usage_resume *r = req->resume;
    view_usage_page *o = u->out;
    o->direct_objects = r->direct_objects;
    o->direct_bytes = r->direct_bytes;
    o->total_objects = r->total_objects;
    o->total_bytes = r->total_bytes;
    o->open_objects = r->open_objects;
    o->open_bytes = r->open_bytes;
    if (keybuf_append(&u->open, r->after, r->open_len) < 0)
        return -1;
    keybuf_reset(&u->s.tmp);
    if (keycodec_route_key(&u->s.tmp, u->s.bucket, strlen(u->s.bucket), r->after,
                           r->after_len) < 0)
        return -1;
    return scan_start_at(&u->s, &u->s.tmp);
}

static void usage_scan_free(usage_scan *u) {
    scan_free(&u->s);
    keybuf_free(&u->open);
    keybuf_free(&u->last);
}

/* Runs the page; 0, or -1 (errstr filled unless out of memory). */
static int usage_run(usage_scan *u, const view_usage_req *req) {
    int r = req->resume ? usage_start(u, req) : 0;
    if (r < 0)
        return -1;
    /* resuming: the last key read is exclusive */
    scan_iter_open(&u->s, OBJLOG_CF_OBJECTS, req->resume != NULL);
    r = usage_scan_rows(u);
    if (view_iter_close(&u->s.vi, u->s.errstr, u->s.es) < 0)
        return -1;
    if (r < 0 || !u->out->is_truncated)
        return r;
    /* a page that read nothing (it only closed the open group) resumes
     * where the previous one did */
    const keybuf *last = u->out->rows_scanned ? &u->last : NULL;
    const uint8_t *a = last ? last->data : req->resume->after;
    size_t an = last ? last->len : req->resume->after_len;
    u->out->open_len = u->open.len;
    return bytes_set(&u->out->after, a, an);
}

view_rc view_prefix_usage(view *v, const char *bucket, const view_usage_req *req,
                          view_usage_page *out, char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    memset(out, 0, sizeof(*out));
    if (req->max_rows < 1 || req->max_rows > VIEW_USAGE_MAX_ROWS ||
        req->max_prefixes < 1 || req->max_prefixes > VIEW_USAGE_MAX_PREFIXES)
        return VIEW_INVALID_ARGUMENT;
    view_rc rc = view_bucket_check(v, bucket, errstr, es);
    if (rc != VIEW_OK)
        return rc;
    usage_scan u = {.out = out, .max_rows = req->max_rows,
                    .max_prefixes = req->max_prefixes};
    keybuf_init(&u.open);
    keybuf_init(&u.last);
    if (scan_init(&u.s, v, bucket, req->prefix, req->prefix_len, req->delimiter,
                  req->delimiter_len, 0, errstr, es) < 0) {
        usage_scan_free(&u);
        return view_oom(errstr, es);
    }
    if (req->resume) {
        keybuf after;
        keybuf_init(&after);
        int ok = keybuf_append(&after, req->resume->after, req->resume->after_len) == 0
                     ? usage_resume_valid(req, &after) : -1;
        keybuf_free(&after);
        if (ok <= 0) {
            usage_scan_free(&u);
            return ok < 0 ? view_oom(errstr, es) : VIEW_INVALID_ARGUMENT;
        }
    }
    int r = usage_run(&u, req);
    usage_scan_free(&u);
    if (r < 0) {
        if (!errstr[0])
            view_oom(errstr, es);
        view_usage_page_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}
