/* httpc.h: a small libcurl client for tests: one keep-alive handle per
 * httpc, so a test thread can issue thousands of requests cheaply. */
#ifndef OBJLOG_TEST_HTTPC_H
#define OBJLOG_TEST_HTTPC_H

#include <stddef.h>

typedef struct httpc httpc;

typedef struct httpc_resp {
    long status;
    char *body;        /* NUL-terminated; owned by the httpc, valid until the next call */
    size_t body_len;
    char applied[256]; /* X-Objlog-Applied header, "" if absent */
    char token[128];   /* X-Objlog-Token header, "" if absent */
    char headers[4096]; /* every response header line, lower-cased names */
} httpc_resp;

/* An https:// base_url is checked against $OBJLOG_TEST_CA when set. */
httpc *httpc_new(const char *base_url);
void httpc_destroy(httpc *c);
/* method "GET", "PUT", "DELETE", "HEAD", "POST"; path is appended to the
 * base URL as given (the caller escapes it). headers: NULL-ended list of
 * "Name: value". Returns 0 when a response arrived, -1 on transport error. */
int httpc_do(httpc *c, const char *method, const char *path, const char *body,
             const char *const *headers, httpc_resp *resp);
/* on: follow redirects (at most 3), as a client of a cluster does. */
void httpc_follow(httpc *c, int on);
/* Percent-escapes s[0..n) into a malloc'd string (caller frees). */
char *httpc_escape(httpc *c, const char *s, size_t n);

#endif
