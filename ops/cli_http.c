/* cli_http.c: the HTTP side of the objlog CLI and bench: one request on a
 * caller-owned curl easy handle (so repeated calls reuse the connection),
 * the URL and request helpers of the commands, paged listings, and
 * cli_fail, the one place a failed command is reported (cli.h: one line,
 * or one JSON object with --json, on stderr).
 * Invariant: a cli_resp owns its body; nothing else keeps a pointer to it. */
#define _GNU_SOURCE
#include "cli.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CLI_MAX_BODY (64u * 1024 * 1024)

void cli_resp_free(cli_resp *r) {
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}

static size_t body_cb(char *data, size_t size, size_t nmemb, void *arg) {
    cli_resp *r = arg;
    size_t n = size * nmemb;
    if (r->body_len + n > CLI_MAX_BODY)
        return 0;
    char *b = realloc(r->body, r->body_len + n + 1);
    if (!b)
        return 0;
    memcpy(b + r->body_len, data, n);
    r->body = b;
    r->body_len += n;
    b[r->body_len] = '\0';
    return n;
}

/* Copies the value of header `name` if line is that header. */
static void header_take(const char *line, size_t n, const char *name,
                        char *out, size_t out_size) {
    size_t nl = strlen(name);
    if (n <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    const char *v = line + nl + 1;
    const char *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t len = (size_t)(end - v);
    if (len >= out_size)
        len = out_size - 1;
    memcpy(out, v, len);
    out[len] = '\0';
}

static size_t header_cb(char *data, size_t size, size_t nmemb, void *arg) {
    cli_resp *r = arg;
    size_t n = size * nmemb;
    header_take(data, n, "ETag", r->etag, sizeof(r->etag));
    header_take(data, n, "X-Objlog-Version-Id", r->version_id, sizeof(r->version_id));
    header_take(data, n, "X-Objlog-Size", r->size, sizeof(r->size));
    header_take(data, n, "X-Objlog-Last-Modified", r->last_modified,
                sizeof(r->last_modified));
    header_take(data, n, "X-Objlog-Token", r->token, sizeof(r->token));
    return n;
}

int cli_http(CURL *h, const char *method, const char *url, const char *body,
             const char *const *headers, cli_resp *r, char *errstr,
             size_t errstr_size) {
    return cli_http_timeout(h, method, url, body, headers, 60000L, r, errstr, errstr_size);
}

int cli_http_timeout(CURL *h, const char *method, const char *url, const char *body,
                     const char *const *headers, long timeout_ms, cli_resp *r, char *errstr,
                     size_t errstr_size) {
    memset(r, 0, sizeof(*r));
    struct curl_slist *hl = NULL;
    if (body)
        hl = curl_slist_append(hl, "Content-Type: application/json");
    for (int i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(hl);
    if (rc != CURLE_OK) {
        snprintf(errstr, errstr_size, "%s", curl_easy_strerror(rc));
        cli_resp_free(r);
        return -1;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    if (!r->body) {
        r->body = calloc(1, 1);
        if (!r->body) {
            snprintf(errstr, errstr_size, "out of memory");
            return -1;
        }
    }
    return 0;
}

char *cli_escape(CURL *h, const char *s) {
    char *e = curl_easy_escape(h, s, (int)strlen(s));
    if (!e)
        return NULL;
    char *copy = strdup(e);
    curl_free(e);
    return copy;
}

static const char *status_code_name(long status) {
    switch (status) {
    case 400: return "BadRequest";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 412: return "PreconditionFailed";
    case 503: return "SlowDown";
    default: return "HTTPError";
    }
}

void cli_error_of(const cli_resp *r, char *code, size_t code_size,
                  char *message, size_t message_size) {
    json_t *j = r->body_len ? json_loads(r->body, 0, NULL) : NULL;
    json_t *e = json_object_get(j, "error");
    const char *c = json_string_value(json_object_get(e, "code"));
    const char *m = json_string_value(json_object_get(e, "message"));
    snprintf(code, code_size, "%s", c ? c : status_code_name(r->status));
    if (m)
        snprintf(message, message_size, "%s", m);
    else
        snprintf(message, message_size, "HTTP %ld", r->status);
    json_decref(j);
}

/* ---- failures ---- */

void cli_json_error(json_t *e) {
    json_t *j = json_pack("{s:o}", "error", e);
    char *s = json_dumps(j, JSON_COMPACT);
    fprintf(stderr, "%s\n", s ? s : "");
    free(s);
    json_decref(j);
}

int cli_fail(cli *c, const char *target, const char *code, const char *msg,
             long status, const char *request_id) {
    if (!c->json) {
        fprintf(stderr, "objlog: %s %s: %s: %s\n", c->cmd, target, code, msg);
        /* 5xx: a write's outcome may be unknown, and a retry must name it */
        if (status >= 500 && request_id && *request_id)
            fprintf(stderr, "objlog: its request id is %s (a write sent again with "
                            "--request-id %s is the same write)\n", request_id, request_id);
        return CLI_EXIT_FAIL;
    }
    json_t *e = json_pack("{s:s, s:s, s:s, s:s}", "code", code, "message", msg,
                          "command", c->cmd, "target", target);
    if (status)
        json_object_set_new(e, "status", json_integer(status));
    if (request_id && *request_id)
        json_object_set_new(e, "request_id", json_string(request_id));
    cli_json_error(e);
    return CLI_EXIT_FAIL;
}

/* ---- URLs ---- */

char *cli_path(cli *c, const char *bucket, const char *key) {
    char *eb = cli_escape(c->h, bucket);
    char *ek = key ? cli_escape(c->h, key) : NULL;
    char *url = NULL;
    if (eb && (!key || ek)) {
        int rc = key ? asprintf(&url, "%s/v1/buckets/%s/objects/%s", c->url, eb, ek)
                     : asprintf(&url, "%s/v1/buckets/%s", c->url, eb);
        if (rc < 0)
            url = NULL;
    }
    free(eb);
    free(ek);
    return url;
}

char *cli_bucket_url(cli *c, const char *bucket, const char *suffix) {
    char *base = cli_path(c, bucket, NULL);
    char *url = NULL;
    if (base && asprintf(&url, "%s%s", base, suffix) < 0)
        url = NULL;
    free(base);
    return url;
}

int cli_query_add(cli *c, char **url, const char *name, const char *value) {
    if (!value)
        return 0;
    char *e = cli_escape(c->h, value);
    char *n = NULL;
    int rc = e ? asprintf(&n, "%s%c%s=%s", *url, strchr(*url, '?') ? '&' : '?', name, e)
               : -1;
    free(e);
    if (rc < 0)
        return -1;
    free(*url);
    *url = n;
    return 0;
}

/* ---- requests ---- */

/* hdrs and, with a token, its Authorization header into out[n]: the
 * NULL-ended list to send. */
const char *const *cli_auth_headers(const cli *c, const char *const *hdrs, const char **out,
                                    size_t n, char *auth, size_t auth_size) {
    size_t k = 0;
    for (int i = 0; hdrs && hdrs[i] && k + 2 < n; i++)
        out[k++] = hdrs[i];
    if (c->token && *c->token) {
        snprintf(auth, auth_size, "Authorization: Bearer %s", c->token);
        out[k++] = auth;
    }
    out[k] = NULL;
    return out;
}

int cli_request(cli *c, const char *target, const char *method, const char *url,
                const char *body, const char *const *hdrs, cli_resp *r) {
    char err[256], auth[600];
    const char *all[16];
    if (!url)
        return cli_fail(c, target, "InternalError", "out of memory", 0, NULL);
    cli_auth_headers(c, hdrs, all, sizeof(all) / sizeof(all[0]), auth, sizeof(auth));
    if (cli_http(c->h, method, url, body, all, r, err, sizeof(err)) < 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "cannot reach %s: %s", c->url, err);
        return cli_fail(c, target, "ConnectionError", msg, 0, NULL);
    }
    if (r->status >= 200 && r->status < 300)
        return 0;
    char code[64], msg[512], rid[64] = "";
    cli_error_of(r, code, sizeof(code), msg, sizeof(msg));
    json_t *j = r->body_len ? json_loads(r->body, 0, NULL) : NULL;
    const char *s = json_string_value(
        json_object_get(json_object_get(j, "error"), "request_id"));
    snprintf(rid, sizeof(rid), "%s", s ? s : "");
    json_decref(j);
    long status = r->status;
    cli_resp_free(r);
    return cli_fail(c, target, code, msg, status, rid);
}

json_t *cli_parse_json(cli *c, const char *target, cli_resp *r, int *rc) {
    json_t *j = json_loads(r->body, 0, NULL);
    *rc = 0;
    if (!j || !json_is_object(j)) {
        json_decref(j);
        *rc = cli_fail(c, target, "InvalidResponse", "server answered non-JSON", 0, NULL);
        return NULL;
    }
    return j;
}

json_t *cli_send_json(cli *c, const char *target, const char *method, char *url,
                      const char *body, const char *const *hdrs, int *rc) {
    cli_resp r;
    *rc = cli_request(c, target, method, url, body, hdrs, &r);
    free(url);
    if (*rc)
        return NULL;
    json_t *j = cli_parse_json(c, target, &r, rc);
    cli_resp_free(&r);
    return j;
}

json_t *cli_get_json(cli *c, const char *target, char *url, int *rc) {
    return cli_send_json(c, target, "GET", url, NULL, NULL, rc);
}

int cli_write(cli *c, const char *target, const char *method, char *url, const char *body,
              const char *const *hdrs, const char *line) {
    int rc;
    json_t *j = cli_send_json(c, target, method, url, body, hdrs, &rc);
    if (!j)
        return rc;
    if (c->json)
        cli_print_json(j);
    else {
        fputs(line, stdout);
        json_decref(j);
    }
    return 0;
}

/* ---- paged listings ---- */

void cli_list_param(cli_list_req *q, const char *name, const char *value) {
    if (q->n < CLI_LIST_MAX_PARAMS) {
        q->name[q->n] = name;
        q->value[q->n++] = value;
    }
}

void cli_list_token_params(cli_list_req *q, const char *consistency, const char *token) {
    cli_list_param(q, "consistency", consistency);
    cli_list_param(q, "token", token);
    cli_list_param(q, "continuation_token", NULL);
}

static json_t *list_page(cli *c, const cli_list_req *q, int *rc) {
    char *url = strdup(q->base);
    for (int i = 0; url && i < q->n; i++)
        if (cli_query_add(c, &url, q->name[i], q->value[i]) < 0) {
            free(url);
            url = NULL;
        }
    return cli_get_json(c, q->target, url, rc);
}

static void list_merge(json_t *acc, json_t *page, const cli_page_spec *sp) {
    json_t *arr = json_object_get(acc, sp->array);
    if (!arr)
        json_object_set_new(acc, sp->array, arr = json_array());
    json_array_extend(arr, json_object_get(page, sp->array));
    json_t *pres = json_object_get(page, "common_prefixes");
    if (pres)
        json_array_extend(json_object_get(acc, "common_prefixes"), pres);
    json_object_set(acc, "is_truncated", json_object_get(page, "is_truncated"));
    for (int i = 0; i < 2 && sp->next_field[i]; i++) {
        json_t *v = json_object_get(page, sp->next_field[i]);
        if (v)
            json_object_set(acc, sp->next_field[i], v);
        else
            json_object_del(acc, sp->next_field[i]);
    }
}

/* Sets the marker parameters of q from the page's next_* fields; the
 * strings are copied into store. 0 if there is a next page. */
static int list_next(cli_list_req *q, json_t *page, const cli_page_spec *sp,
                     char store[2][1100]) {
    int any = 0;
    for (int i = 0; i < 2 && sp->next_field[i]; i++) {
        json_t *v = json_object_get(page, sp->next_field[i]);
        const char *s = json_string_value(v);
        char num[32];
        if (json_is_integer(v)) {
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
            s = num;
        }
        for (int k = 0; k < q->n; k++)
            if (!strcmp(q->name[k], sp->marker_param[i])) {
                snprintf(store[i], 1100, "%s", s ? s : "");
                q->value[k] = s ? store[i] : NULL;
                any |= s && *s;
            }
    }
    return any ? 0 : -1;
}

json_t *cli_list_fetch(cli *c, cli_list_req *q, const cli_page_spec *sp, int *rc) {
    json_t *acc = list_page(c, q, rc);
    char store[2][1100];
    while (acc && q->all && json_is_true(json_object_get(acc, "is_truncated")) &&
           list_next(q, acc, sp, store) == 0) {
        json_t *page = list_page(c, q, rc);
        if (!page) {
            json_decref(acc);
            return NULL;
        }
        list_merge(acc, page, sp);
        json_decref(page);
    }
    return acc;
}

json_t *cli_list_get(cli *c, cli_list_req *q, char *base, const cli_page_spec *sp, int *rc) {
    if (!base) {
        *rc = cli_fail(c, q->target, "InternalError", "out of memory", 0, NULL);
        return NULL;
    }
    q->base = base;
    json_t *j = cli_list_fetch(c, q, sp, rc);
    free(base);
    return j;
}

int cli_list_run(cli *c, cli_list_req *q, char *base, const cli_page_spec *sp,
                 void (*print)(cli *, json_t *), int *rc) {
    json_t *j = cli_list_get(c, q, base, sp, rc);
    return j ? cli_list_output(c, j, print) : *rc;
}
