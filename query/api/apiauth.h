/* apiauth.h: who a JSON API request is. Pure: no evhttp, no clock, no
 * globals; the HTTP layer (http.c) hands in what it received and the time.
 * Internal to the query service (prefixes apicreds_, nodeauth_).
 *
 * API tokens (objlogd --api-credentials FILE), one per line:
 *
 *     TOKEN SUBJECT
 *
 * TOKEN is 16..256 characters of [A-Za-z0-9._~+/=-] (what fits a Bearer
 * credential), sent as "Authorization: Bearer TOKEN"; SUBJECT is a tenant
 * name (1..256 bytes of UTF-8 without '/'), or `admin` for the admin role.
 * '#' starts a comment line. The file holds secrets: mode 0600 (see
 * secretfile.h).
 *
 * Node signatures: the nodes of a cluster share a secret (the token secret
 * file). A request one node makes of another (a forwarded read, a gather,
 * a checkpoint fetch, a lag or outcome poll) carries
 *
 *     X-Objlog-Subject:   admin | node | open | t:PERCENT-ENCODED-TENANT
 *     X-Objlog-Node-Auth: t=UNIX-SECONDS,sig=HEX
 *
 * where sig = HMAC-SHA256(node key, "objlog-node-v1\n" METHOD "\n" TARGET
 * "\n" hex(SHA-256(body)) "\n" t "\n" SUBJECT) and TARGET is the request
 * target as sent (path and query). The peer takes the subject from the
 * header only when the signature matches and t is within
 * NODEAUTH_WINDOW_S of its clock: a client cannot claim a subject, and a
 * captured request cannot be replayed later.
 *
 * Invariant: apicreds_find compares every token in constant time; a loaded
 * apicreds holds every line of its file, tokens unique; secrets are wiped
 * when freed. */
#ifndef OBJLOG_QUERY_APIAUTH_H
#define OBJLOG_QUERY_APIAUTH_H

#include <stddef.h>
#include <stdint.h>

#define APICREDS_MIN_TOKEN_LEN 16
#define APICREDS_MAX_TOKEN_LEN 256
#define APICREDS_MAX_TENANT_LEN 256

/* Who a request is: a tenant, or the admin role (tenant ""). */
typedef struct apisubject {
    char tenant[APICREDS_MAX_TENANT_LEN + 1];
    int admin;
} apisubject;

typedef struct apicreds apicreds;

/* NULL on error with "FILE:LINE: problem" (or "FILE: problem") in errstr:
 * a missing or extra field, a bad token or tenant, a duplicate token, an
 * unreadable file, one group or others may read (unless allow_open). */
apicreds *apicreds_load(const char *path, int allow_open, char *errstr, size_t errstr_size);
/* 0 with *out filled when token is one of c's; -1 otherwise. */
int apicreds_find(const apicreds *c, const char *token, apisubject *out);
size_t apicreds_count(const apicreds *c);
unsigned apicreds_open_mode(const apicreds *c); /* see s3creds_open_mode */
void apicreds_free(apicreds *c);

#define NODEAUTH_HEADER "X-Objlog-Node-Auth"
#define NODEAUTH_SUBJECT_HEADER "X-Objlog-Subject"
#define NODEAUTH_WINDOW_S 60
#define NODEAUTH_KEY_LEN 32
#define NODEAUTH_VALUE_MAX 96 /* "t=..,sig=<64 hex>" */

/* The node key derived from the cluster's shared secret. 0 or -1. */
int nodeauth_key(const uint8_t *secret, size_t n, uint8_t key[NODEAUTH_KEY_LEN]);
/* The X-Objlog-Node-Auth value for a request at now_s into out[n]. 0, or
 * -1 (out too small, crypto failure). */
int nodeauth_sign(const uint8_t key[NODEAUTH_KEY_LEN], const char *method, const char *target,
                  const void *body, size_t body_len, const char *subject, int64_t now_s,
                  char *out, size_t n);
/* 0 when value is a valid signature of the request made within the window
 * around now_s; else -1 with why. */
int nodeauth_verify(const uint8_t key[NODEAUTH_KEY_LEN], const char *method,
                    const char *target, const void *body, size_t body_len,
                    const char *subject, const char *value, int64_t now_s, char *why,
                    size_t why_size);
/* The subject header value of s ("admin", or "t:" and the tenant
 * percent-encoded) into out[n]; 0 or -1 too small. */
int nodeauth_subject_format(const apisubject *s, char *out, size_t n);
/* The reverse; "node" is the admin role too. 0, or -1 not a subject.
 * "open" is 1: the sending node serves without credentials. */
int nodeauth_subject_parse(const char *v, apisubject *out);

#endif
