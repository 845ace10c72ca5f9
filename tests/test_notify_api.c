/* test_notify_api.c: a bucket's event notification configurations through
 * the JSON API (query/api/notifyapi.c) and the CLI (ops/cmd_notify.c)
 * against one objlogd --embedded, a child of the test killed with it even
 * when it fails (proc.h): PUT/GET/DELETE /v1/buckets/{b}/notifications
 * with every field of the answers exact, the refusals with their codes and
 * messages (an unknown field, malformed JSON, an unknown event, an ARN
 * objlog does not take, overlapping configurations) changing nothing, 404
 * NoSuchBucket; `objlog notify set|get|delete` with exact stdout, stderr
 * and exit codes; the status route and `objlog notify status` once three
 * PUTs were delivered to a Kafka topic of the embedded log. The seq the server chooses is
 * read back, then asserted exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "httpc.h"
#include "proc.h"
#include "s3daemon.h"

static s3daemon g;
static char objlog_bin[1024];

static int group_setup(void **state) {
    (void)state;
    proc_bin("ops/objlog", objlog_bin, sizeof(objlog_bin));
    return s3daemon_start(&g, "objlogtest objlogtest-secret tenant-a\n", NULL);
}

static int group_teardown(void **state) {
    (void)state;
    return s3daemon_stop(&g);
}

static const char *const TWO =
    "{\"configurations\":["
    "{\"id\":\"c1\",\"arn\":\"arn:objlog:kafka:::photos\","
    "\"events\":[\"s3:ObjectCreated:*\",\"s3:ObjectRemoved:Delete\"],"
    "\"prefix\":\"a/\",\"suffix\":\".jpg\"},"
    "{\"id\":\"c2\",\"arn\":\"arn:objlog:webhook:::http%3A%2F%2F127.0.0.1%3A9%2Fhook\","
    "\"events\":[\"s3:ObjectCreated:Put\"],\"prefix\":\"b/\"}]}";

/* What GET answers for TWO, without its seq. */
static const char *const TWO_GOT =
    "{\"bucket\":\"%s\",\"configurations\":["
    "{\"id\":\"c1\",\"arn\":\"arn:objlog:kafka:::photos\","
    "\"events\":[\"s3:ObjectCreated:*\",\"s3:ObjectRemoved:Delete\"],"
    "\"prefix\":\"a/\",\"suffix\":\".jpg\",\"target\":\"kafka\",\"destination\":\"photos\"},"
    "{\"id\":\"c2\",\"arn\":\"arn:objlog:webhook:::http%%3A%%2F%%2F127.0.0.1%%3A9%%2Fhook\","
    "\"events\":[\"s3:ObjectCreated:Put\"],\"prefix\":\"b/\",\"target\":\"webhook\","
    "\"destination\":\"http://127.0.0.1:9/hook\"}]}";

static json_t *json_of(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("not JSON (%s): %s", je.text, text);
    return j;
}

/* method path [body]: the status, the answer's JSON into *out (caller
 * decrefs). */
static long call(const char *method, const char *path, const char *body, json_t **out) {
    httpc_resp r;
    assert_int_equal(httpc_do(g.h, method, path, body, NULL, &r), 0);
    *out = json_of(r.body);
    return r.status;
}

/* The error answer's code and message must be these. */
static void assert_refused(const char *method, const char *path, const char *body,
                           long status, const char *code, const char *message) {
    json_t *j;
    long st = call(method, path, body, &j);
    json_t *e = json_object_get(j, "error");
    const char *c = json_string_value(json_object_get(e, "code"));
    const char *m = json_string_value(json_object_get(e, "message"));
    if (st != status || !c || strcmp(c, code) != 0 || !m || strcmp(m, message) != 0)
        fail_msg("%s %s: %ld %s %s, wanted %ld %s %s", method, path, st, c ? c : "-",
                 m ? m : "-", status, code, message);
    json_decref(j);
}

/* GET's answer with its seq taken out into seq (17 bytes): 16 hex digits. */
static json_t *get_configs(const char *bucket, char *seq) {
    char path[200];
    snprintf(path, sizeof(path), "/v1/buckets/%s/notifications", bucket);
    json_t *j;
    assert_int_equal(call("GET", path, NULL, &j), 200);
    const char *s = json_string_value(json_object_get(j, "seq"));
    assert_non_null(s);
    assert_int_equal(strlen(s), 16);
    assert_int_equal(strspn(s, "0123456789abcdef"), 16);
    snprintf(seq, 17, "%s", s);
    json_object_del(j, "seq");
    return j;
}

static void assert_configs(const char *bucket, const char *want_fmt, char *seq) {
    char want[2048];
    snprintf(want, sizeof(want), want_fmt, bucket);
    json_t *got = get_configs(bucket, seq), *w = json_of(want);
    if (!json_equal(got, w)) {
        char *s = json_dumps(got, JSON_COMPACT);
        fail_msg("GET %s: %s\nwanted %s", bucket, s, want);
    }
    json_decref(got);
    json_decref(w);
}

static void test_api_round_trip(void **state) {
    (void)state;
    json_t *j;
    char seq[17], seq2[17];
    assert_int_equal(call("PUT", "/v1/buckets/nt-api", "{}", &j), 200);
    json_decref(j);
    assert_configs("nt-api", "{\"bucket\":\"%s\",\"configurations\":[]}", seq);
    assert_string_equal(seq, "0000000000000000");

    /* PUT: the gateway's write answer, as every write's */
    assert_int_equal(call("PUT", "/v1/buckets/nt-api/notifications", TWO, &j), 200);
    assert_string_equal(json_string_value(json_object_get(j, "version_id")), "");
    assert_string_equal(json_string_value(json_object_get(j, "etag")), "");
    assert_true(json_is_false(json_object_get(j, "delete_marker")));
    assert_non_null(json_string_value(json_object_get(j, "token")));
    assert_int_equal(strlen(json_string_value(json_object_get(j, "request_id"))), 32);
    json_decref(j);
    assert_configs("nt-api", TWO_GOT, seq);
    assert_string_not_equal(seq, "0000000000000000");

    /* refusals: each one's code and message, nothing changed */
    const char *P = "/v1/buckets/nt-api/notifications";
    assert_refused("PUT", P, "{\"configurations\":[],\"rules\":[]}", 400, "InvalidArgument",
                   "unknown field rules in the body");
    assert_refused("PUT", P,
                   "{\"configurations\":[{\"id\":\"x\",\"arn\":\"arn:objlog:kafka:::t\","
                   "\"events\":[\"s3:ObjectCreated:*\"],\"filter\":{\"prefix\":\"a\"}}]}",
                   400, "InvalidArgument", "unknown field filter in a configuration");
    assert_refused("PUT", P, "{\"configurations\":[", 400, "MalformedJSON",
                   "the request body must be a JSON object {\"configurations\":[...]}");
    assert_refused("PUT", P, "[]", 400, "MalformedJSON",
                   "the request body must be a JSON object {\"configurations\":[...]}");
    assert_refused("PUT", P, "{}", 400, "InvalidArgument",
                   "the body must be {\"configurations\":[...]} (an empty list, or DELETE, "
                   "removes them all)");
    assert_refused("PUT", P,
                   "{\"configurations\":[{\"arn\":\"arn:objlog:kafka:::t\","
                   "\"events\":[\"s3:ObjectCreated:*\"]}]}",
                   400, "InvalidArgument", "each configuration needs id (a string)");
    assert_refused("PUT", P,
                   "{\"configurations\":[{\"id\":\"x\",\"arn\":\"arn:objlog:kafka:::t\","
                   "\"events\":[\"s3:ObjectCreated:Nope\"]}]}",
                   400, "InvalidArgument",
                   "The event is not supported for notifications: s3:ObjectCreated:Nope");
    assert_refused("PUT", P,
                   "{\"configurations\":[{\"id\":\"x\",\"arn\":\"arn:aws:sns:us-east-1:1:t\","
                   "\"events\":[\"s3:ObjectCreated:*\"]}]}",
                   400, "InvalidArgument",
                   "The ARN is not well formed: arn:aws:sns:us-east-1:1:t (objlog takes "
                   "arn:objlog:kafka:::TOPIC or arn:objlog:webhook:::URL-ENCODED-URL)");
    assert_refused("PUT", P,
                   "{\"configurations\":[{\"id\":\"x\",\"arn\":"
                   "\"arn:objlog:webhook:::ftp%3A%2F%2Fh\",\"events\":[\"s3:ObjectCreated:*\"]}]}",
                   400, "InvalidArgument",
                   "webhook ARN: the URL must start with http:// or https://");
    assert_refused("PUT", P,
                   "{\"configurations\":[{\"id\":\"a\",\"arn\":\"arn:objlog:kafka:::t\","
                   "\"events\":[\"s3:ObjectCreated:*\"],\"prefix\":\"x/\"},"
                   "{\"id\":\"b\",\"arn\":\"arn:objlog:kafka:::u\","
                   "\"events\":[\"s3:ObjectCreated:Put\"],\"prefix\":\"x/y\"}]}",
                   400, "InvalidArgument",
                   "Configuration is ambiguously defined. Cannot have overlapping suffixes in "
                   "two rules if the prefixes are overlapping for the same event type (a and "
                   "b).");
    assert_refused("POST", P, NULL, 405, "MethodNotAllowed",
                   "method not allowed on this resource (allowed: GET, PUT, DELETE)");
    assert_configs("nt-api", TWO_GOT, seq2);
    assert_string_equal(seq2, seq);

    assert_refused("PUT", "/v1/buckets/nt-api/notifications/status", "{}", 405,
                   "MethodNotAllowed", "method not allowed on this resource (allowed: GET)");

    /* a bucket that does not exist */
    assert_refused("GET", "/v1/buckets/nt-none/notifications", NULL, 404, "NoSuchBucket",
                   "bucket nt-none does not exist");
    assert_refused("PUT", "/v1/buckets/nt-none/notifications", TWO, 404, "NoSuchBucket",
                   "bucket nt-none does not exist");
    assert_refused("DELETE", "/v1/buckets/nt-none/notifications", NULL, 404, "NoSuchBucket",
                   "bucket nt-none does not exist");

    /* an empty list, or DELETE, removes them all */
    assert_int_equal(call("PUT", P, "{\"configurations\":[]}", &j), 200);
    json_decref(j);
    assert_configs("nt-api", "{\"bucket\":\"%s\",\"configurations\":[]}", seq2);
    assert_int_equal(call("PUT", P, TWO, &j), 200);
    json_decref(j);
    assert_configs("nt-api", TWO_GOT, seq2);
    assert_true(strcmp(seq2, seq) > 0);
    assert_int_equal(call("DELETE", P, NULL, &j), 200);
    json_decref(j);
    assert_configs("nt-api", "{\"bucket\":\"%s\",\"configurations\":[]}", seq2);
}

/* objlog ARGS... --url JSON_URL: exit code, stdout into out, stderr into err. */
static int run_cli(char *const *args, const char *in, char *out, size_t on, char *err,
                   size_t en) {
    char *argv[16] = {objlog_bin};
    int i = 0;
    for (; args[i]; i++)
        argv[i + 1] = args[i];
    argv[++i] = "--url";
    argv[++i] = g.json;
    argv[++i] = NULL;
    return proc_run(argv, in, out, on, err, en, 30000);
}

static void test_cli(void **state) {
    (void)state;
    static char out[8192], err[8192], file[600], bad[600], want[4096];
    json_t *j;
    assert_int_equal(call("PUT", "/v1/buckets/nt-cli", "{}", &j), 200);
    json_decref(j);
    snprintf(file, sizeof(file), "%s/notify.json", g.dir);
    snprintf(bad, sizeof(bad), "%s/bad.json", g.dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    assert_true(fputs(TWO, f) >= 0);
    assert_int_equal(fclose(f), 0);
    f = fopen(bad, "w");
    assert_non_null(f);
    assert_true(fputs("{\"configurations\": [\n", f) >= 0);
    assert_int_equal(fclose(f), 0);

    char *get[] = {"notify", "get", "nt-cli", NULL};
    assert_int_equal(run_cli(get, NULL, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "nt-cli has no notification configurations\n");

    /* a file that is not JSON: a usage error naming it, nothing sent */
    char *setbad[] = {"notify", "set", "nt-cli", bad, NULL};
    assert_int_equal(run_cli(setbad, NULL, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "bad.json is not JSON: line "));
    assert_string_equal(out, "");

    char *set[] = {"notify", "set", "nt-cli", file, NULL};
    assert_int_equal(run_cli(set, NULL, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "notify set: nt-cli\n");
    assert_int_equal(run_cli(get, NULL, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out,
                        "id: c1\n"
                        "target: kafka\n"
                        "destination: photos\n"
                        "events: s3:ObjectCreated:*, s3:ObjectRemoved:Delete\n"
                        "prefix: a/\n"
                        "suffix: .jpg\n"
                        "\n"
                        "id: c2\n"
                        "target: webhook\n"
                        "destination: http://127.0.0.1:9/hook\n"
                        "events: s3:ObjectCreated:Put\n"
                        "prefix: b/\n");
    /* --json: the API's answer as it is (its seq read back, then exact) */
    char seq[17];
    json_decref(get_configs("nt-cli", seq));
    char *getj[] = {"notify", "get", "nt-cli", "--json", NULL};
    assert_int_equal(run_cli(getj, NULL, out, sizeof(out), err, sizeof(err)), 0);
    char body[2048];
    snprintf(body, sizeof(body), TWO_GOT, "nt-cli");
    snprintf(want, sizeof(want), "%.*s,\"seq\":\"%s\"}\n", (int)strlen(body) - 1, body, seq);
    assert_string_equal(out, want);

    /* the server's refusal: exit 1, one line naming its code */
    char *setin[] = {"notify", "set", "nt-cli", "-", NULL};
    const char *nope = "{\"configurations\":[{\"id\":\"x\",\"arn\":\"arn:objlog:kafka:::t\","
                       "\"events\":[\"s3:Nope\"]}]}";
    assert_int_equal(run_cli(setin, nope, out, sizeof(out), err, sizeof(err)), 1);
    assert_string_equal(err, "objlog: notify set nt-cli: InvalidArgument: The event is not "
                             "supported for notifications: s3:Nope\n");
    assert_string_equal(out, "");
    /* stdin: one configuration replaces both */
    const char *one = "{\"configurations\":[{\"id\":\"only\",\"arn\":\"arn:objlog:kafka:::t\","
                      "\"events\":[\"s3:ObjectRemoved:*\"]}]}";
    assert_int_equal(run_cli(setin, one, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "notify set: nt-cli\n");
    assert_int_equal(run_cli(get, NULL, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "id: only\ntarget: kafka\ndestination: t\n"
                             "events: s3:ObjectRemoved:*\n");

    char *del[] = {"notify", "delete", "nt-cli", NULL};
    assert_int_equal(run_cli(del, NULL, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "notify deleted: nt-cli\n");
    assert_int_equal(run_cli(get, NULL, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "nt-cli has no notification configurations\n");

    char *missing[] = {"notify", "get", "nt-missing", NULL};
    assert_int_equal(run_cli(missing, NULL, out, sizeof(out), err, sizeof(err)), 1);
    assert_string_equal(err, "objlog: notify get nt-missing: NoSuchBucket: bucket nt-missing "
                             "does not exist\n");
    char *usage[] = {"notify", "set", "nt-cli", NULL};
    assert_int_equal(run_cli(usage, NULL, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "FILE"));
}

/* Three PUTs that a configuration sends to Kafka: the status counts them
 * delivered with nothing left behind, and the CLI says so. */
static void test_status(void **state) {
    (void)state;
    json_t *j;
    assert_int_equal(call("PUT", "/v1/buckets/nt-status", "{}", &j), 200);
    json_decref(j);
    assert_int_equal(call("PUT", "/v1/buckets/nt-status/notifications",
                          "{\"configurations\":[{\"id\":\"all\",\"arn\":"
                          "\"arn:objlog:kafka:::nt-status-feed\",\"events\":"
                          "[\"s3:ObjectCreated:*\"]}]}", &j), 200);
    json_decref(j);
    for (int i = 0; i < 3; i++) {
        char path[96];
        snprintf(path, sizeof(path), "/v1/buckets/nt-status/objects/k%d", i);
        assert_int_equal(call("PUT", path, "{\"size\":1,\"etag\":\"e\"}", &j), 200);
        json_decref(j);
    }
    json_int_t delivered = -1, backlog = -1;
    for (int tries = 0; tries < 300 && (delivered != 3 || backlog != 0); tries++) {
        usleep(100 * 1000);
        assert_int_equal(call("GET", "/v1/buckets/nt-status/notifications/status", NULL, &j),
                         200);
        json_t *k = json_object_get(json_object_get(j, "node"), "kafka");
        assert_int_equal(json_integer_value(json_object_get(j, "configurations")), 1);
        delivered = json_integer_value(json_object_get(k, "delivered"));
        /* counted once a second: 0 is what it says once it caught up */
        backlog = json_integer_value(json_object_get(k, "backlog"));
        json_decref(j);
    }
    assert_int_equal(delivered, 3);
    assert_int_equal(backlog, 0);
    static char out[4096], err[4096];
    char *args[] = {"notify", "status", "nt-status", NULL};
    assert_int_equal(run_cli(args, NULL, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "bucket nt-status: 1 notification configuration\n"
                                "webhooks, on this node: 0 records delivered; backlog 0 "
                                "records, oldest 0.0 s; 0 failed attempts (retried)\n"
                                "kafka, on this node: 3 records delivered in "));
    assert_non_null(strstr(out, "backlog 0 records, oldest 0.0 s; 0 failed deliveries"));
    assert_refused("GET", "/v1/buckets/nt-none/notifications/status", NULL, 404,
                   "NoSuchBucket", "bucket nt-none does not exist");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_round_trip),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_status),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
