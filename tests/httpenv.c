/* httpenv.c: see httpenv.h. */
#include "httpenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "proc.h"
static size_t on_data(char *p, size_t sz, size_t n, void *arg) {
    char **buf = arg;
    size_t *len = (size_t *)(buf + 1);
    char *nb = realloc(*buf, *len + sz * n + 1);
    if (!nb)
        return 0;
    memcpy(nb + *len, p, sz * n);
    *len += sz * n;
    nb[*len] = '\0';
    *buf = nb;
    return sz * n;
}

void resp_free(resp *r) {
    free(r->body);
    free(r->headers);
    json_decref(r->json);
    memset(r, 0, sizeof(*r));
}

/* Performs one request; path is used as given (callers escape keys). */
void req(env *e, const char *method, const char *path, const char *body,
                const char *const *hdrs, resp *r) {
    char url[8192];
    struct curl_slist *hl = NULL;
    struct { char *buf; size_t len; } b = {0}, h = {0};
    snprintf(url, sizeof(url), "%s%s", e->base, path);
    memset(r, 0, sizeof(*r));
    curl_easy_reset(e->curl);
    curl_easy_setopt(e->curl, CURLOPT_URL, url);
    curl_easy_setopt(e->curl, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(e->curl, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    hl = curl_slist_append(hl, "Expect:");
    for (int i = 0; hdrs && hdrs[i]; i++)
        hl = curl_slist_append(hl, hdrs[i]);
    curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e->curl, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(e->curl, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(e->curl, CURLOPT_TIMEOUT, 40L);
    CURLcode rc = curl_easy_perform(e->curl);
    curl_slist_free_all(hl);
    assert_int_equal(rc, CURLE_OK);
    curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &r->status);
    r->body = b.buf;
    r->body_len = b.len;
    r->headers = h.buf;
    r->headers_len = h.len;
    if (b.buf)
        r->json = json_loadb(b.buf, b.len, JSON_ALLOW_NUL, NULL);
}

/* Value of response header name (copied into out), or NULL. */
const char *header(const resp *r, const char *name, char *out, size_t n) {
    size_t nl = strlen(name);
    for (const char *l = r->headers; l && *l;) {
        const char *eol = strstr(l, "\r\n");
        if (!eol)
            break;
        if ((size_t)(eol - l) > nl + 1 && strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
            const char *v = l + nl + 1;
            while (*v == ' ')
                v++;
            snprintf(out, n, "%.*s", (int)(eol - v), v);
            return out;
        }
        l = eol + 2;
    }
    return NULL;
}

const char *jstr(const resp *r, const char *path1, const char *path2) {
    json_t *j = json_object_get(r->json, path1);
    if (path2)
        j = json_object_get(j, path2);
    return json_string_value(j);
}

void assert_error(const resp *r, long status, const char *code) {
    if (r->status != status || !jstr(r, "error", "code") ||
        strcmp(jstr(r, "error", "code"), code) != 0)
        print_error("expected %ld %s, got %ld %s\n", status, code, r->status,
                    r->body ? r->body : "(no body)");
    assert_int_equal(r->status, status);
    assert_string_equal(jstr(r, "error", "code"), code);
    assert_non_null(jstr(r, "error", "request_id"));
}

void expect(env *e, const char *method, const char *path, const char *body,
                   long status) {
    resp r;
    req(e, method, path, body, NULL, &r);
    if (r.status != status)
        print_error("%s %s: %ld %s\n", method, path, r.status, r.body ? r.body : "");
    assert_int_equal(r.status, status);
    resp_free(&r);
}

/* Percent-escapes every byte but unreserved ones (and keeps '/'). */
char *esc(const char *s, size_t n) {
    char *out = malloc(3 * n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || (ch && strchr("-._~/", ch)))
            out[o++] = (char)ch;
        else
            o += (size_t)sprintf(out + o, "%%%02X", ch);
    }
    out[o] = '\0';
    return out;
}

void put_key(env *e, const char *bucket, const char *key, size_t kn,
                    const char *etag) {
    char *k = esc(key, kn), path[4096], body[256];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, k);
    snprintf(body, sizeof(body), "{\"size\":7,\"etag\":\"%s\"}", etag);
    expect(e, "PUT", path, body, 200);
    free(k);
}

void make_bucket(env *e, const char *bucket, const char *body) {
    char path[256];
    snprintf(path, sizeof(path), "/v1/buckets/%s", bucket);
    expect(e, "PUT", path, body, 200);
}

void env_stop(env *e) {
    if (!e)
        return;
    if (e->curl)
        curl_easy_cleanup(e->curl);
    objlog_query_destroy(e->q);
    objlog_materializer_destroy(e->m);
    if (e->store)
        objlog_store_close(e->store);
    objlog_embedded_kafka_destroy(e->kafka);
    if (e->dir[0])
        proc_rmtree(e->dir);
    free(e);
}

env *env_start_opts(const env_opts *o) {
    env *e = calloc(1, sizeof(*e));
    char err[512];
    if (!e || proc_tmpdir(e->dir, sizeof(e->dir)) < 0) {
        free(e);
        return NULL;
    }
    e->kafka = objlog_embedded_kafka_new("objlog.events", 4, "objlog.control",
                                         "objlog.dlq", err, sizeof(err));
    const char *bs = e->kafka ? objlog_embedded_kafka_bootstrap(e->kafka) : NULL;
    if (bs && o->before_view)
        o->before_view(bs);
    e->store = bs ? objlog_store_open(e->dir, err, sizeof(err)) : NULL;
    objlog_materializer_conf mc = {.brokers = bs, .topic = "objlog.events",
                                   .control_topic = "objlog.control",
                                   .dlq_topic = "objlog.dlq", .group_id = "test-http",
                                   .apply_delay_ms = o->apply_delay_ms,
                                   .idle_pause_ms = o->idle_pause_ms};
    e->m = e->store ? objlog_materializer_new(&mc, e->store, err, sizeof(err)) : NULL;
    if (!e->m || objlog_materializer_start(e->m, err, sizeof(err)) < 0) {
        print_error("stack: %s\n", err);
        env_stop(e);
        return NULL;
    }
    objlog_query_conf qc = {.host = "127.0.0.1", .port = 0,
                            .threads = o->threads ? o->threads : 3, .brokers = bs,
                            .store = e->store, .materializer = e->m,
                            .ready_max_lag = o->ready_max_lag,
                            .no_index_driver = o->no_index_driver};
    e->q = objlog_query_new(&qc, err, sizeof(err));
    if (!e->q) {
        print_error("query: %s\n", err);
        env_stop(e);
        return NULL;
    }
    snprintf(e->base, sizeof(e->base), "http://127.0.0.1:%d", objlog_query_port(e->q));
    e->curl = curl_easy_init();
    return e;
}

