/* route.c: where a request of a cluster node goes, by the membership
 * snapshot cluster.c keeps: this node, the caught-up replica with the
 * least lag, or the partition's active node (cluster_pick); a request
 * that spans partitions goes to one node that applies them all
 * (cluster_route), a read over every partition is planned node by node
 * (cluster_plan); and a write's outcome is asked of the node that
 * applies its partition as the partition moves.
 *
 * Invariant: routing only reads the snapshot (under the cluster's mu);
 * the one change it makes is cluster_mark_down, a node that did not
 * answer, until the next refresh hears from it.
 *
 * A circle with forward.c, on purpose: cluster_route decides where a
 * read goes and hands it to forward.c, which asks back (cluster_pick,
 * cluster_mark_down) for the next replica when a node does not answer. */
#define _GNU_SOURCE
#include "clusterint.h"
#include "server.h"
#include "watermark.h"

#include "bodybuf.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the node a partition's reads go to ---- */

int64_t cluster_replica_lag(const cluster *c, int32_t p, int i) {
    size_t at = (size_t)p * (size_t)c->nnodes + (size_t)i;
    if (!c->nodes[i].reachable || c->role[at] == OBJLOG_ROLE_NONE || c->applied[at] < 0)
        return -1;
    int64_t end = c->parts[p].end;
    return end > c->applied[at] ? end - c->applied[at] : 0;
}

/* The caught-up peer replica of p with the least lag, preferring the
 * active node; -1 none. c->mu held. */
static int cluster_best_peer(const cluster *c, int32_t p) {
    int owner = c->parts[p].owner, best = -1;
    int64_t best_lag = CLUSTER_CAUGHT_UP + 1;
    if (owner >= 0 && !c->nodes[owner].self) {
        int64_t lag = cluster_replica_lag(c, p, owner);
        if (lag >= 0 && lag <= CLUSTER_CAUGHT_UP)
            return owner;
    }
    for (int i = 0; i < c->nnodes; i++) {
        int64_t lag = c->nodes[i].self ? -1 : cluster_replica_lag(c, p, i);
        if (lag >= 0 && lag < best_lag) {
            best = i;
            best_lag = lag;
        }
    }
    return best;
}

int cluster_pick(cluster *c, int32_t p, int hop, char *url, size_t n) {
    objlog_query *q = c->q;
    if (p < 0 || p >= c->nparts)
        return CLUSTER_OWNER_UNKNOWN;
    int local = objlog_materializer_applies(q->m, p);
    int64_t end = wm_last_end(q->wm, p), applied = objlog_materializer_applied(q->m, p);
    /* A forwarded read is answered by any replica (one hop); a local one
     * that trails far (a partition it is replaying) gives way to a
     * caught-up peer. */
    if (local && (hop || end < 0 || end - applied <= CLUSTER_CAUGHT_UP)) {
        snprintf(url, n, "%s", c->self_url);
        return CLUSTER_OWNER_SELF;
    }
    int rc = local ? CLUSTER_OWNER_SELF : CLUSTER_OWNER_UNKNOWN;
    pthread_mutex_lock(&c->mu);
    int best = c->parts ? cluster_best_peer(c, p) : -1;
    int owner = c->parts ? c->parts[p].owner : -1;
    if (best >= 0) {
        rc = CLUSTER_OWNER_PEER;
        snprintf(url, n, "%s", c->nodes[best].url);
    } else if (local) {
        snprintf(url, n, "%s", c->self_url);
    } else if (owner >= 0) {
        const cluster_node *nd = &c->nodes[owner];
        /* The snapshot naming this node, which does not apply p, is
         * stale: the group is moving p. */
        rc = nd->self        ? CLUSTER_OWNER_UNKNOWN
             : nd->reachable ? CLUSTER_OWNER_PEER
                             : CLUSTER_OWNER_UNREACHABLE;
        snprintf(url, n, "%s", nd->url);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int cluster_active(cluster *c, int32_t p, char *url, size_t n) {
    if (p < 0 || p >= c->nparts)
        return CLUSTER_OWNER_UNKNOWN;
    if (objlog_materializer_role(c->q->m, p) == OBJLOG_ROLE_ACTIVE) {
        snprintf(url, n, "%s", c->self_url);
        return CLUSTER_OWNER_SELF;
    }
    int rc = CLUSTER_OWNER_UNKNOWN;
    pthread_mutex_lock(&c->mu);
    int owner = c->parts ? c->parts[p].owner : -1;
    if (owner >= 0 && !c->nodes[owner].self) {
        rc = c->nodes[owner].reachable ? CLUSTER_OWNER_PEER : CLUSTER_OWNER_UNREACHABLE;
        snprintf(url, n, "%s", c->nodes[owner].url);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void cluster_mark_down(cluster *c, const char *url) {
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->nnodes; i++)
        if (!c->nodes[i].self && strcmp(c->nodes[i].url, url) == 0)
            c->nodes[i].reachable = 0;
    pthread_mutex_unlock(&c->mu);
}

const char *cluster_self(const cluster *c) { return c->self_url; }

/* ---- routing a request to the node that applies its partitions ---- */

/* A node that applies every one of parts[0..n) and is caught up on each
 * (this one first): SELF, or PEER with url; UNKNOWN none. */
static int cluster_common(cluster *c, const int32_t *parts, int n, char *url, size_t un) {
    objlog_query *q = c->q;
    int self_ok = 1;
    for (int i = 0; i < n && self_ok; i++) {
        int64_t end = wm_last_end(q->wm, parts[i]);
        self_ok = objlog_materializer_applies(q->m, parts[i]) &&
                  (end < 0 || end - objlog_materializer_applied(q->m, parts[i]) <=
                                  CLUSTER_CAUGHT_UP);
    }
    if (self_ok)
        return CLUSTER_OWNER_SELF;
    int found = -1;
    pthread_mutex_lock(&c->mu);
    for (int k = 0; c->parts && found < 0 && k < c->nnodes; k++) {
        int all = !c->nodes[k].self;
        for (int i = 0; all && i < n; i++) {
            int64_t lag = parts[i] >= 0 && parts[i] < c->nparts
                              ? cluster_replica_lag(c, parts[i], k) : -1;
            all = lag >= 0 && lag <= CLUSTER_CAUGHT_UP;
        }
        if (all) {
            found = k;
            snprintf(url, un, "%s", c->nodes[k].url);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return found >= 0 ? CLUSTER_OWNER_PEER : CLUSTER_OWNER_UNKNOWN;
}

/* An eventual read may take this node's copy of p, applied or not here,
 * while it trails the log's newest known end by at most the flag's lag. */
static int cluster_local_enough(http_ctx *hc, int32_t p) {
    objlog_query *q = hc->q;
    if (q->cluster->eventual_max_lag <= 0 || objlog_materializer_held(q->m, p))
        return 0; /* never rows an import is replacing */
    const char *mode = http_param_or_header(hc, "consistency", "X-Objlog-Consistency");
    if (!mode || strcmp(mode, "eventual") != 0)
        return 0;
    int64_t end = wm_last_end(q->wm, p);
    return end >= 0 &&
           end - objlog_materializer_applied(q->m, p) <= q->cluster->eventual_max_lag;
}

int cluster_route(http_ctx *hc, const int32_t *parts, int n) {
    cluster *c = hc->q->cluster;
    if (!c)
        return 0;
    char url[CLUSTER_URL_MAX] = "", first[CLUSTER_URL_MAX] = "";
    int32_t part = -1;
    int any_self = 0, several = 0;
    for (int i = 0; i < n; i++) {
        int32_t p = parts[i];
        if (cluster_local_enough(hc, p))
            continue;
        int who = cluster_pick(c, p, http_hop(hc), url, sizeof(url));
        any_self |= who == CLUSTER_OWNER_SELF;
        if (who == CLUSTER_OWNER_SELF)
            continue;
        if (who == CLUSTER_OWNER_UNREACHABLE) {
            /* Sending the client to a node that may be dead helps nobody;
             * the group moves its partitions within its session timeout. */
            http_reply_error(hc, 503, "SlowDown",
                             "partition %d is applied by node %s, which did not answer "
                             "the last membership refresh; retry", (int)p, url);
            return 1;
        }
        if (who != CLUSTER_OWNER_PEER) {
            /* Nobody (or, by a stale snapshot, we) holds it: the group is
             * moving it. A retry after the move finds its node. */
            http_reply_error(hc, 503, "SlowDown",
                             "partition %d has no active node right now (the cluster "
                             "is rebalancing); retry", (int)p);
            return 1;
        }
        if (!first[0]) {
            snprintf(first, sizeof(first), "%s", url);
            part = p;
        } else if (strcmp(first, url) != 0) {
            several = 1;
        }
    }
    if (!first[0])
        return 0;
    /* Some partitions here and some there, or on several peers: one node
     * that applies them all answers (a bucket split over partitions of
     * different nodes, read where a standby joins them). */
    if (several || any_self) {
        int who = cluster_common(c, parts, n, first, sizeof(first));
        if (who == CLUSTER_OWNER_SELF)
            return 0;
        if (who != CLUSTER_OWNER_PEER) {
            http_reply_error(hc, 503, "SlowDown",
                             "this request spans partitions that no single node applies "
                             "(%d of them; one is on %s); such reads are not gathered "
                             "across nodes yet", n, url);
            return 1;
        }
    }
    return forward_request(hc, first, n == 1 ? part : -1);
}

/* Every gathered read (bucket listing, stats) sets up and frees its plan
 * the same way: one place for the allocations and the 500. */
int cluster_gather_plan_init(http_ctx *c, int np, cluster_gather_plan *g) {
    memset(g, 0, sizeof(*g));
    g->nodes = calloc(GATHER_MAX, sizeof(*g->nodes));
    g->owner = calloc((size_t)np, sizeof(*g->owner));
    g->plan = g->nodes && g->owner ? cluster_plan(c, np, g->nodes, &g->nn, g->owner) : -2;
    if (g->plan == -2)
        http_reply_error(c, 500, "InternalError", "out of memory");
    for (int i = 0; g->plan == 1 && i < g->nn; i++)
        g->urls[i] = g->nodes[i];
    return g->plan;
}

void cluster_gather_plan_free(cluster_gather_plan *g) {
    for (int i = 0; i < g->nn; i++)
        free(g->paths[i]);
    free(g->nodes);
    free(g->owner);
}

int cluster_plan(http_ctx *hc, int np, char (*nodes)[CLUSTER_URL_MAX], int *nnodes,
                 int *owner) {
    cluster *c = hc->q->cluster;
    int others = 0;
    *nnodes = 0;
    for (int p = 0; p < np; p++) {
        char url[CLUSTER_URL_MAX];
        int who = cluster_pick(c, p, 0, url, sizeof(url));
        if (who == CLUSTER_OWNER_PEER) {
            others = 1;
        } else if (who != CLUSTER_OWNER_SELF) {
            http_reply_error(hc, 503, "SlowDown",
                             "partition %d has no reachable node right now (the cluster "
                             "is rebalancing); retry", p);
            return -1;
        }
        int i = 0;
        while (i < *nnodes && strcmp(nodes[i], url) != 0)
            i++;
        if (i == *nnodes) {
            if (i == GATHER_MAX) {
                http_reply_error(hc, 503, "SlowDown", "more than %d nodes to ask", GATHER_MAX);
                return -1;
            }
            snprintf(nodes[i], CLUSTER_URL_MAX, "%s", url);
            (*nnodes)++;
        }
        owner[p] = i;
    }
    return others;
}

/* ---- a gathered read's request to each node ---- */

void cluster_query_add(char **path, const char *name, const char *value) {
    if (!*path || !value)
        return;
    char *esc = evhttp_uriencode(value, -1, 0), *np = NULL;
    if (esc && asprintf(&np, "%s&%s=%s", *path, name, esc) < 0)
        np = NULL;
    free(esc);
    free(*path);
    *path = np;
}

int cluster_partitions_param(http_ctx *c, int np, unsigned char *only) {
    size_t n;
    const char *v = http_param_get(c, "partitions", &n);
    if (!v)
        return 0;
    char *end = NULL;
    for (const char *s = v; *s; s = *end ? end + 1 : end) {
        long p = strtol(s, &end, 10);
        if (end == s || (*end && *end != ',') || p < 0 || p >= np || !http_hop(c)) {
            http_reply_error(c, 400, "InvalidArgument",
                             "partitions is for objlogd nodes: a list of 0..%d", np - 1);
            return -1;
        }
        only[p] = 1;
    }
    return 1;
}

/* ---- a write's outcome from the node that applied it ---- */

static int64_t cluster_left_ms(int64_t until) {
    int64_t now = cluster_mono_ms();
    return until > now ? until - now : 0;
}

/* One ask of url for the outcome at p.off: 0 got it, 1 not yet (or the
 * node moved on), -1 a final error (err). */
static int cluster_ask_outcome(cluster *c, CURL *h, const char *url, int32_t p, int64_t off,
                               int64_t ms, Objlog__Outcome **out, char *err, size_t en) {
    char u[CLUSTER_URL_MAX + 96];
    snprintf(u, sizeof(u), "%s/v1/writes/%d.%lld?timeout_ms=%lld", url, (int)p,
             (long long)off, (long long)ms);
    bodybuf b = {.max = 1 << 20};
    long status = 0;
    CURLcode cc = cluster_http_get(c, h, u,
                                   curl_slist_append(NULL, "Accept: application/x-protobuf"),
                                   (long)(ms + 1000), &b, &status);
    int rc = 1;
    if (cc == CURLE_OK && status == 200) {
        *out = objlog__outcome__unpack(NULL, b.len, (const uint8_t *)b.data);
        rc = *out ? 0 : -1;
        if (!*out)
            snprintf(err, en, "node %s sent an undecodable outcome", url);
    } else if (cc == CURLE_OK && (status == 404 || status == 410)) {
        snprintf(err, en, "node %s: no outcome stored at %d.%lld (HTTP %ld)", url, (int)p,
                 (long long)off, status);
        rc = -1;
    }
    bodybuf_free(&b);
    return rc;
}

/* 1 when the last request of h found nobody listening. */
static int cluster_refused(CURL *h) {
    long os_errno = 0;
    curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
    return os_errno == ECONNREFUSED;
}

int cluster_remote_outcome(cluster *c, objlog_materializer *m, int32_t p, int64_t off,
                           int timeout_ms, Objlog__Outcome **out, char *err, size_t en) {
    int64_t until = cluster_mono_ms() + timeout_ms;
    CURL *h = curl_easy_init();
    int rc = 1;
    *out = NULL;
    while (h && rc == 1 && !objlog_materializer_applies(m, p) && cluster_left_ms(until) > 0) {
        char url[CLUSTER_URL_MAX] = "";
        int64_t ms = cluster_left_ms(until);
        int asked = cluster_pick(c, p, 0, url, sizeof(url)) == CLUSTER_OWNER_PEER;
        if (asked)
            rc = cluster_ask_outcome(c, h, url, p, off, ms < 1000 ? ms : 1000, out, err, en);
        if (asked && rc == 1 && cluster_refused(h))
            cluster_mark_down(c, url); /* dead: ask a standby of p next */
        if (rc == 1) {
            struct timespec ts = {0, 100 * 1000 * 1000}; /* a rebalance under way */
            nanosleep(&ts, NULL);
        }
    }
    if (h)
        curl_easy_cleanup(h);
    if (rc == 1 && objlog_materializer_applies(m, p) && cluster_left_ms(until) > 0)
        return CLUSTER_OUTCOME_LOCAL;
    return rc;
}
