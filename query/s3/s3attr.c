/* s3attr.c: S3's ?tagging and ?acl subresources of buckets and objects:
 * Get/Put/DeleteObjectTagging, Get/Put/DeleteBucketTagging,
 * Get/PutObjectAcl, Get/PutBucketAcl. Reads go through a fenced view (a
 * version as GetObject finds it, a bucket's record); writes are one event
 * each (SetObjectTags, SetObjectAcl, SetBucketTags, SetBucketAcl) that
 * the state machine judges (materializer/applyattr.c), so a tag or an ACL
 * changes in log order like any write and replays exactly.
 *
 * objlog keeps canned ACLs only (attrs.h). A PUT ?acl takes x-amz-acl, or
 * an AccessControlPolicy body whose grants are exactly those of a canned
 * ACL (the owner's FULL_CONTROL, plus AllUsers READ [and WRITE], or
 * AuthenticatedUsers READ); any other grant, and x-amz-grant-* headers,
 * are 501 NotImplemented naming what is missing: never a grant silently
 * dropped.
 *
 * Invariant: nothing here decides an outcome; what S3 refuses before
 * looking at state (malformed XML, bad tags, an unknown ACL) is refused
 * here, and the state machine checks the same rules again (attrs.h). */
#include "core.h"
#include "read.h"
#include "s3.h"
#include "s3xmlr.h"
#include "server.h"
#include "write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"

#define S3A_ALL_USERS "http://acs.amazonaws.com/groups/global/AllUsers"
#define S3A_AUTH_USERS "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"

/* ------------------------------------------------------------ tag sets */

typedef struct s3a_tags {
    size_t max;
    size_t n;
    char keys[ATTRS_BUCKET_TAGS_MAX + 1][ATTRS_TAG_KEY_MAX + 1];
    char values[ATTRS_BUCKET_TAGS_MAX + 1][ATTRS_TAG_VALUE_MAX + 1];
    int has_key, has_value;
} s3a_tags;

static int s3a_tags_cb(s3x *x, int end) {
    s3a_tags *t = x->arg;
    if (s3x_root(x, "Tagging", end) < 0)
        return -1;
    if (s3x_at(x, "Tagging/TagSet/Tag")) {
        if (!end) {
            if (t->n == t->max + 1) {
                x->error = "too many tags";
                return -1;
            }
            t->has_key = t->has_value = 0;
            return 0;
        }
        if (!t->has_key || !t->has_value) {
            x->error = "a Tag needs a Key and a Value";
            return -1;
        }
        t->n++;
        return 0;
    }
    if (!end || t->n > t->max)
        return 0;
    int key = s3x_at(x, "Tagging/TagSet/Tag/Key");
    if (!key && !s3x_at(x, "Tagging/TagSet/Tag/Value"))
        return 0;
    size_t cap = key ? ATTRS_TAG_KEY_MAX : ATTRS_TAG_VALUE_MAX;
    if (x->text_long || x->text_len > cap) {
        x->error = key ? "a tag Key is longer than 128 bytes"
                       : "a tag Value is longer than 256 bytes";
        return -1;
    }
    memcpy(key ? t->keys[t->n] : t->values[t->n], x->text, x->text_len + 1);
    *(key ? &t->has_key : &t->has_value) = 1;
    return 0;
}

/* The body's Tagging into t (at most max tags, S3's rules): 0, or -1
 * after replying (MalformedXML, InvalidTag). */
static int s3a_tags_parse(http_ctx *c, const s3_request *r, s3a_tags *t, size_t max) {
    t->max = max;
    if (s3x_parse(c, r, s3a_tags_cb, t) < 0)
        return -1;
    const char *keys[ATTRS_BUCKET_TAGS_MAX + 1], *values[ATTRS_BUCKET_TAGS_MAX + 1];
    for (size_t i = 0; i < t->n; i++) {
        keys[i] = t->keys[i];
        values[i] = t->values[i];
    }
    char why[300];
    if (attrs_tags_check(keys, values, t->n, max, why, sizeof(why)) == 0)
        return 0;
    http_reply_error(c, 400, "InvalidTag", "The tag provided was not a valid tag: %s", why);
    return -1;
}

/* The tags as the event's UserMeta list (pointing into t). */
static void s3a_tags_event(s3a_tags *t, Objlog__UserMeta *um, Objlog__UserMeta **ump) {
    for (size_t i = 0; i < t->n; i++) {
        objlog__user_meta__init(&um[i]);
        um[i].name = t->keys[i];
        um[i].value = t->values[i];
        ump[i] = &um[i];
    }
}

static void s3a_tagging_xml(http_ctx *c, Objlog__UserMeta *const *tags, size_t n) {
    xmlw x;
    if (xmlw_begin(&x, "Tagging") < 0) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    xmlw_open(&x, "TagSet");
    for (size_t i = 0; i < n; i++) {
        xmlw_open(&x, "Tag");
        xmlw_str(&x, "Key", tags[i]->name);
        xmlw_str(&x, "Value", tags[i]->value);
        xmlw_close(&x, "Tag");
    }
    xmlw_close(&x, "TagSet");
    s3_reply_xml(c, 200, &x, "Tagging");
}

/* ---------------------------------------------------------------- ACLs */

static void s3a_grant(xmlw *x, const char *type, const char *who, const char *perm) {
    xmlw_open(x, "Grant");
    int group = strcmp(type, "Group") == 0;
    xmlw_open_attrs(x, "Grantee",
                    group ? "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                            "xsi:type=\"Group\""
                          : "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                            "xsi:type=\"CanonicalUser\"");
    if (group) {
        xmlw_str(x, "URI", who);
    } else {
        xmlw_str(x, "ID", who);
        xmlw_str(x, "DisplayName", who);
    }
    xmlw_close(x, "Grantee");
    xmlw_str(x, "Permission", perm);
    xmlw_close(x, "Grant");
}

/* GetBucketAcl / GetObjectAcl: the owner and the grants acl makes. */
static void s3a_acl_xml(http_ctx *c, const char *owner, const char *acl) {
    xmlw x;
    if (xmlw_begin(&x, "AccessControlPolicy") < 0) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    s3_owner_xml(&x, "Owner", owner);
    xmlw_open(&x, "AccessControlList");
    s3a_grant(&x, "CanonicalUser", owner, "FULL_CONTROL");
    int a = attrs_acl_parse(acl);
    if (a == ATTRS_ACL_PUBLIC_READ || a == ATTRS_ACL_PUBLIC_READ_WRITE)
        s3a_grant(&x, "Group", S3A_ALL_USERS, "READ");
    if (a == ATTRS_ACL_PUBLIC_READ_WRITE)
        s3a_grant(&x, "Group", S3A_ALL_USERS, "WRITE");
    if (a == ATTRS_ACL_AUTHENTICATED_READ)
        s3a_grant(&x, "Group", S3A_AUTH_USERS, "READ");
    xmlw_close(&x, "AccessControlList");
    s3_reply_xml(c, 200, &x, "AccessControlPolicy");
}

/* An AccessControlPolicy body, as the grants it makes. */
typedef struct s3a_policy {
    int owner_full, all_read, all_write, auth_read, other;
    char type[32], uri[128], perm[32];
    int has_id;
    char unsupported[200];
} s3a_policy;

static void s3a_policy_grant(s3a_policy *p) {
    int all = strcmp(p->uri, S3A_ALL_USERS) == 0, auth = strcmp(p->uri, S3A_AUTH_USERS) == 0;
    if (strcmp(p->type, "CanonicalUser") == 0 && p->has_id && strcmp(p->perm, "FULL_CONTROL") == 0)
        p->owner_full = 1;
    else if (all && strcmp(p->perm, "READ") == 0)
        p->all_read = 1;
    else if (all && strcmp(p->perm, "WRITE") == 0)
        p->all_write = 1;
    else if (auth && strcmp(p->perm, "READ") == 0)
        p->auth_read = 1;
    else if (!p->other++)
        snprintf(p->unsupported, sizeof(p->unsupported), "%.31s %.31s to %.80s", p->perm,
                 p->type, p->uri[0] ? p->uri : "a user");
}

static int s3a_policy_cb(s3x *x, int end) {
    s3a_policy *p = x->arg;
    if (s3x_root(x, "AccessControlPolicy", end) < 0)
        return -1;
    if (s3x_at(x, "AccessControlPolicy/AccessControlList/Grant")) {
        if (!end) {
            p->type[0] = p->uri[0] = p->perm[0] = '\0';
            p->has_id = 0;
        } else {
            s3a_policy_grant(p);
        }
    } else if (!end && s3x_at(x, "AccessControlPolicy/AccessControlList/Grant/Grantee")) {
        const char *t = s3x_attr(x, "type");
        snprintf(p->type, sizeof(p->type), "%s", t ? t : "");
    } else if (end && s3x_at(x, "AccessControlPolicy/AccessControlList/Grant/Grantee/URI")) {
        snprintf(p->uri, sizeof(p->uri), "%.127s", x->text);
    } else if (end && s3x_at(x, "AccessControlPolicy/AccessControlList/Grant/Grantee/ID")) {
        p->has_id = 1;
    } else if (end && s3x_at(x, "AccessControlPolicy/AccessControlList/Grant/Permission")) {
        snprintf(p->perm, sizeof(p->perm), "%.31s", x->text);
    }
    return 0;
}

/* The canned ACL a PUT ?acl asks for: x-amz-acl, or the policy in its
 * body. NULL after replying (400 InvalidArgument, MalformedXML, 501). */
static const char *s3a_acl_asked(http_ctx *c, const s3_request *r) {
    const char *h;
    if (s3_acl_header(c, &h) < 0)
        return NULL;
    if (h)
        return h;
    s3a_policy p;
    memset(&p, 0, sizeof(p));
    if (s3x_parse(c, r, s3a_policy_cb, &p) < 0)
        return NULL;
    if (p.other || !p.owner_full || (p.all_write && !p.all_read) || (p.auth_read && p.all_read)) {
        http_reply_error(c, 501, "NotImplemented",
                         "objlog keeps canned ACLs only: these grants are none of them%s%s",
                         p.other ? ": " : "", p.other ? p.unsupported : "");
        return NULL;
    }
    return attrs_acl_name(p.all_write  ? ATTRS_ACL_PUBLIC_READ_WRITE
                          : p.all_read ? ATTRS_ACL_PUBLIC_READ
                          : p.auth_read ? ATTRS_ACL_AUTHENTICATED_READ
                                        : ATTRS_ACL_PRIVATE);
}

/* ------------------------------------------------------------- objects */

/* The version GetObject would read (?versionId=): 0 with *ver set, or -1
 * after replying (or parking on the fence). */
static int s3a_version(http_ctx *c, const s3_request *r, view_version *ver) {
    int32_t part;
    if (read_key_partition(c, r->bucket, (const uint8_t *)r->key, r->key_len, &part) < 0)
        return -1;
    view *v = read_fenced_view(c, &part, 1);
    if (!v)
        return -1;
    const char *vid = http_param_get(c, "versionId", NULL);
    char err[256];
    view_rc rc = view_get_object(v, r->bucket, (const uint8_t *)r->key, r->key_len, vid, ver,
                                 err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, r->bucket, err);
        return -1;
    }
    if (!ver->delete_marker)
        return 0;
    http_add_header(c, "x-amz-delete-marker", "true");
    if (vid)
        http_reply_error(c, 405, "MethodNotAllowed",
                         "The specified method is not allowed against this resource.");
    else
        http_reply_error(c, 404, "NoSuchKey", "The specified key does not exist.");
    view_version_free(ver);
    return -1;
}

static void s3a_version_header(http_ctx *c, const char *vid) {
    if (vid && *vid && strcmp(vid, "null") != 0)
        http_add_header(c, "x-amz-version-id", vid);
}

void s3_get_object_tagging(http_ctx *c, const s3_request *r) {
    view_version ver;
    if (s3a_version(c, r, &ver) < 0)
        return;
    const Objlog__ObjectMeta *m = ver.record->meta;
    s3a_version_header(c, ver.version_id);
    s3a_tagging_xml(c, m ? m->tags : NULL, m ? m->n_tags : 0);
    view_version_free(&ver);
}

/* One version's attribute as an event through the gateway. */
static void s3a_object_event(http_ctx *c, const s3_request *r, Objlog__Event *ev, int op) {
    ev->bucket = (char *)r->bucket;
    ev->key.data = (uint8_t *)r->key;
    ev->key.len = r->key_len;
    c->op = op;
    gateway_write_event(c, ev);
}

static const char *s3a_vid(http_ctx *c) {
    const char *v = http_param_get(c, "versionId", NULL);
    return v ? v : "";
}

static void s3a_set_object_tags(http_ctx *c, const s3_request *r, s3a_tags *t, int op) {
    Objlog__UserMeta um[ATTRS_OBJECT_TAGS_MAX], *ump[ATTRS_OBJECT_TAGS_MAX];
    s3a_tags_event(t, um, ump);
    Objlog__SetObjectTags st = OBJLOG__SET_OBJECT_TAGS__INIT;
    st.version_id = (char *)s3a_vid(c);
    st.n_tags = t->n;
    st.tags = t->n ? ump : NULL;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.op_case = OBJLOG__EVENT__OP_SET_OBJECT_TAGS;
    ev.set_object_tags = &st;
    s3a_object_event(c, r, &ev, op);
}

void s3_put_object_tagging(http_ctx *c, const s3_request *r) {
    s3a_tags *t = calloc(1, sizeof(*t));
    if (!t) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    if (s3a_tags_parse(c, r, t, ATTRS_OBJECT_TAGS_MAX) == 0)
        s3a_set_object_tags(c, r, t, S3_OP_PUT_TAGGING);
    free(t);
}

void s3_delete_object_tagging(http_ctx *c, const s3_request *r) {
    s3a_tags t0 = {.n = 0};
    s3a_set_object_tags(c, r, &t0, S3_OP_DELETE_TAGGING);
}

void s3_get_object_acl(http_ctx *c, const s3_request *r) {
    view_version ver;
    char owner[S3_OWNER_MAX];
    if (s3a_version(c, r, &ver) < 0)
        return;
    const Objlog__ObjectMeta *m = ver.record->meta;
    if (s3_bucket_owner(c, r->bucket, owner, sizeof(owner)) == 0) {
        s3a_version_header(c, ver.version_id);
        s3a_acl_xml(c, owner, m ? m->acl : NULL);
    }
    view_version_free(&ver);
}

void s3_put_object_acl(http_ctx *c, const s3_request *r) {
    const char *acl = s3a_acl_asked(c, r);
    if (!acl)
        return;
    Objlog__SetObjectAcl sa = OBJLOG__SET_OBJECT_ACL__INIT;
    sa.version_id = (char *)s3a_vid(c);
    sa.acl = (char *)acl;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.op_case = OBJLOG__EVENT__OP_SET_OBJECT_ACL;
    ev.set_object_acl = &sa;
    s3a_object_event(c, r, &ev, S3_OP_PUT_ACL);
}

/* ------------------------------------------------------------- buckets */

void s3_get_bucket_tagging(http_ctx *c, const s3_request *r) {
    view_bucket b;
    if (read_bucket_record(c, r->bucket, &b) < 0)
        return;
    if (b.record->n_tags == 0)
        http_reply_error(c, 404, "NoSuchTagSet", "The TagSet does not exist");
    else
        s3a_tagging_xml(c, b.record->tags, b.record->n_tags);
    view_bucket_free(&b);
}

static void s3a_set_bucket_tags(http_ctx *c, const s3_request *r, s3a_tags *t) {
    Objlog__UserMeta um[ATTRS_BUCKET_TAGS_MAX], *ump[ATTRS_BUCKET_TAGS_MAX];
    s3a_tags_event(t, um, ump);
    Objlog__SetBucketTags st = OBJLOG__SET_BUCKET_TAGS__INIT;
    st.n_tags = t->n;
    st.tags = t->n ? ump : NULL;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)r->bucket;
    ev.op_case = OBJLOG__EVENT__OP_SET_BUCKET_TAGS;
    ev.set_bucket_tags = &st;
    c->op = S3_OP_DELETE_TAGGING; /* 204, both */
    gateway_write_event(c, &ev);
}

void s3_put_bucket_tagging(http_ctx *c, const s3_request *r) {
    s3a_tags *t = calloc(1, sizeof(*t));
    if (!t) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    if (s3a_tags_parse(c, r, t, ATTRS_BUCKET_TAGS_MAX) == 0)
        s3a_set_bucket_tags(c, r, t);
    free(t);
}

void s3_delete_bucket_tagging(http_ctx *c, const s3_request *r) {
    s3a_tags t0 = {.n = 0};
    s3a_set_bucket_tags(c, r, &t0);
}

void s3_get_bucket_acl(http_ctx *c, const s3_request *r) {
    view_bucket b;
    if (read_bucket_record(c, r->bucket, &b) < 0)
        return;
    const char *tenant = b.record->tenant && *b.record->tenant ? b.record->tenant : S3_NO_OWNER;
    s3a_acl_xml(c, tenant, b.record->acl);
    view_bucket_free(&b);
}

void s3_put_bucket_acl(http_ctx *c, const s3_request *r) {
    const char *acl = s3a_acl_asked(c, r);
    if (!acl)
        return;
    Objlog__SetBucketAcl sa = OBJLOG__SET_BUCKET_ACL__INIT;
    sa.acl = (char *)acl;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)r->bucket;
    ev.op_case = OBJLOG__EVENT__OP_SET_BUCKET_ACL;
    ev.set_bucket_acl = &sa;
    c->op = S3_OP_PUT_ACL;
    gateway_write_event(c, &ev);
}
