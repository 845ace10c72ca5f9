/* notifyapi.c: the JSON API of bucket event notifications:
 *   PUT    /v1/buckets/{b}/notifications  {"configurations":[...]} -> a SetNotifications event
 *   GET    /v1/buckets/{b}/notifications  the configurations in force (none: [])
 *   DELETE /v1/buckets/{b}/notifications  a SetNotifications event without configurations
 *   GET    /v1/buckets/{b}/notifications/status  the bucket's configurations
 *          counted, and this node's notifier (notifier.h): delivered, backlog
 * and the one mapping between a configuration's JSON and its proto
 * (NotifyConfig): {"id","arn","events":[...],"prefix","suffix"}, which GET
 * answers with "target" (kafka or webhook) and "destination" (the topic,
 * or the webhook's URL decoded) besides. The S3 endpoint's form of the
 * same configurations is s3/s3notify.c.
 *
 * Invariant: a set of configurations reaches the log only whole and only
 * after notify_configs_check accepted it, with the message the state
 * machine would give; a field this API does not know is refused, never
 * dropped. */
#include "core.h"
#include "api.h"
#include "notifier.h"
#include "read.h"
#include "server.h"
#include "write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "notify.h"

#define NA_EVENTS_MAX NOTIFY_EVENTS_MAX

/* ------------------------------------------------------ JSON -> proto */

typedef struct na_parse {
    char err[400];
} na_parse;

static int na_bad(na_parse *p, const char *fmt, const char *arg) {
    snprintf(p->err, sizeof(p->err), fmt, arg);
    return -1;
}

/* -1 naming the first field of o that is not in known (NULL-ended). */
static int na_known_fields(na_parse *p, json_t *o, const char *const *known, const char *in) {
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        int found = 0;
        for (int i = 0; known[i] && !found; i++)
            found = strcmp(k, known[i]) == 0;
        if (!found) {
            snprintf(p->err, sizeof(p->err), "unknown field %.64s in %s", k, in);
            return -1;
        }
    }
    return 0;
}

static int na_string(na_parse *p, json_t *o, const char *name, char **out) {
    json_t *v = json_object_get(o, name);
    if (!v || !json_is_string(v))
        return na_bad(p, "each configuration needs %s (a string)", name);
    if (!(*out = strdup(json_string_value(v))))
        return na_bad(p, "%s", "out of memory");
    return 0;
}

/* An optional prefix or suffix (a string) into *out. */
static int na_affix(na_parse *p, json_t *o, const char *name, ProtobufCBinaryData *out) {
    json_t *v = json_object_get(o, name);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return na_bad(p, "field %s must be a string", name);
    size_t n = json_string_length(v);
    if (n == 0)
        return 0;
    if (!(out->data = malloc(n)))
        return na_bad(p, "%s", "out of memory");
    memcpy(out->data, json_string_value(v), n);
    out->len = n;
    return 0;
}

static int na_events(na_parse *p, json_t *o, Objlog__NotifyConfig *nc) {
    json_t *a = json_object_get(o, "events");
    if (!a || !json_is_array(a))
        return na_bad(p, "%s", "each configuration needs events (an array of strings)");
    if (json_array_size(a) > NA_EVENTS_MAX) {
        snprintf(p->err, sizeof(p->err), "a configuration names at most %d event types",
                 NA_EVENTS_MAX);
        return -1;
    }
    if (json_array_size(a) && !(nc->events = calloc(json_array_size(a), sizeof(char *))))
        return na_bad(p, "%s", "out of memory");
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        if (!json_is_string(e))
            return na_bad(p, "%s", "events must be strings such as \"s3:ObjectCreated:*\"");
        if (!(nc->events[nc->n_events] = strdup(json_string_value(e))))
            return na_bad(p, "%s", "out of memory");
        nc->n_events++;
    }
    return 0;
}

static int na_config(na_parse *p, json_t *j, Objlog__NotifyConfig *nc) {
    /* target and destination: what GET adds (derived from the ARN, so
     * ignored here), that its answer may be PUT back as it is */
    static const char *const fields[] = {"id", "arn", "events", "prefix", "suffix",
                                         "target", "destination", NULL};
    if (!json_is_object(j))
        return na_bad(p, "%s", "each configuration must be an object");
    if (na_known_fields(p, j, fields, "a configuration") < 0 ||
        na_string(p, j, "id", &nc->id) < 0 || na_string(p, j, "arn", &nc->arn) < 0 ||
        na_events(p, j, nc) < 0 || na_affix(p, j, "prefix", &nc->prefix) < 0 ||
        na_affix(p, j, "suffix", &nc->suffix) < 0)
        return -1;
    /* the element S3's GET shows it in: a topic's, or a webhook's queue */
    notify_target t;
    char why[200];
    if (notify_target_parse(nc->arn, &t, why, sizeof(why)) == 0)
        nc->s3_element = t.kind == NOTIFY_WEBHOOK ? 1 : 0;
    return 0;
}

/* {"configurations":[...]} -> *out (caller frees with
 * objlog__set_notifications__free_unpacked); -1 with p->err. */
static int na_parse_configs(na_parse *p, json_t *body, Objlog__SetNotifications **out) {
    static const char *const fields[] = {"configurations", "bucket", "seq", NULL};
    if (na_known_fields(p, body, fields, "the body") < 0)
        return -1;
    json_t *cs = json_object_get(body, "configurations");
    if (!cs || !json_is_array(cs))
        return na_bad(p, "%s", "the body must be {\"configurations\":[...]} (an empty list, "
                               "or DELETE, removes them all)");
    Objlog__SetNotifications *sn = malloc(sizeof(*sn));
    if (!sn)
        return na_bad(p, "%s", "out of memory");
    objlog__set_notifications__init(sn);
    *out = sn;
    size_t n = json_array_size(cs);
    if (n && !(sn->configs = calloc(n, sizeof(*sn->configs))))
        return na_bad(p, "%s", "out of memory");
    for (size_t i = 0; i < n; i++) {
        Objlog__NotifyConfig *nc = malloc(sizeof(*nc));
        if (!nc)
            return na_bad(p, "%s", "out of memory");
        objlog__notify_config__init(nc);
        sn->configs[sn->n_configs++] = nc;
        if (na_config(p, json_array_get(cs, i), nc) < 0)
            return -1;
    }
    return notify_configs_check(sn->configs, sn->n_configs, p->err, sizeof(p->err));
}

/* ------------------------------------------------------ proto -> JSON */

static json_t *na_config_json(const Objlog__NotifyConfig *nc) {
    json_t *events = json_array();
    for (size_t i = 0; i < nc->n_events; i++)
        json_array_append_new(events, json_string(nc->events[i]));
    json_t *j = json_pack("{s:s, s:s, s:o}", "id", nc->id, "arn", nc->arn, "events", events);
    if (!j)
        return NULL;
    if (nc->prefix.len)
        json_object_set_new(j, "prefix", http_json_bytes(nc->prefix.data, nc->prefix.len));
    if (nc->suffix.len)
        json_object_set_new(j, "suffix", http_json_bytes(nc->suffix.data, nc->suffix.len));
    notify_target t;
    char why[200];
    if (notify_target_parse(nc->arn, &t, why, sizeof(why)) == 0) {
        json_object_set_new(j, "target",
                            json_string(t.kind == NOTIFY_WEBHOOK ? "webhook" : "kafka"));
        json_object_set_new(j, "destination", json_string(t.target));
    }
    return j;
}

/* ----------------------------------------------------------- handlers */

static void na_write(http_ctx *c, const char *bucket, Objlog__SetNotifications *sn) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__SetNotifications none = OBJLOG__SET_NOTIFICATIONS__INIT;
    ev.bucket = (char *)bucket;
    ev.op_case = OBJLOG__EVENT__OP_SET_NOTIFICATIONS;
    ev.set_notifications = sn ? sn : &none;
    gateway_write_event(c, &ev);
}

static void na_put(http_ctx *c, const char *bucket) {
    struct evbuffer *b = evhttp_request_get_input_buffer(c->req);
    size_t n = evbuffer_get_length(b);
    json_error_t jerr;
    json_t *body = n ? json_loadb((const char *)evbuffer_pullup(b, -1), n, 0, &jerr) : NULL;
    if (!body || !json_is_object(body)) {
        json_decref(body);
        http_reply_error(c, 400, "MalformedJSON",
                         "the request body must be a JSON object {\"configurations\":[...]}");
        return;
    }
    na_parse p = {""};
    Objlog__SetNotifications *sn = NULL;
    if (na_parse_configs(&p, body, &sn) < 0)
        http_reply_error(c, 400, "InvalidArgument", "%s", p.err);
    else
        na_write(c, bucket, sn);
    if (sn)
        objlog__set_notifications__free_unpacked(sn, NULL);
    json_decref(body);
}

static void na_get(http_ctx *c, const char *bucket) {
    view_bucket b;
    if (read_bucket_record(c, bucket, &b) < 0)
        return; /* NoSuchBucket, or parked on the fence */
    json_t *cs = json_array();
    for (size_t i = 0; i < b.record->n_notifications; i++)
        json_array_append_new(cs, na_config_json(b.record->notifications[i]));
    char seq[17];
    snprintf(seq, sizeof(seq), "%016" PRIx64, (uint64_t)b.record->notifications_seq);
    view_bucket_free(&b);
    http_reply_json(c, 200, json_pack("{s:s, s:o, s:s}", "bucket", bucket, "configurations",
                                      cs, "seq", seq));
}

/* The notifier is per node, not per bucket: its figures cover every
 * bucket whose partitions this node applies. */
static void na_status(http_ctx *c, const char *bucket) {
    view_bucket b;
    if (read_bucket_record(c, bucket, &b) < 0)
        return;
    size_t n = b.record->n_notifications;
    view_bucket_free(&b);
    json_t *node = c->q->notify ? notifier_status_json(c->q->notify) : json_object();
    http_reply_json(c, 200, json_pack("{s:s, s:I, s:o}", "bucket", bucket, "configurations",
                                      (json_int_t)n, "node", node));
}

void notifyapi_route(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                     const char *rest) {
    if (strcmp(rest, "/status") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            na_status(c, bucket);
        else
            http_method_not_allowed(c, "GET");
        return;
    }
    if (cmd == EVHTTP_REQ_PUT)
        na_put(c, bucket);
    else if (cmd == EVHTTP_REQ_GET)
        na_get(c, bucket);
    else if (cmd == EVHTTP_REQ_DELETE)
        na_write(c, bucket, NULL);
    else
        http_method_not_allowed(c, "GET, PUT, DELETE");
}
