/* s3authint.h: what the two halves of SigV4 share: s3auth.c (the
 * canonical request, signatures, the checker and the signers) and
 * s3chunked.c (aws-chunked bodies, whose chunk and trailer signatures
 * chain from the request's). No other file includes it; s3auth.h is the
 * public face of both.
 *
 * A chunk signature is computed with the same string signer
 * (s3auth_sign_string) as the request's, and a refusal goes through the
 * one s3auth_fail, which also wipes the signing key. */
#ifndef OBJLOG_QUERY_S3AUTHINT_H
#define OBJLOG_QUERY_S3AUTHINT_H

#include <stdlib.h>
#include <string.h>

#include "s3auth.h"

#define ALGORITHM "AWS4-HMAC-SHA256"
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define MSG_MISMATCH                                                          \
    "The request signature we calculated does not match the signature you "   \
    "provided. Check your key and signing method."

/* A growable string; oom set (and nothing more appended) once out of
 * memory. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static inline void sb_putn(sbuf *b, const char *s, size_t n) {
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static inline void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }
static inline void sb_putc(sbuf *b, char c) { sb_putn(b, &c, 1); }
static inline void sb_free(sbuf *b) { free(b->p); memset(b, 0, sizeof(*b)); }

static inline int s3auth_is_space(char c) { return c == ' ' || c == '\t'; }

/* hex(sha256(p[0..n))) into out: 0, or -1. */
int s3auth_sha256_hex(const void *p, size_t n, char out[65]);
/* hex(HMAC-SHA256(key, s[0..n))) into sig: 0, or -1. */
int s3auth_sign_string(const uint8_t key[32], const char *s, size_t n, char sig[65]);
/* 64 hex digits. */
int s3auth_signature_ok(const char *s);
/* An aws-chunked payload (signed or not, with a trailer or not). */
int s3auth_streaming(s3auth_payload p);
/* 1 when name is one of list's sep-separated names, case aside. */
int s3auth_list_has(const char *list, char sep, const char *name);
/* The refusal into a (status, code, message); drops the credential and
 * wipes the signing key. */
void s3auth_fail(s3auth *a, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void s3auth_fail_oom(s3auth *a);

#endif
