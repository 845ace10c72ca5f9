/* listentry.c: a listing's entry from a stored VersionRecord, decoding
 * only what a listing shows (listentry.h): the version id, seq, delete
 * marker, log time, and of the meta its size, etag and storage class.
 * User metadata, tags, checksums and content types are skipped unread.
 *
 * The protobuf wire format (https://protobuf.dev/programming-guides/
 * encoding/): each field a varint tag (number << 3 | wire type), then a
 * varint (type 0), 8 bytes (1), a varint length and that many bytes (2)
 * or 4 bytes (5); groups (3, 4) are not in objlog's schema and are
 * refused. Invariant: for any record protobuf-c unpacks, the fields here
 * equal what its unpack gives (a later occurrence of a scalar wins, an
 * embedded message's occurrences merge); a record it would refuse as
 * truncated is refused here too. test_view checks both on random
 * records. */
#include "listentry.h"

#include <string.h>

typedef struct pb {
    const uint8_t *p, *end;
} pb;

static int pb_varint(pb *b, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end)
            return -1;
        uint8_t c = *b->p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* A length-delimited field's bytes. */
static int pb_bytes(pb *b, const uint8_t **s, size_t *n) {
    uint64_t len;
    if (pb_varint(b, &len) < 0 || len > (uint64_t)(b->end - b->p))
        return -1;
    *s = b->p;
    *n = (size_t)len;
    b->p += len;
    return 0;
}

static int pb_skip(pb *b, unsigned type) {
    uint64_t v;
    const uint8_t *s;
    size_t n;
    switch (type) {
    case 0: return pb_varint(b, &v);
    case 1: n = 8; break;
    case 2: return pb_bytes(b, &s, &n);
    case 5: n = 4; break;
    default: return -1;
    }
    if ((size_t)(b->end - b->p) < n)
        return -1;
    b->p += n;
    return 0;
}

/* A string field into the page (NUL-terminated). NULL out of memory. */
static const char *entry_str(page_arena *page, const uint8_t *s, size_t n) {
    char *c = page_arena_alloc(page, n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

static int entry_meta(view_version *out, const uint8_t *s, size_t n, page_arena *page) {
    pb b = {s, s + n};
    while (b.p < b.end) {
        uint64_t tag, v;
        const uint8_t *f;
        size_t fn;
        if (pb_varint(&b, &tag) < 0)
            return -1;
        unsigned num = (unsigned)(tag >> 3), type = (unsigned)(tag & 7);
        if (num == 1 && type == 0) { /* size */
            if (pb_varint(&b, &v) < 0)
                return -1;
            out->size = v;
        } else if ((num == 2 || num == 5) && type == 2) { /* etag, storage_class */
            if (pb_bytes(&b, &f, &fn) < 0)
                return -1;
            const char *str = entry_str(page, f, fn);
            if (!str)
                return -1;
            if (num == 2)
                out->etag = str;
            else
                out->storage_class = *str ? str : "STANDARD";
        } else if (pb_skip(&b, type) < 0) {
            return -1;
        }
    }
    return 0;
}

static int entry_version_id(view_version *out, pb *b) {
    const uint8_t *f;
    size_t fn;
    if (pb_bytes(b, &f, &fn) < 0)
        return -1;
    size_t n = fn < sizeof(out->version_id) - 1 ? fn : sizeof(out->version_id) - 1;
    memcpy(out->version_id, f, n);
    out->version_id[n] = '\0';
    return 0;
}

int list_entry_fill(view_version *out, const uint8_t *key, size_t kn, const char *val,
                    size_t vlen, page_arena *page) {
    memset(out, 0, sizeof(*out));
    out->etag = "";
    out->storage_class = "STANDARD";
    out->in_page = 1;
    pb b = {(const uint8_t *)val, (const uint8_t *)val + vlen};
    while (b.p < b.end) {
        uint64_t tag, v = 0;
        const uint8_t *f;
        size_t fn;
        if (pb_varint(&b, &tag) < 0)
            return -1;
        unsigned num = (unsigned)(tag >> 3), type = (unsigned)(tag & 7);
        int rc = 0;
        if ((num == 2 || num == 4 || num == 6) && type == 0) {
            rc = pb_varint(&b, &v);
            if (num == 2)
                out->seq = v;
            else if (num == 4)
                out->delete_marker = v != 0;
            else
                out->last_modified_ms = (int64_t)v;
        } else if (num == 3 && type == 2) {
            rc = entry_version_id(out, &b);
        } else if (num == 5 && type == 2) {
            rc = pb_bytes(&b, &f, &fn) < 0 ? -1 : entry_meta(out, f, fn, page);
        } else {
            rc = pb_skip(&b, type);
        }
        if (rc < 0)
            return -1;
    }
    out->key.data = page_arena_strndup(page, key, kn);
    if (!out->key.data)
        return -1;
    out->key.len = kn;
    return 0;
}
