/* lcapi.c: the JSON API of bucket lifecycle:
 *   PUT    /v1/buckets/{b}/lifecycle  {"rules":[...]}  -> a SetLifecycle event
 *   GET    /v1/buckets/{b}/lifecycle  the rules (404 NoSuchLifecycleConfiguration)
 *   DELETE /v1/buckets/{b}/lifecycle  a SetLifecycle event without rules
 *   GET    /v1/buckets/{b}/lifecycle/status  the worker's backlog (lifecycle.c)
 * and the one mapping between a rule's JSON and its proto (LifecycleRule).
 * Invariant: a configuration reaches the log only after objlog_lc_validate
 * accepted it, with the same message the state machine would give. */
#define _GNU_SOURCE /* strptime, timegm */
#include "core.h"
#include "api.h"
#include "read.h"
#include "server.h"
#include "workers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "lifecycle.h"

/* ------------------------------------------------------ JSON -> proto */

typedef struct lc_parse {
    char err[256];
} lc_parse;

static int lc_bad(lc_parse *p, const char *fmt, const char *arg) {
    snprintf(p->err, sizeof(p->err), fmt, arg);
    return -1;
}

/* An optional non-negative integer (up to max) of o; -1 on a bad one. */
static int lc_uint(lc_parse *p, json_t *o, const char *name, uint64_t max, uint64_t *out) {
    json_t *v = o ? json_object_get(o, name) : NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > max)
        return lc_bad(p, "field %s must be a non-negative integer in range", name);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* {"k":"v",...} -> malloc'd pairs (freed with the rule). */
static int lc_pairs(lc_parse *p, json_t *o, const char *name, Objlog__UserMeta ***out,
                    size_t *n) {
    json_t *m = o ? json_object_get(o, name) : NULL;
    if (!m || json_is_null(m))
        return 0;
    if (!json_is_object(m))
        return lc_bad(p, "field %s must be an object of strings", name);
    *out = calloc(json_object_size(m) + 1, sizeof(**out));
    if (!*out)
        return lc_bad(p, "%s", "out of memory");
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) {
        if (!json_is_string(v))
            return lc_bad(p, "field %s must be an object of strings", name);
        Objlog__UserMeta *um = malloc(sizeof(*um));
        if (!um)
            return lc_bad(p, "%s", "out of memory");
        objlog__user_meta__init(um);
        (*out)[(*n)++] = um;
        um->name = strdup(k);
        um->value = strdup(json_string_value(v));
        if (!um->name || !um->value)
            return lc_bad(p, "%s", "out of memory");
    }
    return 0;
}

static int lc_filter(lc_parse *p, json_t *f, Objlog__LifecycleRule *r) {
    if (!f || json_is_null(f))
        return 0;
    if (!json_is_object(f))
        return lc_bad(p, "%s", "field filter must be an object");
    Objlog__LifecycleFilter *lf = malloc(sizeof(*lf));
    if (!lf)
        return lc_bad(p, "%s", "out of memory");
    objlog__lifecycle_filter__init(lf);
    r->filter = lf;
    json_t *pre = json_object_get(f, "prefix");
    if (pre && !json_is_null(pre)) {
        if (!json_is_string(pre))
            return lc_bad(p, "%s", "field prefix must be a string");
        size_t n = json_string_length(pre);
        if (!(lf->prefix.data = malloc(n ? n : 1)))
            return lc_bad(p, "%s", "out of memory");
        memcpy(lf->prefix.data, json_string_value(pre), n);
        lf->prefix.len = n;
    }
    if (lc_pairs(p, f, "tags", &lf->tags, &lf->n_tags) < 0 ||
        lc_pairs(p, f, "user_metadata", &lf->user_metadata, &lf->n_user_metadata) < 0 ||
        lc_uint(p, f, "size_greater_than", INT64_MAX, &lf->size_greater_than) < 0 ||
        lc_uint(p, f, "size_less_than", INT64_MAX, &lf->size_less_than) < 0)
        return -1;
    return 0;
}

/* "2025-01-31" or "2025-01-31T00:00:00Z" / ".000Z" -> ms; -1 otherwise. */
static int lc_date(const char *s, int64_t *ms) {
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *rest = strptime(s, "%Y-%m-%d", &tm);
    if (!rest || (*rest && strcmp(rest, "T00:00:00Z") != 0 &&
                  strcmp(rest, "T00:00:00.000Z") != 0))
        return -1;
    *ms = (int64_t)timegm(&tm) * 1000;
    return 0;
}

static int lc_days(lc_parse *p, json_t *o, const char *name, uint32_t *out) {
    uint64_t v = 0;
    if (lc_uint(p, o, name, OBJLOG_LC_MAX_DAYS, &v) < 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int lc_actions(lc_parse *p, json_t *j, Objlog__LifecycleRule *r) {
    json_t *e = json_object_get(j, "expiration");
    json_t *nc = json_object_get(j, "noncurrent_version_expiration");
    json_t *ab = json_object_get(j, "abort_incomplete_multipart_upload");
    if ((e && !json_is_object(e)) || (nc && !json_is_object(nc)) || (ab && !json_is_object(ab)))
        return lc_bad(p, "%s", "rule actions must be objects");
    if (lc_days(p, e, "days", &r->expiration_days) < 0 ||
        lc_days(p, nc, "noncurrent_days", &r->noncurrent_days) < 0 ||
        lc_days(p, ab, "days_after_initiation", &r->abort_incomplete_days) < 0)
        return -1;
    uint64_t keep = 0;
    if (lc_uint(p, nc, "newer_noncurrent_versions", 1000, &keep) < 0)
        return -1;
    r->newer_noncurrent_versions = (uint32_t)keep;
    json_t *date = e ? json_object_get(e, "date") : NULL;
    if (date && (!json_is_string(date) || lc_date(json_string_value(date),
                                                  &r->expiration_date_ms) < 0))
        return lc_bad(p, "%s", "expiration date must be YYYY-MM-DD (midnight UTC)");
    json_t *dm = e ? json_object_get(e, "expired_object_delete_marker") : NULL;
    if (dm && !json_is_boolean(dm))
        return lc_bad(p, "%s", "expired_object_delete_marker must be true or false");
    r->expired_object_delete_marker = dm && json_is_true(dm);
    return 0;
}

static int lc_rule(lc_parse *p, json_t *j, Objlog__LifecycleRule *r) {
    if (!json_is_object(j))
        return lc_bad(p, "%s", "each rule must be an object");
    json_t *id = json_object_get(j, "id");
    json_t *status = json_object_get(j, "status");
    if (!id || !json_is_string(id))
        return lc_bad(p, "%s", "each rule needs an id (string)");
    if (!(r->id = strdup(json_string_value(id))))
        return lc_bad(p, "%s", "out of memory");
    const char *sv = status && json_is_string(status) ? json_string_value(status) : NULL;
    if (!sv || (strcmp(sv, "Enabled") != 0 && strcmp(sv, "Disabled") != 0))
        return lc_bad(p, "rule %s: status must be Enabled or Disabled", r->id);
    r->enabled = strcmp(sv, "Enabled") == 0;
    if (lc_filter(p, json_object_get(j, "filter"), r) < 0 || lc_actions(p, j, r) < 0)
        return -1;
    return 0;
}

/* {"rules":[...]} -> *out (caller frees with objlog__set_lifecycle__free_unpacked);
 * -1 with p->err. */
static int lc_parse_rules(lc_parse *p, json_t *body, Objlog__SetLifecycle **out) {
    json_t *rules = json_object_get(body, "rules");
    if (!rules || !json_is_array(rules) || json_array_size(rules) == 0)
        return lc_bad(p, "%s", "the body must be {\"rules\":[...]} with at least one "
                               "rule (DELETE removes the configuration)");
    if (json_array_size(rules) > OBJLOG_LC_MAX_RULES)
        return lc_bad(p, "%s", "a lifecycle configuration has at most 1000 rules");
    Objlog__SetLifecycle *sl = malloc(sizeof(*sl));
    if (!sl)
        return lc_bad(p, "%s", "out of memory");
    objlog__set_lifecycle__init(sl);
    *out = sl;
    sl->rules = calloc(json_array_size(rules), sizeof(*sl->rules));
    if (!sl->rules)
        return lc_bad(p, "%s", "out of memory");
    for (size_t i = 0; i < json_array_size(rules); i++) {
        Objlog__LifecycleRule *r = malloc(sizeof(*r));
        if (!r)
            return lc_bad(p, "%s", "out of memory");
        objlog__lifecycle_rule__init(r);
        sl->rules[sl->n_rules++] = r;
        if (lc_rule(p, json_array_get(rules, i), r) < 0)
            return -1;
    }
    if (objlog_lc_validate(sl->rules, sl->n_rules, p->err, sizeof(p->err)) < 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------ proto -> JSON */

static json_t *lc_pairs_json(Objlog__UserMeta *const *pairs, size_t n) {
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, pairs[i]->name, json_string(pairs[i]->value));
    return o;
}

static json_t *lc_rule_json(const Objlog__LifecycleRule *r) {
    json_t *j = json_pack("{s:s, s:s}", "id", r->id, "status",
                          r->enabled ? "Enabled" : "Disabled");
    const Objlog__LifecycleFilter *f = r->filter;
    json_t *fj = json_object();
    if (f) {
        json_object_set_new(fj, "prefix", http_json_bytes(f->prefix.data, f->prefix.len));
        if (f->n_tags)
            json_object_set_new(fj, "tags", lc_pairs_json(f->tags, f->n_tags));
        if (f->n_user_metadata)
            json_object_set_new(fj, "user_metadata",
                                lc_pairs_json(f->user_metadata, f->n_user_metadata));
        if (f->size_greater_than)
            json_object_set_new(fj, "size_greater_than", json_integer((json_int_t)f->size_greater_than));
        if (f->size_less_than)
            json_object_set_new(fj, "size_less_than", json_integer((json_int_t)f->size_less_than));
    }
    json_object_set_new(j, "filter", fj);
    if (r->expiration_days || r->expiration_date_ms || r->expired_object_delete_marker) {
        json_t *e = json_object();
        if (r->expiration_days)
            json_object_set_new(e, "days", json_integer(r->expiration_days));
        if (r->expiration_date_ms) {
            char d[16];
            time_t t = (time_t)(r->expiration_date_ms / 1000);
            struct tm tm;
            gmtime_r(&t, &tm);
            strftime(d, sizeof(d), "%Y-%m-%d", &tm);
            json_object_set_new(e, "date", json_string(d));
        }
        if (r->expired_object_delete_marker)
            json_object_set_new(e, "expired_object_delete_marker", json_true());
        json_object_set_new(j, "expiration", e);
    }
    if (r->noncurrent_days)
        json_object_set_new(j, "noncurrent_version_expiration",
                            json_pack("{s:i, s:i}", "noncurrent_days", (int)r->noncurrent_days,
                                      "newer_noncurrent_versions",
                                      (int)r->newer_noncurrent_versions));
    if (r->abort_incomplete_days)
        json_object_set_new(j, "abort_incomplete_multipart_upload",
                            json_pack("{s:i}", "days_after_initiation",
                                      (int)r->abort_incomplete_days));
    return j;
}

/* ----------------------------------------------------------- handlers */

static void lc_put(http_ctx *c, const char *bucket) {
    struct evbuffer *b = evhttp_request_get_input_buffer(c->req);
    size_t n = evbuffer_get_length(b);
    json_error_t jerr;
    json_t *body = n ? json_loadb((const char *)evbuffer_pullup(b, -1), n, 0, &jerr) : NULL;
    if (!body || !json_is_object(body)) {
        json_decref(body);
        http_reply_error(c, 400, "MalformedJSON",
                         "the request body must be a JSON object {\"rules\":[...]}");
        return;
    }
    lc_parse p = {""};
    Objlog__SetLifecycle *sl = NULL;
    if (lc_parse_rules(&p, body, &sl) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "%s", p.err);
    } else {
        lcconf_write(c, bucket, sl);
    }
    if (sl)
        objlog__set_lifecycle__free_unpacked(sl, NULL);
    json_decref(body);
}

static void lc_delete(http_ctx *c, const char *bucket) { lcconf_write(c, bucket, NULL); }

static void lc_get(http_ctx *c, const char *bucket) {
    view_bucket b;
    if (!lcconf_read(c, bucket, &b))
        return;
    json_t *rules = json_array();
    for (size_t i = 0; i < b.record->n_lifecycle; i++)
        json_array_append_new(rules, lc_rule_json(b.record->lifecycle[i]));
    view_bucket_free(&b);
    http_reply_json(c, 200, json_pack("{s:s, s:o}", "bucket", bucket, "rules", rules));
}

static void lc_status_get(http_ctx *c, const char *bucket) {
    view_bucket b;
    if (!lcconf_read(c, bucket, &b))
        return;
    size_t nrules = b.record->n_lifecycle;
    view_bucket_free(&b);
    lc_status s;
    int scanned = lc_worker_status(c->q->lc, bucket, &s);
    int64_t now = lc_worker_now_ms(c->q->lc);
    double age = scanned && s.due && s.oldest_due_ms ? (double)(now - s.oldest_due_ms) / 1000.0 : 0;
    json_t *j = json_pack("{s:s, s:I, s:b, s:I, s:f, s:I, s:I, s:I, s:f}",
        "bucket", bucket, "rules", (json_int_t)nrules, "scanned", scanned,
        "due", (json_int_t)(scanned ? s.due : 0), "oldest_due_age_seconds", age < 0 ? 0 : age,
        "expired_total", (json_int_t)(scanned ? s.expired : 0),
        "skipped_total", (json_int_t)(scanned ? s.skipped : 0),
        "scans", (json_int_t)(scanned ? s.scans : 0),
        "expirations_per_second", scanned ? s.last_rate : 0.0);
    if (scanned) {
        char ts[40];
        http_format_time(s.last_scan_ms, ts, sizeof(ts));
        json_object_set_new(j, "last_scan", json_string(ts));
    }
    http_reply_json(c, 200, j);
}

void lcapi_route(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                 const char *rest) {
    if (strcmp(rest, "/status") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            lc_status_get(c, bucket);
        else
            http_reply_error(c, 405, "MethodNotAllowed", "allowed: GET");
        return;
    }
    if (cmd == EVHTTP_REQ_PUT)
        lc_put(c, bucket);
    else if (cmd == EVHTTP_REQ_GET)
        lc_get(c, bucket);
    else if (cmd == EVHTTP_REQ_DELETE)
        lc_delete(c, bucket);
    else
        http_reply_error(c, 405, "MethodNotAllowed", "allowed: GET, PUT, DELETE");
}
