/* bench_clean.c: with --url, remove what the bench run wrote:
 * bench_clean, which bench_main calls when the run ends, also
 * after a failure or SIGINT, unless --keep.
 *
 * A bucket goes only when empty (BucketNotEmpty otherwise), and empty
 * means no version row, no delete marker and no in-progress upload
 * (materializer/apply.c, DeleteBucket). So for each bucket this run
 * created: walk GET .../versions page by page and DELETE every entry by
 * its version id (delete markers too: a DELETE without an id would only
 * add a marker to a versioned bucket; an unversioned object's id is
 * "null"), abort every upload GET .../uploads lists, then DELETE the
 * bucket. A page's deletes go out over CLEAN_CONNS keep-alive connections
 * at once; each waits for its outcome (ack=applied), so the next page and
 * the bucket delete see them. Should the bucket delete still find
 * something (a write of a failed run that landed late), the walk starts
 * over, CLEAN_PASSES times at most. Our own objlogd needs none of this:
 * its data dies with it.
 * Invariant: only the buckets in b->created are touched, and those are
 * the ones whose creation this run saw confirmed, so a name that
 * collided with someone else's is never removed. */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_int.h"
#include "cli.h"

#define CLEAN_CONNS 8
#define CLEAN_PAGE 1000
#define CLEAN_PASSES 3
#define CLEAN_PROGRESS_US 2000000
#define CLEAN_RETRY_US (60 * 1000000LL)

typedef struct clean_item {
    char *url;                   /* to DELETE; owned */
    char kind;                   /* 'v' version, 'm' delete marker, 'u' upload */
    char first_of_key;           /* the walk's first entry of its key */
    char ok;                     /* set by the delete thread on a 200 */
} clean_item;

typedef struct clean_count {
    long buckets, objects, versions, markers, uploads;
} clean_count;

typedef struct clean_batch {
    clean_item items[CLEAN_PAGE];
    size_t n;
    CURL *h[CLEAN_CONNS];
    long failed;                 /* deletes that did not answer 200 */
    char first_error[512];       /* under bench.lock */
    clean_count count;
    int64_t t0, last_progress;
} clean_batch;

/* The walk of one listing: GET {bucket}/{path}, its array, its markers. */
typedef struct clean_list {
    const char *path;            /* "versions" or "uploads" */
    const char *max_param;
    const char *id_field;        /* "version_id" or "upload_id" */
    const char *id_marker;       /* request parameter for the next page */
    const char *next_id;         /* response field that feeds it */
} clean_list;

static const clean_list clean_versions = {"versions", "max_keys", "version_id",
                                          "version_id_marker", "next_version_id_marker"};
static const clean_list clean_uploads = {"uploads", "max_uploads", "upload_id",
                                         "upload_id_marker", "next_upload_id_marker"};

/* "12,345". */
static const char *grouped(long n, char *out, size_t size) {
    char digits[32];
    int len = snprintf(digits, sizeof(digits), "%ld", n < 0 ? 0 : n);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < size; i++) {
        if (i && (len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
    return out;
}

/* cli_http, but a 503 (SlowDown: the view lags, e.g. behind writes an
 * interrupted run left in flight) is retried for up to CLEAN_RETRY_US. */
static int clean_http(CURL *h, const char *method, const char *url, cli_resp *r,
                      char *err, size_t en) {
    int64_t deadline = bench_mono_us() + CLEAN_RETRY_US;
    for (;;) {
        if (cli_http(h, method, url, NULL, NULL, r, err, en) < 0)
            return -1;
        if (r->status != 503 || bench_mono_us() > deadline)
            return 0;
        cli_resp_free(r);
        usleep(200000);
    }
}

static void clean_note_error(bench *b, clean_batch *cb, const char *what) {
    pthread_mutex_lock(&b->lock);
    if (cb->failed++ == 0)
        snprintf(cb->first_error, sizeof(cb->first_error), "%s", what);
    pthread_mutex_unlock(&b->lock);
}

static void *clean_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    clean_batch *cb = b->clean;
    for (size_t i = (size_t)t->index; i < cb->n; i += CLEAN_CONNS) {
        clean_item *it = &cb->items[i];
        cli_resp r;
        char err[256], what[512];
        if (clean_http(cb->h[t->index], "DELETE", it->url, &r, err, sizeof(err)) < 0) {
            snprintf(what, sizeof(what), "DELETE %s: %s", it->url, err);
            clean_note_error(b, cb, what);
            continue;
        }
        it->ok = r.status == 200;
        if (!it->ok) {
            char code[64], msg[160];
            cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
            snprintf(what, sizeof(what), "DELETE %s: %s: %s", it->url, code, msg);
            clean_note_error(b, cb, what);
        }
        cli_resp_free(&r);
    }
    return NULL;
}

static void clean_progress(clean_batch *cb, const char *bucket) {
    int64_t now = bench_mono_us();
    if (now - cb->t0 < CLEAN_PROGRESS_US || now - cb->last_progress < CLEAN_PROGRESS_US)
        return;
    cb->last_progress = now;
    char n[32];
    fprintf(stderr, "objlog: bench: cleaning up: %s versions and delete markers removed "
            "so far (now in bucket %s)\n",
            grouped(cb->count.versions + cb->count.markers, n, sizeof(n)), bucket);
}

/* Deletes the page's items in parallel, counts those that went, frees
 * their URLs. */
static void clean_batch_run(bench *b, clean_batch *cb, const char *bucket) {
    b->clean = cb;
    bench_run_n_threads(b, CLEAN_CONNS, clean_main);
    b->clean = NULL;
    for (size_t i = 0; i < cb->n; i++) {
        clean_item *it = &cb->items[i];
        if (it->ok) {
            cb->count.objects += it->first_of_key;
            cb->count.versions += it->kind == 'v';
            cb->count.markers += it->kind == 'm';
            cb->count.uploads += it->kind == 'u';
        }
        free(it->url);
    }
    cb->n = 0;
    clean_progress(cb, bucket);
}

/* Queues the DELETE of one listed entry; 0, or -1 on memory. last holds
 * the previous entry's key (objects are counted once per key). */
static int clean_queue(bench *b, CURL *h, clean_batch *cb, const char *bucket,
                       const clean_list *l, json_t *e, char **last) {
    const char *key = json_string_value(json_object_get(e, "key"));
    const char *id = json_string_value(json_object_get(e, l->id_field));
    if (!key || !id)
        return 0; /* not ours to interpret; the bucket delete will say */
    char *ek = cli_escape(h, key), *eid = cli_escape(h, id);
    clean_item *it = &cb->items[cb->n];
    *it = (clean_item){.kind = l == &clean_uploads ? 'u'
                               : json_is_true(json_object_get(e, "delete_marker")) ? 'm'
                                                                                   : 'v'};
    int rc = !ek || !eid ? -1
             : it->kind == 'u'
                 ? asprintf(&it->url, "%s/v1/buckets/%s/uploads/%s?key=%s", b->url, bucket,
                            eid, ek)
                 : asprintf(&it->url, "%s/v1/buckets/%s/objects/%s?version_id=%s", b->url,
                            bucket, ek, eid);
    free(ek);
    free(eid);
    if (rc < 0)
        return -1;
    if (it->kind != 'u' && (!*last || strcmp(*last, key) != 0)) {
        it->first_of_key = 1;
        free(*last);
        *last = strdup(key);
    }
    cb->n++;
    return 0;
}

/* GET one page of l in bucket after the markers (NULL: the first page).
 * The page, or NULL with *gone set when the bucket no longer exists, or
 * NULL after saying why. */
static json_t *clean_page(bench *b, CURL *h, const char *bucket, const clean_list *l,
                          const char *key_marker, const char *id_marker, int *gone) {
    char *url = NULL, *ek = key_marker ? cli_escape(h, key_marker) : NULL;
    char *eid = id_marker ? cli_escape(h, id_marker) : NULL;
    int rc = asprintf(&url, "%s/v1/buckets/%s/%s?%s=%d%s%s%s%s%s%s", b->url, bucket, l->path,
                      l->max_param, CLEAN_PAGE, ek ? "&key_marker=" : "", ek ? ek : "",
                      eid ? "&" : "", eid ? l->id_marker : "", eid ? "=" : "",
                      eid ? eid : "");
    free(ek);
    free(eid);
    if (rc < 0)
        return NULL;
    cli_resp r;
    char err[256], code[64] = "", msg[256] = "";
    *gone = 0;
    rc = clean_http(h, "GET", url, &r, err, sizeof(err));
    free(url);
    if (rc < 0) {
        fprintf(stderr, "objlog: bench: list %s of %s: %s\n", l->path, bucket, err);
        return NULL;
    }
    json_t *j = r.status == 200 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    if (!j) {
        cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
        *gone = !strcmp(code, "NoSuchBucket");
        if (!*gone)
            fprintf(stderr, "objlog: bench: list %s of %s: %s: %s\n", l->path, bucket,
                    code, msg);
    }
    cli_resp_free(&r);
    return j;
}

/* Deletes every entry l lists in bucket. 0, 1 if the bucket is gone, -1
 * after saying why. */
static int clean_walk(bench *b, CURL *h, clean_batch *cb, const char *bucket,
                      const clean_list *l) {
    char *km = NULL, *im = NULL, *last = NULL;
    int rc = 0;
    for (;;) {
        int gone;
        json_t *page = clean_page(b, h, bucket, l, km, im, &gone);
        if (!page) {
            rc = gone ? 1 : -1;
            break;
        }
        json_t *arr = json_object_get(page, l == &clean_uploads ? "uploads" : "versions");
        for (size_t i = 0; rc == 0 && i < json_array_size(arr) && i < CLEAN_PAGE; i++)
            rc = clean_queue(b, h, cb, bucket, l, json_array_get(arr, i), &last);
        clean_batch_run(b, cb, bucket);
        const char *nk = json_string_value(json_object_get(page, "next_key_marker"));
        const char *ni = json_string_value(json_object_get(page, l->next_id));
        int more = rc == 0 && json_is_true(json_object_get(page, "is_truncated")) && nk;
        free(km);
        free(im);
        km = more ? strdup(nk) : NULL;
        /* A "null" marker names a version we just deleted, which the view
         * refuses (it looks the null version up); the key marker alone
         * resumes after the key, and a null version is an unversioned
         * key's only one. Anything it skipped would show in the next pass. */
        im = more && ni && *ni && strcmp(ni, "null") != 0 ? strdup(ni) : NULL;
        json_decref(page);
        if (rc < 0)
            fprintf(stderr, "objlog: bench: out of memory\n");
        if (!more)
            break;
    }
    free(km);
    free(im);
    free(last);
    return rc;
}

/* DELETE the bucket: 0 removed, 1 gone already, 2 not empty (why says
 * what remains), -1 any other failure (why says it). */
static int clean_bucket_delete(bench *b, CURL *h, const char *bucket, char *why,
                               size_t wn) {
    char url[512], err[256], code[64], msg[256];
    snprintf(url, sizeof(url), "%s/v1/buckets/%s", b->url, bucket);
    cli_resp r;
    if (clean_http(h, "DELETE", url, &r, err, sizeof(err)) < 0) {
        snprintf(why, wn, "%s", err);
        return -1;
    }
    long st = r.status;
    cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
    cli_resp_free(&r);
    if (st == 200)
        return 0;
    if (!strcmp(code, "NoSuchBucket"))
        return 1;
    snprintf(why, wn, "%s: %s", code, msg);
    return !strcmp(code, "BucketNotEmpty") ? 2 : -1;
}

/* Empties and removes one bucket. 0 (removed, or already gone), or -1
 * after naming it and why on stderr. */
static int clean_bucket(bench *b, CURL *h, clean_batch *cb, const char *bucket) {
    char why[600] = "";
    for (int pass = 0; pass < CLEAN_PASSES; pass++) {
        int rc = clean_walk(b, h, cb, bucket, &clean_versions);
        if (rc == 0)
            rc = clean_walk(b, h, cb, bucket, &clean_uploads);
        if (rc == 1)
            return 0;
        if (rc < 0) {
            fprintf(stderr, "objlog: bench: could not remove bucket %s (listing it "
                    "failed)\n", bucket);
            return -1;
        }
        rc = clean_bucket_delete(b, h, bucket, why, sizeof(why));
        if (rc == 0)
            cb->count.buckets++;
        if (rc == 0 || rc == 1)
            return 0;
        if (rc < 0)
            break;
    }
    fprintf(stderr, "objlog: bench: could not remove bucket %s: %s%s%s\n", bucket, why,
            cb->failed ? "; first failed delete: " : "", cb->failed ? cb->first_error : "");
    return -1;
}

/* The one line that says what went: "removed 3 buckets (12,345 objects,
 * 40 versions) from URL", or "removed 2 of 3 buckets ..." when some are
 * left (each named above it). */
static void clean_say(const bench *b, const clean_count *n, int left) {
    char bk[32], all[32], ob[32], ve[32], ma[32], up[32], of[48] = "", dm[64] = "",
        mpu[64] = "";
    if (left)
        snprintf(of, sizeof(of), " of %s", grouped(b->n_created, all, sizeof(all)));
    if (n->markers)
        snprintf(dm, sizeof(dm), ", %s delete markers", grouped(n->markers, ma, sizeof(ma)));
    if (n->uploads)
        snprintf(mpu, sizeof(mpu), ", %s uploads", grouped(n->uploads, up, sizeof(up)));
    fprintf(stderr, "objlog: bench: removed %s%s %s (%s objects, %s versions%s%s) from %s\n",
            grouped(n->buckets, bk, sizeof(bk)), of,
            cli_plural((size_t)(left ? b->n_created : n->buckets), "bucket", "buckets"),
            grouped(n->objects, ob, sizeof(ob)), grouped(n->versions, ve, sizeof(ve)), dm, mpu,
            b->url);
}

/* Removes every bucket b->created names, with what is in it, and says so
 * in one line. A CLI exit code. */
int bench_clean(bench *b) {
    clean_batch *cb = calloc(1, sizeof(*cb));
    CURL *h = curl_easy_init();
    int ok = cb && h, left = 0;
    for (int i = 0; ok && i < CLEAN_CONNS; i++)
        ok = (cb->h[i] = curl_easy_init()) != NULL;
    if (ok) {
        cb->t0 = bench_mono_us();
        for (int i = 0; i < b->n_created; i++)
            left += clean_bucket(b, h, cb, b->created[i]) < 0;
        clean_say(b, &cb->count, left);
    } else {
        fprintf(stderr, "objlog: bench: out of memory: the bench's buckets are left on %s\n",
                b->url);
        left = b->n_created;
    }
    for (int i = 0; cb && i < CLEAN_CONNS; i++)
        if (cb->h[i])
            curl_easy_cleanup(cb->h[i]);
    if (h)
        curl_easy_cleanup(h);
    free(cb);
    return left ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
