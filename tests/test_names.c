/* test_names.c: S3's rules for bucket names and for the values objlog
 * hands back as HTTP header values, through both APIs, one rule per row.
 *
 * Bucket names as S3 documents them for general purpose buckets: 3-63
 * characters of a-z 0-9 . -, a letter or digit at both ends, no two
 * adjacent periods, no ".-" or "-.", not an IP address, none of S3's
 * reserved prefixes and suffixes; a virtual-hosted-style Host label over
 * 63 characters is refused too (it was cut to 63, addressing another
 * bucket). Every refusal is 400 InvalidBucketName, on the JSON API and the
 * S3 endpoint alike.
 *
 * Control characters (0x00-0x1f, 0x7f) in an etag, a content type, a blob
 * id or user metadata (name or value) are 400 InvalidArgument naming the
 * field: GetObject/HeadObject give these back as header values. The
 * producer library refuses them (test_producer), so both APIs answer its
 * refusal. On the S3 endpoint a CR or LF cannot reach a header value: a
 * bare CR is a framing error, 400 and the connection closed
 * (test_framing).
 *
 * One `objlogd --embedded --s3-listen --s3-anonymous`, requests over raw
 * sockets (rawhttp.h) so that any byte can be sent. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "proc.h"
#include "rawhttp.h"

typedef struct daemon_ {
    proc *p;
    char dir[256];
    int port;                    /* the JSON API */
    int s3port;
} daemon_;

static daemon_ g;

static int port_of(const char *addr) {
    const char *colon = strrchr(addr, ':');
    return colon ? atoi(colon + 1) : -1;
}

static int group_setup(void **state) {
    (void)state;
    char objlogd[512], data[300], addr[64], ready[8];
    if (proc_tmpdir(g.dir, sizeof(g.dir)) < 0)
        return -1;
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    snprintf(data, sizeof(data), "%s/data", g.dir);
    char blobs[300];
    snprintf(blobs, sizeof(blobs), "%s/blobs", g.dir);
    char *argv[] = {objlogd, "--embedded", "--partitions", "2", "--data", data,
                    "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0",
                    "--s3-anonymous", "--threads", "2", "--blob-dir", blobs, NULL};
    g.p = proc_spawn(argv, NULL);
    if (!g.p || proc_wait_line(g.p, "OBJLOG_LISTEN=", addr, sizeof(addr), 60000) < 0)
        return -1;
    g.port = port_of(addr);
    if (proc_wait_line(g.p, "OBJLOG_S3_LISTEN=", addr, sizeof(addr), 10000) < 0)
        return -1;
    g.s3port = port_of(addr);
    return proc_wait_line(g.p, "OBJLOG_READY", ready, sizeof(ready), 60000);
}

static int group_teardown(void **state) {
    (void)state;
    int status = g.p ? proc_stop(g.p, 20000) : -1;
    proc_rmtree(g.dir);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

enum { API_JSON = 1, API_S3 = 2, API_BOTH = 3 };

static const char *api_name(int api) { return api == API_JSON ? "JSON" : "S3"; }

/* One request on a new connection: its first answer. */
static void exchange(int api, const char *req, size_t n, raw_reply *r) {
    assert_int_equal(raw_exchange(api == API_JSON ? g.port : g.s3port, req, n, r, 1, 0,
                                  10000),
                     0);
}

/* The error code in an answer: JSON's "code" or S3's <Code>. */
static int has_code(const raw_reply *r, const char *code) {
    char want[128];
    snprintf(want, sizeof(want), "\"code\":\"%s\"", code);
    if (strstr(r->text, want))
        return 1;
    snprintf(want, sizeof(want), "<Code>%s</Code>", code);
    return strstr(r->text, want) != NULL;
}

/* ---------------------------------------------------------- bucket names */

typedef struct name_row {
    const char *rule;
    const char *name;
    int api;                     /* which API the row goes through */
    int status;                  /* 200: created; 400: InvalidBucketName */
} name_row;

#define L60 "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij"
#define L63 L60 "abc"

static const name_row names[] = {
    {"shorter than 3", "ab", API_BOTH, 400},
    {"longer than 63", L63 "d", API_BOTH, 400},
    {"upper case", "Abc", API_BOTH, 400},
    {"underscore", "a_bc", API_BOTH, 400},
    {"begins with a hyphen", "-abc", API_BOTH, 400},
    {"begins with a period", ".abc", API_BOTH, 400},
    {"ends with a hyphen", "abc-", API_BOTH, 400},
    {"ends with a period", "abc.", API_BOTH, 400},
    {"two adjacent periods", "ab..cd", API_BOTH, 400},
    {"period then hyphen", "ab.-cd", API_BOTH, 400},
    {"hyphen then period", "ab-.cd", API_BOTH, 400},
    {"formatted as an IP address", "192.168.5.4", API_BOTH, 400},
    {"formatted as an IP address, long groups", "1000.2.3.4", API_BOTH, 400},
    {"prefix xn--", "xn--abc", API_BOTH, 400},
    {"prefix sthree-", "sthree-abc", API_BOTH, 400},
    {"prefix amzn-s3-demo-", "amzn-s3-demo-abc", API_BOTH, 400},
    {"suffix -s3alias", "abc-s3alias", API_BOTH, 400},
    {"suffix --ol-s3", "abc--ol-s3", API_BOTH, 400},
    {"suffix .mrap", "abc.mrap", API_BOTH, 400},
    {"suffix --x-s3", "abc--x-s3", API_BOTH, 400},
    {"suffix --table-s3", "abc--table-s3", API_BOTH, 400},
    /* the edges of the rules are names */
    {"3 characters", "a1b", API_JSON, 200},
    {"3 characters", "b1c", API_S3, 200},
    {"63 characters", L63, API_JSON, 200},
    {"63 characters", L60 "xyz", API_S3, 200},
    {"periods and hyphens apart", "a.b-c.d", API_JSON, 200},
    {"periods and hyphens apart", "b.c-d.e", API_S3, 200},
    {"three numeric labels", "192.168.5", API_JSON, 200},
    {"four labels, one not numeric", "192.168.5.a", API_S3, 200},
    {"xn- without the second hyphen", "xn-abc", API_JSON, 200},
    {"a reserved suffix inside", "abc-s3alias-x", API_S3, 200},
    {"a reserved prefix inside", "x-sthree-abc", API_JSON, 200},
    {"two hyphens", "ab--cd", API_S3, 200},
};

static void check_name(const name_row *row, int api, int *failed) {
    char req[512];
    int n = api == API_JSON
                ? snprintf(req, sizeof(req),
                           "PUT /v1/buckets/%s HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
                           row->name)
                : snprintf(req, sizeof(req),
                           "PUT /%s HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
                           row->name);
    static raw_reply r;
    exchange(api, req, (size_t)n, &r);
    if (r.n == 1 && r.codes[0] == row->status &&
        (row->status == 200 || has_code(&r, "InvalidBucketName")))
        return;
    print_error("%s, \"%s\" (%s): want %d%s, got %d:\n%.400s\n", row->rule, row->name,
                api_name(api), row->status, row->status == 200 ? "" : " InvalidBucketName",
                r.codes[0], r.text);
    (*failed)++;
}

static void test_bucket_names(void **state) {
    (void)state;
    int failed = 0, cases = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        for (int api = API_JSON; api <= API_S3; api++) {
            if (!(names[i].api & api))
                continue;
            check_name(&names[i], api, &failed);
            cases++;
        }
    }
    if (failed)
        fail_msg("%d of %d cases failed", failed, cases);
}

/* Host: BUCKET.localhost with a 64-character label was cut to its first
 * 63 and listed that bucket. */
static void test_virtual_host_label_too_long(void **state) {
    (void)state;
    static raw_reply r;
    static const char mk[] = "PUT /" L63 " HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n";
    exchange(API_S3, mk, sizeof(mk) - 1, &r);
    assert_true(r.codes[0] == 200 || r.codes[0] == 409); /* made, or by test_bucket_names */
    static const char ok[] = "GET /?list-type=2 HTTP/1.1\r\nHost: " L63 ".localhost\r\n\r\n";
    exchange(API_S3, ok, sizeof(ok) - 1, &r);
    assert_int_equal(r.codes[0], 200);
    static const char longer[] = "GET /?list-type=2 HTTP/1.1\r\nHost: " L63
                                 "d.localhost\r\n\r\n";
    exchange(API_S3, longer, sizeof(longer) - 1, &r);
    if (r.codes[0] != 400 || !has_code(&r, "InvalidBucketName"))
        fail_msg("a 64-character Host label: %d:\n%.600s", r.codes[0], r.text);
}

/* ---------------------------------------------------------- field values */

typedef struct value_row {
    const char *rule;
    int api;
    const char *headers;         /* S3: extra header lines of a PutObject */
    const char *body;            /* JSON: the PutObject body */
    int status;                  /* 200, or 400 with code naming field */
    const char *code;
    const char *field;           /* the error message names it */
} value_row;

static const value_row values[] = {
    {"CR in an etag", API_JSON, NULL, "{\"size\":1,\"etag\":\"a\\rb\"}", 400, "InvalidArgument",
     "etag"},
    {"LF in an etag", API_JSON, NULL, "{\"size\":1,\"etag\":\"ab\\n\"}", 400, "InvalidArgument",
     "etag"},
    {"TAB in an etag", API_JSON, NULL, "{\"size\":1,\"etag\":\"a\\tb\"}", 400,
     "InvalidArgument", "etag"},
    {"0x01 in an etag", API_JSON, NULL, "{\"size\":1,\"etag\":\"\\u0001\"}", 400,
     "InvalidArgument", "etag"},
    {"CR LF in a content type", API_JSON, NULL,
     "{\"size\":1,\"content_type\":\"text/plain\\r\\nX-Evil: 1\"}", 400, "InvalidArgument",
     "content type"},
    {"DEL in a content type", API_JSON, NULL, "{\"size\":1,\"content_type\":\"a\\u007f\"}",
     400, "InvalidArgument", "content type"},
    {"LF in a user metadata value", API_JSON, NULL,
     "{\"size\":1,\"user_metadata\":{\"color\":\"red\\nX-Evil: 1\"}}", 400,
     "InvalidArgument", "user metadata"},
    {"0x1f in a user metadata value", API_JSON, NULL,
     "{\"size\":1,\"user_metadata\":{\"color\":\"\\u001f\"}}", 400, "InvalidArgument",
     "user metadata"},
    {"CR in a user metadata name", API_JSON, NULL,
     "{\"size\":1,\"user_metadata\":{\"co\\rlor\":\"red\"}}", 400, "InvalidArgument",
     "user metadata"},
    {"LF in a blob id", API_JSON, NULL, "{\"size\":1,\"blob_id\":\"b\\n1\"}", 400,
     "InvalidArgument", "blob id"},
    {"0x01 in a content type", API_S3, "Content-Type: text/\x01plain\r\n", NULL, 400,
     "InvalidArgument", "content type"},
    {"TAB inside a content type", API_S3, "Content-Type: text/\tplain\r\n", NULL, 400,
     "InvalidArgument", "content type"},
    {"DEL in a user metadata value", API_S3, "x-amz-meta-color: red\x7f\r\n", NULL, 400,
     "InvalidArgument", "user metadata"},
    {"0x1b in a user metadata value", API_S3, "x-amz-meta-color: \x1b[31mred\r\n", NULL,
     400, "InvalidArgument", "user metadata"},
    {"0x01 in a blob id", API_S3, "x-objlog-blob-id: b\x01\r\n", NULL, 400,
     "InvalidArgument", "blob id"},
    /* what is not a control character passes */
    {"a content type with parameters", API_JSON, NULL,
     "{\"size\":1,\"content_type\":\"text/plain; charset=utf-8\"}", 200, NULL, NULL},
    {"UTF-8 in a user metadata value", API_JSON, NULL,
     "{\"size\":1,\"user_metadata\":{\"city\":\"K\\u00f6ln\"}}", 200, NULL, NULL},
    {"a content type with parameters", API_S3, "Content-Type: text/plain; charset=utf-8\r\n",
     NULL, 200, NULL, NULL},
    {"spaces in a user metadata value", API_S3, "x-amz-meta-note: a b  c\r\n", NULL, 200,
     NULL, NULL},
};

static void check_value(const value_row *row, int i, int *failed) {
    static char req[4096];
    int n;
    if (row->api == API_JSON)
        n = snprintf(req, sizeof(req),
                     "PUT /v1/buckets/values/objects/k%d HTTP/1.1\r\nHost: t\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     i, strlen(row->body), row->body);
    else
        n = snprintf(req, sizeof(req),
                     "PUT /values/k%d HTTP/1.1\r\nHost: t\r\n%sContent-Length: 1\r\n\r\nx", i,
                     row->headers);
    static raw_reply r;
    exchange(row->api, req, (size_t)n, &r);
    int ok = r.n == 1 && r.codes[0] == row->status;
    if (ok && row->code)
        ok = has_code(&r, row->code) && strstr(r.text + r.body[0], row->field) != NULL;
    if (ok)
        return;
    print_error("%s (%s): want %d %s naming \"%s\", got %d:\n%.500s\n", row->rule,
                api_name(row->api), row->status, row->code ? row->code : "",
                row->field ? row->field : "", r.codes[0], r.text);
    (*failed)++;
}

static void test_field_values(void **state) {
    (void)state;
    static raw_reply r;
    static const char mk[] = "PUT /v1/buckets/values HTTP/1.1\r\nHost: t\r\n"
                             "Content-Length: 0\r\n\r\n";
    exchange(API_JSON, mk, sizeof(mk) - 1, &r);
    assert_int_equal(r.codes[0], 200);
    int failed = 0;
    int nrows = (int)(sizeof(values) / sizeof(values[0]));
    for (int i = 0; i < nrows; i++)
        check_value(&values[i], i, &failed);
    if (failed)
        fail_msg("%d of %d rows failed", failed, nrows);
    /* Nothing refused was stored: only the accepted rows' keys exist. */
    static const char list[] = "GET /v1/buckets/values/objects HTTP/1.1\r\nHost: t\r\n\r\n";
    exchange(API_JSON, list, sizeof(list) - 1, &r);
    assert_int_equal(r.codes[0], 200);
    for (int i = 0; i < nrows; i++) {
        char key[32];
        snprintf(key, sizeof(key), "\"key\":\"k%d\"", i);
        if ((strstr(r.text + r.body[0], key) != NULL) != (values[i].status == 200))
            fail_msg("row %d (%s): stored %s", i, values[i].rule,
                     values[i].status == 200 ? "no" : "yes");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_names),
        cmocka_unit_test(test_virtual_host_label_too_long),
        cmocka_unit_test(test_field_values),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
