/* test_s3_model_wire.c: the S3 reference model (s3model.h) through both
 * wire formats. Random operation sequences over a few
 * keys, in every versioning state, are sent to one `objlogd --embedded`,
 * each write through the JSON API or the S3 endpoint at random, and after
 * EVERY step both APIs are compared with the model: each key's HEAD
 * through S3 (status, ETag, x-amz-version-id, x-amz-delete-marker) and GET
 * through JSON; a fully paginated ListObjectsV2 (encoding-type=url, random
 * prefix, delimiter and page size) and JSON LIST; and JSON's fully
 * paginated ListObjectVersions. test_s3_model checks the same model
 * against the view directly, 10,000 sequences; this one is slower (HTTP)
 * and runs fewer. objlogd is a child of the test, killed with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "httpc.h"
#include "proc.h"
#include "s3model.h"

#define N_SEQUENCES 150
#define MAX_STEPS 8
#define MAX_ITEMS 256

static struct {
    char dir[256];
    proc *p;
    httpc *s3, *json;
    uint64_t rng;
    long checks, writes_s3, writes_json;
} g;

static uint64_t rnd(void) {
    g.rng ^= g.rng << 13;
    g.rng ^= g.rng >> 7;
    g.rng ^= g.rng << 17;
    return g.rng;
}

static char *esc(const char *s) { return httpc_escape(g.json, s, strlen(s)); }

/* ---- writes, through either API ---- */

static const char *header_of(const httpc_resp *r, const char *name, char *out, size_t n) {
    const char *at = strstr(r->headers, name);
    out[0] = '\0';
    if (!at)
        return NULL;
    at += strlen(name);
    size_t l = strcspn(at, "\r\n");
    snprintf(out, n, "%.*s", (int)(l < n ? l : n - 1), at);
    return out;
}

static void create_bucket(model *m, int versioning) {
    char path[96];
    httpc_resp r;
    snprintf(path, sizeof(path), "/v1/buckets/%s", m->bucket);
    assert_int_equal(httpc_do(g.json, "PUT", path, versioning ? "{\"versioning\":\"Enabled\"}"
                                                              : "{}", NULL, &r), 0);
    assert_int_equal(r.status, 200);
    m->versioning = versioning;
}

static void set_versioning(model *m, int to) {
    char path[96];
    httpc_resp r;
    snprintf(path, sizeof(path), "/v1/buckets/%s/versioning", m->bucket);
    assert_int_equal(httpc_do(g.json, "PUT", path,
                              to == 1 ? "{\"status\":\"Enabled\"}" : "{\"status\":\"Suspended\"}",
                              NULL, &r), 0);
    assert_int_equal(r.status, 200);
    m->versioning = to;
}

static void op_put(model *m, int key, long n) {
    char path[160], etag[40], vid[S3MODEL_VID_LEN] = "null", hv[S3MODEL_VID_LEN];
    char *k = esc(s3model_keys[key]);
    httpc_resp r;
    if (rnd() % 2) {
        char body[64];
        unsigned char md5[16];
        unsigned int mdn;
        snprintf(body, sizeof(body), "body %ld", n);
        EVP_Digest(body, strlen(body), md5, &mdn, EVP_md5(), NULL);
        for (int i = 0; i < 16; i++)
            snprintf(etag + 2 * i, 3, "%02x", md5[i]);
        snprintf(path, sizeof(path), "/%s/%s", m->bucket, k);
        assert_int_equal(httpc_do(g.s3, "PUT", path, body, NULL, &r), 0);
        if (r.status != 200)
            fail_msg("S3 PUT %s: %ld %s", path, r.status, r.body);
        if (header_of(&r, "x-amz-version-id: ", hv, sizeof(hv)))
            snprintf(vid, sizeof(vid), "%s", hv);
        g.writes_s3++;
    } else {
        char body[96];
        snprintf(etag, sizeof(etag), "e%ld", n);
        snprintf(body, sizeof(body), "{\"size\":%ld,\"etag\":\"%s\"}", n, etag);
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", m->bucket, k);
        assert_int_equal(httpc_do(g.json, "PUT", path, body, NULL, &r), 0);
        if (r.status != 200)
            fail_msg("JSON PUT %s: %ld %s", path, r.status, r.body);
        json_t *j = json_loads(r.body, 0, NULL);
        snprintf(vid, sizeof(vid), "%s", json_string_value(json_object_get(j, "version_id")));
        json_decref(j);
        g.writes_json++;
    }
    free(k);
    assert_int_equal(model_put(m, key, vid, etag), 0);
}

/* DELETE of key (version NULL: the latest; else that version). */
static void op_delete(model *m, int key, const char *version) {
    char path[200], vid[S3MODEL_VID_LEN] = "null", hv[S3MODEL_VID_LEN];
    char *k = esc(s3model_keys[key]);
    httpc_resp r;
    if (rnd() % 2) {
        snprintf(path, sizeof(path), "/%s/%s%s%s", m->bucket, k, version ? "?versionId=" : "",
                 version ? version : "");
        assert_int_equal(httpc_do(g.s3, "DELETE", path, NULL, NULL, &r), 0);
        if (r.status != 204)
            fail_msg("S3 DELETE %s: %ld %s", path, r.status, r.body);
        if (header_of(&r, "x-amz-version-id: ", hv, sizeof(hv)))
            snprintf(vid, sizeof(vid), "%s", hv);
        g.writes_s3++;
    } else {
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s%s%s", m->bucket, k,
                 version ? "?version_id=" : "", version ? version : "");
        assert_int_equal(httpc_do(g.json, "DELETE", path, NULL, NULL, &r), 0);
        if (r.status != 200)
            fail_msg("JSON DELETE %s: %ld %s", path, r.status, r.body);
        json_t *j = json_loads(r.body, 0, NULL);
        const char *v = json_string_value(json_object_get(j, "version_id"));
        snprintf(vid, sizeof(vid), "%s", v && *v ? v : "null");
        json_decref(j);
        g.writes_json++;
    }
    free(k);
    if (version)
        model_delete_version(m, key, version);
    else
        assert_int_equal(model_delete(m, key, vid), 0);
}

/* ---- reads, through both APIs ---- */

static void check_heads(const model *m) {
    for (int ki = 0; ki < S3MODEL_N_KEYS; ki++) {
        const mkey *k = &m->keys[ki];
        char path[160], h[64], want[64];
        char *e = esc(s3model_keys[ki]);
        httpc_resp r;
        snprintf(path, sizeof(path), "/%s/%s", m->bucket, e);
        assert_int_equal(httpc_do(g.s3, "HEAD", path, NULL, NULL, &r), 0);
        int live = k->n > 0 && !k->v[0].marker;
        if (!live) {
            if (r.status != 404)
                fail_msg("S3 HEAD %s: %ld, model: no live version", path, r.status);
            if (k->n > 0 && !header_of(&r, "x-amz-delete-marker: true", h, sizeof(h)))
                fail_msg("S3 HEAD %s: no x-amz-delete-marker for the model's marker", path);
        } else {
            snprintf(want, sizeof(want), "\"%s\"", k->v[0].etag);
            header_of(&r, "etag: ", h, sizeof(h));
            if (r.status != 200 || strcmp(h, want) != 0)
                fail_msg("S3 HEAD %s: %ld etag %s, model %s", path, r.status, h, want);
            const char *v = header_of(&r, "x-amz-version-id: ", h, sizeof(h));
            if (strcmp(v ? v : "null", k->v[0].vid) != 0)
                fail_msg("S3 HEAD %s: version %s, model %s", path, v ? v : "null", k->v[0].vid);
        }
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?consistency=strong", m->bucket,
                 e);
        assert_int_equal(httpc_do(g.json, "GET", path, NULL, NULL, &r), 0);
        if (live != (r.status == 200))
            fail_msg("JSON GET %s: %ld, model live %d", path, r.status, live);
        if (live) {
            json_t *j = json_loads(r.body, 0, NULL);
            if (strcmp(json_string_value(json_object_get(j, "etag")), k->v[0].etag) ||
                strcmp(json_string_value(json_object_get(j, "version_id")), k->v[0].vid))
                fail_msg("JSON GET %s: %s, model etag %s vid %s", path, r.body, k->v[0].etag,
                         k->v[0].vid);
            json_decref(j);
        }
        free(e);
        g.checks += 2;
    }
}

/* %XX escapes of s decoded in place. */
static void pct_decode(char *s) {
    char *o = s;
    for (char *p = s; *p; p++) {
        unsigned v;
        if (*p == '%' && p[1] && p[2] && sscanf(p + 1, "%2x", &v) == 1) {
            *o++ = (char)v;
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

/* The text between <tag> and </tag> from *at on, percent-decoded (the
 * listing is encoding-type=url); 0 when there is none before end. */
static int xml_next(const char **at, const char *end, const char *tag, char *out, size_t n) {
    char open[32], close[32];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *a = strstr(*at, open);
    if (!a || (end && a >= end))
        return 0;
    a += strlen(open);
    const char *b = strstr(a, close);
    assert_non_null(b);
    char raw[256];
    snprintf(raw, sizeof(raw), "%.*s", (int)(b - a), a);
    for (char *p = raw; *p; p++)
        if (*p == '+')
            *p = ' ';
    pct_decode(raw);
    snprintf(out, n, "%s", raw);
    *at = b + strlen(close);
    return 1;
}

static int cmp_item(const void *a, const void *b) {
    return strcmp(((const item *)a)->key, ((const item *)b)->key);
}

/* One ListObjectsV2 page's items (objects and prefixes, key order). */
static size_t s3_page(const char *body, item *out, int *truncated, char *token, size_t tn) {
    size_t n = 0;
    const char *at = body;
    char text[256];
    while ((at = strstr(at, "<Contents>"))) {
        const char *end = strstr(at, "</Contents>");
        memset(&out[n], 0, sizeof(item));
        assert_true(xml_next(&at, end, "Key", out[n].key, sizeof(out[n].key)));
        assert_true(xml_next(&at, end, "ETag", text, sizeof(text)));
        snprintf(out[n].etag, sizeof(out[n].etag), "%.*s", (int)strlen(text) - 12, text + 6);
        out[n++].latest = 1;
        at = end;
    }
    at = body;
    while ((at = strstr(at, "<CommonPrefixes>"))) {
        memset(&out[n], 0, sizeof(item));
        assert_true(xml_next(&at, NULL, "Prefix", out[n].key, sizeof(out[n].key)));
        out[n++].is_prefix = 1;
    }
    qsort(out, n, sizeof(item), cmp_item);
    *truncated = strstr(body, "<IsTruncated>true</IsTruncated>") != NULL;
    token[0] = '\0';
    if (*truncated) {
        const char *t = strstr(body, "<NextContinuationToken>");
        assert_non_null(t);
        t += strlen("<NextContinuationToken>");
        snprintf(token, tn, "%.*s", (int)(strstr(t, "<") - t), t);
    }
    return n;
}

/* A prefix of the model's that is UTF-8 (a lone 0xC3 is refused: see
 * test_lone_byte_prefix_refused). */
static const char *s3model_utf8_prefix(uint64_t r) {
    const char *p = s3model_prefixes[r % S3MODEL_N_PREFIXES];
    return (unsigned char)p[0] >= 0x80 ? "" : p;
}

static void check_s3_list(const model *m) {
    const char *prefix = s3model_utf8_prefix(rnd());
    const char *delim = s3model_delimiters[rnd() % S3MODEL_N_DELIMITERS];
    int page = 1 + (int)(rnd() % 4);
    item want[MAX_ITEMS], got[MAX_ITEMS];
    size_t nw = model_items(m, prefix, delim, 0, want), ng = 0;
    for (size_t i = 0; i < nw; i++) /* a listing names no version */
        want[i].vid[0] = '\0';
    char *ep = esc(prefix), *ed = esc(delim), token[512] = "", what[200], msg[600];
    snprintf(what, sizeof(what), "S3 LIST %s prefix=%s delimiter=%s max-keys=%d", m->bucket,
             prefix, delim, page);
    for (int pages = 0; pages < 64; pages++) {
        char path[1024];
        char *et = token[0] ? esc(token) : NULL;
        snprintf(path, sizeof(path),
                 "/%s?list-type=2&encoding-type=url&prefix=%s&delimiter=%s&max-keys=%d%s%s",
                 m->bucket, ep, ed, page, et ? "&continuation-token=" : "", et ? et : "");
        free(et);
        httpc_resp r;
        assert_int_equal(httpc_do(g.s3, "GET", path, NULL, NULL, &r), 0);
        if (r.status != 200)
            fail_msg("%s: %ld %s", what, r.status, r.body);
        int more;
        size_t n = s3_page(r.body, got + ng, &more, token, sizeof(token));
        ng += n;
        assert_true(ng <= MAX_ITEMS);
        if (!more)
            break;
        if ((int)n != page)
            fail_msg("%s: truncated page of %zu", what, n);
    }
    free(ep);
    free(ed);
    if (model_expect(what, want, nw, got, ng, msg, sizeof(msg)) < 0)
        fail_msg("%s", msg);
    g.checks++;
}

/* A JSON listing (objects, or versions) fully paginated, as items. */
static void check_json_list(const model *m, int versions) {
    const char *prefix = s3model_utf8_prefix(rnd());
    const char *delim = s3model_delimiters[rnd() % S3MODEL_N_DELIMITERS];
    int page = 1 + (int)(rnd() % 4);
    item want[MAX_ITEMS], got[MAX_ITEMS];
    size_t nw = model_items(m, prefix, delim, versions, want), ng = 0;
    char *ep = esc(prefix), *ed = esc(delim), what[200], msg[600], next[512] = "";
    snprintf(what, sizeof(what), "JSON %s %s prefix=%s delimiter=%s max_keys=%d",
             versions ? "VERSIONS" : "LIST", m->bucket, prefix, delim, page);
    for (int pages = 0; pages < 256; pages++) {
        char path[1024];
        snprintf(path, sizeof(path), "/v1/buckets/%s/%s?prefix=%s&delimiter=%s&max_keys=%d%s",
                 m->bucket, versions ? "versions" : "objects", ep, ed, page, next);
        httpc_resp r;
        assert_int_equal(httpc_do(g.json, "GET", path, NULL, NULL, &r), 0);
        if (r.status != 200)
            fail_msg("%s: %ld %s", what, r.status, r.body);
        json_t *j = json_loads(r.body, 0, NULL);
        json_t *arr = json_object_get(j, versions ? "versions" : "objects"), *e;
        size_t i, first = ng;
        json_array_foreach(arr, i, e) {
            item *it = &got[ng++];
            memset(it, 0, sizeof(*it));
            snprintf(it->key, sizeof(it->key), "%s", json_string_value(json_object_get(e, "key")));
            snprintf(it->vid, sizeof(it->vid), "%s",
                     json_string_value(json_object_get(e, "version_id")));
            snprintf(it->etag, sizeof(it->etag), "%s", json_string_value(json_object_get(e, "etag")));
            it->marker = versions && json_is_true(json_object_get(e, "delete_marker"));
            it->latest = !versions || json_is_true(json_object_get(e, "is_latest"));
        }
        json_array_foreach(json_object_get(j, "common_prefixes"), i, e) {
            item *it = &got[ng++];
            memset(it, 0, sizeof(*it));
            snprintf(it->key, sizeof(it->key), "%s", json_string_value(e));
            it->is_prefix = 1;
        }
        /* each page's objects and prefixes back into key order (versions of
         * one key keep their newest-first order: a stable merge) */
        size_t n = ng - first;
        for (size_t a = first + 1; a < ng; a++)
            for (size_t b = a; b > first && strcmp(got[b - 1].key, got[b].key) > 0; b--) {
                item t = got[b];
                got[b] = got[b - 1];
                got[b - 1] = t;
            }
        int more = json_is_true(json_object_get(j, "is_truncated"));
        if (more && !versions) {
            char *t = esc(json_string_value(json_object_get(j, "next_continuation_token")));
            snprintf(next, sizeof(next), "&continuation_token=%s", t);
            free(t);
        } else if (more) {
            char *km = esc(json_string_value(json_object_get(j, "next_key_marker")));
            snprintf(next, sizeof(next), "&key_marker=%s&version_id_marker=%s", km,
                     json_string_value(json_object_get(j, "next_version_id_marker")));
            free(km);
        }
        json_decref(j);
        assert_true(ng <= MAX_ITEMS - 8);
        if (!more)
            break;
        if ((int)n != page)
            fail_msg("%s: truncated page of %zu", what, n);
    }
    free(ep);
    free(ed);
    if (model_expect(what, want, nw, got, ng, msg, sizeof(msg)) < 0)
        fail_msg("%s", msg);
    g.checks++;
}

static void check_all(const model *m) {
    check_heads(m);
    check_s3_list(m);
    check_json_list(m, 0);
    check_json_list(m, 1);
}

static void random_step(model *m, long n) {
    int key = (int)(rnd() % S3MODEL_N_KEYS);
    unsigned r = (unsigned)(rnd() % 100);
    const mkey *k = &m->keys[key];
    if (r < 45 || (r >= 88 && m->versioning == 0)) {
        if (k->n < S3MODEL_MAX_VERSIONS - 1)
            op_put(m, key, n);
    } else if (r < 70) {
        if (k->n < S3MODEL_MAX_VERSIONS - 1)
            op_delete(m, key, NULL);
    } else if (r < 88) {
        if (k->n == 0) {
            op_delete(m, key, "0001000000000000"); /* a version that never was: no change */
        } else {
            char vid[S3MODEL_VID_LEN];
            snprintf(vid, sizeof(vid), "%s", k->v[rnd() % (uint64_t)k->n].vid);
            op_delete(m, key, vid);
        }
    } else {
        set_versioning(m, m->versioning == 1 ? 2 : 1);
    }
}

static void sequences_match_the_model_through_both_apis(void **state) {
    (void)state;
    long n = 0;
    for (int s = 0; s < N_SEQUENCES; s++) {
        model m;
        memset(&m, 0, sizeof(m));
        snprintf(m.bucket, sizeof(m.bucket), "wire%04d", s);
        int start = s % 3; /* unversioned, enabled, suspended */
        create_bucket(&m, start != 0);
        if (start == 2)
            set_versioning(&m, 2);
        check_all(&m);
        int steps = 1 + (int)(rnd() % MAX_STEPS);
        for (int i = 0; i < steps; i++) {
            random_step(&m, n++);
            check_all(&m);
        }
    }
    print_message("model through both APIs: %d sequences, %ld writes through S3, %ld "
                  "through JSON, %ld checks\n", N_SEQUENCES, g.writes_s3, g.writes_json,
                  g.checks);
    assert_true(g.writes_s3 > 0 && g.writes_json > 0);
}

/* A prefix that is not UTF-8 cannot be echoed in JSON or XML: both APIs
 * refuse it, and every other listing parameter likewise. */
static void test_lone_byte_prefix_refused(void **state) {
    (void)state;
    static const char *const paths[][2] = {
        {"json", "/v1/buckets/wire0000/objects?prefix=%C3"},
        {"json", "/v1/buckets/wire0000/versions?key_marker=%FF"},
        {"json", "/v1/buckets/wire0000/objects?delimiter=%C3"},
        {"s3", "/wire0000?list-type=2&prefix=%C3&encoding-type=url"},
        {"s3", "/wire0000?versions&key-marker=%C3"},
        {"s3", "/wire0000?marker=%E2%82"},
    };
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        httpc_resp r;
        int s3 = strcmp(paths[i][0], "s3") == 0;
        assert_int_equal(httpc_do(s3 ? g.s3 : g.json, "GET", paths[i][1], NULL, NULL, &r), 0);
        if (r.status != 400 || !strstr(r.body, "InvalidArgument") || !strstr(r.body, "UTF-8"))
            fail_msg("%s %s: %ld %s", paths[i][0], paths[i][1], r.status, r.body);
    }
}

static int setup(void **state) {
    (void)state;
    char objlogd[512], data[300], addr[64], ready[8], url[128];
    g.rng = 0x9E3779B97F4A7C15ULL;
    if (proc_tmpdir(g.dir, sizeof(g.dir)) < 0)
        return -1;
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    snprintf(data, sizeof(data), "%s/data", g.dir);
    char blobs[300];
    snprintf(blobs, sizeof(blobs), "%s/blobs", g.dir);
    char *argv[] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                    "--s3-listen", "127.0.0.1:0", "--s3-anonymous", "--blob-dir", blobs, NULL};
    g.p = proc_spawn(argv, NULL);
    if (!g.p || proc_wait_line(g.p, "OBJLOG_LISTEN=", addr, sizeof(addr), 60000) < 0)
        return -1;
    snprintf(url, sizeof(url), "http://%s", addr);
    g.json = httpc_new(url);
    if (proc_wait_line(g.p, "OBJLOG_S3_LISTEN=", addr, sizeof(addr), 10000) < 0 ||
        proc_wait_line(g.p, "OBJLOG_READY", ready, sizeof(ready), 10000) < 0)
        return -1;
    snprintf(url, sizeof(url), "http://%s", addr);
    g.s3 = httpc_new(url);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    int rc = g.p && proc_stop(g.p, 15000) == 0 ? 0 : -1;
    httpc_destroy(g.s3);
    httpc_destroy(g.json);
    proc_rmtree(g.dir);
    return rc;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sequences_match_the_model_through_both_apis),
        cmocka_unit_test(test_lone_byte_prefix_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
