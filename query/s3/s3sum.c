/* s3sum.c: S3's additional checksums (x-amz-checksum-crc32, -crc32c,
 * -sha1, -sha256) of a PutObject or UploadPart body.
 * objlog keeps no bytes, so the checksum is derived from the body as it
 * arrives, checked against the one the client sent (a header, or the
 * trailer of an aws-chunked body) and kept in the object's metadata as
 * "ALGORITHM:base64" for HeadObject to answer.
 *
 * Invariant: a checksum the client sent is stored only if the body has it
 * (else 400 BadDigest and nothing is written); CRC32 comes from zlib,
 * SHA-1 and SHA-256 from OpenSSL; CRC32C (Castagnoli, which neither has)
 * is the reflected table algorithm, checked against RFC 3720's vectors
 * in test_s3_clients. */
#include "core.h"
#include "s3.h"
#include "server.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <event2/http.h>
#include <openssl/evp.h>
#include <zlib.h>

#include "s3auth.h"

typedef struct s3sum_alg {
    const char *name;            /* as in x-amz-checksum-NAME */
    const char *upper;           /* as S3 names it (x-amz-checksum-algorithm) */
} s3sum_alg;

static const s3sum_alg s3sum_algs[] = {
    {"crc32", "CRC32"}, {"crc32c", "CRC32C"}, {"sha1", "SHA1"}, {"sha256", "SHA256"}};
#define S3SUM_NALGS (sizeof(s3sum_algs) / sizeof(s3sum_algs[0]))

/* CRC32C over p, continuing c (0xFFFFFFFF to begin; inverted at the end). */
static uint32_t s3sum_crc32c(uint32_t c, const uint8_t *p, size_t n) {
    static uint32_t table[256];
    static int ready; /* filled once; the same values whichever thread does it */
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        ready = 1;
    }
    for (size_t i = 0; i < n; i++)
        c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c;
}

void s3_sum_update(s3_sum *s, const void *data, size_t n) {
    const uint8_t *p = data;
    switch (s->alg) {
    case 0:
        while (n) { /* zlib takes an uInt at a time */
            uInt k = n > 0x40000000u ? 0x40000000u : (uInt)n;
            s->crc = (uint32_t)crc32(s->crc, p, k);
            p += k;
            n -= k;
        }
        break;
    case 1: s->crc = s3sum_crc32c(s->crc, p, n); break;
    case 2:
    case 3: EVP_DigestUpdate(s->md, p, n); break;
    default: break;
    }
}

/* The digest so far, base64, into out (>= 48 bytes). */
static void s3sum_final(s3_sum *s, char *out) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dn = 0;
    uint32_t v = s->alg == 1 ? s->crc ^ 0xFFFFFFFFu : s->crc;
    if (s->alg < 2) {
        d[0] = (unsigned char)(v >> 24), d[1] = (unsigned char)(v >> 16);
        d[2] = (unsigned char)(v >> 8), d[3] = (unsigned char)v;
        dn = 4;
    } else {
        EVP_DigestFinal_ex(s->md, d, &dn);
    }
    EVP_EncodeBlock((unsigned char *)out, d, (int)dn);
}

/* The value the client sent for alg: its header, else a trailer. */
static const char *s3sum_sent(http_ctx *c, const s3auth *a, size_t alg) {
    char name[40];
    snprintf(name, sizeof(name), "x-amz-checksum-%s", s3sum_algs[alg].name);
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(c->req), name);
    for (size_t i = 0; !h && a && i < a->ntrailers; i++)
        if (strcasecmp(a->trailers[i].name, name) == 0)
            h = a->trailers[i].value;
    return h;
}

int s3_sum_begin(http_ctx *c, const s3auth *a, s3_sum *s) {
    memset(s, 0, sizeof(*s));
    s->alg = -1;
    for (size_t alg = 0; alg < S3SUM_NALGS && s->alg < 0; alg++)
        if (s3sum_sent(c, a, alg))
            s->alg = (int)alg;
    if (s->alg == 1)
        s->crc = 0xFFFFFFFFu;
    if (s->alg >= 2 && (!(s->md = EVP_MD_CTX_new()) ||
                        !EVP_DigestInit_ex(s->md, s->alg == 2 ? EVP_sha1() : EVP_sha256(), NULL))) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    return 0;
}

int s3_sum_end(http_ctx *c, const s3auth *a, s3_sum *s, char *out, size_t out_size,
               char *header, size_t header_size) {
    out[0] = header[0] = '\0';
    if (s->alg < 0)
        return 0;
    const char *sent = s3sum_sent(c, a, (size_t)s->alg);
    char got[64];
    s3sum_final(s, got);
    if (!sent || strcmp(got, sent) != 0) {
        http_reply_error(c, 400, "BadDigest",
                         "The %s you specified did not match the calculated checksum.",
                         s3sum_algs[s->alg].upper);
        return -1;
    }
    snprintf(out, out_size, "%s:%s", s3sum_algs[s->alg].upper, got);
    snprintf(header, header_size, "x-amz-checksum-%s", s3sum_algs[s->alg].name);
    return 1;
}

void s3_sum_free(s3_sum *s) {
    EVP_MD_CTX_free(s->md);
    s->md = NULL;
}

int s3_checksum(http_ctx *c, const s3auth *a, const uint8_t *body, size_t n, char *out,
                size_t out_size, char *header, size_t header_size) {
    s3_sum s;
    if (s3_sum_begin(c, a, &s) < 0)
        return -1;
    s3_sum_update(&s, body, n);
    int rc = s3_sum_end(c, a, &s, out, out_size, header, header_size);
    s3_sum_free(&s);
    return rc;
}

int s3_checksum_header(const char *stored, char *name, size_t nn, const char **value) {
    const char *colon = stored ? strchr(stored, ':') : NULL;
    for (size_t alg = 0; colon && alg < S3SUM_NALGS; alg++)
        if (strlen(s3sum_algs[alg].upper) == (size_t)(colon - stored) &&
            strncmp(stored, s3sum_algs[alg].upper, (size_t)(colon - stored)) == 0) {
            snprintf(name, nn, "x-amz-checksum-%s", s3sum_algs[alg].name);
            *value = colon + 1;
            return 1;
        }
    return 0;
}
