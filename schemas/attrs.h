/* attrs.h: the rules of the attributes a version or a bucket carries
 * beside its data: tag sets and canned ACLs (S3's). The producer library,
 * the state machine and the S3 endpoint check them with this one module,
 * so an event the edge takes is one the state machine takes, and the other
 * way round. Pure: no I/O, no allocation. */
#ifndef OBJLOG_ATTRS_H
#define OBJLOG_ATTRS_H

#include <stddef.h>

#define ATTRS_OBJECT_TAGS_MAX 10  /* S3: an object's tag set */
#define ATTRS_BUCKET_TAGS_MAX 50  /* S3: a bucket's */
#define ATTRS_TAG_KEY_MAX 128
#define ATTRS_TAG_VALUE_MAX 256

/* A tag set of n pairs (keys[i], values[i], NUL-terminated UTF-8): at
 * most max pairs, keys 1..128 bytes, values 0..256, keys unique. 0, or -1
 * with why. */
int attrs_tags_check(const char *const *keys, const char *const *values, size_t n, size_t max,
                     char *why, size_t wn);

/* Canned ACLs: who besides the owner may read or write. */
typedef enum attrs_acl {
    ATTRS_ACL_PRIVATE = 0,         /* "" or "private" */
    ATTRS_ACL_PUBLIC_READ,
    ATTRS_ACL_PUBLIC_READ_WRITE,
    ATTRS_ACL_AUTHENTICATED_READ,
    ATTRS_ACL_BUCKET_OWNER_READ,
    ATTRS_ACL_BUCKET_OWNER_FULL_CONTROL,
    ATTRS_ACL_COUNT
} attrs_acl;
/* s's ACL, or -1 when s names none ("" is private). */
int attrs_acl_parse(const char *s);
/* Its name as S3 spells it ("private" for "" too). */
const char *attrs_acl_name(attrs_acl a);
/* Whether a caller who is not the owner may read (GET/HEAD an object,
 * list a bucket) or write (a bucket's objects) under a: anyone for the
 * public ACLs, a signed caller (signed 1) for authenticated-read. */
int attrs_acl_reads(attrs_acl a, int signed_caller);
int attrs_acl_writes(attrs_acl a);

#endif
