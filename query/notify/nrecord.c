/* nrecord.c: S3's event message format (nrecord.h). Owns the mapping of
 * a FeedRecord to S3's fields; everything in it comes from the record,
 * which comes from the log, so the same event always renders the same
 * bytes (eventTime is the event's log time, never a clock). */
#include "nrecord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

void nrecord_key_encode(const uint8_t *key, size_t n, char *out) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = key[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
            out[o++] = (char)c;
        } else if (c == ' ') {
            out[o++] = '+';
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

/* ISO 8601 with milliseconds, UTC: S3's eventTime. */
static void iso_time(int64_t ms, char *out, size_t n) {
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char b[32];
    strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%s.%03dZ", b, (int)(ms % 1000));
}

static void hex_of(const ProtobufCBinaryData *d, char *out, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < d->len && o + 3 <= n; i++)
        o += (size_t)snprintf(out + o, n - o, "%02X", d->data[i]);
    out[o] = '\0';
}

static json_t *object_json(const Objlog__FeedRecord *r) {
    char *key = malloc(3 * r->key.len + 1);
    if (!key)
        return NULL;
    nrecord_key_encode(r->key.data, r->key.len, key);
    json_t *o = json_pack("{s:s, s:s}", "key", key, "sequencer", r->sequencer);
    free(key);
    if (!o)
        return NULL;
    /* S3 gives size and eTag for what exists after the change */
    if (strncmp(r->event_name, "ObjectRemoved:", 14) != 0 &&
        strncmp(r->event_name, "LifecycleExpiration:", 20) != 0) {
        const char *e = r->etag;
        size_t en = strlen(e);
        if (en >= 2 && e[0] == '"' && e[en - 1] == '"')
            e++, en -= 2;
        json_object_set_new(o, "size", json_integer((json_int_t)r->size));
        json_object_set_new(o, "eTag", json_stringn(e, en));
    }
    if (r->version_id[0])
        json_object_set_new(o, "versionId", json_string(r->version_id));
    return o;
}

char *nrecord_json(const Objlog__FeedRecord *r, const char *region, size_t *n) {
    char when[40], rid[40], arn[320];
    iso_time(r->log_time_ms, when, sizeof(when));
    hex_of(&r->request_id, rid, sizeof(rid));
    snprintf(arn, sizeof(arn), "arn:aws:s3:::%s", r->bucket);
    int lifecycle = strncmp(r->event_name, "LifecycleExpiration:", 20) == 0;
    const char *who = lifecycle ? "objlog:lifecycle" : (r->owner[0] ? r->owner : "anonymous");
    const char *owner = r->owner[0] ? r->owner : "anonymous";
    json_t *obj = object_json(r);
    if (!obj)
        return NULL;
    json_t *rec = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s, s:s}, "
        "s:{s:s, s:s, s:{s:s, s:{s:s}, s:s}, s:o}}",
        "eventVersion", "2.1", "eventSource", "objlog:s3", "awsRegion", region,
        "eventTime", when, "eventName", r->event_name,
        "userIdentity", "principalId", who,
        "requestParameters", "sourceIPAddress", "",
        "responseElements", "x-amz-request-id", rid, "x-amz-id-2", r->sequencer,
        "s3", "s3SchemaVersion", "1.0", "configurationId", r->config_id,
        "bucket", "name", r->bucket, "ownerIdentity", "principalId", owner, "arn", arn,
        "object", obj);
    if (!rec)
        return NULL;
    json_t *top = json_pack("{s:[o]}", "Records", rec);
    if (!top)
        return NULL;
    char *s = json_dumps(top, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(top);
    if (s && n)
        *n = strlen(s);
    return s;
}

char *nrecord_kafka_key(const Objlog__FeedRecord *r, size_t *kn) {
    size_t bn = strlen(r->bucket);
    char *k = malloc(bn + 1 + r->key.len + 1);
    if (!k)
        return NULL;
    memcpy(k, r->bucket, bn);
    k[bn] = '/';
    memcpy(k + bn + 1, r->key.data, r->key.len);
    k[bn + 1 + r->key.len] = '\0';
    *kn = bn + 1 + r->key.len;
    return k;
}

char *nrecord_release_json(const Objlog__FeedRecord *r, size_t *n) {
    char when[40];
    iso_time(r->log_time_ms, when, sizeof(when));
    json_t *o = json_pack("{s:s, s:s, s:s, s:s%, s:s, s:s, s:s, s:s}", "eventName",
                          "objlog:BlobReleased", "blobId", r->blob_id, "bucket", r->bucket,
                          "key", r->key.len ? (const char *)r->key.data : "", r->key.len,
                          "versionId", r->version_id, "uploadId", r->upload_id ? r->upload_id : "",
                          "sequencer", r->sequencer, "eventTime", when);
    if (!o)
        return NULL;
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (s)
        *n = strlen(s);
    return s;
}
