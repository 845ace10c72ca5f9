/* test_disk_full.c: a full disk under objlogd's --data is survived.
 *
 * The test mounts a small tmpfs in a temp dir (what `mount -t tmpfs -o
 * size=16m` does, through mount(2)), starts `objlogd --embedded` with
 * --data on it, and has a few threads PUT through the JSON API; once some
 * writes are acknowledged it fills the rest of the tmpfs with a filler
 * file, so the store runs out of space within a megabyte or so of
 * writes. Then, while the disk stays full:
 *  - objlogd stays up (RocksDB 7.8's info log aborted it within a minute);
 *  - /metrics says objlog_store_stalled 1 and counts the failed store
 *    writes, and they are retried with backoff: a bounded count over
 *    several seconds (the old loop retried ~1,000 times a second);
 *  - /readyz is 503 and names the error;
 *  - a JSON write answers 507 InsufficientStorage, an S3 PutObject 503
 *    SlowDown naming the disk (neither reaches the log).
 * The filler is deleted and objlogd resumes by itself: /readyz 200,
 * objlog_store_stalled 0, new writes 200. Every write acknowledged
 * before, during and after reads back (strong) with its exact etag.
 *
 * The view runs with the WAL on (--wal on), where every view write
 * appends to the disk, so a full disk stops the view until space returns.
 * With the WAL off (objlogd's default) the view touches the disk only to
 * flush: a failed flush refuses view writes until a flush succeeds (the
 * flusher retries every second), but RocksDB's compactions can make room
 * for the next flush on the same full disk, and the view then goes on: it
 * loses nothing either way, it just does not stay stalled for this test.
 *
 * Mounting needs root and CAP_SYS_ADMIN: without them the test prints
 * "SKIP ...: <why>" and is skipped. The tmpfs is unmounted in the
 * teardown, which cmocka runs when the test fails too; objlogd is
 * stopped by the test, and proc.h kills it even if the test dies. Sized
 * for the embedded mock cluster (a few thousand small events at most)
 * and for a shared 2-core machine: every wait is bounded, none is a
 * timing assertion. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "httpc.h"
#include "materializer.h"
#include "proc.h"

#define DF_TMPFS_OPTS "size=16m"
#define DF_WRITERS 4
#define DF_WRITES_MAX 3000   /* per writer; the disk fills long before */
#define DF_FILL_AFTER 200    /* acknowledged writes before the filler goes in */
#define DF_HOLD_FULL_MS 6000 /* full for longer than RocksDB's 5 s recovery period */
#define DF_RETRIES_MAX 60    /* failed store writes by the end of the hold */
#define DF_AFTER 20          /* writes once space is back */
#define DF_WAIT_MS 90000     /* the longest any one wait may take */

typedef struct acked {
    char key[24];
    char etag[40];
} acked;

typedef struct fixture {
    char dir[256];           /* temp dir: the tmpfs mount point */
    char why[512];           /* why it is not mounted (SKIP) */
    int mounted;
    char data[300], filler[300];
    proc *d;
    char json[96], s3[96];
    pthread_mutex_t mu;      /* acks, from the writer threads */
    acked *acks;
    size_t nacks, cap;
} fixture;

typedef struct writer {
    fixture *f;
    int id;
    long stop_status;        /* the answer that stopped it; -1 no answer, 200 cap hit */
    char stop_body[256];
} writer;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the tmpfs ---- */

static int df_setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    if (!f || proc_tmpdir(f->dir, sizeof(f->dir)) < 0)
        return -1;
    pthread_mutex_init(&f->mu, NULL);
    *state = f;
    if (geteuid() != 0) {
        snprintf(f->why, sizeof(f->why), "mounting a tmpfs needs root (euid %d)",
                 (int)geteuid());
        return 0;
    }
    if (mount("tmpfs", f->dir, "tmpfs", MS_NOSUID | MS_NODEV, DF_TMPFS_OPTS) < 0) {
        snprintf(f->why, sizeof(f->why), "mount -t tmpfs -o %s %s: %s", DF_TMPFS_OPTS,
                 f->dir, strerror(errno));
        return 0;
    }
    f->mounted = 1;
    snprintf(f->data, sizeof(f->data), "%s/data", f->dir);
    snprintf(f->filler, sizeof(f->filler), "%s/filler", f->dir);
    return 0;
}

static int df_teardown(void **state) {
    fixture *f = *state;
    if (f->d)
        proc_kill(f->d);
    /* Detached: gone even if something still holds a file open in it. */
    if (f->mounted && umount2(f->dir, MNT_DETACH) < 0)
        fprintf(stderr, "umount %s: %s\n", f->dir, strerror(errno));
    proc_rmtree(f->dir);
    pthread_mutex_destroy(&f->mu);
    free(f->acks);
    free(f);
    return 0;
}

/* Grows the filler until the tmpfs is full; the bytes it took. Called
 * again while the disk must stay full: a write RocksDB fails frees what
 * it had written (a partial SST, say), and that must not let it recover
 * before the test frees space. */
static long long fill_disk(const char *path) {
    static char chunk[1 << 16];
    memset(chunk, 0xa5, sizeof(chunk));
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    long long total = 0;
    for (;;) {
        ssize_t n = write(fd, chunk, sizeof(chunk));
        if (n <= 0)
            break;
        total += n;
    }
    close(fd);
    return total;
}

/* ---- objlogd over HTTP ---- */

static void start_objlogd(fixture *f) {
    char bin[512], addr[64], ready[8];
    proc_bin("query/objlogd", bin, sizeof(bin));
    /* --memtable-mb 4 (the least): 1 MB memtables and WAL files, so the
     * store needs the disk again within a megabyte of writes. --wal on:
     * see the top. */
    char blobs[300];
    snprintf(blobs, sizeof(blobs), "%s/blobs", f->dir); /* the same full disk */
    char *argv[] = {bin, "--embedded", "--partitions", "2", "--data", f->data,
                    "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0",
                    "--s3-anonymous", "--memtable-mb", "4", "--wal", "on",
                    "--blob-dir", blobs, NULL};
    f->d = proc_spawn(argv, NULL);
    assert_non_null(f->d);
    assert_int_equal(proc_wait_line(f->d, "OBJLOG_LISTEN=", addr, sizeof(addr), 60000), 0);
    snprintf(f->json, sizeof(f->json), "http://%s", addr);
    assert_int_equal(proc_wait_line(f->d, "OBJLOG_S3_LISTEN=", addr, sizeof(addr), 10000), 0);
    snprintf(f->s3, sizeof(f->s3), "http://%s", addr);
    assert_int_equal(proc_wait_line(f->d, "OBJLOG_READY", ready, sizeof(ready), 60000), 0);
}

static void assert_alive(fixture *f) {
    char why[128];
    if (!proc_alive(f->d, why, sizeof(why)))
        fail_msg("objlogd ended while its disk was full: %s", why);
}

/* Value of an unlabelled sample; -1 when /metrics has no such line. */
static double metric(const char *body, const char *name) {
    size_t n = strlen(name);
    for (const char *l = body; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ')
            return strtod(l + n + 1, NULL);
    return -1;
}

/* objlog_store_stalled and objlog_store_write_errors_total, now. */
static void store_metrics(httpc *c, double *stalled, double *errors) {
    httpc_resp r;
    assert_int_equal(httpc_do(c, "GET", "/metrics", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    *stalled = metric(r.body, "objlog_store_stalled");
    *errors = metric(r.body, "objlog_store_write_errors_total");
    if (*stalled < 0 || *errors < 0)
        fail_msg("/metrics has no objlog_store_stalled or objlog_store_write_errors_total");
}

/* Waits (bounded) until objlog_store_stalled is want; its errors count. */
static double wait_stalled(fixture *f, httpc *c, int want) {
    double stalled = -1, errors = -1;
    for (long long end = now_ms() + DF_WAIT_MS; now_ms() < end; sleep_ms(200)) {
        assert_alive(f);
        store_metrics(c, &stalled, &errors);
        if ((int)stalled == want)
            return errors;
    }
    fail_msg("objlog_store_stalled stayed %g for %d ms (wanted %d)", stalled, DF_WAIT_MS, want);
    return -1;
}

static void ack_add(fixture *f, const char *key, const char *etag) {
    pthread_mutex_lock(&f->mu);
    if (f->nacks == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 1024;
        f->acks = realloc(f->acks, f->cap * sizeof(*f->acks));
        if (!f->acks) /* a writer thread: no cmocka assert (it longjmps) */
            abort();
    }
    snprintf(f->acks[f->nacks].key, sizeof(f->acks[0].key), "%s", key);
    snprintf(f->acks[f->nacks].etag, sizeof(f->acks[0].etag), "%s", etag);
    f->nacks++;
    pthread_mutex_unlock(&f->mu);
}

static size_t acks_now(fixture *f) {
    pthread_mutex_lock(&f->mu);
    size_t n = f->nacks;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* PUTs key; 200 records it as acknowledged. The status (-1 no answer). */
static long put(fixture *f, httpc *c, const char *key, char *body_out, size_t out_size) {
    char path[96], body[128], etag[40];
    snprintf(etag, sizeof(etag), "etag-%s", key);
    /* A long timeout: a slow machine must not end a writer with a 503. */
    snprintf(path, sizeof(path), "/v1/buckets/full/objects/%s?timeout_ms=10000", key);
    snprintf(body, sizeof(body), "{\"etag\":\"%s\",\"size\":100}", etag);
    httpc_resp r;
    if (httpc_do(c, "PUT", path, body, NULL, &r) < 0) {
        if (body_out)
            snprintf(body_out, out_size, "(no answer)");
        return -1;
    }
    if (body_out)
        snprintf(body_out, out_size, "%s", r.body ? r.body : "");
    if (r.status == 200)
        ack_add(f, key, etag);
    return r.status;
}

/* Writes until the first answer that is not 200 (the disk is full). */
static void *writer_main(void *arg) {
    writer *w = arg;
    httpc *c = httpc_new(w->f->json);
    w->stop_status = 200;
    for (int i = 0; c && i < DF_WRITES_MAX; i++) {
        char key[24];
        snprintf(key, sizeof(key), "w%d-%05d", w->id, i);
        long st = put(w->f, c, key, w->stop_body, sizeof(w->stop_body));
        if (st != 200) {
            w->stop_status = st;
            break;
        }
    }
    httpc_destroy(c);
    return NULL;
}

/* Writers run until the disk is full: the filler takes what the store
 * has not, once DF_FILL_AFTER writes are acknowledged. */
static void fill_under_writers(fixture *f) {
    pthread_t t[DF_WRITERS];
    writer w[DF_WRITERS];
    for (int i = 0; i < DF_WRITERS; i++) {
        w[i] = (writer){.f = f, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
    }
    for (long long end = now_ms() + DF_WAIT_MS;
         acks_now(f) < DF_FILL_AFTER && now_ms() < end;)
        sleep_ms(50);
    size_t before = acks_now(f);
    long long filled = fill_disk(f->filler);
    for (int i = 0; i < DF_WRITERS; i++)
        pthread_join(t[i], NULL);
    print_message("%zu writes acknowledged before the filler (%lld bytes) filled the disk, "
                  "%zu in all\n", before, filled, acks_now(f));
    for (int i = 0; i < DF_WRITERS; i++) {
        if (w[i].stop_status == 200)
            fail_msg("writer %d wrote %d times and the disk never filled", i, DF_WRITES_MAX);
        print_message("writer %d stopped at %ld: %s\n", i, w[i].stop_status, w[i].stop_body);
    }
}

/* ---- while the disk is full ---- */

static void check_refusals(fixture *f, httpc *c) {
    httpc_resp r;
    assert_int_equal(httpc_do(c, "GET", "/readyz", NULL, NULL, &r), 0);
    if (r.status != 503 || !strstr(r.body, "\"ready\":false") ||
        !strstr(r.body, "No space left on device"))
        fail_msg("/readyz with a full disk: %ld %s", r.status, r.body);
    print_message("/readyz: %s", r.body);

    char body[512];
    long st = put(f, c, "refused", body, sizeof(body));
    if (st != 507 || !strstr(body, "\"code\":\"InsufficientStorage\""))
        fail_msg("a write with a full disk: %ld %s", st, body);
    print_message("PUT: %ld %s", st, body);

    httpc *s3 = httpc_new(f->s3);
    assert_non_null(s3);
    assert_int_equal(httpc_do(s3, "PUT", "/full/s3-refused", "abc", NULL, &r), 0);
    if (r.status != 503 || !strstr(r.body, "<Code>SlowDown</Code>") ||
        !strstr(r.body, "disk") || !strstr(r.body, f->dir))
        fail_msg("an S3 PutObject with a full disk: %ld %s", r.status, r.body);
    print_message("S3 PutObject: %ld %s\n", r.status, r.body);
    httpc_destroy(s3);
}

/* The disk stays full past RocksDB's own recovery attempts: objlogd stays
 * up and stalled, and retries with backoff, not in a loop. */
static void hold_full(fixture *f, httpc *c) {
    double stalled = 0, errors = 0;
    for (long long end = now_ms() + DF_HOLD_FULL_MS; now_ms() < end; sleep_ms(500)) {
        fill_disk(f->filler);
        assert_alive(f);
        store_metrics(c, &stalled, &errors);
        if (stalled != 1)
            fail_msg("objlog_store_stalled went to %g with the disk still full", stalled);
    }
    print_message("failed store writes after %d ms more of a full disk: %.0f\n",
                  DF_HOLD_FULL_MS, errors);
    if (errors < 1 || errors > DF_RETRIES_MAX)
        fail_msg("objlog_store_write_errors_total %.0f: want 1..%d (retries back off)",
                 errors, DF_RETRIES_MAX);
}

/* ---- after ---- */

static void wait_ready(fixture *f, httpc *c) {
    httpc_resp r = {0};
    for (long long end = now_ms() + DF_WAIT_MS; now_ms() < end; sleep_ms(250)) {
        assert_alive(f);
        assert_int_equal(httpc_do(c, "GET", "/readyz", NULL, NULL, &r), 0);
        if (r.status == 200)
            return;
    }
    fail_msg("/readyz not 200 within %d ms of space returning: %ld %s", DF_WAIT_MS,
             r.status, r.body);
}

/* Every acknowledged write, by a strong read: there, with its etag. */
static void check_acked(fixture *f, httpc *c) {
    for (size_t i = 0; i < f->nacks; i++) {
        char path[96], want[64];
        snprintf(path, sizeof(path), "/v1/buckets/full/objects/%s", f->acks[i].key);
        snprintf(want, sizeof(want), "\"etag\":\"%s\"", f->acks[i].etag);
        httpc_resp r;
        assert_int_equal(httpc_do(c, "GET", path, NULL, NULL, &r), 0);
        if (r.status != 200 || !strstr(r.body, want))
            fail_msg("acknowledged write %s: GET %ld %s", f->acks[i].key, r.status, r.body);
    }
}

static void test_full_disk_survived(void **state) {
    fixture *f = *state;
    if (!f->mounted) {
        print_message("SKIP test_disk_full: %s\n", f->why);
        skip();
    }
    start_objlogd(f);
    httpc *c = httpc_new(f->json);
    assert_non_null(c);
    httpc_resp r;
    assert_int_equal(httpc_do(c, "PUT", "/v1/buckets/full", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);

    fill_under_writers(f);
    assert_alive(f);
    double errors = wait_stalled(f, c, 1);
    assert_true(errors >= 1);
    fill_disk(f->filler);
    check_refusals(f, c);
    hold_full(f, c);

    assert_int_equal(unlink(f->filler), 0);
    long long freed = now_ms();
    wait_ready(f, c);
    wait_stalled(f, c, 0);
    print_message("ready again %lld ms after the filler was deleted\n", now_ms() - freed);
    for (int i = 0; i < DF_AFTER; i++) {
        char key[24], body[512];
        snprintf(key, sizeof(key), "after-%03d", i);
        long st = put(f, c, key, body, sizeof(body));
        if (st != 200)
            fail_msg("a write after space returned: %ld %s", st, body);
    }
    check_acked(f, c);
    print_message("%zu acknowledged writes read back with their etags\n", f->nacks);
    httpc_destroy(c);

    int st = proc_stop(f->d, 20000);
    f->d = NULL;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* With the WAL off, a flush that fails on the full disk refuses every
 * view write until a flush succeeds: the store (no objlogd) on the tmpfs,
 * a view batch taken into memory, the disk filled, the flush refused,
 * then writes and the probe refused naming the flush; space back, the
 * flush succeeds and writes are taken again, the row read back. */
static void test_wal_off_failed_flush_refuses_writes(void **state) {
    fixture *f = *state;
    if (!f->mounted) {
        print_message("SKIP test_wal_off_failed_flush_refuses_writes: %s\n", f->why);
        skip();
    }
    char err[512];
    objlog_store_conf sc = {.flush_interval_ms = -1, .memtable_bytes = 4 << 20};
    objlog_store *s = objlog_store_open_conf(f->data, &sc, err, sizeof(err));
    if (!s)
        fail_msg("open: %s", err);
    rocksdb_column_family_handle_t *cf = objlog_store_cf(s, OBJLOG_CF_OBJECTS);
    static char val[4096];
    memset(val, 'v', sizeof(val));
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    /* 800 KB: below a quarter of the memtable budget, the flusher's own
     * trigger (which would flush it before the disk is full), and more
     * than the full disk can take */
    for (int i = 0; i < 200; i++) {
        char k[16];
        int kn = snprintf(k, sizeof(k), "k%05d", i);
        rocksdb_writebatch_put_cf(wb, cf, k, (size_t)kn, val, sizeof(val));
    }
    assert_int_equal(objlog_store_write_view(s, wb, err, sizeof(err)), 0);
    fill_disk(f->filler);
    assert_int_equal(objlog_store_flush(s, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "flush: "));
    assert_int_equal(objlog_store_write_view(s, wb, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "No space left on device"));
    assert_int_equal(objlog_store_probe(s, err, sizeof(err)), -1);
    objlog_store_durability d;
    objlog_store_durability_get(s, &d);
    assert_int_equal(d.wal, 0);
    assert_true(d.flush_errors >= 1);
    assert_int_equal(d.unflushed, 1);
    assert_int_equal(unlink(f->filler), 0);
    /* RocksDB's own recovery may be under way: a few tries, a second apart */
    int rc = -1;
    for (int i = 0; i < 30 && rc < 0; i++) {
        rc = objlog_store_flush(s, err, sizeof(err));
        if (rc < 0)
            sleep_ms(1000);
    }
    if (rc < 0)
        fail_msg("no flush after space returned: %s", err);
    assert_int_equal(objlog_store_probe(s, err, sizeof(err)), 0);
    assert_int_equal(objlog_store_write_view(s, wb, err, sizeof(err)), 0);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    size_t vn = 0;
    char *rerr = NULL;
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, cf, "k00199", 6, &vn, &rerr);
    assert_null(rerr);
    assert_non_null(v);
    assert_int_equal(vn, sizeof(val));
    rocksdb_free(v);
    rocksdb_readoptions_destroy(ro);
    rocksdb_writebatch_destroy(wb);
    objlog_store_close(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wal_off_failed_flush_refuses_writes, df_setup,
                                        df_teardown),
        cmocka_unit_test_setup_teardown(test_full_disk_survived, df_setup, df_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
