/* lifecycle.c: the pure lifecycle rules of lifecycle.h: validation, filter
 * matching, the due time of each action and the walk over one key's
 * versions. Invariant: every answer is a function of its arguments only
 * (records and a caller's log time), so the worker that proposes an Expire
 * and the state machine that decides it apply the very same rules, and a
 * replay decides them again identically. */
#include "lifecycle.h"

#include <stdio.h>
#include <string.h>

#include "materializer.h"


static int lc_fail(char *errstr, size_t es, const Objlog__LifecycleRule *r,
                   const char *what) {
    snprintf(errstr, es, "lifecycle rule %s: %s", r && r->id ? r->id : "?", what);
    return -1;
}

static int lc_has_conditions(const Objlog__LifecycleFilter *f) {
    return f && (f->n_tags || f->n_user_metadata || f->size_greater_than ||
                 f->size_less_than);
}

static int lc_pairs_valid(Objlog__UserMeta *const *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!p[i] || !p[i]->name || !p[i]->name[0])
            return 0;
    return 1;
}

static int lc_filter_valid(const Objlog__LifecycleRule *r, char *errstr, size_t es) {
    const Objlog__LifecycleFilter *f = r->filter;
    if (!f)
        return 0;
    if (f->prefix.len > 1024)
        return lc_fail(errstr, es, r, "filter prefix is longer than 1024 bytes");
    if (!lc_pairs_valid(f->tags, f->n_tags) ||
        !lc_pairs_valid(f->user_metadata, f->n_user_metadata))
        return lc_fail(errstr, es, r, "filter tag and metadata names must not be empty");
    if (f->size_greater_than && f->size_less_than &&
        f->size_greater_than >= f->size_less_than)
        return lc_fail(errstr, es, r,
                       "filter size_greater_than must be below size_less_than");
    if (f->n_tags && (r->expired_object_delete_marker || r->abort_incomplete_days))
        return lc_fail(errstr, es, r, "a tag filter cannot be combined with "
                       "ExpiredObjectDeleteMarker or AbortIncompleteMultipartUpload");
    return 0;
}

static int lc_days_valid(uint32_t d) { return d <= OBJLOG_LC_MAX_DAYS; }

static int lc_rule_valid(const Objlog__LifecycleRule *r, char *errstr, size_t es) {
    if (!r->id || !r->id[0] || strlen(r->id) > OBJLOG_LC_MAX_ID)
        return lc_fail(errstr, es, r, "id must be 1 to 255 characters");
    if (!r->expiration_days && !r->expiration_date_ms &&
        !r->expired_object_delete_marker && !r->noncurrent_days &&
        !r->abort_incomplete_days)
        return lc_fail(errstr, es, r, "at least one action is required (expiration "
                       "days or date, expired object delete marker, noncurrent "
                       "days, abort incomplete upload days)");
    if (!lc_days_valid(r->expiration_days) || !lc_days_valid(r->noncurrent_days) ||
        !lc_days_valid(r->abort_incomplete_days))
        return lc_fail(errstr, es, r, "days must be at most 36500");
    if (r->expiration_days && r->expiration_date_ms)
        return lc_fail(errstr, es, r, "expiration takes days or a date, not both");
    if (r->expiration_date_ms < 0 || r->expiration_date_ms % OBJLOG_LC_DAY_MS != 0)
        return lc_fail(errstr, es, r, "expiration date must be a midnight UTC");
    if (r->expired_object_delete_marker &&
        (r->expiration_days || r->expiration_date_ms))
        return lc_fail(errstr, es, r, "expired object delete marker cannot be "
                       "combined with expiration days or date");
    if (r->newer_noncurrent_versions && !r->noncurrent_days)
        return lc_fail(errstr, es, r, "newer noncurrent versions needs noncurrent days");
    if (r->newer_noncurrent_versions > OBJLOG_LC_MAX_NEWER_NONCURRENT)
        return lc_fail(errstr, es, r, "newer noncurrent versions must be at most 100");
    return lc_filter_valid(r, errstr, es);
}

int objlog_lc_validate(Objlog__LifecycleRule *const *rules, size_t n,
                       char *errstr, size_t errstr_size) {
    if (n > OBJLOG_LC_MAX_RULES) {
        snprintf(errstr, errstr_size, "a lifecycle configuration has at most %d rules",
                 OBJLOG_LC_MAX_RULES);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!rules[i])
            return lc_fail(errstr, errstr_size, NULL, "empty rule");
        if (lc_rule_valid(rules[i], errstr, errstr_size) < 0)
            return -1;
        /* n <= 1000: the quadratic check costs at most half a million
         * string compares, once per configuration. */
        for (size_t j = 0; j < i; j++)
            if (strcmp(rules[i]->id, rules[j]->id) == 0)
                return lc_fail(errstr, errstr_size, rules[i], "id is not unique");
    }
    return 0;
}

int64_t objlog_lc_due_ms(int64_t since_ms, uint32_t days) {
    int64_t t = since_ms + (int64_t)days * OBJLOG_LC_DAY_MS;
    int64_t r = t % OBJLOG_LC_DAY_MS;
    if (r < 0)
        r += OBJLOG_LC_DAY_MS;
    return r == 0 ? t : t - r + OBJLOG_LC_DAY_MS;
}

const Objlog__LifecycleRule *objlog_lc_rule(const Objlog__BucketRecord *br,
                                            const char *id) {
    for (size_t i = 0; br && id && i < br->n_lifecycle; i++)
        if (br->lifecycle[i]->id && strcmp(br->lifecycle[i]->id, id) == 0)
            return br->lifecycle[i];
    return NULL;
}

/* Each wanted pair is among have, with the same value. */
static int lc_pairs_hold(Objlog__UserMeta *const *want, size_t nw,
                         Objlog__UserMeta *const *have, size_t nh) {
    for (size_t i = 0; i < nw; i++) {
        size_t j = 0;
        for (; j < nh; j++)
            if (strcmp(want[i]->name, have[j]->name) == 0)
                break;
        if (j == nh)
            return 0;
        const char *a = want[i]->value ? want[i]->value : "";
        const char *b = have[j]->value ? have[j]->value : "";
        if (strcmp(a, b) != 0)
            return 0;
    }
    return 1;
}

int objlog_lc_match(const Objlog__LifecycleFilter *f, const uint8_t *key,
                    size_t kn, const Objlog__ObjectMeta *meta) {
    if (!f)
        return 1;
    if (f->prefix.len > kn || (f->prefix.len && memcmp(key, f->prefix.data, f->prefix.len)))
        return 0;
    if (!meta)
        return !lc_has_conditions(f);
    if (f->size_greater_than && !(meta->size > f->size_greater_than))
        return 0;
    if (f->size_less_than && !(meta->size < f->size_less_than))
        return 0;
    return lc_pairs_hold(f->tags, f->n_tags, meta->tags, meta->n_tags) &&
           lc_pairs_hold(f->user_metadata, f->n_user_metadata, meta->user_metadata,
                         meta->n_user_metadata);
}

int objlog_lc_version_action(const Objlog__LifecycleRule *r,
                             const objlog_lc_version *v, int64_t *due_ms) {
    const Objlog__VersionRecord *rec = v->rec;
    const Objlog__ObjectMeta *meta = rec->delete_marker ? NULL : rec->meta;
    static const Objlog__ObjectMeta empty = OBJLOG__OBJECT_META__INIT;
    if (!rec->delete_marker && !meta)
        meta = &empty;
    if (!objlog_lc_match(r->filter, v->key, v->key_len, meta))
        return -1;
    if (v->position == 0 && !rec->delete_marker) {
        if (r->expiration_days) {
            *due_ms = objlog_lc_due_ms(rec->log_time_ms, r->expiration_days);
            return OBJLOG__EXPIRE_ACTION__EXPIRE_CURRENT;
        }
        if (r->expiration_date_ms) {
            *due_ms = r->expiration_date_ms;
            return OBJLOG__EXPIRE_ACTION__EXPIRE_CURRENT;
        }
        return -1;
    }
    if (v->position == 0) {
        if (!r->expired_object_delete_marker || v->versions != 1)
            return -1;
        *due_ms = rec->log_time_ms;
        return OBJLOG__EXPIRE_ACTION__EXPIRE_DELETE_MARKER;
    }
    /* Noncurrent: position - 1 newer noncurrent versions sit above it. */
    if (!r->noncurrent_days || v->position - 1 < r->newer_noncurrent_versions)
        return -1;
    *due_ms = objlog_lc_due_ms(v->newer_ms, r->noncurrent_days);
    return OBJLOG__EXPIRE_ACTION__EXPIRE_NONCURRENT;
}

int objlog_lc_upload_action(const Objlog__LifecycleRule *r, const uint8_t *key,
                            size_t kn, int64_t initiated_ms, int64_t *due_ms) {
    if (!r->abort_incomplete_days || !objlog_lc_match(r->filter, key, kn, NULL))
        return 0;
    *due_ms = objlog_lc_due_ms(initiated_ms, r->abort_incomplete_days);
    return 1;
}

static int lc_iter_error(rocksdb_iterator_t *it, char *errstr, size_t es) {
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (!err)
        return 0;
    snprintf(errstr, es, "scan versions: %s", err);
    rocksdb_free(err);
    return -1;
}

int objlog_lc_walk_key(rocksdb_iterator_t *it, const uint8_t *rk, size_t rn,
                       const uint8_t *key, size_t kn, objlog_lc_walk_fn *fn,
                       void *arg, char *errstr, size_t errstr_size) {
    /* A key without a header row has one version, its null version. */
    objlog_lc_version v = {.key = key, .key_len = kn, .versions = 1};
    int64_t newer_ms = 0;
    rocksdb_iter_seek(it, (const char *)rk, rn);
    for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t n, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &n);
        if (n < rn || memcmp(k, rk, rn) != 0)
            break;
        const char *val = rocksdb_iter_value(it, &vn);
        if (n == rn) {
            objlog_key_header h;
            if (objlog_key_header_decode(val, vn, &h) < 0) {
                snprintf(errstr, errstr_size, "key header: corrupt");
                return -1;
            }
            v.versions = h.versions;
            continue;
        }
        if (n != rn + 8)
            continue;
        Objlog__VersionRecord *rec =
            objlog__version_record__unpack(NULL, vn, (const uint8_t *)val);
        if (!rec) {
            snprintf(errstr, errstr_size, "version record: corrupt");
            return -1;
        }
        v.rec = rec;
        v.newer_ms = newer_ms;
        int rc = fn(arg, &v);
        newer_ms = rec->log_time_ms;
        objlog__version_record__free_unpacked(rec, NULL);
        if (rc)
            return rc;
        v.position++;
    }
    return lc_iter_error(it, errstr, errstr_size);
}
