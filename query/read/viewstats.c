/* viewstats.c: the usage counters of view.h (the `stats` column family,
 * materializer.h): one bucket, a tenant, everything, the top buckets. Apart
 * from the listings (viewlist.c) because it reads the counter rows the
 * state machine keeps, not a prefix's keys.
 *
 * Invariant: a sum covers exactly the partitions the caller names
 * (view_partset), read from one snapshot: the rows are kept per
 * partition, so the sums of disjoint sets add up to their union's, and no
 * sum mixes two states of the store. */
#define _GNU_SOURCE
#include "viewint.h"

/* ------------------------------------------------------------------ stats */

static void usage_from(view_usage *out, const Objlog__UsageStats *u) {
    out->objects = u->objects;
    out->bytes = u->bytes;
    out->versions = u->versions;
    out->version_bytes = u->version_bytes;
    out->noncurrent_versions = u->noncurrent_versions;
    out->noncurrent_bytes = u->noncurrent_bytes;
    out->delete_markers = u->delete_markers;
    out->uploads = u->uploads;
    out->upload_part_bytes = u->upload_part_bytes;
    out->buckets = u->buckets;
}

static int usage_decode(const char *val, size_t n, view_usage *out,
                        char *errstr, size_t es) {
    Objlog__UsageStats *u = objlog__usage_stats__unpack(NULL, n, (const uint8_t *)val);
    if (!u) {
        snprintf(errstr, es, "stats row: corrupt record");
        return -1;
    }
    usage_from(out, u);
    objlog__usage_stats__free_unpacked(u, NULL);
    return 0;
}

/* 1 found (*out filled), 0 absent (*out zero), -1 error. */
static int usage_get(view *v, const keybuf *k, view_usage *out, char *errstr,
                     size_t es) {
    char *val = NULL;
    size_t vlen = 0;
    memset(out, 0, sizeof(*out));
    int rc = view_get(v, OBJLOG_CF_STATS, k, &val, &vlen, errstr, es);
    if (rc <= 0)
        return rc;
    rc = usage_decode(val, vlen, out, errstr, es);
    rocksdb_free(val);
    return rc < 0 ? -1 : 1;
}

static void usage_add(view_usage *to, const view_usage *u);

/* The bucket's home row (k) and the rows of its stakes on other
 * partitions (k be32(p), right after it), summed. 1 the home row is
 * there, 0 not, -1 error. */
static int bucket_usage_sum(view *v, const keybuf *k, view_usage *out, char *errstr,
                            size_t es) {
    int rc = usage_get(v, k, out, errstr, es);
    keybuf hi;
    keybuf_init(&hi);
    if (rc <= 0 || keybuf_append(&hi, k->data, k->len) < 0 ||
        keybuf_append(&hi, "\xff\xff\xff\xff\xff", 5) < 0) {
        keybuf_free(&hi);
        if (rc > 0)
            snprintf(errstr, es, "out of memory");
        return rc > 0 ? -1 : rc;
    }
    view_iter vi;
    view_iter_open(v, OBJLOG_CF_STATS, &hi, &vi);
    int err = 0;
    for (view_iter_seek(&vi, k); !err && rocksdb_iter_valid(vi.it); rocksdb_iter_next(vi.it)) {
        size_t kn, vn;
        rocksdb_iter_key(vi.it, &kn);
        if (kn != k->len + 4)
            continue; /* the home row itself */
        view_usage u;
        const char *val = rocksdb_iter_value(vi.it, &vn);
        err = usage_decode(val, vn, &u, errstr, es) < 0;
        if (!err)
            usage_add(out, &u);
    }
    if (view_iter_close(&vi, err ? NULL : errstr, err ? 0 : es) < 0)
        err = 1;
    keybuf_free(&hi);
    return err ? -1 : 1;
}

view_rc view_bucket_usage(view *v, const char *bucket, view_usage *out,
                          char *errstr, size_t es) {
    keybuf k;
    keybuf_init(&k);
    int rc = objlog_stats_bucket_key(&k, bucket, strlen(bucket));
    if (rc < 0)
        snprintf(errstr, es, "out of memory");
    else
        rc = bucket_usage_sum(v, &k, out, errstr, es);
    keybuf_free(&k);
    if (rc < 0)
        return VIEW_ERROR;
    return rc == 1 ? VIEW_OK : VIEW_NO_SUCH_BUCKET;
}

static void usage_add(view_usage *to, const view_usage *u) {
    to->objects += u->objects;
    to->bytes += u->bytes;
    to->versions += u->versions;
    to->version_bytes += u->version_bytes;
    to->noncurrent_versions += u->noncurrent_versions;
    to->noncurrent_bytes += u->noncurrent_bytes;
    to->delete_markers += u->delete_markers;
    to->uploads += u->uploads;
    to->upload_part_bytes += u->upload_part_bytes;
    to->buckets += u->buckets;
}

/* 1 if the stats row k (a 't' or 'g' row: its partition is in its key)
 * belongs to a partition of ps. */
static int partset_has_row(const view_partset *ps, const uint8_t *k, size_t kn) {
    int p = objlog_stats_row_partition(ps->rm, k, kn);
    return p >= 0 && p < ps->n && ps->in[p];
}

/* The stats rows in [lo, hi): one pass, the sum of those of ps into *out.
 * tenants: if non-NULL, counts (and names, when *names) the distinct
 * tenants of the 't' rows summed. 0 or -1 (errstr). */
typedef struct tenant_tally {
    uint64_t count;
    keybuf last;                 /* 't' enc(name) of the last one counted */
    char **names;                /* NULL: not wanted */
    size_t max;
    int too_many;
} tenant_tally;

static int tally_tenant(tenant_tally *t, const uint8_t *k, size_t kn) {
    size_t plen = kn - 4;        /* the row minus its be32(p) */
    if (t->last.len == plen && memcmp(t->last.data, k, plen) == 0)
        return 0;
    keybuf_reset(&t->last);
    if (keybuf_append(&t->last, k, plen) < 0)
        return -1;
    if (t->names && t->count >= t->max) {
        t->too_many = 1;
        return 0;
    }
    t->count++;
    if (!t->names)
        return 0;
    keybuf name;
    size_t used;
    keybuf_init(&name);
    int rc = keycodec_decode_enc(k + 1, plen - 1, &name, &used) < 0 ||
                     keybuf_append(&name, "", 1) < 0 ? -1 : 0;
    if (rc == 0 && !(t->names[t->count - 1] = strdup((const char *)name.data)))
        rc = -1;
    keybuf_free(&name);
    return rc;
}

static int usage_sum_range(view *v, const view_partset *ps, const keybuf *lo,
                           const keybuf *hi, view_usage *out, tenant_tally *tenants,
                           char *errstr, size_t es) {
    view_iter vi;
    int rc = 0;
    view_iter_open(v, OBJLOG_CF_STATS, hi, &vi);
    for (view_iter_seek(&vi, lo); rc == 0 && rocksdb_iter_valid(vi.it);
         rocksdb_iter_next(vi.it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(vi.it, &kn);
        if (!partset_has_row(ps, k, kn))
            continue;
        view_usage u;
        const char *val = rocksdb_iter_value(vi.it, &vn);
        rc = usage_decode(val, vn, &u, errstr, es);
        if (rc == 0)
            usage_add(out, &u);
        if (rc == 0 && tenants && tally_tenant(tenants, k, kn) < 0) {
            snprintf(errstr, es, "out of memory");
            rc = -1;
        }
    }
    if (view_iter_close(&vi, rc < 0 ? NULL : errstr, rc < 0 ? 0 : es) < 0)
        rc = -1;
    return rc;
}

view_rc view_tenant_usage(view *v, const char *tenant, const view_partset *ps,
                          view_usage *out, char *errstr, size_t es) {
    keybuf lo, hi;
    static const uint8_t past[5] = {0xff, 0xff, 0xff, 0xff, 0xff};
    memset(out, 0, sizeof(*out));
    keybuf_init(&lo);
    keybuf_init(&hi);
    /* Its rows are 't' enc(tenant) be32(p): all below prefix ‖ FF x 5. */
    int rc = objlog_stats_tenant_prefix(&lo, tenant) < 0 ||
                     keybuf_append(&hi, lo.data, lo.len) < 0 ||
                     keybuf_append(&hi, past, sizeof(past)) < 0 ? -1 : 0;
    if (rc < 0)
        snprintf(errstr, es, "out of memory");
    else
        rc = usage_sum_range(v, ps, &lo, &hi, out, NULL, errstr, es);
    keybuf_free(&lo);
    keybuf_free(&hi);
    return rc < 0 ? VIEW_ERROR : VIEW_OK;
}

/* Rows of the stats CF whose key starts with the one byte tag: [tag, tag+1). */
static int tag_range(char tag, keybuf *lo, keybuf *hi) {
    uint8_t a = (uint8_t)tag, b = (uint8_t)(tag + 1);
    keybuf_init(lo);
    keybuf_init(hi);
    return keybuf_append(lo, &a, 1) < 0 || keybuf_append(hi, &b, 1) < 0 ? -1 : 0;
}

void view_names_free(char **names, size_t n) {
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

view_rc view_global_usage(view *v, const view_partset *ps, view_usage *out,
                          uint64_t *tenants, char ***names, size_t max_names,
                          char *errstr, size_t es) {
    keybuf glo, ghi, tlo, thi;
    view_usage tsum;
    tenant_tally t = {.max = max_names};
    memset(out, 0, sizeof(*out));
    memset(&tsum, 0, sizeof(tsum));
    *tenants = 0;
    keybuf_init(&t.last);
    if (names) {
        *names = NULL;
        t.names = calloc(max_names ? max_names : 1, sizeof(*t.names));
    }
    int rc = (names && !t.names) || tag_range('g', &glo, &ghi) < 0 ||
                     tag_range('t', &tlo, &thi) < 0 ? -1 : 0;
    if (rc < 0)
        snprintf(errstr, es, "out of memory");
    /* One 'g' row per partition, one 't' row per tenant and partition
     * where it has a bucket: few, next to keys. The tenant rows are summed
     * only for their count (their sums are the 'g' rows'). */
    if (rc == 0)
        rc = usage_sum_range(v, ps, &glo, &ghi, out, NULL, errstr, es);
    if (rc == 0)
        rc = usage_sum_range(v, ps, &tlo, &thi, &tsum, &t, errstr, es);
    keybuf_free(&glo);
    keybuf_free(&ghi);
    keybuf_free(&tlo);
    keybuf_free(&thi);
    keybuf_free(&t.last);
    if (rc < 0 || t.too_many) {
        view_names_free(t.names, (size_t)t.count);
        return rc < 0 ? VIEW_ERROR : VIEW_TOO_MANY;
    }
    *tenants = t.count;
    if (names)
        *names = t.names;
    return VIEW_OK;
}

static uint64_t top_metric(const view_usage *u, view_top_by by) {
    return by == VIEW_TOP_OBJECTS ? u->objects
         : by == VIEW_TOP_VERSIONS ? u->versions : u->bytes;
}

/* 1 if a ranks before b: larger metric first, then bucket name. */
static int top_before(const view_top_entry *a, const view_top_entry *b,
                      view_top_by by) {
    uint64_t x = top_metric(&a->usage, by), y = top_metric(&b->usage, by);
    if (x != y)
        return x > y;
    return strcmp(a->bucket, b->bucket) < 0;
}

/* Inserts e (taking its bucket name) into the sorted top list of at most
 * limit entries; a name that does not make it is freed. */
static void top_insert(view_top *t, size_t limit, view_top_entry *e,
                       view_top_by by) {
    size_t i = t->n;
    while (i > 0 && top_before(e, &t->e[i - 1], by))
        i--;
    if (i >= limit) {
        free(e->bucket);
        return;
    }
    if (t->n == limit) {
        free(t->e[limit - 1].bucket);
        t->n--;
    }
    memmove(&t->e[i + 1], &t->e[i], (t->n - i) * sizeof(*t->e));
    t->e[i] = *e;
    t->n++;
}

/* The bucket name inside a 'b' row key ('b' be16(hash) enc(name)). */
static char *top_row_bucket(const uint8_t *k, size_t kn) {
    keybuf name;
    size_t used;
    keybuf_init(&name);
    if (kn < 3 || keycodec_decode_enc(k + 3, kn - 3, &name, &used) < 0 ||
        keybuf_append(&name, "", 1) < 0) {
        keybuf_free(&name);
        return NULL;
    }
    char *s = strdup((const char *)name.data);
    keybuf_free(&name);
    return s;
}

static int top_tenants(view *v, view_top *t, char *errstr, size_t es) {
    for (size_t i = 0; i < t->n; i++) {
        view_bucket b;
        view_rc rc = view_get_bucket(v, t->e[i].bucket, &b, errstr, es);
        if (rc == VIEW_ERROR)
            return -1;
        t->e[i].tenant = strdup(rc == VIEW_OK && b.record->tenant ? b.record->tenant : "");
        view_bucket_free(&b);
        if (!t->e[i].tenant) {
            snprintf(errstr, es, "out of memory");
            return -1;
        }
    }
    return 0;
}

view_rc view_top_buckets(view *v, const view_partset *ps, view_top_by by, size_t limit,
                         view_top *out, char *errstr, size_t es) {
    keybuf lo, hi;
    memset(out, 0, sizeof(*out));
    if (limit == 0)
        return VIEW_OK;
    out->e = calloc(limit, sizeof(*out->e));
    if (!out->e || tag_range('b', &lo, &hi) < 0) {
        if (out->e)
            keybuf_free(&lo), keybuf_free(&hi);
        snprintf(errstr, es, "out of memory");
        return VIEW_ERROR;
    }
    /* A bucket's rows are adjacent: its home row, then its stakes' rows
     * (a bucket spread over partitions); they add up to one entry. */
    view_iter vi;
    int rc = 0;
    view_top_entry e;
    size_t ebn = 0;
    uint8_t top_last[2 + 2 * 256 + 2]; /* the entry's bucket part */
    memset(&e, 0, sizeof(e));
    view_iter_open(v, OBJLOG_CF_STATS, &hi, &vi);
    for (view_iter_seek(&vi, &lo); rc == 0 && rocksdb_iter_valid(vi.it);
         rocksdb_iter_next(vi.it)) {
        size_t kn, vn, bn;
        int32_t sp;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(vi.it, &kn);
        if (!partset_has_row(ps, k, kn))
            continue;
        const char *val = rocksdb_iter_value(vi.it, &vn);
        view_usage u;
        rc = usage_decode(val, vn, &u, errstr, es);
        if (rc == 0 && objlog_bucket_row_kind(k + 1, kn - 1, &bn, &sp) < 0) {
            snprintf(errstr, es, "stats row: bad bucket key");
            rc = -1;
        }
        if (rc < 0)
            break;
        if (e.bucket && ebn == bn && memcmp(top_last, k + 1, bn) == 0) {
            usage_add(&e.usage, &u);
            continue;
        }
        if (e.bucket)
            top_insert(out, limit, &e, by);
        memset(&e, 0, sizeof(e));
        e.usage = u;
        ebn = bn;
        if (bn > sizeof(top_last) || !(e.bucket = top_row_bucket(k, 1 + bn))) {
            snprintf(errstr, es, "stats row: bad bucket key");
            rc = -1;
        } else {
            memcpy(top_last, k + 1, bn);
        }
    }
    if (rc == 0 && e.bucket)
        top_insert(out, limit, &e, by);
    else
        free(e.bucket);
    if (view_iter_close(&vi, rc < 0 ? NULL : errstr, rc < 0 ? 0 : es) < 0)
        rc = -1;
    keybuf_free(&lo);
    keybuf_free(&hi);
    if (rc == 0)
        rc = top_tenants(v, out, errstr, es);
    if (rc < 0) {
        view_top_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

void view_top_free(view_top *t) {
    for (size_t i = 0; i < t->n; i++) {
        free(t->e[i].bucket);
        free(t->e[i].tenant);
    }
    free(t->e);
    t->e = NULL;
    t->n = 0;
}
