/* listtoken.c: continuation tokens of LIST and of prefix usage. Opaque to
 * clients. LIST:
 *
 *   base64url( version(1) = 2
 *            ‖ be64(FNV-1a-64(bucket))      the bucket it was issued for
 *            ‖ kind(1)                       0 last key, 1 last common prefix
 *            ‖ last (raw bytes of the key or common prefix)
 *            ‖ HMAC-SHA256(secret, all bytes before)[0..16) )
 *
 * Prefix usage (GET /v1/buckets/{b}/usage), its own version byte, so
 * neither API accepts the other's tokens:
 *
 *   base64url( version(1) = 0x76
 *            ‖ be64(FNV-1a-64(bucket))
 *            ‖ be64(FNV-1a-64(be32(len prefix) ‖ prefix ‖ delimiter))
 *            ‖ be32(open_len)                the open group = after[0..open_len)
 *            ‖ be64 x 6: open objects, open bytes, direct objects, direct
 *              bytes, total objects, total bytes (running counters)
 *            ‖ after (raw bytes of the last key read)
 *            ‖ HMAC-SHA256(secret, all bytes before)[0..16) )
 *
 * The secret is the store's (objlog_store_token_secret: 32 random bytes
 * made with the store), or the one every node of a cluster shares
 * (objlogd --token-secret-file). Invariant: a token is accepted only if
 * this store (or cluster) issued it, byte for byte; an edited, truncated or hand-made token, or one
 * from another store, is a 400. That matters for usage tokens, which carry
 * running counters a client could otherwise set; a LIST token only names a
 * position inside its bucket. The tag is compared in constant time. */
#include "core.h"
#include "read.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define LISTTOKEN_VERSION 2
#define TOKEN_TAG_LEN 16
#define LISTTOKEN_HEAD 10 /* version + bucket hash + kind */

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static uint64_t fnv64(uint64_t h, const void *p, size_t n) {
    const uint8_t *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Writes the tag of p[0..n) to tag. 0, or -1 if OpenSSL failed. */
static int token_tag(const uint8_t *key, const uint8_t *p, size_t n,
                     uint8_t tag[TOKEN_TAG_LEN]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!HMAC(EVP_sha256(), key, OBJLOG_TOKEN_SECRET_LEN, p, n, md, &mdlen) ||
        mdlen < TOKEN_TAG_LEN)
        return -1;
    memcpy(tag, md, TOKEN_TAG_LEN);
    return 0;
}

/* 1 when raw[0..n) ends in the tag of what precedes it. */
static int token_tag_ok(const uint8_t *key, const uint8_t *raw, size_t n) {
    uint8_t tag[TOKEN_TAG_LEN];
    return n >= TOKEN_TAG_LEN &&
           token_tag(key, raw, n - TOKEN_TAG_LEN, tag) == 0 &&
           CRYPTO_memcmp(tag, raw + n - TOKEN_TAG_LEN, TOKEN_TAG_LEN) == 0;
}

static void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static char *b64url_encode(const uint8_t *in, size_t n) {
    char *out = malloc(n / 3 * 4 + 5);
    size_t o = 0, i = 0;
    if (!out)
        return NULL;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
    }
    out[o] = '\0';
    return out;
}

static int b64url_value(char c) {
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

/* Strict: unpadded, no stray characters, no non-zero trailing bits. */
static uint8_t *b64url_decode(const char *in, size_t n, size_t *out_len) {
    if (n % 4 == 1)
        return NULL;
    uint8_t *out = malloc(n / 4 * 3 + 3);
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int v = b64url_value(in[i]);
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    if (bits && (acc & ((1u << bits) - 1))) {
        free(out);
        return NULL;
    }
    *out_len = o;
    return out;
}

char *listtoken_encode(const uint8_t *key, const char *bucket, int kind,
                       const uint8_t *last, size_t last_len) {
    size_t n = LISTTOKEN_HEAD + last_len + TOKEN_TAG_LEN;
    uint8_t *raw = malloc(n);
    if (!raw)
        return NULL;
    raw[0] = LISTTOKEN_VERSION;
    put_be64(raw + 1, fnv64(0xcbf29ce484222325ULL, bucket, strlen(bucket)));
    raw[9] = (uint8_t)kind;
    if (last_len)
        memcpy(raw + LISTTOKEN_HEAD, last, last_len);
    char *s = token_tag(key, raw, n - TOKEN_TAG_LEN, raw + n - TOKEN_TAG_LEN) == 0
                  ? b64url_encode(raw, n) : NULL;
    free(raw);
    return s;
}

/* index: accept only LISTTOKEN_INDEX tokens, else only LIST's kinds. */
static int listtoken_decode_kind(const uint8_t *key, const char *bucket, const char *text,
                                 size_t text_len, int index, int *kind, uint8_t **last,
                                 size_t *last_len) {
    size_t n = 0;
    uint8_t *raw = b64url_decode(text, text_len, &n);
    int ok = raw && n >= LISTTOKEN_HEAD + TOKEN_TAG_LEN && raw[0] == LISTTOKEN_VERSION &&
             token_tag_ok(key, raw, n) &&
             get_be64(raw + 1) == fnv64(0xcbf29ce484222325ULL, bucket, strlen(bucket)) &&
             (index ? raw[9] == LISTTOKEN_INDEX
                    : (raw[9] == LISTTOKEN_KEY || raw[9] == LISTTOKEN_PREFIX));
    if (!ok) {
        free(raw);
        return -1;
    }
    *kind = raw[9];
    *last_len = n - LISTTOKEN_HEAD - TOKEN_TAG_LEN;
    *last = malloc(*last_len + 1);
    if (!*last) {
        free(raw);
        return -1;
    }
    memcpy(*last, raw + LISTTOKEN_HEAD, *last_len);
    free(raw);
    return 0;
}

int listtoken_decode(const uint8_t *key, const char *bucket, const char *text,
                     size_t text_len, int *kind, uint8_t **last, size_t *last_len) {
    return listtoken_decode_kind(key, bucket, text, text_len, 0, kind, last, last_len);
}

/* Attribute index queries: LIST's format, kind LISTTOKEN_INDEX, so neither
 * API accepts the other's tokens. */
char *indextoken_encode(const uint8_t *key, const char *bucket, const uint8_t *pos,
                        size_t pos_len) {
    return listtoken_encode(key, bucket, LISTTOKEN_INDEX, pos, pos_len);
}

int indextoken_decode(const uint8_t *key, const char *bucket, const char *text,
                      size_t text_len, uint8_t **pos, size_t *pos_len) {
    int kind;
    return listtoken_decode_kind(key, bucket, text, text_len, 1, &kind, pos, pos_len);
}

/* ------------------------------------------------------------ usage tokens */

#define USAGETOKEN_VERSION 0x76
#define USAGETOKEN_HEAD (1 + 8 + 8 + 4 + 6 * 8)

/* Binds prefix and delimiter without ambiguity ("a"+"/b" vs "a/"+"b"). */
static uint64_t usagetoken_scope(const uint8_t *p, size_t pn, const uint8_t *d,
                                 size_t dn) {
    uint8_t len[4] = {(uint8_t)(pn >> 24), (uint8_t)(pn >> 16), (uint8_t)(pn >> 8),
                      (uint8_t)pn};
    uint64_t h = fnv64(0xcbf29ce484222325ULL, len, sizeof(len));
    return fnv64(fnv64(h, p, pn), d, dn);
}

static void put_be32(uint8_t *p, uint32_t v) {
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

char *usagetoken_encode(const uint8_t *key, const char *bucket, const uint8_t *prefix,
                        size_t pn, const uint8_t *delim, size_t dn,
                        const view_usage_resume *t) {
    size_t n = USAGETOKEN_HEAD + t->after_len + TOKEN_TAG_LEN;
    uint8_t *raw = malloc(n);
    if (!raw)
        return NULL;
    const uint64_t counters[6] = {t->open_objects, t->open_bytes, t->direct_objects,
                                  t->direct_bytes, t->total_objects, t->total_bytes};
    raw[0] = USAGETOKEN_VERSION;
    put_be64(raw + 1, fnv64(0xcbf29ce484222325ULL, bucket, strlen(bucket)));
    put_be64(raw + 9, usagetoken_scope(prefix, pn, delim, dn));
    put_be32(raw + 17, (uint32_t)t->open_len);
    for (int i = 0; i < 6; i++)
        put_be64(raw + 21 + 8 * i, counters[i]);
    if (t->after_len)
        memcpy(raw + USAGETOKEN_HEAD, t->after, t->after_len);
    char *s = token_tag(key, raw, n - TOKEN_TAG_LEN, raw + n - TOKEN_TAG_LEN) == 0
                  ? b64url_encode(raw, n) : NULL;
    free(raw);
    return s;
}

int usagetoken_decode(const uint8_t *key, const char *bucket, const uint8_t *prefix,
                      size_t pn, const uint8_t *delim, size_t dn, const char *text,
                      size_t text_len, view_usage_resume *t, uint8_t **after) {
    size_t n = 0;
    memset(t, 0, sizeof(*t));
    *after = NULL;
    uint8_t *raw = b64url_decode(text, text_len, &n);
    int rc = raw && n >= USAGETOKEN_HEAD + TOKEN_TAG_LEN && raw[0] == USAGETOKEN_VERSION &&
                     token_tag_ok(key, raw, n)
                 ? 0 : USAGETOKEN_INVALID;
    if (rc == 0 &&
        get_be64(raw + 1) != fnv64(0xcbf29ce484222325ULL, bucket, strlen(bucket)))
        rc = USAGETOKEN_OTHER_BUCKET;
    else if (rc == 0 && get_be64(raw + 9) != usagetoken_scope(prefix, pn, delim, dn))
        rc = USAGETOKEN_OTHER_SCOPE;
    size_t after_len = rc == 0 ? n - USAGETOKEN_HEAD - TOKEN_TAG_LEN : 0;
    if (rc == 0 && get_be32(raw + 17) > after_len)
        rc = USAGETOKEN_INVALID;
    if (rc == 0 && !(*after = malloc(after_len + 1)))
        rc = USAGETOKEN_INVALID;
    if (rc < 0) {
        free(raw);
        return rc;
    }
    uint64_t *counters[6] = {&t->open_objects, &t->open_bytes, &t->direct_objects,
                             &t->direct_bytes, &t->total_objects, &t->total_bytes};
    t->open_len = get_be32(raw + 17);
    for (int i = 0; i < 6; i++)
        *counters[i] = get_be64(raw + 21 + 8 * i);
    memcpy(*after, raw + USAGETOKEN_HEAD, after_len);
    t->after = *after;
    t->after_len = after_len;
    free(raw);
    return 0;
}
