/* query.h: the query service and HTTP write gateway hosted by objlogd
 * (docs/ARCHITECTURE.md, "Reads" and "HTTP routes as built"), plus the
 * embedded Kafka cluster objlogd and the tests start (docs/ARCHITECTURE.md,
 * "Processes").
 *
 * objlog_query owns: N HTTP worker threads (one event_base + evhttp each,
 * all accepting from one listening socket that no other process can share),
 * a small pool of waiter threads for the write gateway, its own
 * libobjlog_producer (ack=logged; the gateway waits for the outcome on the
 * materializer itself) and one rd_kafka handle for end offsets, whose
 * ListOffsets requests concurrent strong reads share (watermark.c). It
 * borrows the store and the materializer: they must outlive it.
 */
#ifndef OBJLOG_QUERY_H
#define OBJLOG_QUERY_H

#include <stddef.h>

#include "materializer.h"

typedef struct objlog_query objlog_query;

typedef struct objlog_query_conf {
    const char *host;            /* listen address (default 127.0.0.1) */
    int port;                    /* 0: any free port, see objlog_query_port */
    int threads;                 /* HTTP worker threads (default 4) */
    const char *brokers;         /* bootstrap.servers (required) */
    const char *topic;           /* events topic (default objlog.events) */
    const char *control_topic;   /* default objlog.control */
    objlog_store *store;         /* borrowed */
    objlog_materializer *materializer; /* borrowed */
    int max_timeout_ms;          /* largest per-request timeout_ms (default
                                    30000) */
    long long ready_max_lag;     /* /readyz fails while a partition lags
                                    more messages (default 10000) */
    int max_connections;         /* open connections over all workers; past
                                    it new ones wait in the listen backlog,
                                    but for a few per worker on the JSON
                                    listener for /healthz, /readyz and
                                    /metrics (default 1024) */
    int request_timeout_ms;      /* a request's first byte to its last
                                    (default 10000); else 408, closed */
    int idle_timeout_ms;         /* a connection with no request in
                                    progress (before its first, between
                                    two) is closed after this (default
                                    5000) */
    int listen_fd;               /* with listen_fd_set: a socket bound and
                                    listening already (objlog_query_listen);
                                    host/port then only name it */
    int listen_fd_set;
    const char *cluster;         /* cluster name (objlogd --cluster), NULL:
                                    not a cluster node. The materializer must
                                    be in cluster mode in the group
                                    objlog_cluster_group(cluster) */
    const char *advertise_url;   /* this node's URL for its peers */
    long long eventual_max_lag;  /* cluster: an eventual read of a partition
                                    this node does not apply is answered
                                    here when its copy trails the log's end
                                    by at most this many events (0: always
                                    forwarded) */
    int no_index_driver;         /* tests: no BuildIndex steps appended
                                    (indexes stay building; ixdriver.c) */
    int standbys;                /* cluster: other nodes that also apply each
                                    partition (placement in cluster.c); the
                                    materializer needs conf standbys > 0 */
    const char *s3_host;         /* the S3 endpoint: NULL off */
    int s3_port;                 /* 0: any free port (objlog_query_s3_port) */
    int s3_listen_fd;            /* with s3_listen_fd_set: bound already */
    int s3_listen_fd_set;
    const char *s3_region;       /* NULL: us-east-1 */
    const char *s3_domain;       /* virtual-hosted style: Host BUCKET.DOMAIN;
                                    NULL: "localhost" */
    const char *s3_credentials;  /* file of "KEY_ID SECRET TENANT [admin]"
                                    lines, mode 0600 (see insecure) */
    int s3_anonymous;            /* unsigned requests allowed (tenant "") */
    int insecure;                /* credentials files group or others may
                                    read are loaded (with a warning) */
    const char *api_credentials; /* the JSON API's "TOKEN SUBJECT" lines,
                                    mode 0600; NULL: the API is open */
    const char *tls_cert, *tls_key; /* PEM: both listeners serve TLS */
    const char *tls_ca;          /* PEM CAs for peers' certificates; NULL:
                                    the system's */
    const char *s3_blob_url;     /* GetObject: 307 to this template ({bucket},
                                    {key}, {blob_id}, {version_id}) when
                                    there is no blob_dir */
    const char *blob_dir;        /* the S3 endpoint's blob store (blob.h);
                                    NULL none: a PUT with a body is refused
                                    unless s3_blob_url says where bytes go */
    const char *blob_s3;         /* blobs in this S3 store instead, blob_dir
                                    their spool (blob.h, remote backend) */
    const char *blob_s3_credentials;
    const char *blob_release_topic; /* BlobReleased records (the change
                                    feed's, notifier.h) go to this topic,
                                    exactly once; NULL: nowhere */
    const uint8_t *token_key;    /* OBJLOG_TOKEN_SECRET_LEN bytes that sign
                                    continuation tokens; NULL: the store's
                                    own secret. Nodes of a cluster share one
                                    (objlogd --token-secret-file), so a
                                    token outlives its partition's move */
    int lifecycle_interval_ms;   /* lifecycle worker scan period;
                                    0: no worker */
    long long lifecycle_clock_offset_ms; /* tests only: the worker's clock is
                                    wall + this (objects look days old) */
    unsigned auto_split_rate;    /* automatic splits (query/ranges/autosplit.c):
                                    events/s; 0 off */
    int auto_split_seconds;      /* ... kept for this many seconds */
    int test_handoff_pause_ms;   /* tests only: a handoff waits this long
                                    between its RangeOut and its RangeIn */
    int lifecycle_max_rate;      /* Expire events per second at most; 0:
                                    as fast as their outcomes come back */
    /* Admission control (query/admit/admit.c); 0: off. */
    unsigned rate_limit_bucket_rps, rate_limit_bucket_burst; /* default */
    unsigned rate_limit_tenant_rps, rate_limit_tenant_burst;
    long long slowdown_lag;      /* writes to a partition lagging more
                                    events than this: 503 SlowDown */
} objlog_query_conf;

#define QUERY_READY_MAX_LAG_DEFAULT 10000
/* objlogd --standbys: at most this many standbys per partition. */
#define OBJLOG_CLUSTER_STANDBYS_MAX 4
#define QUERY_MAX_CONNECTIONS_DEFAULT 1024
#define QUERY_REQUEST_TIMEOUT_MS_DEFAULT 10000
#define QUERY_IDLE_TIMEOUT_MS_DEFAULT 5000

/* Binds, creates the producer and starts serving. NULL with errstr. */
objlog_query *objlog_query_new(const objlog_query_conf *conf, char *errstr,
                               size_t errstr_size);
/* The bound port (the real one when conf->port was 0). */
int objlog_query_port(const objlog_query *q);
/* The S3 listener's bound port, -1 without one. */
int objlog_query_s3_port(const objlog_query *q);
/* Reads the credentials files again (SIGHUP); the keys in force stay when
 * a file is bad. 0 with what was loaded in errstr, or -1 with why. */
int objlog_query_reload(objlog_query *q, char *errstr, size_t errstr_size);
/* A listening socket on host:port (0: any free port, *bound_port says
 * which), for objlog_query_conf.listen_fd: objlogd binds before the
 * materializer starts so that a cluster node can name its own URL. The fd,
 * or -1 with errstr. */
int objlog_query_listen(const char *host, int port, int *bound_port, char *errstr,
                        size_t errstr_size);
/* Graceful: stops accepting, finishes in-flight requests (writes wait at
 * most their timeout for the outcome), flushes the producer, frees. */
void objlog_query_destroy(objlog_query *q);

/* ---- embedded Kafka (librdkafka mock cluster, 3 brokers) ---- */
typedef struct objlog_embedded_kafka objlog_embedded_kafka;

/* Starts the cluster, creates topic (partitions, rf 3), control_topic (1)
 * and dlq_topic (1), and publishes the default range map (epoch 1). The log
 * lives in memory (about 5 MB per partition): for trying objlog and tests. */
objlog_embedded_kafka *objlog_embedded_kafka_new(const char *topic,
                                                 int partitions,
                                                 const char *control_topic,
                                                 const char *dlq_topic,
                                                 char *errstr,
                                                 size_t errstr_size);
const char *objlog_embedded_kafka_bootstrap(const objlog_embedded_kafka *k);
void objlog_embedded_kafka_destroy(objlog_embedded_kafka *k);

/* 0 if every topic in the NULL-terminated list exists on brokers, else -1
 * with errstr naming the first missing one. */
int objlog_kafka_check_topics(const char *brokers, const char *const *topics,
                              int timeout_ms, char *errstr,
                              size_t errstr_size);

#endif
