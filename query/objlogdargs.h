/* objlogdargs.h: objlogd's command line (objlogdargs.c): its settings,
 * read from the OBJLOG_* environment and then the flags (getopt_long),
 * every combination that cannot work refused with a message naming the
 * flag before anything starts. */
#ifndef OBJLOG_QUERY_OBJLOGDARGS_H
#define OBJLOG_QUERY_OBJLOGDARGS_H

#include <stdio.h>

typedef struct objlogd_conf {
    int kafka_only;
    const char *brokers;         /* NULL: embedded */
    const char *topic;
    int partitions;
    const char *data;
    char host[64];
    int port;
    int threads;
    int fetch_wait_ms;           /* -1: 1 embedded, 100 with --brokers */
    int ready_max_lag;           /* /readyz: max lag in messages */
    int test_apply_delay_ms;     /* test only: sleep per applied batch */
    int lifecycle_interval_ms;   /* lifecycle worker period; 0 off */
    int lifecycle_max_rate;      /* Expire events per second; 0 unbounded */
    long long test_lc_offset_ms; /* test only: the worker's clock offset */
    int test_handoff_pause_ms;   /* test only: between a RangeOut and its RangeIn */
    int test_no_stats;           /* bench only: no stats view */
    int max_timeout_ms;          /* largest per-request timeout_ms */
    const char *group;           /* consumer group; NULL: objlogd_group() */
    int no_create_topics;        /* --brokers: never create missing topics */
    int allow_unsafe_topics;     /* --brokers: start despite unsafe configs */
    int max_connections;         /* 0: from the open-file limit */
    int request_timeout_ms;
    int idle_timeout_ms;         /* no request in progress: closed after it */
    const char *log_format;      /* text | json */
    const char *access_log;      /* NULL: none; "-": stderr */
    long long nofile;            /* the open-file limit in force */
    int block_cache_mb;          /* the store's shared block cache */
    int memtable_mb;             /* the store's memtable budget, all CFs */
    int wal;                     /* OBJLOG_STORE_WAL_ON / _OFF (default) */
    int flush_interval_ms;       /* WAL off: longest a write stays unflushed */
    int apply_threads;           /* 0: one per core */
    const char *cluster;         /* cluster name: a node of it */
    const char *advertise;       /* this node's URL; NULL: http://listen */
    const char *node_name;       /* on every log line; NULL: a cluster node's host:port */
    const char *token_secret_file; /* signs tokens; cluster nodes share it */
    int eventual_max_lag;        /* cluster: local eventual reads within it */
    int standbys;                /* cluster: other nodes applying each partition */
    int s3;                      /* --s3-listen given */
    char s3_host[64];
    int s3_port;
    const char *s3_region, *s3_domain, *s3_credentials, *s3_blob_url, *blob_dir;
    const char *blob_s3, *blob_s3_credentials; /* --blob-s3: bytes in an S3 store */
    const char *blob_release_topic; /* BlobReleased records go there */
    int s3_anonymous;
    int insecure;                /* credentials files others may read, or an
                                    open JSON API off loopback: allowed */
    const char *api_credentials; /* the JSON API's tokens; NULL: open */
    const char *kafka_config;    /* librdkafka properties of every client */
    const char *tls_cert, *tls_key, *tls_ca; /* TLS of listeners and peers */
    int rl_bucket[2], rl_tenant[2]; /* admission: RPS, BURST; 0 none */
    int slowdown_lag;            /* admission: hot-partition bound; 0 off */
    int auto_split;              /* --auto-split */
    int auto_split_rate;         /* events/s (default 20000) */
    int auto_split_seconds;      /* ... kept for this long (default 10) */
} objlogd_conf;

/* c (its defaults set) from the environment, then argv: 0 ok, 1 --help,
 * 2 --version, -1 a bad flag or combination (said on stderr). */
int objlogd_conf_load(objlogd_conf *c, int argc, char **argv);
void objlogd_usage(FILE *f);
/* 1 when host is a loopback address (127.0.0.0/8, ::1). */
int objlogd_host_is_loopback(const char *host);

#endif
