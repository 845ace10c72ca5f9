/* test_interop.c: tools nobody here wrote can read objlog's log,
 * and a message they write that is not an event goes to the DLQ
 * without stopping its partition. The log is the mock cluster of
 * `objlogd --kafka-only` or a real 3-node Kafka (testlog.h); `objlogd
 * --brokers` is the view, and kcat (Debian's kcat) and `protoc --decode`
 * (Debian's protobuf-compiler) run as separate processes against the same
 * bootstrap list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "keycodec.h"
#include "proc.h"
#include "rangemap.h"
#include "testlog.h"

#define PARTITIONS 4

static struct {
    char root[256], data[300], objlogd[512], boot[1024], url[256], src[512];
    testlog *log;
    proc *d;
    int partition; /* of bucket "interop" */
} T;

static int setup(void **state) {
    (void)state;
    char listen[128];
    const char *src = getenv("OBJLOG_SRC_DIR");
    snprintf(T.src, sizeof(T.src), "%s", src ? src : ".");
    assert_int_equal(proc_tmpdir(T.root, sizeof(T.root)), 0);
    snprintf(T.data, sizeof(T.data), "%s/data", T.root);
    proc_bin("query/objlogd", T.objlogd, sizeof(T.objlogd));
    T.log = testlog_start(PARTITIONS);
    assert_non_null(T.log);
    snprintf(T.boot, sizeof(T.boot), "%s", testlog_bootstrap(T.log));
    char *argv[] = {T.objlogd, "--brokers", T.boot, "--listen", "127.0.0.1:0", "--data",
                    T.data, NULL};
    T.d = proc_spawn(argv, NULL);
    assert_non_null(T.d);
    assert_int_equal(proc_wait_line(T.d, "OBJLOG_LISTEN=", listen, sizeof(listen), 60000), 0);
    assert_int_equal(proc_wait_line(T.d, "OBJLOG_READY", NULL, 0, 60000), 0);
    snprintf(T.url, sizeof(T.url), "http://%s", listen);

    rangemap *rm = rangemap_new_default(PARTITIONS, 1);
    keybuf rk;
    keybuf_init(&rk);
    keycodec_route_key(&rk, "interop", 7, (const uint8_t *)"", 0);
    T.partition = rangemap_partition(rm, rk.data, rk.len);
    keybuf_free(&rk);
    rangemap_destroy(rm);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    int st = T.d ? proc_stop(T.d, 20000) : 0;
    testlog_stop(T.log);
    proc_rmtree(T.root);
    assert_int_equal(st, 0);
    return 0;
}

static void http_expect(httpc *c, const char *method, const char *path, const char *body,
                        long status) {
    httpc_resp r;
    assert_int_equal(httpc_do(c, method, path, body, NULL, &r), 0);
    if (r.status != status)
        fail_msg("%s %s: %ld %s", method, path, r.status, r.body);
}

static int sh(const char *cmd, char *out, size_t out_size) {
    char err[4096];
    char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
    int rc = proc_run(argv, NULL, out, out_size, err, sizeof(err), 60000);
    if (rc != 0)
        fprintf(stderr, "command failed (%d): %s\n%s\n", rc, cmd, err);
    return rc;
}

static void kcat_and_protoc_read_the_log(void **state) {
    (void)state;
    httpc *c = httpc_new(T.url);
    http_expect(c, "PUT", "/v1/buckets/interop", "{\"tenant\":\"acme\"}", 200);
    http_expect(c, "PUT", "/v1/buckets/interop/objects/hello%2Fworld.txt",
                "{\"size\":1234,\"etag\":\"abc123\",\"content_type\":\"text/plain\","
                "\"user_metadata\":{\"color\":\"blue\"}}",
                200);
    httpc_destroy(c);

    char cmd[2048], out[8192], file[400];
    snprintf(file, sizeof(file), "%s/event.bin", T.root);
    /* Offset 0 of the bucket's partition is the bucket, offset 1 the PUT. */
    snprintf(cmd, sizeof(cmd),
             "kcat -C -b '%s' -t objlog.events -p %d -o 1 -c 1 -e -q -D '' -f '%%s' > '%s'",
             T.boot, T.partition, file);
    assert_int_equal(sh(cmd, out, sizeof(out)), 0);
    snprintf(cmd, sizeof(cmd),
             "protoc --decode objlog.Event --proto_path='%s/schemas' '%s/schemas/objlog.proto' < '%s'",
             T.src, T.src, file);
    assert_int_equal(sh(cmd, out, sizeof(out)), 0);
    printf("protoc --decode objlog.Event:\n%s", out);
    static const char *const want[] = {
        "bucket: \"interop\"", "key: \"hello/world.txt\"", "put_object {", "size: 1234",
        "etag: \"abc123\"", "content_type: \"text/plain\"", "name: \"color\"", "value: \"blue\"",
        "range_epoch: 1"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(out, want[i]))
            fail_msg("protoc output lacks %s", want[i]);

    /* kcat sees the Kafka key: the route key, 2 + enc(bucket) + enc(key). */
    snprintf(cmd, sizeof(cmd),
             "kcat -C -b '%s' -t objlog.events -p %d -o 1 -c 1 -e -q -f '%%p %%o %%K\\n'",
             T.boot, T.partition);
    assert_int_equal(sh(cmd, out, sizeof(out)), 0);
    char want_line[64];
    snprintf(want_line, sizeof(want_line), "%d 1 %d\n", T.partition, 2 + 9 + 17);
    assert_string_equal(out, want_line);
}

static void garbage_from_kcat_goes_to_dlq_and_partition_goes_on(void **state) {
    (void)state;
    char cmd[2048], out[8192];
    snprintf(cmd, sizeof(cmd),
             "printf 'not an event' | kcat -P -b '%s' -t objlog.events -p %d -k junk",
             T.boot, T.partition);
    assert_int_equal(sh(cmd, out, sizeof(out)), 0);
    /* A later event of the same partition is applied: it did not stop. */
    httpc *c = httpc_new(T.url);
    http_expect(c, "PUT", "/v1/buckets/interop/objects/after-garbage",
                "{\"size\":1,\"etag\":\"e1\"}", 200);
    http_expect(c, "GET", "/v1/buckets/interop/objects/after-garbage", NULL, 200);
    httpc_resp r;
    assert_int_equal(httpc_do(c, "GET", "/healthz", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    json_t *j = json_loads(r.body, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "dlq_events")), 1);
    json_decref(j);
    httpc_destroy(c);

    snprintf(cmd, sizeof(cmd),
             "kcat -C -b '%s' -t objlog.dlq -o beginning -c 1 -e -q -f '%%h|%%s\\n'", T.boot);
    assert_int_equal(sh(cmd, out, sizeof(out)), 0);
    char want[128];
    snprintf(want, sizeof(want), "objlog.partition=%d", T.partition);
    if (!strstr(out, want) || !strstr(out, "objlog.offset=2") || !strstr(out, "|not an event\n"))
        fail_msg("dlq message: %s", out);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kcat_and_protoc_read_the_log),
        cmocka_unit_test(garbage_from_kcat_goes_to_dlq_and_partition_goes_on),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
