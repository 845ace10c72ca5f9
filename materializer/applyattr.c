/* applyattr.c: the state machine's rules for the attributes a version or
 * a bucket carries beside its data (S3's tagging and ACL subresources):
 *
 *   SetObjectTags  key/bucket as PutObject; tags checked (attrs.h: at most
 *                  10, keys 1..128 bytes, values 0..256, keys unique) ->
 *                  InvalidArgument; the version (version_id "": the key's
 *                  current one; "null"; 16 hex digits) missing -> NoSuchKey
 *                  (no version id) or NoSuchVersion; a delete marker ->
 *                  MethodNotAllowed; else OK: the version's tags replaced
 *                  whole (none: removed), outcome version_id
 *   SetObjectAcl   the same, with a canned ACL (attrs.h) instead of tags
 *   SetBucketTags  missing bucket -> NoSuchBucket; at most 50 tags, else
 *   SetBucketAcl   as above -> InvalidArgument; else OK, a setting of the
 *                  bucket record (relayed to its other ranges as any)
 *
 * An attribute changes a version in place: its seq, size, etag and place
 * among the key's versions stay, so no counter moves; the current
 * version's `objects` row changes with it, so the bucket's indexes see a
 * tag they index change in the same batch.
 *
 * A circle with apply.c and applympu.c, on purpose: apply.c dispatches
 * these events here and uses the ACL check for CreateBucket and PutObject,
 * as applympu.c does for CreateUpload; these rules use apply.c's key gate
 * and rejection, which every key operation shares. */
#include "applyint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"

/* The tags of n pairs as attrs_tags_check takes them: 0, or 0 after
 * InvalidArgument (*ok 0), -1 out of memory. */
static int attr_tags_ok(apply_ev *a, Objlog__UserMeta *const *tags, size_t n, size_t max,
                        int *ok) {
    const char **k = calloc(n ? n : 1, sizeof(*k)), **v = calloc(n ? n : 1, sizeof(*v));
    if (!k || !v) {
        free(k);
        free(v);
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        k[i] = tags[i]->name;
        v[i] = tags[i]->value;
    }
    char why[300];
    *ok = attrs_tags_check(k, v, n, max, why, sizeof(why)) == 0;
    free(k);
    free(v);
    if (!*ok)
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT, "invalid tags: %s", why);
    return 0;
}

/* 1 when acl names a canned ACL, else 0 with InvalidArgument decided. */
static int attr_acl_ok(apply_ev *a, const char *acl) {
    if (attrs_acl_parse(acl) >= 0)
        return 1;
    apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
                 "%s is not a canned ACL (private, public-read, public-read-write, "
                 "authenticated-read, bucket-owner-read, bucket-owner-full-control)",
                 acl);
    return 0;
}

int apply_acl_ok(apply_ev *a, const char *acl) { return attr_acl_ok(a, acl); }

/* The version vid names ("": the current one): 1 found (*out owned), 0
 * rejected (outcome set), -1 error. After stage_key_begin. */
static int attr_version(apply_ev *a, const char *vid, Objlog__VersionRecord **out) {
    uint64_t seq = a->obj_seq_before;
    if (!vid[0] && !a->obj_live_before) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_KEY,
                     "%s has no current version", "the key");
        return 0;
    }
    if (strcmp(vid, "null") == 0) {
        objlog_key_header h;
        if (stage_load_header(a, &h) < 0)
            return -1;
        /* a key whose one version is its null one has no header row */
        if (!h.has_null && !(a->obj_live_before && a->obj_null_before)) {
            apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_VERSION,
                         "version %s does not exist", vid);
            return 0;
        }
        seq = h.has_null ? h.null_seq : a->obj_seq_before;
    } else if (vid[0] && keycodec_parse_version_id(vid, &seq) < 0) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
                     "invalid version id %s", vid);
        return 0;
    }
    int rc = stage_load_version(a, seq, out);
    if (rc < 0)
        return -1;
    if (rc == 0 || (vid[0] && strcmp((*out)->version_id, vid) != 0)) {
        if (rc == 1)
            objlog__version_record__free_unpacked(*out, NULL);
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_VERSION,
                     "version %s does not exist", vid);
        return 0;
    }
    if ((*out)->delete_marker) {
        objlog__version_record__free_unpacked(*out, NULL);
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_METHOD_NOT_ALLOWED,
                     "version %s is a delete marker, which has no tags or ACL",
                     vid[0] ? vid : "current");
        return 0;
    }
    return 1;
}

/* 1 if the tag sets hold the same pairs, in any order (keys are unique). */
static int tags_same(Objlog__UserMeta *const *x, size_t xn, Objlog__UserMeta *const *y,
                     size_t yn) {
    if (xn != yn)
        return 0;
    for (size_t i = 0; i < xn; i++) {
        size_t j = 0;
        while (j < yn && strcmp(x[i]->name, y[j]->name) != 0)
            j++;
        if (j == yn || strcmp(x[i]->value, y[j]->value) != 0)
            return 0;
    }
    return 1;
}

/* The change feed's name for the attribute write (NULL: nothing changed):
 * S3's ObjectTagging:Put or :Delete when the tags change, ObjectAcl:Put. */
static const char *attr_feed_event(apply_ev *a, const Objlog__ObjectMeta *m) {
    if (a->ev->op_case != OBJLOG__EVENT__OP_SET_OBJECT_TAGS)
        return "ObjectAcl:Put";
    const Objlog__SetObjectTags *st = a->ev->set_object_tags;
    size_t old_n = m ? m->n_tags : 0;
    if (tags_same(st->tags, st->n_tags, m ? m->tags : NULL, old_n))
        return NULL;
    return st->n_tags ? "ObjectTagging:Put" : "ObjectTagging:Delete";
}

/* The version's meta with the event's attribute in place, written back.
 * The event's strings and tags are borrowed for the write, then the
 * record's own are put back for its free. */
static int attr_rewrite(apply_ev *a, Objlog__VersionRecord *r) {
    Objlog__ObjectMeta empty = OBJLOG__OBJECT_META__INIT;
    Objlog__ObjectMeta *m = r->meta ? r->meta : &empty;
    Objlog__ObjectMeta keep = *m;
    if (a->ev->op_case == OBJLOG__EVENT__OP_SET_OBJECT_TAGS) {
        m->n_tags = a->ev->set_object_tags->n_tags;
        m->tags = a->ev->set_object_tags->tags;
    } else {
        const char *acl = a->ev->set_object_acl->acl;
        m->acl = (char *)(attrs_acl_parse(acl) == ATTRS_ACL_PRIVATE ? "" : acl);
    }
    r->meta = m;
    int rc = stage_rewrite_version(a, r);
    *m = keep;
    if (m == &empty)
        r->meta = NULL;
    return rc;
}

int apply_op_object_attrs(apply_ev *a) {
    bucket_state bs;
    int rc = apply_key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    int tags = a->ev->op_case == OBJLOG__EVENT__OP_SET_OBJECT_TAGS;
    const char *vid = tags ? a->ev->set_object_tags->version_id
                           : a->ev->set_object_acl->version_id;
    int ok = 1;
    if (tags && attr_tags_ok(a, a->ev->set_object_tags->tags, a->ev->set_object_tags->n_tags,
                             ATTRS_OBJECT_TAGS_MAX, &ok) < 0)
        return -1;
    if (!ok || (!tags && !attr_acl_ok(a, a->ev->set_object_acl->acl)))
        return 0;
    if (stage_key_begin(a) < 0)
        return -1;
    Objlog__VersionRecord *r;
    rc = attr_version(a, vid ? vid : "", &r);
    if (rc <= 0)
        return rc;
    snprintf(a->res.version_id, sizeof(a->res.version_id), "%s", r->version_id);
    a->feed_event = attr_feed_event(a, r->meta);
    a->feed_size = r->meta ? r->meta->size : 0;
    /* the record's strings are freed below: the etag is kept in res */
    snprintf(a->res.etag_buf, sizeof(a->res.etag_buf), "%s",
             r->meta && r->meta->etag ? r->meta->etag : "");
    a->feed_etag = a->res.etag_buf;
    rc = attr_rewrite(a, r);
    objlog__version_record__free_unpacked(r, NULL);
    return rc < 0 ? -1 : stage_key_end(a);
}

int apply_bucket_attrs(apply_ev *a, Objlog__BucketRecord *r, attr_keep *keep) {
    keep->n_tags = r->n_tags;
    keep->tags = r->tags;
    keep->acl = r->acl;
    if (a->ev->op_case == OBJLOG__EVENT__OP_SET_BUCKET_ACL) {
        const char *acl = a->ev->set_bucket_acl->acl;
        if (!attr_acl_ok(a, acl))
            return 0;
        r->acl = (char *)(attrs_acl_parse(acl) == ATTRS_ACL_PRIVATE ? "" : acl);
        return 1;
    }
    int ok;
    if (attr_tags_ok(a, a->ev->set_bucket_tags->tags, a->ev->set_bucket_tags->n_tags,
                     ATTRS_BUCKET_TAGS_MAX, &ok) < 0)
        return -1;
    if (!ok)
        return 0;
    r->n_tags = a->ev->set_bucket_tags->n_tags;
    r->tags = a->ev->set_bucket_tags->tags;
    return 1;
}

void apply_bucket_attrs_restore(Objlog__BucketRecord *r, const attr_keep *keep) {
    r->n_tags = keep->n_tags;
    r->tags = keep->tags;
    r->acl = keep->acl;
}
