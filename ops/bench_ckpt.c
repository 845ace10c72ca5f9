/* bench_ckpt.c: `objlog bench --checkpoint`, what a new node gains by
 * copying a peer's checkpoint of a partition instead of replaying the log.
 * In this process, no Kafka, no objlogd:
 *   apply         N PUTs of new keys into B unversioned buckets placed
 *                 evenly on P partitions, applied by the state machine
 *                 (apply.c, decoding included) into a fresh store in
 *                 WriteBatches of BENCH_APPLY_BATCH events with their
 *                 applied offsets, as the materializer does: the lower
 *                 bound of a rebuild from the log (a real one also fetches
 *                 from Kafka: `objlog bench --apply`, apply-rebuild);
 *   export        every partition's checkpoint (materializer/checkpoint.h)
 *                 into a file, one after the other;
 *   import        each file, read in 64 KiB chunks (as curl hands them),
 *                 into a second fresh store bound to the same log.
 * It prints rows/s and MB/s of export and import, events/s of apply, and
 * apply's time over export+import: how many times faster a bootstrap
 * from a checkpoint is than replaying the same events.
 * Invariant: the temp dir (both stores, the files) is removed on every
 * way out of bench_ckpt_run; each phase gets fresh stores and only its own
 * work is timed (events are packed before the apply clock starts). */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apply.h"
#include "bench_apply.h"
#include "bench_int.h"
#include "checkpoint.h"
#include "cli.h"
#include "keycodec.h"
#include "objlog.pb-c.h"

#define CKPT_CHUNK (64 * 1024)

typedef struct packed {
    uint8_t *data;
    size_t len;
    int part;
} packed;

typedef struct ckpt_run {
    char dir[64], src[96], dst[96];
    int nparts, nbuckets;
    long count;
    packed *ev;                  /* the buckets' CreateBucket, then the PUTs */
    long nev;
    rangemap *rm;
    double apply_s, export_s, import_s;
    uint64_t rows, bytes;
} ckpt_run;

static const objlog_log_identity bench_log = {"bench-cluster",
                                              "00000000000000000000000000bench0", 0};

static int ckpt_pack(ckpt_run *r, Objlog__Event *ev, int part, long i) {
    uint8_t rid[16] = {0};
    memcpy(rid, &i, sizeof(i));
    rid[15] = 0xbe;
    ev->request_id.data = rid;
    ev->request_id.len = 16;
    ev->range_epoch = 1;
    size_t n = objlog__event__get_packed_size(ev);
    packed *p = &r->ev[r->nev++];
    p->data = malloc(n);
    if (!p->data)
        return -1;
    p->len = objlog__event__pack(ev, p->data);
    p->part = part;
    return 0;
}

/* Bucket j on partition j % nparts, named by trying names (they differ
 * in their first characters: FNV-1a's top bits hardly see the last ones). */
static int ckpt_events(ckpt_run *r) {
    r->ev = calloc((size_t)(r->count + r->nbuckets), sizeof(*r->ev));
    char (*names)[32] = calloc((size_t)r->nbuckets, sizeof(*names));
    int *part = calloc((size_t)r->nbuckets, sizeof(int));
    if (!r->ev || !names || !part) {
        free(names);
        free(part);
        return -1;
    }
    int made = 0;
    keybuf kb;
    keybuf_init(&kb);
    for (long t = 0; made < r->nbuckets && t < 64L * r->nbuckets + 1000; t++) {
        char name[32];
        snprintf(name, sizeof(name), "%ld-ckpt-bench", t);
        keybuf_reset(&kb);
        keycodec_route_key(&kb, name, strlen(name), (const uint8_t *)"", 0);
        int p = rangemap_partition(r->rm, kb.data, kb.len);
        if (p != made % r->nparts)
            continue;
        snprintf(names[made], sizeof(names[made]), "%s", name);
        part[made++] = p;
    }
    keybuf_free(&kb);
    int rc = made == r->nbuckets ? 0 : -1;
    for (int j = 0; rc == 0 && j < r->nbuckets; j++) {
        Objlog__Event ev = OBJLOG__EVENT__INIT;
        Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
        ev.bucket = names[j];
        ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
        ev.create_bucket = &cb;
        rc = ckpt_pack(r, &ev, part[j], -1 - j);
    }
    for (long i = 0; rc == 0 && i < r->count; i++) {
        char key[32], etag[32];
        int j = (int)(i % r->nbuckets);
        snprintf(key, sizeof(key), "key-%09ld", i);
        snprintf(etag, sizeof(etag), "etag-%ld", i);
        Objlog__Event ev = OBJLOG__EVENT__INIT;
        Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
        Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
        meta.size = (uint64_t)i;
        meta.etag = etag;
        meta.content_type = BENCH_APPLY_CONTENT_TYPE;
        po.meta = &meta;
        ev.bucket = names[j];
        ev.key.data = (uint8_t *)key;
        ev.key.len = strlen(key);
        ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
        ev.put_object = &po;
        rc = ckpt_pack(r, &ev, part[j], i);
    }
    free(names);
    free(part);
    return rc;
}

static objlog_store *ckpt_store(const char *dir, char *err, size_t en) {
    objlog_store *s = objlog_store_open_conf(dir, NULL, err, en);
    if (s && objlog_store_bind_log(s, &bench_log, 0, err, en) != OBJLOG_BIND_RECORDED) {
        objlog_store_close(s);
        return NULL;
    }
    return s;
}

/* The events into s as the materializer applies them. */
static int ckpt_apply(ckpt_run *r, objlog_store *s, char *err, size_t en) {
    apply_batch *b = apply_batch_new(s, r->rm);
    int64_t *off = calloc((size_t)r->nparts, sizeof(int64_t));
    int rc = b && off ? 0 : -1;
    for (long i = 0; rc == 0 && i < r->nev;) {
        long end = i + BENCH_APPLY_BATCH < r->nev ? i + BENCH_APPLY_BATCH : r->nev;
        for (; rc == 0 && i < end; i++) {
            packed *p = &r->ev[i];
            Objlog__Event *ev = apply_decode(p->data, p->len, err, en);
            rc = ev ? apply_event(b, p->part, off[p->part], 1000 + off[p->part], ev, NULL,
                                  err, en)
                    : -1;
            objlog__event__free_unpacked(ev, NULL);
            off[p->part]++;
        }
        for (int p = 0; rc == 0 && p < r->nparts; p++)
            if (off[p])
                apply_set_applied(b, p, off[p]);
        if (rc == 0 && objlog_store_write_view(s, apply_batch_wb(b), err, en) < 0)
            rc = -1;
        if (rc == 0)
            apply_batch_written(b);
        apply_batch_clear(b);
    }
    free(off);
    apply_batch_destroy(b);
    return rc;
}

static int ckpt_file_write(void *opaque, const void *data, size_t n) {
    return fwrite(data, 1, n, opaque) == n ? 0 : -1;
}

static void ckpt_file(const ckpt_run *r, int p, char *out, size_t n) {
    snprintf(out, n, "%s/part-%d.ckpt", r->dir, p);
}

static int ckpt_export_all(ckpt_run *r, objlog_store *s, char *err, size_t en) {
    for (int p = 0; p < r->nparts; p++) {
        char path[128];
        ckpt_file(r, p, path, sizeof(path));
        FILE *f = fopen(path, "w");
        if (!f) {
            snprintf(err, en, "%s: %s", path, strerror(errno));
            return -1;
        }
        objlog_ckpt_info info;
        int rc = objlog_ckpt_export(s, r->rm, p, ckpt_file_write, f, &info, err, en);
        if (fclose(f) != 0 && rc == 0) {
            snprintf(err, en, "%s: %s", path, strerror(errno));
            rc = -1;
        }
        if (rc != 0)
            return -1;
        r->rows += info.rows;
        r->bytes += info.bytes;
    }
    return 0;
}

static int ckpt_import_all(ckpt_run *r, objlog_store *s, char *err, size_t en) {
    static char buf[CKPT_CHUNK];
    for (int p = 0; p < r->nparts; p++) {
        char path[128];
        ckpt_file(r, p, path, sizeof(path));
        FILE *f = fopen(path, "r");
        objlog_ckpt_import *im = f ? objlog_ckpt_import_new(s, r->rm, p, err, en) : NULL;
        int rc = im ? 0 : -1;
        if (!f)
            snprintf(err, en, "%s: %s", path, strerror(errno));
        size_t n;
        while (rc == 0 && (n = fread(buf, 1, sizeof(buf), f)) > 0)
            rc = objlog_ckpt_import_feed(im, buf, n, err, en);
        int64_t applied;
        if (rc == 0)
            rc = objlog_ckpt_import_finish(im, &applied, err, en);
        objlog_ckpt_import_destroy(im);
        if (f)
            fclose(f);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int ckpt_phases(ckpt_run *r, char *err, size_t en) {
    objlog_store *src = ckpt_store(r->src, err, en);
    if (!src)
        return -1;
    int64_t t0 = bench_mono_us();
    int rc = ckpt_apply(r, src, err, en);
    int64_t t1 = bench_mono_us();
    if (rc == 0)
        rc = ckpt_export_all(r, src, err, en);
    int64_t t2 = bench_mono_us();
    objlog_store_close(src);
    objlog_store *dst = rc == 0 ? ckpt_store(r->dst, err, en) : NULL;
    if (!dst)
        return -1;
    int64_t t3 = bench_mono_us();
    rc = ckpt_import_all(r, dst, err, en);
    int64_t t4 = bench_mono_us();
    objlog_store_close(dst);
    r->apply_s = (double)(t1 - t0) / 1e6;
    r->export_s = (double)(t2 - t1) / 1e6;
    r->import_s = (double)(t4 - t3) / 1e6;
    return rc;
}

static void ckpt_report(const ckpt_run *r, int json) {
    double mb = (double)r->bytes / 1e6, both = r->export_s + r->import_s;
    double ratio = both > 0 ? r->apply_s / both : 0;
    if (json) {
        json_t *j = json_pack(
            "{s:i,s:I,s:I,s:f,s:f,s:{s:I,s:I,s:f,s:f,s:f},s:{s:f,s:f,s:f},s:f}", "partitions",
            r->nparts, "events", (json_int_t)r->nev, "rows", (json_int_t)r->rows, "mb", mb,
            "apply_seconds", r->apply_s, "export", "rows", (json_int_t)r->rows, "bytes",
            (json_int_t)r->bytes, "seconds", r->export_s, "rows_per_second",
            r->export_s > 0 ? (double)r->rows / r->export_s : 0, "mb_per_second",
            r->export_s > 0 ? mb / r->export_s : 0, "import", "seconds", r->import_s,
            "rows_per_second", r->import_s > 0 ? (double)r->rows / r->import_s : 0,
            "mb_per_second", r->import_s > 0 ? mb / r->import_s : 0, "apply_over_checkpoint",
            ratio);
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(j);
        return;
    }
    printf("%-14s %10s %10s %9s %12s %9s\n", "phase", "events", "rows", "seconds", "per_second",
           "MB/s");
    printf("%-14s %10ld %10s %9.3f %12.1f %9s\n", "apply", r->nev, "-", r->apply_s,
           (double)r->nev / r->apply_s, "-");
    printf("%-14s %10s %10llu %9.3f %12.1f %9.1f\n", "export", "-",
           (unsigned long long)r->rows, r->export_s, (double)r->rows / r->export_s,
           mb / r->export_s);
    printf("%-14s %10s %10llu %9.3f %12.1f %9.1f\n", "import", "-",
           (unsigned long long)r->rows, r->import_s, (double)r->rows / r->import_s,
           mb / r->import_s);
    printf("%-14s %10ld %10llu %9.3f %12.1f %9.1f\n", "export+import", r->nev,
           (unsigned long long)r->rows, both, (double)r->nev / both, mb / both);
    printf("checkpoint: %.1f MB for %ld events over %d partitions; apply takes %.2fx the "
           "time of export+import\n", mb, r->nev, r->nparts, ratio);
}

int bench_ckpt_run(bench *b) {
    ckpt_run r = {.nparts = b->partitions ? b->partitions : STATS_DEFAULT_PARTS,
                  .nbuckets = b->apply_buckets, .count = b->count};
    char err[1024] = "";
    snprintf(r.dir, sizeof(r.dir), "/tmp/objlog-bench-ckpt-XXXXXX");
    if (!mkdtemp(r.dir)) {
        fprintf(stderr, "objlog: bench: temp dir: %s\n", strerror(errno));
        return CLI_EXIT_FAIL;
    }
    snprintf(r.src, sizeof(r.src), "%s/src", r.dir);
    snprintf(r.dst, sizeof(r.dst), "%s/dst", r.dir);
    if (r.nbuckets < r.nparts)
        r.nbuckets = r.nparts;
    r.rm = rangemap_new_default(r.nparts, 1);
    int rc = r.rm && ckpt_events(&r) == 0 ? 0 : -1;
    if (rc < 0)
        snprintf(err, sizeof(err), "out of memory, or no bucket names for every partition");
    if (rc == 0)
        rc = ckpt_phases(&r, err, sizeof(err));
    if (rc == 0)
        ckpt_report(&r, b->json);
    else
        fprintf(stderr, "objlog: bench: checkpoint: %s\n", err);
    for (long i = 0; i < r.nev; i++)
        free(r.ev[i].data);
    free(r.ev);
    rangemap_destroy(r.rm);
    nftw(r.dir, bench_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
