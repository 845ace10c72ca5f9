/* core.h: the service's table of modules, the one thing every component
 * of objlogd's query service reaches the others through: a request's
 * context (http_ctx.q) points here. Each module owns its state behind its
 * own type; this struct only holds their handles and the settings they
 * share. service.c builds it, in dependency order, and tears it down in
 * the reverse.
 *
 * Invariant: a handle is set before the server starts and cleared only
 * after it stopped, so a worker never sees one change. */
#ifndef OBJLOG_QUERY_CORE_H
#define OBJLOG_QUERY_CORE_H

#include <stdint.h>

#include "materializer.h"
#include "objlog_producer.h"

typedef struct objlog_query objlog_query;
typedef struct server server;
typedef struct wm_cache wm_cache;
typedef struct fence_state fence_state;
typedef struct gateway gateway;
typedef struct ixdriver ixdriver;
typedef struct cluster cluster;
typedef struct ckpt_server ckpt_server;
typedef struct lc_worker lc_worker;
typedef struct admit admit;
typedef struct ranges_state ranges_state;
typedef struct tls_conf tls_conf;
typedef struct notifier notifier;
typedef struct blobgc blobgc;
typedef struct logring logring;

struct objlog_query {
    server *srv;                 /* workers, listeners, connections (server.h) */
    char *brokers;
    char *topic;
    char *control_topic;
    objlog_store *store;
    objlog_materializer *m;
    objlog_producer *producer;   /* ack=logged; the gateway awaits outcomes */
    wm_cache *wm;                /* coalesced end offsets (watermark.h) */
    int64_t ready_max_lag;       /* /readyz fails past this lag (messages) */
    uint8_t token_key[OBJLOG_TOKEN_SECRET_LEN]; /* signs continuation tokens */
    fence_state *fence;          /* parked reads, fence counters (read.h) */
    gateway *gw;                 /* the writes (write.h) */
    ixdriver *ixd;               /* index backfill steps (workers.h) */
    cluster *cluster;            /* NULL unless a cluster node (cluster.h) */
    struct s3_conf *s3;          /* NULL unless --s3-listen (s3.h) */
    struct api_conf *api;        /* the JSON API's tokens (api.h) */
    tls_conf *tls;               /* TLS of listeners and peers (server.h); NULL none */
    ckpt_server *ckpt;           /* checkpoint exports (cluster.h) */
    lc_worker *lc;               /* the lifecycle worker (workers.h) */
    admit *admit;                /* admission control (admit.h) */
    ranges_state *ranges;        /* range handoffs (ranges.h) */
    notifier *notify;            /* the change feed's delivery (notifier.h) */
    blobgc *blobgc;              /* the blob directory's collector (blobgc.h); NULL none */
    logring *logring;            /* recent warnings and errors (logring.h); set first */
    int logring_sink;            /* 1: it is the logger's sink (the process's first service) */
};

#endif
