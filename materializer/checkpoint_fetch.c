/* checkpoint_fetch.c: a peer's checkpoint of one partition, fetched over
 * HTTP (GET URL/v1/partitions/P/checkpoint, query/cluster/ckptserve.c) and fed to
 * the importer as the bytes arrive (checkpoint.h). Owns one curl easy
 * handle per call; nothing outlives the call.
 *
 * Invariant: the importer sees only the bytes of a 200 answer; any other
 * answer is read (at most FETCH_ERR_MAX bytes, the peer's JSON error) to
 * name what the peer said, and nothing is written to the store for it. */
#include "checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#define FETCH_TIMEOUT_MS_DEFAULT (10 * 60 * 1000)
#define FETCH_CONNECT_TIMEOUT_MS 5000
/* A peer that sends nothing for this long is stuck (or gone). */
#define FETCH_STALL_S 30L
#define FETCH_ERR_MAX 4096

typedef struct fetch_ctx {
    CURL *h;
    const atomic_int *cancel;    /* nonzero: stop the transfer (may be NULL) */
    objlog_ckpt_import *im;
    long status;                 /* 0 until the first body byte */
    int total_set;
    char err[512];               /* the importer's error, when it failed */
    int import_failed;
    char body[FETCH_ERR_MAX + 1]; /* the answer of a non-200 */
    size_t body_len;
} fetch_ctx;

static size_t fetch_write(char *data, size_t size, size_t nmemb, void *arg) {
    fetch_ctx *f = arg;
    size_t n = size * nmemb;
    if (!f->status)
        curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &f->status);
    if (f->status != 200) {
        size_t room = FETCH_ERR_MAX - f->body_len;
        size_t take = n < room ? n : room;
        memcpy(f->body + f->body_len, data, take);
        f->body_len += take;
        f->body[f->body_len] = '\0';
        return n;
    }
    if (!f->total_set) {
        curl_off_t len = -1;
        curl_easy_getinfo(f->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
        objlog_ckpt_import_set_total(f->im, len > 0 ? (uint64_t)len : 0);
        f->total_set = 1;
    }
    if (objlog_ckpt_import_feed(f->im, data, n, f->err, sizeof(f->err)) < 0) {
        f->import_failed = 1;
        return 0; /* curl stops: CURLE_WRITE_ERROR */
    }
    return n;
}

/* libcurl asks about a second: a cancelled fetch ends the transfer. */
static int fetch_xferinfo(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
                          curl_off_t un) {
    (void)dt, (void)dn, (void)ut, (void)un;
    const fetch_ctx *f = arg;
    return f->cancel && atomic_load(f->cancel) ? 1 : 0;
}

/* "CODE: message" of the peer's JSON error, else the start of its body. */
static void fetch_peer_error(const fetch_ctx *f, char *out, size_t n) {
    json_error_t je;
    json_t *j = json_loadb(f->body, f->body_len, 0, &je);
    const char *code = NULL, *msg = NULL;
    json_unpack(j, "{s:{s?s,s?s}}", "error", "code", &code, "message", &msg);
    if (code)
        snprintf(out, n, "%s: %s", code, msg ? msg : "");
    else
        snprintf(out, n, "%.200s", f->body_len ? f->body : "(no body)");
    json_decref(j);
}

int objlog_ckpt_fetch(objlog_store *s, const rangemap *rm, const char *base_url,
                      const struct curl_slist *headers, const char *ca_file, int32_t p,
                      int timeout_ms,
                      objlog_ckpt_progress_fn progress,
                      void *opaque, const atomic_int *cancel, int64_t *applied,
                      char *errstr, size_t errstr_size) {
    char url[1024];
    size_t bl = strlen(base_url);
    while (bl > 0 && base_url[bl - 1] == '/')
        bl--;
    if ((size_t)snprintf(url, sizeof(url), "%.*s/v1/partitions/%d/checkpoint", (int)bl,
                         base_url, p) >= sizeof(url)) {
        snprintf(errstr, errstr_size, "checkpoint URL too long");
        return -1;
    }
    objlog_ckpt_import *im = objlog_ckpt_import_new(s, rm, p, errstr, errstr_size);
    if (!im)
        return -1;
    return objlog_ckpt_fetch_into(im, url, headers, ca_file, timeout_ms, progress, opaque,
                                  cancel, applied, errstr, errstr_size);
}

int objlog_ckpt_fetch_into(objlog_ckpt_import *im, const char *url,
                           const struct curl_slist *headers, const char *ca_file,
                           int timeout_ms, objlog_ckpt_progress_fn progress, void *opaque,
                           const atomic_int *cancel, int64_t *applied, char *errstr,
                           size_t errstr_size) {
    fetch_ctx f = {.h = curl_easy_init(), .cancel = cancel, .im = im};
    if (!f.h) {
        snprintf(errstr, errstr_size, "curl: out of memory");
        objlog_ckpt_import_destroy(f.im);
        return -1;
    }
    objlog_ckpt_import_set_progress(f.im, progress, opaque);
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(f.h, CURLOPT_URL, url);
    curl_easy_setopt(f.h, CURLOPT_HTTPHEADER, headers);
    if (ca_file)
        curl_easy_setopt(f.h, CURLOPT_CAINFO, ca_file);
    curl_easy_setopt(f.h, CURLOPT_WRITEFUNCTION, fetch_write);
    curl_easy_setopt(f.h, CURLOPT_WRITEDATA, &f);
    curl_easy_setopt(f.h, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(f.h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(f.h, CURLOPT_CONNECTTIMEOUT_MS, (long)FETCH_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(f.h, CURLOPT_TIMEOUT_MS,
                     (long)(timeout_ms > 0 ? timeout_ms : FETCH_TIMEOUT_MS_DEFAULT));
    curl_easy_setopt(f.h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(f.h, CURLOPT_LOW_SPEED_TIME, FETCH_STALL_S);
    curl_easy_setopt(f.h, CURLOPT_XFERINFOFUNCTION, fetch_xferinfo);
    curl_easy_setopt(f.h, CURLOPT_XFERINFODATA, &f);
    curl_easy_setopt(f.h, CURLOPT_NOPROGRESS, 0L);
    CURLcode cc = curl_easy_perform(f.h);
    if (!f.status)
        curl_easy_getinfo(f.h, CURLINFO_RESPONSE_CODE, &f.status);
    const objlog_ckpt_progress *pr = objlog_ckpt_import_progress(f.im);
    int rc = -1;
    if (f.import_failed) {
        snprintf(errstr, errstr_size, "checkpoint from %s: %s", url, f.err);
    } else if (cc != CURLE_OK) {
        snprintf(errstr, errstr_size, "checkpoint from %s: %s after %llu of %llu bytes%s%s",
                 url, cc == CURLE_OPERATION_TIMEDOUT ? "timed out"
                      : cc == CURLE_ABORTED_BY_CALLBACK ? "cancelled"
                                                          : "transfer failed",
                 (unsigned long long)pr->bytes, (unsigned long long)pr->total_bytes,
                 cerr[0] ? ": " : "", cerr[0] ? cerr : curl_easy_strerror(cc));
    } else if (f.status != 200) {
        char peer[400];
        fetch_peer_error(&f, peer, sizeof(peer));
        snprintf(errstr, errstr_size, "checkpoint from %s: HTTP %ld: %s", url, f.status, peer);
    } else {
        char why[512];
        rc = objlog_ckpt_import_finish(f.im, applied, why, sizeof(why));
        if (rc < 0)
            snprintf(errstr, errstr_size, "checkpoint from %s: %s", url, why);
    }
    /* An import that neither finished nor failed is abandoned (purged) here. */
    objlog_ckpt_import_destroy(f.im);
    curl_easy_cleanup(f.h);
    return rc;
}
