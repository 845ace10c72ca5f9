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

CURLcode qhttp_get(CURL *h, const char *url, const struct curl_slist *auth,
                   long timeout_ms, bodybuf *body, long *status) {
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, auth);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bodybuf_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    return rc;
}
