/* cluster.h: objlogd as a node of a cluster: which node applies which
 * partition (cluster.c), where a request goes by it (route.c), copying a partition from a peer's checkpoint
 * (bootstrap.c) and serving one's own (ckptserve.c), reads sent on to the
 * node that applies them (forward.c), and the signature on requests
 * between nodes (nodesign.c; nodeauth.h is its pure part). */
#ifndef OBJLOG_QUERY_CLUSTER_H
#define OBJLOG_QUERY_CLUSTER_H

#include <stdint.h>
#include <stdio.h>

#include "materializer.h"
#include "objlog.pb-c.h"
#include "server.h"

typedef struct cluster cluster;

/* How a forward ended (forward.c; objlog_cluster_forwards_total). */
typedef enum forward_result {
    FORWARD_ANSWERED,            /* the peer's answer was relayed */
    FORWARD_UNREACHABLE,         /* no answer from the peer: 503 */
    FORWARD_REFUSED,             /* not sent: second hop, or full: 503 */
    FORWARD_RESULTS
} forward_result;

/* ---- ckptserve.c: GET /v1/partitions/{p}/checkpoint ---- */
/* rest: the path after "/v1/partitions/". Answers later, from the export
 * thread's completion (never blocks the worker). */
void ckpt_serve(http_ctx *c, const char *rest);
/* The exports: per worker in server slot `slot` (a stopping worker ends
 * them), and their counters. */
typedef struct ckpt_server {
    int slot;
    atomic_int running;          /* exports in progress */
    atomic_uint_fast64_t served, bytes; /* answered 200, and their bytes */
} ckpt_server;
ckpt_server *ckpt_server_new(server *s, char *errstr, size_t errstr_size);
void ckpt_server_free(ckpt_server *k);

/* ---- cluster.c: which node applies which partition ---- */

/* ---- bootstrap.c: copying a partition from a peer's checkpoint ---- */

typedef struct bootstrap bootstrap;
/* key: the node key its fetches are signed with (NULL none; copied). */
bootstrap *bootstrap_new(objlog_query *q, const uint8_t *key, char *errstr,
                         size_t errstr_size);
/* Cancels a copy in flight (the partition is then empty and released). */
void bootstrap_destroy(bootstrap *b);
/* Starts copying p from the node at url unless a copy is under way or
 * offered already: 1 taken, 0 busy (offer it again later). */
int bootstrap_offer(bootstrap *b, int32_t p, const char *url);
/* Starts importing the range the RangeIn w waits for from the node at
 * url (one that applied w->from past w->from_offset), unless a copy is
 * under way or offered: 1 taken (w's bytes copied), 0 busy. */
int bootstrap_offer_range(bootstrap *b, const objlog_range_wait *w, const char *url);
/* 1 when the last range import failed from the node at url (the next
 * one tries another source first). */
int bootstrap_range_failed(bootstrap *b, const char *url);
/* 1 while p is being copied or offered. */
int bootstrap_busy(bootstrap *b, int32_t p);
/* 1 when no copy runs or is offered. */
int bootstrap_idle(bootstrap *b);
void bootstrap_metrics(FILE *f, bootstrap *b);

typedef struct cluster_conf {
    const char *name;            /* --cluster: the group */
    const char *self_url;        /* --advertise-url */
    int standbys;                /* --standbys */
    long long eventual_max_lag;  /* --eventual-max-lag: local eventual reads */
    const uint8_t *token_key;    /* the shared secret: signs node requests; NULL none */
} cluster_conf;
cluster *cluster_new(objlog_query *q, const cluster_conf *cf, char *errstr,
                     size_t errstr_size);
/* The key the nodes sign their requests with (nodeauth.h); NULL when the
 * nodes share no secret, or c is NULL. */
const uint8_t *cluster_node_key(const cluster *c);
/* forward.c's reads sent on, by how they ended (cluster_metrics). */
void cluster_forward_done(cluster *c, forward_result res);
/* forward.c's server slot; -1 without a cluster. */
int cluster_forward_slot(const cluster *c);
void cluster_destroy(cluster *c);
#define CLUSTER_URL_MAX 256
enum { CLUSTER_OWNER_UNKNOWN, CLUSTER_OWNER_SELF, CLUSTER_OWNER_PEER,
       CLUSTER_OWNER_UNREACHABLE };
/* The node a read of partition p goes to (url filled unless UNKNOWN):
 * SELF when this node applies p (as active or standby) and is caught up,
 * or hop (a forwarded read: answered by any replica); else the caught-up
 * peer replica with the least lag, the active one first; else SELF if it
 * applies p at all; else p's active node: PEER, or UNREACHABLE when it did
 * not answer the last refresh (it may be dead and its partitions about to
 * move). UNKNOWN: no node holds p (a rebalance). */
int cluster_pick(cluster *c, int32_t p, int hop, char *url, size_t n);
/* The node the group gave p to (its active replica, never a standby):
 * SELF, PEER or UNREACHABLE with url, UNKNOWN while none has it. */
int cluster_active(cluster *c, int32_t p, char *url, size_t n);
/* The node at url did not answer a request: unreachable until the next
 * refresh hears from it. */
void cluster_mark_down(cluster *c, const char *url);
const char *cluster_self(const cluster *c);
/* The URL of node's listener for face (a face's name: "json" is node
 * itself), as node advertised it. 0, or -1 when it advertises none. */
int cluster_face_url(cluster *c, const char *node, const char *face, char *out, size_t n);
/* This node's listeners but the JSON API's, {"s3": URL}, for its peers
 * (GET /v1/lag). */
json_t *cluster_listeners_json(const cluster *c);
/* For a request on parts[0..n): 0 when this node applies them all (or is
 * not a cluster node); else 1: it is forwarded to the node that applies
 * them (forward.c, answered later), or answered 503 while none does. */
int cluster_route(http_ctx *c, const int32_t *parts, int n);
/* GET /v1/cluster. */
void cluster_get(http_ctx *c);
/* Which node to ask for each of partitions 0..np-1 (a read that spans
 * them all): owner[p] indexes nodes[0..*nnodes), this node included (by
 * its own URL). 1 when some partition is another node's, 0 when this node
 * applies them all, -1 after replying 503 (a partition with no reachable
 * node). */
int cluster_plan(http_ctx *c, int np, char (*nodes)[CLUSTER_URL_MAX], int *nnodes, int *owner);
/* Appends "&name=" urlencoded value to *path (freed and NULL when out of
 * memory; nothing when value is NULL). */
void cluster_query_add(char **path, const char *name, const char *value);
/* "partitions=0,3,6" of a node asked by another (gathered reads): only[p]
 * set for each p < np. 0 none given (only untouched), 1 given, -1 after
 * replying 400 (malformed, or not sent by a node: no X-Objlog-Hop). */
int cluster_partitions_param(http_ctx *c, int np, unsigned char *only);
/* Blocking (gateway waiters): the outcome of the write at p.off from the
 * node that applies p, asked again as the partition moves, within
 * timeout_ms. 0 (*out owned by the caller), 1 not in time, -1 error
 * (err), CLUSTER_OUTCOME_LOCAL: p is applied here now, wait locally. */
#define CLUSTER_OUTCOME_LOCAL 2
int cluster_remote_outcome(cluster *c, objlog_materializer *m, int32_t p, int64_t off,
                           int timeout_ms, Objlog__Outcome **out, char *err, size_t en);
void cluster_metrics(FILE *f, cluster *c);

/* ---- nodesign.c: this node's signature on its requests to a peer ---- */
/* The subject (c's, or the node's own when c is NULL) and its signature
 * with key (cluster_node_key) into the two header values. 0, 1 when key
 * is NULL (the nodes share no secret: nothing to add), -1 error. */
int nodesign_headers(const uint8_t *key, const char *method, const char *target,
                     const void *body, size_t n, const http_ctx *c, char *subject,
                     size_t subject_size, char *auth, size_t auth_size);
/* The same added to an outgoing evhttp request (its body already in its
 * output buffer). 0, or -1. */
int nodesign_request(const uint8_t *key, struct evhttp_request *out, enum evhttp_cmd_type cmd,
                     const char *target, const http_ctx *c);
/* The node's own bodiless request of url: the two headers appended to hl
 * (returned; hl unchanged without a shared secret, NULL out of memory). */
struct curl_slist;
struct curl_slist *nodesign_curl(const uint8_t *key, const char *method, const char *url,
                                 struct curl_slist *hl);
const char *nodesign_method_name(enum evhttp_cmd_type cmd);
/* A peer node's signature on c's request (its body read whole), checked
 * with key (cluster_node_key; NULL: none here): 1 when it carries none; 0
 * when it checks out, *s the subject it signed; 2 the
 * same from a node serving without credentials ("open"); -1 refused, why
 * says why (no shared secret here, a bad or stale signature). */
struct apisubject;
int nodesign_check(const uint8_t *key, const http_ctx *c, struct apisubject *s, char *why,
                   size_t wn);

/* ---- forward.c: a read sent on to the node that applies its partition ---- */

/* The forwards' per-worker state as server hooks: the slot, or -1. */
int forward_register(server *s);
/* Sends c's request to node (a URL) and answers c with its answer later,
 * on this worker; or answers 503 now. Always 1 (c is answered or will be). */
/* part: the one partition the read is for (a node that does not answer is
 * then replaced by another replica of it, once), -1 several. */
int forward_request(http_ctx *c, const char *node, int32_t part);
/* One read asked of several nodes at once (a GET of paths[i] at nodes[i],
 * one hop, X-Objlog-Hop set); when every answer is in (status 0: none),
 * done runs on c's worker and must answer c. Always 1. */
#define GATHER_MAX 64
typedef struct gather_reply {
    int status;
    const char *body;            /* NUL-terminated */
    size_t len;
} gather_reply;
typedef void (*gather_done_fn)(http_ctx *c, const gather_reply *r, int n, void *arg);
/* A node's failed answer as c's error: the JSON error it sent (a fence not
 * met, a move), else 503 SlowDown. */
void forward_gather_error(http_ctx *c, const gather_reply *r);
int forward_gather(http_ctx *c, const char *const *nodes, const char *const *paths, int n,
                   gather_done_fn done, void *arg);
/* A read over every partition, planned (cluster_plan) for forward_gather:
 * the caller fills paths[0..nn) (plan 1 only) and frees it all with
 * cluster_gather_plan_free. */
typedef struct cluster_gather_plan {
    char (*nodes)[CLUSTER_URL_MAX];
    int *owner;                  /* owner[p]: node of partition p */
    int nn, plan;                /* plan: as cluster_plan, -2 out of memory */
    char *paths[GATHER_MAX];
    const char *urls[GATHER_MAX];
} cluster_gather_plan;
/* Plans g over np partitions; urls[i] = nodes[i]. Returns g->plan, after
 * replying 500 when -2 (503 when -1). */
int cluster_gather_plan_init(http_ctx *c, int np, cluster_gather_plan *g);
void cluster_gather_plan_free(cluster_gather_plan *g);

/* ---- bucketsgather.c: a bucket listing over every node ---- */
/* The first max buckets (by name; prefix, tenant and after NULL: none)
 * of every partition, asked of the nodes that apply them. done runs once
 * on c's worker and answers c: page (a JSON array of the nodes' bucket
 * objects, borrowed) and more (names remain after it), or failed (the
 * first node that did not answer 200; page NULL). 1 asked (done will
 * run), 2 answered c already (500, 503: done never runs), 0 this node
 * applies every partition (nothing done). */
typedef void cluster_buckets_fn(http_ctx *c, json_t *page, int more,
                                const gather_reply *failed, void *arg);
int cluster_buckets_gather(http_ctx *c, int max, const char *prefix, const char *tenant,
                           const char *after, cluster_buckets_fn *done, void *arg);

/* bucket's owner and ACL (its partition part), asked of a node that
 * applies part: 1 asked (c runs again with c->peer filled, or is
 * answered with that node's error: NoSuchBucket, 503) or answered 503 (no
 * node applies part); 0 this node applies part itself. */
int cluster_ask_owner(http_ctx *c, const char *bucket, int32_t part);

/* ---- the names objlogd gives a cluster's group and a node ---- */
/* Cluster nodes: the consumer group of cluster name, and the
 * client.id that names a node's URL to its peers. */
void objlog_cluster_group(const char *name, char *out, size_t n);
void objlog_cluster_client_id(const char *url, char *out, size_t n);

#endif
