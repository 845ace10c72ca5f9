/* peers.h: what a cluster node remembers of its peers from one membership
 * refresh to the next (peers.c): who joined, who stopped answering and
 * since when, who left the group and when, and the partitions each one
 * had, so that a departure is said once, in a WARN that names the node
 * and its partitions, and shown for a while after the group forgot it.
 * Only the cluster component includes it. */
#ifndef OBJLOG_QUERY_PEERS_H
#define OBJLOG_QUERY_PEERS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "clusterint.h"

/* A peer missing from a group that is not Stable yet (mid-rebalance the
 * coordinator may list no members) is declared gone only after this. */
#define PEERS_ABSENT_MS 5000
/* A departed peer stays in GET /v1/cluster and /metrics this long. */
#define PEERS_GONE_KEEP_MS (10 * 60 * 1000)

typedef struct peer peer;

typedef struct peers {
    peer *v;
    int n, cap;
    int nparts;
    int observed;                /* a refresh was seen: later peers "join" */
} peers;

void peers_init(peers *ps, int nparts);
void peers_free(peers *ps);

/* One good refresh: the members (nodes[0..n), this node among them),
 * each partition's active node (parts[p].owner) and every node's role
 * (role[p * n + i]); stable: the group is Stable and lists this node.
 * Logs what changed (a peer joined, stopped answering, answers again,
 * left) and forgets peers gone longer than PEERS_GONE_KEEP_MS. Times:
 * CLOCK_MONOTONIC and CLOCK_REALTIME ms. The caller holds the cluster's
 * mu (the snapshot and the peers change together). */
void peers_observe(peers *ps, const cluster_node *nodes, int n, const cluster_part *parts,
                   const uint8_t *role, int stable, int64_t mono_ms, int64_t real_ms);

/* GET /v1/cluster: the peers that left, newest first, as
 * [{"id","url","name","state":"gone","gone_at","gone_seconds_ago",
 * "partitions"}]. */
json_t *peers_departed_json(const peers *ps, int64_t real_ms);
/* The name peer url last gave (NULL unknown): a member that does not
 * answer now is still called by it. */
const char *peers_name(const peers *ps, const char *url);
/* When node url stopped answering (CLOCK_REALTIME ms), 0 while it answers
 * or is unknown. */
int64_t peers_down_since(const peers *ps, const char *url);
/* objlog_cluster_peer_up{node=URL,name=NAME}: 1 for a member that
 * answered the last refresh, 0 for one that did not and for one that
 * left (while it is remembered). */
void peers_metrics(FILE *f, const peers *ps);

#endif
