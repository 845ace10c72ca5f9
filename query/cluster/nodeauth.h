/* nodeauth.h: who a request between the nodes of a cluster is, and the
 * signature that proves it. Pure: no evhttp, no clock, no globals.
 *
 * The nodes of a cluster share a secret (the token secret
 * file). A request one node makes of another (a forwarded read, a gather,
 * a checkpoint fetch, a lag or outcome poll) carries
 *
 *     X-Objlog-Subject:   admin | node | open | anon | t:PERCENT-ENCODED-TENANT
 *     X-Objlog-Node-Auth: t=UNIX-SECONDS,sig=HEX
 *
 * where sig = HMAC-SHA256(node key, "objlog-node-v1\n" METHOD "\n" TARGET
 * "\n" hex(SHA-256(body)) "\n" t "\n" SUBJECT) and TARGET is the request
 * target as sent (path and query). The peer takes the subject from the
 * header only when the signature matches and t is within
 * NODEAUTH_WINDOW_S of its clock: a client cannot claim a subject, and a
 * captured request cannot be replayed later.
 *
 * Invariant: a subject is believed only from a signature that checks
 * out within the window; keys are the caller's, never kept here. */
#ifndef OBJLOG_QUERY_NODEAUTH_H
#define OBJLOG_QUERY_NODEAUTH_H

#include <stddef.h>
#include <stdint.h>

#define NODEAUTH_MAX_TENANT_LEN 256

/* Who a request is: a tenant, the admin role (tenant ""), or an
 * anonymous caller who owns nothing (S3 without --s3-anonymous: what an
 * ACL grants everyone; "anon"). */
typedef struct apisubject {
    char tenant[NODEAUTH_MAX_TENANT_LEN + 1];
    int admin;
    int anonymous;
} apisubject;

/* 1 when s is a tenant name: 1..256 bytes of UTF-8 without '/'. */
int nodeauth_tenant_ok(const char *s);

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
