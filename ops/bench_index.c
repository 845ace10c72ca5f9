/* bench_index.c: `objlog bench --indexes`, in-process on a
 * temporary RocksDB store, no Kafka: events go straight through the state
 * machine (materializer/apply.c) as the materializer applies them, so the
 * figures are the store's and apply's, without the network or HTTP (which
 * cost the same for an index query and a LIST page of the same size).
 *
 *  (a) query vs LIST: a bucket of --count objects, 1 in 10 with
 *      user_metadata.cust = "hit" (so --count 10000 gives 1,000 matches),
 *      indexed; then --rounds times: read the 1,000 matches from the index
 *      ('e' rows: seek, iterate, decode each VersionRecord) and LIST 1,000
 *      keys (`objects` rows, the same work), timed; ratio of the medians.
 *  (b) PUT apply cost with 0, 1 and 3 indexes on the bucket: --count PUTs
 *      (each with the three indexed attributes) applied in batches of
 *      1,000, each batch written; ratio of the times to the 0-index run.
 *  (c) the query end to end over HTTP against LIST, on the bench's own
 *      objlogd started only then (or --url's): bench_index_http.c.
 * Every store it makes is removed before it returns. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apply.h"
#include "bench_int.h"
#include "cli.h"
#include "keycodec.h"
#include "materializer.h"

#define IXB_BATCH 1000
#define IXB_MATCHES 1000
#define IXB_EPOCH 1

typedef struct ixb_store {
    char dir[64];
    objlog_store *s;
    rangemap *rm;
    apply_batch *b;
    int64_t off;
    int32_t part;
} ixb_store;

static void ixb_close(ixb_store *x) {
    if (x->b)
        apply_batch_destroy(x->b);
    if (x->s)
        objlog_store_close(x->s);
    if (x->rm)
        rangemap_destroy(x->rm);
    if (x->dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "objlog: bench: could not remove %s\n", x->dir);
    }
    memset(x, 0, sizeof(*x));
}

static int ixb_open(ixb_store *x) {
    char err[256];
    memset(x, 0, sizeof(*x));
    snprintf(x->dir, sizeof(x->dir), "/tmp/objlog-bench-ix-XXXXXX");
    if (!mkdtemp(x->dir)) {
        x->dir[0] = '\0';
        return -1;
    }
    x->s = objlog_store_open(x->dir, err, sizeof(err));
    x->rm = rangemap_new_default(1, IXB_EPOCH);
    x->b = x->s && x->rm ? apply_batch_new(x->s, x->rm) : NULL;
    if (!x->b)
        fprintf(stderr, "objlog: bench: store %s: %s\n", x->dir, x->s ? "" : err);
    return x->b ? 0 : -1;
}

static int ixb_write(ixb_store *x) {
    char err[256];
    int rc = objlog_store_write_view(x->s, apply_batch_wb(x->b), err, sizeof(err));
    if (rc == 0)
        apply_batch_written(x->b);
    apply_batch_clear(x->b);
    if (rc < 0)
        fprintf(stderr, "objlog: bench: write: %s\n", err);
    return rc;
}

static int ixb_apply(ixb_store *x, Objlog__Event *ev) {
    uint8_t rid[16] = {0};
    int64_t off = x->off++;
    memcpy(rid, &off, sizeof(off));
    ev->request_id.data = rid;
    ev->request_id.len = sizeof(rid);
    ev->range_epoch = IXB_EPOCH;
    char err[256];
    Objlog__OutcomeCode code;
    if (apply_event(x->b, 0, off, 1700000000000LL + off, ev, &code, err, sizeof(err)) < 0 ||
        code != OBJLOG__OUTCOME_CODE__OUTCOME_OK) {
        fprintf(stderr, "objlog: bench: apply: %s (outcome %d)\n", err, (int)code);
        return -1;
    }
    return (x->off % IXB_BATCH) == 0 ? ixb_write(x) : 0;
}

static int ixb_bucket(ixb_store *x) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    cb.tenant = "t";
    ev.bucket = "bench";
    ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
    ev.create_bucket = &cb;
    return ixb_apply(x, &ev);
}

static int ixb_index(ixb_store *x, const char *name, const char *field) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__PutIndex pi = OBJLOG__PUT_INDEX__INIT;
    pi.name = (char *)name;
    pi.field = (char *)field;
    ev.bucket = "bench";
    ev.op_case = OBJLOG__EVENT__OP_PUT_INDEX;
    ev.put_index = &pi;
    return ixb_apply(x, &ev);
}

/* PUT of key i: cust "hit" for 1 in 10, else "c<i%97>"; a tag and a type. */
static int ixb_put(ixb_store *x, long i) {
    char key[32], cust[16];
    snprintf(key, sizeof(key), "obj-%08ld", i);
    snprintf(cust, sizeof(cust), i % 10 == 0 ? "hit" : "c%ld", i % 97);
    Objlog__UserMeta um = OBJLOG__USER_META__INIT, tg = OBJLOG__USER_META__INIT;
    Objlog__UserMeta *ump = &um, *tgp = &tg;
    um.name = "cust";
    um.value = cust;
    tg.name = "tier";
    tg.value = i % 3 ? "hot" : "cold";
    Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
    m.size = (uint64_t)(i % 4096);
    m.etag = "0cc175b9c0f1b6a831c399e269772661";
    m.content_type = i % 2 ? "image/png" : "text/plain";
    m.user_metadata = &ump;
    m.n_user_metadata = 1;
    m.tags = &tgp;
    m.n_tags = 1;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    po.meta = &m;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = "bench";
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &po;
    return ixb_apply(x, &ev);
}

/* Reads n rows from prefix start (bounded by prefix) decoding each. */
static long ixb_scan(ixb_store *x, objlog_cf cf, const keybuf *prefix, long n) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(x->s), ro,
                                                        objlog_store_cf(x->s, cf));
    long got = 0;
    for (rocksdb_iter_seek(it, (const char *)prefix->data, prefix->len);
         got < n && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (kn < prefix->len || memcmp(k, prefix->data, prefix->len) != 0)
            break;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
        if (r)
            got++;
        objlog__version_record__free_unpacked(r, NULL);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return got;
}

static int ixb_query_vs_list(bench *b) {
    ixb_store x;
    int rc = -1;
    if (ixb_open(&x) < 0 || ixb_bucket(&x) < 0 || ixb_index(&x, "cust", "user_metadata.cust") < 0)
        goto out;
    for (long i = 0; i < b->count; i++)
        if (ixb_put(&x, i) < 0)
            goto out;
    if (ixb_write(&x) < 0)
        goto out;
    keybuf ip, lp;
    keybuf_init(&ip);
    keybuf_init(&lp);
    objlog_index_prefix(&ip, "bench", OBJLOG_INDEX_ENTRY, "cust");
    keycodec_append_enc(&ip, (const uint8_t *)"hit", 3);
    keycodec_bucket_part(&lp, "bench", 5);
    int rounds = b->rounds * 100;
    double *q = calloc((size_t)rounds, sizeof(double)), *l = calloc((size_t)rounds, sizeof(double));
    long qn = 0, ln = 0;
    for (int r = 0; q && l && r < rounds; r++) {
        int64_t t0 = bench_mono_us();
        qn = ixb_scan(&x, OBJLOG_CF_INDEXES, &ip, IXB_MATCHES);
        int64_t t1 = bench_mono_us();
        ln = ixb_scan(&x, OBJLOG_CF_OBJECTS, &lp, IXB_MATCHES);
        int64_t t2 = bench_mono_us();
        q[r] = (double)(t1 - t0);
        l[r] = (double)(t2 - t1);
    }
    if (q && l) {
        qsort(q, (size_t)rounds, sizeof(double), bench_cmp_double);
        qsort(l, (size_t)rounds, sizeof(double), bench_cmp_double);
        double qm = bench_percentile(q, rounds, 0.5), lm = bench_percentile(l, rounds, 0.5);
        printf("query of %ld matches (index rows of %ld objects): median %.0f us\n", qn,
               (long)b->count, qm);
        printf("LIST of %ld keys (objects rows):                   median %.0f us\n", ln, lm);
        printf("ratio query/LIST: %.2f (%d rounds each)\n", lm > 0 ? qm / lm : 0.0, rounds);
        rc = qn == IXB_MATCHES ? 0 : -1;
        if (rc)
            fprintf(stderr, "objlog: bench: --count must give %d matches (use 10000+)\n",
                    IXB_MATCHES);
    }
    free(q);
    free(l);
    keybuf_free(&ip);
    keybuf_free(&lp);
out:
    ixb_close(&x);
    return rc;
}

/* Seconds to apply b->count PUTs into a bucket with nix indexes. */
static double ixb_put_cost(bench *b, int nix) {
    static const char *const names[] = {"cust", "tier", "ct"};
    static const char *const fields[] = {"user_metadata.cust", "tag.tier", "content_type"};
    ixb_store x;
    double s = -1;
    if (ixb_open(&x) < 0 || ixb_bucket(&x) < 0)
        goto out;
    for (int i = 0; i < nix; i++)
        if (ixb_index(&x, names[i], fields[i]) < 0)
            goto out;
    int64_t t0 = bench_mono_us();
    for (long i = 0; i < b->count; i++)
        if (ixb_put(&x, i) < 0)
            goto out;
    if (ixb_write(&x) < 0)
        goto out;
    s = (double)(bench_mono_us() - t0) / 1e6;
out:
    ixb_close(&x);
    return s;
}

int bench_index_run(bench *b) {
    printf("objlog bench --indexes: --count %ld objects, in-process apply + RocksDB\n",
           (long)b->count);
    if (ixb_query_vs_list(b) < 0)
        return CLI_EXIT_FAIL;
    double base = 0;
    for (int nix = 0; nix <= 3; nix += nix ? 2 : 1) {
        double s = ixb_put_cost(b, nix);
        if (s < 0)
            return CLI_EXIT_FAIL;
        if (nix == 0)
            base = s;
        printf("PUT apply, %d index%s: %ld puts in %.2f s (%.0f/s), ratio to 0 indexes %.2f\n",
               nix, nix == 1 ? "" : "es", (long)b->count, s, (double)b->count / s,
               base > 0 ? s / base : 0.0);
    }
    fflush(stdout);
    if ((!b->url && bench_daemon_start(b) < 0) || bench_index_http_run(b) < 0)
        return CLI_EXIT_FAIL;
    return CLI_EXIT_OK;
}
