/* testlog.c: see testlog.h. The mock log is one `objlogd --kafka-only`
 * child; the Kafka log is N `ops/kafka.sh node` children (each execs its
 * JVM, so the child's pid is the JVM's) over a directory that
 * `ops/kafka.sh init` formatted, or the ctest fixture's cluster
 * (OBJLOG_TEST_KAFKA_DIR), which a test borrows: it empties the cluster of
 * every topic before making its own and never signals a node. */
#define _GNU_SOURCE
#include "testlog.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "proc.h"

#define TESTLOG_MAX_NODES 5
#define TESTLOG_MAX_TOPICS 256

struct testlog {
    int kafka;
    int shared;                  /* the fixture's cluster: not ours to stop */
    char dir[256];
    char script[512];
    char bootstrap[1024];
    int nodes;
    proc *mock;
    proc *node[TESTLOG_MAX_NODES + 1];
    int up[TESTLOG_MAX_NODES + 1];  /* shared: the fixture runs node i */
};

int testlog_is_kafka(void) {
    const char *v = getenv("OBJLOG_TEST_LOG");
    return v && strcmp(v, "kafka") == 0;
}

const char *testlog_kind(void) { return testlog_is_kafka() ? "kafka" : "mock"; }

static testlog *start_mock(testlog *l, int partitions) {
    char objlogd[512], parts[16];
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    snprintf(parts, sizeof(parts), "%d", partitions);
    char *argv[] = {objlogd, "--kafka-only", "--partitions", parts, NULL};
    l->mock = proc_spawn(argv, NULL);
    if (!l->mock ||
        proc_wait_line(l->mock, "OBJLOG_BOOTSTRAP=", l->bootstrap, sizeof(l->bootstrap),
                       60000) < 0 ||
        proc_wait_line(l->mock, "OBJLOG_READY", NULL, 0, 60000) < 0) {
        fprintf(stderr, "testlog: objlogd --kafka-only did not start\n");
        testlog_stop(l);
        return NULL;
    }
    return l;
}

/* Runs `ops/kafka.sh CMD --dir D [more]`; stdout into out. 0 or -1. */
static int kafka_sh(testlog *l, const char *cmd, char *const more[], char *out,
                    size_t out_size, int timeout_ms) {
    char *argv[16] = {l->script, (char *)cmd, "--dir", l->dir};
    int n = 4;
    for (int i = 0; more && more[i] && n < 15; i++)
        argv[n++] = more[i];
    argv[n] = NULL;
    char err[8192];
    int rc = proc_run(argv, NULL, out, out_size, err, sizeof(err), timeout_ms);
    if (rc != 0)
        fprintf(stderr, "testlog: ops/kafka.sh %s exited %d: %s\n", cmd, rc, err);
    return rc == 0 ? 0 : -1;
}

static int create_topics(testlog *l, int partitions);
static int empty_cluster(testlog *l);

int testlog_node_start(testlog *l, int node) {
    if (!l->kafka || l->shared || node < 1 || node > l->nodes || l->node[node])
        return -1;
    char id[16];
    snprintf(id, sizeof(id), "%d", node);
    char *argv[] = {l->script, "node", "--dir", l->dir, "--id", id, NULL};
    /* Tests want a quick start more than peak JIT throughput: C1 only
     * halves a 3-node start on 2 cores. */
    char *env[] = {"KAFKA_JVM_OPTS=-XX:TieredStopAtLevel=1",
                   "KAFKA_HEAP_OPTS=-Xms64m -Xmx512m", NULL};
    l->node[node] = proc_spawn(argv, env);
    return l->node[node] ? 0 : -1;
}

static testlog *start_kafka(testlog *l, int partitions) {
    const char *src = getenv("OBJLOG_SRC_DIR");
    const char *n = getenv("OBJLOG_TEST_KAFKA_NODES");
    l->nodes = n && *n ? atoi(n) : 3;
    if (!src || l->nodes < 1 || l->nodes > TESTLOG_MAX_NODES ||
        proc_tmpdir(l->dir, sizeof(l->dir)) < 0) {
        fprintf(stderr, "testlog: needs OBJLOG_SRC_DIR and 1..%d nodes\n",
                TESTLOG_MAX_NODES);
        free(l);
        return NULL;
    }
    snprintf(l->script, sizeof(l->script), "%s/ops/kafka.sh", src);
    char nodes[16], out[1024];
    snprintf(nodes, sizeof(nodes), "%d", l->nodes);
    /* Faster failure detection than Kafka's defaults (a SIGSTOPped
     * broker leaves the ISR after 10 s, not 30 s), same semantics. */
    char *init[] = {"--nodes", nodes, "--set", "replica.lag.time.max.ms=10000",
                    "--set", "broker.session.timeout.ms=6000", NULL};
    if (kafka_sh(l, "init", init, out, sizeof(out), 300000) < 0)
        goto fail;
    for (int i = 1; i <= l->nodes; i++)
        if (testlog_node_start(l, i) < 0)
            goto fail;
    if (testlog_wait_ready(l, 180000) < 0 || create_topics(l, partitions) < 0)
        goto fail;
    return l;
fail:
    testlog_stop(l);
    return NULL;
}

/* The fixture's cluster (tests/CMakeLists.txt): its nodes belong to the
 * fixture, so this test only counts them, waits for them and empties the
 * cluster. Tests that borrow it run one at a time (RESOURCE_LOCK). */
static testlog *borrow_kafka(testlog *l, const char *dir, int partitions) {
    const char *src = getenv("OBJLOG_SRC_DIR");
    l->shared = 1;
    snprintf(l->dir, sizeof(l->dir), "%s", dir);
    snprintf(l->script, sizeof(l->script), "%s/ops/kafka.sh", src ? src : ".");
    char ports[512];
    snprintf(ports, sizeof(ports), "%s/ports", dir);
    FILE *f = fopen(ports, "r");
    char line[128];
    while (f && fgets(line, sizeof(line), f) && l->nodes < TESTLOG_MAX_NODES)
        l->nodes++;
    if (f)
        fclose(f);
    if (!src || l->nodes < 1) {
        fprintf(stderr, "testlog: no cluster in %s (the kafka_cluster fixture)\n", dir);
        goto fail;
    }
    for (int i = 1; i <= l->nodes; i++)
        l->up[i] = 1;
    if (testlog_wait_ready(l, 60000) < 0 || empty_cluster(l) < 0 ||
        create_topics(l, partitions) < 0)
        goto fail;
    return l;
fail:
    testlog_stop(l);
    return NULL;
}

testlog *testlog_start(int partitions) {
    testlog *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->kafka = testlog_is_kafka();
    const char *shared = getenv("OBJLOG_TEST_KAFKA_DIR");
    if (l->kafka && shared && *shared)
        return borrow_kafka(l, shared, partitions);
    return l->kafka ? start_kafka(l, partitions) : start_mock(l, partitions);
}

const char *testlog_bootstrap(const testlog *l) { return l->bootstrap; }
int testlog_nodes(const testlog *l) { return l->kafka ? l->nodes : 0; }

int testlog_node_running(const testlog *l, int node) {
    return l->kafka && !l->shared && node >= 1 && node <= l->nodes && l->node[node] != NULL;
}

int testlog_node_signal(testlog *l, int node, int sig) {
    if (!testlog_node_running(l, node))
        return -1;
    return kill(l->node[node]->pid, sig);
}

int testlog_node_kill(testlog *l, int node) {
    if (!testlog_node_running(l, node))
        return -1;
    kill(l->node[node]->pid, SIGCONT); /* a stopped JVM still dies, but reap promptly */
    proc_kill(l->node[node]);
    l->node[node] = NULL;
    return 0;
}

int testlog_node_stop(testlog *l, int node, int timeout_ms) {
    if (!testlog_node_running(l, node))
        return -1;
    kill(l->node[node]->pid, SIGCONT);
    int st = proc_stop(l->node[node], timeout_ms);
    l->node[node] = NULL;
    /* The JVM answers SIGTERM by shutting down cleanly: 143 (128+15) or 0. */
    return st >= 0 && WIFEXITED(st) &&
                   (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 143)
               ? 0 : -1;
}

static rd_kafka_t *meta_client(const testlog *l) {
    char tmp[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", l->bootstrap, tmp, sizeof(tmp));
    rd_kafka_conf_set(c, "log_level", "0", tmp, sizeof(tmp));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, tmp, sizeof(tmp));
    if (!rk)
        rd_kafka_conf_destroy(c);
    return rk;
}

static long long testlog_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int testlog_wait_ready(testlog *l, int timeout_ms) {
    if (!l->kafka)
        return 0;
    char out[1024];
    if (!l->bootstrap[0]) {
        if (kafka_sh(l, "bootstrap", NULL, out, sizeof(out), 60000) < 0)
            return -1;
        out[strcspn(out, "\n")] = '\0';
        snprintf(l->bootstrap, sizeof(l->bootstrap), "%s", out);
    }
    int want = 0;
    for (int i = 1; i <= l->nodes; i++)
        want += l->node[i] != NULL || l->up[i];
    rd_kafka_t *rk = meta_client(l);
    long long deadline = testlog_ms() + timeout_ms;
    int rc = -1;
    while (rk && rc < 0 && testlog_ms() < deadline) {
        const struct rd_kafka_metadata *md = NULL;
        if (!rd_kafka_metadata(rk, 0, NULL, &md, 2000)) {
            rc = md->broker_cnt >= want ? 0 : -1;
            rd_kafka_metadata_destroy(md);
        }
        if (rc < 0)
            usleep(200 * 1000);
    }
    if (rk)
        rd_kafka_destroy(rk);
    if (rc < 0)
        fprintf(stderr, "testlog: %d Kafka node(s) not serving after %d ms (logs "
                        "under %s/node-*/server.log)\n", want, timeout_ms, l->dir);
    return rc;
}

int testlog_leader(testlog *l, const char *topic, int partition, int timeout_ms) {
    rd_kafka_t *rk = meta_client(l);
    const struct rd_kafka_metadata *md = NULL;
    int leader = -1;
    if (rk && !rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms)) {
        for (int i = 0; i < md->topic_cnt; i++)
            if (!strcmp(md->topics[i].topic, topic) &&
                partition < md->topics[i].partition_cnt)
                leader = md->topics[i].partitions[partition].leader;
        rd_kafka_metadata_destroy(md);
    }
    if (rk)
        rd_kafka_destroy(rk);
    return leader;
}

/* objlog.events of `partitions` partitions and the rest of objlog's
 * topics, as an operator makes them. 0 or -1. */
static int create_topics(testlog *l, int partitions) {
    char objlog[512], parts[16], out[1024], cerr[4096];
    proc_bin("ops/objlog", objlog, sizeof(objlog));
    snprintf(parts, sizeof(parts), "%d", partitions);
    char *create[] = {objlog, "topics", "create", "--brokers", l->bootstrap,
                      "--partitions", parts, NULL};
    if (proc_run(create, NULL, out, sizeof(out), cerr, sizeof(cerr), 120000) != 0) {
        fprintf(stderr, "testlog: objlog topics create: %s%s\n", out, cerr);
        return -1;
    }
    return 0;
}

/* One DeleteTopics round trip; what it could not delete the caller sees
 * in the next metadata. */
static void delete_topics(rd_kafka_t *rk, rd_kafka_DeleteTopic_t **del, int n) {
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
    char tmp[256];
    rd_kafka_AdminOptions_set_operation_timeout(o, 30000, tmp, sizeof(tmp));
    rd_kafka_DeleteTopics(rk, del, (size_t)n, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
    if (ev && rd_kafka_event_error(ev))
        fprintf(stderr, "testlog: DeleteTopics: %s\n", rd_kafka_event_error_string(ev));
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
}

/* Deletes every topic but Kafka's own (__*), the last test's log
 * included, until metadata lists none three times running: `objlog
 * topics create` makes only what metadata lacks, so it must not find a
 * topic that is on its way out. Committed group offsets go with the
 * topics (the group coordinator drops a deleted partition's offsets).
 * 0, or -1 after a minute. */
static int empty_cluster(testlog *l) {
    rd_kafka_t *rk = meta_client(l);
    if (!rk)
        return -1;
    long long deadline = testlog_ms() + 60000;
    int clean = 0;
    while (clean < 3 && testlog_ms() < deadline) {
        const struct rd_kafka_metadata *md = NULL;
        if (rd_kafka_metadata(rk, 1, NULL, &md, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            usleep(200 * 1000);
            continue;
        }
        rd_kafka_DeleteTopic_t *del[TESTLOG_MAX_TOPICS];
        int n = 0;
        for (int i = 0; i < md->topic_cnt && n < TESTLOG_MAX_TOPICS; i++)
            if (strncmp(md->topics[i].topic, "__", 2) != 0)
                del[n++] = rd_kafka_DeleteTopic_new(md->topics[i].topic);
        rd_kafka_metadata_destroy(md);
        clean = n == 0 ? clean + 1 : 0;
        if (n > 0)
            delete_topics(rk, del, n);
        rd_kafka_DeleteTopic_destroy_array(del, (size_t)n);
        usleep(100 * 1000);
    }
    rd_kafka_destroy(rk);
    if (clean < 3)
        fprintf(stderr, "testlog: the shared cluster still has topics after 60 s\n");
    return clean < 3 ? -1 : 0;
}

proc *testlog_start_view(const testlog *l, const char *data, char *const extra[],
                         char *url, size_t url_size) {
    return testlog_start_view_err(l, data, extra, NULL, url, url_size);
}

proc *testlog_start_view_err(const testlog *l, const char *data, char *const extra[],
                             const char *err_path, char *url, size_t url_size) {
    char objlogd[512], listen[96];
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    char *argv[24] = {objlogd, "--brokers", (char *)l->bootstrap, "--listen",
                      "127.0.0.1:0", "--data", (char *)data};
    int n = 7;
    for (int i = 0; extra && extra[i] && n < 23; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    proc *p = proc_spawn_err(argv, NULL, err_path);
    if (!p || proc_wait_line(p, "OBJLOG_LISTEN=", listen, sizeof(listen), 60000) < 0 ||
        proc_wait_line(p, "OBJLOG_READY", NULL, 0, 60000) < 0) {
        fprintf(stderr, "testlog: objlogd --brokers %s --data %s did not start\n",
                l->bootstrap, data);
        if (p)
            proc_kill(p);
        return NULL;
    }
    int tls = 0; /* a view with a certificate serves https only */
    for (int i = 0; extra && extra[i]; i++)
        tls |= strcmp(extra[i], "--tls-cert") == 0;
    snprintf(url, url_size, "%s://%s", tls ? "https" : "http", listen);
    return p;
}

void testlog_stop(testlog *l) {
    if (!l)
        return;
    if (l->mock)
        proc_stop(l->mock, 10000);
    /* SIGKILL, not SIGTERM: the cluster's files go next, and a controlled
     * shutdown of the last voters waits tens of seconds for a quorum. */
    for (int i = 1; i <= l->nodes && l->kafka; i++)
        if (l->node[i])
            proc_kill(l->node[i]);
    if (l->kafka && !l->shared && l->dir[0])
        proc_rmtree(l->dir);
    free(l);
}
