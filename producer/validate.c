/* validate.c: the up-front checks of write arguments. A write that passes
 * them is accepted and gets exactly one callback; one that fails is refused
 * with an errstr and never reaches the log, so the state machine only sees
 * events an S3 frontend could have sent. Limits follow S3: bucket names by
 * S3's naming rules (schemas/bucketname.h), keys 1..1024 bytes of UTF-8,
 * user metadata <= 2 KiB (names plus values), part numbers 1..10000, part
 * etags an MD5. Where S3 sets no limit, a field still has one (FIELD_*),
 * so that one write cannot carry a huge event into the log: etags 128
 * bytes (an MD5, quoted, or "md5-N" fit; so does any frontend's own
 * scheme), content type 1024, blob id 1024, storage class 32 of
 * [A-Z0-9_] (S3's names: STANDARD, GLACIER_IR, ...), checksum 128 (S3's
 * base64 CRC and SHA digests are at most 44). Tags as S3's tag set: at
 * most 10, keys 1..128 and values 0..256 bytes of UTF-8, keys unique.
 *
 * No control character (0x00-0x1f, 0x7f; CR, LF and TAB too) in a value S3
 * gives back as a header value (etag, content type, blob id, checksum, user
 * metadata names and values) or in a tag: a frontend that copies one into
 * an answer would split its header section. Errors never quote a value
 * that holds one (they end up in JSON and XML answers). */
#include "producer_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "bucketname.h"
#include "attrs.h"
#include "keycodec.h"

#define KEY_MAX 1024
#define USER_META_MAX 2048
#define PART_NUMBER_MAX 10000
#define FIELD_ETAG_MAX 128
#define FIELD_CONTENT_TYPE_MAX 1024
#define FIELD_BLOB_ID_MAX 1024
#define FIELD_STORAGE_CLASS_MAX 32
#define FIELD_CHECKSUM_MAX 128
#define FIELD_SYSTEM_MAX 1024             /* Cache-Control, Expires... */
#define TAGS_MAX 10
#define TAG_KEY_MAX 128
#define TAG_VALUE_MAX 256

/* The offset of the first control character in v, or -1. */
static long validate_ctl_at(const char *v) {
    for (const char *c = v; c && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return (long)(c - v);
    return -1;
}

/* NULL or at most max bytes without a control character; the error names
 * the field and the size or the byte. */
static int validate_len(const char *what, const char *v, size_t max, char *errstr,
                        size_t errstr_size) {
    size_t n = v ? strlen(v) : 0;
    long at = validate_ctl_at(v);
    if (n > max) {
        snprintf(errstr, errstr_size, "invalid %s: %zu bytes, the limit is %zu", what, n,
                 max);
        return -1;
    }
    if (at >= 0) {
        snprintf(errstr, errstr_size, "invalid %s: control character 0x%02x at byte %ld",
                 what, (unsigned char)v[at], at);
        return -1;
    }
    return 0;
}

/* A user metadata entry's or a tag's name and value (what: "user
 * metadata", "tag"): no control character in either. */
static int validate_pair_text(const char *what, const objlog_user_meta *u, char *errstr,
                              size_t errstr_size) {
    long at = validate_ctl_at(u->name);
    if (at >= 0) {
        snprintf(errstr, errstr_size,
                 "invalid %s name: control character 0x%02x at byte %ld", what,
                 (unsigned char)u->name[at], at);
        return -1;
    }
    at = validate_ctl_at(u->value);
    if (at >= 0) {
        snprintf(errstr, errstr_size,
                 "invalid %s \"%.64s\": control character 0x%02x at byte %ld of its value",
                 what, u->name, (unsigned char)u->value[at], at);
        return -1;
    }
    return 0;
}

int validate_etag(const char *what, const char *etag, char *errstr, size_t errstr_size) {
    return validate_len(what, etag, FIELD_ETAG_MAX, errstr, errstr_size);
}

int validate_blob_id(const char *blob_id, char *errstr, size_t errstr_size) {
    return validate_len("blob id", blob_id, FIELD_BLOB_ID_MAX, errstr, errstr_size);
}

static int validate_storage_class(const char *v, char *errstr, size_t errstr_size) {
    if (validate_len("storage class", v, FIELD_STORAGE_CLASS_MAX, errstr, errstr_size) < 0)
        return -1;
    for (const char *c = v; c && *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')
            continue;
        snprintf(errstr, errstr_size,
                 "invalid storage class \"%s\": only A-Z, 0-9 and '_' (e.g. STANDARD)", v);
        return -1;
    }
    return 0;
}

int validate_bucket(const char *b, char *errstr, size_t errstr_size) {
    size_t n = b ? strlen(b) : 0;
    const char *why = bucketname_error(b, n);
    if (!why)
        return 0;
    /* a name with a control character is not quoted (see the top) */
    if (validate_ctl_at(b) >= 0)
        snprintf(errstr, errstr_size, "invalid bucket name: %s", why);
    else
        snprintf(errstr, errstr_size, "invalid bucket name \"%.64s\": %s", b ? b : "", why);
    return -1;
}

int validate_key(const char *key, size_t key_len, char *errstr,
                 size_t errstr_size) {
    if (!key || key_len == 0) {
        snprintf(errstr, errstr_size, "invalid key: must not be empty");
        return -1;
    }
    if (key_len > KEY_MAX) {
        snprintf(errstr, errstr_size,
                 "invalid key: %zu bytes, the limit is %d", key_len, KEY_MAX);
        return -1;
    }
    size_t ok = keycodec_utf8_valid_len((const uint8_t *)key, key_len);
    if (ok < key_len) {
        snprintf(errstr, errstr_size, "invalid key: not valid UTF-8 at byte %zu", ok);
        return -1;
    }
    return 0;
}

static int validate_tag(const objlog_user_meta *tags, size_t i, char *errstr,
                        size_t errstr_size) {
    const objlog_user_meta *t = &tags[i];
    if (!t->name || !*t->name || !t->value) {
        snprintf(errstr, errstr_size, "invalid tag %zu: key and value required", i);
        return -1;
    }
    if (validate_pair_text("tag", t, errstr, errstr_size) < 0)
        return -1;
    size_t kn = strlen(t->name), vn = strlen(t->value);
    if (kn > TAG_KEY_MAX || vn > TAG_VALUE_MAX) {
        snprintf(errstr, errstr_size,
                 "invalid tag \"%.64s\": key %zu bytes (limit %d), value %zu bytes (limit %d)",
                 t->name, kn, TAG_KEY_MAX, vn, TAG_VALUE_MAX);
        return -1;
    }
    if (keycodec_utf8_valid_len((const uint8_t *)t->name, kn) < kn ||
        keycodec_utf8_valid_len((const uint8_t *)t->value, vn) < vn) {
        snprintf(errstr, errstr_size, "invalid tag %zu: not valid UTF-8", i);
        return -1;
    }
    for (size_t j = 0; j < i; j++) {
        if (!strcmp(tags[j].name, t->name)) {
            snprintf(errstr, errstr_size, "invalid tags: key \"%.128s\" given twice", t->name);
            return -1;
        }
    }
    return 0;
}

static int validate_tags(const objlog_object_meta *meta, char *errstr, size_t errstr_size) {
    if (meta->n_tags && !meta->tags) {
        snprintf(errstr, errstr_size, "invalid tags: NULL list");
        return -1;
    }
    if (meta->n_tags > TAGS_MAX) {
        snprintf(errstr, errstr_size, "invalid tags: %zu tags, the limit is %d",
                 meta->n_tags, TAGS_MAX);
        return -1;
    }
    for (size_t i = 0; i < meta->n_tags; i++)
        if (validate_tag(meta->tags, i, errstr, errstr_size) < 0)
            return -1;
    return 0;
}

/* A multipart object's blobs: at most PARTS_MAX, each id a blob id, their
 * sizes adding up to the object's, and then no blob_id of its own. */
static int validate_parts(const objlog_object_meta *meta, char *errstr, size_t errstr_size) {
    if (!meta->n_parts)
        return 0;
    if (!meta->parts || meta->n_parts > PART_NUMBER_MAX) {
        snprintf(errstr, errstr_size, "invalid parts: %s",
                 meta->parts ? "more than 10000" : "NULL list");
        return -1;
    }
    if (meta->blob_id && *meta->blob_id) {
        snprintf(errstr, errstr_size, "invalid parts: an object of parts has no blob id of "
                                      "its own");
        return -1;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < meta->n_parts; i++) {
        if (validate_blob_id(meta->parts[i].blob_id, errstr, errstr_size) < 0)
            return -1;
        total += meta->parts[i].size;
    }
    if (total != meta->size) {
        snprintf(errstr, errstr_size, "invalid parts: their sizes add up to %llu bytes, the "
                 "object has %llu", (unsigned long long)total, (unsigned long long)meta->size);
        return -1;
    }
    return 0;
}

int validate_meta(const objlog_object_meta *meta, char *errstr,
                  size_t errstr_size) {
    if (!meta)
        return 0;
    if (validate_etag("etag", meta->etag, errstr, errstr_size) < 0 ||
        validate_len("content type", meta->content_type, FIELD_CONTENT_TYPE_MAX, errstr,
                     errstr_size) < 0 ||
        validate_blob_id(meta->blob_id, errstr, errstr_size) < 0 ||
        validate_storage_class(meta->storage_class, errstr, errstr_size) < 0 ||
        validate_len("checksum", meta->checksum, FIELD_CHECKSUM_MAX, errstr, errstr_size) < 0 ||
        validate_len("Cache-Control", meta->cache_control, FIELD_SYSTEM_MAX, errstr,
                     errstr_size) < 0 ||
        validate_len("Content-Disposition", meta->content_disposition, FIELD_SYSTEM_MAX,
                     errstr, errstr_size) < 0 ||
        validate_len("Content-Encoding", meta->content_encoding, FIELD_SYSTEM_MAX, errstr,
                     errstr_size) < 0 ||
        validate_len("Content-Language", meta->content_language, FIELD_SYSTEM_MAX, errstr,
                     errstr_size) < 0 ||
        validate_len("Expires", meta->expires, FIELD_SYSTEM_MAX, errstr, errstr_size) < 0)
        return -1;
    if (attrs_acl_parse(meta->acl) < 0) {
        snprintf(errstr, errstr_size, "invalid ACL %.64s: not a canned ACL", meta->acl);
        return -1;
    }
    if (validate_parts(meta, errstr, errstr_size) < 0)
        return -1;
    if (meta->n_user_meta && !meta->user_meta) {
        snprintf(errstr, errstr_size, "invalid user metadata: NULL list");
        return -1;
    }
    size_t total = 0;
    for (size_t i = 0; i < meta->n_user_meta; i++) {
        const objlog_user_meta *u = &meta->user_meta[i];
        if (!u->name || !*u->name || !u->value) {
            snprintf(errstr, errstr_size,
                     "invalid user metadata entry %zu: name and value required",
                     i);
            return -1;
        }
        if (validate_pair_text("user metadata", u, errstr, errstr_size) < 0)
            return -1;
        total += strlen(u->name) + strlen(u->value);
    }
    if (total > USER_META_MAX) {
        snprintf(errstr, errstr_size,
                 "invalid user metadata: %zu bytes, the limit is %d", total,
                 USER_META_MAX);
        return -1;
    }
    return validate_tags(meta, errstr, errstr_size);
}

int validate_version_id(const char *v, char *errstr, size_t errstr_size) {
    uint64_t seq;
    if (!v || !strcmp(v, "null") || keycodec_parse_version_id(v, &seq) == 0)
        return 0;
    snprintf(errstr, errstr_size,
             "invalid version id \"%s\": expected \"null\" or 16 hex digits",
             v);
    return -1;
}

/* Upload ids are version ids of the CreateUpload event (lower-case hex),
 * so the same parser decides. */
int validate_upload_id(const char *id, char *errstr, size_t errstr_size) {
    uint64_t seq;
    if (id && keycodec_parse_version_id(id, &seq) == 0)
        return 0;
    snprintf(errstr, errstr_size,
             "invalid upload id \"%s\": expected 16 hex digits", id ? id : "");
    return -1;
}

int validate_part_number(uint32_t n, char *errstr, size_t errstr_size) {
    if (n >= 1 && n <= PART_NUMBER_MAX)
        return 0;
    snprintf(errstr, errstr_size,
             "invalid part number %u: must be 1 to %d", n, PART_NUMBER_MAX);
    return -1;
}

int validate_part_etag(const char *etag, char *errstr, size_t errstr_size) {
    size_t n = etag ? strlen(etag) : 0;
    const char *hex = etag;
    /* S3 quotes ETags ("..."); the quotes are optional here. */
    if (n == 34 && etag[0] == '"' && etag[33] == '"') {
        hex = etag + 1;
        n = 32;
    }
    int ok = n == 32;
    for (size_t i = 0; ok && i < 32; i++)
        ok = isxdigit((unsigned char)hex[i]) != 0;
    if (ok)
        return 0;
    snprintf(errstr, errstr_size,
             "invalid part etag \"%.64s%s\": a part's etag is the MD5 of its bytes, "
             "32 hex digits", etag ? etag : "", n > 64 ? "..." : "");
    return -1;
}

/* Order and etag matching are the state machine's to judge (InvalidPart,
 * InvalidPartOrder are outcomes, as in S3); only the shape is checked. */
int validate_completed_parts(const objlog_completed_part *parts,
                             size_t n_parts, char *errstr,
                             size_t errstr_size) {
    if (n_parts < 1 || n_parts > PART_NUMBER_MAX || !parts) {
        snprintf(errstr, errstr_size,
                 "invalid part list: %zu parts, must be 1 to %d", n_parts,
                 PART_NUMBER_MAX);
        return -1;
    }
    for (size_t i = 0; i < n_parts; i++) {
        char sub[96];
        if (validate_part_number(parts[i].part_number, sub, sizeof(sub)) < 0 ||
            validate_etag("part etag", parts[i].etag, sub, sizeof(sub)) < 0) {
            snprintf(errstr, errstr_size, "part list entry %zu: %s", i, sub);
            return -1;
        }
    }
    return 0;
}
