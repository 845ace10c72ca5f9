/* s3chunked.c: aws-chunked request bodies (x-amz-content-sha256:
 * STREAMING-*), decoded into the bytes they frame: each chunk's size,
 * signature and CRLFs, then the trailer section (x-amz-checksum-* and
 * x-amz-trailer-signature) when x-amz-trailer promised one.
 *
 *   Chunk n  = HMAC(key, AWS4-HMAC-SHA256-PAYLOAD \n AmzDate \n Scope \n
 *                   sig(n-1) \n sha256("") \n sha256(data n))
 *   Trailer  = HMAC(key, AWS4-HMAC-SHA256-TRAILER \n AmzDate \n Scope \n
 *                   sig(last chunk) \n sha256(name:value \n ...))
 *
 * Invariant: no byte is handed on unless every signature up to it held.
 * The chain starts at the request's own signature (s3auth_check left it
 * in seed_signature, with the signing key), so a chunk cannot be moved
 * into another request, reordered or dropped; the decoded length must be
 * x-amz-decoded-content-length, and a body cut short is IncompleteBody,
 * not a shorter object. */
#include "s3authint.h"
#include "keycodec.h"

#include <ctype.h>
#include <strings.h>

#include <openssl/crypto.h>

static int chained_signature(const s3auth *a, const char *kind, const char *prev,
                             const char *hash2, const char *hash3, char sig[65]) {
    sbuf s = {0};
    sb_puts(&s, kind);
    sb_putc(&s, '\n');
    sb_puts(&s, a->amz_date);
    sb_putc(&s, '\n');
    sb_puts(&s, a->scope);
    sb_putc(&s, '\n');
    sb_puts(&s, prev);
    sb_putc(&s, '\n');
    if (hash2) {
        sb_puts(&s, hash2);
        sb_putc(&s, '\n');
    }
    sb_puts(&s, hash3);
    int rc = s.oom ? -1 : s3auth_sign_string(a->signing_key, s.p, s.len, sig);
    sb_free(&s);
    return rc;
}

int s3auth_chunk_signature(const s3auth *a, const char *prev_signature,
                           const void *data, size_t n, char sig[65]) {
    char h[65];
    if (s3auth_sha256_hex(data, n, h) < 0)
        return -1;
    return chained_signature(a, ALGORITHM "-PAYLOAD", prev_signature, EMPTY_SHA256, h, sig);
}

typedef struct cursor {
    const uint8_t *p;
    size_t n, i;
} cursor;

static int cur_take(cursor *c, const char *lit) {
    size_t l = strlen(lit);
    if (c->n - c->i < l || memcmp(c->p + c->i, lit, l) != 0)
        return -1;
    c->i += l;
    return 0;
}

/* 1 when c is at a proper prefix of lit (the body was cut inside it). */
static int cur_cut_in(const cursor *c, const char *lit) {
    size_t l = strlen(lit), left = c->n - c->i;
    return left < l && memcmp(c->p + c->i, lit, left) == 0;
}

static int chunk_fail(s3auth *a, int truncated, const char *what) {
    if (truncated)
        s3auth_fail(a, 400, "IncompleteBody",
             "You did not provide the number of bytes specified by the Content-Length "
             "HTTP header.");
    else
        s3auth_fail(a, 400, "InvalidRequest", "The aws-chunked body is malformed: %s.", what);
    return -1;
}

/* The CRLF that ends a part of the body: IncompleteBody when the body
 * stops inside it, else the malformed what when it is not there. */
static int take_crlf(s3auth *a, cursor *c, const char *what) {
    if (cur_cut_in(c, "\r\n"))
        return chunk_fail(a, 1, "");
    if (cur_take(c, "\r\n") < 0)
        return chunk_fail(a, 0, what);
    return 0;
}

/* A line "name:value\r\n" of the trailer section into a->trailers. */
static int take_trailer(s3auth *a, cursor *c, int *is_signature, char sig[65]) {
    const uint8_t *s = c->p + c->i;
    size_t left = c->n - c->i, e = 0;
    while (e + 1 < left && !(s[e] == '\r' && s[e + 1] == '\n'))
        e++;
    if (e + 1 >= left)
        return chunk_fail(a, 1, "");
    const uint8_t *colon = memchr(s, ':', e);
    if (!colon || colon == s)
        return chunk_fail(a, 0, "a trailer line without a name");
    size_t nn = (size_t)(colon - s);
    const char *v = (const char *)colon + 1;
    size_t vn = e - nn - 1;
    while (vn && s3auth_is_space(*v))
        v++, vn--;
    while (vn && s3auth_is_space(v[vn - 1]))
        vn--;
    c->i += e + 2;
    if (nn == 23 && strncasecmp((const char *)s, "x-amz-trailer-signature", 23) == 0) {
        if (vn != 64)
            return chunk_fail(a, 0, "a malformed x-amz-trailer-signature");
        memcpy(sig, v, 64);
        sig[64] = '\0';
        *is_signature = 1;
        return 0;
    }
    if (*is_signature)
        return chunk_fail(a, 0, "a trailer after x-amz-trailer-signature");
    if (a->ntrailers == S3AUTH_MAX_TRAILERS || nn >= sizeof(a->trailers[0].name) ||
        vn >= sizeof(a->trailers[0].value))
        return chunk_fail(a, 0, "too many or too long trailers");
    s3auth_trailer *t = &a->trailers[a->ntrailers++];
    for (size_t i = 0; i < nn; i++)
        t->name[i] = (char)tolower(s[i]);
    t->name[nn] = '\0';
    memcpy(t->value, v, vn);
    t->value[vn] = '\0';
    return 0;
}

/* The trailer section after the last chunk, up to and with its "\r\n". */
static int take_trailers(s3auth *a, cursor *c, const char *prev) {
    int signed_ = a->payload == S3AUTH_PAYLOAD_STREAMING_TRAILER, is_sig = 0;
    char sig[65] = "";
    if (!signed_ && c->i == c->n && !a->trailer_names[0])
        return 0; /* "0\r\n" and nothing more: no trailer (AWS SDKs send it) */
    while (cur_take(c, "\r\n") < 0) {
        if (c->i == c->n || cur_cut_in(c, "\r\n"))
            return chunk_fail(a, 1, "");
        if (take_trailer(a, c, &is_sig, sig) < 0)
            return -1;
    }
    for (size_t i = 0; i < a->ntrailers; i++)
        if (!s3auth_list_has(a->trailer_names, ',', a->trailers[i].name))
            return chunk_fail(a, 0, "a trailer not named in x-amz-trailer");
    for (const char *s = a->trailer_names; *s;) {
        size_t n = strcspn(s, ","), found = 0;
        for (size_t i = 0; i < a->ntrailers; i++)
            found |= strlen(a->trailers[i].name) == n && memcmp(a->trailers[i].name, s, n) == 0;
        if (n && !found)
            return chunk_fail(a, 0, "a trailer named in x-amz-trailer is missing");
        s += n;
        if (*s)
            s++;
    }
    if (!signed_)
        return 0;
    if (!is_sig)
        return chunk_fail(a, 0, "the x-amz-trailer-signature is missing");
    sbuf t = {0};
    char h[65], want[65];
    for (size_t i = 0; i < a->ntrailers; i++) {
        sb_puts(&t, a->trailers[i].name);
        sb_putc(&t, ':');
        sb_puts(&t, a->trailers[i].value);
        sb_putc(&t, '\n');
    }
    int rc = t.oom || s3auth_sha256_hex(t.p ? t.p : "", t.len, h) < 0 ||
             chained_signature(a, ALGORITHM "-TRAILER", prev, NULL, h, want) < 0;
    sb_free(&t);
    if (rc) {
        s3auth_fail_oom(a);
        return -1;
    }
    if (CRYPTO_memcmp(want, sig, 64) != 0) {
        s3auth_fail(a, 403, "SignatureDoesNotMatch", MSG_MISMATCH);
        return -1;
    }
    return 0;
}

/* "hex-size" then ";chunk-signature=SIG" when signed, then "\r\n". */
static int take_chunk_header(s3auth *a, cursor *c, int signed_, uint64_t *size, char sig[65]) {
    size_t start = c->i;
    uint64_t v = 0;
    while (c->i < c->n && keycodec_hex_digit(c->p[c->i]) >= 0) {
        if (c->i - start == 16)
            return chunk_fail(a, 0, "a chunk size too large");
        v = v << 4 | (uint64_t)keycodec_hex_digit(c->p[c->i]);
        c->i++;
    }
    if (c->i == c->n)
        return chunk_fail(a, 1, "");
    if (c->i == start)
        return chunk_fail(a, 0, "a chunk without a size");
    *size = v;
    if (signed_) {
        if (cur_cut_in(c, ";chunk-signature="))
            return chunk_fail(a, 1, "");
        if (cur_take(c, ";chunk-signature=") < 0)
            return chunk_fail(a, 0, "a chunk without its chunk-signature");
        if (c->n - c->i < 64)
            return chunk_fail(a, 1, "");
        memcpy(sig, c->p + c->i, 64);
        sig[64] = '\0';
        if (!s3auth_signature_ok(sig))
            return chunk_fail(a, 0, "a malformed chunk-signature");
        c->i += 64;
    }
    return take_crlf(a, c, "a chunk header not ended by CRLF");
}

int s3auth_decode_chunked(s3auth *a, const uint8_t *in, size_t n,
                          uint8_t **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    if (!s3auth_streaming(a->payload) || a->status) {
        s3auth_fail(a, 400, "InvalidRequest", "The request is not an aws-chunked upload.");
        return -1;
    }
    int signed_ = a->payload != S3AUTH_PAYLOAD_UNSIGNED_TRAILER;
    uint8_t *buf = malloc(n ? n : 1);
    cursor c = {in, n, 0};
    size_t o = 0;
    char prev[65], sig[65], want[65];
    if (!buf) {
        s3auth_fail_oom(a);
        return -1;
    }
    memcpy(prev, a->seed_signature, 65);
    a->ntrailers = 0;
    for (;;) {
        uint64_t size;
        if (take_chunk_header(a, &c, signed_, &size, sig) < 0)
            goto bad;
        if (size > c.n - c.i) {
            chunk_fail(a, 1, "");
            goto bad;
        }
        if (signed_) {
            if (s3auth_chunk_signature(a, prev, c.p + c.i, (size_t)size, want) < 0) {
                s3auth_fail_oom(a);
                goto bad;
            }
            if (CRYPTO_memcmp(want, sig, 64) != 0) {
                s3auth_fail(a, 403, "SignatureDoesNotMatch", MSG_MISMATCH);
                goto bad;
            }
            memcpy(prev, sig, 65);
        }
        memcpy(buf + o, c.p + c.i, (size_t)size);
        o += (size_t)size;
        c.i += (size_t)size;
        if (size == 0)
            break;
        if (take_crlf(a, &c, "chunk data not followed by CRLF") < 0)
            goto bad;
    }
    if (a->payload == S3AUTH_PAYLOAD_STREAMING) {
        if (take_crlf(a, &c, "the last chunk not followed by CRLF") < 0)
            goto bad;
    } else if (take_trailers(a, &c, prev) < 0) {
        goto bad;
    }
    if (c.i != c.n) {
        chunk_fail(a, 0, "bytes after the last chunk");
        goto bad;
    }
    if (a->decoded_length >= 0 && (uint64_t)a->decoded_length != o) {
        chunk_fail(a, 1, "");
        goto bad;
    }
    *out = buf;
    *out_len = o;
    return 0;
bad:
    free(buf);
    return -1;
}

