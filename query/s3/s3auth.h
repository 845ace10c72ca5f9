/* s3auth.h: AWS Signature Version 4 for the S3 REST endpoint, and the
 * credentials file it checks against. Pure: no evhttp, no clock, no globals;
 * the listener hands in the request as received (method, raw path, raw
 * query, every header) and the server time, and gets back one s3auth value
 * that says who signed, what the body must hash to, or which S3 error to
 * answer. Internal to the query service (prefixes s3auth_, s3creds_).
 *
 * Canonicalization is S3's, not the generic services' (where they differ):
 *   path    as sent, never normalized ("." / ".." / "//" kept); %XX
 *           sequences are kept byte for byte, every other byte outside the
 *           unreserved set (A-Z a-z 0-9 - _ . ~) and '/' is %XX-encoded
 *           (what botocore signs: the quoted path it sends);
 *   query   split on '&', a part without '=' has an empty value; each name
 *           and value is percent-decoded ('+' decodes to a space) and
 *           re-encoded with AWS's UriEncode; sorted by encoded name, then
 *           value; X-Amz-Signature left out when presigned;
 *   headers names lowercased, values trimmed with inner runs of spaces
 *           collapsed to one, same-name headers joined with ',' in the
 *           order received; the signed list sorted.
 *
 * Invariant: s3auth_check returns status 0 only when the signature made
 * with the stored secret over that canonical request equals the one sent
 * (compared in constant time), the signer's key exists, the region, service
 * and dates agree and the time is within 15 minutes (presigned: before
 * X-Amz-Date + X-Amz-Expires); or when the request carries no
 * authentication at all and anonymous_ok. Secrets derived on the way are
 * wiped; the signing key kept in s3auth (for chunk signatures) is wiped by
 * s3auth_wipe. */
#ifndef OBJLOG_QUERY_S3AUTH_H
#define OBJLOG_QUERY_S3AUTH_H

#include <stddef.h>
#include <stdint.h>

/* One header as received, any case. */
typedef struct s3_kv {
    const char *name;
    const char *value;
} s3_kv;

typedef struct s3auth_req {
    const char *method;       /* "GET", ... */
    const char *path;         /* the request target's path exactly as sent */
    const char *query;        /* raw query as sent (no '?'), NULL if none */
    const s3_kv *headers;     /* every header as received */
    size_t nheaders;
    int64_t now_s;            /* server time, unix seconds */
} s3auth_req;

/* ---- credentials ---- */

typedef struct s3cred {
    char *access_key, *secret, *tenant;
    int admin;                  /* role admin: every tenant's buckets */
} s3cred;
typedef struct s3creds s3creds;

#define S3CREDS_MAX_KEY_LEN 128     /* access key id: [A-Za-z0-9._-] */
#define S3CREDS_MAX_SECRET_LEN 128  /* secret: printable ASCII, no space */
#define S3CREDS_MAX_TENANT_LEN 256  /* tenant: UTF-8 without '/' */

/* Credentials file: one "ACCESS_KEY_ID SECRET_KEY TENANT [admin]" per
 * line (whitespace separated), '#' comments and blank lines ignored. NULL
 * on error with "FILE:LINE: problem" in errstr (missing field, extra
 * field, unknown role, duplicate key id, bad characters, too long,
 * unreadable, or readable by group or others unless allow_open). */
s3creds *s3creds_load(const char *path, int allow_open, char *errstr, size_t errstr_size);
const s3cred *s3creds_find(const s3creds *c, const char *access_key);
size_t s3creds_count(const s3creds *c);
/* The group and other permission bits of the file it was loaded from
 * (non-zero only when allow_open let it load): the caller warns. */
unsigned s3creds_open_mode(const s3creds *c);
void s3creds_free(s3creds *c); /* wipes the secrets */

/* ---- checking ---- */

typedef enum s3auth_payload {
    S3AUTH_PAYLOAD_UNSIGNED,       /* UNSIGNED-PAYLOAD (and every presigned) */
    S3AUTH_PAYLOAD_SIGNED,         /* x-amz-content-sha256 is the body's hash */
    S3AUTH_PAYLOAD_STREAMING,      /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
    S3AUTH_PAYLOAD_STREAMING_TRAILER,  /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    S3AUTH_PAYLOAD_UNSIGNED_TRAILER    /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
} s3auth_payload;

#define S3AUTH_MAX_TRAILERS 4

typedef struct s3auth_trailer {
    char name[64];              /* lowercase, e.g. "x-amz-checksum-crc32" */
    char value[128];
} s3auth_trailer;

typedef struct s3auth {
    int status;                 /* 0 ok; else the HTTP status to answer */
    const char *code;           /* S3 error code on failure, NULL when ok */
    char message[512];          /* S3-style message */
    /* SignatureDoesNotMatch: what the server signed (S3 returns them in the
     * error's <StringToSign> and <CanonicalRequest>); a canonical request
     * longer than the field ends in "..." (canonical_request_truncated). */
    char string_to_sign[256];
    char canonical_request[4096];
    int canonical_request_truncated;
    char access_key[S3CREDS_MAX_KEY_LEN + 1]; /* as sent, once parsed */
    const s3cred *cred;         /* the signer, NULL when anonymous/failed */
    int anonymous;
    int presigned;
    s3auth_payload payload;
    char payload_sha256[65];    /* SIGNED: the hash the body must have */
    int64_t decoded_length;     /* streaming: x-amz-decoded-content-length */
    /* Streaming: what the chunk signatures chain from. */
    uint8_t signing_key[32];
    char seed_signature[65];
    char amz_date[17];          /* 20130524T000000Z */
    char scope[128];            /* 20130524/us-east-1/s3/aws4_request */
    char trailer_names[256];    /* x-amz-trailer as sent, lowercased */
    /* Filled by s3auth_decode_chunked for the trailer variants. */
    s3auth_trailer trailers[S3AUTH_MAX_TRAILERS];
    size_t ntrailers;
} s3auth;

/* Checks req (see the invariant above). Never fails to fill out. Errors,
 * all with S3's codes: 400 AuthorizationHeaderMalformed (unparsable header,
 * region other than `region` naming the expected one, service not "s3",
 * credential date not the request's), 400 AuthorizationQueryParametersError
 * (the presigned counterparts, X-Amz-Expires outside 1..604800), 400
 * InvalidArgument (both header and query auth; x-amz-content-sha256 not a
 * hash or known keyword), 400 InvalidRequest (an algorithm other than
 * AWS4-HMAC-SHA256, or a Signature V2 query string), 400 MissingSecurityHeader (header auth without
 * x-amz-content-sha256), 411 MissingContentLength (streaming without
 * x-amz-decoded-content-length), 501 NotImplemented (ECDSA streaming), 403
 * AccessDenied (anonymous without anonymous_ok; no valid date; presigned
 * expired / not yet valid; host or an x-amz-* or x-objlog-* header present but
 * unsigned),
 * 403 RequestTimeTooSkewed (more than 15 minutes off now_s), 403
 * InvalidAccessKeyId, 403 SignatureDoesNotMatch. */
void s3auth_check(const s3creds *creds, const char *region, int anonymous_ok,
                  const s3auth_req *req, s3auth *out);

/* Wipes the signing key kept for streaming; call when done with a. */
void s3auth_wipe(s3auth *a);

/* SIGNED payloads: 0 if sha256(body) equals the signed hash, else -1 with
 * a->status 400 XAmzContentSHA256Mismatch. Other payload kinds: 0. */
int s3auth_check_payload(s3auth *a, const void *body, size_t n);

/* Streaming payloads (Content-Encoding: aws-chunked): decodes the whole
 * body in[0..n), "hex-size;chunk-signature=SIG\r\n data \r\n ... 0;chunk-
 * signature=SIG\r\n" then "\r\n" (signed); "hex-size\r\n data \r\n ... 0\r\n"
 * then trailers "name:value\r\n" and "\r\n" (unsigned trailer); or the
 * signed chunks then trailers, "x-amz-trailer-signature:SIG\r\n" and
 * "\r\n" (signed trailer). Every chunk signature is checked, chained from
 * the seed; the trailer signature too; the trailer names must be those of
 * x-amz-trailer; the decoded length must equal x-amz-decoded-content-
 * length. 0 with *out malloc'd (caller frees; non-NULL even when empty)
 * and a->trailers filled; -1 with status/code/message: 400 IncompleteBody
 * (truncated, length mismatch), 400 InvalidRequest (malformed framing or
 * trailers), 403 SignatureDoesNotMatch (a chunk or trailer signature). The
 * checksum values in the trailers are the caller's to verify. */
int s3auth_decode_chunked(s3auth *a, const uint8_t *in, size_t n,
                          uint8_t **out, size_t *out_len);

/* ---- signing (tests, objlog's own clients) ---- */

/* The Authorization header value for req, signing every header in it (it
 * must hold Host and X-Amz-Date; the payload hash is payload_sha256, which
 * S3 also wants as an X-Amz-Content-SHA256 header). 0, or -1 when a header
 * is missing or authorization[n] is too small. */
int s3auth_sign(const char *access_key, const char *secret, const char *region,
                const s3auth_req *req, const char *payload_sha256,
                char *authorization, size_t n);
/* The same for any service (AWS's generic test suite uses "service"). */
int s3auth_sign_service(const char *access_key, const char *secret,
                        const char *region, const char *service,
                        const s3auth_req *req, const char *payload_sha256,
                        char *authorization, size_t n);

/* A presigned query string for req at req->now_s, valid expires_s seconds:
 * req->query's parameters and the X-Amz-* ones in canonical order, then
 * X-Amz-Signature; every header of req is signed (Host at least). 0, or -1
 * (no Host, expires_s outside 1..604800, query_out[n] too small). */
int s3auth_presign(const char *access_key, const char *secret, const char *region,
                   const s3auth_req *req, int expires_s, char *query_out, size_t n);

/* The SigV4 signing key of secret for YYYYMMDD/region/service (32 bytes;
 * wipe it after use). 0 or -1. */
int s3auth_signing_key(const char *secret, const char *date8, const char *region,
                       const char *service, uint8_t out[32]);

/* The chunk signature of data[0..n) following prev_signature, for the
 * signing context of a (a STREAMING request that passed s3auth_check, or
 * one a client set up itself): hex into sig[65]. 0 or -1. */
int s3auth_chunk_signature(const s3auth *a, const char *prev_signature,
                           const void *data, size_t n, char sig[65]);

#endif
