/* httpc.c: see httpc.h. */
#include "httpc.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct httpc {
    CURL *curl;
    char base[256];
    char *buf;
    size_t len, cap;
    httpc_resp *cur;
    int follow;
};

static size_t httpc_body_cb(char *p, size_t sz, size_t n, void *ud) {
    httpc *c = ud;
    size_t add = sz * n;
    if (c->len + add + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + add + 1)
            cap *= 2;
        char *nb = realloc(c->buf, cap);
        if (!nb)
            return 0;
        c->buf = nb;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, p, add);
    c->len += add;
    c->buf[c->len] = '\0';
    return add;
}

static void httpc_copy_header(const char *line, size_t n, const char *name,
                              char *out, size_t out_size) {
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0)
        return;
    const char *v = line + nl;
    size_t vl = n - nl;
    while (vl && (*v == ' '))
        v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
        vl--;
    if (vl >= out_size)
        vl = out_size - 1;
    memcpy(out, v, vl);
    out[vl] = '\0';
}

static void httpc_keep_header(httpc_resp *r, const char *p, size_t n) {
    size_t have = strlen(r->headers);
    if (have + n + 1 > sizeof(r->headers))
        return;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        /* Names lower-cased so tests match HTTP's case-insensitivity. */
        if (!memchr(p, ':', i + 1) && ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if (ch != '\r')
            r->headers[have++] = ch;
    }
    r->headers[have] = '\0';
}

static size_t httpc_header_cb(char *p, size_t sz, size_t n, void *ud) {
    httpc *c = ud;
    httpc_keep_header(c->cur, p, sz * n);
    httpc_copy_header(p, sz * n, "X-Objlog-Applied:", c->cur->applied, sizeof(c->cur->applied));
    httpc_copy_header(p, sz * n, "X-Objlog-Token:", c->cur->token, sizeof(c->cur->token));
    return sz * n;
}

httpc *httpc_new(const char *base_url) {
    httpc *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->curl = curl_easy_init();
    strncpy(c->base, base_url, sizeof(c->base) - 1);
    /* https: the test's own CA (tests/tlscerts.h) */
    const char *ca = getenv("OBJLOG_TEST_CA");
    if (c->curl && ca && strncmp(base_url, "https://", 8) == 0)
        curl_easy_setopt(c->curl, CURLOPT_CAINFO, ca);
    return c;
}

void httpc_destroy(httpc *c) {
    if (!c)
        return;
    curl_easy_cleanup(c->curl);
    free(c->buf);
    free(c);
}

int httpc_do(httpc *c, const char *method, const char *path, const char *body,
             const char *const *headers, httpc_resp *resp) {
    char url[8192];
    struct curl_slist *hl = NULL;
    snprintf(url, sizeof(url), "%s%s", c->base, path);
    memset(resp, 0, sizeof(*resp));
    c->len = 0;
    c->cur = resp;
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c->curl, CURLOPT_NOBODY, strcmp(method, "HEAD") == 0 ? 1L : 0L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, httpc_body_cb);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, httpc_header_cb);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, (long)c->follow);
    curl_easy_setopt(c->curl, CURLOPT_MAXREDIRS, 3L);
    if (body) {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, 0L);
        if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0)
            curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, "");
    }
    for (int i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    hl = curl_slist_append(hl, "Expect:");
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hl);
    CURLcode rc = curl_easy_perform(c->curl);
    curl_slist_free_all(hl);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    if (rc != CURLE_OK)
        return -1;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &resp->status);
    if (!c->buf)
        httpc_body_cb("", 0, 0, c);
    resp->body = c->buf;
    resp->body_len = c->len;
    if (resp->body)
        resp->body[c->len] = '\0';
    return 0;
}

char *httpc_escape(httpc *c, const char *s, size_t n) {
    char *e = curl_easy_escape(c->curl, s, (int)n);
    char *copy = e ? strdup(e) : NULL;
    curl_free(e);
    return copy;
}

void httpc_follow(httpc *c, int on) { c->follow = on; }
