/* lcconf.h: a bucket's lifecycle configuration as the HTTP front ends read
 * and write it (lcconf.c): the JSON API (lcapi.c) and the S3 endpoint
 * (s3lc.c) each parse and print their own format, and meet here. */
#ifndef OBJLOG_QUERY_LCCONF_H
#define OBJLOG_QUERY_LCCONF_H

#include "internal.h"

/* The bucket record with its rules, through a fenced view: 1 with *b
 * (caller frees), 0 after replying (404 NoSuchLifecycleConfiguration when
 * it has none, in the request's API's format) or parking. */
int lcconf_read(http_ctx *c, const char *bucket, view_bucket *b);
/* A SetLifecycle event of bucket with sl's rules (NULL: none, which
 * removes the configuration) through the gateway: the answer is c's
 * write's. sl stays the caller's. */
void lcconf_write(http_ctx *c, const char *bucket, Objlog__SetLifecycle *sl);

#endif
