/* attrs.c: see attrs.h. The canned ACL names are S3's; what each grants
 * is S3's too ("Canned ACL", Amazon S3 User Guide): bucket-owner-read and
 * bucket-owner-full-control grant the bucket's owner, who is the
 * object's owner here (a version is its bucket owner's), so they grant
 * nobody else. */
#include "attrs.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "keycodec.h"

static int attrs_utf8(const char *s, size_t n) {
    return keycodec_utf8_valid_len((const uint8_t *)s, n) == n;
}

int attrs_tags_check(const char *const *keys, const char *const *values, size_t n, size_t max,
                     char *why, size_t wn) {
    if (n > max) {
        snprintf(why, wn, "%zu tags: at most %zu", n, max);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t kn = keys[i] ? strlen(keys[i]) : 0, vn = values[i] ? strlen(values[i]) : 0;
        if (kn == 0 || kn > ATTRS_TAG_KEY_MAX || !attrs_utf8(keys[i], kn)) {
            snprintf(why, wn, "tag key \"%.128s\": 1..%d bytes of UTF-8", keys[i] ? keys[i] : "",
                     ATTRS_TAG_KEY_MAX);
            return -1;
        }
        if (vn > ATTRS_TAG_VALUE_MAX || (vn && !attrs_utf8(values[i], vn))) {
            snprintf(why, wn, "tag \"%.128s\": its value is at most %d bytes of UTF-8", keys[i],
                     ATTRS_TAG_VALUE_MAX);
            return -1;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(keys[j], keys[i]) == 0) {
                snprintf(why, wn, "tag key \"%.128s\" given twice", keys[i]);
                return -1;
            }
        }
    }
    return 0;
}

static const char *const attrs_acl_names[ATTRS_ACL_COUNT] = {
    "private", "public-read", "public-read-write", "authenticated-read",
    "bucket-owner-read", "bucket-owner-full-control"};

int attrs_acl_parse(const char *s) {
    if (!s || !*s)
        return ATTRS_ACL_PRIVATE;
    for (int i = 0; i < ATTRS_ACL_COUNT; i++)
        if (strcmp(s, attrs_acl_names[i]) == 0)
            return i;
    return -1;
}

const char *attrs_acl_name(attrs_acl a) {
    return a >= 0 && a < ATTRS_ACL_COUNT ? attrs_acl_names[a] : "private";
}

int attrs_acl_reads(attrs_acl a, int signed_caller) {
    return a == ATTRS_ACL_PUBLIC_READ || a == ATTRS_ACL_PUBLIC_READ_WRITE ||
           (a == ATTRS_ACL_AUTHENTICATED_READ && signed_caller);
}

int attrs_acl_writes(attrs_acl a) { return a == ATTRS_ACL_PUBLIC_READ_WRITE; }
