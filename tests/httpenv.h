/* httpenv.h: the query service's whole stack in one test process (the
 * embedded mock Kafka on 127.0.0.1, a RocksDB store in a temp dir, the
 * materializer and the HTTP server on 127.0.0.1 port 0) and a libcurl
 * client for it with cmocka assertions: the fixture test_http and
 * test_http_indexes share. Failures fail the calling test. */
#ifndef OBJLOG_TEST_HTTPENV_H
#define OBJLOG_TEST_HTTPENV_H

#include <stddef.h>

#include <curl/curl.h>
#include <jansson.h>

#include "query.h"

typedef struct env {
    char dir[256];
    objlog_embedded_kafka *kafka;
    objlog_store *store;
    objlog_materializer *m;
    objlog_query *q;
    char base[64];
    CURL *curl;
} env;

typedef struct resp {
    long status;
    char *body;
    size_t body_len;
    char *headers;
    size_t headers_len;
    json_t *json;
} resp;

typedef struct env_opts {
    int apply_delay_ms;          /* slows the materializer */
    int threads;                 /* HTTP workers; 0: 3 */
    long long ready_max_lag;     /* for /readyz; 0: default */
    int idle_pause_ms;           /* the materializer's idle pause */
    void (*before_view)(const char *bs); /* runs on the log's bootstrap
                                    servers before the view starts */
    int no_index_driver;         /* no attribute-index backfill driver */
} env_opts;

/* NULL (and why on stderr) when the stack did not start. */
env *env_start_opts(const env_opts *o);
void env_stop(env *e);

/* Performs one request; path is used as given (callers escape keys). */
void req(env *e, const char *method, const char *path, const char *body,
         const char *const *hdrs, resp *r);
void resp_free(resp *r);
/* Value of response header name (copied into out), or NULL. */
const char *header(const resp *r, const char *name, char *out, size_t n);
/* String at path1 (and path2 inside it) of the JSON body, or NULL. */
const char *jstr(const resp *r, const char *path1, const char *path2);
/* The answer is status with an error of code and a request id. */
void assert_error(const resp *r, long status, const char *code);
/* The request answers status. */
void expect(env *e, const char *method, const char *path, const char *body, long status);
/* Percent-escapes every byte but unreserved ones (and keeps '/'); malloc'd. */
char *esc(const char *s, size_t n);
/* PUT of key (escaped here) with size 7 and etag: 200. */
void put_key(env *e, const char *bucket, const char *key, size_t kn, const char *etag);
void make_bucket(env *e, const char *bucket, const char *body);

#endif
