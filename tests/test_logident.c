/* test_logident.c: objlogd against real logs as an operator meets them.
 * Owns these checks, each against real processes:
 *
 *  topics (real Kafka only; skipped on the mock log, whose topic
 *  settings objlogd does not judge):
 *   - objlogd --brokers creates missing topics with the documented configs
 *     (schemas/topics.h), read back with DescribeConfigs: set on the topic,
 *     not inherited; replication 3 / min.insync.replicas 2 on 3 brokers,
 *     1 / 1 on one; objlog.control compacted; objlog.dlq kept.
 *   - existing topics with unsafe settings (finite retention, replication 1
 *     on 3 brokers, min.insync.replicas 1) make objlogd exit 1 naming topic
 *     and setting, unless --allow-unsafe-topics (starts, WARNING on stderr);
 *     a CreateTime timestamp is a warning only; `objlog topics create|check`
 *     say the same with exact output and exit codes.
 *  log identity (both logs):
 *   - a view built from log A refuses log B (exit 1, says to rebuild into an
 *     empty --data), its store is left as it was (same logical dump), it
 *     serves A again, and an empty --data on B starts fine.
 *   - `objlogd --embedded` restarted on the same --data: the view of the
 *     dead embedded log is discarded; old objects are gone (404); new writes
 *     at the offsets the old log used answer with their own etag, version
 *     and request id, 10 in a row on one partition.
 *  operator tools:
 *   - each view's default consumer group (objlogd-<host>-<FNV of its data
 *     dir>) holds committed offsets equal to what the view applied (its
 *     /v1/lag) and to the events written; kcat reads exactly those events;
 *     on real Kafka, Kafka's own group tool (ops/kafka.sh groups) describes
 *     both groups, each with every written partition at that CURRENT-OFFSET,
 *     LOG-END-OFFSET equal, LAG 0.
 *
 * Logs: A is the program's testlog (mock, or a 3-node KRaft cluster); B is
 * a second log started once in setup: another `objlogd --kafka-only`, or a
 * 1-node KRaft cluster of ops/kafka.sh under this test's temp dir. Every
 * process is a child (proc.h): it binds 127.0.0.1 and dies with the test. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "httpc.h"
#include "materializer.h"
#include "proc.h"
#include "testlog.h"

#define LT_PARTITIONS 8
#define LT_START_MS 90000

typedef struct lt {
    char root[256];
    char objlogd[512], objlog[512], script[512];
    testlog *a;
    char boot_a[1024];
    proc *b_mock;        /* log B on the mock log */
    proc *b_node;        /* log B on real Kafka: its one node */
    char b_dir[320];
    char boot_b[1024];
    int seq;             /* names fresh data dirs and stderr files */
} lt;

static lt T;

/* ---- small helpers ---- */

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A fresh path under the test's root: "<root>/<what>-<n>". */
static void fresh_path(const char *what, char *out, size_t size) {
    snprintf(out, size, "%s/%s-%d", T.root, what, ++T.seq);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&buf, &cap, '\0', f);
    fclose(f);
    if (n < 0) {
        free(buf);
        return strdup("");
    }
    return buf;
}

/* hay holds line as one whole line. */
/* 1 if what precedes p on its line is objlogd's log prefix
 * ("2026-11-23T20:09:14.123Z LEVEL ", then anything ending in a space). */
static int after_log_prefix(const char *hay, const char *p) {
    const char *ls = p;
    while (ls > hay && ls[-1] != '\n')
        ls--;
    return p - ls >= 25 && ls[4] == '-' && ls[10] == 'T' && ls[23] == 'Z' &&
           ls[24] == ' ' && p[-1] == ' ';
}

/* A whole line, or the message of a log line (after its prefix). */
static void assert_has_line(const char *hay, const char *line) {
    size_t n = strlen(line);
    for (const char *p = hay; (p = strstr(p, line)) != NULL; p++)
        if ((p == hay || p[-1] == '\n' || after_log_prefix(hay, p)) &&
            (p[n] == '\n' || p[n] == '\0'))
            return;
    fail_msg("no line \"%s\" in:\n%s", line, hay);
}

static void assert_contains(const char *hay, const char *needle) {
    if (!strstr(hay, needle))
        fail_msg("\"%s\" not in:\n%s", needle, hay);
}

/* The text after `after` up to the next space (or end), into out. */
static void word_after(const char *hay, const char *after, char *out, size_t size) {
    const char *p = strstr(hay, after);
    if (!p)
        fail_msg("\"%s\" not in:\n%s", after, hay);
    p += strlen(after);
    size_t n = strcspn(p, " \n");
    if (n >= size)
        n = size - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

/* ---- objlogd children ---- */

typedef struct view {
    proc *p;
    char url[128];
    char err[400];  /* its stderr, in a file */
} view;

/* Starts objlogd with args (after argv[0]), its stderr into a file, and
 * waits for OBJLOG_READY. The shell execs objlogd: same pid, same
 * death signal. */
static void view_start(view *v, char *const args[]) {
    char *argv[32] = {"/bin/sh", "-c", "e=$1; shift; exec \"$@\" 2>\"$e\"", "sh",
                      v->err, T.objlogd};
    int n = 6;
    fresh_path("stderr", v->err, sizeof(v->err));
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    v->p = proc_spawn(argv, NULL);
    assert_non_null(v->p);
    char listen[96];
    if (proc_wait_line(v->p, "OBJLOG_LISTEN=", listen, sizeof(listen), LT_START_MS) < 0 ||
        proc_wait_line(v->p, "OBJLOG_READY", NULL, 0, LT_START_MS) < 0) {
        char *e = slurp(v->err);
        fail_msg("objlogd did not start; stderr:\n%s", e);
    }
    snprintf(v->url, sizeof(v->url), "http://%s", listen);
}

static void view_start_brokers(view *v, const char *boot, const char *data,
                               const char *topic) {
    char *args[] = {"--brokers", (char *)boot, "--listen", "127.0.0.1:0", "--data",
                    (char *)data, "--topic", (char *)(topic ? topic : "objlog.events"),
                    NULL};
    view_start(v, args);
}

/* SIGTERM; requires exit 0; returns its stderr (caller frees). */
static char *view_stop(view *v) {
    int st = proc_stop(v->p, 30000);
    v->p = NULL;
    char *e = slurp(v->err);
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("objlogd ended with wait status %d; stderr:\n%s", st, e);
    return e;
}

/* Runs objlogd to completion (it is expected to exit on its own). */
static int objlogd_run(char *const args[], char *err, size_t err_size) {
    char *argv[32] = {T.objlogd};
    int n = 1;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char out[4096];
    return proc_run(argv, NULL, out, sizeof(out), err, err_size, LT_START_MS);
}

static int objlog_run(char *const args[], char *out, size_t out_size, char *err,
                      size_t err_size) {
    char *argv[32] = {T.objlog};
    int n = 1;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return proc_run(argv, NULL, out, out_size, err, err_size, 120000);
}

/* ---- HTTP ---- */

static json_t *http_json(httpc *c, const char *method, const char *path,
                         const char *body, const char *const *headers, long want,
                         httpc_resp *resp) {
    assert_int_equal(httpc_do(c, method, path, body, headers, resp), 0);
    if (resp->status != want)
        fail_msg("%s %s: status %ld (wanted %ld), body %s", method, path, resp->status,
                 want, resp->body);
    json_t *j = json_loads(resp->body, 0, NULL);
    if (!j)
        fail_msg("%s %s: not JSON: %s", method, path, resp->body);
    return j;
}

static const char *jstr(json_t *j, const char *k) {
    const char *s = json_string_value(json_object_get(j, k));
    if (!s)
        fail_msg("no string \"%s\" in %s", k, json_dumps(j, 0));
    return s;
}

static void expect_error(httpc *c, const char *path, long status, const char *code) {
    httpc_resp r;
    json_t *j = http_json(c, "GET", path, NULL, NULL, status, &r);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"),
                                                          "code")), code);
    json_decref(j);
}

/* PUT bucket (ack=applied); returns its token's partition. */
static int put_bucket(httpc *c, const char *bucket, int *offset) {
    char path[256];
    httpc_resp r;
    snprintf(path, sizeof(path), "/v1/buckets/%s?ack=applied", bucket);
    json_t *j = http_json(c, "PUT", path, "{}", NULL, 200, &r);
    int p = -1;
    long long o = -1;
    assert_int_equal(sscanf(jstr(j, "token"), "%d.%lld", &p, &o), 2);
    json_decref(j);
    if (offset)
        *offset = (int)o;
    return p;
}

/* PUT object with etag and request id rid (32 hex), ack=applied: the
 * answer must be this request's own outcome. Token into token. */
static void put_object(httpc *c, const char *bucket, const char *key, const char *etag,
                       const char *rid, char *version, size_t vsize, char *token,
                       size_t tsize) {
    char path[256], body[128], hdr[96];
    httpc_resp r;
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?ack=applied", bucket, key);
    snprintf(body, sizeof(body), "{\"size\":7,\"etag\":\"%s\"}", etag);
    snprintf(hdr, sizeof(hdr), "X-Objlog-Request-Id: %s", rid);
    const char *headers[] = {hdr, NULL};
    json_t *j = http_json(c, "PUT", path, body, headers, 200, &r);
    assert_string_equal(jstr(j, "etag"), etag);
    assert_string_equal(jstr(j, "request_id"), rid);
    assert_string_equal(jstr(j, "token"), r.token);
    assert_true(json_is_false(json_object_get(j, "delete_marker")));
    if (!*jstr(j, "version_id"))
        fail_msg("PUT %s: empty version_id: %s", path, r.body);
    if (version)
        snprintf(version, vsize, "%s", jstr(j, "version_id"));
    if (token)
        snprintf(token, tsize, "%s", r.token);
    json_decref(j);
}

static void expect_object(httpc *c, const char *bucket, const char *key,
                          const char *etag, const char *version) {
    char path[256];
    httpc_resp r;
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, key);
    json_t *j = http_json(c, "GET", path, NULL, NULL, 200, &r);
    assert_string_equal(jstr(j, "etag"), etag);
    if (version)
        assert_string_equal(jstr(j, "version_id"), version);
    json_decref(j);
}

/* ---- Kafka admin (librdkafka) ---- */

static rd_kafka_t *admin_client(const char *boot) {
    char tmp[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", boot, tmp, sizeof(tmp));
    rd_kafka_conf_set(c, "log_level", "0", tmp, sizeof(tmp));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, tmp, sizeof(tmp));
    assert_non_null(rk);
    return rk;
}

/* Partitions and replica count (every partition must agree) of topic; 0
 * partitions when missing. */
static int topic_layout(const char *boot, const char *topic, int *replicas) {
    rd_kafka_t *rk = admin_client(boot);
    const struct rd_kafka_metadata *md = NULL;
    int parts = 0;
    *replicas = 0;
    assert_int_equal(rd_kafka_metadata(rk, 1, NULL, &md, 30000), 0);
    for (int i = 0; i < md->topic_cnt; i++) {
        if (strcmp(md->topics[i].topic, topic) || md->topics[i].err)
            continue;
        parts = md->topics[i].partition_cnt;
        for (int p = 0; p < parts; p++) {
            int rc = md->topics[i].partitions[p].replica_cnt;
            if (p > 0 && rc != *replicas)
                fail_msg("%s: partitions with %d and %d replicas", topic, *replicas, rc);
            *replicas = rc;
        }
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_destroy(rk);
    return parts;
}

/* Describes topic's configs and requires each (name, value) of want to be
 * set on the topic itself (DYNAMIC_TOPIC_CONFIG), not inherited. */
static void expect_topic(const char *boot, const char *topic, int parts, int replicas,
                         const char *const *want) {
    int rf = 0;
    assert_int_equal(topic_layout(boot, topic, &rf), parts);
    assert_int_equal(rf, replicas);
    rd_kafka_t *rk = admin_client(boot);
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
    assert_non_null(ev);
    if (rd_kafka_event_error(ev))
        fail_msg("describe %s: %s", topic, rd_kafka_event_error_string(ev));
    size_t cnt = 0;
    const rd_kafka_ConfigResource_t **rs =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &cnt);
    assert_int_equal(cnt, 1);
    assert_int_equal(rd_kafka_ConfigResource_error(rs[0]), 0);
    size_t n = 0;
    const rd_kafka_ConfigEntry_t **e = rd_kafka_ConfigResource_configs(rs[0], &n);
    for (int w = 0; want[w]; w += 2) {
        int found = 0;
        for (size_t i = 0; i < n && !found; i++) {
            if (strcmp(rd_kafka_ConfigEntry_name(e[i]), want[w]))
                continue;
            found = 1;
            const char *v = rd_kafka_ConfigEntry_value(e[i]);
            if (!v || strcmp(v, want[w + 1]))
                fail_msg("topic %s: %s=%s, documented %s", topic, want[w], v ? v : "(null)",
                         want[w + 1]);
            if (rd_kafka_ConfigEntry_source(e[i]) != RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG)
                fail_msg("topic %s: %s=%s comes from %s, not from the topic", topic, want[w], v,
                         rd_kafka_ConfigSource_name(rd_kafka_ConfigEntry_source(e[i])));
        }
        if (!found)
            fail_msg("topic %s: no config %s", topic, want[w]);
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_ConfigResource_destroy(res);
    rd_kafka_destroy(rk);
}

typedef struct new_topic {
    const char *name;
    int partitions, replicas;
    const char *const *configs; /* name, value, ..., NULL */
} new_topic;

/* Creates topics as an operator would by hand, and waits until the
 * metadata shows them all. */
static void admin_create(const char *boot, const new_topic *t, int n) {
    rd_kafka_t *rk = admin_client(boot);
    rd_kafka_NewTopic_t *nts[8];
    char tmp[256];
    assert_true(n <= 8);
    for (int i = 0; i < n; i++) {
        nts[i] = rd_kafka_NewTopic_new(t[i].name, t[i].partitions, t[i].replicas, tmp,
                                       sizeof(tmp));
        assert_non_null(nts[i]);
        for (int k = 0; t[i].configs[k]; k += 2)
            assert_int_equal(rd_kafka_NewTopic_set_config(nts[i], t[i].configs[k],
                                                          t[i].configs[k + 1]), 0);
    }
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(o, 30000, tmp, sizeof(tmp));
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, nts, (size_t)n, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
    assert_non_null(ev);
    if (rd_kafka_event_error(ev))
        fail_msg("create topics: %s", rd_kafka_event_error_string(ev));
    size_t cnt = 0;
    const rd_kafka_topic_result_t **r =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
    for (size_t i = 0; i < cnt; i++)
        if (rd_kafka_topic_result_error(r[i]))
            fail_msg("create %s: %s", rd_kafka_topic_result_name(r[i]),
                     rd_kafka_topic_result_error_string(r[i]));
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(o);
    for (int i = 0; i < n; i++)
        rd_kafka_NewTopic_destroy(nts[i]);
    rd_kafka_destroy(rk);
    long long deadline = now_ms() + 60000;
    for (int i = 0; i < n; i++) {
        int rf;
        while (topic_layout(boot, t[i].name, &rf) != t[i].partitions) {
            if (now_ms() > deadline)
                fail_msg("topic %s not visible after 60 s", t[i].name);
            usleep(100 * 1000);
        }
    }
}

/* ---- log B ---- */

static int kafka_sh(char *const more[], char *out, size_t out_size, int timeout_ms) {
    char *argv[16] = {T.script};
    int n = 1;
    for (int i = 0; more[i] && n < 15; i++)
        argv[n++] = more[i];
    argv[n] = NULL;
    char err[8192];
    int rc = proc_run(argv, NULL, out, out_size, err, sizeof(err), timeout_ms);
    if (rc != 0)
        fprintf(stderr, "test_logident: ops/kafka.sh %s exited %d: %s\n", more[0], rc, err);
    return rc;
}

/* Two ports for node B in 32000..32767: below Linux's ephemeral range and
 * above the 20000..31999 that ops/kafka.sh draws from, so cluster A, started
 * meanwhile, cannot draw them before B binds them. */
static int b_ports(char *out, size_t size) {
    int got[2], n = 0;
    srand((unsigned)getpid());
    for (int tries = 0, p = 32000 + rand() % 700; tries < 768 && n < 2; tries++, p++) {
        int port = 32000 + (p - 32000) % 768;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            got[n++] = port;
        if (fd >= 0)
            close(fd);
    }
    if (n < 2)
        return -1;
    snprintf(out, size, "%d,%d", got[0], got[1]);
    return 0;
}

/* A 1-node KRaft cluster under the test's root, its JVM a child: formatted
 * and spawned here, waited for by kafka_b_wait (it boots while A starts). */
static int kafka_b_spawn(void) {
    char out[2048], ports[32];
    snprintf(T.b_dir, sizeof(T.b_dir), "%s/kafka-b", T.root);
    if (b_ports(ports, sizeof(ports)) < 0)
        return -1;
    char *init[] = {"init", "--dir", T.b_dir, "--nodes", "1", "--ports", ports, NULL};
    if (kafka_sh(init, out, sizeof(out), 300000) != 0)
        return -1;
    const char *b = strstr(out, "KAFKA_BOOTSTRAP=");
    if (!b)
        return -1;
    snprintf(T.boot_b, sizeof(T.boot_b), "%s", b + strlen("KAFKA_BOOTSTRAP="));
    T.boot_b[strcspn(T.boot_b, "\n")] = '\0';
    char *node[] = {T.script, "node", "--dir", T.b_dir, "--id", "1", NULL};
    char *env[] = {"KAFKA_HEAP_OPTS=-Xms64m -Xmx512m", NULL};
    T.b_node = proc_spawn(node, env);
    return T.b_node ? 0 : -1;
}

static int kafka_b_wait(void) {
    rd_kafka_t *rk = admin_client(T.boot_b);
    long long deadline = now_ms() + 180000;
    int rc = -1;
    while (rc < 0 && now_ms() < deadline) {
        const struct rd_kafka_metadata *md = NULL;
        if (!rd_kafka_metadata(rk, 0, NULL, &md, 2000)) {
            rc = md->broker_cnt >= 1 ? 0 : -1;
            rd_kafka_metadata_destroy(md);
        }
        if (rc < 0)
            usleep(200 * 1000);
    }
    rd_kafka_destroy(rk);
    if (rc < 0)
        fprintf(stderr, "test_logident: 1-node Kafka not serving (see %s/node-1)\n", T.b_dir);
    return rc;
}

static int start_mock_b(void) {
    char parts[16];
    snprintf(parts, sizeof(parts), "%d", LT_PARTITIONS);
    char *argv[] = {T.objlogd, "--kafka-only", "--partitions", parts, NULL};
    T.b_mock = proc_spawn(argv, NULL);
    if (!T.b_mock ||
        proc_wait_line(T.b_mock, "OBJLOG_BOOTSTRAP=", T.boot_b, sizeof(T.boot_b), 60000) < 0 ||
        proc_wait_line(T.b_mock, "OBJLOG_READY", NULL, 0, 60000) < 0)
        return -1;
    return 0;
}

static int setup(void **state) {
    (void)state;
    const char *src = getenv("OBJLOG_SRC_DIR");
    assert_non_null(src);
    assert_int_equal(proc_tmpdir(T.root, sizeof(T.root)), 0);
    proc_bin("query/objlogd", T.objlogd, sizeof(T.objlogd));
    proc_bin("ops/objlog", T.objlog, sizeof(T.objlog));
    snprintf(T.script, sizeof(T.script), "%s/ops/kafka.sh", src);
    /* Kafka's tools and node B start faster with C1 only (as testlog's). */
    setenv("KAFKA_JVM_OPTS", "-XX:TieredStopAtLevel=1", 0);
    long long t0 = now_ms();
    if (testlog_is_kafka())
        assert_int_equal(kafka_b_spawn(), 0);
    T.a = testlog_start(LT_PARTITIONS);
    assert_non_null(T.a);
    snprintf(T.boot_a, sizeof(T.boot_a), "%s", testlog_bootstrap(T.a));
    assert_int_equal(testlog_is_kafka() ? kafka_b_wait() : start_mock_b(), 0);
    fprintf(stderr, "test_logident: logs A and B (%s) up in %lld ms\n", testlog_kind(),
            now_ms() - t0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    long long t0 = now_ms();
    if (T.b_mock)
        proc_stop(T.b_mock, 10000);
    /* Both Kafka logs are thrown away: SIGKILL rather than a controlled
     * shutdown, in which the last nodes wait out a lost quorum. */
    if (T.b_node)
        proc_kill(T.b_node);
    testlog_stop(T.a); /* SIGKILLs its nodes (or leaves the borrowed cluster) */
    proc_rmtree(T.root);
    fprintf(stderr, "test_logident: logs stopped in %lld ms\n", now_ms() - t0);
    return 0;
}

/* Wall time of each case on stderr (information only, never asserted). */
static long long case_t0;
static int case_start(void **state) {
    (void)state;
    case_t0 = now_ms();
    return 0;
}
static int case_end(void **state) {
    (void)state;
    fprintf(stderr, "test_logident: case took %lld ms\n", now_ms() - case_t0);
    return 0;
}

/* ---- topics ---- */

static const char *const events_documented[] = {
    "cleanup.policy", "delete", "retention.ms", "-1", "retention.bytes", "-1",
    "message.timestamp.type", "LogAppendTime", "unclean.leader.election.enable", "false",
    NULL, NULL, NULL};

/* The events configs plus min.insync.replicas=isr. */
static void events_want(const char *isr, const char **out) {
    int n = 0;
    for (; events_documented[n]; n++)
        out[n] = events_documented[n];
    out[n++] = "min.insync.replicas";
    out[n++] = isr;
    out[n] = NULL;
}

static void topics_made_by_objlogd_have_documented_configs(void **state) {
    (void)state;
    if (!testlog_is_kafka())
        skip(); /* the mock cluster has no topic configs to check */
    char data[400], line[2048];
    view v;
    /* On 3 brokers: objlogd makes the missing events topic. */
    fresh_path("made", data, sizeof(data));
    view_start_brokers(&v, T.boot_a, data, "logident.made");
    char *e = view_stop(&v);
    assert_has_line(e, "created topic logident.made: 8 partitions, replication 3");
    free(e);
    const char *want[16];
    events_want("2", want);
    expect_topic(T.boot_a, "logident.made", 8, 3, want);
    /* objlog.control and objlog.dlq of the 3-node log (testlog made them with
     * `objlog topics create`, the same code objlogd runs). */
    static const char *const control3[] = {"cleanup.policy", "compact",
        "min.insync.replicas", "2", "unclean.leader.election.enable", "false", NULL};
    static const char *const dlq3[] = {"cleanup.policy", "delete", "retention.ms", "-1",
        "min.insync.replicas", "2", NULL};
    expect_topic(T.boot_a, "objlog.control", 1, 3, control3);
    expect_topic(T.boot_a, "objlog.dlq", 1, 3, dlq3);

    /* On the empty 1-node log B: objlogd makes all three. */
    int rf;
    assert_int_equal(topic_layout(T.boot_b, "objlog.events", &rf), 0);
    fresh_path("made", data, sizeof(data));
    view_start_brokers(&v, T.boot_b, data, NULL);
    e = view_stop(&v);
    assert_has_line(e, "created topic objlog.events: 8 partitions, replication 1");
    assert_has_line(e, "created topic objlog.control: 1 partition, replication 1");
    assert_has_line(e, "created topic objlog.dlq: 1 partition, replication 1");
    free(e);
    events_want("1", want);
    expect_topic(T.boot_b, "objlog.events", 8, 1, want);
    static const char *const control1[] = {"cleanup.policy", "compact",
        "min.insync.replicas", "1", "unclean.leader.election.enable", "false", NULL};
    static const char *const dlq1[] = {"cleanup.policy", "delete", "retention.ms", "-1",
        "min.insync.replicas", "1", NULL};
    expect_topic(T.boot_b, "objlog.control", 1, 1, control1);
    expect_topic(T.boot_b, "objlog.dlq", 1, 1, dlq1);

    /* `objlog topics create` makes a missing events topic and checks. */
    char out[8192], err[8192];
    char *create[] = {"topics", "create", "--brokers", T.boot_a, "--topic", "logident.cli",
                      NULL};
    if (objlog_run(create, out, sizeof(out), err, sizeof(err)) != 0)
        fail_msg("objlog topics create: %s%s", out, err);
    assert_string_equal(out, "created topic logident.cli: 8 partitions, replication 3\n"
                             "topics logident.cli, objlog.control, objlog.dlq: safe\n");
    events_want("2", want);
    expect_topic(T.boot_a, "logident.cli", 8, 3, want);
    /* Again: nothing to make. */
    if (objlog_run(create, out, sizeof(out), err, sizeof(err)) != 0)
        fail_msg("objlog topics create: %s%s", out, err);
    snprintf(line, sizeof(line), "all three topics exist on %s\n"
             "topics logident.cli, objlog.control, objlog.dlq: safe\n", T.boot_a);
    assert_string_equal(out, line);
    char *check[] = {"topics", "check", "--brokers", T.boot_a, "--topic", "logident.made",
                     NULL};
    assert_int_equal(objlog_run(check, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "topics logident.made, objlog.control, objlog.dlq: safe\n");
}

static const char *const cfg_retention[] = {"retention.ms", "604800000",
    "message.timestamp.type", "LogAppendTime", "min.insync.replicas", "2", NULL};
static const char *const cfg_rf1[] = {"retention.ms", "-1", "retention.bytes", "-1",
    "message.timestamp.type", "LogAppendTime", "min.insync.replicas", "1", NULL};
static const char *const cfg_isr1[] = {"retention.ms", "-1", "retention.bytes", "-1",
    "message.timestamp.type", "LogAppendTime", "min.insync.replicas", "1", NULL};
static const char *const cfg_ts[] = {"retention.ms", "-1", "retention.bytes", "-1",
    "message.timestamp.type", "CreateTime", "min.insync.replicas", "2", NULL};

#define MSG_RETENTION "unsafe: topic bad.retention: retention.ms=604800000 is finite: " \
    "views are rebuilt by replaying the whole log; set retention.ms=-1"
#define MSG_RF1 "unsafe: topic bad.rf1: replication factor 1 on a 3-broker cluster: " \
    "losing one broker can lose acknowledged writes; recreate it with replication 3"
#define MSG_ISR1 "unsafe: topic bad.isr1: min.insync.replicas=1 with 3 replicas: an ack " \
    "may rest on one broker; set min.insync.replicas=2"
#define MSG_TS "warning: topic bad.ts: message.timestamp.type=CreateTime: the dedup " \
    "window follows producers' clocks; LogAppendTime makes it the broker's"
#define MSG_REFUSE "ERROR objlogd: refusing to start on 1 unsafe topic setting (above); fix " \
    "them, or start with --allow-unsafe-topics"

/* objlogd --brokers A --topic topic with a fresh --data: exit status and
 * stderr. Nothing is created in data when refused. */
static int objlogd_on_topic(const char *topic, char *err, size_t err_size, char *data,
                            size_t data_size) {
    fresh_path("unsafe", data, data_size);
    char *args[] = {"--brokers", T.boot_a, "--topic", (char *)topic, "--listen",
                    "127.0.0.1:0", "--data", data, NULL};
    return objlogd_run(args, err, err_size);
}

static void unsafe_topics_refused_by_name_unless_allowed(void **state) {
    (void)state;
    if (!testlog_is_kafka())
        skip(); /* objlogd does not judge an embedded log's topics */
    const new_topic bad[] = {
        {"bad.retention", 8, 3, cfg_retention},
        {"bad.rf1", 8, 1, cfg_rf1},
        {"bad.isr1", 8, 3, cfg_isr1},
        {"bad.ts", 8, 3, cfg_ts},
    };
    admin_create(T.boot_a, bad, 4);
    char err[16384], out[8192], data[400], line[2048];
    struct stat st;

    /* Finite retention: exit 1, the topic and setting named, nothing made. */
    assert_int_equal(objlogd_on_topic("bad.retention", err, sizeof(err), data,
                                      sizeof(data)), 1);
    assert_has_line(err, "ERROR objlogd: " MSG_RETENTION);
    assert_has_line(err, MSG_REFUSE);
    assert_int_equal(stat(data, &st), -1); /* refused before any store */
    /* Replication 1 on 3 brokers. */
    assert_int_equal(objlogd_on_topic("bad.rf1", err, sizeof(err), data, sizeof(data)), 1);
    assert_has_line(err, "ERROR objlogd: " MSG_RF1);
    assert_has_line(err, MSG_REFUSE);
    /* min.insync.replicas 1 with 3 replicas. */
    assert_int_equal(objlogd_on_topic("bad.isr1", err, sizeof(err), data, sizeof(data)), 1);
    assert_has_line(err, "ERROR objlogd: " MSG_ISR1);
    assert_has_line(err, MSG_REFUSE);

    /* --allow-unsafe-topics: it starts, with a WARNING naming the setting. */
    view v;
    fresh_path("unsafe", data, sizeof(data));
    char *allow[] = {"--brokers", T.boot_a, "--topic", "bad.retention", "--listen",
                     "127.0.0.1:0", "--data", data, "--allow-unsafe-topics", NULL};
    view_start(&v, allow);
    httpc *c = httpc_new(v.url);
    httpc_resp r;
    assert_int_equal(httpc_do(c, "GET", "/healthz", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    httpc_destroy(c);
    char *e = view_stop(&v);
    assert_has_line(e, "WARN objlogd: " MSG_RETENTION);
    assert_null(strstr(e, "refusing"));
    free(e);

    /* A CreateTime timestamp is reported as a warning; objlogd starts
     * (topics.c: the dedup window then follows producers' clocks, replay
     * stays exact). */
    fresh_path("unsafe", data, sizeof(data));
    view_start_brokers(&v, T.boot_a, data, "bad.ts");
    e = view_stop(&v);
    assert_has_line(e, "WARN objlogd: " MSG_TS);
    assert_null(strstr(e, "refusing"));
    free(e);

    /* `objlog topics check` reports the same, exit 1 on unsafe. */
    static const struct {
        const char *topic, *msg;
    } rows[] = {{"bad.retention", MSG_RETENTION}, {"bad.rf1", MSG_RF1},
                {"bad.isr1", MSG_ISR1}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char *check[] = {"topics", "check", "--brokers", T.boot_a, "--topic",
                         (char *)rows[i].topic, NULL};
        assert_int_equal(objlog_run(check, out, sizeof(out), err, sizeof(err)), 1);
        snprintf(line, sizeof(line), "%s\nobjlog: topics check: UnsafeTopics: 1 unsafe setting\n",
                 rows[i].msg);
        assert_string_equal(err, line);
        assert_string_equal(out, "");
    }
    char *check_ts[] = {"topics", "check", "--brokers", T.boot_a, "--topic", "bad.ts", NULL};
    assert_int_equal(objlog_run(check_ts, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, MSG_TS "\ntopics bad.ts, objlog.control, objlog.dlq: safe\n");
    /* `create` never changes an existing topic: it reports and fails. */
    char *create[] = {"topics", "create", "--brokers", T.boot_a, "--topic",
                      "bad.retention", NULL};
    assert_int_equal(objlog_run(create, out, sizeof(out), err, sizeof(err)), 1);
    snprintf(line, sizeof(line), "all three topics exist on %s\n", T.boot_a);
    assert_string_equal(out, line);
    assert_string_equal(err, MSG_RETENTION "\nobjlog: topics create: UnsafeTopics: 1 unsafe setting\n");
    const char *want[] = {"retention.ms", "604800000", NULL};
    expect_topic(T.boot_a, "bad.retention", 8, 3, want);
}

/* ---- log identity ---- */

static char *dump_store(const char *dir) {
    char err[512], *buf = NULL;
    size_t len = 0;
    objlog_store *s = objlog_store_open(dir, err, sizeof(err));
    if (!s)
        fail_msg("%s", err);
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    if (objlog_store_dump(s, f, err, sizeof(err)) != 0)
        fail_msg("dump %s: %s", dir, err);
    fclose(f);
    objlog_store_close(s);
    return buf;
}

static int is_hex32(const char *s) {
    return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

static void view_of_another_log_refused_and_untouched(void **state) {
    (void)state;
    const char *kind = testlog_is_kafka() ? "kafka" : "embedded";
    char data[400], line[1024], id_a[64], id_b[64], err[16384];
    fresh_path("viewA", data, sizeof(data));
    view v;
    view_start_brokers(&v, T.boot_a, data, NULL);
    httpc *c = httpc_new(v.url);
    char version[64];
    put_bucket(c, "ident", NULL);
    put_object(c, "ident", "kept", "a-e1", "0a0000000000000000000000000000a1", version,
               sizeof(version), NULL, 0);
    httpc_destroy(c);
    char *e = view_stop(&v);
    snprintf(line, sizeof(line), "objlogd: view %s starts on log ", data);
    word_after(e, line, id_a, sizeof(id_a));
    assert_true(is_hex32(id_a));
    free(e);
    char *before = dump_store(data);

    /* The same --data against log B: refused, with what to do. */
    char *args[] = {"--brokers", T.boot_b, "--listen", "127.0.0.1:0", "--data", data, NULL};
    assert_int_equal(objlogd_run(args, err, sizeof(err)), 1);
    snprintf(line, sizeof(line), "objlogd: --data %s: this view was built from log %s (%s, "
             "Kafka cluster ", data, id_a, kind);
    assert_contains(err, line);
    word_after(err, "but the brokers serve log ", id_b, sizeof(id_b));
    assert_true(is_hex32(id_b));
    assert_string_not_equal(id_a, id_b);
    assert_contains(err, "start with an empty --data to rebuild the view by replaying "
                         "this log\n");
    assert_null(strstr(err, "OBJLOG_READY"));

    /* The store is exactly as it was, still bound to A. */
    char *after = dump_store(data);
    assert_string_equal(before, after);
    free(before);
    free(after);
    char serr[512];
    objlog_store *s = objlog_store_open(data, serr, sizeof(serr));
    assert_non_null(s);
    objlog_log_identity have;
    assert_int_equal(objlog_store_log_identity(s, &have), 1);
    assert_string_equal(have.log_id, id_a);
    assert_int_equal(have.embedded, !testlog_is_kafka());
    objlog_store_close(s);

    /* Back on A it continues and serves the object. */
    view_start_brokers(&v, T.boot_a, data, NULL);
    c = httpc_new(v.url);
    expect_object(c, "ident", "kept", "a-e1", version);
    httpc_destroy(c);
    e = view_stop(&v);
    snprintf(line, sizeof(line), "objlogd: view %s continues log %s (%s, Kafka cluster ",
             data, id_a, kind);
    assert_contains(e, line);
    free(e);

    /* An empty --data on B is what the message asks for: it starts on B,
     * which never held the object. */
    char fresh[400];
    fresh_path("viewB", fresh, sizeof(fresh));
    view_start_brokers(&v, T.boot_b, fresh, NULL);
    c = httpc_new(v.url);
    expect_error(c, "/v1/buckets/ident/objects/kept", 404, "NoSuchBucket");
    httpc_destroy(c);
    e = view_stop(&v);
    snprintf(line, sizeof(line), "objlogd: view %s starts on log %s (%s, Kafka cluster ",
             fresh, id_b, kind);
    assert_contains(e, line);
    free(e);
}

#define EMB_OLD 8  /* writes to the first embedded log's partition */
#define EMB_NEW 10 /* writes after the restart, over the same offsets and past them */

/* --cluster on the embedded log: refused at start with what to do, never a
 * node whose writes time out and whose stop hangs on the group. */
static void cluster_on_embedded_log_refused(void **state) {
    (void)state;
    if (testlog_is_kafka())
        return; /* a real Kafka serves clusters: test_cluster */
    char data[600], err[4096];
    fresh_path("data", data, sizeof(data));
    char *args[] = {"--brokers", T.boot_a, "--cluster", "c1", "--listen", "127.0.0.1:0",
                    "--data", data, NULL};
    long long t0 = now_ms();
    assert_int_equal(objlogd_run(args, err, sizeof(err)), 1);
    assert_contains(err, "--cluster c1 needs a real Kafka: ");
    assert_contains(err, "librdkafka's mock cluster mockCluster");
    assert_true(now_ms() - t0 < LT_START_MS);
}

static void embedded_start(view *v, const char *data) {
    char *args[] = {"--embedded", "--data", (char *)data, "--partitions", "2", "--listen",
                    "127.0.0.1:0", "--fetch-wait-ms", "2", NULL};
    view_start(v, args);
}

static void embedded_restart_discards_old_view(void **state) {
    (void)state;
    char data[400], line[1024], key[32], etag[32], rid[40], token[160], want[64];
    char id1[64], id2[64];
    fresh_path("embedded", data, sizeof(data));
    view v;
    embedded_start(&v, data);
    httpc *c = httpc_new(v.url);
    int off = -1, part = put_bucket(c, "emb", &off);
    assert_int_equal(off, 0);
    for (int i = 1; i <= EMB_OLD; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(etag, sizeof(etag), "old-e%d", i);
        snprintf(rid, sizeof(rid), "01000000000000000000000000%06d", i);
        put_object(c, "emb", key, etag, rid, NULL, 0, token, sizeof(token));
        snprintf(want, sizeof(want), "%d.%d", part, i);
        assert_string_equal(token, want);
    }
    httpc_destroy(c);
    char *e = view_stop(&v);
    snprintf(line, sizeof(line), "objlogd: view %s starts on log ", data);
    word_after(e, line, id1, sizeof(id1));
    free(e);

    /* Same --data, a new embedded log: the old view is gone. */
    embedded_start(&v, data);
    c = httpc_new(v.url);
    expect_error(c, "/v1/buckets/emb", 404, "NoSuchBucket");
    expect_error(c, "/v1/buckets/emb/objects/k1", 404, "NoSuchBucket");
    assert_int_equal(put_bucket(c, "emb", &off), part);
    assert_int_equal(off, 0);
    expect_error(c, "/v1/buckets/emb/objects/k1", 404, "NoSuchKey");
    /* New writes land on offsets 1..8 the old log used, then past them:
     * each answers with its own outcome. */
    for (int i = 1; i <= EMB_NEW; i++) {
        char version[64];
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(etag, sizeof(etag), "new-e%d", i);
        snprintf(rid, sizeof(rid), "02000000000000000000000000%06d", i);
        put_object(c, "emb", key, etag, rid, version, sizeof(version), token, sizeof(token));
        snprintf(want, sizeof(want), "%d.%d", part, i);
        assert_string_equal(token, want);
        expect_object(c, "emb", key, etag, version);
    }
    httpc_resp r;
    json_t *j = http_json(c, "GET", "/v1/buckets/emb/objects", NULL, NULL, 200, &r);
    assert_int_equal(json_integer_value(json_object_get(j, "key_count")), EMB_NEW);
    json_decref(j);
    httpc_destroy(c);
    e = view_stop(&v);
    snprintf(line, sizeof(line), "objlogd: --data %s held a view of an earlier embedded "
             "log, which died with its process; discarding it", data);
    assert_has_line(e, line);
    snprintf(line, sizeof(line), "objlogd: view %s starts on log ", data);
    word_after(e, line, id2, sizeof(id2));
    assert_true(is_hex32(id1) && is_hex32(id2));
    assert_string_not_equal(id1, id2);
    free(e);
}

/* ---- consumer groups and kcat ---- */

/* objlogd's default group for data (query/objlogd.c, default_group). */
static void expected_group(const char *data, char *out, size_t size) {
    char host[128] = "localhost", path[PATH_MAX];
    gethostname(host, sizeof(host) - 1);
    assert_non_null(realpath(data, path));
    uint32_t h = 2166136261u;
    for (const char *p = path; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    snprintf(out, size, "objlogd-%s-%08x", host, h);
}

/* Committed offsets of group on objlog.events of log B, per partition
 * (-1 when none). */
static void committed(const char *group, long long out[LT_PARTITIONS]) {
    char tmp[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", T.boot_b, tmp, sizeof(tmp));
    rd_kafka_conf_set(conf, "group.id", group, tmp, sizeof(tmp));
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", tmp, sizeof(tmp));
    rd_kafka_conf_set(conf, "log_level", "0", tmp, sizeof(tmp));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, tmp, sizeof(tmp));
    assert_non_null(rk);
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(LT_PARTITIONS);
    for (int p = 0; p < LT_PARTITIONS; p++)
        rd_kafka_topic_partition_list_add(tp, "objlog.events", p);
    rd_kafka_resp_err_t err = rd_kafka_committed(rk, tp, 30000);
    for (int p = 0; p < LT_PARTITIONS; p++)
        out[p] = err ? -2 : tp->elems[p].offset >= 0 ? tp->elems[p].offset : -1;
    rd_kafka_topic_partition_list_destroy(tp);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

/* The view's applied offset per partition (GET /v1/lag), with lag 0. */
static void applied(const char *url, long long out[LT_PARTITIONS]) {
    httpc *c = httpc_new(url);
    httpc_resp r;
    json_t *j = http_json(c, "GET", "/v1/lag", NULL, NULL, 200, &r);
    json_t *parts = json_object_get(j, "partitions");
    assert_int_equal(json_array_size(parts), LT_PARTITIONS);
    for (int p = 0; p < LT_PARTITIONS; p++) {
        json_t *o = json_array_get(parts, (size_t)p);
        assert_int_equal(json_integer_value(json_object_get(o, "partition")), p);
        assert_int_equal(json_integer_value(json_object_get(o, "lag_messages")), 0);
        out[p] = json_integer_value(json_object_get(o, "applied"));
    }
    json_decref(j);
    httpc_destroy(c);
}

/* Splits a whitespace-separated line into at most max fields (in place). */
static int split_ws(char *s, char **f, int max) {
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(s, " \t", &save); t && n < max; t = strtok_r(NULL, " \t", &save))
        f[n++] = t;
    return n;
}

static void consumer_groups_and_kcat_show_applied_positions(void **state) {
    (void)state;
    char d1[400], d2[400], g1[256], g2[256], line[512];
    fresh_path("group", d1, sizeof(d1));
    fresh_path("group", d2, sizeof(d2));
    view v1, v2;
    view_start_brokers(&v1, T.boot_b, d1, NULL);
    view_start_brokers(&v2, T.boot_b, d2, NULL);
    expected_group(d1, g1, sizeof(g1));
    expected_group(d2, g2, sizeof(g2));
    assert_string_not_equal(g1, g2);

    /* 4 buckets with 5 objects each through v1: 24 events; the tokens say
     * where each landed. */
    long long count[LT_PARTITIONS] = {0};
    int events = 0;
    httpc *c = httpc_new(v1.url);
    for (int b = 0; b < 4; b++) {
        char bucket[32], key[32], etag[32], rid[40], token[160];
        snprintf(bucket, sizeof(bucket), "grp%d", b);
        int off, p = put_bucket(c, bucket, &off);
        assert_int_equal(off, count[p]);
        count[p]++, events++;
        for (int k = 0; k < 5; k++) {
            snprintf(key, sizeof(key), "o%d", k);
            snprintf(etag, sizeof(etag), "g%d-%d", b, k);
            snprintf(rid, sizeof(rid), "03000000000000000000000000%03d%03d", b, k);
            put_object(c, bucket, key, etag, rid, NULL, 0, token, sizeof(token));
            snprintf(line, sizeof(line), "%d.%lld", p, count[p]);
            assert_string_equal(token, line);
            count[p]++, events++;
        }
    }
    httpc_destroy(c);
    assert_int_equal(events, 24);

    /* v2 catches up: a strong LIST fences each bucket's partition. */
    c = httpc_new(v2.url);
    for (int b = 0; b < 4; b++) {
        char path[128];
        httpc_resp r;
        snprintf(path, sizeof(path), "/v1/buckets/grp%d/objects?timeout_ms=30000", b);
        json_t *j = http_json(c, "GET", path, NULL, NULL, 200, &r);
        assert_int_equal(json_integer_value(json_object_get(j, "key_count")), 5);
        json_decref(j);
    }
    httpc_destroy(c);

    /* Both views applied exactly the written events, and each one's group
     * holds those positions (commits are async after the write: wait). */
    const char *groups[2] = {g1, g2};
    const char *urls[2] = {v1.url, v2.url};
    for (int g = 0; g < 2; g++) {
        long long ap[LT_PARTITIONS], co[LT_PARTITIONS];
        applied(urls[g], ap);
        for (int p = 0; p < LT_PARTITIONS; p++)
            assert_int_equal(ap[p], count[p]);
        long long deadline = now_ms() + 60000;
        for (;;) {
            committed(groups[g], co);
            int same = 1;
            for (int p = 0; p < LT_PARTITIONS; p++)
                same &= co[p] == (count[p] ? count[p] : -1);
            if (same)
                break;
            if (now_ms() > deadline) {
                for (int p = 0; p < LT_PARTITIONS; p++)
                    fprintf(stderr, "group %s partition %d: committed %lld, applied %lld\n",
                            groups[g], p, co[p], count[p]);
                fail_msg("group %s did not commit the applied offsets", groups[g]);
            }
            usleep(100 * 1000);
        }
    }
    char *e1 = slurp(v1.err), *e2 = slurp(v2.err);
    snprintf(line, sizeof(line), "objlogd: consumer group %s (committed positions for lag "
             "tools)", g1);
    assert_has_line(e1, line);
    snprintf(line, sizeof(line), "objlogd: consumer group %s (committed positions for lag "
             "tools)", g2);
    assert_has_line(e2, line);
    free(e1);
    free(e2);

    /* kcat reads the log: exactly the written events, at those offsets. */
    static char out[65536];
    char err[8192];
    char *kcat[] = {"/usr/bin/kcat", "-b", T.boot_b, "-C", "-t", "objlog.events", "-o",
                    "beginning", "-e", "-q", "-f", "%p %o\n", NULL};
    assert_int_equal(proc_run(kcat, NULL, out, sizeof(out), err, sizeof(err), 60000), 0);
    long long seen[LT_PARTITIONS] = {0};
    int lines = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"), lines++) {
        int p;
        long long o;
        assert_int_equal(sscanf(l, "%d %lld", &p, &o), 2);
        assert_true(p >= 0 && p < LT_PARTITIONS);
        assert_int_equal(o, seen[p]); /* in order, from 0, no gap */
        seen[p]++;
    }
    assert_int_equal(lines, events);
    for (int p = 0; p < LT_PARTITIONS; p++)
        assert_int_equal(seen[p], count[p]);

    if (testlog_is_kafka()) {
        /* Kafka's own group tool finds both groups, each with one table
         * of every written partition at the applied offset and LAG 0 (a
         * group of assign()ed consumers has no members; one JVM for both). */
        char *desc[] = {"groups", "--dir", T.b_dir, "--describe", "--group", g1,
                        "--group", g2, NULL};
        assert_int_equal(kafka_sh(desc, out, sizeof(out), 120000), 0);
        int rows[2] = {0, 0}, headers = 0;
        long long total[2] = {0, 0};
        char *save = NULL;
        for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            char *f[16];
            char copy[512];
            snprintf(copy, sizeof(copy), "%s", l);
            int n = split_ws(copy, f, 16);
            if (n == 0)
                continue;
            if (!strcmp(f[0], "GROUP")) {
                assert_int_equal(n, 9);
                const char *cols[] = {"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                      "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                                      "CLIENT-ID"};
                for (int i = 0; i < 9; i++)
                    assert_string_equal(f[i], cols[i]);
                headers++;
                continue;
            }
            int g = !strcmp(f[0], g1) ? 0 : !strcmp(f[0], g2) ? 1 : -1;
            if (g < 0)
                continue; /* "Consumer group ... has no active members." */
            assert_int_equal(n, 9);
            assert_string_equal(f[1], "objlog.events");
            int p = atoi(f[2]);
            assert_true(p >= 0 && p < LT_PARTITIONS);
            snprintf(line, sizeof(line), "%lld", count[p]);
            assert_string_equal(f[3], line); /* CURRENT-OFFSET = applied */
            assert_string_equal(f[4], line); /* LOG-END-OFFSET */
            assert_string_equal(f[5], "0");  /* LAG */
            assert_string_equal(f[6], "-");  /* no active member */
            rows[g]++;
            total[g] += count[p];
        }
        int written = 0;
        for (int p = 0; p < LT_PARTITIONS; p++)
            written += count[p] > 0;
        assert_int_equal(headers, 2);
        for (int g = 0; g < 2; g++) {
            assert_int_equal(rows[g], written);
            assert_int_equal(total[g], events);
        }
    }
    free(view_stop(&v1));
    free(view_stop(&v2));
}

#define LT_CASE(f) cmocka_unit_test_setup_teardown(f, case_start, case_end)

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    /* The topics case runs first: on real Kafka it is the one that finds
     * log B empty and has objlogd create all three topics there. */
    const struct CMUnitTest tests[] = {
        LT_CASE(topics_made_by_objlogd_have_documented_configs),
        LT_CASE(unsafe_topics_refused_by_name_unless_allowed),
        LT_CASE(view_of_another_log_refused_and_untouched),
        LT_CASE(embedded_restart_discards_old_view),
        LT_CASE(cluster_on_embedded_log_refused),
        LT_CASE(consumer_groups_and_kcat_show_applied_positions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
