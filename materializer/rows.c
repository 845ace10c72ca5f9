/* rows.c: the byte layout of the rows more than one module reads or
 * writes (materializer.h draws every column family): meta and outcome
 * keys, the per-key header of `versions`, the keys of `uploads` and
 * `stats` rows, and the big-endian integers all of them are made of.
 *
 * Invariant: each layout is encoded and decoded here only, so the state
 * machine that writes a row, the store that reads it, a checkpoint that
 * copies it and the query service that scans it cannot disagree on a
 * byte. Nothing here touches a store: every function is pure. */
#include "rows.h"

#include <string.h>

/* ---- big-endian integers ---- */

uint64_t apply_get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

uint32_t apply_get_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void apply_put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

void apply_put_be32(uint8_t *p, uint32_t v) {
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

/* ---- meta and outcome keys ---- */

size_t apply_meta_key(uint8_t out[APPLY_META_KEY_MAX], const char *name,
                      int32_t partition) {
    size_t n = strlen(name);
    memcpy(out, name, n);
    apply_put_be32(out + n, (uint32_t)partition);
    return n + 4;
}

void apply_outcome_key(uint8_t out[APPLY_OUTCOME_KEY_LEN], int32_t partition,
                       int64_t offset) {
    out[0] = 'o';
    apply_put_be32(out + 1, (uint32_t)partition);
    apply_put_be64(out + 5, (uint64_t)offset);
}

int objlog_store_meta_is_local(const void *key, size_t key_len) {
    size_t n = strlen(APPLY_META_TOKEN_SECRET);
    return key_len == n && memcmp(key, APPLY_META_TOKEN_SECRET, n) == 0;
}

/* ---- the per-key header row of `versions` ---- */

int objlog_key_header_decode(const void *val, size_t n, objlog_key_header *h) {
    const uint8_t *v = val;
    if (n != APPLY_HEADER_LEN || v[0] != 1)
        return -1;
    h->has_null = v[1] != 0;
    h->null_seq = apply_get_be64(v + 2);
    h->versions = apply_get_be64(v + 10);
    return 0;
}

void apply_header_encode(const objlog_key_header *h, uint8_t out[APPLY_HEADER_LEN]) {
    out[0] = 1;
    out[1] = h->has_null ? 1 : 0;
    apply_put_be64(out + 2, h->has_null ? h->null_seq : 0);
    apply_put_be64(out + 10, h->versions);
}

/* Length of the enc() string at the front of p, or 0 if there is none. */
static size_t enc_len(const uint8_t *p, size_t n) {
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] != 0x00)
            continue;
        if (p[i + 1] == 0x01)
            return i + 2;
        i++; /* 0x00 0xFF: an escaped zero byte */
    }
    return 0;
}

/* Length of the route key at the front of a `versions` row, 0 if none. */
static size_t route_key_len(const uint8_t *row, size_t n) {
    if (n < 2)
        return 0;
    size_t b = enc_len(row + 2, n - 2);
    if (!b)
        return 0;
    size_t k = enc_len(row + 2 + b, n - 2 - b);
    return k ? 2 + b + k : 0;
}

int objlog_versions_row_is_header(const void *row, size_t n) {
    size_t r = route_key_len(row, n);
    return r != 0 && r == n;
}

/* ---- `uploads` rows (layout in materializer.h) ---- */

objlog_uploads_row objlog_uploads_row_kind(const void *row, size_t n,
                                           size_t *rk_len,
                                           const uint8_t **upload_id,
                                           size_t *upload_id_len,
                                           uint32_t *part_number) {
    const uint8_t *r = row;
    size_t rk = route_key_len(r, n);
    if (!rk)
        return OBJLOG_UPLOADS_ROW_INVALID;
    size_t u = enc_len(r + rk, n - rk);
    /* upload ids are hex: no escaped zero bytes, raw = enc minus 00 01 */
    if (u < 3 || memchr(r + rk, 0, u - 2) != NULL)
        return OBJLOG_UPLOADS_ROW_INVALID;
    size_t rest = n - rk - u;
    if (rest != 0 && rest != 4)
        return OBJLOG_UPLOADS_ROW_INVALID;
    if (rk_len)
        *rk_len = rk;
    if (upload_id)
        *upload_id = r + rk;
    if (upload_id_len)
        *upload_id_len = u - 2;
    uint32_t pn = 0;
    for (size_t i = 0; i < rest; i++)
        pn = (pn << 8) | r[rk + u + i];
    if (part_number)
        *part_number = pn;
    return rest ? OBJLOG_UPLOADS_ROW_PART : OBJLOG_UPLOADS_ROW_UPLOAD;
}

int objlog_uploads_upload_key(keybuf *kb, const char *bucket, size_t bn,
                              const uint8_t *key, size_t kn,
                              const char *upload_id) {
    keybuf_reset(kb);
    if (keycodec_route_key(kb, bucket, bn, key, kn) < 0)
        return -1;
    return keycodec_append_enc(kb, (const uint8_t *)upload_id,
                               strlen(upload_id));
}

int objlog_uploads_part_key(keybuf *kb, const char *bucket, size_t bn,
                            const uint8_t *key, size_t kn,
                            const char *upload_id, uint32_t part_number) {
    uint8_t be[4];
    apply_put_be32(be, part_number);
    if (objlog_uploads_upload_key(kb, bucket, bn, key, kn, upload_id) < 0)
        return -1;
    return keybuf_append(kb, be, sizeof(be));
}

/* ---- `stats` rows (layout in materializer.h) ---- */

int objlog_stats_bucket_key(keybuf *kb, const char *bucket, size_t bn) {
    keybuf_reset(kb);
    return keybuf_append(kb, "b", 1) < 0 ? -1
                                         : keycodec_bucket_part(kb, bucket, bn);
}

int objlog_stats_stake_key(keybuf *kb, const uint8_t *stake, size_t n) {
    keybuf_reset(kb);
    return keybuf_append(kb, "b", 1) < 0 ? -1 : keybuf_append(kb, stake, n);
}

int objlog_bucket_stake_key(keybuf *kb, const uint8_t *bpart, size_t bn, int32_t p) {
    uint8_t be[4];
    apply_put_be32(be, (uint32_t)p);
    keybuf_reset(kb);
    return keybuf_append(kb, bpart, bn) < 0 ? -1 : keybuf_append(kb, be, sizeof(be));
}

int objlog_bucket_row_kind(const void *key, size_t n, size_t *bn, int32_t *p) {
    const uint8_t *k = key;
    keybuf name;
    size_t used = 0;
    keybuf_init(&name);
    int rc = n > 2 ? keycodec_decode_enc(k + 2, n - 2, &name, &used) : -1;
    keybuf_free(&name);
    if (rc < 0)
        return -1;
    *bn = 2 + used;
    if (n == *bn)
        return 0;
    if (n != *bn + 4 || apply_get_be32(k + *bn) > INT32_MAX)
        return -1;
    *p = (int32_t)apply_get_be32(k + *bn);
    return 1;
}

int objlog_stats_global_key(keybuf *kb, int32_t partition) {
    uint8_t be[4];
    apply_put_be32(be, (uint32_t)partition);
    keybuf_reset(kb);
    return keybuf_append(kb, "g", 1) < 0 ? -1 : keybuf_append(kb, be, sizeof(be));
}

int objlog_stats_tenant_prefix(keybuf *kb, const char *tenant) {
    keybuf_reset(kb);
    if (keybuf_append(kb, "t", 1) < 0)
        return -1;
    return keycodec_append_enc(kb, (const uint8_t *)tenant, strlen(tenant));
}

int objlog_stats_tenant_key(keybuf *kb, const char *tenant, int32_t partition) {
    uint8_t be[4];
    apply_put_be32(be, (uint32_t)partition);
    return objlog_stats_tenant_prefix(kb, tenant) < 0 ? -1
                                                      : keybuf_append(kb, be, sizeof(be));
}

/* A 'b' row's partition: a stake row names it (be32 after the bucket
 * part); a home row's is the owner of route_key(b, "") = bucket_part(b)
 * 00 01, as bucket events route. The hash is checked, so that a key
 * objlog_stats_bucket_key could not have made is malformed rather than
 * routed somewhere. */
static int stats_bucket_row_partition(const rangemap *rm, const uint8_t *k, size_t n) {
    keybuf name, rk;
    size_t bn = 0;
    int32_t stake = -1;
    int p = -1;
    keybuf_init(&name);
    keybuf_init(&rk);
    int kind = n >= 3 ? objlog_bucket_row_kind(k + 1, n - 1, &bn, &stake) : -1;
    size_t used = 0;
    if (kind >= 0 && keycodec_decode_enc(k + 3, bn - 2, &name, &used) == 0 &&
        keycodec_route_key(&rk, (const char *)name.data, name.len, (const uint8_t *)"", 0) == 0 &&
        memcmp(rk.data, k + 1, 2) == 0)
        p = kind == 1 ? stake : rangemap_partition(rm, rk.data, rk.len);
    keybuf_free(&name);
    keybuf_free(&rk);
    return p;
}

int objlog_stats_home_route(const void *key, size_t n, keybuf *rk) {
    const uint8_t *k = key;
    size_t bn = 0;
    int32_t stake = -1;
    if (n < 3 || k[0] != 'b' || objlog_bucket_row_kind(k + 1, n - 1, &bn, &stake) != 0)
        return 0;
    keybuf name;
    keybuf_init(&name);
    size_t used = 0;
    int home = keycodec_decode_enc(k + 3, bn - 2, &name, &used) == 0 &&
               keycodec_route_key(rk, (const char *)name.data, name.len, (const uint8_t *)"",
                                  0) == 0 &&
               memcmp(rk->data, k + 1, 2) == 0;
    keybuf_free(&name);
    return home;
}

/* The be32 partition that ends a 't' or 'g' row at k + at; -1 unless
 * exactly 4 bytes are left there and they hold a partition number. */
static int stats_be32_tail(const uint8_t *k, size_t n, size_t at) {
    if (n != at + 4)
        return -1;
    uint32_t p = apply_get_be32(k + at);
    return p > INT32_MAX ? -1 : (int)p;
}

int objlog_stats_row_partition(const rangemap *rm, const void *key, size_t n) {
    const uint8_t *k = key;
    if (!k || n == 0)
        return -1;
    if (k[0] == 'b')
        return rm ? stats_bucket_row_partition(rm, k, n) : -1;
    if (k[0] == 'g')
        return stats_be32_tail(k, n, 1);
    if (k[0] != 't')
        return -1;
    keybuf name;
    size_t used = 0;
    keybuf_init(&name);
    int rc = keycodec_decode_enc(k + 1, n - 1, &name, &used);
    keybuf_free(&name);
    return rc == 0 ? stats_be32_tail(k, n, 1 + used) : -1;
}
