/* qhttp.h: what the library's threads share to talk to the query service
 * (query.url): the Bearer header of query.token, a response body capped
 * in size, and one blocking GET on a caller-owned curl handle. Used by the
 * outcome fetcher (fetch.c), the tenant quota (quota.c) and admission
 * (admit.c). The body is a bodybuf (schemas/), capped by its max.
 * Invariant: a body over its cap fails the transfer instead of growing. */
#ifndef OBJLOG_QHTTP_H
#define OBJLOG_QHTTP_H

#include <curl/curl.h>
#include <stddef.h>

#include "bodybuf.h"

/* "Authorization: Bearer TOKEN" appended to hl for the query service's
 * requests (hl unchanged without a token; NULL out of memory). */
struct curl_slist *qhttp_auth_header(const char *token, struct curl_slist *hl);


/* GET url with the auth headers (may be NULL) and a timeout, into body.
 * The transfer's result; on CURLE_OK *status is the HTTP code. */
CURLcode qhttp_get(CURL *h, const char *url, const struct curl_slist *auth,
                   long timeout_ms, bodybuf *body, long *status);

#endif
