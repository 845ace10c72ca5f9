/* s3.h: the S3 endpoint's own header, included by query/s3/'s files only.
 * The service builds it (s3_conf_*) and listens with its face (s3_face);
 * SigV4 is s3auth.h, which the tests and ops/ use without the server.
 *
 * The files depend one way: s3.c (settings, addressing, auth, the route
 * table) calls the handlers (s3bucket.c, s3object.c, s3write.c, s3lc.c,
 * s3notify.c, s3list.c), and they call the wire helpers (s3wire.c, xmlw.c,
 * s3sum.c); no handler calls back into s3.c. */
#ifndef OBJLOG_QUERY_S3_H
#define OBJLOG_QUERY_S3_H

#include "blob.h"
#include "read.h"
#include "server.h"
#include "write.h"
#include "s3auth.h"
#include "secretfile.h"

/* The endpoint's settings (q->s3): read by every request, written only by
 * s3_conf_new, s3_conf_reload and s3_conf_free (s3.c). */
struct s3_conf {
    char *host;                  /* --s3-listen */
    int port;
    char region[64];
    char domain[256];            /* virtual-hosted style: BUCKET.domain */
    int anonymous;
    char *blob_url;              /* GetObject redirect template, NULL none */
    blobstore *blobs;            /* --blob-dir: where bytes live, NULL none */
    /* --s3-credentials (an s3creds); keys NULL: nothing verified. Swapped
     * whole by s3_conf_reload (SIGHUP); a request holds the read lock only
     * while it checks its signature. */
    secretfile_keys creds;
};

/* What an S3 write's success answers (http_ctx.s3_op). */
enum { S3_OP_NONE, S3_OP_CREATE_BUCKET, S3_OP_DELETE_BUCKET, S3_OP_PUT_VERSIONING,
       S3_OP_PUT_OBJECT, S3_OP_DELETE_OBJECT, S3_OP_CREATE_UPLOAD, S3_OP_UPLOAD_PART,
       S3_OP_COMPLETE_UPLOAD, S3_OP_ABORT_UPLOAD, S3_OP_COPY_OBJECT,
       S3_OP_DELETE_LIFECYCLE, S3_OP_PUT_TAGGING, S3_OP_DELETE_TAGGING, S3_OP_PUT_ACL };

/* What the router hands every handler: the addressed bucket and key, who
 * signed, and the body as signed (an aws-chunked one decoded: decoded set). */
typedef struct s3_request {
    const char *bucket;
    const char *key;             /* NULL for a bucket's sub-resource */
    size_t key_len;
    const uint8_t *body;
    size_t body_len;
    int decoded;
    const char *tenant;          /* the signer's ("" anonymous) */
    const s3auth *auth;          /* how it was signed (its aws-chunked trailer) */
} s3_request;
typedef void s3_handler(http_ctx *c, const s3_request *r);

/* ---- s3wire.c: answers, headers and parameters, as S3 words them ---- */
/* x-amz-request-id, once, on c's answer. */
void s3_add_common(http_ctx *c);
/* Closes root and answers the document (no body for HEAD), with
 * x-amz-request-id; 500 when the writer ran out of memory. */
struct xmlw;
void s3_reply_xml(http_ctx *c, int status, struct xmlw *x, const char *root);
/* An answer with no body (204s, HEAD, PutObject's 200). */
void s3_reply_empty(http_ctx *c, int status);
/* An objlog status and code S3 has no word for, turned into S3's. */
void s3_error_code(int *status, const char **code);
/* etag in double quotes, as S3's ETag header and XML carry it. */
void s3_quoted_etag(const char *etag, char *out, size_t n);
const char *s3_header(http_ctx *c, const char *name);     /* NULL absent */
/* An HTTP date (RFC 1123, as If-Modified-Since carries it) in ms, -1 if
 * not one. */
int64_t s3_http_date(const char *s);
/* max-keys / max-uploads / max-parts: 0..2^31-1, default and cap 1000
 * (S3 answers at most 1000); -1 after 400 InvalidArgument. */
int s3_max_param(http_ctx *c, const char *name, int *out);
/* encoding-type: 0 absent, 1 "url", -1 after 400 InvalidArgument. */
int s3_encoding(http_ctx *c);
/* Content-MD5, when sent, against the body's MD5: 0, or -1 after 400
 * InvalidDigest (not 16 bytes of base64) / BadDigest (another digest). */
int s3_check_content_md5(http_ctx *c, const unsigned char md5[16]);
/* The body's MD5 into md5, checked against Content-MD5 when sent; -1
 * after replying. */
int s3_body_md5(http_ctx *c, const s3_request *r, unsigned char md5[16]);
/* An aws-chunked body the router could not decode (the request was not
 * signed): 0 when the body is readable, else -1 after 501. */
int s3_body_readable(http_ctx *c, const s3_request *r);
/* More headers than this is refused before anything reads them (s3.c):
 * every header a handler reads must have been under the signature check. */
#define S3_MAX_HEADERS 200
/* x-amz-meta-* headers into um (at most S3_USER_META_MAX; names
 * lowercased into names, as S3 keeps them); -1 after 400. S3 bounds user
 * metadata by size (2 KiB, checked by the producer library), not count: as
 * many as a request may have headers at all. */
#define S3_USER_META_MAX S3_MAX_HEADERS
int s3_user_meta(http_ctx *c, objlog_user_meta *um, size_t *n, char names[][256]);
/* x-amz-acl, a canned ACL, into *acl (NULL: none given): 0, or -1 after
 * answering 400 (not a canned ACL) or 501 (x-amz-grant-*: objlog keeps
 * canned ACLs only). */
int s3_acl_header(http_ctx *c, const char **acl);
/* A new object's metadata from the request's headers (Content-Type,
 * x-objlog-blob-id, x-amz-storage-class, x-amz-meta-* into um and names),
 * the rest of m zeroed; -1 after 400 (s3_user_meta). */
int s3_object_meta(http_ctx *c, objlog_object_meta *m, objlog_user_meta *um,
                   char names[][256]);
/* x-amz-tagging (a URL-encoded query string, "k1=v1&k2=v2", '+' a space)
 * into m->tags: the decoded pairs live in tags until s3_tags_free (call
 * it whatever s3_tags_parse returned). Absent: no tags, 0. More than
 * S3_TAGS_MAX pairs (400 BadRequest, as S3), an empty or repeated key
 * (400 InvalidTag): -1 after replying. The producer checks lengths and
 * UTF-8 (400 InvalidArgument). */
#define S3_TAGS_MAX 10
typedef struct s3_tags {
    char *decoded[2 * S3_TAGS_MAX]; /* key, value, ... (evhttp_uridecode) */
    size_t n;
    objlog_user_meta pairs[S3_TAGS_MAX];
} s3_tags;
int s3_tags_parse(http_ctx *c, s3_tags *tags, objlog_object_meta *m);
void s3_tags_free(s3_tags *tags);

/* An Owner (or Initiator): objlog's owners are tenants; a bucket of no
 * tenant (anonymous, or made by the JSON API without one) is the
 * service's, S3_NO_OWNER. */
#define S3_OWNER_MAX 260
#define S3_NO_OWNER "objlog"
void s3_owner_xml(struct xmlw *x, const char *tag, const char *owner);
/* The bucket's owner into out, from this node's view (call after a read
 * of the bucket fenced it): 0, or -1 after replying. */
int s3_bucket_owner(http_ctx *c, const char *bucket, char *out, size_t n);

/* ---- s3blob.c: object bytes in the blob store (blob.h) ---- */
/* A PutObject's or UploadPart's body into the blob store: id
 * (BLOB_ID_LEN + 1 bytes) names the blob, which c's answer keeps (2xx,
 * 5xx: applied or unknown) or drops (4xx: refused); id "" when nothing is
 * kept (an empty body, or no store but --s3-blob-url and the frontend's
 * own x-objlog-blob-id). With --s3-blob-url and no id of the frontend's,
 * id is the body's SHA-256, which the redirect's {blob_id} names; nothing
 * is kept. -1 after replying: 501 a body and nowhere to keep it, 400
 * x-objlog-blob-id sent to a store that names its blobs, 507 its disk is
 * full, 500 the store failed. */
int s3_blob_store(http_ctx *c, const s3_request *r, char *id);
/* The blob a write holds, kept or dropped by c's answer (as above). */
void s3_blob_settle_on_answer(http_ctx *c, blob_put *p);
/* A CopyObject's source blobs (v's blob, or every part's) pinned in the
 * blob store (blob_pin), kept or dropped by c's answer as a write's blob
 * is; nothing without a store. 0, or -1 after replying (500 a source blob
 * missing from the store, as GetObject answers it). */
int s3_blob_pin_copy(http_ctx *c, const view_version *v);
/* A body read whole is as long as its Content-Length says (a request
 * whose streamed body was lost with its connection has none): 0, or -1
 * after 400 IncompleteBody. */
int s3_body_whole(http_ctx *c, const s3_request *r);
/* The Range header against size: 0 the whole object (absent, or not a
 * single range, which S3 ignores), 1 [*off, *off + *len), -1 after 416
 * InvalidRange. */
int s3_blob_range(http_ctx *c, uint64_t size, uint64_t *off, uint64_t *len);
/* Bytes [off, off + len) of version v into out, from its blob or its
 * parts' blobs; 0, or -1 after replying (501 no bytes kept here, 500 a
 * blob missing or unreadable). */
int s3_blob_body(http_ctx *c, const view_version *v, uint64_t off, uint64_t len,
                 struct evbuffer *out);

/* ---- s3stream.c: PutObject and UploadPart whose body streams ---- */
void s3_stream_put_object(http_ctx *c, const s3_request *r, http_stream *st);
void s3_stream_upload_part(http_ctx *c, const s3_request *r, http_stream *st,
                           const char *upload_id, uint32_t part_number);

/* ---- s3bucket.c: a bucket's own operations, its listing, ListBuckets ---- */
void s3_head_bucket(http_ctx *c, const s3_request *r);     /* HEAD /BUCKET */
void s3_get_location(http_ctx *c, const s3_request *r);    /* GET ?location */
void s3_get_versioning(http_ctx *c, const s3_request *r);  /* GET ?versioning */
void s3_create_bucket(http_ctx *c, const s3_request *r);   /* PUT /BUCKET */
void s3_delete_bucket(http_ctx *c, const s3_request *r);   /* DELETE /BUCKET */
void s3_list_bucket(http_ctx *c, const s3_request *r);     /* GET /BUCKET[?list-type=2] */
/* ListBuckets: the buckets of tenant (every bucket for NULL), fenced on
 * every partition, as XML. */
void s3_list_buckets(http_ctx *c, const char *tenant);

/* ---- s3object.c: one object's GET, HEAD, PUT and DELETE ---- */
void s3_get_object(http_ctx *c, const s3_request *r);
void s3_head_object(http_ctx *c, const s3_request *r);
void s3_put_object(http_ctx *c, const s3_request *r);
void s3_delete_object(http_ctx *c, const s3_request *r);

/* ---- s3write.c: S3's writes beyond PutObject / DeleteObject ---- */
void s3_put_versioning(http_ctx *c, const s3_request *r);  /* PUT ?versioning */
void s3_create_upload(http_ctx *c, const s3_request *r);   /* POST ?uploads */
void s3_upload_part(http_ctx *c, const s3_request *r);     /* PUT ?partNumber&uploadId */
void s3_complete_upload(http_ctx *c, const s3_request *r); /* POST ?uploadId */
void s3_abort_upload(http_ctx *c, const s3_request *r);    /* DELETE ?uploadId */
void s3_copy_object(http_ctx *c, const s3_request *r);     /* PUT + x-amz-copy-source */
void s3_delete_objects(http_ctx *c, const s3_request *r);  /* POST ?delete */

/* ---- s3attr.c: ?tagging and ?acl of buckets and objects ---- */
void s3_get_object_tagging(http_ctx *c, const s3_request *r);
void s3_put_object_tagging(http_ctx *c, const s3_request *r);
void s3_delete_object_tagging(http_ctx *c, const s3_request *r);
void s3_get_object_acl(http_ctx *c, const s3_request *r);
void s3_put_object_acl(http_ctx *c, const s3_request *r);
void s3_get_bucket_tagging(http_ctx *c, const s3_request *r);
void s3_put_bucket_tagging(http_ctx *c, const s3_request *r);
void s3_delete_bucket_tagging(http_ctx *c, const s3_request *r);
void s3_get_bucket_acl(http_ctx *c, const s3_request *r);
void s3_put_bucket_acl(http_ctx *c, const s3_request *r);

/* ---- s3lc.c: S3's ?lifecycle bucket subresource ---- */
void s3_put_lifecycle(http_ctx *c, const s3_request *r);    /* PUT ?lifecycle */
void s3_get_lifecycle(http_ctx *c, const s3_request *r);    /* GET ?lifecycle */
void s3_delete_lifecycle(http_ctx *c, const s3_request *r); /* DELETE ?lifecycle */

/* ---- s3notify.c: S3's ?notification bucket subresource ---- */
void s3_put_notification(http_ctx *c, const s3_request *r);    /* PUT ?notification */
void s3_get_notification(http_ctx *c, const s3_request *r);    /* GET ?notification */
/* DELETE ?notification: 405 (S3 has no such operation; never DeleteBucket). */
void s3_delete_notification(http_ctx *c, const s3_request *r);

/* ---- s3list.c: S3's listings of versions, uploads and parts ---- */
/* ListObjectVersions (GET /BUCKET?versions), ListMultipartUploads (GET
 * /BUCKET?uploads), ListParts (GET|HEAD /BUCKET/KEY?uploadId=): the JSON
 * routes' reads (read_*_page) answered as S3's XML. */
void s3list_versions(http_ctx *c, const s3_request *r);
void s3list_uploads(http_ctx *c, const s3_request *r);
void s3list_parts(http_ctx *c, const s3_request *r);

/* ---- xmlw.c: S3's XML answers ---- */
typedef struct xmlw {
    keybuf buf;                  /* the text; xmlw_take hands it over */
    int failed;                  /* out of memory at some point */
} xmlw;
/* The text as an evbuffer for a reply (taking the bytes, no copy); NULL
 * (and the text freed) when out of memory at any point. */
struct evbuffer *xmlw_take(xmlw *x);
/* Frees the text (an answer not sent after all). */
void xmlw_discard(xmlw *x);
/* The XML declaration and root element, with S3's namespace. */
int xmlw_begin(xmlw *x, const char *root);
/* The same without the namespace (S3's Error document has none). */
int xmlw_begin_bare(xmlw *x, const char *root);
/* Escaped text inside the element open now. */
void xmlw_raw_text(xmlw *x, const char *s);
void xmlw_open(xmlw *x, const char *tag);
/* <tag attrs>: attrs written as given (the caller's constants only). */
void xmlw_open_attrs(xmlw *x, const char *tag, const char *attrs);
void xmlw_close(xmlw *x, const char *tag);
/* <tag>escaped bytes</tag>; url: EncodingType=url (S3's form of it). */
void xmlw_bytes(xmlw *x, const char *tag, const void *s, size_t n, int url);
void xmlw_str(xmlw *x, const char *tag, const char *s);
void xmlw_u64(xmlw *x, const char *tag, uint64_t v);
void xmlw_bool(xmlw *x, const char *tag, int v);
/* ISO 8601 with milliseconds, UTC: 2009-10-12T17:50:30.000Z. */
void xmlw_time(xmlw *x, const char *tag, int64_t ms);

/* ---- s3sum.c: x-amz-checksum-* of a body ---- */
/* The checksum the client sent (header, or a's aws-chunked trailer; a may
 * be NULL) checked against body: 0 none sent; 1 it matches, out =
 * "ALGORITHM:base64" to store, header = the x-amz-checksum-* name to
 * answer with; -1 after replying 400 BadDigest. */
int s3_checksum(http_ctx *c, const struct s3auth *a, const uint8_t *body, size_t n,
                char *out, size_t out_size, char *header, size_t header_size);
/* The same over a body that streams: begin picks the algorithm the client
 * sent (none: the others do nothing); end judges as s3_checksum does. Free
 * whatever begin returned. */
typedef struct s3_sum {
    int alg;                     /* -1 none */
    uint32_t crc;
    struct evp_md_ctx_st *md;
} s3_sum;
int s3_sum_begin(http_ctx *c, const struct s3auth *a, s3_sum *s);
void s3_sum_update(s3_sum *s, const void *p, size_t n);
int s3_sum_end(http_ctx *c, const struct s3auth *a, s3_sum *s, char *out, size_t out_size,
               char *header, size_t header_size);
void s3_sum_free(s3_sum *s);
/* A stored "ALGORITHM:base64" as its x-amz-checksum-* header name and
 * value: 1, or 0 when it is not one of S3's. */
int s3_checksum_header(const char *stored, char *name, size_t nn, const char **value);

/* ---- s3.c: the S3 REST endpoint ---- */

/* objlogd's --s3-* flags. */
typedef struct s3_settings {
    const char *host;            /* --s3-listen */
    int port;
    const char *region, *domain, *credentials, *blob_url, *blob_dir;
    const char *blob_s3, *blob_s3_credentials; /* blob_dir the spool then */
    int anonymous;               /* --s3-anonymous */
    int insecure;                /* --insecure: a credentials file others may read */
} s3_settings;
/* The S3 endpoint's settings (q->s3): 0, or -1 with errstr (a bad
 * credentials file, say). */
int s3_conf_new(objlog_query *q, const s3_settings *st, char *errstr, size_t errstr_size);
void s3_conf_free(objlog_query *q);
/* Reads --s3-credentials again (objlog_query_reload). */
int s3_conf_reload(objlog_query *q, char *errstr, size_t errstr_size);
/* The S3 endpoint's face (its router, its XML errors and answers). */
extern const http_face s3_face;
/* An error as S3 answers it: XML Error with Code, Message, Resource and
 * RequestId (no body for HEAD), in S3's words (s3_error_code). */
void s3_reply_error(http_ctx *c, int status, const char *code, const char *request_id,
                    const char *message);
/* A gateway write of c applied OK: the answer its S3 operation gives. */
void s3_reply_written(http_ctx *c, const struct write_answer *w);
#endif
