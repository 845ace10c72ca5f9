/* test_lifecycle_apply.c: lifecycle rules decided by the state machine.
 * Each table row is one S3 lifecycle rule: events
 * stamped with log times days apart (apply_event's log_time_ms, as the
 * dedup-window test does), the exact outcome of each, and the resulting
 * `versions` rows and upload count. Every row runs against two real
 * RocksDB stores, one WriteBatch per event and the whole row in one batch
 * (a rebuild from the same log): both must dump byte for byte the same
 * (objlog_store_dump), and the usage counters must equal a recount of the
 * rows (stats_recount_check), so expirations keep the stats exact.
 *
 * Versions notation as test_apply.c: "a=M#5,#3:e1" = key a, a delete
 * marker made by step 5, then the version of step 3 (etag e1); "null"
 * for null versions; keys joined by ';'.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "apply.h"
#include "keycodec.h"
#include "lifecycle.h"
#include "materializer.h"
#include "proc.h"
#include "stats_recount.h"

#define NPARTS 4
#define EPOCH 1
#define MAX_STEPS 16
#define DAY OBJLOG_LC_DAY_MS
/* Day 0 of every row: a midnight UTC (2024-01-01), so days read simply. */
#define T0 1704067200000LL
#define H (60LL * 60 * 1000)

#define OK OBJLOG__OUTCOME_CODE__OUTCOME_OK
#define NOT_DUE OBJLOG__OUTCOME_CODE__OUTCOME_NOT_DUE
#define SKIPPED OBJLOG__OUTCOME_CODE__OUTCOME_LIFECYCLE_SKIPPED
#define INVALID OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT
#define NO_BUCKET OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET

/* One event at log time t. op:
 *   B create bucket "b" (arg U/E/S)      V set versioning (arg U/E/S)
 *   L set lifecycle: rules joined by '|', each space-separated tokens
 *     id=R exp=DAYS date=DAY(since T0) dm nc=DAYS keep=N abort=DAYS
 *     prefix=P tag=K:V meta=K:V gt=N lt=N off   ("" deletes the rules)
 *   P put key (arg "etag [s=size] [tag=K:V] [meta=K:V]"; size 7)
 *   D delete key (current)               M create upload of key
 *   E expire key (arg "RULE ACTION #n": action c current, n noncurrent,
 *     m delete marker, a abort upload; #n = step n's version or upload) */
typedef struct step {
    int64_t t;
    char op;
    const char *key;
    const char *arg;
    Objlog__OutcomeCode expect;
} step;

typedef struct row {
    const char *name;
    step steps[MAX_STEPS];
    const char *versions;
    int uploads;
} row;

#define AT(t, op, k, arg, code) {(t), (op), (k), (arg), (code)}
#define MKB(v) AT(T0, 'B', "", v, OK)
#define RULES(t, spec) AT(t, 'L', "", spec, OK)
#define PUT(t, k, arg) AT(t, 'P', k, arg, OK)
#define EXP(t, k, arg, code) AT(t, 'E', k, arg, code)
#define END {0, 0, NULL, NULL, OK}

static const row rows[] = {
    /* ---- Expiration of current versions, every versioning state ---- */
    /* S3: creation time + days, rounded up to the next midnight UTC. */
    {"unversioned_expiration_deletes_at_the_next_midnight_after_days",
     {MKB("U"), RULES(T0, "id=r exp=1"), PUT(T0 + 10 * H, "a", "e1"),
      EXP(T0 + DAY + 23 * H, "a", "r c #3", NOT_DUE),
      EXP(T0 + 2 * DAY, "a", "r c #3", OK), END},
     "", 0},
    {"enabled_expiration_adds_a_delete_marker",
     {MKB("E"), RULES(T0, "id=r exp=1"), PUT(T0 + H, "a", "e1"),
      EXP(T0 + 2 * DAY, "a", "r c #3", OK), END},
     "a=M#4,#3:e1", 0},
    {"suspended_expiration_adds_a_null_delete_marker",
     {MKB("S"), RULES(T0, "id=r exp=1"), PUT(T0 + H, "a", "e1"),
      EXP(T0 + 2 * DAY, "a", "r c #3", OK), END},
     "a=Mnull", 0},
    {"suspended_expiration_keeps_older_versions",
     {MKB("E"), RULES(T0, "id=r exp=1"), PUT(T0, "a", "e1"),
      AT(T0, 'V', "", "S", OK), PUT(T0 + H, "a", "e2"),
      EXP(T0 + 2 * DAY, "a", "r c #5", OK), END},
     "a=Mnull,#3:e1", 0},
    {"expiration_by_date",
     {MKB("U"), RULES(T0, "id=r date=3"), PUT(T0, "a", "e1"),
      EXP(T0 + 3 * DAY - 1, "a", "r c #3", NOT_DUE),
      EXP(T0 + 3 * DAY, "a", "r c #3", OK), END},
     "", 0},
    /* ---- races: the Expire pins what the worker saw ---- */
    {"unversioned_overwrite_after_the_scan_is_not_expired",
     {MKB("U"), RULES(T0, "id=r exp=1"), PUT(T0, "a", "e1"),
      PUT(T0 + 5 * DAY, "a", "e2"), EXP(T0 + 5 * DAY + 1, "a", "r c #3", SKIPPED),
      END},
     "a=null:e2", 0},
    {"enabled_overwrite_after_the_scan_is_not_expired",
     {MKB("E"), RULES(T0, "id=r exp=1"), PUT(T0, "a", "e1"),
      PUT(T0 + 5 * DAY, "a", "e2"), EXP(T0 + 5 * DAY + 1, "a", "r c #3", SKIPPED),
      END},
     "a=#4:e2,#3:e1", 0},
    {"delete_after_the_scan_is_not_expired_again",
     {MKB("U"), RULES(T0, "id=r exp=1"), PUT(T0, "a", "e1"),
      AT(T0 + 3 * DAY, 'D', "a", NULL, OK), EXP(T0 + 3 * DAY, "a", "r c #3", SKIPPED),
      END},
     "", 0},
    {"rule_removed_before_the_expire_applies",
     {MKB("U"), RULES(T0, "id=r exp=1"), PUT(T0, "a", "e1"), RULES(T0 + DAY, ""),
      EXP(T0 + 2 * DAY, "a", "r c #3", SKIPPED), END},
     "a=null:e1", 0},
    {"rule_disabled_before_the_expire_applies",
     {MKB("U"), RULES(T0, "id=r exp=1"), PUT(T0, "a", "e1"),
      RULES(T0 + DAY, "id=r exp=1 off"), EXP(T0 + 2 * DAY, "a", "r c #3", SKIPPED),
      END},
     "a=null:e1", 0},
    {"rule_lengthened_before_the_expire_applies_is_not_due",
     {MKB("E"), RULES(T0, "id=r exp=1"), PUT(T0, "a", "e1"),
      RULES(T0 + DAY, "id=r exp=10"), EXP(T0 + 2 * DAY, "a", "r c #3", NOT_DUE),
      EXP(T0 + 11 * DAY, "a", "r c #3", OK), END},
     "a=M#6,#3:e1", 0},
    {"rule_action_changed_before_the_expire_applies",
     {MKB("U"), RULES(T0, "id=r exp=1"), PUT(T0, "a", "e1"),
      RULES(T0 + DAY, "id=r abort=1"), EXP(T0 + 2 * DAY, "a", "r c #3", SKIPPED),
      END},
     "a=null:e1", 0},
    /* ---- filters ---- */
    {"filter_prefix_tags_metadata_and_size_must_all_hold",
     {MKB("U"), RULES(T0, "id=r exp=1 prefix=logs/ tag=class:tmp meta=app:x gt=5 lt=100"),
      PUT(T0, "logs/a", "e1 s=50 tag=class:tmp meta=app:x"),
      PUT(T0, "logs/b", "e2 s=50 meta=app:x"),               /* no tag */
      PUT(T0, "logs/c", "e3 s=50 tag=class:keep meta=app:x"), /* other value */
      PUT(T0, "logs/d", "e4 s=100 tag=class:tmp meta=app:x"), /* not < 100 */
      PUT(T0, "other", "e5 s=50 tag=class:tmp meta=app:x"),   /* prefix */
      PUT(T0, "logs/e", "e6 s=5 tag=class:tmp meta=app:x"),   /* not > 5 */
      EXP(T0 + 2 * DAY, "logs/a", "r c #3", OK),
      EXP(T0 + 2 * DAY, "logs/b", "r c #4", SKIPPED),
      EXP(T0 + 2 * DAY, "logs/c", "r c #5", SKIPPED),
      EXP(T0 + 2 * DAY, "logs/d", "r c #6", SKIPPED),
      EXP(T0 + 2 * DAY, "other", "r c #7", SKIPPED),
      EXP(T0 + 2 * DAY, "logs/e", "r c #8", SKIPPED), END},
     "logs/b=null:e2;logs/c=null:e3;logs/d=null:e4;logs/e=null:e6;other=null:e5", 0},
    /* ---- NoncurrentVersionExpiration ---- */
    /* Noncurrent since the next newer version's log time. */
    {"noncurrent_days_count_from_when_the_version_became_noncurrent",
     {MKB("E"), RULES(T0, "id=r nc=2"), PUT(T0, "a", "e1"),
      PUT(T0 + 10 * DAY + H, "a", "e2"),
      EXP(T0 + 12 * DAY + H, "a", "r n #3", NOT_DUE),
      EXP(T0 + 13 * DAY, "a", "r n #3", OK), END},
     "a=#4:e2", 0},
    {"noncurrent_never_expires_the_current_version",
     {MKB("E"), RULES(T0, "id=r nc=1"), PUT(T0, "a", "e1"),
      EXP(T0 + 5 * DAY, "a", "r n #3", SKIPPED), EXP(T0 + 5 * DAY, "a", "r c #3", SKIPPED),
      END},
     "a=#3:e1", 0},
    {"newer_noncurrent_versions_are_kept",
     {MKB("E"), RULES(T0, "id=r nc=1 keep=1"), PUT(T0, "a", "e1"),
      PUT(T0, "a", "e2"), PUT(T0, "a", "e3"),
      EXP(T0 + 2 * DAY, "a", "r n #4", SKIPPED), /* the one kept */
      EXP(T0 + 2 * DAY, "a", "r n #3", OK), END},
     "a=#5:e3,#4:e2", 0},
    {"noncurrent_marker_and_version_after_expiration_in_enabled",
     {MKB("E"), RULES(T0, "id=r exp=1 nc=1"), PUT(T0 + H, "a", "e1"),
      EXP(T0 + 2 * DAY, "a", "r c #3", OK),              /* marker #4 at day 2 */
      EXP(T0 + 2 * DAY + 12 * H, "a", "r n #3", NOT_DUE), /* day 3 */
      EXP(T0 + 3 * DAY, "a", "r n #3", OK), END},
     "a=M#4", 0},
    {"noncurrent_in_suspended_removes_the_old_version",
     {MKB("E"), RULES(T0, "id=r nc=1"), PUT(T0, "a", "e1"), AT(T0, 'V', "", "S", OK),
      PUT(T0 + DAY, "a", "e2"), EXP(T0 + 2 * DAY, "a", "r n #3", OK), END},
     "a=null:e2", 0},
    {"noncurrent_overwritten_then_removed_by_hand_is_skipped",
     {MKB("E"), RULES(T0, "id=r nc=1"), PUT(T0, "a", "e1"), PUT(T0, "a", "e2"),
      AT(T0 + DAY, 'D', "a", "#3", OK), EXP(T0 + 2 * DAY, "a", "r n #3", SKIPPED), END},
     "a=#4:e2", 0},
    /* ---- ExpiredObjectDeleteMarker ---- */
    {"expired_object_delete_marker_is_removed_when_alone",
     {MKB("E"), RULES(T0, "id=r exp=1 nc=1|id=m dm"), PUT(T0, "a", "e1"),
      EXP(T0 + 2 * DAY, "a", "r c #3", OK),
      EXP(T0 + 2 * DAY, "a", "m m #4", SKIPPED),  /* #3 still there */
      EXP(T0 + 3 * DAY, "a", "r n #3", OK),
      EXP(T0 + 3 * DAY, "a", "m m #4", OK), END},
     "", 0},
    {"suspended_null_marker_alone_is_removed",
     {MKB("S"), RULES(T0, "id=m dm"), PUT(T0, "a", "e1"), AT(T0, 'D', "a", NULL, OK),
      EXP(T0 + DAY, "a", "m m #4", OK), END},
     "", 0},
    {"marker_covered_by_a_new_put_is_skipped",
     {MKB("E"), RULES(T0, "id=m dm"), AT(T0, 'D', "a", NULL, OK), PUT(T0, "a", "e1"),
      EXP(T0 + DAY, "a", "m m #3", SKIPPED), END},
     "a=#4:e1,M#3", 0},
    /* ---- AbortIncompleteMultipartUpload, every versioning state ---- */
    {"unversioned_abort_incomplete_upload_after_days",
     {MKB("U"), RULES(T0, "id=r abort=2"), AT(T0 + 10 * H, 'M', "a", NULL, OK),
      EXP(T0 + 2 * DAY + 10 * H, "a", "r a #3", NOT_DUE),
      EXP(T0 + 3 * DAY, "a", "r a #3", OK),
      EXP(T0 + 3 * DAY, "a", "r a #3", SKIPPED), END},
     "", 0},
    {"enabled_abort_respects_the_prefix",
     {MKB("E"), RULES(T0, "id=r abort=1 prefix=tmp/"), AT(T0, 'M', "tmp/a", NULL, OK),
      AT(T0, 'M', "keep/a", NULL, OK), EXP(T0 + DAY, "tmp/a", "r a #3", OK),
      EXP(T0 + DAY, "keep/a", "r a #4", SKIPPED), END},
     "", 1},
    {"suspended_abort",
     {MKB("S"), RULES(T0, "id=r abort=1"), AT(T0, 'M', "a", NULL, OK),
      EXP(T0 + DAY, "a", "r a #3", OK), END},
     "", 0},
    /* ---- configuration checks (the API edge checks the same) ---- */
    {"invalid_configurations_are_InvalidArgument",
     {MKB("U"), AT(T0, 'L', "", "id=r", INVALID),           /* no action */
      AT(T0, 'L', "", "id=r exp=1|id=r exp=2", INVALID),     /* duplicate id */
      AT(T0, 'L', "", "id=r exp=1 date=2", INVALID),         /* days and date */
      AT(T0, 'L', "", "id=r exp=1 dm", INVALID),             /* marker with days */
      AT(T0, 'L', "", "id=r keep=2", INVALID),               /* keep without nc */
      AT(T0, 'L', "", "id=r abort=1 tag=a:b", INVALID),      /* tags with abort */
      AT(T0, 'L', "", "id=r exp=1 gt=10 lt=5", INVALID),     /* empty size range */
      AT(T0, 'L', "", "exp=1", INVALID),                     /* no id */
      AT(T0, 'P', "a", "e1", OK),
      EXP(T0 + 9 * DAY, "a", "r c #10", SKIPPED),            /* no rules at all */
      {T0, 'L', "", "id=r exp=1", OK}, END},
     "a=null:e1", 0},
    {"lifecycle_on_a_missing_bucket_is_NoSuchBucket",
     {AT(T0, 'L', "", "id=r exp=1", NO_BUCKET), AT(T0, 'E', "a", "r c #1", NO_BUCKET), END},
     "", 0},
};

/* ---- building events ---- */

#define MAX_RULES 4
#define MAX_PAIRS 4

/* Everything one event points at, so nothing is allocated. */
typedef struct evbuf {
    char text[512];
    Objlog__Event ev;
    Objlog__CreateBucket cb;
    Objlog__SetVersioning sv;
    Objlog__PutObject po;
    Objlog__ObjectMeta meta;
    Objlog__UserMeta pairs[2 * MAX_PAIRS];
    Objlog__UserMeta *tags[MAX_PAIRS], *um[MAX_PAIRS];
    Objlog__DeleteObject del;
    Objlog__CreateUpload cu;
    Objlog__SetLifecycle sl;
    Objlog__LifecycleRule rules[MAX_RULES];
    Objlog__LifecycleRule *rptr[MAX_RULES];
    Objlog__LifecycleFilter filters[MAX_RULES];
    Objlog__UserMeta fpairs[MAX_RULES][2 * MAX_PAIRS];
    Objlog__UserMeta *ftags[MAX_RULES][MAX_PAIRS], *fum[MAX_RULES][MAX_PAIRS];
    Objlog__Expire ex;
    char vid[KEYCODEC_VERSION_ID_LEN];
    uint8_t rid[16];
} evbuf;

static Objlog__Versioning versioning_of(const char *v) {
    if (v && v[0] == 'E')
        return OBJLOG__VERSIONING__VERSIONING_ENABLED;
    if (v && v[0] == 'S')
        return OBJLOG__VERSIONING__VERSIONING_SUSPENDED;
    return OBJLOG__VERSIONING__VERSIONING_UNVERSIONED;
}

/* "K:V" into p (tok is edited in place). */
static void pair_of(char *tok, Objlog__UserMeta *p) {
    Objlog__UserMeta init = OBJLOG__USER_META__INIT;
    *p = init;
    char *colon = strchr(tok, ':');
    assert_non_null(colon);
    *colon = '\0';
    p->name = tok;
    p->value = colon + 1;
}

static void parse_rule(evbuf *e, int i, char *spec) {
    Objlog__LifecycleRule ri = OBJLOG__LIFECYCLE_RULE__INIT;
    Objlog__LifecycleFilter fi = OBJLOG__LIFECYCLE_FILTER__INIT;
    Objlog__LifecycleRule *r = &e->rules[i];
    Objlog__LifecycleFilter *f = &e->filters[i];
    *r = ri;
    *f = fi;
    r->enabled = 1;
    r->filter = f;
    f->tags = e->ftags[i];
    f->user_metadata = e->fum[i];
    int np = 0;
    char *save = NULL;
    for (char *tok = strtok_r(spec, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *v = strchr(tok, '=');
        if (v)
            *v++ = '\0';
        if (!strcmp(tok, "id"))
            r->id = v;
        else if (!strcmp(tok, "exp"))
            r->expiration_days = (uint32_t)atoi(v);
        else if (!strcmp(tok, "date"))
            r->expiration_date_ms = T0 + atoi(v) * DAY;
        else if (!strcmp(tok, "dm"))
            r->expired_object_delete_marker = 1;
        else if (!strcmp(tok, "nc"))
            r->noncurrent_days = (uint32_t)atoi(v);
        else if (!strcmp(tok, "keep"))
            r->newer_noncurrent_versions = (uint32_t)atoi(v);
        else if (!strcmp(tok, "abort"))
            r->abort_incomplete_days = (uint32_t)atoi(v);
        else if (!strcmp(tok, "off"))
            r->enabled = 0;
        else if (!strcmp(tok, "prefix")) {
            f->prefix.data = (uint8_t *)v;
            f->prefix.len = strlen(v);
        } else if (!strcmp(tok, "tag")) {
            pair_of(v, &e->fpairs[i][np]);
            f->tags[f->n_tags++] = &e->fpairs[i][np++];
        } else if (!strcmp(tok, "meta")) {
            pair_of(v, &e->fpairs[i][np]);
            f->user_metadata[f->n_user_metadata++] = &e->fpairs[i][np++];
        } else if (!strcmp(tok, "gt"))
            f->size_greater_than = strtoull(v, NULL, 10);
        else if (!strcmp(tok, "lt"))
            f->size_less_than = strtoull(v, NULL, 10);
        else
            fail_msg("bad rule token %s", tok);
    }
    e->rptr[i] = r;
}

static void parse_put(evbuf *e, char *arg) {
    Objlog__ObjectMeta mi = OBJLOG__OBJECT_META__INIT;
    e->meta = mi;
    e->meta.size = 7;
    e->meta.tags = e->tags;
    e->meta.user_metadata = e->um;
    int np = 0;
    char *save = NULL;
    for (char *tok = strtok_r(arg, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (!strncmp(tok, "s=", 2)) {
            e->meta.size = strtoull(tok + 2, NULL, 10);
        } else if (!strncmp(tok, "tag=", 4)) {
            pair_of(tok + 4, &e->pairs[np]);
            e->meta.tags[e->meta.n_tags++] = &e->pairs[np++];
        } else if (!strncmp(tok, "meta=", 5)) {
            pair_of(tok + 5, &e->pairs[np]);
            e->meta.user_metadata[e->meta.n_user_metadata++] = &e->pairs[np++];
        } else {
            e->meta.etag = tok;
        }
    }
    e->po.meta = &e->meta;
}

static Objlog__ExpireAction action_of(char c) {
    switch (c) {
    case 'n': return OBJLOG__EXPIRE_ACTION__EXPIRE_NONCURRENT;
    case 'm': return OBJLOG__EXPIRE_ACTION__EXPIRE_DELETE_MARKER;
    case 'a': return OBJLOG__EXPIRE_ACTION__EXPIRE_ABORT_UPLOAD;
    default: return OBJLOG__EXPIRE_ACTION__EXPIRE_CURRENT;
    }
}

/* "RULE ACTION #n" */
static void parse_expire(evbuf *e, char *arg) {
    Objlog__Expire xi = OBJLOG__EXPIRE__INIT;
    e->ex = xi;
    char *save = NULL;
    e->ex.rule_id = strtok_r(arg, " ", &save);
    char *act = strtok_r(NULL, " ", &save);
    char *ref = strtok_r(NULL, " ", &save);
    assert_non_null(ref);
    e->ex.action = action_of(act[0]);
    uint64_t seq = keycodec_seq(EPOCH, atoi(ref + 1));
    e->ex.version_seq = seq;
    keycodec_version_id(seq, e->vid);
    e->ex.upload_id = e->vid;
}

/* The event of step s (number idx = its offset), pointing into e. */
static Objlog__Event *build_event(evbuf *e, const step *s, int idx) {
    memset(e, 0, sizeof(*e));
    Objlog__Event ei = OBJLOG__EVENT__INIT;
    Objlog__CreateBucket cbi = OBJLOG__CREATE_BUCKET__INIT;
    Objlog__SetVersioning svi = OBJLOG__SET_VERSIONING__INIT;
    Objlog__PutObject poi = OBJLOG__PUT_OBJECT__INIT;
    Objlog__DeleteObject di = OBJLOG__DELETE_OBJECT__INIT;
    Objlog__CreateUpload cui = OBJLOG__CREATE_UPLOAD__INIT;
    Objlog__SetLifecycle sli = OBJLOG__SET_LIFECYCLE__INIT;
    e->ev = ei;
    e->cb = cbi;
    e->sv = svi;
    e->po = poi;
    e->del = di;
    e->cu = cui;
    e->sl = sli;
    snprintf(e->text, sizeof(e->text), "%s", s->arg ? s->arg : "");
    memcpy(e->rid, &idx, sizeof(idx));
    Objlog__Event *ev = &e->ev;
    ev->request_id.data = e->rid;
    ev->request_id.len = sizeof(e->rid);
    ev->range_epoch = EPOCH;
    ev->bucket = "b";
    ev->key.data = (uint8_t *)s->key;
    ev->key.len = strlen(s->key);
    switch (s->op) {
    case 'B':
        e->cb.tenant = "t1";
        e->cb.versioning = versioning_of(s->arg);
        ev->op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
        ev->create_bucket = &e->cb;
        break;
    case 'V':
        e->sv.status = versioning_of(s->arg);
        ev->op_case = OBJLOG__EVENT__OP_SET_VERSIONING;
        ev->set_versioning = &e->sv;
        break;
    case 'L': {
        char *save = NULL;
        for (char *spec = strtok_r(e->text, "|", &save); spec;
             spec = strtok_r(NULL, "|", &save)) {
            assert_true(e->sl.n_rules < MAX_RULES);
            parse_rule(e, (int)e->sl.n_rules, spec);
            e->sl.n_rules++;
        }
        e->sl.rules = e->rptr;
        ev->op_case = OBJLOG__EVENT__OP_SET_LIFECYCLE;
        ev->set_lifecycle = &e->sl;
        break;
    }
    case 'P':
        parse_put(e, e->text);
        ev->op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
        ev->put_object = &e->po;
        break;
    case 'D':
        if (s->arg) {
            keycodec_version_id(keycodec_seq(EPOCH, atoi(s->arg + 1)), e->vid);
            e->del.version_id = e->vid;
        }
        ev->op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
        ev->delete_object = &e->del;
        break;
    case 'M':
        ev->op_case = OBJLOG__EVENT__OP_CREATE_UPLOAD;
        ev->create_upload = &e->cu;
        break;
    case 'E':
        parse_expire(e, e->text);
        ev->op_case = OBJLOG__EVENT__OP_EXPIRE;
        ev->expire = &e->ex;
        break;
    default:
        fail_msg("bad op %c", s->op);
    }
    return ev;
}

/* ---- fixture and dumps ---- */

typedef struct fixture {
    char dir[64];
    objlog_store *store;
    rangemap *rm;
} fixture;

static fixture *fixture_new(void) {
    fixture *f = calloc(1, sizeof(*f));
    char err[256];
    assert_non_null(f);
    assert_int_equal(proc_tmpdir(f->dir, sizeof(f->dir)), 0);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    f->rm = rangemap_new_default(NPARTS, EPOCH);
    return f;
}

static void fixture_free(fixture *f) {
    objlog_store_close(f->store);
    rangemap_destroy(f->rm);
    proc_rmtree(f->dir);
    free(f);
}

static int owner(const fixture *f, const char *key) {
    keybuf kb;
    keybuf_init(&kb);
    keycodec_route_key(&kb, "b", 1, (const uint8_t *)key, strlen(key));
    int p = rangemap_partition(f->rm, kb.data, kb.len);
    keybuf_free(&kb);
    return p;
}

static void write_batch(fixture *f, apply_batch *b) {
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write(objlog_store_db(f->store), wo, apply_batch_wb(b), &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
    apply_batch_written(b);
    apply_batch_clear(b);
}

static void append(char *out, size_t n, const char *s) {
    size_t l = strlen(out);
    snprintf(out + l, n - l, "%s", s);
}

/* `versions` in the notation above; also counts the upload rows. */
static void dump_versions(fixture *f, char *out, size_t n, int *uploads) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(f->store), ro, objlog_store_cf(f->store, OBJLOG_CF_VERSIONS));
    out[0] = '\0';
    keybuf last;
    keybuf_init(&last);
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (objlog_versions_row_is_header(k, kn))
            continue;
        const char *v = rocksdb_iter_value(it, &vn);
        keybuf b, key;
        size_t used;
        keybuf_init(&b);
        keybuf_init(&key);
        assert_int_equal(keycodec_parse_route_key(k, kn, &b, &key, &used), 0);
        Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
        assert_non_null(r);
        int same = last.len == key.len && !memcmp(last.data, key.data, key.len);
        char tok[96], ref[32];
        uint64_t seq;
        if (keycodec_parse_version_id(r->version_id, &seq) == 0)
            snprintf(ref, sizeof(ref), "#%llu", (unsigned long long)(seq & 0xFFFFFFFFFFFFULL));
        else
            snprintf(ref, sizeof(ref), "%s", r->version_id);
        if (out[0])
            append(out, n, same ? "," : ";");
        if (!same) {
            snprintf(tok, sizeof(tok), "%.*s=", (int)key.len, (char *)key.data);
            append(out, n, tok);
        }
        if (r->delete_marker)
            snprintf(tok, sizeof(tok), "M%s", ref);
        else
            snprintf(tok, sizeof(tok), "%s:%s", ref, r->meta ? r->meta->etag : "?");
        append(out, n, tok);
        keybuf_reset(&last);
        keybuf_append(&last, key.data, key.len);
        objlog__version_record__free_unpacked(r, NULL);
        keybuf_free(&b);
        keybuf_free(&key);
    }
    keybuf_free(&last);
    rocksdb_iter_destroy(it);
    it = rocksdb_create_iterator_cf(objlog_store_db(f->store), ro,
                                    objlog_store_cf(f->store, OBJLOG_CF_UPLOADS));
    *uploads = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (objlog_uploads_row_kind(k, kn, NULL, NULL, NULL, NULL) == OBJLOG_UPLOADS_ROW_UPLOAD)
            (*uploads)++;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

static char *dump_store(fixture *f) {
    char *buf = NULL, err[256];
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    assert_non_null(out);
    assert_int_equal(objlog_store_dump(f->store, out, err, sizeof(err)), 0);
    fclose(out);
    return buf;
}

/* Applies r into f, one batch per event or all in one; checks outcomes. */
static void run_row(const row *r, fixture *f, int one_batch) {
    apply_batch *b = apply_batch_new(f->store, f->rm);
    char err[256];
    int64_t next[NPARTS] = {0};
    for (int i = 0; i < MAX_STEPS && r->steps[i].op; i++) {
        const step *s = &r->steps[i];
        evbuf *e = malloc(sizeof(*e));
        assert_non_null(e);
        Objlog__Event *ev = build_event(e, s, i + 1);
        int p = owner(f, s->key);
        Objlog__OutcomeCode code;
        assert_int_equal(apply_event(b, p, i + 1, s->t, ev, &code, err, sizeof(err)), 0);
        free(e);
        if (code != s->expect)
            fail_msg("%s step %d (%c): outcome %d, want %d", r->name, i + 1, s->op,
                     code, s->expect);
        next[p] = i + 2;
        if (!one_batch)
            write_batch(f, b);
    }
    for (int p = 0; p < NPARTS; p++)
        if (next[p])
            apply_set_applied(b, p, next[p]);
    write_batch(f, b);
    apply_batch_destroy(b);
}

static void test_row(void **state) {
    const row *r = *state;
    fixture *a = fixture_new(), *b = fixture_new();
    run_row(r, a, 0);
    run_row(r, b, 1);
    char got[1024], err[256];
    int uploads;
    dump_versions(a, got, sizeof(got), &uploads);
    if (strcmp(got, r->versions))
        fail_msg("%s: versions '%s', want '%s'", r->name, got, r->versions);
    assert_int_equal(uploads, r->uploads);
    if (stats_recount_check(a->store, a->rm, NULL, err, sizeof(err)) < 0)
        fail_msg("%s: stats: %s", r->name, err);
    /* The rebuild: the same events in one batch dump identically. */
    char *da = dump_store(a), *db = dump_store(b);
    assert_string_equal(da, db);
    free(da);
    free(db);
    fixture_free(a);
    fixture_free(b);
}

/* ---- the pure rules ---- */

static void test_due_rounds_up_to_midnight_utc(void **state) {
    (void)state;
    assert_int_equal(objlog_lc_due_ms(T0, 1), T0 + DAY);
    assert_int_equal(objlog_lc_due_ms(T0 + 1, 1), T0 + 2 * DAY);
    assert_int_equal(objlog_lc_due_ms(T0 + 10 * H, 3), T0 + 4 * DAY);
    assert_int_equal(objlog_lc_due_ms(T0 - 1, 1), T0 + DAY);
    assert_int_equal(objlog_lc_due_ms(-1, 0), 0);
}

static void test_validate_messages(void **state) {
    (void)state;
    Objlog__LifecycleRule r = OBJLOG__LIFECYCLE_RULE__INIT;
    Objlog__LifecycleRule *rp = &r;
    char err[256];
    r.id = "keep-logs";
    assert_int_equal(objlog_lc_validate(&rp, 1, err, sizeof(err)), -1);
    assert_string_equal(err, "lifecycle rule keep-logs: at least one action is required "
                             "(expiration days or date, expired object delete marker, "
                             "noncurrent days, abort incomplete upload days)");
    r.expiration_date_ms = T0 + 1;
    assert_int_equal(objlog_lc_validate(&rp, 1, err, sizeof(err)), -1);
    assert_string_equal(err, "lifecycle rule keep-logs: expiration date must be a midnight UTC");
    r.expiration_date_ms = T0;
    assert_int_equal(objlog_lc_validate(&rp, 1, err, sizeof(err)), 0);
    assert_int_equal(objlog_lc_validate(NULL, 1001, err, sizeof(err)), -1);
    assert_string_equal(err, "a lifecycle configuration has at most 1000 rules");
}

int main(void) {
    size_t n = sizeof(rows) / sizeof(rows[0]);
    struct CMUnitTest *t = calloc(n + 2, sizeof(*t));
    for (size_t i = 0; i < n; i++) {
        t[i].name = rows[i].name;
        t[i].test_func = test_row;
        t[i].initial_state = (void *)&rows[i];
    }
    t[n].name = "due_rounds_up_to_midnight_utc";
    t[n].test_func = test_due_rounds_up_to_midnight_utc;
    t[n + 1].name = "validate_messages";
    t[n + 1].test_func = test_validate_messages;
    int rc = _cmocka_run_group_tests("lifecycle_apply", t, n + 2, NULL, NULL);
    free(t);
    return rc;
}
