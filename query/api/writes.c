/* writes.c: the JSON API's write routes: their bodies, into gateway calls
 * (docs/ARCHITECTURE.md, "HTTP routes as built"). Everything about a JSON
 * write request's shape lives here: which fields a body takes, their
 * types and ranges, and the 400 that names a bad one; the gateway
 * (write/write.h) then does what every front end's write does.
 *
 * Invariant: a route answers c itself only before it calls the gateway
 * (a bad body or parameter), so every request is answered exactly once;
 * the values it hands over borrow from the body, which lives until the
 * gateway call returns (the producer copies what it keeps). */
#include "core.h"
#include "api.h"
#include "read.h"
#include "server.h"
#include "write.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

/* ------------------------------------------------------------- the bodies */

/* The body as a JSON object; NULL after replying MalformedJSON. Empty body:
 * *empty = 1 and NULL without a reply. */
static json_t *body_json(http_ctx *c, int *empty) {
    struct evbuffer *b = evhttp_request_get_input_buffer(c->req);
    size_t n = evbuffer_get_length(b);
    *empty = n == 0;
    if (n == 0)
        return NULL;
    json_error_t jerr;
    json_t *j = json_loadb((const char *)evbuffer_pullup(b, -1), n, 0, &jerr);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        http_reply_error(c, 400, "MalformedJSON",
                         "the request body must be a JSON object");
        return NULL;
    }
    return j;
}

/* The body, which this route requires: NULL after replying, an empty one
 * MalformedJSON with usage (the shape the route takes). */
static json_t *body_object(http_ctx *c, const char *usage) {
    int empty;
    json_t *body = body_json(c, &empty);
    if (!body && empty)
        http_reply_error(c, 400, "MalformedJSON", "%s", usage);
    return body;
}

/* o.name, or NULL when it is absent or null (both mean "not given"). */
static json_t *body_field(json_t *o, const char *name) {
    json_t *v = json_object_get(o, name);
    return json_is_null(v) ? NULL : v;
}

/* Optional string field: 0 ok (*out NULL when absent), -1 replied. */
static int body_string(http_ctx *c, json_t *o, const char *name, const char **out) {
    json_t *v = body_field(o, name);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_is_string(v)) {
        http_reply_error(c, 400, "InvalidArgument", "field %s must be a string", name);
        return -1;
    }
    *out = json_string_value(v);
    return 0;
}

/* Optional non-negative integer field (positive when positive is set):
 * 0 ok (*out untouched when absent), -1 replied. */
static int body_uint(http_ctx *c, json_t *o, const char *name, int positive,
                     uint64_t *out) {
    json_t *v = body_field(o, name);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < (positive ? 1 : 0)) {
        http_reply_error(c, 400, "InvalidArgument", "field %s must be a %s integer",
                         name, positive ? "positive" : "non-negative");
        return -1;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* "Enabled" / "Suspended" / "" (when allow_empty) -> *v; -1 otherwise. */
static int body_versioning(const char *s, int allow_empty, objlog_versioning *v) {
    if (s && strcmp(s, "Enabled") == 0)
        *v = OBJLOG_VERSIONING_ENABLED;
    else if (s && strcmp(s, "Suspended") == 0)
        *v = OBJLOG_VERSIONING_SUSPENDED;
    else if (allow_empty && (!s || !*s))
        *v = OBJLOG_VERSIONING_UNVERSIONED;
    else
        return -1;
    return 0;
}

/* The bucket settings of a PUT /v1/buckets/{b} body; -1 replied. */
static int body_bucket_conf(http_ctx *c, json_t *body, objlog_bucket_conf *bc) {
    const char *vers = NULL;
    memset(bc, 0, sizeof(*bc));
    if (!body)
        return 0;
    if (body_string(c, body, "tenant", &bc->tenant) < 0 ||
        body_string(c, body, "versioning", &vers) < 0 ||
        body_uint(c, body, "max_versions", 1, &bc->max_versions) < 0)
        return -1;
    if (body_versioning(vers, 1, &bc->versioning) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "field versioning must be Enabled, Suspended or empty");
        return -1;
    }
    json_t *q = body_field(body, "quota");
    if (!q)
        return 0;
    if (!json_is_object(q)) {
        http_reply_error(c, 400, "InvalidArgument", "field quota must be an object");
        return -1;
    }
    if (body_uint(c, q, "max_bytes", 0, &bc->quota_max_bytes) < 0 ||
        body_uint(c, q, "max_objects", 0, &bc->quota_max_objects) < 0)
        return -1;
    return 0;
}

/* One rate-limit figure of a PUT .../ratelimit body: 0..1,000,000. 1 set,
 * 0 absent, -1 replied. */
static int body_limit(http_ctx *c, json_t *o, const char *name, uint32_t *out) {
    json_t *v = body_field(o, name);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > 1000000) {
        http_reply_error(c, 400, "InvalidArgument",
                         "field %s must be an integer in 0..1000000", name);
        return -1;
    }
    *out = (uint32_t)json_integer_value(v);
    return 1;
}

/* The body of PUT .../ratelimit; -1 replied. The state machine checks
 * the same rules again (ratelimit.c): the log is the authority. */
static int body_rate_limit(http_ctx *c, json_t *body, objlog_rate_limit *l) {
    static const char *const names[] = {"rps", "burst", "write_rps", "write_burst"};
    uint32_t *fields[] = {&l->rps, &l->burst, &l->write_rps, &l->write_burst};
    int got[4];
    memset(l, 0, sizeof(*l));
    for (int i = 0; i < 4; i++)
        if ((got[i] = body_limit(c, body, names[i], fields[i])) < 0)
            return -1;
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        int known = 0;
        for (int i = 0; i < 4; i++)
            known |= strcmp(key, names[i]) == 0;
        if (!known) {
            http_reply_error(c, 400, "InvalidArgument",
                             "unknown field %s (rps, burst, write_rps, write_burst)", key);
            return -1;
        }
    }
    if (!got[0] && !got[2]) {
        http_reply_error(c, 400, "InvalidArgument",
                         "give rps and/or write_rps (0 = no limit for that class)");
        return -1;
    }
    if ((l->burst && !l->rps) || (l->write_burst && !l->write_rps)) {
        http_reply_error(c, 400, "InvalidArgument",
                         "a burst needs its rate (rps / write_rps)");
        return -1;
    }
    return 0;
}

/* The string map o.field (absent or null: none) appended to pairs at *n;
 * -1 after replying. The strings stay o's. */
static int body_pairs(http_ctx *c, json_t *o, const char *field,
                      objlog_user_meta *pairs, size_t *n) {
    json_t *u = body_field(o, field);
    if (!u)
        return 0;
    if (!json_is_object(u)) {
        http_reply_error(c, 400, "InvalidArgument", "field %s must be an object", field);
        return -1;
    }
    const char *name;
    json_t *val;
    json_object_foreach(u, name, val) {
        if (!json_is_string(val)) {
            http_reply_error(c, 400, "InvalidArgument", "field %s.%s must be a string",
                             field, name);
            return -1;
        }
        pairs[*n].name = name;
        pairs[*n].value = json_string_value(val);
        (*n)++;
    }
    return 0;
}

static size_t body_map_size(json_t *o, const char *field) {
    json_t *u = json_object_get(o, field);
    return json_is_object(u) ? json_object_size(u) : 0;
}

/* Fills meta from the body; -1 after replying. *um (malloc'd) holds the
 * user metadata, then the tags. */
static int body_meta(http_ctx *c, json_t *o, objlog_object_meta *m, objlog_user_meta **um) {
    memset(m, 0, sizeof(*m));
    *um = NULL;
    if (body_uint(c, o, "size", 0, &m->size) < 0 ||
        body_string(c, o, "etag", &m->etag) < 0 ||
        body_string(c, o, "content_type", &m->content_type) < 0 ||
        body_string(c, o, "blob_id", &m->blob_id) < 0 ||
        body_string(c, o, "storage_class", &m->storage_class) < 0 ||
        body_string(c, o, "checksum", &m->checksum) < 0 ||
        body_string(c, o, "cache_control", &m->cache_control) < 0 ||
        body_string(c, o, "content_disposition", &m->content_disposition) < 0 ||
        body_string(c, o, "content_encoding", &m->content_encoding) < 0 ||
        body_string(c, o, "content_language", &m->content_language) < 0 ||
        body_string(c, o, "expires", &m->expires) < 0)
        return -1;
    *um = calloc(body_map_size(o, "user_metadata") + body_map_size(o, "tags") + 1,
                 sizeof(**um));
    if (!*um) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    if (body_pairs(c, o, "user_metadata", *um, &m->n_user_meta) < 0 ||
        body_pairs(c, o, "tags", *um + m->n_user_meta, &m->n_tags) < 0)
        return -1;
    m->user_meta = m->n_user_meta ? *um : NULL;
    m->tags = m->n_tags ? *um + m->n_user_meta : NULL;
    return 0;
}

/* The "key" field of a create-upload body, checked as a URL key is. */
static const char *body_key(http_ctx *c, json_t *body, size_t *kn) {
    json_t *k = json_object_get(body, "key");
    if (!json_is_string(k) || json_string_length(k) == 0) {
        http_reply_error(c, 400, "InvalidArgument", "field key must be a non-empty string");
        return NULL;
    }
    *kn = json_string_length(k);
    if (*kn > HTTP_MAX_KEY_LEN) {
        http_reply_error(c, 400, "KeyTooLongError", "key is %zu bytes; the limit is %d",
                         *kn, HTTP_MAX_KEY_LEN);
        return NULL;
    }
    return json_string_value(k);
}

/* {"parts":[{"part_number","etag"}]} -> *parts (malloc'd, etags borrowed
 * from body). -1 replied. */
static int body_parts(http_ctx *c, json_t *body, objlog_completed_part **parts,
                      size_t *n) {
    json_t *arr = json_object_get(body, "parts");
    *parts = NULL;
    *n = 0;
    if (!json_is_array(arr) || json_array_size(arr) == 0 ||
        json_array_size(arr) > 10000) {
        http_reply_error(c, 400, "InvalidArgument",
                         "field parts must be an array of 1..10000 parts");
        return -1;
    }
    *parts = calloc(json_array_size(arr), sizeof(**parts));
    if (!*parts) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    size_t i;
    json_t *p;
    json_array_foreach(arr, i, p) {
        json_t *num = json_object_get(p, "part_number");
        json_t *etag = json_object_get(p, "etag");
        if (!json_is_integer(num) || json_integer_value(num) < 1 ||
            json_integer_value(num) > 10000 || !json_is_string(etag)) {
            http_reply_error(c, 400, "InvalidArgument",
                             "parts[%zu] needs part_number (1..10000) and etag", i);
            return -1;
        }
        (*parts)[i].part_number = (uint32_t)json_integer_value(num);
        (*parts)[i].etag = json_string_value(etag);
        (*n)++;
    }
    return 0;
}

/* The field of a PUT .../indexes/{name} body, checked as the state
 * machine will; -1 replied. */
static int body_index(http_ctx *c, json_t *body, const char **field) {
    char why[256];
    json_t *lm = json_object_get(body, "last_modified");
    if (body_string(c, body, "field", field) < 0)
        return -1;
    if (!objlog_index_field_valid(*field, why, sizeof(why))) {
        http_reply_error(c, 400, "InvalidArgument", "%s", why);
        return -1;
    }
    if (lm && !json_is_boolean(lm)) {
        http_reply_error(c, 400, "InvalidArgument",
                         "field last_modified must be true or false");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- the routes */

void gateway_put_bucket(http_ctx *c, const char *bucket) {
    int empty;
    json_t *body = body_json(c, &empty);
    if (!body && !empty)
        return;
    objlog_bucket_conf bc;
    if (body_bucket_conf(c, body, &bc) == 0 && authz_create_bucket(c, &bc) == 0)
        gateway_create_bucket(c, bucket, &bc);
    json_decref(body);
}

void gateway_put_versioning(http_ctx *c, const char *bucket) {
    json_t *body = body_object(c, "the body must be {\"status\":\"Enabled|Suspended\"}");
    if (!body)
        return;
    const char *status = NULL;
    objlog_versioning v;
    if (body_string(c, body, "status", &status) < 0) {
        /* replied */
    } else if (body_versioning(status, 0, &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "field status must be Enabled or Suspended");
    } else {
        gateway_set_versioning(c, bucket, v);
    }
    json_decref(body);
}

/* PUT /v1/buckets/{b}/quota {"max_bytes":N,"max_objects":N}: a SetQuota
 * event; an absent field is 0 (no limit). */
void gateway_put_quota(http_ctx *c, const char *bucket) {
    json_t *body = body_object(c, "the body must be {\"max_bytes\":N,\"max_objects\":N}");
    if (!body)
        return;
    uint64_t max_bytes = 0, max_objects = 0;
    if (body_uint(c, body, "max_bytes", 0, &max_bytes) == 0 &&
        body_uint(c, body, "max_objects", 0, &max_objects) == 0)
        gateway_set_quota(c, bucket, max_bytes, max_objects);
    json_decref(body);
}

/* PUT /v1/buckets/{b}/ratelimit {"rps":N,"burst":N,"write_rps":N,
 * "write_burst":N} (SetRateLimit; DELETE, which has no body, is
 * gateway_delete_rate_limit). */
void gateway_put_rate_limit(http_ctx *c, const char *bucket) {
    json_t *body = body_object(c, "the body must be {\"rps\":N,\"burst\":N,"
                               "\"write_rps\":N,\"write_burst\":N}");
    if (!body)
        return;
    objlog_rate_limit l;
    if (body_rate_limit(c, body, &l) == 0)
        gateway_set_rate_limit(c, bucket, &l);
    json_decref(body);
}

void gateway_put_object(http_ctx *c, const char *bucket, const uint8_t *key,
                        size_t key_len) {
    json_t *body = body_object(c, "the request body must be a JSON object (the metadata)");
    if (!body)
        return;
    objlog_object_meta meta;
    objlog_user_meta *um = NULL;
    if (body_meta(c, body, &meta, &um) == 0)
        gateway_put_object_meta(c, bucket, key, key_len, &meta);
    free(um);
    json_decref(body);
}

void gateway_delete_object(http_ctx *c, const char *bucket, const uint8_t *key,
                           size_t key_len) {
    gateway_delete_version(c, bucket, key, key_len, http_param_get(c, "version_id", NULL));
}

void gateway_create_upload(http_ctx *c, const char *bucket) {
    json_t *body = body_object(c, "the body must be a JSON object with the key");
    if (!body)
        return;
    objlog_object_meta meta;
    objlog_user_meta *um = NULL;
    size_t kn = 0;
    const char *key = body_key(c, body, &kn);
    if (key && body_meta(c, body, &meta, &um) == 0)
        gateway_create_upload_meta(c, bucket, (const uint8_t *)key, kn, &meta);
    free(um);
    json_decref(body);
}

void gateway_upload_part(http_ctx *c, const char *bucket, const char *upload_id,
                         const char *part_number) {
    size_t kn;
    uint32_t pn;
    const char *key = read_upload_key(c, &kn);
    if (!key)
        return;
    if (gateway_part_number(part_number, &pn) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "part number must be an integer in 1..10000");
        return;
    }
    json_t *body = body_object(c, "the body must be {\"size\",\"etag\",\"blob_id\"}");
    if (!body)
        return;
    uint64_t size = 0;
    const char *etag = NULL, *blob = NULL;
    if (body_uint(c, body, "size", 0, &size) == 0 &&
        body_string(c, body, "etag", &etag) == 0 &&
        body_string(c, body, "blob_id", &blob) == 0)
        gateway_upload_part_meta(c, bucket, (const uint8_t *)key, kn, upload_id, pn, size,
                                 etag, blob);
    json_decref(body);
}

void gateway_complete_upload(http_ctx *c, const char *bucket,
                             const char *upload_id) {
    size_t kn;
    const char *key = read_upload_key(c, &kn);
    if (!key)
        return;
    json_t *body =
        body_object(c, "the body must be {\"parts\":[{\"part_number\",\"etag\"}]}");
    if (!body)
        return;
    objlog_completed_part *parts = NULL;
    size_t n = 0;
    if (body_parts(c, body, &parts, &n) == 0)
        gateway_complete_upload_parts(c, bucket, (const uint8_t *)key, kn, upload_id, parts,
                                      n);
    free(parts);
    json_decref(body);
}

void gateway_abort_upload(http_ctx *c, const char *bucket, const char *upload_id) {
    size_t kn;
    const char *key = read_upload_key(c, &kn);
    if (key)
        gateway_abort_upload_key(c, bucket, (const uint8_t *)key, kn, upload_id);
}

/* Body {"field": "...", "last_modified": bool}; the name and field are
 * checked here (400 InvalidArgument) as the state machine will. */
void gateway_put_index(http_ctx *c, const char *bucket, const char *name) {
    json_t *body =
        body_object(c, "the body must be {\"field\":\"...\",\"last_modified\":bool}");
    if (!body)
        return;
    const char *field = NULL;
    if (body_index(c, body, &field) == 0)
        gateway_create_index(c, bucket, name, field,
                             json_is_true(json_object_get(body, "last_modified")));
    json_decref(body);
}
