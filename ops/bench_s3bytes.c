/* bench_s3bytes.c: `objlog bench --s3-bytes`, the bytes through the S3
 * endpoint against the disk they land on, in one run of the bench's own
 * objlogd (its blob directory in the bench's temp dir): for objects of
 * 1 KiB, 1 MiB and 64 MiB, PutObject and GetObject MB/s on one kept-alive
 * connection, against dd writing the same bytes to files in the same
 * directory (conv=fsync: durable, as a PutObject is before its answer)
 * and reading them back, with the ratio objlog/dd.
 *
 * `objlog bench --s3-forward A,B --url URL`: the cost of a cluster node
 * sending an S3 read on to the node that applies its bucket. Objects of
 * the same sizes go up through A; which of A and B forwards is read from
 * the answers (X-Objlog-Forwarded-By); then GetObject MB/s and HeadObject/s
 * through the node that applies the bucket and through the other one, and
 * the ratio forwarded/direct.
 *
 * Invariant: every GET must give back as many bytes as were put, and the
 * first of each size the very bytes, so a broken answer cannot pass for a
 * fast one. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_int.h"
#include "cli.h"

typedef struct sb_size {
    const char *name;
    size_t bytes;
    int count;
} sb_size;

static const sb_size sb_sizes[] = {
    {"1KiB", 1024, 2000}, {"1MiB", 1 << 20, 200}, {"64MiB", 64 << 20, 6}};

typedef struct sb_sink {
    const uint8_t *want;         /* compare with these, NULL: count only */
    size_t got;
    int differs;
} sb_sink;

static size_t sb_write(char *p, size_t sz, size_t n, void *arg) {
    sb_sink *s = arg;
    size_t k = sz * n;
    if (s->want && memcmp(s->want + s->got, p, k) != 0)
        s->differs = 1;
    s->got += k;
    return k;
}

static int sb_put(CURL *h, const char *url, const uint8_t *data, size_t n) {
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, data);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    sb_sink s = {0};
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sb_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    long status = 0;
    if (curl_easy_perform(h) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return status == 200 ? 0 : -1;
}

static int sb_get(CURL *h, const char *url, const uint8_t *want, size_t n) {
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    sb_sink s = {.want = want};
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sb_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    long status = 0;
    if (curl_easy_perform(h) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return status == 200 && s.got == n && !s.differs ? 0 : -1;
}

/* dd ARGS... (NULL-ended), quietly: 0 when it exited 0. */
static int sb_dd(char *const argv[]) {
    pid_t pid = fork();
    if (pid == 0) {
        execvp("dd", argv);
        _exit(127);
    }
    int st;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0
               ? 0 : -1;
}

static double sb_mbps(size_t bytes, int count, int64_t us) {
    return us > 0 ? (double)bytes * count / (1 << 20) / ((double)us / 1e6) : 0;
}

/* One size: objlog PUT, GET; dd write, read. MB/s into mb[4]. */
static int sb_size_run(bench *b, CURL *h, const sb_size *sz, double mb[4]) {
    uint8_t *data = malloc(sz->bytes);
    char src[160], url[512], dst[200], iff[220], off[220], bs[32];
    int rc = data ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < sz->bytes; i++)
        data[i] = (uint8_t)(rand() >> 7);
    snprintf(src, sizeof(src), "%s/dd-src", b->tmpdir);
    FILE *f = rc == 0 ? fopen(src, "wb") : NULL;
    if (!f || fwrite(data, 1, sz->bytes, f) != sz->bytes)
        rc = -1;
    if (f)
        fclose(f);
    int64_t t0 = bench_mono_us();
    for (int i = 0; rc == 0 && i < sz->count && !bench_interrupted; i++) {
        snprintf(url, sizeof(url), "%s/%s/%s-%d", b->s3_url, b->bucket, sz->name, i);
        data[0] = (uint8_t)i; /* bytes of their own: no two blobs are one file */
        rc = sb_put(h, url, data, sz->bytes);
    }
    mb[0] = sb_mbps(sz->bytes, sz->count, bench_mono_us() - t0);
    t0 = bench_mono_us();
    for (int i = 0; rc == 0 && i < sz->count && !bench_interrupted; i++) {
        snprintf(url, sizeof(url), "%s/%s/%s-%d", b->s3_url, b->bucket, sz->name, i);
        data[0] = (uint8_t)i;
        rc = sb_get(h, url, i == 0 || i == sz->count - 1 ? data : NULL, sz->bytes);
    }
    mb[1] = sb_mbps(sz->bytes, sz->count, bench_mono_us() - t0);
    snprintf(bs, sizeof(bs), "bs=%zu", sz->bytes < (1 << 20) ? sz->bytes : (size_t)1 << 20);
    snprintf(iff, sizeof(iff), "if=%s", src);
    t0 = bench_mono_us();
    for (int i = 0; rc == 0 && i < sz->count; i++) {
        snprintf(dst, sizeof(dst), "of=%s/dd-%s-%d", b->tmpdir, sz->name, i);
        char *argv[] = {"dd", iff, dst, bs, "conv=fsync", "status=none", NULL};
        rc = sb_dd(argv);
    }
    mb[2] = sb_mbps(sz->bytes, sz->count, bench_mono_us() - t0);
    t0 = bench_mono_us();
    for (int i = 0; rc == 0 && i < sz->count; i++) {
        snprintf(off, sizeof(off), "if=%s/dd-%s-%d", b->tmpdir, sz->name, i);
        char *argv[] = {"dd", off, "of=/dev/null", bs, "status=none", NULL};
        rc = sb_dd(argv);
    }
    mb[3] = sb_mbps(sz->bytes, sz->count, bench_mono_us() - t0);
    for (int i = 0; i < sz->count; i++) {
        snprintf(dst, sizeof(dst), "%s/dd-%s-%d", b->tmpdir, sz->name, i);
        unlink(dst);
    }
    free(data);
    if (rc < 0)
        fprintf(stderr, "objlog: bench: %s objects failed (PUT, GET or dd)\n", sz->name);
    return rc;
}

int bench_s3bytes_run(bench *b) {
    CURL *setup = curl_easy_init(), *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    struct curl_slist *hl = curl_slist_append(NULL, "Expect:");
    if (!setup || !h || !hl || !b->s3_url[0] || bench_create_bucket(b, setup) < 0)
        goto out;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    printf("S3 bytes against dd on the same disk (%s), one connection:\n", b->tmpdir);
    printf("%-6s %6s %12s %12s %12s %12s %9s %9s\n", "size", "count", "put_MB/s", "dd_w_MB/s",
           "get_MB/s", "dd_r_MB/s", "put/dd", "get/dd");
    for (size_t i = 0; i < sizeof(sb_sizes) / sizeof(sb_sizes[0]); i++) {
        double mb[4];
        if (sb_size_run(b, h, &sb_sizes[i], mb) < 0)
            goto out;
        printf("%-6s %6d %12.1f %12.1f %12.1f %12.1f %9.2f %9.2f\n", sb_sizes[i].name,
               sb_sizes[i].count, mb[0], mb[2], mb[1], mb[3], mb[2] > 0 ? mb[0] / mb[2] : 0,
               mb[3] > 0 ? mb[1] / mb[3] : 0);
        fflush(stdout);
    }
    rc = CLI_EXIT_OK;
out:
    curl_slist_free_all(hl);
    if (setup)
        curl_easy_cleanup(setup);
    if (h)
        curl_easy_cleanup(h);
    return rc;
}

/* ---- --s3-forward ---- */

static size_t sf_header(char *p, size_t sz, size_t n, void *arg) {
    int *forwarded = arg;
    if (sz * n > 22 && strncasecmp(p, "X-Objlog-Forwarded-By:", 22) == 0)
        *forwarded = 1;
    return sz * n;
}

/* 1 when node url sends a GET of url/path on, 0 when it answers it, -1. */
static int sf_forwards(CURL *h, const char *url, const char *path) {
    char u[512];
    int forwarded = 0;
    snprintf(u, sizeof(u), "%s%s", url, path);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, sf_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &forwarded);
    int rc = sb_get(h, u, NULL, 1024);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, NULL);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, NULL);
    return rc < 0 ? -1 : forwarded;
}

static int sf_head(CURL *h, const char *url) {
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    long status = 0;
    int rc = curl_easy_perform(h) == CURLE_OK ? 0 : -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(h, CURLOPT_NOBODY, 0L);
    return rc == 0 && status == 200 ? 0 : -1;
}

/* count GETs of the object of size sz through url: MB/s, or -1. */
static double sf_gets(bench *b, CURL *h, const char *url, const sb_size *sz,
                      const uint8_t *data) {
    char u[512];
    snprintf(u, sizeof(u), "%s/%s/%s", url, b->bucket, sz->name);
    int64_t t0 = bench_mono_us();
    for (int i = 0; i < sz->count && !bench_interrupted; i++)
        if (sb_get(h, u, i == 0 ? data : NULL, sz->bytes) < 0)
            return -1;
    return sb_mbps(sz->bytes, sz->count, bench_mono_us() - t0);
}

static double sf_heads(bench *b, CURL *h, const char *url, int n) {
    char u[512];
    snprintf(u, sizeof(u), "%s/%s/1KiB", url, b->bucket);
    int64_t t0 = bench_mono_us();
    for (int i = 0; i < n && !bench_interrupted; i++)
        if (sf_head(h, u) < 0)
            return -1;
    int64_t us = bench_mono_us() - t0;
    return us > 0 ? n / ((double)us / 1e6) : 0;
}

/* One object of each size through node 0; data[i] its bytes. */
static int sf_put_all(bench *b, CURL *h, uint8_t *data[3]) {
    char u[512];
    for (size_t i = 0; i < 3; i++) {
        const sb_size *sz = &sb_sizes[i];
        data[i] = malloc(sz->bytes);
        if (!data[i])
            return -1;
        for (size_t k = 0; k < sz->bytes; k++)
            data[i][k] = (uint8_t)(rand() >> 7);
        snprintf(u, sizeof(u), "%s/%s/%s", b->s3_fwd[0], b->bucket, sz->name);
        if (sb_put(h, u, data[i], sz->bytes) < 0) {
            fprintf(stderr, "objlog: bench: PUT %s failed\n", u);
            return -1;
        }
    }
    return 0;
}

int bench_s3forward_run(bench *b) {
    CURL *setup = curl_easy_init(), *h = curl_easy_init();
    struct curl_slist *hl = curl_slist_append(NULL, "Expect:");
    uint8_t *data[3] = {NULL, NULL, NULL};
    int rc = CLI_EXIT_FAIL;
    char path[200];
    if (!setup || !h || !hl || bench_create_bucket(b, setup) < 0)
        goto out;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    if (sf_put_all(b, h, data) < 0)
        goto out;
    snprintf(path, sizeof(path), "/%s/1KiB", b->bucket);
    int f0 = sf_forwards(h, b->s3_fwd[0], path), f1 = sf_forwards(h, b->s3_fwd[1], path);
    if (f0 < 0 || f1 < 0 || f0 == f1) {
        fprintf(stderr, "objlog: bench: of %s and %s exactly one must forward bucket %s's "
                "reads (%d, %d): two nodes of one cluster, no standbys\n", b->s3_fwd[0],
                b->s3_fwd[1], b->bucket, f0, f1);
        goto out;
    }
    const char *direct = f0 ? b->s3_fwd[1] : b->s3_fwd[0], *via = f0 ? b->s3_fwd[0] : b->s3_fwd[1];
    printf("S3 reads through the node that applies the bucket (%s) and through one that\n"
           "forwards them (%s), one connection each:\n", direct, via);
    printf("%-6s %6s %14s %14s %9s\n", "size", "count", "direct_MB/s", "forward_MB/s",
           "fwd/direct");
    for (size_t i = 0; i < 3; i++) {
        double d = sf_gets(b, h, direct, &sb_sizes[i], data[i]);
        double f = sf_gets(b, h, via, &sb_sizes[i], data[i]);
        if (d < 0 || f < 0) {
            fprintf(stderr, "objlog: bench: a GET of %s failed\n", sb_sizes[i].name);
            goto out;
        }
        printf("%-6s %6d %14.1f %14.1f %9.2f\n", sb_sizes[i].name, sb_sizes[i].count, d, f,
               d > 0 ? f / d : 0);
        fflush(stdout);
    }
    double hd = sf_heads(b, h, direct, 4000), hf = sf_heads(b, h, via, 4000);
    if (hd < 0 || hf < 0)
        goto out;
    printf("%-6s %6d %14s %14s %9.2f\n%-6s %6s %14.0f %14.0f\n", "HEAD", 4000, "direct_/s",
           "forward_/s", hd > 0 ? hf / hd : 0, "", "", hd, hf);
    rc = CLI_EXIT_OK;
out:
    for (int i = 0; i < 3; i++)
        free(data[i]);
    curl_slist_free_all(hl);
    if (setup)
        curl_easy_cleanup(setup);
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
