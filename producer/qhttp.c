/* qhttp.c: the query-service HTTP helpers of libobjlog_producer (qhttp.h).
 * Invariant: the Bearer token is copied into curl's list and wiped from
 * our stack copy at once; no other copy outlives the call. */
#include "qhttp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct curl_slist *qhttp_auth_header(const char *token, struct curl_slist *hl) {
    if (!token)
        return hl;
    char line[300];
    snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
    struct curl_slist *r = curl_slist_append(hl, line);
    for (volatile char *p = line; *p; p++)
        *p = 0;
    return r;
}

size_t qhttp_body_cb(char *data, size_t size, size_t nmemb, void *arg) {
    qhttp_body *b = arg;
    size_t n = size * nmemb;
    if (b->len + n > b->max)
        return 0;
    char *nb = realloc(b->data, b->len + n + 1);
    if (!nb)
        return 0;
    memcpy(nb + b->len, data, n);
    b->data = nb;
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

void qhttp_body_free(qhttp_body *b) {
    free(b->data);
    b->data = NULL;
    b->len = 0;
}

CURLcode qhttp_get(CURL *h, const char *url, const struct curl_slist *auth,
                   long timeout_ms, qhttp_body *body, long *status) {
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, auth);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, qhttp_body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    return rc;
}
