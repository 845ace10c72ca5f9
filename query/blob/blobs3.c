/* blobs3.c: blobs kept in an S3-compatible store (objlogd --blob-s3 URL):
 * blob id is the object key under the URL's bucket; every request is one
 * libcurl transfer signed with its SigV4 (CURLOPT_AWS_SIGV4), streaming a
 * file up (CURLOPT_READDATA) or down into a file descriptor, so no blob is
 * ever held in memory.
 *
 * Invariant: a PUT carries the blob's SHA-256 as its signed payload hash,
 * so the store refuses bytes that are not the blob's; a GET checks the
 * length it got against the range it asked. Transfers block their caller
 * (a worker at a write's finish or a read, as the local backend's fsync
 * does); they time out after BLOBS3_TIMEOUT_S. */
#define _GNU_SOURCE
#include "blobs3.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "secretfile.h"

#define BLOBS3_TIMEOUT_S 600
#define BLOBS3_EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct blobs3 {
    char *url;                   /* no trailing '/' */
    char userpwd[512];           /* KEY:SECRET, wiped at free */
    char sigv4[128];             /* aws:amz:REGION:s3 */
};

static int blobs3_creds(blobs3 *s, const char *path, int allow_open, char *errstr, size_t n) {
    unsigned mode;
    FILE *f = secretfile_open(path, allow_open, &mode, errstr, n);
    if (!f)
        return -1;
    char line[600], key[200] = "", secret[300] = "", region[64] = "";
    int got = 0;
    while (!got && fgets(line, sizeof(line), f)) {
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
            continue;
        got = sscanf(line, "%199s %299s %63s", key, secret, region) >= 2;
    }
    fclose(f);
    OPENSSL_cleanse(line, sizeof(line));
    if (!got) {
        snprintf(errstr, n, "%s: no line \"ACCESS_KEY_ID SECRET [REGION]\"", path);
        return -1;
    }
    snprintf(s->userpwd, sizeof(s->userpwd), "%s:%s", key, secret);
    snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", region[0] ? region : "us-east-1");
    OPENSSL_cleanse(secret, sizeof(secret));
    return 0;
}

blobs3 *blobs3_new(const char *url, const char *creds, int allow_open, char *errstr,
                   size_t errstr_size) {
    size_t un = url ? strlen(url) : 0;
    if (un < 10 || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
        !strchr(strstr(url, "://") + 3, '/') || url[un - 1] == '/') {
        snprintf(errstr, errstr_size, "--blob-s3 '%s': an http(s)://HOST[:PORT]/BUCKET URL",
                 url ? url : "");
        return NULL;
    }
    blobs3 *s = calloc(1, sizeof(*s));
    if (!s || !(s->url = strdup(url))) {
        free(s);
        snprintf(errstr, errstr_size, "blob store: out of memory");
        return NULL;
    }
    if (blobs3_creds(s, creds, allow_open, errstr, errstr_size) < 0) {
        blobs3_free(s);
        return NULL;
    }
    return s;
}

void blobs3_free(blobs3 *s) {
    if (!s)
        return;
    OPENSSL_cleanse(s->userpwd, sizeof(s->userpwd));
    free(s->url);
    free(s);
}

const char *blobs3_url(const blobs3 *s) { return s->url; }

/* A transfer of blob id: the handle set up (URL, signature, timeouts) and
 * the payload hash header; NULL out of memory. */
static CURL *blobs3_handle(blobs3 *s, const char *id, const char *payload_sha,
                           struct curl_slist **hl) {
    char url[4200], h[128];
    CURL *c = curl_easy_init();
    snprintf(url, sizeof(url), "%s/%s", s->url, id);
    snprintf(h, sizeof(h), "x-amz-content-sha256: %s", payload_sha);
    *hl = curl_slist_append(NULL, h);
    if (!c || !*hl) {
        curl_easy_cleanup(c);
        curl_slist_free_all(*hl);
        return NULL;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, s->sigv4);
    curl_easy_setopt(c, CURLOPT_USERPWD, s->userpwd);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hl);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)BLOBS3_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    return c;
}

/* Runs c: the HTTP status, or -1 with errstr (curl's reason). */
static long blobs3_run(CURL *c, struct curl_slist *hl, const char *what, const char *id,
                       char *errstr, size_t n) {
    CURLcode rc = curl_easy_perform(c);
    long status = -1;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    else
        snprintf(errstr, n, "blob store: %s %s: %s", what, id, curl_easy_strerror(rc));
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    return status;
}

static int blobs3_status_error(long status, const char *what, const char *id, char *errstr,
                               size_t n) {
    snprintf(errstr, n, "blob store: %s %s: the store answered HTTP %ld", what, id, status);
    return -1;
}

/* Answers are small (errors): kept out of the caller's stream. */
static size_t blobs3_discard(char *p, size_t sz, size_t nm, void *arg) {
    (void)p, (void)arg;
    return sz * nm;
}

int blobs3_put_file(blobs3 *s, const char *id, const char *path, char *errstr, size_t n) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) < 0) {
        snprintf(errstr, n, "blob store: open %s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    struct curl_slist *hl;
    CURL *c = blobs3_handle(s, id, id, &hl);
    if (!c) {
        fclose(f);
        snprintf(errstr, n, "blob store: out of memory");
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READDATA, f);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, blobs3_discard);
    long status = blobs3_run(c, hl, "PUT", id, errstr, n);
    fclose(f);
    if (status < 0)
        return -1;
    return status == 200 ? 0 : blobs3_status_error(status, "PUT", id, errstr, n);
}

typedef struct blobs3_sink {
    int fd;
    uint64_t got;
    int failed;                  /* errno of a failed write */
} blobs3_sink;

static size_t blobs3_write(char *p, size_t sz, size_t nm, void *arg) {
    blobs3_sink *k = arg;
    size_t n = sz * nm, done = 0;
    while (done < n) {
        ssize_t w = write(k->fd, p + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            k->failed = errno;
            return 0; /* curl stops: CURLE_WRITE_ERROR */
        }
        done += (size_t)w;
    }
    k->got += n;
    return n;
}

int blobs3_get(blobs3 *s, const char *id, uint64_t off, uint64_t len, int fd, char *errstr,
               size_t n) {
    struct curl_slist *hl;
    CURL *c = blobs3_handle(s, id, BLOBS3_EMPTY_SHA, &hl);
    if (!c) {
        snprintf(errstr, n, "blob store: out of memory");
        return -1;
    }
    char range[64];
    snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)off,
             (unsigned long long)(off + len - 1));
    blobs3_sink k = {.fd = fd};
    curl_easy_setopt(c, CURLOPT_RANGE, range);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, blobs3_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &k);
    long status = blobs3_run(c, hl, "GET", id, errstr, n);
    if (k.failed) {
        snprintf(errstr, n, "blob store: GET %s: spooling: %s", id, strerror(k.failed));
        return -1;
    }
    if (status == 404)
        return 1;
    if (status < 0)
        return -1;
    if (status != 206 && !(status == 200 && off == 0))
        return blobs3_status_error(status, "GET", id, errstr, n);
    if (k.got != len) {
        snprintf(errstr, n, "blob store: GET %s: %llu bytes, not %llu", id,
                 (unsigned long long)k.got, (unsigned long long)len);
        return -1;
    }
    return 0;
}

int blobs3_stat(blobs3 *s, const char *id, uint64_t *size, char *errstr, size_t n) {
    struct curl_slist *hl;
    CURL *c = blobs3_handle(s, id, BLOBS3_EMPTY_SHA, &hl);
    if (!c) {
        snprintf(errstr, n, "blob store: out of memory");
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    CURLcode rc = curl_easy_perform(c);
    long status = -1;
    curl_off_t cl = -1;
    if (rc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    } else {
        snprintf(errstr, n, "blob store: HEAD %s: %s", id, curl_easy_strerror(rc));
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    if (status == 404)
        return 1;
    if (status < 0)
        return -1;
    if (status != 200 || cl < 0)
        return blobs3_status_error(status, "HEAD", id, errstr, n);
    *size = (uint64_t)cl;
    return 0;
}

int blobs3_delete(blobs3 *s, const char *id, char *errstr, size_t n) {
    struct curl_slist *hl;
    CURL *c = blobs3_handle(s, id, BLOBS3_EMPTY_SHA, &hl);
    if (!c) {
        snprintf(errstr, n, "blob store: out of memory");
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, blobs3_discard);
    long status = blobs3_run(c, hl, "DELETE", id, errstr, n);
    if (status < 0)
        return -1;
    return status == 204 || status == 200 || status == 404
               ? 0 : blobs3_status_error(status, "DELETE", id, errstr, n);
}
