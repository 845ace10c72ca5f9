/* s3stream.c: a PutObject or UploadPart whose body streams (a body over
 * HTTP_STREAM_MIN, conn.c): the bytes go to the blob store as they arrive,
 * their MD5 (the ETag), the signed payload hash and any x-amz-checksum-*
 * computed on the way, so no body is ever held whole; S3's single PUT
 * limit (5 GiB) is the only bound. Once the last byte is in, the write
 * goes to the gateway as a PUT read whole would.
 *
 * Invariant: everything that can be refused from the head (metadata,
 * tags, the upload's part number, the size) is refused before a byte is
 * taken; a body that does not arrive whole, or whose digests do not
 * match, leaves no blob and writes nothing. */
#include "core.h"
#include "read.h"
#include "s3.h"
#include "server.h"
#include "write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "objlog_logger.h"

#define S3_PUT_MAX (5ULL << 30) /* S3's largest single PUT */

typedef struct s3_up {
    http_ctx c;                  /* the request's, answered once the body is in */
    char bucket[64];
    char *key;
    size_t key_len;
    int part;                    /* UploadPart, else PutObject */
    char upload_id[64];
    uint32_t part_number;
    blob_put *p;                 /* NULL: a frontend keeps the bytes (--s3-blob-url) */
    EVP_MD_CTX *md5, *sha;
    int check_sha;               /* the client signed the payload's SHA-256 */
    s3_sum sum;
    uint64_t got;
    int write_errno;             /* the blob store's, when it failed */
    char err[512];
    /* PutObject's metadata, read from the head (its strings are the
     * request's headers, alive until the answer) */
    objlog_object_meta meta;
    objlog_user_meta um[S3_USER_META_MAX];
    char names[S3_USER_META_MAX][256];
    s3_tags tags;
    int have_tags;
} s3_up;

static void s3_up_free(s3_up *u) {
    blob_put_drop(u->p);
    EVP_MD_CTX_free(u->md5);
    EVP_MD_CTX_free(u->sha);
    s3_sum_free(&u->sum);
    if (u->have_tags)
        s3_tags_free(&u->tags);
    free(u->key);
    free(u);
}

static int s3_up_data(void *arg, const void *p, size_t n) {
    s3_up *u = arg;
    u->got += n;
    EVP_DigestUpdate(u->md5, p, n);
    if (!u->p) /* else the blob's id is this very SHA-256 */
        EVP_DigestUpdate(u->sha, p, n);
    s3_sum_update(&u->sum, p, n);
    if (u->p && blob_put_write(u->p, p, n, u->err, sizeof(u->err)) < 0) {
        u->write_errno = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

static void s3_hex(const unsigned char *d, unsigned n, char *out) {
    for (unsigned i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* The body did not come whole, or the blob store failed under it. */
static void s3_up_failed(s3_up *u) {
    http_ctx *c = &u->c;
    if (u->write_errno == ENOSPC || u->write_errno == EDQUOT)
        http_reply_error(c, 507, "InsufficientStorage",
                         "the disk under %s is full, the bytes were not kept and nothing was "
                         "written: %s", blobstore_dir(c->q->s3->blobs), u->err);
    else if (u->write_errno)
        http_reply_error(c, 500, "InternalError", "the blob store could not keep the bytes: %s",
                         u->err);
    else
        http_reply_error(c, 400, "IncompleteBody",
                         "You did not provide the number of bytes specified by the "
                         "Content-Length HTTP header (%llu of %s)", (unsigned long long)u->got,
                         s3_header(c, "Content-Length"));
}

/* The digests judged, the blob kept pending: 0 with etag and id, or -1
 * after replying. */
static int s3_up_finish(s3_up *u, char *etag, char *id, char *sum, size_t sum_n, char *sum_h,
                        size_t sum_hn) {
    http_ctx *c = &u->c;
    unsigned char md5[EVP_MAX_MD_SIZE], sha[EVP_MAX_MD_SIZE];
    unsigned n5 = 0, ns = 0;
    EVP_DigestFinal_ex(u->md5, md5, &n5);
    s3_hex(md5, n5, etag);
    if (s3_check_content_md5(c, md5) < 0)
        return -1;
    char hex[65];
    id[0] = '\0';
    uint64_t size;
    if (u->p && blob_put_finish(u->p, id, &size, u->err, sizeof(u->err)) < 0) {
        u->write_errno = errno ? errno : EIO;
        s3_up_failed(u);
        return -1;
    }
    if (u->p) {
        memcpy(hex, id, sizeof(hex));
    } else {
        EVP_DigestFinal_ex(u->sha, sha, &ns);
        s3_hex(sha, ns, hex);
    }
    if (u->check_sha && strcasecmp(hex, s3_header(c, "x-amz-content-sha256")) != 0) {
        http_reply_error(c, 400, "XAmzContentSHA256Mismatch",
                         "The provided 'x-amz-content-sha256' header does not match what was "
                         "computed.");
        return -1;
    }
    if (s3_sum_end(c, NULL, &u->sum, sum, sum_n, sum_h, sum_hn) < 0)
        return -1;
    if (!u->p && !s3_header(c, "x-objlog-blob-id"))
        memcpy(id, hex, sizeof(hex)); /* the redirect's {blob_id} */
    return 0;
}

static void s3_up_end(void *arg, int rc) {
    s3_up *u = arg;
    http_ctx *c = &u->c;
    char etag[33], id[BLOB_ID_LEN + 1], sum[96], sum_h[48];
    if (rc < 0) {
        s3_up_failed(u);
    } else if (s3_up_finish(u, etag, id, sum, sizeof(sum), sum_h, sizeof(sum_h)) == 0) {
        if (*sum) /* S3 echoes it */
            http_add_header(c, sum_h, strchr(sum, ':') + 1);
        if (u->p) { /* the answer keeps or drops it (s3blob.c) */
            s3_blob_settle_on_answer(c, u->p);
            u->p = NULL;
        }
        if (u->part) {
            c->op = S3_OP_UPLOAD_PART;
            gateway_upload_part_meta(c, u->bucket, (const uint8_t *)u->key, u->key_len,
                                     u->upload_id, u->part_number, u->got, etag,
                                     *id ? id : s3_header(c, "x-objlog-blob-id"));
        } else {
            u->meta.size = u->got;
            u->meta.etag = etag;
            u->meta.checksum = *sum ? sum : NULL;
            if (*id)
                u->meta.blob_id = id;
            c->op = S3_OP_PUT_OBJECT;
            gateway_put_object_meta(c, u->bucket, (const uint8_t *)u->key, u->key_len,
                                    &u->meta);
        }
    }
    s3_up_free(u);
}

/* A bucket this node knows is not there is refused before its body is
 * read (the state machine would refuse the write after it all came):
 * 0, or -1 after replying. Where the key's partition is applied elsewhere,
 * the write decides. */
static int s3_up_bucket(http_ctx *c, const s3_request *r) {
    int32_t part;
    if (read_key_partition(c, r->bucket, (const uint8_t *)r->key, r->key_len, &part) < 0)
        return -1;
    if (!objlog_materializer_applies(c->q->m, part))
        return 0;
    view *v = view_open(c->q->store);
    if (!v)
        return 0;
    view_bucket b;
    char err[256];
    view_rc rc = view_get_bucket(v, r->bucket, &b, err, sizeof(err));
    view_close(v);
    if (rc == VIEW_OK)
        view_bucket_free(&b);
    if (rc != VIEW_NO_SUCH_BUCKET)
        return 0;
    read_reply_rc(c, rc, r->bucket, err);
    return -1;
}

/* What can be refused from the head alone: 0, or -1 after replying. */
static int s3_up_check(http_ctx *c, const s3_request *r, http_stream *st) {
    const char *sha = s3_header(c, "x-amz-content-sha256");
    if (http_stream_length(st) > S3_PUT_MAX) {
        http_reply_error(c, 400, "EntityTooLarge",
                         "Your proposed upload exceeds the maximum allowed size (5 GiB in one "
                         "PUT; larger objects go in a multipart upload)");
        return -1;
    }
    if (sha && strncmp(sha, "STREAMING-", 10) == 0) { /* read whole (s3.c): not here */
        http_reply_error(c, 500, "InternalError", "an aws-chunked body was streamed");
        return -1;
    }
    if (!c->q->s3->blobs && !c->q->s3->blob_url) {
        http_reply_error(c, 501, "NotImplemented",
                         "this endpoint keeps no object bytes: start objlogd with --blob-dir "
                         "DIR (or --s3-blob-url TEMPLATE where a frontend keeps them)");
        return -1;
    }
    if (c->q->s3->blobs && s3_header(c, "x-objlog-blob-id")) {
        http_reply_error(c, 400, "InvalidArgument",
                         "x-objlog-blob-id: this endpoint keeps the bytes and names each blob id "
                         "itself");
        return -1;
    }
    return s3_up_bucket(c, r);
}

/* The request's copy and the digests; NULL after replying. */
static s3_up *s3_up_new(http_ctx *c, const s3_request *r) {
    s3_up *u = calloc(1, sizeof(*u));
    const char *sha = s3_header(c, "x-amz-content-sha256");
    if (!u || !(u->key = malloc(r->key_len + 1)) || !(u->md5 = EVP_MD_CTX_new()) ||
        !(u->sha = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(u->md5, EVP_md5(), NULL) ||
        !EVP_DigestInit_ex(u->sha, EVP_sha256(), NULL)) {
        if (u)
            s3_up_free(u);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return NULL;
    }
    u->sum.alg = -1;
    if (s3_sum_begin(c, NULL, &u->sum) < 0) {
        s3_up_free(u);
        return NULL;
    }
    u->c = *c;
    u->c.params = NULL; /* freed with the route's; everything needed is copied here */
    u->c.nparams = 0;
    snprintf(u->bucket, sizeof(u->bucket), "%s", r->bucket);
    memcpy(u->key, r->key, r->key_len);
    u->key[r->key_len] = '\0';
    u->key_len = r->key_len;
    u->check_sha = sha && strlen(sha) == 64; /* else UNSIGNED-PAYLOAD, or unsigned */
    return u;
}

/* Takes the stream: the blob begins, the bytes flow. */
static void s3_up_start(s3_up *u, http_stream *st) {
    blobstore *bs = u->c.q->s3->blobs;
    if (bs && !(u->p = blob_put_begin(bs, u->err, sizeof(u->err)))) {
        u->write_errno = errno ? errno : EIO;
        s3_up_failed(u);
        s3_up_free(u);
        return;
    }
    http_stream_start(st, s3_up_data, s3_up_end, u);
}

void s3_stream_put_object(http_ctx *c, const s3_request *r, http_stream *st) {
    if (s3_up_check(c, r, st) < 0)
        return;
    s3_up *u = s3_up_new(c, r);
    if (!u)
        return;
    if (s3_object_meta(&u->c, &u->meta, u->um, u->names) < 0) {
        s3_up_free(u);
        return;
    }
    u->have_tags = 1; /* freed whatever the parse returns */
    if (s3_tags_parse(&u->c, &u->tags, &u->meta) < 0) {
        s3_up_free(u);
        return;
    }
    s3_up_start(u, st);
}

void s3_stream_upload_part(http_ctx *c, const s3_request *r, http_stream *st,
                           const char *upload_id, uint32_t part_number) {
    if (s3_up_check(c, r, st) < 0)
        return;
    s3_up *u = s3_up_new(c, r);
    if (!u)
        return;
    u->part = 1;
    if (strlen(upload_id) >= sizeof(u->upload_id)) { /* no id objlog gave */
        http_reply_error(&u->c, 404, "NoSuchUpload", "The specified upload does not exist.");
        s3_up_free(u);
        return;
    }
    snprintf(u->upload_id, sizeof(u->upload_id), "%s", upload_id);
    u->part_number = part_number;
    s3_up_start(u, st);
}
