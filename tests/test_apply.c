/* test_apply.c: the state machine (materializer/apply.c) rule by rule. Each
 * table row is one S3 rule: a sequence of events, the exact outcome code and
 * version id of each, and the exact resulting `versions`, `objects` and
 * `buckets` contents. Every row runs twice against a real RocksDB: once with
 * one WriteBatch per event and once with the whole row in ONE batch, which
 * pins down read-your-writes inside a batch (both must give the same state).
 *
 * State notation, newest version first:
 *   versions "a=#3:e2,Mnull"  key a: version id of step 3 (etag e2), then a
 *                             null delete marker; keys joined by ';'
 *   objects  "a=#3:e2"        the current live version of each key
 *   buckets  "b:E"            bucket name and versioning (U/E/S)
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
#include "materializer.h"
#include "proc.h"

#define NPARTS 4
#define EPOCH 1
#define MAX_STEPS 12

#define OK OBJLOG__OUTCOME_CODE__OUTCOME_OK
#define NO_BUCKET OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET
#define EXISTS OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_ALREADY_EXISTS
#define NOT_EMPTY OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_NOT_EMPTY
#define PRECOND OBJLOG__OUTCOME_CODE__OUTCOME_PRECONDITION_FAILED
#define WRONG_RANGE OBJLOG__OUTCOME_CODE__OUTCOME_WRONG_RANGE
#define INVALID_ARG OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT

/* One event. op: B create bucket (arg: versioning U/E/S), X delete bucket,
 * V set versioning (arg U/E/S), Q set quota, P put (arg: etag), D delete
 * (arg: version ref or NULL), M create multipart upload. */
typedef struct step {
    char op;
    const char *bucket;
    const char *key;
    const char *arg;
    Objlog__OutcomeCode expect;
    const char *vid;       /* expected version id: "#n", "#" (this step),
                              "null" or "" */
    int marker;            /* expected delete_marker of the outcome */
    const char *if_match;
    int if_none_match;
    int rid;               /* request id number; 0 = fresh */
    int wrong_partition;   /* send it to a partition that does not own it */
} step;

typedef struct row {
    const char *name;
    step steps[MAX_STEPS];
    const char *versions;
    const char *objects;
    const char *buckets;
} row;

/* Shorthands so the table reads like the rule. */
#define MKB(b, v) {'B', b, "", v, OK, "", 0, NULL, 0, 0, 0}
#define PUT(k, e, vid) {'P', "b", k, e, OK, vid, 0, NULL, 0, 0, 0}
#define DEL(k, vid, mk) {'D', "b", k, NULL, OK, vid, mk, NULL, 0, 0, 0}
#define DELV(k, ref, mk) {'D', "b", k, ref, OK, ref, mk, NULL, 0, 0, 0}
#define SETV(v) {'V', "b", "", v, OK, "", 0, NULL, 0, 0, 0}
#define END {0, NULL, NULL, NULL, OK, NULL, 0, NULL, 0, 0, 0}

static const row rows[] = {
    {"create_bucket", {MKB("b", "E"), END}, "", "", "b:E"},
    {"create_bucket_twice_is_BucketAlreadyExists",
     {MKB("b", "U"), {'B', "b", "", "E", EXISTS, "", 0, NULL, 0, 0, 0}, END},
     "", "", "b:U"},
    {"put_without_bucket_is_NoSuchBucket",
     {{'P', "b", "a", "e1", NO_BUCKET, "", 0, NULL, 0, 0, 0}, END}, "", "", ""},
    {"put_empty_key_is_InvalidArgument",
     {MKB("b", "U"), {'P', "b", "", "e1", INVALID_ARG, "", 0, NULL, 0, 0, 0}, END},
     "", "", "b:U"},
    {"unversioned_put_replaces_the_null_version",
     {MKB("b", "U"), PUT("a", "e1", "null"), PUT("a", "e2", "null"),
      PUT("c", "e3", "null"), END},
     "a=null:e2;c=null:e3", "a=null:e2;c=null:e3", "b:U"},
    {"enabled_put_adds_a_version",
     {MKB("b", "E"), PUT("a", "e1", "#"), PUT("a", "e2", "#"), END},
     "a=#3:e2,#2:e1", "a=#3:e2", "b:E"},
    {"suspended_put_replaces_null_and_keeps_others",
     {MKB("b", "U"), PUT("a", "e1", "null"), SETV("E"), PUT("a", "e2", "#"),
      SETV("S"), PUT("a", "e3", "null"), END},
     "a=null:e3,#4:e2", "a=null:e3", "b:S"},
    {"suspended_put_replaces_a_null_version_in_the_middle",
     {MKB("b", "E"), PUT("a", "e1", "#"), SETV("S"), PUT("a", "e2", "null"),
      SETV("E"), PUT("a", "e3", "#"), SETV("S"), PUT("a", "e4", "null"), END},
     "a=null:e4,#6:e3,#2:e1", "a=null:e4", "b:S"},
    {"if_none_match_fails_on_a_live_version",
     {MKB("b", "U"), PUT("a", "e1", "null"),
      {'P', "b", "a", "e2", PRECOND, "", 0, NULL, 1, 0, 0},
      {'P', "b", "c", "e3", OK, "null", 0, NULL, 1, 0, 0}, END},
     "a=null:e1;c=null:e3", "a=null:e1;c=null:e3", "b:U"},
    {"if_none_match_succeeds_over_a_delete_marker",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1),
      {'P', "b", "a", "e2", OK, "#", 0, NULL, 1, 0, 0}, END},
     "a=#4:e2,M#3,#2:e1", "a=#4:e2", "b:E"},
    {"if_match_needs_the_current_etag",
     {MKB("b", "E"),
      {'P', "b", "a", "e1", PRECOND, "", 0, "e0", 0, 0, 0}, /* no object */
      PUT("a", "e1", "#"),
      {'P', "b", "a", "e2", OK, "#", 0, "\"e1\"", 0, 0, 0}, /* quoted ok */
      {'P', "b", "a", "e3", PRECOND, "", 0, "e1", 0, 0, 0}, /* stale etag */
      {'P', "b", "a", "e3", OK, "#", 0, "*", 0, 0, 0},
      DEL("a", "#", 1),
      {'P', "b", "a", "e4", PRECOND, "", 0, "e3", 0, 0, 0}, /* marker newest */
      END},
     "a=M#7,#6:e3,#4:e2,#3:e1", "", "b:E"},
    {"if_match_applies_to_delete",
     {MKB("b", "U"), PUT("a", "e1", "null"),
      {'D', "b", "a", NULL, PRECOND, "", 0, "e9", 0, 0, 0},
      {'D', "b", "a", NULL, OK, "", 0, "e1", 0, 0, 0}, END},
     "", "", "b:U"},
    {"unversioned_delete_removes_and_missing_key_is_ok",
     {MKB("b", "U"), PUT("a", "e1", "null"), DEL("a", "", 0), DEL("zz", "", 0),
      END},
     "", "", "b:U"},
    {"delete_without_bucket_is_NoSuchBucket",
     {{'D', "b", "a", NULL, NO_BUCKET, "", 0, NULL, 0, 0, 0}, END}, "", "", ""},
    {"enabled_delete_adds_a_marker",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1), DEL("n", "#", 1), END},
     "a=M#3,#2:e1;n=M#4", "", "b:E"},
    {"suspended_delete_replaces_null_with_a_null_marker",
     {MKB("b", "U"), PUT("a", "e1", "null"), SETV("E"), PUT("a", "e2", "#"),
      SETV("S"), DEL("a", "null", 1), END},
     "a=Mnull,#4:e2", "", "b:S"},
    {"delete_newest_version_reveals_the_next",
     {MKB("b", "E"), PUT("a", "e1", "#"), PUT("a", "e2", "#"), DELV("a", "#3", 0),
      END},
     "a=#2:e1", "a=#2:e1", "b:E"},
    {"delete_older_version_keeps_current",
     {MKB("b", "E"), PUT("a", "e1", "#"), PUT("a", "e2", "#"), DELV("a", "#2", 0),
      END},
     "a=#3:e2", "a=#3:e2", "b:E"},
    {"delete_the_marker_revives_the_object",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1), DELV("a", "#3", 1),
      END},
     "a=#2:e1", "a=#2:e1", "b:E"},
    {"delete_missing_version_is_ok_and_bad_id_is_InvalidArgument",
     {MKB("b", "E"), PUT("a", "e1", "#"), DELV("a", "00010000000000ff", 0),
      DELV("zz", "null", 0),
      {'D', "b", "a", "zz", INVALID_ARG, "", 0, NULL, 0, 0, 0}, END},
     "a=#2:e1", "a=#2:e1", "b:E"},
    {"delete_null_version_by_id",
     {MKB("b", "U"), PUT("a", "e1", "null"), SETV("E"), PUT("a", "e2", "#"),
      DELV("a", "null", 0), END},
     "a=#4:e2", "a=#4:e2", "b:E"},
    {"null_version_is_not_addressable_by_its_seq",
     {MKB("b", "U"), PUT("a", "e1", "null"), DELV("a", "0001000000000002", 0), END},
     "a=null:e1", "a=null:e1", "b:U"},
    {"delete_last_version_removes_the_key",
     {MKB("b", "E"), PUT("a", "e1", "#"), DELV("a", "#2", 0), END}, "", "", "b:E"},
    {"delete_bucket_with_versions_is_BucketNotEmpty",
     {MKB("b", "U"), PUT("a", "e1", "null"),
      {'X', "b", "", NULL, NOT_EMPTY, "", 0, NULL, 0, 0, 0}, END},
     "a=null:e1", "a=null:e1", "b:U"},
    {"delete_bucket_with_only_a_marker_is_BucketNotEmpty",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1), DELV("a", "#2", 0),
      {'X', "b", "", NULL, NOT_EMPTY, "", 0, NULL, 0, 0, 0},
      DELV("a", "#3", 1), {'X', "b", "", NULL, OK, "", 0, NULL, 0, 0, 0}, END},
     "", "", ""},
    {"delete_bucket",
     {{'X', "b", "", NULL, NO_BUCKET, "", 0, NULL, 0, 0, 0}, MKB("b", "U"),
      MKB("other", "U"), {'X', "b", "", NULL, OK, "", 0, NULL, 0, 0, 0}, END},
     "", "", "other:U"},
    {"versioning_cannot_return_to_unversioned",
     {{'V', "b", "", "E", NO_BUCKET, "", 0, NULL, 0, 0, 0}, MKB("b", "U"),
      SETV("U"), SETV("E"), {'V', "b", "", "U", INVALID_ARG, "", 0, NULL, 0, 0, 0},
      SETV("S"), END},
     "", "", "b:S"},
    {"set_quota",
     {{'Q', "b", "", NULL, NO_BUCKET, "", 0, NULL, 0, 0, 0}, MKB("b", "E"),
      {'Q', "b", "", NULL, OK, "", 0, NULL, 0, 0, 0}, END},
     "", "", "b:E"},
    {"wrong_partition_is_WrongRange",
     {{'B', "b", "", "U", WRONG_RANGE, "", 0, NULL, 0, 0, 1}, MKB("b", "U"),
      {'P', "b", "a", "e1", WRONG_RANGE, "", 0, NULL, 0, 0, 1}, END},
     "", "", "b:U"},
    {"multipart_arrives_later",
     {MKB("b", "U"), {'M', "b", "a", NULL, INVALID_ARG, "", 0, NULL, 0, 0, 0}, END},
     "", "", "b:U"},
    {"repeated_request_id_returns_the_stored_outcome",
     {{'B', "b", "", "E", OK, "", 0, NULL, 0, 1, 0},
      {'B', "b", "", "E", OK, "", 0, NULL, 0, 1, 0},  /* not AlreadyExists */
      {'P', "b", "a", "e1", OK, "#", 0, NULL, 0, 2, 0},
      {'P', "b", "a", "e1", OK, "#3", 0, NULL, 0, 2, 0}, /* no new version */
      {'P', "b", "a", "e2", OK, "#", 0, NULL, 0, 0, 0},
      {'P', "b", "a", "e1", OK, "#3", 0, NULL, 0, 2, 0},
      {'P', "x", "a", "e1", NO_BUCKET, "", 0, NULL, 0, 3, 0},
      MKB("x", "U"),
      {'P', "x", "a", "e1", NO_BUCKET, "", 0, NULL, 0, 3, 0}, END},
     "a=#5:e2,#3:e1", "a=#5:e2", "b:E;x:U"},
};

/* ---- fixture ---- */

typedef struct fixture {
    char dir[64];
    objlog_store *store;
    rangemap *rm;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    char err[256];
    assert_int_equal(proc_tmpdir(f->dir, sizeof(f->dir)), 0);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    f->rm = rangemap_new_default(NPARTS, EPOCH);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    objlog_store_close(f->store);
    rangemap_destroy(f->rm);
    proc_rmtree(f->dir);
    free(f);
    return 0;
}

static int owner(const fixture *f, const char *bucket, const char *key) {
    keybuf kb;
    keybuf_init(&kb);
    keycodec_route_key(&kb, bucket, strlen(bucket), (const uint8_t *)key,
                       strlen(key));
    int p = rangemap_partition(f->rm, kb.data, kb.len);
    keybuf_free(&kb);
    return p;
}

static Objlog__Versioning versioning_of(const char *v) {
    if (v && v[0] == 'E')
        return OBJLOG__VERSIONING__VERSIONING_ENABLED;
    if (v && v[0] == 'S')
        return OBJLOG__VERSIONING__VERSIONING_SUSPENDED;
    return OBJLOG__VERSIONING__VERSIONING_UNVERSIONED;
}

static void vid_of_step(int n, char out[KEYCODEC_VERSION_ID_LEN]) {
    keycodec_version_id(keycodec_seq(EPOCH, n), out);
}

/* "#n" -> version id of step n; "#" -> this step; anything else verbatim. */
static void resolve_vid(const char *ref, int self, char *out, size_t n) {
    char vid[KEYCODEC_VERSION_ID_LEN];
    if (ref && ref[0] == '#') {
        vid_of_step(ref[1] ? atoi(ref + 1) : self, vid);
        snprintf(out, n, "%s", vid);
    } else {
        snprintf(out, n, "%s", ref ? ref : "");
    }
}

/* Packs the step's event and decodes it back, as the consumer would. */
static Objlog__Event *step_event(const step *s, int idx) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    Objlog__DeleteBucket db = OBJLOG__DELETE_BUCKET__INIT;
    Objlog__SetVersioning sv = OBJLOG__SET_VERSIONING__INIT;
    Objlog__SetQuota sq = OBJLOG__SET_QUOTA__INIT;
    Objlog__Quota q = OBJLOG__QUOTA__INIT;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
    Objlog__DeleteObject dobj = OBJLOG__DELETE_OBJECT__INIT;
    Objlog__CreateUpload cu = OBJLOG__CREATE_UPLOAD__INIT;
    Objlog__Preconditions pre = OBJLOG__PRECONDITIONS__INIT;
    uint8_t rid[16] = {0};
    char vid[KEYCODEC_VERSION_ID_LEN];
    int r = s->rid ? 1000 + s->rid : idx;
    memcpy(rid, &r, sizeof(r));
    ev.request_id.data = rid;
    ev.request_id.len = sizeof(rid);
    ev.range_epoch = EPOCH;
    ev.bucket = (char *)s->bucket;
    ev.key.data = (uint8_t *)s->key;
    ev.key.len = strlen(s->key);
    if (s->if_match || s->if_none_match) {
        pre.if_match = (char *)(s->if_match ? s->if_match : "");
        pre.if_none_match = s->if_none_match;
        ev.pre = &pre;
    }
    switch (s->op) {
    case 'B':
        cb.tenant = "t1";
        cb.versioning = versioning_of(s->arg);
        ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
        ev.create_bucket = &cb;
        break;
    case 'X':
        ev.op_case = OBJLOG__EVENT__OP_DELETE_BUCKET;
        ev.delete_bucket = &db;
        break;
    case 'V':
        sv.status = versioning_of(s->arg);
        ev.op_case = OBJLOG__EVENT__OP_SET_VERSIONING;
        ev.set_versioning = &sv;
        break;
    case 'Q':
        q.max_bytes = 1000;
        sq.quota = &q;
        ev.op_case = OBJLOG__EVENT__OP_SET_QUOTA;
        ev.set_quota = &sq;
        break;
    case 'P':
        meta.etag = (char *)s->arg;
        meta.size = 7;
        po.meta = &meta;
        ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
        ev.put_object = &po;
        break;
    case 'D':
        resolve_vid(s->arg, idx, vid, sizeof(vid));
        dobj.version_id = vid;
        ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
        ev.delete_object = &dobj;
        break;
    case 'M':
        ev.op_case = OBJLOG__EVENT__OP_CREATE_UPLOAD;
        ev.create_upload = &cu;
        break;
    default:
        fail_msg("bad op %c", s->op);
    }
    size_t n = objlog__event__get_packed_size(&ev);
    uint8_t *buf = malloc(n);
    objlog__event__pack(&ev, buf);
    char why[128];
    Objlog__Event *out = apply_decode(buf, n, why, sizeof(why));
    free(buf);
    assert_non_null(out);
    return out;
}

static void write_batch(fixture *f, apply_batch *b) {
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write_writebatch_wi(objlog_store_db(f->store), wo, apply_batch_wb(b),
                                &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
    apply_batch_clear(b);
}

/* ---- state dumps ---- */

static void append(char *out, size_t n, const char *s) {
    size_t l = strlen(out);
    snprintf(out + l, n - l, "%s", s);
}

/* "#n" for a version id that is step n's, "null" for null, with marker and
 * etag decorations. */
static void version_token(const Objlog__VersionRecord *r, char *out, size_t n) {
    char ref[32];
    uint64_t seq;
    if (keycodec_parse_version_id(r->version_id, &seq) == 0)
        snprintf(ref, sizeof(ref), "#%llu",
                 (unsigned long long)(seq & 0xFFFFFFFFFFFFULL));
    else
        snprintf(ref, sizeof(ref), "%s", r->version_id);
    if (r->delete_marker)
        snprintf(out, n, "M%s", ref);
    else
        snprintf(out, n, "%s:%s", ref, r->meta ? r->meta->etag : "?");
}

/* Dumps a CF of version records; for `versions` also checks every header
 * row against the rows it describes. */
static void dump_records(fixture *f, objlog_cf cf, char *out, size_t n) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it =
        rocksdb_create_iterator_cf(objlog_store_db(f->store), ro,
                                   objlog_store_cf(f->store, cf));
    keybuf lastkey;
    keybuf_init(&lastkey);
    objlog_key_header h = {0, 0, 0};
    uint64_t seen = 0;
    int seen_null = 0, have_header = 0;
    out[0] = '\0';
    for (rocksdb_iter_seek_to_first(it);; rocksdb_iter_next(it)) {
        int valid = rocksdb_iter_valid(it);
        size_t kn = 0, vn = 0;
        const uint8_t *k = valid ? (const uint8_t *)rocksdb_iter_key(it, &kn) : NULL;
        int header = valid && cf == OBJLOG_CF_VERSIONS &&
                     objlog_versions_row_is_header(k, kn);
        if (cf == OBJLOG_CF_VERSIONS && (header || !valid) && have_header) {
            assert_int_equal(h.versions, seen); /* header counts its rows */
            assert_int_equal(h.has_null, seen_null);
        }
        if (!valid)
            break;
        const char *v = rocksdb_iter_value(it, &vn);
        if (header) {
            assert_int_equal(objlog_key_header_decode(v, vn, &h), 0);
            have_header = 1;
            seen = 0;
            seen_null = 0;
            continue;
        }
        keybuf b, key;
        size_t used;
        keybuf_init(&b);
        keybuf_init(&key);
        assert_int_equal(keycodec_parse_route_key(k, kn, &b, &key, &used), 0);
        Objlog__VersionRecord *r =
            objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
        assert_non_null(r);
        if (cf == OBJLOG_CF_VERSIONS) {
            assert_true(have_header); /* a version row always has a header */
            assert_int_equal(keycodec_row_seq(k, kn), r->seq);
            seen++;
            if (strcmp(r->version_id, "null") == 0) {
                seen_null = 1;
                assert_int_equal(h.null_seq, r->seq);
            }
        }
        int same = lastkey.len == key.len && !memcmp(lastkey.data, key.data, key.len);
        if (out[0])
            append(out, n, same ? "," : ";");
        if (!same) {
            char kbuf[64];
            snprintf(kbuf, sizeof(kbuf), "%.*s=", (int)key.len, (char *)key.data);
            append(out, n, kbuf);
        }
        char tok[64];
        version_token(r, tok, sizeof(tok));
        append(out, n, tok);
        keybuf_reset(&lastkey);
        keybuf_append(&lastkey, key.data, key.len);
        objlog__version_record__free_unpacked(r, NULL);
        keybuf_free(&b);
        keybuf_free(&key);
    }
    keybuf_free(&lastkey);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

static void dump_buckets(fixture *f, char *out, size_t n) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(f->store), ro, objlog_store_cf(f->store, OBJLOG_CF_BUCKETS));
    out[0] = '\0';
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t vn;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__BucketRecord *r =
            objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v);
        assert_non_null(r);
        char tok[64];
        snprintf(tok, sizeof(tok), "%s%s:%c", out[0] ? ";" : "", r->name,
                 "UES"[r->versioning]);
        append(out, n, tok);
        objlog__bucket_record__free_unpacked(r, NULL);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

/* Buckets sort by hash; the table lists them by name. */
static void sort_tokens(char *s) {
    char *tok[16];
    int n = 0;
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", s);
    for (char *p = strtok(copy, ";"); p && n < 16; p = strtok(NULL, ";"))
        tok[n++] = p;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(tok[j - 1], tok[j]) > 0; j--) {
            char *t = tok[j];
            tok[j] = tok[j - 1];
            tok[j - 1] = t;
        }
    s[0] = '\0';
    for (int i = 0; i < n; i++) {
        strcat(s, i ? ";" : "");
        strcat(s, tok[i]);
    }
}

/* ---- running a row ---- */

static void run_row(const row *r, int one_batch) {
    fixture *f;
    setup((void **)&f);
    apply_batch *b = apply_batch_new(f->store, f->rm);
    char err[256];
    int nsteps = 0;
    int part[MAX_STEPS];
    for (int i = 0; i < MAX_STEPS && r->steps[i].op; i++, nsteps++) {
        const step *s = &r->steps[i];
        int idx = i + 1; /* offset and version id of step i+1 */
        int p = owner(f, s->bucket, strchr("BXVQ", s->op) ? "" : s->key);
        if (s->wrong_partition)
            p = (p + 1) % NPARTS;
        part[i] = p;
        Objlog__Event *ev = step_event(s, idx);
        Objlog__OutcomeCode code;
        assert_int_equal(apply_event(b, p, idx, 5000 + idx, ev, &code, err,
                                     sizeof(err)), 0);
        objlog__event__free_unpacked(ev, NULL);
        if (code != s->expect)
            fail_msg("%s step %d: outcome %d, want %d", r->name, idx, code,
                     s->expect);
        if (!one_batch)
            write_batch(f, b);
    }
    write_batch(f, b);
    for (int i = 0; i < nsteps; i++) {
        const step *s = &r->steps[i];
        Objlog__Outcome *o = NULL;
        char want[KEYCODEC_VERSION_ID_LEN + 8];
        assert_int_equal(objlog_store_get_outcome(f->store, part[i], i + 1, &o,
                                                  err, sizeof(err)), 1);
        resolve_vid(s->vid, i + 1, want, sizeof(want));
        if (o->code != s->expect || strcmp(o->version_id, want) != 0 ||
            o->delete_marker != s->marker)
            fail_msg("%s step %d stored outcome: code %d vid '%s' marker %d; "
                     "want %d '%s' %d", r->name, i + 1, o->code, o->version_id,
                     o->delete_marker, s->expect, want, s->marker);
        if (s->op == 'P' && s->expect == OK && !s->rid)
            assert_string_equal(o->etag, s->arg);
        if (s->expect != OK)
            assert_true(o->message[0] != '\0');
        objlog__outcome__free_unpacked(o, NULL);
    }
    char got[1024], want[256];
    dump_records(f, OBJLOG_CF_VERSIONS, got, sizeof(got));
    if (strcmp(got, r->versions))
        fail_msg("%s (%s): versions '%s', want '%s'", r->name,
                 one_batch ? "one batch" : "batch per event", got, r->versions);
    dump_records(f, OBJLOG_CF_OBJECTS, got, sizeof(got));
    if (strcmp(got, r->objects))
        fail_msg("%s (%s): objects '%s', want '%s'", r->name,
                 one_batch ? "one batch" : "batch per event", got, r->objects);
    dump_buckets(f, got, sizeof(got));
    sort_tokens(got);
    snprintf(want, sizeof(want), "%s", r->buckets);
    sort_tokens(want);
    if (strcmp(got, want))
        fail_msg("%s: buckets '%s', want '%s'", r->name, got, want);
    apply_batch_destroy(b);
    teardown((void **)&f);
}

static void test_rule(void **state) {
    const row *r = *state;
    run_row(r, 0);
    run_row(r, 1);
}

/* The `objects` row is byte-identical to the newest version row. */
static void test_objects_mirror_newest_version(void **state) {
    fixture *f = *state;
    apply_batch *b = apply_batch_new(f->store, f->rm);
    char err[256];
    step s[] = {MKB("b", "E"), PUT("a", "e1", "#"), PUT("a", "e2", "#")};
    for (int i = 0; i < 3; i++) {
        Objlog__Event *ev = step_event(&s[i], i + 1);
        int p = owner(f, "b", i ? "a" : "");
        assert_int_equal(apply_event(b, p, i + 1, 77, ev, NULL, err, sizeof(err)), 0);
        objlog__event__free_unpacked(ev, NULL);
    }
    write_batch(f, b);
    keybuf rk, vr;
    keybuf_init(&rk);
    keybuf_init(&vr);
    keycodec_route_key(&rk, "b", 1, (const uint8_t *)"a", 1);
    keycodec_version_row(&vr, "b", 1, (const uint8_t *)"a", 1, keycodec_seq(EPOCH, 3));
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    size_t on, vn;
    char *e = NULL;
    char *ov = rocksdb_get_cf(objlog_store_db(f->store), ro,
                              objlog_store_cf(f->store, OBJLOG_CF_OBJECTS),
                              (char *)rk.data, rk.len, &on, &e);
    char *vv = rocksdb_get_cf(objlog_store_db(f->store), ro,
                              objlog_store_cf(f->store, OBJLOG_CF_VERSIONS),
                              (char *)vr.data, vr.len, &vn, &e);
    assert_non_null(ov);
    assert_non_null(vv);
    assert_int_equal(on, vn);
    assert_memory_equal(ov, vv, on);
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, on, (uint8_t *)ov);
    assert_int_equal(r->seq, keycodec_seq(EPOCH, 3));
    assert_int_equal(r->log_time_ms, 77);
    assert_int_equal(r->meta->size, 7);
    assert_memory_equal(r->key.data, "a", 1);
    objlog__version_record__free_unpacked(r, NULL);
    rocksdb_free(ov);
    rocksdb_free(vv);
    rocksdb_readoptions_destroy(ro);
    keybuf_free(&rk);
    keybuf_free(&vr);
    apply_batch_destroy(b);
}

/* Undecodable payloads: decode refuses them, apply_invalid records
 * InvalidEvent and counts them; applied offsets land in meta. */
static void test_invalid_events_and_meta(void **state) {
    fixture *f = *state;
    char why[128], err[256];
    assert_null(apply_decode("\xff\xff\xff", 3, why, sizeof(why)));
    assert_string_equal(why, "payload is not an objlog.Event");
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = "b";
    uint8_t buf[64];
    size_t n = objlog__event__pack(&ev, buf);
    assert_null(apply_decode(buf, n, why, sizeof(why)));
    assert_string_equal(why, "event has no operation");
    Objlog__DeleteBucket db = OBJLOG__DELETE_BUCKET__INIT;
    ev.bucket = "";
    ev.op_case = OBJLOG__EVENT__OP_DELETE_BUCKET;
    ev.delete_bucket = &db;
    n = objlog__event__pack(&ev, buf);
    assert_null(apply_decode(buf, n, why, sizeof(why)));
    assert_string_equal(why, "event has no bucket");

    apply_batch *b = apply_batch_new(f->store, f->rm);
    assert_int_equal(apply_invalid(b, 2, 10, 1, "bad one", err, sizeof(err)), 0);
    assert_int_equal(apply_invalid(b, 2, 11, 1, "bad two", err, sizeof(err)), 0);
    apply_set_applied(b, 2, 12);
    write_batch(f, b);
    assert_int_equal(apply_invalid(b, 2, 12, 1, "bad three", err, sizeof(err)), 0);
    write_batch(f, b);
    assert_int_equal(objlog_store_dlq_count(f->store, 2), 3);
    assert_int_equal(objlog_store_dlq_count(f->store, 1), 0);
    assert_int_equal(objlog_store_applied(f->store, 2), 12);
    assert_int_equal(objlog_store_applied(f->store, 3), 0);
    Objlog__Outcome *o;
    assert_int_equal(objlog_store_get_outcome(f->store, 2, 11, &o, err, sizeof(err)), 1);
    assert_int_equal(o->code, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT);
    assert_string_equal(o->message, "bad two");
    assert_int_equal(o->partition, 2);
    assert_int_equal(o->offset, 11);
    objlog__outcome__free_unpacked(o, NULL);
    assert_int_equal(objlog_store_get_outcome(f->store, 2, 13, &o, err, sizeof(err)), 0);
    apply_batch_destroy(b);
}

/* Reopening keeps everything (the CFs are found again, not recreated). */
static void test_store_reopen(void **state) {
    fixture *f = *state;
    char err[256];
    apply_batch *b = apply_batch_new(f->store, f->rm);
    apply_set_applied(b, 1, 42);
    write_batch(f, b);
    apply_batch_destroy(b);
    objlog_store_close(f->store);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    assert_int_equal(objlog_store_applied(f->store, 1), 42);
    for (int i = 0; i < OBJLOG_CF_COUNT; i++)
        assert_non_null(objlog_store_cf(f->store, (objlog_cf)i));
    assert_string_equal(objlog_cf_name(OBJLOG_CF_OUTCOMES), "outcomes");
    assert_null(objlog_cf_name(OBJLOG_CF_COUNT));
    assert_null(objlog_store_open("/proc/forbidden/x", err, sizeof(err)));
    assert_true(strstr(err, "open store") != NULL);
}

int main(void) {
    size_t nrows = sizeof(rows) / sizeof(rows[0]);
    struct CMUnitTest *t = calloc(nrows + 3, sizeof(*t));
    for (size_t i = 0; i < nrows; i++) {
        t[i].name = rows[i].name;
        t[i].test_func = test_rule;
        t[i].initial_state = (void *)&rows[i];
    }
    t[nrows] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_objects_mirror_newest_version, setup, teardown);
    t[nrows + 1] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_invalid_events_and_meta, setup, teardown);
    t[nrows + 2] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_store_reopen, setup, teardown);
    int rc = _cmocka_run_group_tests("apply", t, nrows + 3, NULL, NULL);
    free(t);
    return rc;
}
