/* s3list.c: the S3 endpoint's listings of versions, uploads and parts
 * (the read side of versioning and multipart uploads): ListObjectVersions (GET
 * /BUCKET?versions), ListMultipartUploads (GET /BUCKET?uploads) and
 * ListParts (GET|HEAD /BUCKET/KEY?uploadId=ID), routed here by s3.c.
 *
 * Each handler reads S3's parameter names, then calls the same read as the
 * JSON route (read.c's read_*_page: its checks, its fence, one snapshot),
 * and writes S3's XML. Invariant: nothing here decides what is listed;
 * only names, the XML shape and EncodingType=url differ from the JSON
 * answer, so the two front ends agree on every page.
 *
 * Every Owner and Initiator is the bucket's owner (its tenant; objlog
 * keeps no uploader per object or upload). */
#include "core.h"
#include "read.h"
#include "s3.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#define S3LIST_MAX_PARTS_MARKER 2147483647LL

/* ------------------------------------------------------------- plumbing */

/* Closes root and answers 200 (no body for HEAD, as S3). */
static void s3list_reply(http_ctx *c, xmlw *x, const char *root) {
    s3_reply_xml(c, 200, x, root);
}

static int s3list_begin(http_ctx *c, xmlw *x, const char *root) {
    if (xmlw_begin(x, root) == 0)
        return 0;
    xmlw_discard(x);
    http_reply_error(c, 500, "InternalError", "out of memory");
    return -1;
}

/* A string parameter, "" when absent (the views take "" as none). */
static const char *s3list_param(http_ctx *c, const char *name, size_t *len) {
    const char *v = http_param_get(c, name, len);
    if (!v && len)
        *len = 0;
    return v ? v : "";
}

/* S3 quotes ETags in listings; objlog stores what the writer gave. */
static void s3list_etag(xmlw *x, const char *etag) {
    if (etag && etag[0] == '"') {
        xmlw_str(x, "ETag", etag);
        return;
    }
    char quoted[160];
    snprintf(quoted, sizeof(quoted), "\"%s\"", etag ? etag : "");
    xmlw_str(x, "ETag", quoted);
}

static const char *s3list_storage_class(const Objlog__ObjectMeta *m) {
    return m && m->storage_class && *m->storage_class ? m->storage_class : "STANDARD";
}

static void s3list_prefixes(xmlw *x, const view_bytes *p, size_t n, int url) {
    for (size_t i = 0; i < n; i++) {
        xmlw_open(x, "CommonPrefixes");
        xmlw_bytes(x, "Prefix", p[i].data, p[i].len, url);
        xmlw_close(x, "CommonPrefixes");
    }
}

/* --------------------------------------------------- ListObjectVersions */

/* A version or a delete marker, in the view's order (key, then newest
 * first): S3 interleaves the two elements the same way. */
static void s3list_version_xml(xmlw *x, const view_version *v, int url, const char *owner) {
    const char *tag = v->delete_marker ? "DeleteMarker" : "Version";
    xmlw_open(x, tag);
    xmlw_bytes(x, "Key", v->key.data, v->key.len, url);
    xmlw_str(x, "VersionId", v->version_id);
    xmlw_bool(x, "IsLatest", v->is_latest);
    xmlw_time(x, "LastModified", v->last_modified_ms);
    if (!v->delete_marker) {
        s3list_etag(x, v->etag);
        xmlw_u64(x, "Size", v->size);
        xmlw_str(x, "StorageClass", v->storage_class);
    }
    s3_owner_xml(x, "Owner", owner);
    xmlw_close(x, tag);
}

static void s3list_versions_reply(http_ctx *c, const char *bucket, const view_versions_req *r,
                                  const view_versions *o, int url, const char *owner) {
    xmlw x;
    if (s3list_begin(c, &x, "ListVersionsResult") < 0)
        return;
    xmlw_str(&x, "Name", bucket);
    xmlw_bytes(&x, "Prefix", r->prefix, r->prefix_len, url);
    xmlw_bytes(&x, "KeyMarker", r->key_marker, r->key_marker_len, url);
    xmlw_str(&x, "VersionIdMarker", r->version_id_marker);
    if (o->is_truncated) {
        xmlw_bytes(&x, "NextKeyMarker", o->next_key_marker.data, o->next_key_marker.len, url);
        /* A page that ends on a common prefix continues after the
         * prefix: a key marker alone, so no version id marker. */
        if (o->next_version_id_marker[0])
            xmlw_str(&x, "NextVersionIdMarker", o->next_version_id_marker);
    }
    xmlw_u64(&x, "MaxKeys", (uint64_t)r->max_keys);
    if (r->delimiter_len)
        xmlw_bytes(&x, "Delimiter", r->delimiter, r->delimiter_len, url);
    if (url)
        xmlw_str(&x, "EncodingType", "url");
    xmlw_bool(&x, "IsTruncated", o->is_truncated);
    for (size_t i = 0; i < o->n_versions; i++)
        s3list_version_xml(&x, &o->versions[i], url, owner);
    s3list_prefixes(&x, o->prefixes, o->n_prefixes, url);
    s3list_reply(c, &x, "ListVersionsResult");
}

void s3list_versions(http_ctx *c, const s3_request *req) {
    const char *bucket = req->bucket;
    view_versions_req r = {0};
    c->endpoint = HTTP_EP_LIST_VERSIONS;
    int url = s3_encoding(c);
    if (url < 0 || s3_max_param(c, "max-keys", &r.max_keys) < 0)
        return;
    r.prefix = (const uint8_t *)s3list_param(c, "prefix", &r.prefix_len);
    r.delimiter = (const uint8_t *)s3list_param(c, "delimiter", &r.delimiter_len);
    r.key_marker = (const uint8_t *)s3list_param(c, "key-marker", &r.key_marker_len);
    r.version_id_marker = s3list_param(c, "version-id-marker", NULL);
    view_versions o;
    char owner[S3_OWNER_MAX];
    if (read_versions_page(c, bucket, &r, &o) < 0)
        return;
    if (s3_bucket_owner(c, bucket, owner, sizeof(owner)) == 0)
        s3list_versions_reply(c, bucket, &r, &o, url, owner);
    view_versions_free(&o);
}

/* ------------------------------------------------- ListMultipartUploads */

static void s3list_upload_xml(xmlw *x, const view_upload *u, int url, const char *owner) {
    xmlw_open(x, "Upload");
    xmlw_bytes(x, "Key", u->key.data, u->key.len, url);
    xmlw_str(x, "UploadId", u->upload_id);
    s3_owner_xml(x, "Initiator", owner);
    s3_owner_xml(x, "Owner", owner);
    xmlw_str(x, "StorageClass", s3list_storage_class(u->record ? u->record->meta : NULL));
    xmlw_time(x, "Initiated", u->initiated_ms);
    xmlw_close(x, "Upload");
}

static void s3list_uploads_reply(http_ctx *c, const char *bucket, const view_uploads_req *r,
                                 const view_uploads *o, int url, const char *owner) {
    xmlw x;
    if (s3list_begin(c, &x, "ListMultipartUploadsResult") < 0)
        return;
    xmlw_str(&x, "Bucket", bucket);
    xmlw_bytes(&x, "KeyMarker", r->key_marker, r->key_marker_len, url);
    xmlw_str(&x, "UploadIdMarker", r->upload_id_marker);
    if (o->is_truncated) {
        xmlw_bytes(&x, "NextKeyMarker", o->next_key_marker.data, o->next_key_marker.len, url);
        if (o->next_upload_id_marker[0])
            xmlw_str(&x, "NextUploadIdMarker", o->next_upload_id_marker);
    }
    xmlw_bytes(&x, "Prefix", r->prefix, r->prefix_len, url);
    if (r->delimiter_len)
        xmlw_bytes(&x, "Delimiter", r->delimiter, r->delimiter_len, url);
    xmlw_u64(&x, "MaxUploads", (uint64_t)r->max_uploads);
    xmlw_bool(&x, "IsTruncated", o->is_truncated);
    for (size_t i = 0; i < o->n_uploads; i++)
        s3list_upload_xml(&x, &o->uploads[i], url, owner);
    s3list_prefixes(&x, o->prefixes, o->n_prefixes, url);
    if (url)
        xmlw_str(&x, "EncodingType", "url");
    s3list_reply(c, &x, "ListMultipartUploadsResult");
}

void s3list_uploads(http_ctx *c, const s3_request *req) {
    const char *bucket = req->bucket;
    view_uploads_req r = {0};
    c->endpoint = HTTP_EP_UPLOADS;
    int url = s3_encoding(c);
    if (url < 0 || s3_max_param(c, "max-uploads", &r.max_uploads) < 0)
        return;
    r.prefix = (const uint8_t *)s3list_param(c, "prefix", &r.prefix_len);
    r.delimiter = (const uint8_t *)s3list_param(c, "delimiter", &r.delimiter_len);
    r.key_marker = (const uint8_t *)s3list_param(c, "key-marker", &r.key_marker_len);
    r.upload_id_marker = s3list_param(c, "upload-id-marker", NULL);
    view_uploads o;
    char owner[S3_OWNER_MAX];
    if (read_uploads_page(c, bucket, &r, &o) < 0)
        return;
    if (s3_bucket_owner(c, bucket, owner, sizeof(owner)) == 0)
        s3list_uploads_reply(c, bucket, &r, &o, url, owner);
    view_uploads_free(&o);
}

/* ------------------------------------------------------------- ListParts */

static void s3list_parts_reply(http_ctx *c, const char *bucket, const char *upload_id,
                               long long marker, int max, const view_parts *o,
                               const char *owner) {
    xmlw x;
    if (s3list_begin(c, &x, "ListPartsResult") < 0)
        return;
    const view_upload *u = &o->upload;
    xmlw_str(&x, "Bucket", bucket);
    xmlw_bytes(&x, "Key", u->key.data, u->key.len, 0);
    xmlw_str(&x, "UploadId", upload_id);
    s3_owner_xml(&x, "Initiator", owner);
    s3_owner_xml(&x, "Owner", owner);
    xmlw_str(&x, "StorageClass", s3list_storage_class(u->record ? u->record->meta : NULL));
    xmlw_u64(&x, "PartNumberMarker", (uint64_t)marker);
    /* S3 names the last part listed even on the last page. */
    xmlw_u64(&x, "NextPartNumberMarker", o->next_part_number_marker);
    xmlw_u64(&x, "MaxParts", (uint64_t)max);
    xmlw_bool(&x, "IsTruncated", o->is_truncated);
    for (size_t i = 0; i < o->n_parts; i++) {
        const view_part *p = &o->parts[i];
        xmlw_open(&x, "Part");
        xmlw_u64(&x, "PartNumber", p->part_number);
        xmlw_time(&x, "LastModified", p->last_modified_ms);
        s3list_etag(&x, p->etag);
        xmlw_u64(&x, "Size", p->size);
        xmlw_close(&x, "Part");
    }
    s3list_reply(c, &x, "ListPartsResult");
}

void s3list_parts(http_ctx *c, const s3_request *req) {
    const char *bucket = req->bucket;
    const uint8_t *key = (const uint8_t *)req->key;
    size_t key_len = req->key_len;
    c->endpoint = HTTP_EP_PARTS;
    const char *upload_id = http_param_get(c, "uploadId", NULL);
    long long marker;
    int max;
    if (!upload_id || !*upload_id) {
        http_reply_error(c, 404, "NoSuchUpload", "The specified upload does not exist.");
        return;
    }
    if (s3_max_param(c, "max-parts", &max) < 0)
        return;
    if (http_param_int(c, "part-number-marker", 0, S3LIST_MAX_PARTS_MARKER, 0, &marker) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "Provided part-number-marker not an integer or within integer range");
        return;
    }
    /* Part numbers end at 10000: a larger marker lists nothing. */
    uint32_t from = marker > 10000 ? 10000 : (uint32_t)marker;
    view_parts o;
    char owner[S3_OWNER_MAX];
    if (read_parts_page(c, bucket, key, key_len, upload_id, from, max, &o) < 0)
        return;
    if (s3_bucket_owner(c, bucket, owner, sizeof(owner)) == 0)
        s3list_parts_reply(c, bucket, upload_id, marker, max, &o, owner);
    view_parts_free(&o);
}
