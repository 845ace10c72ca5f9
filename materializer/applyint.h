/* applyint.h: what the state machine's rule files share: apply.c (the
 * event, buckets, objects, lifecycle, indexes), applympu.c (multipart
 * uploads) and applyattr.c (tags and ACLs). Not public; the rules themselves are in apply.c's opening
 * comment and docs/ARCHITECTURE.md. */
#ifndef OBJLOG_APPLYINT_H
#define OBJLOG_APPLYINT_H

#include "stage.h"
#include "stake.h"

/* What object ops need to know about their bucket. */
typedef struct bucket_state {
    Objlog__Versioning versioning;
    uint64_t max_versions; /* the cap, default applied */
    stake_quota quota;               /* this partition's (stake.h) */
} bucket_state;

/* Decides the event's outcome: code and message (fmt has one %s, arg). */
void apply_reject(apply_ev *a, Objlog__OutcomeCode code, const char *fmt, const char *arg);
/* Gate of every key op: non-empty key, existing bucket. 1 passed (*bs
 * filled), 0 rejected (outcome set), -1 error. */
int apply_key_gate(apply_ev *a, bucket_state *bs);
/* The event's If-Match / If-None-Match against the key's current version:
 * 1 hold, 0 rejected (PreconditionFailed decided), -1 error. */
int apply_check_preconditions(apply_ev *a);
/* Writes meta as the key's new newest version following the bucket's
 * versioning (PutObject and CompleteUpload). 1 written, 0 refused by the
 * cap or quota (outcome set, nothing staged), -1 error. */
int apply_put_version(apply_ev *a, const bucket_state *bs, Objlog__ObjectMeta *meta);
/* Loads the upload row: 1 found (*out owned by the caller), 0 absent with
 * NoSuchUpload decided, -1 error. */
int apply_require_upload(apply_ev *a, const char *upload_id, Objlog__UploadRecord **out);

/* ---- applympu.c: the multipart operations ---- */
int apply_op_create_upload(apply_ev *a);
int apply_op_upload_part(apply_ev *a);
int apply_op_complete_upload(apply_ev *a);
int apply_op_abort_upload(apply_ev *a);

/* ---- applyattr.c: tags and ACLs ---- */
/* SetObjectTags, SetObjectAcl. */
int apply_op_object_attrs(apply_ev *a);
/* 1 when acl names a canned ACL ("" is private), else 0 with
 * InvalidArgument decided. */
int apply_acl_ok(apply_ev *a, const char *acl);
/* SetBucketTags, SetBucketAcl on the loaded record r: 1 changed (what r
 * held kept in *keep, for apply_bucket_attrs_restore before r is freed),
 * 0 rejected (outcome set), -1 error. */
typedef struct attr_keep {
    size_t n_tags;
    Objlog__UserMeta **tags;
    char *acl;
} attr_keep;
int apply_bucket_attrs(apply_ev *a, Objlog__BucketRecord *r, attr_keep *keep);
void apply_bucket_attrs_restore(Objlog__BucketRecord *r, const attr_keep *keep);

#endif
