/* writes.h: the JSON API's write routes (api/writes.c), which the router
 * (server/http.c) and ixread.c call: each reads its request's JSON body
 * and parameters, answers a bad one 400, and hands the values to the
 * gateway (write/write.h).
 *
 * Invariant: each answers c exactly once: itself when the request is bad,
 * else through the gateway. */
#ifndef OBJLOG_QUERY_API_WRITES_H
#define OBJLOG_QUERY_API_WRITES_H

#include "internal.h"

void gateway_put_bucket(http_ctx *c, const char *bucket);
void gateway_put_versioning(http_ctx *c, const char *bucket);
void gateway_put_quota(http_ctx *c, const char *bucket);
void gateway_put_rate_limit(http_ctx *c, const char *bucket);
void gateway_put_object(http_ctx *c, const char *bucket, const uint8_t *key,
                        size_t key_len);
void gateway_delete_object(http_ctx *c, const char *bucket,
                           const uint8_t *key, size_t key_len);
void gateway_create_upload(http_ctx *c, const char *bucket);
void gateway_upload_part(http_ctx *c, const char *bucket, const char *upload_id,
                         const char *part_number);
void gateway_complete_upload(http_ctx *c, const char *bucket,
                             const char *upload_id);
void gateway_abort_upload(http_ctx *c, const char *bucket, const char *upload_id);
/* PUT /v1/buckets/{b}/indexes/{name}. */
void gateway_put_index(http_ctx *c, const char *bucket, const char *name);

#endif
