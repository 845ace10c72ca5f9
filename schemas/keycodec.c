/* keycodec.c: the key layout of keycodec.h. Every function appends to a
 * keybuf and never reads past the lengths it is given; decoders reject
 * anything enc() could not have produced, so a forged key from the network
 * cannot be mistaken for a valid one. */
#include "keycodec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void keybuf_init(keybuf *kb) { memset(kb, 0, sizeof(*kb)); }

void keybuf_free(keybuf *kb) {
    free(kb->data);
    keybuf_init(kb);
}

void keybuf_reset(keybuf *kb) { kb->len = 0; }

int keybuf_reserve(keybuf *kb, size_t extra) {
    if (kb->len + extra <= kb->cap)
        return 0;
    size_t cap = kb->cap ? kb->cap : 64;
    while (cap < kb->len + extra)
        cap *= 2;
    uint8_t *p = realloc(kb->data, cap);
    if (!p)
        return -1;
    kb->data = p;
    kb->cap = cap;
    return 0;
}

int keybuf_append(keybuf *kb, const void *p, size_t n) {
    if (keybuf_reserve(kb, n) < 0)
        return -1;
    if (n)
        memcpy(kb->data + kb->len, p, n);
    kb->len += n;
    return 0;
}

uint16_t keycodec_bucket_hash(const char *bucket, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)bucket[i];
        h *= 0x100000001b3ULL;
    }
    return (uint16_t)(h >> 48);
}

int keycodec_append_escape(keybuf *kb, const uint8_t *s, size_t n) {
    if (keybuf_reserve(kb, 2 * n) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        kb->data[kb->len++] = s[i];
        if (s[i] == 0x00)
            kb->data[kb->len++] = 0xFF;
    }
    return 0;
}

int keycodec_append_enc(keybuf *kb, const uint8_t *s, size_t n) {
    static const uint8_t term[2] = {0x00, 0x01};
    if (keycodec_append_escape(kb, s, n) < 0)
        return -1;
    return keybuf_append(kb, term, 2);
}

int keycodec_append_be64(keybuf *kb, uint64_t v) {
    uint8_t b[8];
    for (int i = 7; i >= 0; i--, v >>= 8)
        b[i] = (uint8_t)v;
    return keybuf_append(kb, b, 8);
}

int keycodec_bucket_part(keybuf *kb, const char *b, size_t bn) {
    uint16_t h = keycodec_bucket_hash(b, bn);
    uint8_t hb[2] = {(uint8_t)(h >> 8), (uint8_t)h};
    if (keybuf_append(kb, hb, 2) < 0)
        return -1;
    return keycodec_append_enc(kb, (const uint8_t *)b, bn);
}

int keycodec_route_key(keybuf *kb, const char *b, size_t bn, const uint8_t *k,
                       size_t kn) {
    if (keycodec_bucket_part(kb, b, bn) < 0)
        return -1;
    return keycodec_append_enc(kb, k, kn);
}

int keycodec_version_row(keybuf *kb, const char *b, size_t bn,
                         const uint8_t *k, size_t kn, uint64_t seq) {
    if (keycodec_route_key(kb, b, bn, k, kn) < 0)
        return -1;
    return keycodec_append_be64(kb, UINT64_MAX - seq);
}

int keycodec_prefix_start(keybuf *kb, const char *b, size_t bn,
                          const uint8_t *p, size_t pn) {
    if (keycodec_bucket_part(kb, b, bn) < 0)
        return -1;
    return keycodec_append_escape(kb, p, pn);
}

int keycodec_prefix_end(keybuf *kb) {
    while (kb->len > 0) {
        if (kb->data[kb->len - 1] != 0xFF) {
            kb->data[kb->len - 1]++;
            return 0;
        }
        kb->len--;
    }
    return -1;
}

int keycodec_decode_enc(const uint8_t *in, size_t n, keybuf *out,
                        size_t *used) {
    size_t i = 0;
    while (i < n) {
        if (in[i] != 0x00) {
            if (keybuf_append(out, &in[i], 1) < 0)
                return -1;
            i++;
            continue;
        }
        if (i + 1 >= n)
            return -1;
        if (in[i + 1] == 0x01) {
            *used = i + 2;
            return 0;
        }
        if (in[i + 1] != 0xFF)
            return -1;
        if (keybuf_append(out, &in[i], 1) < 0)
            return -1;
        i += 2;
    }
    return -1; /* no terminator */
}

int keycodec_parse_route_key(const uint8_t *in, size_t n, keybuf *bucket,
                             keybuf *key, size_t *used) {
    size_t ub = 0, uk = 0;
    if (n < 2)
        return -1;
    if (keycodec_decode_enc(in + 2, n - 2, bucket, &ub) < 0)
        return -1;
    if (keycodec_decode_enc(in + 2 + ub, n - 2 - ub, key, &uk) < 0)
        return -1;
    *used = 2 + ub + uk;
    return 0;
}

uint64_t keycodec_seq(uint32_t epoch, int64_t offset) {
    return ((uint64_t)epoch << 48) | ((uint64_t)offset & 0xFFFFFFFFFFFFULL);
}

uint64_t keycodec_row_seq(const uint8_t *row, size_t n) {
    uint64_t v = 0;
    if (n < 8)
        return 0;
    for (size_t i = n - 8; i < n; i++)
        v = (v << 8) | row[i];
    return UINT64_MAX - v;
}

void keycodec_version_id(uint64_t seq, char out[KEYCODEC_VERSION_ID_LEN]) {
    snprintf(out, KEYCODEC_VERSION_ID_LEN, "%016llx", (unsigned long long)seq);
}

int keycodec_parse_version_id(const char *s, uint64_t *seq) {
    uint64_t v = 0;
    if (strlen(s) != 16)
        return -1;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else
            return -1;
        v = (v << 4) | (uint64_t)d;
    }
    *seq = v;
    return 0;
}

/* Length of the UTF-8 sequence at s (strict: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 if invalid. */
static size_t keycodec_utf8_seq(const uint8_t *s, size_t n) {
    uint8_t c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) {
        len = 2; cp = c & 0x1F; min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3; cp = c & 0x0F; min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4; cp = c & 0x07; min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

size_t keycodec_utf8_valid_len(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t l = keycodec_utf8_seq(s + i, n - i);
        if (!l)
            return i;
        i += l;
    }
    return n;
}

int keycodec_hex_digit(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
