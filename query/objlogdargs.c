/* objlogdargs.c: objlogd's command line: the usage text, the OBJLOG_*
 * environment, the flags (getopt_long: --opt=value, --opt value, "--"
 * ends them; objlogd takes no operands) and the checks of their
 * combinations (objlogdargs.h).
 *
 * Invariant: a bad flag or combination is refused here, naming the flag,
 * before any file is opened or any thread started. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objlog_logger.h"
#include "objlogdargs.h"
#include "query.h"

void objlogd_usage(FILE *f) {
    fprintf(f,
            "usage: objlogd [--embedded | --kafka-only | --brokers LIST]\n"
            "               [--version] [--help]\n"
            "               [--topic NAME] [--partitions N] [--data DIR]\n"
            "               [--listen HOST:PORT] [--threads N] [--fetch-wait-ms N]\n"
            "               [--ready-max-lag N] [--max-timeout-ms N] [--group NAME]\n"
            "               [--no-create-topics] [--allow-unsafe-topics]\n"
            "               [--max-connections N] (open connections; past it new\n"
            "                ones wait, but for 2 a thread kept for /healthz, /readyz\n"
            "                and /metrics)\n"
            "               [--request-timeout-ms N] (a request's first byte to its\n"
            "                last, default 10000; else 408 and closed. A streamed S3\n"
            "                body may take longer, but no N ms without a byte)\n"
            "               [--idle-timeout-ms N] (a connection with no request in\n"
            "                progress, before its first or between two, is closed\n"
            "                after N ms; default 5000)\n"
            "               [--log-format text|json] [--access-log FILE|-]\n"
            "               [--node-name NAME] (on every log line; letters, digits and\n"
            "                . _ : - @, at most 64; a cluster node's default is the\n"
            "                host:port it advertises)\n"
            "               [--block-cache-mb N] [--memtable-mb N]\n"
            "               [--wal on|off] (the view's RocksDB WAL; default off: a view\n"
            "                is a cache of the log, flushed atomically with its applied\n"
            "                offsets, and re-applies from its last flush after a crash)\n"
            "               [--flush-interval-ms N] (WAL off: a write is flushed within\n"
            "                N ms, default 10000; 0: only when memtables fill or at stop)\n"
            "               [--apply-threads N] (threads applying partitions, each owning\n"
            "                a fixed set; default one per core, 1..64)\n"
            "               [--cluster NAME [--advertise URL]] (with --brokers: a node\n"
            "                of cluster NAME; URL is how its peers reach it, default\n"
            "                http://HOST:PORT of --listen)\n"
            "               [--eventual-max-lag N] (cluster: eventual reads of another\n"
            "                node's partition answered here within N events; 0)\n"
            "               [--standbys K] (cluster: each partition is also applied by K\n"
            "                other nodes, 0..%d; 0)\n"
            "               [--s3-listen HOST:PORT] (S3's REST API; off unless given)\n"
            "               [--s3-anonymous] (accept unsigned requests, tenant \"\")\n"
            "               [--s3-credentials FILE] (\"KEY_ID SECRET TENANT [admin]\" lines,\n"
            "                mode 0600: Signature V4 is checked; a key acts only on its\n"
            "                tenant's buckets, an admin key on every bucket; SIGHUP\n"
            "                reads the file again)\n"
            "               [--api-credentials FILE] (\"TOKEN SUBJECT\" lines, mode 0600;\n"
            "                SUBJECT a tenant or admin: the JSON API then needs\n"
            "                Authorization: Bearer TOKEN, and a tenant's token acts only on\n"
            "                its buckets; without it the API is open, which objlogd allows\n"
            "                only on a loopback --listen; SIGHUP reads the file again)\n"
            "               [--kafka-config FILE] (with --brokers: \"key=value\" librdkafka\n"
            "                properties every Kafka client of objlogd takes, such as\n"
            "                security.protocol, sasl.mechanisms, sasl.username,\n"
            "                sasl.password, ssl.ca.location; mode 0600)\n"
            "               [--tls-cert FILE --tls-key FILE] (PEM: both listeners serve\n"
            "                HTTPS only; a cluster node advertises https://)\n"
            "               [--tls-ca FILE] (PEM CAs that peer nodes' certificates are\n"
            "                checked against; default: the system's)\n"
            "               [--insecure] (load credentials files that group or others\n"
            "                may read, with a warning; serve an open JSON API on a\n"
            "                non-loopback address)\n"
            "               [--s3-region R (us-east-1)] [--s3-domain D (localhost:\n"
            "                Host BUCKET.D is virtual-hosted style)]\n"
            "               [--blob-dir DIR] (the S3 endpoint keeps object bytes there:\n"
            "                a content-addressed directory; nodes on one machine may share\n"
            "                it. Without it and --s3-blob-url, a PUT with a body is 501)\n"
            "               [--s3-blob-url TEMPLATE] (GetObject redirects there; {bucket}\n"
            "                {key} {version_id} {blob_id})\n"
            "               [--blob-s3 URL --blob-s3-credentials FILE] (object bytes kept\n"
            "                in an S3-compatible store, http(s)://HOST:PORT/BUCKET, with\n"
            "                the key of FILE's line \"ACCESS_KEY_ID SECRET [REGION]\";\n"
            "                writes in flight spool under --data; for nodes that share no\n"
            "                disk)\n"
            "               [--blob-release-topic TOPIC] (a record per blob id whose last\n"
            "                reference in a partition went away, exactly once; with\n"
            "                --blob-dir the store deletes the files nothing references)\n"
            "               [--token-secret-file FILE] (signs continuation tokens; the\n"
            "                nodes of a cluster share one; default: the store's own)\n"
            "               [--rate-limit-bucket RPS[:BURST]] (requests per second of a\n"
            "                bucket without its own limit; 0 = none, the default)\n"
            "               [--rate-limit-tenant RPS[:BURST]] (of all buckets of a tenant)\n"
            "               [--slowdown-lag N] (writes to a partition lagging more than N\n"
            "                events get 503 SlowDown; 0 = off, the default)\n"
            "               [--auto-split] (split a partition's hottest range when its\n"
            "                applied rate stays above --auto-split-rate N events/s,\n"
            "                default 20000, for --auto-split-seconds S, default 10;\n"
            "                then 3*S quiet; off by default)\n"
            "               [--test-apply-delay-ms N (tests only: slows the materializer)]\n"
            "               [--test-handoff-pause-ms N (tests only: a handoff waits N ms\n"
            "                between its RangeOut and its RangeIn)]\n"
            "               [--lifecycle-interval-ms N] (lifecycle scan period, default\n"
            "                60000; 0: no lifecycle worker)\n"
            "               [--lifecycle-max-rate N] (Expire events per second at most,\n"
            "                so a backlog leaves foreground writes room; 0: unbounded)\n"
            "               [--test-lifecycle-clock-offset-ms N (tests only: the lifecycle\n"
            "                worker's clock runs N ms ahead, and so do its Expire events)]\n"
            "               [--test-no-stats (benches only: no usage counters or quotas;\n"
            "                needs an empty --data, which it marks as unusable with stats)]\n"
            "env: OBJLOG_BROKERS OBJLOG_TOPIC OBJLOG_PARTITIONS OBJLOG_DATA OBJLOG_GROUP\n"
            "     OBJLOG_LISTEN OBJLOG_THREADS OBJLOG_FETCH_WAIT_MS\n"
            "     OBJLOG_READY_MAX_LAG OBJLOG_MAX_TIMEOUT_MS OBJLOG_TEST_APPLY_DELAY_MS\n"
            "     OBJLOG_TEST_HANDOFF_PAUSE_MS\n"
            "     OBJLOG_LIFECYCLE_INTERVAL_MS OBJLOG_LIFECYCLE_MAX_RATE\n"
            "     OBJLOG_TEST_LIFECYCLE_CLOCK_OFFSET_MS\n"
            "     OBJLOG_MAX_CONNECTIONS OBJLOG_REQUEST_TIMEOUT_MS OBJLOG_IDLE_TIMEOUT_MS\n"
            "     OBJLOG_LOG_FORMAT\n"
            "     OBJLOG_ACCESS_LOG OBJLOG_BLOCK_CACHE_MB OBJLOG_MEMTABLE_MB\n"
            "     OBJLOG_WAL OBJLOG_FLUSH_INTERVAL_MS OBJLOG_APPLY_THREADS\n"
            "     OBJLOG_CLUSTER OBJLOG_ADVERTISE OBJLOG_TOKEN_SECRET_FILE\n"
            "     OBJLOG_EVENTUAL_MAX_LAG OBJLOG_STANDBYS OBJLOG_S3_LISTEN\n"
            "     OBJLOG_S3_REGION OBJLOG_S3_DOMAIN OBJLOG_S3_BLOB_URL OBJLOG_BLOB_DIR\n"
            "     OBJLOG_API_CREDENTIALS OBJLOG_KAFKA_CONFIG OBJLOG_TLS_CERT\n"
            "     OBJLOG_TLS_KEY OBJLOG_TLS_CA OBJLOG_BLOB_RELEASE_TOPIC\n"
            "     OBJLOG_RATE_LIMIT_BUCKET OBJLOG_RATE_LIMIT_TENANT OBJLOG_SLOWDOWN_LAG\n",
            OBJLOG_CLUSTER_STANDBYS_MAX);
}

/* A clock offset in ms: 0 .. 100 years. */
static int parse_offset(const char *flag, const char *v, long long *out) {
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < 0 || n > 36500LL * 86400000LL) {
        fprintf(stderr, "objlogd: %s must be 0..3153600000000 (ms), not %s\n", flag, v);
        return -1;
    }
    *out = n;
    return 0;
}

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out) {
    char *end = NULL;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "objlogd: %s needs an integer in %d..%d (got '%s')\n",
                flag, lo, hi, v ? v : "");
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int parse_hostport(const char *flag, const char *v, char *host, size_t hn,
                          int *port) {
    const char *colon = v ? strrchr(v, ':') : NULL;
    if (!colon || colon == v || (size_t)(colon - v) >= hn) {
        fprintf(stderr, "objlogd: %s needs HOST:PORT (got '%s')\n", flag, v ? v : "");
        return -1;
    }
    memcpy(host, v, (size_t)(colon - v));
    host[colon - v] = '\0';
    return parse_int(flag, colon + 1, 0, 65535, port);
}

static int parse_listen(const char *flag, const char *v, objlogd_conf *c) {
    return parse_hostport(flag, v, c->host, sizeof(c->host), &c->port);
}

static int parse_s3_listen(const char *flag, const char *v, objlogd_conf *c) {
    c->s3 = 1;
    return parse_hostport(flag, v, c->s3_host, sizeof(c->s3_host), &c->s3_port);
}

/* RPS[:BURST], each 0..1000000; a burst needs a rate. */
static int parse_rate(const char *flag, const char *v, int out[2]) {
    char rps[32];
    const char *colon = strchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    if (n >= sizeof(rps)) {
        fprintf(stderr, "objlogd: %s needs RPS[:BURST] (got '%s')\n", flag, v);
        return -1;
    }
    memcpy(rps, v, n);
    rps[n] = '\0';
    out[1] = 0;
    if (parse_int(flag, rps, 0, 1000000, &out[0]) < 0 ||
        (colon && parse_int(flag, colon + 1, 0, 1000000, &out[1]) < 0))
        return -1;
    if (out[1] && !out[0]) {
        fprintf(stderr, "objlogd: %s: a burst needs a rate (got '%s')\n", flag, v);
        return -1;
    }
    return 0;
}

static int parse_log_format(const char *flag, const char *v, objlogd_conf *c) {
    if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0) {
        fprintf(stderr, "objlogd: %s must be text or json (got '%s')\n", flag, v);
        return -1;
    }
    c->log_format = v;
    return 0;
}

static int parse_wal(const char *flag, const char *v, objlogd_conf *c) {
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
        fprintf(stderr, "objlogd: %s must be on or off (got '%s')\n", flag, v);
        return -1;
    }
    c->wal = strcmp(v, "on") == 0 ? OBJLOG_STORE_WAL_ON : OBJLOG_STORE_WAL_OFF;
    return 0;
}

static int conf_from_env(objlogd_conf *c) {
    const char *v;
    if ((v = getenv("OBJLOG_ACCESS_LOG")) && *v)
        c->access_log = v;
    if ((v = getenv("OBJLOG_LOG_FORMAT")) && *v &&
        parse_log_format("OBJLOG_LOG_FORMAT", v, c) < 0)
        return -1;
    if ((v = getenv("OBJLOG_MAX_CONNECTIONS")) && *v &&
        parse_int("OBJLOG_MAX_CONNECTIONS", v, 1, 1000000, &c->max_connections) < 0)
        return -1;
    if ((v = getenv("OBJLOG_BLOCK_CACHE_MB")) && *v &&
        parse_int("OBJLOG_BLOCK_CACHE_MB", v, 1, 1 << 20, &c->block_cache_mb) < 0)
        return -1;
    if ((v = getenv("OBJLOG_WAL")) && *v && parse_wal("OBJLOG_WAL", v, c) < 0)
        return -1;
    if ((v = getenv("OBJLOG_FLUSH_INTERVAL_MS")) && *v &&
        parse_int("OBJLOG_FLUSH_INTERVAL_MS", v, 0, 86400000, &c->flush_interval_ms) < 0)
        return -1;
    if ((v = getenv("OBJLOG_APPLY_THREADS")) && *v &&
        parse_int("OBJLOG_APPLY_THREADS", v, 1, OBJLOG_APPLY_THREADS_MAX, &c->apply_threads) < 0)
        return -1;
    if ((v = getenv("OBJLOG_MEMTABLE_MB")) && *v &&
        parse_int("OBJLOG_MEMTABLE_MB", v, 4, 1 << 20, &c->memtable_mb) < 0)
        return -1;
    if ((v = getenv("OBJLOG_REQUEST_TIMEOUT_MS")) && *v &&
        parse_int("OBJLOG_REQUEST_TIMEOUT_MS", v, 100, 3600000, &c->request_timeout_ms) < 0)
        return -1;
    if ((v = getenv("OBJLOG_IDLE_TIMEOUT_MS")) && *v &&
        parse_int("OBJLOG_IDLE_TIMEOUT_MS", v, 100, 3600000, &c->idle_timeout_ms) < 0)
        return -1;
    if ((v = getenv("OBJLOG_BROKERS")) && *v)
        c->brokers = v;
    if ((v = getenv("OBJLOG_TOPIC")) && *v)
        c->topic = v;
    if ((v = getenv("OBJLOG_DATA")) && *v)
        c->data = v;
    if ((v = getenv("OBJLOG_GROUP")) && *v)
        c->group = v;
    if ((v = getenv("OBJLOG_CLUSTER")) && *v)
        c->cluster = v;
    if ((v = getenv("OBJLOG_ADVERTISE")) && *v)
        c->advertise = v;
    if ((v = getenv("OBJLOG_NODE_NAME")) && *v)
        c->node_name = v;
    if ((v = getenv("OBJLOG_TOKEN_SECRET_FILE")) && *v)
        c->token_secret_file = v;
    if ((v = getenv("OBJLOG_EVENTUAL_MAX_LAG")) && *v &&
        parse_int("OBJLOG_EVENTUAL_MAX_LAG", v, 0, INT_MAX, &c->eventual_max_lag) < 0)
        return -1;
    if ((v = getenv("OBJLOG_S3_LISTEN")) && *v && parse_s3_listen("OBJLOG_S3_LISTEN", v, c) < 0)
        return -1;
    if ((v = getenv("OBJLOG_S3_REGION")) && *v)
        c->s3_region = v;
    if ((v = getenv("OBJLOG_S3_DOMAIN")) && *v)
        c->s3_domain = v;
    if ((v = getenv("OBJLOG_API_CREDENTIALS")) && *v)
        c->api_credentials = v;
    if ((v = getenv("OBJLOG_KAFKA_CONFIG")) && *v)
        c->kafka_config = v;
    if ((v = getenv("OBJLOG_TLS_CERT")) && *v)
        c->tls_cert = v;
    if ((v = getenv("OBJLOG_TLS_KEY")) && *v)
        c->tls_key = v;
    if ((v = getenv("OBJLOG_TLS_CA")) && *v)
        c->tls_ca = v;
    if ((v = getenv("OBJLOG_S3_BLOB_URL")) && *v)
        c->s3_blob_url = v;
    if ((v = getenv("OBJLOG_BLOB_DIR")) && *v)
        c->blob_dir = v;
    if ((v = getenv("OBJLOG_BLOB_RELEASE_TOPIC")) && *v)
        c->blob_release_topic = v;
    if ((v = getenv("OBJLOG_STANDBYS")) && *v &&
        parse_int("OBJLOG_STANDBYS", v, 0, OBJLOG_CLUSTER_STANDBYS_MAX, &c->standbys) < 0)
        return -1;
    if ((v = getenv("OBJLOG_PARTITIONS")) && *v &&
        parse_int("OBJLOG_PARTITIONS", v, 1, 4096, &c->partitions) < 0)
        return -1;
    if ((v = getenv("OBJLOG_THREADS")) && *v &&
        parse_int("OBJLOG_THREADS", v, 1, 256, &c->threads) < 0)
        return -1;
    if ((v = getenv("OBJLOG_FETCH_WAIT_MS")) && *v &&
        parse_int("OBJLOG_FETCH_WAIT_MS", v, 1, 10000, &c->fetch_wait_ms) < 0)
        return -1;
    if ((v = getenv("OBJLOG_LISTEN")) && *v && parse_listen("OBJLOG_LISTEN", v, c) < 0)
        return -1;
    if ((v = getenv("OBJLOG_READY_MAX_LAG")) && *v &&
        parse_int("OBJLOG_READY_MAX_LAG", v, 1, INT_MAX, &c->ready_max_lag) < 0)
        return -1;
    if ((v = getenv("OBJLOG_MAX_TIMEOUT_MS")) && *v &&
        parse_int("OBJLOG_MAX_TIMEOUT_MS", v, 1, 3600000, &c->max_timeout_ms) < 0)
        return -1;
    if ((v = getenv("OBJLOG_RATE_LIMIT_BUCKET")) && *v &&
        parse_rate("OBJLOG_RATE_LIMIT_BUCKET", v, c->rl_bucket) < 0)
        return -1;
    if ((v = getenv("OBJLOG_RATE_LIMIT_TENANT")) && *v &&
        parse_rate("OBJLOG_RATE_LIMIT_TENANT", v, c->rl_tenant) < 0)
        return -1;
    if ((v = getenv("OBJLOG_AUTO_SPLIT")) && *v)
        c->auto_split = strcmp(v, "0") != 0;
    if ((v = getenv("OBJLOG_AUTO_SPLIT_RATE")) && *v &&
        parse_int("OBJLOG_AUTO_SPLIT_RATE", v, 1, INT_MAX, &c->auto_split_rate) < 0)
        return -1;
    if ((v = getenv("OBJLOG_AUTO_SPLIT_SECONDS")) && *v &&
        parse_int("OBJLOG_AUTO_SPLIT_SECONDS", v, 1, 3600, &c->auto_split_seconds) < 0)
        return -1;
    if ((v = getenv("OBJLOG_SLOWDOWN_LAG")) && *v &&
        parse_int("OBJLOG_SLOWDOWN_LAG", v, 0, INT_MAX, &c->slowdown_lag) < 0)
        return -1;
    if ((v = getenv("OBJLOG_TEST_APPLY_DELAY_MS")) && *v &&
        parse_int("OBJLOG_TEST_APPLY_DELAY_MS", v, 0, 60000, &c->test_apply_delay_ms) < 0)
        return -1;
    if ((v = getenv("OBJLOG_LIFECYCLE_INTERVAL_MS")) && *v &&
        parse_int("OBJLOG_LIFECYCLE_INTERVAL_MS", v, 0, 86400000, &c->lifecycle_interval_ms) < 0)
        return -1;
    if ((v = getenv("OBJLOG_LIFECYCLE_MAX_RATE")) && *v &&
        parse_int("OBJLOG_LIFECYCLE_MAX_RATE", v, 0, 10000000, &c->lifecycle_max_rate) < 0)
        return -1;
    if ((v = getenv("OBJLOG_TEST_LIFECYCLE_CLOCK_OFFSET_MS")) && *v &&
        parse_offset("OBJLOG_TEST_LIFECYCLE_CLOCK_OFFSET_MS", v, &c->test_lc_offset_ms) < 0)
        return -1;
    if ((v = getenv("OBJLOG_TEST_HANDOFF_PAUSE_MS")) && *v &&
        parse_int("OBJLOG_TEST_HANDOFF_PAUSE_MS", v, 0, 600000, &c->test_handoff_pause_ms) < 0)
        return -1;
    return 0;
}

enum {
    OPT_EMBEDDED = 256, OPT_KAFKA_ONLY, OPT_BROKERS, OPT_TOPIC, OPT_DATA, OPT_GROUP,
    OPT_NO_CREATE_TOPICS, OPT_ALLOW_UNSAFE_TOPICS, OPT_PARTITIONS, OPT_THREADS,
    OPT_FETCH_WAIT_MS, OPT_READY_MAX_LAG, OPT_MAX_TIMEOUT_MS, OPT_TEST_APPLY_DELAY_MS,
    OPT_TEST_NO_STATS, OPT_LISTEN, OPT_VERSION, OPT_MAX_CONNECTIONS, OPT_REQUEST_TIMEOUT_MS,
    OPT_IDLE_TIMEOUT_MS, OPT_LOG_FORMAT, OPT_ACCESS_LOG, OPT_BLOCK_CACHE_MB, OPT_MEMTABLE_MB, OPT_WAL,
    OPT_FLUSH_INTERVAL_MS, OPT_APPLY_THREADS, OPT_CLUSTER,
    OPT_ADVERTISE, OPT_TOKEN_SECRET_FILE, OPT_EVENTUAL_MAX_LAG, OPT_STANDBYS,
    OPT_S3_LISTEN, OPT_S3_REGION, OPT_S3_DOMAIN, OPT_S3_CREDENTIALS, OPT_S3_ANONYMOUS,
    OPT_INSECURE, OPT_API_CREDENTIALS, OPT_KAFKA_CONFIG, OPT_TLS_CERT, OPT_TLS_KEY,
    OPT_TLS_CA,
    OPT_S3_BLOB_URL, OPT_BLOB_DIR, OPT_BLOB_S3, OPT_BLOB_S3_CREDENTIALS, OPT_BLOB_RELEASE_TOPIC, OPT_LIFECYCLE_INTERVAL_MS, OPT_TEST_LC_OFFSET_MS, OPT_LIFECYCLE_MAX_RATE,
    OPT_TEST_HANDOFF_PAUSE_MS,
    OPT_RATE_LIMIT_BUCKET, OPT_RATE_LIMIT_TENANT, OPT_SLOWDOWN_LAG, OPT_AUTO_SPLIT,
    OPT_AUTO_SPLIT_RATE, OPT_AUTO_SPLIT_SECONDS, OPT_NODE_NAME
};

static const struct option objlogd_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"embedded", no_argument, NULL, OPT_EMBEDDED},
    {"kafka-only", no_argument, NULL, OPT_KAFKA_ONLY},
    {"brokers", required_argument, NULL, OPT_BROKERS},
    {"topic", required_argument, NULL, OPT_TOPIC},
    {"data", required_argument, NULL, OPT_DATA},
    {"group", required_argument, NULL, OPT_GROUP},
    {"no-create-topics", no_argument, NULL, OPT_NO_CREATE_TOPICS},
    {"allow-unsafe-topics", no_argument, NULL, OPT_ALLOW_UNSAFE_TOPICS},
    {"partitions", required_argument, NULL, OPT_PARTITIONS},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"fetch-wait-ms", required_argument, NULL, OPT_FETCH_WAIT_MS},
    {"ready-max-lag", required_argument, NULL, OPT_READY_MAX_LAG},
    {"max-timeout-ms", required_argument, NULL, OPT_MAX_TIMEOUT_MS},
    {"test-apply-delay-ms", required_argument, NULL, OPT_TEST_APPLY_DELAY_MS},
    {"test-no-stats", no_argument, NULL, OPT_TEST_NO_STATS},
    {"lifecycle-interval-ms", required_argument, NULL, OPT_LIFECYCLE_INTERVAL_MS},
    {"lifecycle-max-rate", required_argument, NULL, OPT_LIFECYCLE_MAX_RATE},
    {"test-lifecycle-clock-offset-ms", required_argument, NULL, OPT_TEST_LC_OFFSET_MS},
    {"test-handoff-pause-ms", required_argument, NULL, OPT_TEST_HANDOFF_PAUSE_MS},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
    {"request-timeout-ms", required_argument, NULL, OPT_REQUEST_TIMEOUT_MS},
    {"idle-timeout-ms", required_argument, NULL, OPT_IDLE_TIMEOUT_MS},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"access-log", required_argument, NULL, OPT_ACCESS_LOG},
    {"block-cache-mb", required_argument, NULL, OPT_BLOCK_CACHE_MB},
    {"memtable-mb", required_argument, NULL, OPT_MEMTABLE_MB},
    {"wal", required_argument, NULL, OPT_WAL},
    {"flush-interval-ms", required_argument, NULL, OPT_FLUSH_INTERVAL_MS},
    {"apply-threads", required_argument, NULL, OPT_APPLY_THREADS},
    {"cluster", required_argument, NULL, OPT_CLUSTER},
    {"advertise", required_argument, NULL, OPT_ADVERTISE},
    {"node-name", required_argument, NULL, OPT_NODE_NAME},
    {"token-secret-file", required_argument, NULL, OPT_TOKEN_SECRET_FILE},
    {"eventual-max-lag", required_argument, NULL, OPT_EVENTUAL_MAX_LAG},
    {"standbys", required_argument, NULL, OPT_STANDBYS},
    {"s3-listen", required_argument, NULL, OPT_S3_LISTEN},
    {"s3-region", required_argument, NULL, OPT_S3_REGION},
    {"s3-domain", required_argument, NULL, OPT_S3_DOMAIN},
    {"s3-credentials", required_argument, NULL, OPT_S3_CREDENTIALS},
    {"s3-anonymous", no_argument, NULL, OPT_S3_ANONYMOUS},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"api-credentials", required_argument, NULL, OPT_API_CREDENTIALS},
    {"kafka-config", required_argument, NULL, OPT_KAFKA_CONFIG},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"s3-blob-url", required_argument, NULL, OPT_S3_BLOB_URL},
    {"blob-dir", required_argument, NULL, OPT_BLOB_DIR},
    {"blob-s3", required_argument, NULL, OPT_BLOB_S3},
    {"blob-s3-credentials", required_argument, NULL, OPT_BLOB_S3_CREDENTIALS},
    {"blob-release-topic", required_argument, NULL, OPT_BLOB_RELEASE_TOPIC},
    {"rate-limit-bucket", required_argument, NULL, OPT_RATE_LIMIT_BUCKET},
    {"rate-limit-tenant", required_argument, NULL, OPT_RATE_LIMIT_TENANT},
    {"slowdown-lag", required_argument, NULL, OPT_SLOWDOWN_LAG},
    {"auto-split", no_argument, NULL, OPT_AUTO_SPLIT},
    {"auto-split-rate", required_argument, NULL, OPT_AUTO_SPLIT_RATE},
    {"auto-split-seconds", required_argument, NULL, OPT_AUTO_SPLIT_SECONDS},
    {NULL, 0, NULL, 0}};

/* The long name of option code c, for messages. */
static const char *objlogd_option_name(int c) {
    for (const struct option *o = objlogd_options; o->name; o++)
        if (o->val == c)
            return o->name;
    return "?";
}

/* One parsed option; 0, or -1 after a message naming it. */
static int conf_option(objlogd_conf *c, int opt, const char *v) {
    char flag[64];
    snprintf(flag, sizeof(flag), "--%s", objlogd_option_name(opt));
    if (v && !*v && opt != OPT_LISTEN) {
        fprintf(stderr, "objlogd: %s needs a value\n", flag);
        return -1;
    }
    switch (opt) {
    case OPT_EMBEDDED: c->brokers = NULL; return 0;
    case OPT_KAFKA_ONLY: c->kafka_only = 1; return 0;
    case OPT_BROKERS: c->brokers = v; return 0;
    case OPT_TOPIC: c->topic = v; return 0;
    case OPT_DATA: c->data = v; return 0;
    case OPT_GROUP: c->group = v; return 0;
    case OPT_NO_CREATE_TOPICS: c->no_create_topics = 1; return 0;
    case OPT_ALLOW_UNSAFE_TOPICS: c->allow_unsafe_topics = 1; return 0;
    case OPT_TEST_NO_STATS: c->test_no_stats = 1; return 0;
    case OPT_PARTITIONS: return parse_int(flag, v, 1, 4096, &c->partitions);
    case OPT_THREADS: return parse_int(flag, v, 1, 256, &c->threads);
    case OPT_FETCH_WAIT_MS: return parse_int(flag, v, 1, 10000, &c->fetch_wait_ms);
    case OPT_READY_MAX_LAG: return parse_int(flag, v, 1, INT_MAX, &c->ready_max_lag);
    case OPT_MAX_TIMEOUT_MS: return parse_int(flag, v, 1, 3600000, &c->max_timeout_ms);
    case OPT_TEST_APPLY_DELAY_MS:
        return parse_int(flag, v, 0, 60000, &c->test_apply_delay_ms);
    case OPT_LIFECYCLE_INTERVAL_MS:
        return parse_int(flag, v, 0, 86400000, &c->lifecycle_interval_ms);
    case OPT_TEST_LC_OFFSET_MS: return parse_offset(flag, v, &c->test_lc_offset_ms);
    case OPT_TEST_HANDOFF_PAUSE_MS:
        return parse_int(flag, v, 0, 600000, &c->test_handoff_pause_ms);
    case OPT_LIFECYCLE_MAX_RATE:
        return parse_int(flag, v, 0, 10000000, &c->lifecycle_max_rate);
    case OPT_LISTEN: return parse_listen(flag, v, c);
    case OPT_MAX_CONNECTIONS: return parse_int(flag, v, 1, 1000000, &c->max_connections);
    case OPT_REQUEST_TIMEOUT_MS:
        return parse_int(flag, v, 100, 3600000, &c->request_timeout_ms);
    case OPT_IDLE_TIMEOUT_MS:
        return parse_int(flag, v, 100, 3600000, &c->idle_timeout_ms);
    case OPT_LOG_FORMAT: return parse_log_format(flag, v, c);
    case OPT_ACCESS_LOG: c->access_log = v; return 0;
    case OPT_BLOCK_CACHE_MB: return parse_int(flag, v, 1, 1 << 20, &c->block_cache_mb);
    case OPT_MEMTABLE_MB: return parse_int(flag, v, 4, 1 << 20, &c->memtable_mb);
    case OPT_WAL: return parse_wal(flag, v, c);
    case OPT_FLUSH_INTERVAL_MS: return parse_int(flag, v, 0, 86400000, &c->flush_interval_ms);
    case OPT_APPLY_THREADS:
        return parse_int(flag, v, 1, OBJLOG_APPLY_THREADS_MAX, &c->apply_threads);
    case OPT_CLUSTER: c->cluster = v; return 0;
    case OPT_ADVERTISE: c->advertise = v; return 0;
    case OPT_NODE_NAME: c->node_name = v; return 0;
    case OPT_TOKEN_SECRET_FILE: c->token_secret_file = v; return 0;
    case OPT_EVENTUAL_MAX_LAG: return parse_int(flag, v, 0, INT_MAX, &c->eventual_max_lag);
    case OPT_STANDBYS: return parse_int(flag, v, 0, OBJLOG_CLUSTER_STANDBYS_MAX, &c->standbys);
    case OPT_S3_LISTEN: return parse_s3_listen(flag, v, c);
    case OPT_S3_REGION: c->s3_region = v; return 0;
    case OPT_S3_DOMAIN: c->s3_domain = v; return 0;
    case OPT_S3_CREDENTIALS: c->s3_credentials = v; return 0;
    case OPT_S3_ANONYMOUS: c->s3_anonymous = 1; return 0;
    case OPT_INSECURE: c->insecure = 1; return 0;
    case OPT_API_CREDENTIALS: c->api_credentials = v; return 0;
    case OPT_KAFKA_CONFIG: c->kafka_config = v; return 0;
    case OPT_TLS_CERT: c->tls_cert = v; return 0;
    case OPT_TLS_KEY: c->tls_key = v; return 0;
    case OPT_TLS_CA: c->tls_ca = v; return 0;
    case OPT_S3_BLOB_URL: c->s3_blob_url = v; return 0;
    case OPT_BLOB_DIR: c->blob_dir = v; return 0;
    case OPT_BLOB_S3: c->blob_s3 = v; return 0;
    case OPT_BLOB_S3_CREDENTIALS: c->blob_s3_credentials = v; return 0;
    case OPT_BLOB_RELEASE_TOPIC: c->blob_release_topic = v; return 0;
    case OPT_RATE_LIMIT_BUCKET: return parse_rate(flag, v, c->rl_bucket);
    case OPT_RATE_LIMIT_TENANT: return parse_rate(flag, v, c->rl_tenant);
    case OPT_SLOWDOWN_LAG: return parse_int(flag, v, 0, INT_MAX, &c->slowdown_lag);
    case OPT_AUTO_SPLIT: c->auto_split = 1; return 0;
    case OPT_AUTO_SPLIT_RATE: return parse_int(flag, v, 1, INT_MAX, &c->auto_split_rate);
    case OPT_AUTO_SPLIT_SECONDS: return parse_int(flag, v, 1, 3600, &c->auto_split_seconds);
    default: return -1;
    }
}

/* 1 when host is a loopback address (what only this machine reaches). */
int objlogd_host_is_loopback(const char *host) {
    struct in_addr a4;
    struct in6_addr a6;
    if (strcmp(host, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* An open JSON API (no tokens) anyone on the network could reach is
 * refused: it reads, writes and deletes every tenant's objects. */
static int check_security(const objlogd_conf *c) {
    if (!c->tls_cert != !c->tls_key) {
        fprintf(stderr, "objlogd: --tls-cert and --tls-key go together\n");
        return -1;
    }
    if (c->kafka_config && !c->brokers) {
        fprintf(stderr, "objlogd: --kafka-config configures the clients of a real Kafka; it "
                        "needs --brokers (the embedded log takes no security settings)\n");
        return -1;
    }
    if (c->api_credentials || c->insecure || c->kafka_only || objlogd_host_is_loopback(c->host))
        return 0;
    fprintf(stderr, "objlogd: --listen %s is not a loopback address, and without "
                    "--api-credentials FILE the JSON API would let anyone who reaches it read "
                    "and delete every bucket; give --api-credentials (or --insecure)\n",
            c->host);
    return -1;
}

/* The S3 endpoint's settings mean nothing without its listener. */
static int check_s3(const objlogd_conf *c) {
    const char *orphan = c->s3 ? NULL
                         : c->s3_anonymous ? "--s3-anonymous"
                         : c->s3_region ? "--s3-region"
                         : c->s3_domain ? "--s3-domain"
                         : c->s3_credentials ? "--s3-credentials"
                         : c->s3_blob_url ? "--s3-blob-url"
                         : c->blob_dir ? "--blob-dir"
                         : c->blob_s3 ? "--blob-s3" : NULL;
    if (orphan) {
        fprintf(stderr, "objlogd: %s configures the S3 endpoint; it needs --s3-listen "
                        "HOST:PORT\n", orphan);
        return -1;
    }
    if ((c->blob_dir != NULL) + (c->s3_blob_url != NULL) + (c->blob_s3 != NULL) > 1) {
        fprintf(stderr, "objlogd: --blob-dir keeps the bytes here, --blob-s3 in an S3 "
                        "store, --s3-blob-url says a frontend keeps them elsewhere: give "
                        "one of them\n");
        return -1;
    }
    if ((c->blob_s3 != NULL) != (c->blob_s3_credentials != NULL)) {
        fprintf(stderr, "objlogd: --blob-s3 URL and --blob-s3-credentials FILE go "
                        "together\n");
        return -1;
    }
    if (c->s3 && !c->s3_anonymous && !c->s3_credentials) {
        fprintf(stderr, "objlogd: --s3-listen needs --s3-credentials FILE (signed "
                        "requests) or --s3-anonymous (or both)\n");
        return -1;
    }
    return 0;
}

/* A cluster name goes into a consumer group name, a URL into metrics
 * labels and Location headers: both are checked here, once. */
static int check_cluster(const objlogd_conf *c) {
    if (!c->cluster) {
        if (c->eventual_max_lag > 0) {
            fprintf(stderr, "objlogd: --eventual-max-lag is for cluster nodes; it needs "
                            "--cluster NAME\n");
            return -1;
        }
        if (c->standbys > 0) {
            fprintf(stderr, "objlogd: --standbys is for cluster nodes; it needs "
                            "--cluster NAME\n");
            return -1;
        }
        if (c->advertise) {
            fprintf(stderr, "objlogd: --advertise names a cluster node's URL; it needs "
                            "--cluster NAME\n");
            return -1;
        }
        return 0;
    }
    if (!c->brokers) {
        fprintf(stderr, "objlogd: --cluster needs --brokers (the nodes share a real "
                        "Kafka log; the embedded one lives in one process)\n");
        return -1;
    }
    if (c->group) {
        fprintf(stderr, "objlogd: --cluster sets the consumer group "
                        "(objlog-cluster-NAME); drop --group\n");
        return -1;
    }
    size_t n = strlen(c->cluster);
    if (n == 0 || n > 100 || strspn(c->cluster, "abcdefghijklmnopqrstuvwxyz"
                                                "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n) {
        fprintf(stderr, "objlogd: --cluster '%s': 1-100 characters of A-Z, a-z, 0-9, "
                        "'.', '_', '-'\n", c->cluster);
        return -1;
    }
    const char *u = c->advertise;
    const char *scheme = c->tls_cert ? "https://" : "http://";
    if (u && (strncmp(u, scheme, strlen(scheme)) != 0 || strlen(u) > 200 || strlen(u) < 9 ||
              strpbrk(u, "\"\\ \t\r\n") || u[strlen(u) - 1] == '/')) {
        fprintf(stderr, "objlogd: --advertise '%s': an %s URL (scheme, host, port; "
                        "no path, no trailing '/', at most 200 characters)%s\n", u, scheme,
                c->tls_cert ? "; the listeners serve TLS" : "");
        return -1;
    }
    return 0;
}

/* 0 ok, 1 --help, 2 --version, -1 bad flag (getopt_long: --opt=value,
 * --opt value, "--" ends the options; objlogd takes no operands). */
static int conf_from_args(objlogd_conf *c, int argc, char **argv) {
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", objlogd_options, NULL)) != -1) {
        if (opt == 'h')
            return 1;
        if (opt == OPT_VERSION)
            return 2;
        if (opt == '?') {
            fprintf(stderr, "objlogd: unknown flag %s\n", argv[optind - 1]);
            return -1;
        }
        if (opt == ':') {
            fprintf(stderr, "objlogd: %s needs a value\n", argv[optind - 1]);
            return -1;
        }
        if (conf_option(c, opt, optarg) < 0)
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "objlogd: unexpected argument '%s' (objlogd takes only flags)\n",
                argv[optind]);
        return -1;
    }
    if (c->kafka_only && c->brokers) {
        fprintf(stderr, "objlogd: --kafka-only runs the embedded cluster; drop --brokers\n");
        return -1;
    }
    return check_s3(c) < 0 || check_security(c) < 0 ? -1 : check_cluster(c);
}


int objlogd_conf_load(objlogd_conf *c, int argc, char **argv) {
    int rc = conf_from_env(c);
    return rc == 0 ? conf_from_args(c, argc, argv) : rc;
}
