/* apiauth.h: who a JSON API request is. Pure: no evhttp, no clock, no
 * globals; the JSON API (apiguard.c) hands in what it received and the time.
 * Internal to the query service (prefix apicreds_); a subject
 * (apisubject) and the nodes' signatures are nodeauth.h's.
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
 * Invariant: apicreds_find compares every token in constant time; a loaded
 * apicreds holds every line of its file, tokens unique; secrets are wiped
 * when freed. */
#ifndef OBJLOG_QUERY_APIAUTH_H
#define OBJLOG_QUERY_APIAUTH_H

#include <stddef.h>
#include <stdint.h>

#include "nodeauth.h"

#define APICREDS_MIN_TOKEN_LEN 16
#define APICREDS_MAX_TOKEN_LEN 256
#define APICREDS_MAX_TENANT_LEN NODEAUTH_MAX_TENANT_LEN

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

#endif
