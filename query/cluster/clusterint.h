/* clusterint.h: the state of a cluster node's view of its cluster, shared
 * by the files that keep it (cluster.c: the refresher and what it shows)
 * and read it (route.c: where a request goes). Only the cluster
 * component includes it; everyone else goes through cluster.h.
 *
 * Invariant: the snapshot fields (nodes .. err) change only under mu, and
 * only the refresher replaces them (cluster_mark_down flips one node's
 * reachable in place). */
#ifndef OBJLOG_QUERY_CLUSTERINT_H
#define OBJLOG_QUERY_CLUSTERINT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include <curl/curl.h>

#include "bodybuf.h"
#include "cluster.h"
#include "core.h"
#include "nodeauth.h"
#include "objlog_logger.h"

#define CLUSTER_REFRESH_MS 1000
/* Between refreshes: how often to look for a partition waiting held. */
#define CLUSTER_HELD_POLL_MS 200
#define CLUSTER_ADMIN_TIMEOUT_MS 2000
#define CLUSTER_PEER_TIMEOUT_MS 1000
#define CLUSTER_CLIENT_PREFIX "objlogd@"
/* A replica within this many events of the log's end is caught up: reads
 * prefer it, and a standby beyond its placement is dropped only once the
 * active node is within it. The peers' figures are up to a second old. */
#define CLUSTER_CAUGHT_UP 10000
/* A partition applied here but this many events behind a peer's copy is
 * copied from that peer rather than applied from the log. */
#define CLUSTER_BOOTSTRAP_GAP 50000

/* A node's other listeners (its S3 endpoint), by face name, as its
 * GET /v1/lag advertises them. */
#define CLUSTER_MAX_FACES 4
typedef struct cluster_face {
    char name[16];
    char url[CLUSTER_URL_MAX];
} cluster_face;

typedef struct cluster_node {
    char url[CLUSTER_URL_MAX];   /* its JSON API: who it is */
    char name[OBJLOG_NODE_NAME_MAX + 1]; /* its --node-name, "" unknown */
    int self;
    int reachable;               /* its /v1/lag answered on the last refresh */
    char why[160];               /* !reachable: what asking it got */
    cluster_face faces[CLUSTER_MAX_FACES];
    int nfaces;
} cluster_node;

/* One partition as the last refresh saw it. */
typedef struct cluster_part {
    int owner;                   /* index into nodes, -1 none */
    int64_t applied, end;        /* at the owner, -1 unknown */
} cluster_part;

struct cluster {
    objlog_query *q;             /* borrowed */
    int standbys;                /* K of --standbys */
    long long eventual_max_lag;  /* cluster_route: local eventual reads */
    int has_node_key;            /* the nodes share a secret (nodesign.c) */
    uint8_t node_key[NODEAUTH_KEY_LEN];
    atomic_uint_fast64_t forwards[FORWARD_RESULTS]; /* forward.c's, by result */
    int fwd_slot;                /* forward.c's per-worker state (server_slot) */
    uint8_t *want;               /* standby placement for this node, [nparts]
                                    (refresher thread only) */
    bootstrap *boot;             /* copies partitions from peers (bootstrap.c) */
    char *name, *group, *self_url, *topic;
    rd_kafka_t *rk;              /* admin requests only */
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* stop */
    int stop;
    /* The snapshot, under mu. */
    cluster_node *nodes;
    int nnodes;
    cluster_part *parts;
    int nparts;
    uint8_t *role;               /* [p * nnodes + i]: OBJLOG_ROLE_* node i said */
    int64_t *applied;            /* [p * nnodes + i]: its applied offset, -1 */
    int64_t refreshed_ms;        /* monotonic ms of the last good refresh, 0 never */
    char err[256];               /* why the last refresh failed, "" if it did not */
    uint64_t refreshes, failures;
    struct peers *peers;         /* peers.c: what the refreshes said of each peer, under mu */
};

static inline int64_t cluster_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One GET of url by this node, signed (nodesign_curl) and with the
 * cluster's CA, within timeout_ms; hl: more headers (taken, may be NULL).
 * The body goes to b, the HTTP status (0 none) to *status. */
CURLcode cluster_http_get(cluster *c, CURL *h, const char *url, struct curl_slist *hl,
                          long timeout_ms, bodybuf *b, long *status);

/* Events node i is behind the newest end anyone reported for p; -1 when
 * it does not apply p or is unreachable. c->mu held. */
int64_t cluster_replica_lag(const cluster *c, int32_t p, int i);

#endif
