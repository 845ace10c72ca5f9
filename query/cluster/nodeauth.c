/* nodeauth.c: the signatures the nodes of a cluster put on their
 * requests to each other (nodeauth.h). Pure: no evhttp, no clock. */
#include "nodeauth.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "keycodec.h"

int nodeauth_tenant_ok(const char *s) {
    size_t n = strlen(s);
    return n >= 1 && n <= NODEAUTH_MAX_TENANT_LEN && !strchr(s, '/') &&
           keycodec_utf8_valid_len((const uint8_t *)s, n) == n;
}

static void hex(const uint8_t *b, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

int nodeauth_key(const uint8_t *secret, size_t n, uint8_t key[NODEAUTH_KEY_LEN]) {
    static const char label[] = "objlog node authentication v1";
    unsigned int len = 0;
    return HMAC(EVP_sha256(), secret, (int)n, (const uint8_t *)label, sizeof(label) - 1, key,
                &len) && len == NODEAUTH_KEY_LEN ? 0 : -1;
}

/* The hex signature of the request at t into sig[65]. 0 or -1. */
static int nodeauth_mac(const uint8_t key[NODEAUTH_KEY_LEN], const char *method,
                        const char *target, const void *body, size_t body_len,
                        const char *subject, int64_t t, char sig[65]) {
    uint8_t h[32], mac[32];
    char bh[65], ts[24];
    unsigned int len = 0;
    if (!EVP_Digest(body_len ? body : "", body_len, h, &len, EVP_sha256(), NULL))
        return -1;
    hex(h, 32, bh);
    snprintf(ts, sizeof(ts), "%" PRId64, t);
    const char *parts[] = {"objlog-node-v1", method, target, bh, ts, subject};
    size_t total = 0, np = sizeof(parts) / sizeof(parts[0]);
    for (size_t i = 0; i < np; i++)
        total += strlen(parts[i]) + 1;
    char *msg = malloc(total);
    if (!msg)
        return -1;
    size_t w = 0;
    for (size_t i = 0; i < np; i++) {
        size_t l = strlen(parts[i]);
        memcpy(msg + w, parts[i], l);
        w += l;
        msg[w++] = '\n';
    }
    /* the last part is not followed by a newline */
    int ok = HMAC(EVP_sha256(), key, NODEAUTH_KEY_LEN, (const uint8_t *)msg, w - 1, mac, &len) &&
             len == 32;
    free(msg);
    if (!ok)
        return -1;
    hex(mac, 32, sig);
    return 0;
}

int nodeauth_sign(const uint8_t key[NODEAUTH_KEY_LEN], const char *method, const char *target,
                  const void *body, size_t body_len, const char *subject, int64_t now_s,
                  char *out, size_t n) {
    char sig[65];
    if (nodeauth_mac(key, method, target, body, body_len, subject, now_s, sig) < 0)
        return -1;
    int w = snprintf(out, n, "t=%" PRId64 ",sig=%s", now_s, sig);
    return w > 0 && (size_t)w < n ? 0 : -1;
}

int nodeauth_verify(const uint8_t key[NODEAUTH_KEY_LEN], const char *method,
                    const char *target, const void *body, size_t body_len,
                    const char *subject, const char *value, int64_t now_s, char *why,
                    size_t why_size) {
    long long t;
    char got[65], want[65];
    int used = 0;
    if (!value || sscanf(value, "t=%lld,sig=%64[0-9a-f]%n", &t, got, &used) != 2 ||
        value[used] || strlen(got) != 64) {
        snprintf(why, why_size, "malformed %s (t=UNIX-SECONDS,sig=HEX)", NODEAUTH_HEADER);
        return -1;
    }
    if (t < now_s - NODEAUTH_WINDOW_S || t > now_s + NODEAUTH_WINDOW_S) {
        snprintf(why, why_size, "node signature made at %lld, outside %d s of this node's "
                                "clock (%lld)", t, NODEAUTH_WINDOW_S, (long long)now_s);
        return -1;
    }
    if (nodeauth_mac(key, method, target, body, body_len, subject, t, want) < 0 ||
        CRYPTO_memcmp(got, want, 64) != 0) {
        snprintf(why, why_size, "node signature does not match (is the cluster's secret the "
                                "same on every node?)");
        return -1;
    }
    return 0;
}

int nodeauth_subject_format(const apisubject *s, char *out, size_t n) {
    if (s->admin)
        return snprintf(out, n, "admin") < (int)n ? 0 : -1;
    if (s->anonymous)
        return snprintf(out, n, "anon") < (int)n ? 0 : -1;
    static const char digits[] = "0123456789ABCDEF";
    size_t w = 0;
    if (n < 3)
        return -1;
    out[w++] = 't';
    out[w++] = ':';
    for (const unsigned char *p = (const unsigned char *)s->tenant; *p; p++) {
        int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || strchr("-._~", *p);
        if (w + (plain ? 1 : 3) >= n)
            return -1;
        if (plain) {
            out[w++] = (char)*p;
        } else {
            out[w++] = '%';
            out[w++] = digits[*p >> 4];
            out[w++] = digits[*p & 15];
        }
    }
    out[w] = '\0';
    return 0;
}

int nodeauth_subject_parse(const char *v, apisubject *out) {
    memset(out, 0, sizeof(*out));
    if (!v)
        return -1;
    if (strcmp(v, "admin") == 0 || strcmp(v, "node") == 0) {
        out->admin = 1;
        return 0;
    }
    if (strcmp(v, "open") == 0)
        return 1;
    if (strcmp(v, "anon") == 0) {
        out->anonymous = 1;
        return 0;
    }
    if (strncmp(v, "t:", 2) != 0)
        return -1;
    size_t w = 0;
    for (const char *p = v + 2; *p; p++) {
        int c = (unsigned char)*p;
        if (*p == '%') {
            int hi = keycodec_hex_digit((unsigned char)p[1]),
                lo = hi < 0 ? -1 : keycodec_hex_digit((unsigned char)p[2]);
            if (lo < 0)
                return -1;
            c = hi * 16 + lo;
            p += 2;
        }
        if (w == NODEAUTH_MAX_TENANT_LEN)
            return -1;
        out->tenant[w++] = (char)c;
    }
    out->tenant[w] = '\0';
    return nodeauth_tenant_ok(out->tenant) ? 0 : -1;
}
