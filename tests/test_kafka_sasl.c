/* test_kafka_sasl.c: objlogd on a Kafka that wants SASL. The suite's
 * 3-node cluster (ctest's kafka_cluster fixture) has a SASL/PLAIN listener
 * on every node beside its plaintext one (tests/kafka_fixture.sh); this
 * test points objlogd at the SASL listeners only, with --kafka-config
 * naming the mechanism and the user. Every Kafka client of objlogd (topic
 * checks, the log identity, the materializer's consumer, the gateway's
 * producer, the watermark handle) must authenticate, or nothing works:
 * a write applied and read back shows they all did. A wrong password
 * never becomes ready and says why; a config file others may read, or one
 * that sets what objlog sets itself, is refused before any client starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "httpc.h"
#include "proc.h"
#include "testlog.h"

static struct {
    testlog *log;
    char dir[256], sasl_bootstrap[512], user[256], password[256];
} g;

static int group_setup(void **state) {
    (void)state;
    const char *kdir = getenv("OBJLOG_TEST_KAFKA_DIR");
    const char *src = getenv("OBJLOG_SRC_DIR");
    if (!kdir || !src) {
        fprintf(stderr, "test_kafka_sasl needs the kafka_cluster fixture "
                        "(OBJLOG_TEST_KAFKA_DIR) and OBJLOG_SRC_DIR\n");
        return -1;
    }
    if (proc_tmpdir(g.dir, sizeof(g.dir)) < 0 || !(g.log = testlog_start(2)))
        return -1;
    char script[512], err[2048], path[512], line[256];
    snprintf(script, sizeof(script), "%s/ops/kafka.sh", src);
    char *argv[] = {script, "sasl-bootstrap", "--dir", (char *)kdir, NULL};
    if (proc_run(argv, NULL, g.sasl_bootstrap, sizeof(g.sasl_bootstrap), err, sizeof(err),
                 60000) != 0) {
        fprintf(stderr, "kafka.sh sasl-bootstrap: %s\n", err);
        return -1;
    }
    g.sasl_bootstrap[strcspn(g.sasl_bootstrap, "\n")] = '\0';
    snprintf(path, sizeof(path), "%s/sasl", kdir);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(line, sizeof(line), f) || fclose(f) != 0)
        return -1;
    line[strcspn(line, "\n")] = '\0';
    char *colon = strchr(line, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    snprintf(g.user, sizeof(g.user), "%s", line);
    snprintf(g.password, sizeof(g.password), "%s", colon + 1);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    testlog_stop(g.log);
    proc_rmtree(g.dir);
    return 0;
}

/* A --kafka-config file named name with the text, mode mode. */
static void config_file(const char *name, const char *text, int mode, char *path, size_t n) {
    snprintf(path, n, "%s/%s", g.dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, (mode_t)mode), 0);
}

static void sasl_config(const char *password, const char *name, char *path, size_t n) {
    char text[1024];
    snprintf(text, sizeof(text),
             "# the suite's SASL listener\nsecurity.protocol = SASL_PLAINTEXT\n"
             "sasl.mechanisms=PLAIN\nsasl.username=%s\nsasl.password=%s\n",
             g.user, password);
    config_file(name, text, 0600, path, n);
}

static void test_sasl_clients(void **state) {
    (void)state;
    char objlogd[512], conf[512], data[300], addr[64];
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    sasl_config(g.password, "kafka.conf", conf, sizeof(conf));
    snprintf(data, sizeof(data), "%s/view", g.dir);
    char *argv[] = {objlogd, "--brokers", g.sasl_bootstrap, "--kafka-config", conf, "--data",
                    data, "--listen", "127.0.0.1:0", "--no-create-topics", NULL};
    proc *p = proc_spawn(argv, NULL);
    assert_non_null(p);
    if (proc_wait_line(p, "OBJLOG_LISTEN=", addr, sizeof(addr), 120000) < 0 ||
        proc_wait_line(p, "OBJLOG_READY", NULL, 0, 30000) < 0) {
        proc_kill(p);
        fail_msg("objlogd on the SASL listeners did not become ready");
    }
    char url[128];
    snprintf(url, sizeof(url), "http://%s", addr);
    httpc *h = httpc_new(url);
    httpc_resp r;
    assert_int_equal(httpc_do(h, "PUT", "/v1/buckets/sasl-bucket", "{}", NULL, &r), 0);
    if (r.status != 200)
        fail_msg("PUT bucket: %ld %s", r.status, r.body);
    assert_int_equal(httpc_do(h, "PUT", "/v1/buckets/sasl-bucket/objects/k",
                              "{\"size\":4,\"etag\":\"through-sasl\"}", NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(httpc_do(h, "GET", "/v1/buckets/sasl-bucket/objects/k", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"etag\":\"through-sasl\""));
    /* a strong read fetched the end offset through the SASL listener */
    assert_non_null(strstr(r.headers, "x-objlog-applied:"));
    httpc_destroy(h);
    assert_int_equal(proc_stop(p, 30000), 0);
}

static void test_wrong_password(void **state) {
    (void)state;
    char objlogd[512], conf[512], data[300], out[2048], err[16384];
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    sasl_config("not-the-password", "wrong.conf", conf, sizeof(conf));
    snprintf(data, sizeof(data), "%s/wrong-view", g.dir);
    char *argv[] = {objlogd, "--brokers", g.sasl_bootstrap, "--kafka-config", conf, "--data",
                    data, "--listen", "127.0.0.1:0", "--no-create-topics", NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 120000);
    assert_int_not_equal(rc, 0);
    assert_null(strstr(out, "OBJLOG_READY"));
    if (!strstr(err, "Authentication failed"))
        fail_msg("no word of the failed authentication:\n%s", err);
    assert_null(strstr(err, "not-the-password")); /* a secret is never logged */
}

static void test_config_refused(void **state) {
    (void)state;
    char objlogd[512], conf[512], out[1024], err[4096];
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    static const struct {
        const char *text;
        int mode;
        const char *why;
    } rows[] = {
        {"sasl.password=x\n", 0644, "group or others may read it (mode 0644)"},
        {"group.id=mine\n", 0600, ":1: group.id is objlog's to set"},
        {"# ok\nbootstrap.servers=127.0.0.1:1\n", 0600, ":2: bootstrap.servers is objlog's"},
        {"no.such.property=1\n", 0600, ":1: no.such.property: No such configuration property"},
        {"security.protocol\n", 0600, ":1: expected key=value"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        config_file("bad.conf", rows[i].text, rows[i].mode, conf, sizeof(conf));
        char *argv[] = {objlogd, "--brokers", g.sasl_bootstrap, "--kafka-config", conf,
                        "--data", g.dir, "--listen", "127.0.0.1:0", NULL};
        int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 30000);
        if (rc != 1 || !strstr(err, rows[i].why))
            fail_msg("row %zu: exit %d: %s", i, rc, err);
    }
    /* with the embedded log: a usage error */
    char *argv[] = {objlogd, "--embedded", "--kafka-config", conf, NULL};
    assert_int_equal(proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 30000), 2);
    assert_non_null(strstr(err, "--kafka-config configures the clients of a real Kafka"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sasl_clients),
        cmocka_unit_test(test_wrong_password),
        cmocka_unit_test(test_config_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
