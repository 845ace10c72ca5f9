/* notify.c: a bucket's notification configurations checked and matched
 * (notify.h). The event types are S3's, all of them accepted (a type
 * objlog never produces, such as s3:ObjectRestore:*, simply never fires),
 * so a configuration written for S3 is taken as it is. */
#include "notify.h"

#include <stdio.h>
#include <string.h>

/* S3's event types, without "s3:"; a family's wildcard is "FAMILY:*". */
static const char *const notify_events[] = {
    "ObjectCreated:*", "ObjectCreated:Put", "ObjectCreated:Post", "ObjectCreated:Copy",
    "ObjectCreated:CompleteMultipartUpload",
    "ObjectRemoved:*", "ObjectRemoved:Delete", "ObjectRemoved:DeleteMarkerCreated",
    "ObjectRestore:*", "ObjectRestore:Post", "ObjectRestore:Completed",
    "ObjectRestore:Delete",
    "ReducedRedundancyLostObject",
    "Replication:*", "Replication:OperationFailedReplication",
    "Replication:OperationMissedThreshold", "Replication:OperationReplicatedAfterThreshold",
    "Replication:OperationNotTracked",
    "LifecycleExpiration:*", "LifecycleExpiration:Delete",
    "LifecycleExpiration:DeleteMarkerCreated",
    "LifecycleTransition", "IntelligentTiering",
    "ObjectTagging:*", "ObjectTagging:Put", "ObjectTagging:Delete",
    "ObjectAcl:Put",
};

int notify_event_known(const char *name) {
    if (!name || strncmp(name, "s3:", 3) != 0)
        return 0;
    for (size_t i = 0; i < sizeof(notify_events) / sizeof(notify_events[0]); i++)
        if (strcmp(name + 3, notify_events[i]) == 0)
            return 1;
    return 0;
}

int notify_event_covers(const char *pattern, const char *event_name) {
    if (strncmp(pattern, "s3:", 3) != 0)
        return 0;
    pattern += 3;
    size_t pn = strlen(pattern);
    if (pn >= 2 && strcmp(pattern + pn - 2, ":*") == 0)
        return strncmp(pattern, event_name, pn - 1) == 0;
    return strcmp(pattern, event_name) == 0;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s into out (size NOTIFY_URL_MAX + 1). 0 or -1. */
static int url_decode(const char *s, char *out, char *why, size_t wn) {
    size_t o = 0;
    for (; *s; s++) {
        int c = (unsigned char)*s;
        if (c == '%') {
            int h = hexval(s[1]), l = h < 0 ? -1 : hexval(s[2]);
            if (l < 0) {
                snprintf(why, wn, "webhook ARN: a %% not followed by two hex digits");
                return -1;
            }
            c = h * 16 + l;
            s += 2;
        }
        if (c <= 0x20 || c == 0x7f) {
            snprintf(why, wn, "webhook ARN: the URL holds a space or control character");
            return -1;
        }
        if (o == NOTIFY_URL_MAX) {
            snprintf(why, wn, "webhook ARN: the URL is longer than %d bytes", NOTIFY_URL_MAX);
            return -1;
        }
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return 0;
}

static int topic_ok(const char *t, char *why, size_t wn) {
    size_t n = strlen(t);
    if (n == 0 || n > NOTIFY_TOPIC_MAX || strcmp(t, ".") == 0 || strcmp(t, "..") == 0) {
        snprintf(why, wn, "Kafka ARN: the topic name must be 1 to %d characters, not . or ..",
                 NOTIFY_TOPIC_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-')) {
            snprintf(why, wn, "Kafka ARN: topic %.64s holds '%c' (allowed: letters, digits, "
                     ". _ -)", t, c);
            return -1;
        }
    }
    return 0;
}

int notify_target_parse(const char *arn, notify_target *out, char *why, size_t wn) {
    size_t kn = strlen(NOTIFY_ARN_KAFKA), wh = strlen(NOTIFY_ARN_WEBHOOK);
    if (arn && strncmp(arn, NOTIFY_ARN_KAFKA, kn) == 0) {
        out->kind = NOTIFY_KAFKA;
        if (topic_ok(arn + kn, why, wn) < 0)
            return -1;
        snprintf(out->target, sizeof(out->target), "%s", arn + kn);
        return 0;
    }
    if (arn && strncmp(arn, NOTIFY_ARN_WEBHOOK, wh) == 0) {
        out->kind = NOTIFY_WEBHOOK;
        if (url_decode(arn + wh, out->target, why, wn) < 0)
            return -1;
        if (strncmp(out->target, "http://", 7) != 0 &&
            strncmp(out->target, "https://", 8) != 0) {
            snprintf(why, wn, "webhook ARN: the URL must start with http:// or https://");
            return -1;
        }
        return 0;
    }
    snprintf(why, wn, "The ARN is not well formed: %.200s (objlog takes %sTOPIC or "
             "%sURL-ENCODED-URL)", arn ? arn : "", NOTIFY_ARN_KAFKA, NOTIFY_ARN_WEBHOOK);
    return -1;
}

/* 1 if one of a and b is a prefix (suffix: tail) of the other, so some key
 * passes both filters. */
static int affix_overlap(const ProtobufCBinaryData *a, const ProtobufCBinaryData *b,
                         int tail) {
    size_t n = a->len < b->len ? a->len : b->len;
    if (n == 0)
        return 1;
    const uint8_t *x = a->data + (tail ? a->len - n : 0);
    const uint8_t *y = b->data + (tail ? b->len - n : 0);
    return memcmp(x, y, n) == 0;
}

/* 1 if an event type of a and one of b cover a common event. */
static int events_share(const Objlog__NotifyConfig *a, const Objlog__NotifyConfig *b) {
    for (size_t i = 0; i < a->n_events; i++)
        for (size_t j = 0; j < b->n_events; j++) {
            const char *x = a->events[i] + 3, *y = b->events[j] + 3;
            size_t xn = strlen(x), yn = strlen(y);
            size_t xs = xn >= 2 && strcmp(x + xn - 2, ":*") == 0 ? xn - 1 : xn;
            size_t ys = yn >= 2 && strcmp(y + yn - 2, ":*") == 0 ? yn - 1 : yn;
            size_t m = xs < ys ? xs : ys;
            /* the same type, or a wildcard covering the other */
            if ((xs == xn && ys == yn) ? strcmp(x, y) == 0 : strncmp(x, y, m) == 0)
                return 1;
        }
    return 0;
}

static int config_check(const Objlog__NotifyConfig *c, char *why, size_t wn) {
    size_t idn = c->id ? strlen(c->id) : 0;
    if (idn == 0 || idn > NOTIFY_ID_MAX) {
        snprintf(why, wn, "a configuration's Id must be 1 to %d characters", NOTIFY_ID_MAX);
        return -1;
    }
    if (c->n_events == 0) {
        snprintf(why, wn, "configuration %.64s names no event", c->id);
        return -1;
    }
    if (c->n_events > NOTIFY_EVENTS_MAX) {
        snprintf(why, wn, "configuration %.64s names more than %d events", c->id,
                 NOTIFY_EVENTS_MAX);
        return -1;
    }
    for (size_t i = 0; i < c->n_events; i++)
        if (!notify_event_known(c->events[i])) {
            snprintf(why, wn, "The event is not supported for notifications: %.100s",
                     c->events[i] ? c->events[i] : "");
            return -1;
        }
    if (c->prefix.len > NOTIFY_FILTER_MAX || c->suffix.len > NOTIFY_FILTER_MAX) {
        snprintf(why, wn, "configuration %.64s: a filter rule's value is longer than %d bytes",
                 c->id, NOTIFY_FILTER_MAX);
        return -1;
    }
    notify_target t;
    return notify_target_parse(c->arn, &t, why, wn);
}

int notify_configs_check(Objlog__NotifyConfig *const *c, size_t n, char *why, size_t wn) {
    if (n > NOTIFY_CONFIGS_MAX) {
        snprintf(why, wn, "a bucket takes at most %d notification configurations",
                 NOTIFY_CONFIGS_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (config_check(c[i], why, wn) < 0)
            return -1;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(c[i]->id, c[j]->id) == 0) {
                snprintf(why, wn, "two configurations share the Id %.64s", c[i]->id);
                return -1;
            }
            if (events_share(c[i], c[j]) && affix_overlap(&c[i]->prefix, &c[j]->prefix, 0) &&
                affix_overlap(&c[i]->suffix, &c[j]->suffix, 1)) {
                snprintf(why, wn, "Configuration is ambiguously defined. Cannot have "
                         "overlapping suffixes in two rules if the prefixes are overlapping "
                         "for the same event type (%.64s and %.64s).", c[j]->id, c[i]->id);
                return -1;
            }
        }
    }
    return 0;
}

int notify_config_matches(const Objlog__NotifyConfig *c, const char *event_name,
                          const uint8_t *key, size_t key_len) {
    const ProtobufCBinaryData *p = &c->prefix, *s = &c->suffix;
    if (p->len > key_len || (p->len && memcmp(key, p->data, p->len) != 0))
        return 0;
    if (s->len > key_len || (s->len && memcmp(key + key_len - s->len, s->data, s->len) != 0))
        return 0;
    for (size_t i = 0; i < c->n_events; i++)
        if (notify_event_covers(c->events[i], event_name))
            return 1;
    return 0;
}
