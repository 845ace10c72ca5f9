/* objlogd.c: the daemon (docs/ARCHITECTURE.md, "Processes"): optional
 * embedded Kafka, the store, the materializer and the HTTP service, in that
 * order; torn down in the reverse order on SIGTERM/SIGINT.
 *
 * Machine-readable lines on stdout (flushed at once; tests parse them):
 * OBJLOG_BOOTSTRAP=, OBJLOG_PID=, OBJLOG_LISTEN=, OBJLOG_S3_LISTEN=, OBJLOG_READY.
 * Everything else goes to stderr. Bad flags exit 2 with a message naming
 * the flag (objlogdargs.c, the command line). Signals are blocked in every
 * thread and taken synchronously with sigwait in main, so no work happens
 * in a signal handler. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/http.h>
#include <librdkafka/rdkafka.h>
#include <openssl/evp.h>

#include "kafkaconf.h"
#include "secretfile.h"
#include "topics.h"

#include "objlog_logger.h"
#include "objlog_producer.h"
#include "objlogdargs.h"
#include "query.h"
#include "cluster.h"

#define OBJLOGD_CONTROL_TOPIC "objlog.control"
#define OBJLOGD_DLQ_TOPIC "objlog.dlq"


/* The token key from --token-secret-file: SHA-256 of the file's bytes
 * (16 to 4096 of them: a key, not a password). 0, or -1 after a message. */
static int read_token_secret(const char *path, uint8_t key[OBJLOG_TOKEN_SECRET_LEN]) {
    uint8_t buf[4097];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
    int bad = !f || ferror(f);
    if (f)
        fclose(f);
    if (bad || n < 16 || n > 4096) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "--token-secret-file %s: %s", path,
                    bad ? strerror(errno) : "needs 16 to 4096 bytes (e.g. head -c 32 "
                                            "/dev/urandom > FILE, the same on every node)");
        return -1;
    }
    unsigned int len = 0;
    return EVP_Digest(buf, n, key, &len, EVP_sha256(), NULL) && len == OBJLOG_TOKEN_SECRET_LEN
               ? 0 : -1;
}

/* A real broker answers a fetch as soon as data arrives, so a long wait
 * costs no latency there; librdkafka's mock cluster holds an empty fetch
 * for the whole wait, which then adds straight to every write's apply
 * latency (p99 at 5,000 writes/s: 27 ms with 20 ms, 10 ms with 2 ms). */
static int fetch_wait_ms(const objlogd_conf *c) {
    if (c->fetch_wait_ms > 0)
        return c->fetch_wait_ms;
    return c->brokers ? 100 : 1;
}

/* Until SIGTERM or SIGINT; each SIGHUP reads the credentials files of q
 * (when serving) again. */
/* Says every 5 s which stage a stop is in, until it is done: a stop that
 * never ends (a library waiting on a broker) names where it waits. */
typedef struct stop_watch {
    _Atomic(const char *) stage;
    atomic_int done;
} stop_watch;

static void *stop_watch_main(void *arg) {
    stop_watch *sw = arg;
    for (int t = 1; !atomic_load(&sw->done); t++) {
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
        if (t % 50 == 0 && !atomic_load(&sw->done))
            objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd", "still stopping after %d s: %s", t / 10,
                        atomic_load(&sw->stage));
    }
    return NULL;
}

static void wait_for_signal(const sigset_t *set, objlog_query *q) {
    int sig = 0;
    for (;;) {
        sigwait(set, &sig);
        if (sig != SIGHUP)
            break;
        char err[512];
        if (!q) {
            objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "SIGHUP: nothing to reload");
            continue;
        }
        /* stdout says how it went, for scripts (and tests) that wait */
        int rc = objlog_query_reload(q, err, sizeof(err));
        if (rc == 0)
            objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "SIGHUP: reloaded %s", err);
        else
            objlog_logf(OBJLOG_LEVEL_ERR, "objlogd",
                        "SIGHUP: %s; the credentials in force stay", err);
        printf(rc == 0 ? "OBJLOG_RELOADED\n" : "OBJLOG_RELOAD_FAILED\n");
        fflush(stdout);
    }
    objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "%s, shutting down", strsignal(sig));
}

/* Every connection is a descriptor, and the common soft limit of 1024
 * runs out long before the machine does: take the hard limit. Returns the
 * limit in force. */
static long long raise_fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "open-file limit raised from %llu to %llu",
                       (unsigned long long)was, (unsigned long long)rl.rlim_max);
        else
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY ? 1 << 20 : (long long)rl.rlim_cur;
}

/* Descriptors kept for what is not a connection: the store's files, Kafka
 * sockets, pipes. Past the cap connections wait in the listen backlog. */
#define OBJLOGD_FD_RESERVE 256

static int max_connections(const objlogd_conf *c, long long nofile) {
    long long room = nofile > 2 * OBJLOGD_FD_RESERVE ? nofile - OBJLOGD_FD_RESERVE
                                                      : nofile / 2;
    if (c->max_connections > 0) {
        if (c->max_connections > room)
            objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd",
                       "--max-connections %d leaves fewer than %d of the %lld open files "
                       "for the store and Kafka; new connections will wait while few are free",
                       c->max_connections, OBJLOGD_FD_RESERVE, nofile);
        return c->max_connections;
    }
    return room > 65536 ? 65536 : (int)room;
}

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static objlog_embedded_kafka *start_embedded(const objlogd_conf *c) {
    char err[512];
    objlog_embedded_kafka *k = objlog_embedded_kafka_new(
        c->topic, c->partitions, OBJLOGD_CONTROL_TOPIC, OBJLOGD_DLQ_TOPIC, err, sizeof(err));
    if (!k) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "%s", err);
        return NULL;
    }
    objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd",
            "the embedded Kafka log lives in memory and keeps only "
            "about 5 MB per partition; it is for trying objlog and for tests, never "
            "for data you keep");
    printf("OBJLOG_BOOTSTRAP=%s\n", objlog_embedded_kafka_bootstrap(k));
    fflush(stdout);
    return k;
}

/* Refuses topics whose settings could lose acknowledged writes or break
 * replay, unless the operator said --allow-unsafe-topics (topics.h). */
static int check_topics(const objlogd_conf *c, const char *brokers,
                        const objlog_topics *t) {
    char err[512], problems[4096];
    int unsafe = objlog_topics_check(brokers, t, 30000, problems,
                                     sizeof(problems), err, sizeof(err));
    if (unsafe < 0) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "%s", err);
        return -1;
    }
    for (char *line = strtok(problems, "\n"); line; line = strtok(NULL, "\n"))
        objlog_logf(strncmp(line, "unsafe", 6) == 0
                        ? (c->allow_unsafe_topics ? OBJLOG_LEVEL_WARNING : OBJLOG_LEVEL_ERR)
                    : strncmp(line, "warning", 7) == 0 ? OBJLOG_LEVEL_WARNING
                                                        : OBJLOG_LEVEL_INFO,
                    "objlogd", "%s", line);
    if (unsafe > 0 && !c->allow_unsafe_topics) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "refusing to start on %d unsafe topic setting%s "
                   "(above); fix them, or start with --allow-unsafe-topics",
                   unsafe, unsafe == 1 ? "" : "s");
        return -1;
    }
    return 0;
}

/* The log objlogd serves: with --brokers its topics are created when
 * missing (unless --no-create-topics) and checked, then its identity is
 * read (and a log id published if hand-made topics lack one). An embedded
 * log (ours or a --kafka-only one) is in memory by design, so its topic
 * settings are not judged. 0 or -1. */
static int prepare_log(const objlogd_conf *c, const char *brokers, int own_log,
                       objlog_log_identity *log) {
    char err[1024];
    objlog_topics t = {.events = c->topic, .control = OBJLOGD_CONTROL_TOPIC,
                       .dlq = OBJLOGD_DLQ_TOPIC, .partitions = c->partitions};
    if (!own_log && !c->no_create_topics) {
        FILE *progress = objlog_logger_stream(OBJLOG_LEVEL_INFO, "objlogd");
        int rc = objlog_topics_create(brokers, &t, 30000, progress ? progress : stderr,
                                      err, sizeof(err));
        if (progress)
            fclose(progress);
        if (rc < 0) {
            objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "%s", err);
            return -1;
        }
    }
    if (!own_log) {
        const char *topics[] = {c->topic, OBJLOGD_CONTROL_TOPIC, OBJLOGD_DLQ_TOPIC, NULL};
        if (objlog_kafka_check_topics(brokers, topics, 10000, err, sizeof(err)) < 0) {
            objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "%s", err);
            return -1;
        }
    }
    if (objlog_log_identity_fetch(brokers, OBJLOGD_CONTROL_TOPIC, !own_log, 30000,
                                  log, err, sizeof(err)) != 1) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "log identity: %s", err);
        return -1;
    }
    if (log->embedded && !own_log)
        objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd", "the log at %s is an embedded cluster: in memory, "
                        "for tests only", brokers);
    return log->embedded ? 0 : check_topics(c, brokers, &t);
}

/* The default consumer group names this host and this view's data
 * directory, so two independent views never commit into one group and
 * overwrite each other's positions (lag tools read them). */
static void default_group(const char *data, char *out, size_t size) {
    char host[128] = "localhost", path[PATH_MAX];
    gethostname(host, sizeof(host) - 1);
    if (!realpath(data, path))
        snprintf(path, sizeof(path), "%s", data);
    uint32_t h = 2166136261u;
    for (const char *p = path; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    snprintf(out, size, "objlogd-%s-%08x", host, h);
}

/* The store's and the materializer's lines, through the process logger. */
static void view_log(void *opaque, int level, const char *component, const char *line) {
    (void)opaque;
    objlog_logf(level, component, "%s", line);
}

/* Opens the store under --data and binds it to the log at brokers
 * (identity.c): a view of another log is refused with what to do; with
 * own_log (--embedded: a new log at every start) a view of an earlier
 * embedded log is discarded, since that log is gone. NULL on refusal. */
static objlog_store *open_bound_store(const objlogd_conf *c,
                                      const objlog_log_identity *log, int own_log) {
    char err[1024];
    for (int attempt = 0; attempt < 2; attempt++) {
        objlog_store_conf sc = {.block_cache_bytes = (size_t)c->block_cache_mb << 20,
                                .memtable_bytes = (size_t)c->memtable_mb << 20,
                                .log_cb = view_log,
                                .wal = c->wal,
                                /* the flag's 0 (no timer) is the store's -1 */
                                .flush_interval_ms = c->flush_interval_ms ? c->flush_interval_ms : -1};
        objlog_store *store = objlog_store_open_conf(c->data, &sc, err, sizeof(err));
        if (!store) {
            objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "store %s: %s", c->data, err);
            return NULL;
        }
        objlog_bind b = objlog_store_bind_log(store, log, own_log, err, sizeof(err));
        if (b == OBJLOG_BIND_SAME || b == OBJLOG_BIND_RECORDED) {
            objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "view %s %s log %s (%s, Kafka cluster %s)",
                    c->data, b == OBJLOG_BIND_SAME ? "continues" : "starts on",
                    log->log_id, log->embedded ? "embedded" : "kafka", log->cluster_id);
            return store;
        }
        objlog_store_close(store);
        if (b == OBJLOG_BIND_REFUSED) {
            objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "--data %s: %s", c->data, err);
            return NULL;
        }
        objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd", "--data %s held a view of an earlier embedded log, "
                        "which died with its process; discarding it", c->data);
        if (objlog_store_destroy_files(c->data, err, sizeof(err)) < 0) {
            objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "%s", err);
            return NULL;
        }
    }
    return NULL;
}

/* A cluster node without --node-name is known by the host:port it
 * advertises (what its peers and its URL in /v1/cluster call it). */
static void default_node_name(const char *advertise) {
    char err[256];
    struct evhttp_uri *u = evhttp_uri_parse(advertise);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    char name[300];
    if (host) {
        int port = evhttp_uri_get_port(u);
        if (port >= 0)
            snprintf(name, sizeof(name), "%s:%d", host, port);
        else
            snprintf(name, sizeof(name), "%s", host);
        if (objlog_logger_set_node(name, err, sizeof(err)) < 0)
            objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd", "node name from --advertise: %s; "
                        "lines go without one (give --node-name)", err);
    }
    if (u)
        evhttp_uri_free(u);
}

/* Store, materializer, HTTP; then serve until a signal. 0 or 1. */
static int serve(const objlogd_conf *c, const char *brokers,
                 const objlog_log_identity *log, int own_log, const sigset_t *set) {
    char err[512];
    /* librdkafka's mock cluster answers no DescribeGroups: nodes would never
     * find each other, every write would time out, and a stop would wait on
     * the group for minutes. Refuse at once rather than hang later (tests
     * that only read such a node's /metrics declarations may set
     * OBJLOG_TEST_MOCK_CLUSTER=1). */
    const char *mock_ok = getenv("OBJLOG_TEST_MOCK_CLUSTER");
    if (c->cluster && !(mock_ok && strcmp(mock_ok, "1") == 0) &&
        (own_log || strncmp(log->cluster_id, "mockCluster", 11) == 0)) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "--cluster %s needs a real Kafka: %s is the "
                    "embedded log (librdkafka's mock cluster %s), which does not answer the "
                    "group requests cluster nodes find each other with; start Kafka with "
                    "ops/kafka.sh start (or ops/setup.sh run) and give its bootstrap to "
                    "--brokers", c->cluster, brokers, log->cluster_id);
        return 1;
    }
    if (mkdir(c->data, 0755) < 0 && errno != EEXIST) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "--data %s: %s", c->data, strerror(errno));
        return 1;
    }
    uint8_t token_key[OBJLOG_TOKEN_SECRET_LEN];
    if (c->token_secret_file && read_token_secret(c->token_secret_file, token_key) < 0)
        return 1;
    objlog_store *store = open_bound_store(c, log, own_log);
    if (!store)
        return 1;
    char group[256], advertise[256] = "", client_id[300] = "";
    int lfd = -1;
    if (c->cluster) {
        /* Bound before the materializer joins the group: its client.id
         * names this node's URL, port 0 included. */
        int port = 0;
        lfd = objlog_query_listen(c->host, c->port, &port, err, sizeof(err));
        if (lfd < 0) {
            objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "http: %s", err);
            objlog_store_close(store);
            return 1;
        }
        if (c->advertise)
            snprintf(advertise, sizeof(advertise), "%s", c->advertise);
        else
            snprintf(advertise, sizeof(advertise), "%s://%s:%d", c->tls_cert ? "https" : "http",
                     c->host, port);
        objlog_cluster_group(c->cluster, group, sizeof(group));
        objlog_cluster_client_id(advertise, client_id, sizeof(client_id));
        if (!c->node_name)
            default_node_name(advertise);
        objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "cluster %s: this node is %s",
                    c->cluster, advertise);
    } else if (c->group) {
        snprintf(group, sizeof(group), "%s", c->group);
    } else {
        default_group(c->data, group, sizeof(group));
    }
    objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "consumer group %s (committed positions for lag tools)",
            group);
    objlog_materializer_conf mc = {.brokers = brokers, .topic = c->topic,
                                   .control_topic = OBJLOGD_CONTROL_TOPIC,
                                   .dlq_topic = OBJLOGD_DLQ_TOPIC,
                                   .group_id = group, .batch_max = 1000,
                                   .apply_delay_ms = c->test_apply_delay_ms,
                                   .fetch_wait_max_ms = fetch_wait_ms(c),
                                   .test_no_stats = c->test_no_stats,
                                   /* An idle objlogd costs no CPU; the query
                                    * service kicks it on every write and
                                    * fenced read (fence.c, gateway.c). */
                                   .idle_pause_ms = 1000,
                                   .cluster = c->cluster != NULL,
                                   .standbys = c->standbys,
                                   /* a partition never applied here may
                                    * come from a peer (query/cluster/bootstrap.c) */
                                   .hold_new = c->cluster != NULL,
                                   .client_id = c->cluster ? client_id : NULL,
                                   .apply_threads = c->apply_threads,
                                   .log_cb = view_log};
    if (c->test_apply_delay_ms > 0)
        objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd", "--test-apply-delay-ms %d slows every "
                        "applied batch; it is for tests only", c->test_apply_delay_ms);
    if (c->test_no_stats)
        objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd", "--test-no-stats: no usage counters, no "
                        "bucket quotas; stats reads answer 503; for benches only");
    objlog_materializer *m = objlog_materializer_new(&mc, store, err, sizeof(err));
    if (!m || objlog_materializer_start(m, err, sizeof(err)) < 0) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "materializer: %s", err);
        objlog_materializer_destroy(m);
        objlog_store_close(store);
        if (lfd >= 0)
            close(lfd);
        return 1;
    }
    char blob_spool[4096]; /* --blob-s3: writes in flight, under the view's data */
    snprintf(blob_spool, sizeof(blob_spool), "%s/blob-spool", c->data ? c->data : ".");
    objlog_query_conf qc = {.host = c->host, .port = c->port, .threads = c->threads,
                            .brokers = brokers, .topic = c->topic,
                            .control_topic = OBJLOGD_CONTROL_TOPIC,
                            .store = store, .materializer = m,
                            .max_timeout_ms = c->max_timeout_ms,
                            .ready_max_lag = c->ready_max_lag,
                            .max_connections = max_connections(c, c->nofile),
                            .request_timeout_ms = c->request_timeout_ms,
                            .idle_timeout_ms = c->idle_timeout_ms,
                            .listen_fd = lfd, .listen_fd_set = lfd >= 0,
                            .cluster = c->cluster,
                            .token_key = c->token_secret_file ? token_key : NULL,
                            .eventual_max_lag = c->eventual_max_lag,
                            .standbys = c->standbys,
                            .s3_host = c->s3 ? c->s3_host : NULL,
                            .s3_port = c->s3_port,
                            .s3_region = c->s3_region,
                            .s3_domain = c->s3_domain,
                            .s3_credentials = c->s3_credentials,
                            .s3_anonymous = c->s3_anonymous,
                            .insecure = c->insecure,
                            .api_credentials = c->api_credentials,
                            .tls_cert = c->tls_cert, .tls_key = c->tls_key,
                            .tls_ca = c->tls_ca,
                            .s3_blob_url = c->s3_blob_url,
                            .blob_dir = c->blob_s3 ? blob_spool : c->blob_dir,
                            .blob_s3 = c->blob_s3,
                            .blob_s3_credentials = c->blob_s3_credentials,
                            .blob_release_topic = c->blob_release_topic,
                            .lifecycle_interval_ms = c->lifecycle_interval_ms,
                            .lifecycle_clock_offset_ms = c->test_lc_offset_ms,
                            .test_handoff_pause_ms = c->test_handoff_pause_ms,
                            .lifecycle_max_rate = c->lifecycle_max_rate,
                            .rate_limit_bucket_rps = (unsigned)c->rl_bucket[0],
                            .rate_limit_bucket_burst = (unsigned)c->rl_bucket[1],
                            .rate_limit_tenant_rps = (unsigned)c->rl_tenant[0],
                            .rate_limit_tenant_burst = (unsigned)c->rl_tenant[1],
                            .slowdown_lag = c->slowdown_lag,
                            .auto_split_rate = c->auto_split ? (unsigned)c->auto_split_rate : 0,
                            .auto_split_seconds = c->auto_split_seconds,
                            .advertise_url = c->cluster ? advertise : NULL};
    objlog_query *q = objlog_query_new(&qc, err, sizeof(err));
    if (!q) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "http: %s", err);
    } else {
        if (c->api_credentials)
            objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "JSON API on %s:%d: every request but "
                        "/healthz and /readyz needs a token of %s", c->host,
                        objlog_query_port(q), c->api_credentials);
        else
            objlog_logf(objlogd_host_is_loopback(c->host) ? OBJLOG_LEVEL_INFO : OBJLOG_LEVEL_WARNING,
                        "objlogd", "JSON API on %s:%d is open (no --api-credentials): whoever "
                        "reaches it may read and change every bucket%s", c->host,
                        objlog_query_port(q),
                        objlogd_host_is_loopback(c->host) ? "; it listens on loopback only" : "");
        if (!c->tls_cert && !objlogd_host_is_loopback(c->host))
            objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd", "%s:%d serves plain HTTP off "
                        "loopback: tokens, keys and data cross the network in the clear; "
                        "give --tls-cert and --tls-key", c->host, objlog_query_port(q));
        printf("OBJLOG_PID=%d\nOBJLOG_LISTEN=%s:%d\n", (int)getpid(), c->host,
               objlog_query_port(q));
        if (c->s3)
            printf("OBJLOG_S3_LISTEN=%s:%d\n", c->s3_host, objlog_query_s3_port(q));
        printf("OBJLOG_READY\n");
        fflush(stdout);
        wait_for_signal(set, q);
    }
    /* Each stage's time on stderr: a stop that takes long says where,
     * while it takes long too (stop_watch). */
    stop_watch sw = {.stage = "http and gateway"};
    pthread_t swt;
    int sw_on = pthread_create(&swt, NULL, stop_watch_main, &sw) == 0;
    long long t0 = mono_ms();
    objlog_query_destroy(q);
    long long t1 = mono_ms();
    atomic_store(&sw.stage, "materializer");
    objlog_materializer_destroy(m);
    long long t2 = mono_ms();
    atomic_store(&sw.stage, "store");
    objlog_store_close(store);
    atomic_store(&sw.done, 1);
    if (sw_on)
        pthread_join(swt, NULL);
    if (q)
        objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "stopped in %lld ms (http and gateway %lld ms, "
                        "materializer %lld ms, store %lld ms)",
                mono_ms() - t0, t1 - t0, t2 - t1, mono_ms() - t2);
    return q ? 0 : 1;
}

int main(int argc, char **argv) {
    objlogd_conf c = {.topic = "objlog.events", .partitions = 8,
                      .data = "./objlog-data", .host = "127.0.0.1", .port = 8080,
                      .threads = 4, .fetch_wait_ms = -1,
                      .lifecycle_interval_ms = 60000,
                      .auto_split_rate = 20000, .auto_split_seconds = 10,
                      .flush_interval_ms = OBJLOG_STORE_FLUSH_INTERVAL_DEFAULT_MS,
                      .ready_max_lag = QUERY_READY_MAX_LAG_DEFAULT,
                      .max_timeout_ms = 30000};
    /* before any thread: the webhooks' and the S3 blob store's transfers */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = objlogd_conf_load(&c, argc, argv);
    if (rc == 2) {
        printf("objlogd %s (librdkafka %s)\n", objlog_producer_version(),
               rd_kafka_version_str());
        return 0;
    }
    if (rc != 0) {
        objlogd_usage(rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : 2;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited by every thread */
    signal(SIGPIPE, SIG_IGN);
    objlog_logger_set_format(c.log_format ? c.log_format : "text");
    char err[512];
    if (c.node_name && objlog_logger_set_node(c.node_name, err, sizeof(err)) < 0) {
        fprintf(stderr, "objlogd: --node-name '%s': %s\n", c.node_name, err);
        return 2;
    }
    if (c.access_log && objlog_logger_open_access(c.access_log, err, sizeof(err)) < 0) {
        objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "%s", err);
        return 1;
    }
    c.nofile = raise_fd_limit();

    if (c.kafka_config) {
        unsigned open_mode = 0;
        if (objlog_kafka_config_load(c.kafka_config, c.insecure, &open_mode, err,
                                     sizeof(err)) < 0) {
            objlog_logf(OBJLOG_LEVEL_ERR, "objlogd", "--kafka-config %s", err);
            return 1;
        }
        if (secretfile_open_warning(c.kafka_config, open_mode, err, sizeof(err)))
            objlog_logf(OBJLOG_LEVEL_WARNING, "objlogd", "%s", err);
        objlog_logf(OBJLOG_LEVEL_INFO, "objlogd", "--kafka-config %s: %zu properties for "
                    "every Kafka client", c.kafka_config, objlog_kafka_config_count());
    }
    objlog_embedded_kafka *k = NULL;
    const char *brokers = c.brokers;
    if (!brokers) {
        if (!(k = start_embedded(&c)))
            return 1;
        brokers = objlog_embedded_kafka_bootstrap(k);
    }
    if (c.kafka_only) {
        printf("OBJLOG_READY\n");
        fflush(stdout);
        wait_for_signal(&set, NULL);
        rc = 0;
    } else {
        objlog_log_identity log;
        rc = prepare_log(&c, brokers, k != NULL, &log) < 0
                 ? 1 : serve(&c, brokers, &log, k != NULL, &set);
    }
    objlog_embedded_kafka_destroy(k);
    objlog_kafka_config_free();
    objlog_logger_close();
    return rc;
}
