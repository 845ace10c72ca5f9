/* cli_http.c: the HTTP helper of the objlog CLI and bench: one request on a
 * caller-owned curl easy handle, so repeated calls reuse the connection.
 * Invariant: a cli_resp owns its body; nothing else keeps a pointer to it. */
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
    header_take(data, n, "Last-Modified", r->last_modified, sizeof(r->last_modified));
    header_take(data, n, "X-Objlog-Token", r->token, sizeof(r->token));
    return n;
}

int cli_http(CURL *h, const char *method, const char *url, const char *body,
             const char *const *headers, cli_resp *r, char *errstr,
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
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
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
