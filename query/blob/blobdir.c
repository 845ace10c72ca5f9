/* blobdir.c: the blob store's local backend, a content-addressed
 * directory (layout and recovery: blob.h), and the spool of its remote
 * one (blobs3.c): with --blob-s3 a write's bytes arrive here the same way,
 * and its finished, fsynced pending file goes up to the S3 store before
 * the write is answered (and is then removed here); a read comes down
 * into an unlinked file of .tmp that the answer sends.
 *
 * Invariant: a file under DIR/ab/ is complete and fsynced, and its name is
 * the SHA-256 of its bytes; it appears there only by link(2) from a
 * fsynced pending file, so a crash leaves either no blob or a whole one.
 * Nothing here deletes a readable blob but blob_delete and a collection
 * round, both under the store's lock held exclusive, which every link of
 * a kept write into DIR/ab/ holds shared (the round's rule: blob.h). */
#define _GNU_SOURCE
#include "blob.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "blobs3.h"
#include "objlog_logger.h"

struct blobstore {
    char *dir;
    blobs3 *remote;              /* --blob-s3: where the blobs live; dir spools */
    pthread_rwlock_t lock;       /* keeps shared, a collection round exclusive */
};

struct blob_put {
    blobstore *bs;
    int fd;
    EVP_MD_CTX *sha;
    uint64_t size;
    char nonce[33];
    char tmp[4096];              /* DIR/.tmp/<nonce> while bytes arrive */
    char pending[4096];          /* DIR/.pending/<id>.<nonce> once finished */
    char id[BLOB_ID_LEN + 1];
    int finished;
    int uploaded;                /* remote: in the S3 store, pending removed */
};

/* errno survives: a caller tells a full disk from other failures. */
static int blob_fail(char *errstr, size_t n, const char *what, const char *path) {
    int e = errno;
    snprintf(errstr, n, "blob store: %s %s: %s", what, path, strerror(e));
    errno = e;
    return -1;
}

static int blob_fsync_dir(const char *dir, char *errstr, size_t n) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return blob_fail(errstr, n, "open", dir);
    int rc = fsync(fd);
    close(fd);
    return rc < 0 ? blob_fail(errstr, n, "fsync", dir) : 0;
}

static int blob_mkdir(const char *path, char *errstr, size_t n) {
    if (mkdir(path, 0750) == 0 || errno == EEXIST)
        return 0;
    return blob_fail(errstr, n, "mkdir", path);
}

int blob_id_valid(const char *id) {
    if (!id || strlen(id) != BLOB_ID_LEN)
        return 0;
    for (const char *c = id; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return 0;
    return 1;
}

static void blob_path(const blobstore *bs, const char *id, char *out, size_t n) {
    snprintf(out, n, "%s/%.2s/%s", bs->dir, id, id);
}

static void blob_subdir(const blobstore *bs, const char *id, char *out, size_t n) {
    snprintf(out, n, "%s/%.2s", bs->dir, id);
}

/* Links pending (named <id>.<nonce>) into place, fsyncs its directory and
 * unlinks it. The same bytes already in place (another write's) are as
 * good: the name is their hash. */
static int blob_promote(blobstore *bs, const char *pending, const char *id, char *errstr,
                        size_t n) {
    char sub[4096], path[4200];
    blob_subdir(bs, id, sub, sizeof(sub));
    blob_path(bs, id, path, sizeof(path));
    if (blob_mkdir(sub, errstr, n) < 0)
        return -1;
    if (link(pending, path) < 0 && errno != EEXIST)
        return blob_fail(errstr, n, "link", path);
    if (blob_fsync_dir(sub, errstr, n) < 0)
        return -1;
    if (unlink(pending) < 0 && errno != ENOENT)
        return blob_fail(errstr, n, "unlink", pending);
    return 0;
}

/* Remote: the pending file goes up to the S3 store, then goes here. */
static int blob_upload(blobstore *bs, const char *pending, const char *id, char *errstr,
                       size_t n) {
    if (blobs3_put_file(bs->remote, id, pending, errstr, n) < 0)
        return -1;
    if (unlink(pending) < 0 && errno != ENOENT)
        return blob_fail(errstr, n, "unlink", pending);
    return 0;
}

/* What a crash left: bytes of unfinished writes (.tmp) go, finished ones
 * (.pending) become readable. Another process may share the directory
 * (the nodes of a cluster on one machine): a .tmp file written in the
 * last BLOB_TMP_STALE_S seconds may be its upload in progress, and stays
 * (a live upload writes more often than that: a stalled one ends at the
 * request timeout). */
#define BLOB_TMP_STALE_S 600
static int blob_recover(blobstore *bs, char *errstr, size_t n) {
    char d[4096], f[4400];
    snprintf(d, sizeof(d), "%s/.tmp", bs->dir);
    DIR *dh = opendir(d);
    if (!dh)
        return blob_fail(errstr, n, "opendir", d);
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(dh));) {
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        snprintf(f, sizeof(f), "%s/%s", d, e->d_name);
        if (stat(f, &st) == 0 && now - st.st_mtime < BLOB_TMP_STALE_S)
            continue;
        unlink(f);
    }
    closedir(dh);
    snprintf(d, sizeof(d), "%s/.pending", bs->dir);
    if (!(dh = opendir(d)))
        return blob_fail(errstr, n, "opendir", d);
    int rc = 0, promoted = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(dh));) {
        char id[BLOB_ID_LEN + 1];
        if (strlen(e->d_name) <= BLOB_ID_LEN || e->d_name[BLOB_ID_LEN] != '.')
            continue;
        memcpy(id, e->d_name, BLOB_ID_LEN);
        id[BLOB_ID_LEN] = '\0';
        if (!blob_id_valid(id))
            continue;
        snprintf(f, sizeof(f), "%s/%s", d, e->d_name);
        rc = bs->remote ? blob_upload(bs, f, id, errstr, n) : blob_promote(bs, f, id, errstr, n);
        promoted += rc == 0;
    }
    closedir(dh);
    if (promoted)
        objlog_logf(OBJLOG_LEVEL_INFO, "blob", "%s: %d blobs of writes in flight at the last "
                    "stop kept", bs->dir, promoted);
    return rc;
}

blobstore *blobstore_open(const char *dir, char *errstr, size_t errstr_size) {
    return blobstore_open_remote(dir, NULL, NULL, 0, errstr, errstr_size);
}

blobstore *blobstore_open_remote(const char *dir, const char *url, const char *creds,
                                 int allow_open, char *errstr, size_t errstr_size) {
    blobstore *bs = calloc(1, sizeof(*bs));
    if (!bs || !(bs->dir = strdup(dir))) {
        free(bs);
        snprintf(errstr, errstr_size, "blob store: out of memory");
        return NULL;
    }
    /* Writers first: a steady stream of keeps must not starve a round. */
    pthread_rwlockattr_t la;
    pthread_rwlockattr_init(&la);
    pthread_rwlockattr_setkind_np(&la, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&bs->lock, &la);
    pthread_rwlockattr_destroy(&la);
    if (url && !(bs->remote = blobs3_new(url, creds, allow_open, errstr, errstr_size))) {
        blobstore_free(bs);
        return NULL;
    }
    char d[4096];
    int rc = blob_mkdir(dir, errstr, errstr_size);
    snprintf(d, sizeof(d), "%s/.tmp", dir);
    if (rc == 0)
        rc = blob_mkdir(d, errstr, errstr_size);
    snprintf(d, sizeof(d), "%s/.pending", dir);
    if (rc == 0)
        rc = blob_mkdir(d, errstr, errstr_size);
    if (rc == 0)
        rc = blob_recover(bs, errstr, errstr_size);
    if (rc < 0) {
        blobstore_free(bs);
        return NULL;
    }
    return bs;
}

void blobstore_free(blobstore *bs) {
    if (!bs)
        return;
    blobs3_free(bs->remote);
    pthread_rwlock_destroy(&bs->lock);
    free(bs->dir);
    free(bs);
}

const char *blobstore_remote(const blobstore *bs) {
    return bs->remote ? blobs3_url(bs->remote) : NULL;
}

const char *blobstore_dir(const blobstore *bs) { return bs->dir; }

/* ------------------------------------------------------------- writing */

/* p's nonce: 32 random hex digits. 0 or -1. */
static int blob_nonce(blob_put *p) {
    unsigned char r[16];
    if (RAND_bytes(r, sizeof(r)) != 1)
        return -1;
    for (int i = 0; i < 16; i++)
        snprintf(p->nonce + 2 * i, 3, "%02x", r[i]);
    return 0;
}

blob_put *blob_put_begin(blobstore *bs, char *errstr, size_t errstr_size) {
    blob_put *p = calloc(1, sizeof(*p));
    if (!p || !(p->sha = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(p->sha, EVP_sha256(), NULL) ||
        blob_nonce(p) < 0) {
        if (p)
            EVP_MD_CTX_free(p->sha);
        free(p);
        snprintf(errstr, errstr_size, "blob store: out of memory");
        return NULL;
    }
    p->bs = bs;
    snprintf(p->tmp, sizeof(p->tmp), "%s/.tmp/%s", bs->dir, p->nonce);
    p->fd = open(p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (p->fd < 0) {
        blob_fail(errstr, errstr_size, "create", p->tmp);
        EVP_MD_CTX_free(p->sha);
        free(p);
        return NULL;
    }
    return p;
}

int blob_put_write(blob_put *p, const void *data, size_t n, char *errstr, size_t errstr_size) {
    const char *c = data;
    if (!EVP_DigestUpdate(p->sha, data, n)) {
        snprintf(errstr, errstr_size, "blob store: sha256 failed");
        return -1;
    }
    while (n) {
        ssize_t w = write(p->fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return blob_fail(errstr, errstr_size, "write", p->tmp);
        c += w;
        n -= (size_t)w;
        p->size += (uint64_t)w;
    }
    return 0;
}

int blob_put_finish(blob_put *p, char *id, uint64_t *size, char *errstr, size_t errstr_size) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdn = 0;
    if (!EVP_DigestFinal_ex(p->sha, md, &mdn) || mdn != 32) {
        snprintf(errstr, errstr_size, "blob store: sha256 failed");
        return -1;
    }
    for (unsigned i = 0; i < mdn; i++)
        snprintf(p->id + 2 * i, 3, "%02x", md[i]);
    if (fsync(p->fd) < 0)
        return blob_fail(errstr, errstr_size, "fsync", p->tmp);
    snprintf(p->pending, sizeof(p->pending), "%s/.pending/%s.%s", p->bs->dir, p->id, p->nonce);
    if (rename(p->tmp, p->pending) < 0)
        return blob_fail(errstr, errstr_size, "rename", p->tmp);
    p->finished = 1;
    char d[4096];
    snprintf(d, sizeof(d), "%s/.pending", p->bs->dir);
    if (blob_fsync_dir(d, errstr, errstr_size) < 0)
        return -1;
    if (p->bs->remote) {
        if (blob_upload(p->bs, p->pending, p->id, errstr, errstr_size) < 0)
            return -1;
        p->uploaded = 1;
    }
    memcpy(id, p->id, BLOB_ID_LEN + 1);
    *size = p->size;
    return 0;
}

static void blob_put_free(blob_put *p) {
    if (p->fd >= 0)
        close(p->fd);
    EVP_MD_CTX_free(p->sha);
    free(p);
}

/* Shared lock: a collection round in progress finishes first, so a blob
 * it unlinked comes back from these bytes (blob.h, the round's rule). */
int blob_put_keep(blob_put *p, char *errstr, size_t errstr_size) {
    int rc = 0;
    if (!p->uploaded) {
        pthread_rwlock_rdlock(&p->bs->lock);
        rc = blob_promote(p->bs, p->pending, p->id, errstr, errstr_size);
        pthread_rwlock_unlock(&p->bs->lock);
    }
    blob_put_free(p);
    return rc;
}

/* An uploaded blob stays in the S3 store: the same bytes may be another
 * write's there (the store's collector finds what no version names). */
void blob_put_drop(blob_put *p) {
    if (!p)
        return;
    if (!p->uploaded)
        unlink(p->finished ? p->pending : p->tmp);
    blob_put_free(p);
}

/* ------------------------------------------------------------- reading */

/* The blob's file open for reading (fd, its size): 0, 1 absent, -1. */
static int blob_open(blobstore *bs, const char *id, int *fd, uint64_t *size, char *errstr,
                     size_t n) {
    char path[4200];
    if (!blob_id_valid(id)) {
        snprintf(errstr, n, "blob store: \"%s\" is not a blob id", id ? id : "");
        return -1;
    }
    blob_path(bs, id, path, sizeof(path));
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return errno == ENOENT ? 1 : blob_fail(errstr, n, "open", path);
    struct stat st;
    if (fstat(*fd, &st) < 0) {
        blob_fail(errstr, n, "stat", path);
        close(*fd);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return 0;
}

/* Remote: the range comes down into an unlinked file of .tmp, which the
 * answer sends as a file segment (never held in memory). */
static int blob_get_remote(blobstore *bs, const char *id, uint64_t off, uint64_t len,
                           struct evbuffer *out, char *errstr, size_t n) {
    char d[4096];
    snprintf(d, sizeof(d), "%s/.tmp", bs->dir);
    int fd = open(d, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
    if (fd < 0)
        return blob_fail(errstr, n, "create a file in", d);
    int rc = blobs3_get(bs->remote, id, off, len, fd, errstr, n);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    if (evbuffer_add_file(out, fd, 0, (ev_off_t)len) < 0) { /* owns fd */
        snprintf(errstr, n, "blob store: cannot send blob %s", id);
        return -1;
    }
    return 0;
}

int blob_get(blobstore *bs, const char *id, uint64_t off, uint64_t len, struct evbuffer *out,
             char *errstr, size_t errstr_size) {
    if (bs->remote && !blob_id_valid(id)) {
        snprintf(errstr, errstr_size, "blob store: \"%s\" is not a blob id", id ? id : "");
        return -1;
    }
    if (bs->remote)
        return len ? blob_get_remote(bs, id, off, len, out, errstr, errstr_size)
                   : blob_stat(bs, id, &(uint64_t){0}, errstr, errstr_size);
    int fd;
    uint64_t size;
    int rc = blob_open(bs, id, &fd, &size, errstr, errstr_size);
    if (rc != 0)
        return rc;
    if (off > size || len > size - off) {
        snprintf(errstr, errstr_size, "blob store: blob %s has %llu bytes, not %llu", id,
                 (unsigned long long)size, (unsigned long long)(off + len));
        close(fd);
        return -1;
    }
    if (len == 0) {
        close(fd);
        return 0;
    }
    /* evbuffer_add_file owns fd from here, even when it fails */
    if (evbuffer_add_file(out, fd, (ev_off_t)off, (ev_off_t)len) < 0) {
        snprintf(errstr, errstr_size, "blob store: cannot send blob %s", id);
        return -1;
    }
    return 0;
}

int blob_stat(blobstore *bs, const char *id, uint64_t *size, char *errstr, size_t errstr_size) {
    if (bs->remote && blob_id_valid(id))
        return blobs3_stat(bs->remote, id, size, errstr, errstr_size);
    int fd;
    int rc = blob_open(bs, id, &fd, size, errstr, errstr_size);
    if (rc == 0)
        close(fd);
    return rc;
}

int blob_delete(blobstore *bs, const char *id, char *errstr, size_t errstr_size) {
    char path[4200];
    if (!blob_id_valid(id)) {
        snprintf(errstr, errstr_size, "blob store: \"%s\" is not a blob id", id ? id : "");
        return -1;
    }
    if (bs->remote)
        return blobs3_delete(bs->remote, id, errstr, errstr_size);
    blob_path(bs, id, path, sizeof(path));
    pthread_rwlock_wrlock(&bs->lock);
    int rc = unlink(path) < 0 && errno != ENOENT ? blob_fail(errstr, errstr_size, "unlink", path)
                                                 : 0;
    pthread_rwlock_unlock(&bs->lock);
    return rc;
}

/* ------------------------------------------------- pins and collection */

int blob_pin(blobstore *bs, const char *id, blob_put **out, char *errstr, size_t errstr_size) {
    char path[4200], d[4096];
    *out = NULL;
    if (!blob_id_valid(id)) {
        snprintf(errstr, errstr_size, "blob store: \"%s\" is not a blob id", id ? id : "");
        return -1;
    }
    if (bs->remote)
        return 0; /* nothing here to hold: no collector deletes from the store */
    blob_put *p = calloc(1, sizeof(*p));
    if (!p || blob_nonce(p) < 0) {
        free(p);
        snprintf(errstr, errstr_size, "blob store: out of memory");
        return -1;
    }
    p->bs = bs;
    p->fd = -1;
    p->finished = 1;
    memcpy(p->id, id, BLOB_ID_LEN + 1);
    snprintf(p->pending, sizeof(p->pending), "%s/.pending/%s.%s", bs->dir, id, p->nonce);
    blob_path(bs, id, path, sizeof(path));
    if (link(path, p->pending) < 0) {
        int absent = errno == ENOENT;
        if (!absent)
            blob_fail(errstr, errstr_size, "link", p->pending);
        blob_put_free(p);
        return absent ? 1 : -1;
    }
    /* Durable before the write's event is produced, as a write's bytes. */
    snprintf(d, sizeof(d), "%s/.pending", bs->dir);
    if (blob_fsync_dir(d, errstr, errstr_size) < 0) {
        int e = errno;
        blob_put_drop(p);
        errno = e;
        return -1;
    }
    *out = p;
    return 0;
}

static int blob_id_cmp(const void *a, const void *b) {
    return memcmp(a, b, BLOB_ID_LEN);
}

/* The ids .pending names now (sorted, BLOB_ID_LEN bytes each, *n of
 * them): malloc'd, or NULL with errstr (an empty list is not NULL). */
static char *blob_pending_ids(blobstore *bs, size_t *n, char *errstr, size_t es) {
    char d[4096];
    snprintf(d, sizeof(d), "%s/.pending", bs->dir);
    DIR *dh = opendir(d);
    if (!dh) {
        blob_fail(errstr, es, "opendir", d);
        return NULL;
    }
    size_t cap = 16;
    char *ids = malloc(cap * BLOB_ID_LEN);
    *n = 0;
    for (struct dirent *e; ids && (e = readdir(dh));) {
        if (strlen(e->d_name) <= BLOB_ID_LEN || e->d_name[BLOB_ID_LEN] != '.')
            continue;
        if (*n == cap) {
            char *m = realloc(ids, 2 * cap * BLOB_ID_LEN);
            if (!m) {
                free(ids);
                ids = NULL;
                break;
            }
            ids = m;
            cap *= 2;
        }
        memcpy(ids + *n * BLOB_ID_LEN, e->d_name, BLOB_ID_LEN);
        (*n)++;
    }
    closedir(dh);
    if (!ids)
        snprintf(errstr, es, "blob store: out of memory");
    else
        qsort(ids, *n, BLOB_ID_LEN, blob_id_cmp);
    return ids;
}

/* One candidate of a round, the lock held: its fate, *size its bytes. */
static blob_gc_fate blob_collect_one(blobstore *bs, const char *id, const char *pending,
                                     size_t npending, const blob_gc_check *chk,
                                     uint64_t *size, char *errstr, size_t es) {
    char path[4200];
    struct stat st;
    if (!blob_id_valid(id)) {
        snprintf(errstr, es, "blob store: \"%s\" is not a blob id", id ? id : "");
        return BLOB_GC_ERROR;
    }
    blob_path(bs, id, path, sizeof(path));
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return BLOB_GC_ABSENT;
        blob_fail(errstr, es, "stat", path);
        return BLOB_GC_ERROR;
    }
    if (bsearch(id, pending, npending, BLOB_ID_LEN, blob_id_cmp))
        return BLOB_GC_PENDING;
    int ref = chk->referenced(chk->arg, id, errstr, es);
    if (ref != 0)
        return ref > 0 ? BLOB_GC_REFERENCED : BLOB_GC_ERROR;
    if (unlink(path) < 0) {
        if (errno == ENOENT)
            return BLOB_GC_ABSENT;
        blob_fail(errstr, es, "unlink", path);
        return BLOB_GC_ERROR;
    }
    *size = (uint64_t)st.st_size;
    return BLOB_GC_DELETED;
}

int blob_collect(blobstore *bs, const char *const *ids, size_t n, const blob_gc_check *chk,
                 blob_gc_fate *fate, uint64_t *freed, char *errstr, size_t errstr_size) {
    *freed = 0;
    errstr[0] = '\0';
    if (bs->remote) {
        snprintf(errstr, errstr_size, "blob store: the remote store's garbage is not "
                 "collected (yet)");
        return -1;
    }
    char err[4608], sub[4096]; /* err: room for a path */
    uint8_t touched[256] = {0}; /* DIR/ab/ directories an unlink changed */
    size_t npending = 0;
    int rc = 0;
    pthread_rwlock_wrlock(&bs->lock);
    char *pending = NULL;
    if ((chk->fence && chk->fence(chk->arg, errstr, errstr_size) < 0) ||
        !(pending = blob_pending_ids(bs, &npending, errstr, errstr_size)))
        rc = -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t size = 0;
        fate[i] = blob_collect_one(bs, ids[i], pending, npending, chk, &size, err, sizeof(err));
        if (fate[i] == BLOB_GC_ERROR && !errstr[0])
            snprintf(errstr, errstr_size, "%.64s: %s", ids[i] ? ids[i] : "", err);
        if (fate[i] == BLOB_GC_DELETED) {
            *freed += size;
            touched[strtoul((char[3]){ids[i][0], ids[i][1], 0}, NULL, 16)] = 1;
        }
    }
    /* The unlinks durable before the caller forgets the candidates (a
     * name back after a crash would never be a candidate again). */
    for (int d = 0; d < 256; d++) {
        if (!touched[d])
            continue;
        snprintf(sub, sizeof(sub), "%s/%02x", bs->dir, d);
        if (blob_fsync_dir(sub, err, sizeof(err)) < 0 && !errstr[0])
            snprintf(errstr, errstr_size, "%s", err);
    }
    pthread_rwlock_unlock(&bs->lock);
    free(pending);
    return rc;
}
