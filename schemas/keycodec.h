/* keycodec.h: the byte layout of every RocksDB key and Kafka message key
 * (docs/ARCHITECTURE.md, "Keys and column families"). Owns enc()/escape(),
 * route keys, version rows, prefix ranges, sequence numbers, version ids
 * and read-after-write tokens.
 *
 * Layout, byte by byte:
 *
 *   enc(s)          = s with each 0x00 -> 0x00 0xFF, then 0x00 0x01
 *   bucket_part(b)  = hash16(b) (big-endian, top 16 bits of FNV-1a-64(b))
 *                     ‖ enc(b)
 *   route_key(b,k)  = bucket_part(b) ‖ enc(k)
 *   version_row(b,k,seq) = route_key(b,k) ‖ be64(UINT64_MAX - seq)
 *   prefix_start(b,P) = bucket_part(b) ‖ escape(P)      (no terminator)
 *   seq             = (range_epoch << 48) | kafka_offset
 *
 * Invariants the tests pin down (tests/test_keycodec.c):
 *   - for one bucket, memcmp order of route keys == byte order of keys
 *     ("a" < "a\0" < "ab"), for any bytes including 0x00 and 0xFF;
 *   - across buckets, order is (hash16(b), b, k);
 *   - k starts with P  <=>  prefix_start(b,P) <= route_key(b,k) <
 *     prefix_end(b,P);
 *   - version rows of one key sort newest (highest seq) first, and all sort
 *     after the key's route key and before the next key's route key.
 */
#ifndef OBJLOG_KEYCODEC_H
#define OBJLOG_KEYCODEC_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer: the one owner of its data; keybuf_free releases. */
typedef struct keybuf {
    uint8_t *data;
    size_t len;
    size_t cap;
} keybuf;

void keybuf_init(keybuf *kb);
void keybuf_free(keybuf *kb);
void keybuf_reset(keybuf *kb);
int keybuf_append(keybuf *kb, const void *p, size_t n); /* 0 or -1 (ENOMEM) */
/* Room for extra more bytes after len (data may move). 0 or -1 (ENOMEM). */
int keybuf_reserve(keybuf *kb, size_t extra);

uint16_t keycodec_bucket_hash(const char *bucket, size_t n);

int keycodec_append_escape(keybuf *kb, const uint8_t *s, size_t n);
int keycodec_append_enc(keybuf *kb, const uint8_t *s, size_t n);
int keycodec_append_be64(keybuf *kb, uint64_t v);

int keycodec_bucket_part(keybuf *kb, const char *b, size_t bn);
int keycodec_route_key(keybuf *kb, const char *b, size_t bn,
                       const uint8_t *k, size_t kn);
int keycodec_version_row(keybuf *kb, const char *b, size_t bn,
                         const uint8_t *k, size_t kn, uint64_t seq);
int keycodec_prefix_start(keybuf *kb, const char *b, size_t bn,
                          const uint8_t *p, size_t pn);
/* Turns kb (a prefix) into the smallest key greater than every key that
 * starts with it. Returns -1 if no such key exists (all 0xFF). */
int keycodec_prefix_end(keybuf *kb);

/* Decodes one enc() string from the front of in[0..n). Appends the raw
 * bytes to out and sets *used to the encoded length. -1 if malformed. */
int keycodec_decode_enc(const uint8_t *in, size_t n, keybuf *out, size_t *used);

/* Splits a route key (or the route-key part of a version row) into bucket
 * and key. *used = length of the route key part. -1 if malformed. */
int keycodec_parse_route_key(const uint8_t *in, size_t n, keybuf *bucket,
                             keybuf *key, size_t *used);

uint64_t keycodec_seq(uint32_t epoch, int64_t offset);
uint64_t keycodec_row_seq(const uint8_t *row, size_t n); /* from version row */

/* Version ids: "null" or 16 lowercase hex digits of seq. */
#define KEYCODEC_VERSION_ID_LEN 17
void keycodec_version_id(uint64_t seq, char out[KEYCODEC_VERSION_ID_LEN]);
int keycodec_parse_version_id(const char *s, uint64_t *seq); /* -1: invalid */

/* Keys and tenant names are UTF-8 (S3): the length of the valid prefix of
 * s[0..n), n when all of it is valid. Strict: no overlong forms, no
 * surrogates, nothing above U+10FFFF. The one validator of the producer
 * library and the gateway. */
size_t keycodec_utf8_valid_len(const uint8_t *s, size_t n);

/* The value of hex digit c (0-9, a-f, A-F), or -1 for any other byte. */
int keycodec_hex_digit(int c);

#endif
