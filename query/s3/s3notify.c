/* s3notify.c: S3's bucket notification subresource:
 *   PUT /BUCKET?notification  PutBucketNotificationConfiguration -> SetNotifications
 *   GET /BUCKET?notification  GetBucketNotificationConfiguration
 * S3's <NotificationConfiguration> is read with the shared expat reader
 * (s3xmlr.h) into the NotifyConfig protos the JSON API (api/notifyapi.c)
 * writes, and the stored configurations are written back as S3's XML,
 * each in the element it came in (NotifyConfig.s3_element). objlog's
 * targets are Kafka topics (TopicConfiguration, arn:objlog:kafka:::TOPIC)
 * and webhooks (QueueConfiguration, arn:objlog:webhook:::URL-ENCODED-URL);
 * a CloudFunctionConfiguration or EventBridgeConfiguration is 501.
 * Refusals come in S3's order: the document's shape (MalformedXML:
 * another root, an unknown or repeated element, a configuration without
 * its ARN or an Event, a FilterRule without Name or Value), what objlog
 * does not serve (501), the values (InvalidArgument: an ARN of the other
 * element's kind, a filter rule name, two prefix or two suffix rules),
 * last notify_configs_check (InvalidArgument, its message).
 *
 * Invariant: a set of configurations reaches the log only whole and only
 * after notify_configs_check accepted it, every configuration with an Id
 * (one is made here when the document gives none, so every replay sees
 * the same); the state machine checks the set again on apply. GET answers
 * 200 with an empty document when the bucket has none, never 404. */
#include "core.h"
#include "read.h"
#include "s3.h"
#include "s3xmlr.h"
#include "server.h"
#include "write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>

#include "notify.h"

/* At most this many Event elements in one configuration (notify.h). */
#define S3N_EVENTS_MAX NOTIFY_EVENTS_MAX

enum { S3N_TOPIC = 0, S3N_QUEUE = 1 }; /* NotifyConfig.s3_element */

#define S3N_STR_(n) #n
#define S3N_STR(n) S3N_STR_(n) /* a limit's number in a message */

static const char *const s3n_element[] = {"TopicConfiguration", "QueueConfiguration"};
static const char *const s3n_arn_element[] = {"Topic", "Queue"};

/* The body as read so far. */
typedef struct s3n_parse {
    Objlog__SetNotifications *sn; /* configs: room for NOTIFY_CONFIGS_MAX */
    Objlog__NotifyConfig *cur;   /* the configuration being read, until kept */
    int kind;                    /* its S3N_TOPIC or S3N_QUEUE */
    int in_unserved;             /* inside a CloudFunction/EventBridge configuration */
    int has_id, has_arn, has_filter, has_s3key, has_prefix, has_suffix;
    char rule_name[16];          /* the FilterRule being read */
    char rule_value[S3X_TEXT_MAX + 1];
    size_t rule_value_len;
    int has_name, has_value, rule_long;
    const char *unserved;        /* the first such configuration's element */
    char invalid[400];           /* the first InvalidArgument; "" none */
    char why[160];               /* the MalformedXML x->error points at */
    int oom;
} s3n_parse;

/* ---------------------------------------------------------- the reader */

static int s3n_malformed(s3x *x, s3n_parse *p, const char *fmt, const char *a,
                         const char *b) {
    snprintf(p->why, sizeof(p->why), fmt, a, b);
    x->error = p->why;
    return -1;
}

static void s3n_invalid(s3n_parse *p, const char *fmt, const char *a) {
    if (!p->invalid[0])
        snprintf(p->invalid, sizeof(p->invalid), fmt, a);
}

static int s3n_unexpected(s3x *x, s3n_parse *p) {
    return s3n_malformed(x, p, "unexpected element %.60s in %.60s", x->path[x->depth],
                         x->path[x->depth - 1]);
}

static int s3n_once(s3x *x, s3n_parse *p, int *seen) {
    if (*seen)
        return s3n_malformed(x, p, "more than one %.60s in a %.60s", x->path[x->depth],
                             x->path[x->depth - 1]);
    *seen = 1;
    return 0;
}

/* A copy of the element's text, NUL-terminated; NULL with p->oom. */
static char *s3n_text(s3x *x, s3n_parse *p) {
    char *s = malloc(x->text_len + 1);
    if (!s)
        p->oom = 1;
    else
        memcpy(s, x->text, x->text_len + 1);
    return s;
}

static int s3n_config_start(s3x *x, s3n_parse *p) {
    const char *name = x->path[2];
    if (strcmp(name, "CloudFunctionConfiguration") == 0 ||
        strcmp(name, "EventBridgeConfiguration") == 0) {
        if (!p->unserved)
            p->unserved = name[0] == 'C' ? "CloudFunctionConfiguration"
                                         : "EventBridgeConfiguration";
        p->in_unserved = 1;
        return 0;
    }
    if (strcmp(name, s3n_element[S3N_TOPIC]) == 0)
        p->kind = S3N_TOPIC;
    else if (strcmp(name, s3n_element[S3N_QUEUE]) == 0)
        p->kind = S3N_QUEUE;
    else
        return s3n_unexpected(x, p);
    p->in_unserved = 0;
    p->has_id = p->has_arn = p->has_filter = p->has_s3key = 0;
    p->has_prefix = p->has_suffix = 0;
    if (!(p->cur = malloc(sizeof(*p->cur)))) {
        p->oom = 1;
        return 0;
    }
    objlog__notify_config__init(p->cur);
    p->cur->s3_element = (uint32_t)p->kind;
    return 0;
}

/* A configuration without an Id gets 32 random hex digits, as S3 makes one. */
static int s3n_make_id(Objlog__NotifyConfig *nc) {
    unsigned char b[16];
    if (RAND_bytes(b, sizeof(b)) != 1 || !(nc->id = malloc(2 * sizeof(b) + 1)))
        return -1;
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(nc->id + 2 * i, 3, "%02x", b[i]);
    return 0;
}

/* The ARN must be of the element's kind: a Kafka topic's in a
 * TopicConfiguration, a webhook's in a QueueConfiguration. */
static void s3n_arn_kind(s3n_parse *p, const Objlog__NotifyConfig *nc) {
    if (p->kind == S3N_TOPIC && strncmp(nc->arn, NOTIFY_ARN_KAFKA, strlen(NOTIFY_ARN_KAFKA)))
        s3n_invalid(p, "A TopicConfiguration's Topic must be " NOTIFY_ARN_KAFKA "TOPIC, a "
                       "Kafka topic (a webhook's " NOTIFY_ARN_WEBHOOK " ARN goes in a "
                       "QueueConfiguration), not %.200s", nc->arn);
    else if (p->kind == S3N_QUEUE &&
             strncmp(nc->arn, NOTIFY_ARN_WEBHOOK, strlen(NOTIFY_ARN_WEBHOOK)))
        s3n_invalid(p, "A QueueConfiguration's Queue must be " NOTIFY_ARN_WEBHOOK
                       "URL-ENCODED-URL, a webhook (a Kafka topic's " NOTIFY_ARN_KAFKA
                       " ARN goes in a TopicConfiguration), not %.200s", nc->arn);
}

static int s3n_config_end(s3x *x, s3n_parse *p) {
    if (p->in_unserved) {
        p->in_unserved = 0;
        return 0;
    }
    Objlog__NotifyConfig *nc = p->cur;
    if (!p->has_arn || (nc && nc->n_events == 0))
        return s3n_malformed(x, p, "a %.60s needs a %.60s and at least one Event",
                             s3n_element[p->kind], s3n_arn_element[p->kind]);
    if (!nc || p->oom) { /* answered 500 after the parse */
        if (nc)
            objlog__notify_config__free_unpacked(nc, NULL);
        p->cur = NULL;
        return 0;
    }
    s3n_arn_kind(p, nc);
    if ((!nc->id || !nc->id[0]) && s3n_make_id(nc) < 0)
        p->oom = 1;
    if (p->sn->n_configs == NOTIFY_CONFIGS_MAX) {
        s3n_invalid(p, "a bucket takes at most " S3N_STR(NOTIFY_CONFIGS_MAX)
                       " notification configurations", NULL);
        objlog__notify_config__free_unpacked(nc, NULL);
    } else {
        p->sn->configs[p->sn->n_configs++] = nc;
    }
    p->cur = NULL;
    return 0;
}

/* The end of a leaf of a configuration: Id, Topic or Queue, Event. */
static void s3n_leaf_end(s3x *x, s3n_parse *p, const char *name) {
    Objlog__NotifyConfig *nc = p->cur;
    if (!nc)
        return;
    if (strcmp(name, "Id") == 0) {
        if (x->text_long)
            s3n_invalid(p, "a configuration's Id must be 1 to " S3N_STR(NOTIFY_ID_MAX)
                           " characters", NULL);
        else if (x->text_len) /* an empty Id is none: one is made */
            nc->id = s3n_text(x, p);
    } else if (strcmp(name, "Event") == 0) {
        if (nc->n_events == S3N_EVENTS_MAX) {
            s3n_invalid(p, "a configuration names at most " S3N_STR(S3N_EVENTS_MAX)
                           " event types", NULL);
            return;
        }
        char **ev = realloc(nc->events, (nc->n_events + 1) * sizeof(*ev));
        if (!ev || !(ev[nc->n_events] = s3n_text(x, p))) {
            p->oom = 1;
            if (ev)
                nc->events = ev;
            return;
        }
        nc->events = ev;
        nc->n_events++;
    } else if (x->text_long) { /* the ARN */
        s3n_invalid(p, "a %s ARN is longer than " S3N_STR(S3X_TEXT_MAX) " bytes here",
                    s3n_arn_element[p->kind]);
    } else {
        nc->arn = s3n_text(x, p);
    }
}

static void s3n_rule_end(s3n_parse *p) {
    int prefix = strcasecmp(p->rule_name, "prefix") == 0;
    if (!prefix && strcasecmp(p->rule_name, "suffix") != 0) {
        s3n_invalid(p, "filter rule name must be either prefix or suffix", NULL);
        return;
    }
    int *seen = prefix ? &p->has_prefix : &p->has_suffix;
    if (*seen) {
        s3n_invalid(p, "Cannot specify more than one %s rule in a filter.",
                    prefix ? "prefix" : "suffix");
        return;
    }
    *seen = 1;
    if (p->rule_long) {
        s3n_invalid(p, "a filter rule's value is longer than " S3N_STR(NOTIFY_FILTER_MAX)
                       " bytes", NULL);
        return;
    }
    Objlog__NotifyConfig *nc = p->cur;
    if (!nc || p->rule_value_len == 0)
        return;
    ProtobufCBinaryData *v = prefix ? &nc->prefix : &nc->suffix;
    if (!(v->data = malloc(p->rule_value_len))) {
        p->oom = 1;
        return;
    }
    memcpy(v->data, p->rule_value, p->rule_value_len);
    v->len = p->rule_value_len;
}

/* Filter/S3Key/FilterRule/{Name,Value}, depth 4 to 7 of the document. */
static int s3n_filter(s3x *x, s3n_parse *p, int end) {
    const char *name = x->path[x->depth], *parent = x->path[x->depth - 1];
    if (x->depth == 4 && strcmp(parent, "Filter") == 0 && strcmp(name, "S3Key") == 0)
        return end ? 0 : s3n_once(x, p, &p->has_s3key);
    if (x->depth == 5 && strcmp(parent, "S3Key") == 0 && strcmp(name, "FilterRule") == 0) {
        if (!end) {
            p->has_name = p->has_value = p->rule_long = 0;
            p->rule_name[0] = '\0';
            p->rule_value_len = 0;
            return 0;
        }
        if (!p->has_name || !p->has_value)
            return s3n_malformed(x, p, "a FilterRule needs a Name and a Value", NULL, NULL);
        s3n_rule_end(p);
        return 0;
    }
    if (x->depth != 6 || strcmp(parent, "FilterRule") != 0)
        return s3n_unexpected(x, p);
    int is_name = strcmp(name, "Name") == 0;
    if (!is_name && strcmp(name, "Value") != 0)
        return s3n_unexpected(x, p);
    if (!end)
        return s3n_once(x, p, is_name ? &p->has_name : &p->has_value);
    if (is_name) {
        /* a name longer than "prefix" is no rule name: refused as "" */
        size_t n = x->text_long || x->text_len >= sizeof(p->rule_name) ? 0 : x->text_len;
        memcpy(p->rule_name, x->text, n);
        p->rule_name[n] = '\0';
    } else {
        p->rule_long = x->text_long;
        p->rule_value_len = x->text_long ? 0 : x->text_len;
        memcpy(p->rule_value, x->text, p->rule_value_len);
    }
    return 0;
}

static int s3n_cb(s3x *x, int end) {
    s3n_parse *p = x->arg;
    if (s3x_root(x, "NotificationConfiguration", end) < 0)
        return -1;
    if (x->depth == 1)
        return 0;
    if (x->depth == 2)
        return end ? s3n_config_end(x, p) : s3n_config_start(x, p);
    if (p->in_unserved)
        return 0; /* refused whole once the shape holds: not read */
    if (x->depth > 3)
        return s3n_filter(x, p, end);
    const char *name = x->path[3];
    if (strcmp(name, "Filter") == 0)
        return end ? 0 : s3n_once(x, p, &p->has_filter);
    if (strcmp(name, "Id") == 0 || strcmp(name, s3n_arn_element[p->kind]) == 0) {
        if (!end)
            return s3n_once(x, p, name[0] == 'I' ? &p->has_id : &p->has_arn);
    } else if (strcmp(name, "Event") != 0) {
        return s3n_unexpected(x, p);
    }
    if (end)
        s3n_leaf_end(x, p, name);
    return 0;
}

/* ----------------------------------------------------------- the PUT */

/* Content-MD5 and x-amz-checksum-*, each checked when sent (neither is
 * required, as for the lifecycle); -1 after replying. */
static int s3n_digests(http_ctx *c, const s3_request *r) {
    unsigned char md5[16];
    char sum[128], header[64];
    if (s3_body_md5(c, r, md5) < 0)
        return -1;
    return s3_checksum(c, NULL, r->body_len ? r->body : (const uint8_t *)"", r->body_len, sum,
                       sizeof(sum), header, sizeof(header)) < 0 ? -1 : 0;
}

/* After a parse that held its shape: the refusals in S3's order, else the
 * event. */
static void s3n_decide(http_ctx *c, const s3_request *r, s3n_parse *p) {
    char why[400];
    Objlog__SetNotifications *sn = p->sn;
    if (p->oom) {
        http_reply_error(c, 500, "InternalError", "out of memory");
    } else if (p->unserved) {
        http_reply_error(c, 501, "NotImplemented",
                         "%s is not implemented by objlog: it notifies Kafka topics "
                         "(TopicConfiguration) and webhooks (QueueConfiguration)",
                         p->unserved);
    } else if (p->invalid[0]) {
        http_reply_error(c, 400, "InvalidArgument", "%s", p->invalid);
    } else if (notify_configs_check(sn->configs, sn->n_configs, why, sizeof(why)) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "%s", why);
    } else {
        Objlog__Event ev = OBJLOG__EVENT__INIT;
        ev.bucket = (char *)r->bucket;
        ev.op_case = OBJLOG__EVENT__OP_SET_NOTIFICATIONS;
        ev.set_notifications = sn;
        gateway_write_event(c, &ev); /* 200, no body (s3_reply_written) */
    }
}

void s3_put_notification(http_ctx *c, const s3_request *r) {
    if (s3n_digests(c, r) < 0)
        return;
    s3n_parse *p = calloc(1, sizeof(*p));
    Objlog__SetNotifications *sn = p ? malloc(sizeof(*sn)) : NULL;
    if (sn) {
        objlog__set_notifications__init(sn);
        sn->configs = calloc(NOTIFY_CONFIGS_MAX, sizeof(*sn->configs));
    }
    if (!sn || !sn->configs) {
        free(sn);
        free(p);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    p->sn = sn;
    if (s3x_parse(c, r, s3n_cb, p) == 0)
        s3n_decide(c, r, p);
    if (p->cur) /* a configuration the parse stopped inside */
        objlog__notify_config__free_unpacked(p->cur, NULL);
    objlog__set_notifications__free_unpacked(sn, NULL);
    free(p);
}

/* S3 has no DeleteBucketNotification: without this row a DELETE with
 * ?notification would be DeleteBucket. */
void s3_delete_notification(http_ctx *c, const s3_request *r) {
    (void)r;
    http_reply_error(c, 405, "MethodNotAllowed",
                     "The specified method is not allowed against this resource (PUT an "
                     "empty NotificationConfiguration to remove every configuration).");
}

/* ----------------------------------------------------------- the GET */

static void s3n_write_rule(xmlw *w, const char *name, const ProtobufCBinaryData *v) {
    if (v->len == 0)
        return;
    xmlw_open(w, "FilterRule");
    xmlw_str(w, "Name", name);
    xmlw_bytes(w, "Value", v->data, v->len, 0);
    xmlw_close(w, "FilterRule");
}

/* One configuration in the element it came in, the filter only when it
 * has a rule, each rule's Name as S3 writes it back ("Prefix", "Suffix"). */
static void s3n_write_config(xmlw *w, const Objlog__NotifyConfig *nc) {
    int k = nc->s3_element == S3N_QUEUE ? S3N_QUEUE : S3N_TOPIC;
    xmlw_open(w, s3n_element[k]);
    xmlw_str(w, "Id", nc->id);
    xmlw_str(w, s3n_arn_element[k], nc->arn);
    for (size_t i = 0; i < nc->n_events; i++)
        xmlw_str(w, "Event", nc->events[i]);
    if (nc->prefix.len || nc->suffix.len) {
        xmlw_open(w, "Filter");
        xmlw_open(w, "S3Key");
        s3n_write_rule(w, "Prefix", &nc->prefix);
        s3n_write_rule(w, "Suffix", &nc->suffix);
        xmlw_close(w, "S3Key");
        xmlw_close(w, "Filter");
    }
    xmlw_close(w, s3n_element[k]);
}

void s3_get_notification(http_ctx *c, const s3_request *r) {
    view_bucket b;
    if (read_bucket_record(c, r->bucket, &b) < 0)
        return; /* NoSuchBucket, or parked on the fence */
    xmlw w;
    if (xmlw_begin(&w, "NotificationConfiguration") < 0) {
        view_bucket_free(&b);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    for (size_t i = 0; i < b.record->n_notifications; i++)
        s3n_write_config(&w, b.record->notifications[i]);
    view_bucket_free(&b);
    s3_reply_xml(c, 200, &w, "NotificationConfiguration");
}
