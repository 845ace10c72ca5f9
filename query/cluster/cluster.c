/* cluster.c: who holds which partition when objlogd runs as a node of a
 * cluster (`objlogd --cluster NAME --advertise URL`).
 *
 * The nodes of one cluster are the members of one Kafka consumer group
 * ("objlog-cluster-NAME"); the group's cooperative assignor decides which
 * node applies each partition as its active node (materializer.c, cluster
 * mode). A refresher thread asks the group coordinator who the members are
 * (DescribeConsumerGroups: each member's client.id is "objlogd@" and its
 * URL, its assignment the partitions it is active for) and each peer what
 * it applies and how far (its GET /v1/lag, with a role per partition),
 * once a second, and keeps the answer for routing (cluster_pick) and for
 * GET /v1/cluster.
 *
 * Standbys (--standbys K): the one thing decided here is which partitions
 * this node applies as a standby: those of which it is one of the K nodes
 * after the active one in URL order (every node computes the same ring
 * from the same membership), plus any it already applies as a standby
 * until that partition's active node has caught up (so a partition that
 * moves to a node without its state keeps a caught-up replica meanwhile).
 *
 * Invariant: the snapshot only routes; it never decides what is fresh. A
 * request sent to the wrong node (the snapshot lags a rebalance by up to a
 * second) is fenced there as anywhere, or sent on again; any replica that
 * applies a partition answers a read of it only after its own fence.
 *
 * Where a request goes by that snapshot is route.c's (clusterint.h holds
 * the state both read). A circle with forward.c and route.c, on purpose:
 * this file registers forward.c's per-worker hooks and counts its
 * results, forward.c asks route.c for the next replica, and route.c signs
 * with this file's node key. */
#define _GNU_SOURCE
#include "clusterint.h"
#include "peers.h"
#include "server.h"
#include "watermark.h"

#include "bodybuf.h"
#include "kafkaconf.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t cluster_real_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- one refresh ---- */

typedef struct snapshot {
    cluster_node *nodes;
    int nnodes;
    cluster_part *parts;
    uint8_t *role;
    int64_t *applied;
    int stable;                  /* the group is Stable, this node a member */
} snapshot;

static void snapshot_free(snapshot *s) {
    free(s->nodes);
    free(s->parts);
    free(s->role);
    free(s->applied);
}

/* Room for every node's report, once the members are known. */
static int snapshot_replicas(snapshot *s, int nparts) {
    size_t n = (size_t)nparts * (size_t)(s->nnodes > 0 ? s->nnodes : 1);
    s->role = calloc(n, sizeof(*s->role));
    s->applied = malloc(n * sizeof(*s->applied));
    if (!s->role || !s->applied)
        return -1;
    for (size_t i = 0; i < n; i++)
        s->applied[i] = -1;
    return 0;
}

static void snapshot_note(snapshot *s, int32_t p, int ni, int role, int64_t applied,
                          int64_t end) {
    s->role[(size_t)p * (size_t)s->nnodes + (size_t)ni] = (uint8_t)role;
    s->applied[(size_t)p * (size_t)s->nnodes + (size_t)ni] = applied;
    if (s->parts[p].owner == ni)
        s->parts[p].applied = applied;
    if (end > s->parts[p].end)
        s->parts[p].end = end;
}

static int snapshot_node(snapshot *s, const char *url, const char *self) {
    for (int i = 0; i < s->nnodes; i++)
        if (strcmp(s->nodes[i].url, url) == 0)
            return i;
    cluster_node *n = realloc(s->nodes, (size_t)(s->nnodes + 1) * sizeof(*n));
    if (!n)
        return -1;
    s->nodes = n;
    cluster_node *nd = &n[s->nnodes];
    memset(nd, 0, sizeof(*nd));
    snprintf(nd->url, sizeof(nd->url), "%s", url);
    nd->self = strcmp(url, self) == 0;
    return s->nnodes++;
}

/* The group's members and their partitions. 0, or -1 with why. */
static int cluster_describe(cluster *c, snapshot *s, char *why, size_t wn) {
    char err[256];
    rd_kafka_queue_t *rq = rd_kafka_queue_new(c->rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(c->rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    rd_kafka_AdminOptions_set_request_timeout(o, CLUSTER_ADMIN_TIMEOUT_MS, err, sizeof(err));
    const char *groups[1] = {c->group};
    rd_kafka_DescribeConsumerGroups(c->rk, groups, 1, o, rq);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(rq, CLUSTER_ADMIN_TIMEOUT_MS + 1000);
    int rc = -1;
    const rd_kafka_DescribeConsumerGroups_result_t *res =
        ev ? rd_kafka_event_DescribeConsumerGroups_result(ev) : NULL;
    size_t ng = 0;
    const rd_kafka_ConsumerGroupDescription_t **gs =
        res ? rd_kafka_DescribeConsumerGroups_result_groups(res, &ng) : NULL;
    if (!ev) {
        snprintf(why, wn, "describe group %s: no answer in %d ms", c->group,
                 CLUSTER_ADMIN_TIMEOUT_MS + 1000);
    } else if (rd_kafka_event_error(ev)) {
        snprintf(why, wn, "describe group %s: %s", c->group, rd_kafka_event_error_string(ev));
    } else if (ng != 1 || rd_kafka_ConsumerGroupDescription_error(gs[0])) {
        snprintf(why, wn, "describe group %s: %s", c->group,
                 ng != 1 ? "no answer for the group"
                         : rd_kafka_error_string(rd_kafka_ConsumerGroupDescription_error(gs[0])));
    } else {
        rc = 0;
        s->stable = rd_kafka_ConsumerGroupDescription_state(gs[0]) ==
                    RD_KAFKA_CONSUMER_GROUP_STATE_STABLE;
        size_t nm = rd_kafka_ConsumerGroupDescription_member_count(gs[0]);
        for (size_t i = 0; i < nm && rc == 0; i++) {
            const rd_kafka_MemberDescription_t *m =
                rd_kafka_ConsumerGroupDescription_member(gs[0], i);
            const char *cid = rd_kafka_MemberDescription_client_id(m);
            size_t pl = strlen(CLUSTER_CLIENT_PREFIX);
            if (!cid || strncmp(cid, CLUSTER_CLIENT_PREFIX, pl) != 0)
                continue; /* not an objlogd node (a lag tool, say) */
            int ni = snapshot_node(s, cid + pl, c->self_url);
            if (ni < 0) {
                snprintf(why, wn, "out of memory");
                rc = -1;
                break;
            }
            const rd_kafka_topic_partition_list_t *tp =
                rd_kafka_MemberAssignment_partitions(rd_kafka_MemberDescription_assignment(m));
            for (int j = 0; tp && j < tp->cnt; j++) {
                int32_t p = tp->elems[j].partition;
                if (strcmp(tp->elems[j].topic, c->topic) == 0 && p >= 0 && p < c->nparts)
                    s->parts[p].owner = ni;
            }
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(rq);
    return rc;
}

static int cluster_role_of(const char *r, int active) {
    if (!r) /* a node that predates roles applies what it owns */
        return active ? OBJLOG_ROLE_ACTIVE : OBJLOG_ROLE_NONE;
    return strcmp(r, "active") == 0    ? OBJLOG_ROLE_ACTIVE
           : strcmp(r, "standby") == 0 ? OBJLOG_ROLE_STANDBY
                                       : OBJLOG_ROLE_NONE;
}

/* 1 when u is a URL a peer may be sent to: http(s)://, no space or
 * control character, short enough to keep. */
static int cluster_url_ok(const char *u) {
    if (!u || strlen(u) >= CLUSTER_URL_MAX ||
        (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0))
        return 0;
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '"' || *p == '\\' || *p == 0x7f)
            return 0;
    return 1;
}

/* A peer's "listeners": {"s3": "http://host:port"} into nd. */
static void cluster_note_faces(cluster_node *nd, json_t *listeners) {
    const char *name;
    json_t *v;
    nd->nfaces = 0;
    json_object_foreach(listeners, name, v) {
        const char *u = json_string_value(v);
        if (nd->nfaces == CLUSTER_MAX_FACES || strlen(name) >= sizeof(nd->faces[0].name) ||
            !cluster_url_ok(u))
            continue;
        cluster_face *f = &nd->faces[nd->nfaces++];
        snprintf(f->name, sizeof(f->name), "%s", name);
        snprintf(f->url, sizeof(f->url), "%s", u);
    }
}

CURLcode cluster_http_get(cluster *c, CURL *h, const char *url, struct curl_slist *hl,
                          long timeout_ms, bodybuf *b, long *status) {
    hl = nodesign_curl(cluster_node_key(c), "GET", url, hl);
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    if (tls_ca_file(c->q->tls))
        curl_easy_setopt(h, CURLOPT_CAINFO, tls_ca_file(c->q->tls));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bodybuf_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    *status = 0;
    CURLcode cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(hl);
    return cc;
}

/* 1 when a peer's name may go into a log line and a metric label: what
 * --node-name accepts. */
static int cluster_name_ok(const char *n) {
    size_t len = n ? strlen(n) : 0;
    return len > 0 && len <= OBJLOG_NODE_NAME_MAX &&
           strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-@") == len;
}

/* What a peer applies (active or standby) and how far, from its
 * GET /v1/lag. 0, or -1 (unreachable: left unknown). */
static int cluster_peer_lag(cluster *c, CURL *h, snapshot *s, int nparts, int ni) {
    char url[CLUSTER_URL_MAX + 16];
    snprintf(url, sizeof(url), "%s/v1/lag", s->nodes[ni].url);
    bodybuf b = {.max = 1 << 20};
    long status = 0;
    CURLcode cc = cluster_http_get(c, h, url, NULL, CLUSTER_PEER_TIMEOUT_MS, &b, &status);
    json_t *j = cc == CURLE_OK && status == 200 && b.data ? json_loads(b.data, 0, NULL) : NULL;
    bodybuf_free(&b);
    cluster_node *nd = &s->nodes[ni];
    if (cc != CURLE_OK)
        snprintf(nd->why, sizeof(nd->why), "GET /v1/lag: %s", curl_easy_strerror(cc));
    else if (!j)
        snprintf(nd->why, sizeof(nd->why), "GET /v1/lag: HTTP %ld%s", status,
                 status == 200 ? ", not JSON" : "");
    const char *name = json_string_value(json_object_get(j, "node"));
    if (cluster_name_ok(name))
        snprintf(nd->name, sizeof(nd->name), "%s", name);
    json_t *arr = json_object_get(j, "partitions");
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        json_int_t p = json_integer_value(json_object_get(e, "partition"));
        if (p < 0 || p >= nparts)
            continue;
        int role = cluster_role_of(json_string_value(json_object_get(e, "role")),
                                   s->parts[p].owner == ni);
        /* Applied offsets of partitions it no longer applies too: its copy
         * of them may still be the best one to bootstrap from. */
        snapshot_note(s, (int32_t)p, ni, role,
                      json_integer_value(json_object_get(e, "applied")),
                      json_integer_value(json_object_get(e, "end")));
    }
    s->nodes[ni].reachable = j != NULL;
    cluster_note_faces(&s->nodes[ni], json_object_get(j, "listeners"));
    json_decref(j);
    return j ? 0 : -1;
}

/* This node's own roles and offsets, read live. */
static void cluster_self_note(cluster *c, snapshot *s, int ni) {
    objlog_query *q = c->q;
    for (int32_t p = 0; p < c->nparts; p++) {
        int role = objlog_materializer_role(q->m, p);
        if (role != OBJLOG_ROLE_NONE)
            snapshot_note(s, p, ni, role, objlog_materializer_applied(q->m, p),
                          wm_last_end(q->wm, p));
    }
}

static int cluster_url_cmp(const void *a, const void *b) {
    const cluster_node *const *x = a, *const *y = b;
    return strcmp((*x)->url, (*y)->url);
}

/* Standby placement for this node (see the top of the file), handed to
 * the materializer. Partitions without an active node keep what this
 * node did for them: a failover must not drop the replicas it needs. */
static void cluster_place(cluster *c, snapshot *s) {
    const cluster_node **ring = malloc((size_t)s->nnodes * sizeof(*ring));
    if (!ring)
        return;
    int self = -1;
    for (int i = 0; i < s->nnodes; i++)
        ring[i] = &s->nodes[i];
    qsort(ring, (size_t)s->nnodes, sizeof(*ring), cluster_url_cmp);
    for (int i = 0; i < s->nnodes; i++)
        if (ring[i]->self)
            self = i;
    for (int32_t p = 0; self >= 0 && p < c->nparts; p++) {
        int owner = s->parts[p].owner;
        int mine = objlog_materializer_role(c->q->m, p);
        if (owner < 0 || mine == OBJLOG_ROLE_ACTIVE) {
            c->want[p] = owner < 0 ? c->want[p] : 0;
            continue;
        }
        const cluster_node *o = &s->nodes[owner];
        int at = 0;
        while (ring[at] != o)
            at++;
        int k = c->standbys < s->nnodes - 1 ? c->standbys : s->nnodes - 1;
        int placed = 0;
        for (int j = 1; j <= k; j++)
            placed |= ring[(at + j) % s->nnodes]->self;
        int64_t lag = s->parts[p].applied >= 0 && s->parts[p].end >= 0
                          ? s->parts[p].end - s->parts[p].applied : -1;
        int active_ready = o->reachable && lag >= 0 && lag <= CLUSTER_CAUGHT_UP;
        c->want[p] = placed || (mine == OBJLOG_ROLE_STANDBY && !active_ready);
    }
    free(ring);
    objlog_materializer_set_standbys(c->q->m, c->want);
}

/* The reachable peer whose copy of p is furthest along (any role: a node
 * that gave p up keeps its rows), -1 none with any of it applied. */
static int cluster_source(const cluster *c, const snapshot *s, int32_t p, int64_t *applied) {
    int src = -1;
    *applied = 0;
    for (int i = 0; i < s->nnodes; i++) {
        int64_t a = s->applied[(size_t)p * (size_t)s->nnodes + (size_t)i];
        if (!s->nodes[i].self && s->nodes[i].reachable && a > *applied) {
            src = i;
            *applied = a;
        }
    }
    (void)c;
    return src;
}

static int cluster_self_listed(const snapshot *s) {
    for (int i = 0; i < s->nnodes; i++)
        if (s->nodes[i].self)
            return 1;
    return 0;
}

/* No peer's copy of p is ahead of this node's: it applies the log from
 * where its store stands (offset 0 for a new node: the log is all there
 * is). */
static void cluster_release_to_log(cluster *c, int32_t p, int64_t local, const char *best_url,
                                   int64_t best) {
    if (best_url)
        objlog_logf(OBJLOG_LEVEL_INFO, "bootstrap",
                    "partition %d: no peer is ahead of offset %lld here (best: %s at %lld); "
                    "applying the log", (int)p, (long long)local, best_url, (long long)best);
    else
        objlog_logf(OBJLOG_LEVEL_INFO, "bootstrap",
                    "partition %d: no reachable peer has applied any of it; applying the log "
                    "from offset %lld", (int)p, (long long)local);
    objlog_materializer_release(c->q->m, p);
}

/* A RangeIn waiting here for its range: imported from a reachable peer
 * that applied its source past the RangeOut, preferring one that does not
 * apply the target (a node that applies both took the RangeIn itself, and
 * with it the RangeOut's marker the stream needs) and not the one the
 * last import failed from (it may have copied the source from a
 * checkpoint past the RangeOut: 404 NoSuchHandoff). */
static void cluster_range_plan(cluster *c, const snapshot *s, int32_t p) {
    objlog_range_wait w;
    if (!objlog_materializer_range_wait(c->q->m, p, &w))
        return;
    int src = -1, src_score = -1;
    for (int i = 0; w.from >= 0 && w.from < c->nparts && i < s->nnodes; i++) {
        size_t at = (size_t)w.from * (size_t)s->nnodes + (size_t)i;
        if (s->nodes[i].self || !s->nodes[i].reachable || s->applied[at] <= w.from_offset)
            continue;
        int score = (s->role[(size_t)p * (size_t)s->nnodes + (size_t)i] == OBJLOG_ROLE_NONE) +
                    2 * !bootstrap_range_failed(c->boot, s->nodes[i].url);
        if (score > src_score) {
            src = i;
            src_score = score;
        }
    }
    if (src >= 0)
        bootstrap_offer_range(c->boot, &w, s->nodes[src].url);
    objlog_range_wait_free(&w);
}

/* Fast bootstrap (bootstrap.c): a held partition (new here) is copied from
 * the peer furthest along, or released to the log when no reachable peer
 * has applied any of it; one applied here far behind a peer is copied too. */
static void cluster_bootstrap_plan(cluster *c, const snapshot *s) {
    objlog_materializer *m = c->q->m;
    for (int32_t p = 0; c->boot && p < c->nparts; p++) {
        if (!objlog_materializer_fetches(m, p) || bootstrap_busy(c->boot, p))
            continue;
        cluster_range_plan(c, s, p);
        int64_t best, local = objlog_materializer_applied(m, p);
        int src = cluster_source(c, s, p, &best);
        if (objlog_materializer_held(m, p)) {
            /* Mid-rebalance the group may list no members: "no peer has
             * it" is only believed of a stable group that includes us. */
            if (src >= 0 && best > local)
                bootstrap_offer(c->boot, p, s->nodes[src].url);
            else if (s->stable && cluster_self_listed(s))
                cluster_release_to_log(c, p, local, src >= 0 ? s->nodes[src].url : NULL, best);
        } else if (src >= 0 && best - local >= CLUSTER_BOOTSTRAP_GAP) {
            bootstrap_offer(c->boot, p, s->nodes[src].url);
        }
    }
}

static void cluster_refresh(cluster *c, CURL *h) {
    snapshot s = {0};
    char why[256] = "";
    s.parts = calloc((size_t)c->nparts, sizeof(*s.parts));
    int rc = s.parts ? 0 : -1;
    if (rc < 0)
        snprintf(why, sizeof(why), "out of memory");
    for (int p = 0; rc == 0 && p < c->nparts; p++)
        s.parts[p] = (cluster_part){.owner = -1, .applied = -1, .end = -1};
    if (rc == 0)
        rc = cluster_describe(c, &s, why, sizeof(why));
    if (rc == 0 && snapshot_replicas(&s, c->nparts) < 0) {
        snprintf(why, sizeof(why), "out of memory");
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < s.nnodes; i++) {
        if (s.nodes[i].self) {
            s.nodes[i].reachable = 1;
            if (objlog_logger_node())
                snprintf(s.nodes[i].name, sizeof(s.nodes[i].name), "%s", objlog_logger_node());
            cluster_self_note(c, &s, i);
        } else if (h) {
            cluster_peer_lag(c, h, &s, c->nparts, i);
        }
    }
    if (rc == 0 && c->standbys > 0)
        cluster_place(c, &s);
    if (rc == 0)
        cluster_bootstrap_plan(c, &s);
    pthread_mutex_lock(&c->mu);
    c->refreshes++;
    if (rc == 0) {
        free(c->nodes);
        free(c->parts);
        free(c->role);
        free(c->applied);
        c->nodes = s.nodes;
        c->nnodes = s.nnodes;
        c->parts = s.parts;
        c->role = s.role;
        c->applied = s.applied;
        c->refreshed_ms = cluster_mono_ms();
        c->err[0] = '\0';
        peers_observe(c->peers, c->nodes, c->nnodes, c->parts, c->role,
                      s.stable && cluster_self_listed(&s), c->refreshed_ms, cluster_real_ms());
    } else {
        c->failures++;
        snprintf(c->err, sizeof(c->err), "%s", why);
        snapshot_free(&s);
    }
    pthread_mutex_unlock(&c->mu);
}

/* 1 when a partition given to this node waits, held, for a decision
 * (bootstrap or release), or a RangeIn for its range: worth a refresh now
 * rather than in a second. */
static int cluster_held_waiting(cluster *c) {
    if (!bootstrap_idle(c->boot)) /* it takes one at a time: no hurry */
        return 0;
    for (int32_t p = 0; p < c->nparts; p++) {
        objlog_range_wait w;
        if (objlog_materializer_held(c->q->m, p) && objlog_materializer_fetches(c->q->m, p))
            return 1;
        if (objlog_materializer_range_wait(c->q->m, p, &w)) {
            objlog_range_wait_free(&w);
            return 1;
        }
    }
    return 0;
}

static void *cluster_main(void *arg) {
    cluster *c = arg;
    CURL *h = curl_easy_init();
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        pthread_mutex_unlock(&c->mu);
        cluster_refresh(c, h);
        pthread_mutex_lock(&c->mu);
        /* Once a second, or as soon as a new partition waits held (a
         * failover must not wait a whole period for its release). */
        int64_t next = cluster_mono_ms() + CLUSTER_REFRESH_MS;
        while (!c->stop && cluster_mono_ms() < next) {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_nsec += CLUSTER_HELD_POLL_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&c->cv, &c->mu, &until);
            pthread_mutex_unlock(&c->mu);
            int now = cluster_held_waiting(c);
            pthread_mutex_lock(&c->mu);
            if (now)
                break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    if (h)
        curl_easy_cleanup(h);
    return NULL;
}

/* ---- lifecycle ---- */

void cluster_destroy(cluster *c) {
    if (!c)
        return;
    if (c->thread_started) {
        pthread_mutex_lock(&c->mu);
        c->stop = 1;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    bootstrap_destroy(c->boot); /* after the refresher: nothing offers more */
    if (c->rk)
        rd_kafka_destroy(c->rk);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->nodes);
    free(c->parts);
    free(c->role);
    free(c->applied);
    if (c->peers)
        peers_free(c->peers);
    free(c->peers);
    free(c->want);
    free(c->name);
    free(c->group);
    free(c->self_url);
    free(c->topic);
    OPENSSL_cleanse(c->node_key, sizeof(c->node_key));
    free(c);
}

const uint8_t *cluster_node_key(const cluster *c) {
    return c && c->has_node_key ? c->node_key : NULL;
}

int cluster_forward_slot(const cluster *c) { return c ? c->fwd_slot : -1; }

void cluster_forward_done(cluster *c, forward_result res) {
    atomic_fetch_add_explicit(&c->forwards[res], 1, memory_order_relaxed);
}

cluster *cluster_new(objlog_query *q, const cluster_conf *cf, char *errstr,
                     size_t errstr_size) {
    const char *name = cf->name, *self_url = cf->self_url;
    cluster *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    c->q = q;
    c->nparts = objlog_materializer_partitions(q->m);
    c->standbys = cf->standbys > 0 ? cf->standbys : 0;
    if ((c->fwd_slot = forward_register(q->srv)) < 0) {
        snprintf(errstr, errstr_size, "cluster: too many server hooks");
        cluster_destroy(c);
        return NULL;
    }
    c->eventual_max_lag = cf->eventual_max_lag > 0 ? cf->eventual_max_lag : 0;
    if (cf->token_key) {
        if (nodeauth_key(cf->token_key, OBJLOG_TOKEN_SECRET_LEN, c->node_key) < 0) {
            snprintf(errstr, errstr_size, "http: cannot derive the node key");
            cluster_destroy(c);
            return NULL;
        }
        c->has_node_key = 1;
    }
    c->want = calloc((size_t)c->nparts, 1);
    if ((c->peers = malloc(sizeof(*c->peers))))
        peers_init(c->peers, c->nparts);
    c->name = strdup(name);
    c->self_url = strdup(self_url);
    c->topic = strdup(q->topic);
    size_t gn = strlen(name) + 32;
    c->group = malloc(gn);
    if (!c->name || !c->self_url || !c->topic || !c->group || !c->want || !c->peers) {
        snprintf(errstr, errstr_size, "out of memory");
        cluster_destroy(c);
        return NULL;
    }
    objlog_cluster_group(name, c->group, gn);
    char tmp[256];
    rd_kafka_conf_t *conf = objlog_kafka_conf_new(q->brokers, tmp, sizeof(tmp));
    if (conf)
        rd_kafka_conf_set_log_cb(conf, objlog_logger_rdkafka);
    if (!conf || !(c->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, tmp, sizeof(tmp)))) {
        snprintf(errstr, errstr_size, "cluster admin handle: %s", tmp);
        if (conf)
            rd_kafka_conf_destroy(conf);
        cluster_destroy(c);
        return NULL;
    }
    if (!(c->boot = bootstrap_new(q, cluster_node_key(c), errstr, errstr_size))) {
        cluster_destroy(c);
        return NULL;
    }
    if (pthread_create(&c->thread, NULL, cluster_main, c) != 0) {
        snprintf(errstr, errstr_size, "cluster thread: %s", strerror(errno));
        cluster_destroy(c);
        return NULL;
    }
    c->thread_started = 1;
    return c;
}

void objlog_cluster_group(const char *name, char *out, size_t n) {
    snprintf(out, n, "objlog-cluster-%s", name);
}

void objlog_cluster_client_id(const char *url, char *out, size_t n) {
    snprintf(out, n, CLUSTER_CLIENT_PREFIX "%s", url);
}

int cluster_face_url(cluster *c, const char *node, const char *face, char *out, size_t n) {
    if (strcmp(face, "json") == 0) {
        snprintf(out, n, "%s", node);
        return 0;
    }
    int rc = -1;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->nnodes && rc < 0; i++) {
        if (strcmp(c->nodes[i].url, node) != 0)
            continue;
        for (int k = 0; k < c->nodes[i].nfaces && rc < 0; k++) {
            if (strcmp(c->nodes[i].faces[k].name, face) == 0) {
                snprintf(out, n, "%s", c->nodes[i].faces[k].url);
                rc = 0;
            }
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

json_t *cluster_listeners_json(const cluster *c) {
    json_t *o = json_object();
    struct evhttp_uri *u = evhttp_uri_parse(c->self_url);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    const http_face *face;
    char url[CLUSTER_URL_MAX];
    for (int i = 0; o && host &&
                    server_listener_url(c->q->srv, i, host, &face, url, sizeof(url)) == 0;
         i++)
        if (strcmp(face->name, "json") != 0)
            json_object_set_new(o, face->name, json_string(url));
    if (u)
        evhttp_uri_free(u);
    return o;
}

/* ---- GET /v1/cluster ---- */

static json_t *cluster_part_json(cluster *c, int32_t p) {
    const cluster_part *cp = &c->parts[p];
    objlog_query *q = c->q;
    int local = objlog_materializer_applies(q->m, p);
    int64_t applied = cp->applied, end = cp->end;
    if (cp->owner >= 0 && c->nodes[cp->owner].self) {
        applied = objlog_materializer_applied(q->m, p);
        end = wm_last_end(q->wm, p);
    }
    json_t *standbys = json_array();
    for (int i = 0; i < c->nnodes; i++) {
        size_t at = (size_t)p * (size_t)c->nnodes + (size_t)i;
        if (c->role[at] != OBJLOG_ROLE_STANDBY)
            continue;
        int64_t a = c->applied[at], e = end > cp->end ? end : cp->end;
        json_array_append_new(standbys, json_pack("{s:s, s:I, s:I}", "url", c->nodes[i].url,
                                                  "applied", (json_int_t)a, "lag",
                                                  (json_int_t)(e > a ? e - a : 0)));
    }
    json_t *o = json_pack("{s:i, s:o, s:o, s:b}", "partition", (int)p, "active",
                          cp->owner >= 0 ? json_string(c->nodes[cp->owner].url)
                                         : json_null(),
                          "standbys", standbys, "local", local);
    json_object_set_new(o, "applied", applied >= 0 ? json_integer(applied) : json_null());
    json_object_set_new(o, "end", end >= 0 ? json_integer(end) : json_null());
    json_object_set_new(o, "lag", applied >= 0 && end >= 0
                                      ? json_integer(end > applied ? end - applied : 0)
                                      : json_null());
    return o;
}

void cluster_get(http_ctx *hc) {
    cluster *c = hc->q->cluster;
    if (!c) {
        http_reply_error(hc, 404, "NotACluster",
                         "this objlogd is not a cluster node (objlogd --cluster NAME)");
        return;
    }
    pthread_mutex_lock(&c->mu);
    json_t *nodes = json_array(), *parts = json_array();
    for (int i = 0; i < c->nnodes; i++) {
        json_t *owned = json_array(), *standing = json_array();
        for (int p = 0; p < c->nparts; p++) {
            if (c->parts[p].owner == i)
                json_array_append_new(owned, json_integer(p));
            if (c->role[(size_t)p * (size_t)c->nnodes + (size_t)i] == OBJLOG_ROLE_STANDBY)
                json_array_append_new(standing, json_integer(p));
        }
        json_t *faces = c->nodes[i].self ? cluster_listeners_json(c) : json_object();
        for (int k = 0; !c->nodes[i].self && k < c->nodes[i].nfaces; k++)
            json_object_set_new(faces, c->nodes[i].faces[k].name,
                                json_string(c->nodes[i].faces[k].url));
        const cluster_node *nd = &c->nodes[i];
        const char *name = nd->name[0] ? nd->name : peers_name(c->peers, nd->url);
        json_t *o = json_pack("{s:s, s:s, s:o, s:b, s:b, s:s, s:o, s:o, s:o}", "id", nd->url,
                              "url", nd->url, "name", name ? json_string(name) : json_null(),
                              "self",
                              nd->self, "reachable", nd->reachable, "state",
                              nd->reachable ? "up" : "unreachable", "partitions", owned,
                              "standbys", standing, "listeners", faces);
        int64_t down = nd->reachable ? 0 : peers_down_since(c->peers, nd->url);
        if (o && down) {
            char at[32];
            objlog_logger_format_time(down, at, sizeof(at));
            json_object_set_new(o, "unreachable_since", json_string(at));
        }
        json_array_append_new(nodes, o);
    }
    for (int p = 0; c->parts && p < c->nparts; p++)
        json_array_append_new(parts, cluster_part_json(c, p));
    int64_t age = c->refreshed_ms ? cluster_mono_ms() - c->refreshed_ms : -1;
    json_t *body = json_pack("{s:s, s:s, s:s, s:i, s:o, s:o, s:o, s:s}", "cluster", c->name,
                             "group", c->group, "self", c->self_url, "standbys_per_partition",
                             c->standbys, "refreshed_ms_ago",
                             age >= 0 ? json_integer(age) : json_null(), "nodes", nodes,
                             "partitions", parts, "error", c->err);
    json_object_set_new(body, "departed", peers_departed_json(c->peers, cluster_real_ms()));
    pthread_mutex_unlock(&c->mu);
    http_reply_json(hc, 200, body);
}

/* ---- /metrics ---- */

/* Each partition's active node and standbys: applied offsets (lag 0) or
 * events behind the newest end known (lag 1); -1 unknown. c->mu held. */
static void cluster_metrics_replicas(FILE *f, cluster *c, int lag) {
    const char *name = lag ? "objlog_cluster_partition_lag" : "objlog_cluster_partition_applied";
    fprintf(f, "# HELP %s %s of each partition at its active node and its standbys "
               "(-1 unknown).\n# TYPE %s gauge\n", name,
            lag ? "Events behind the log's end" : "Applied offset", name);
    for (int p = 0; c->parts && p < c->nparts; p++) {
        const cluster_part *cp = &c->parts[p];
        int self = cp->owner >= 0 && c->nodes[cp->owner].self;
        int64_t end = cp->end > wm_last_end(c->q->wm, p) ? cp->end : wm_last_end(c->q->wm, p);
        int64_t applied = self ? objlog_materializer_applied(c->q->m, p) : cp->applied;
        int64_t v = !lag ? applied : applied < 0 || end < 0 ? -1 : end > applied ? end - applied : 0;
        fprintf(f, "%s{partition=\"%d\",node=\"%s\",role=\"active\"} %lld\n", name, p,
                cp->owner >= 0 ? c->nodes[cp->owner].url : "", (long long)v);
        for (int i = 0; i < c->nnodes; i++) {
            size_t at = (size_t)p * (size_t)c->nnodes + (size_t)i;
            if (c->role[at] != OBJLOG_ROLE_STANDBY)
                continue;
            int64_t a = c->applied[at];
            v = !lag ? a : a < 0 || end < 0 ? -1 : end > a ? end - a : 0;
            fprintf(f, "%s{partition=\"%d\",node=\"%s\",role=\"standby\"} %lld\n", name, p,
                    c->nodes[i].url, (long long)v);
        }
    }
}

void cluster_metrics(FILE *f, cluster *c) {
    pthread_mutex_lock(&c->mu);
    fprintf(f, "# HELP objlog_cluster_nodes Nodes of this cluster the last refresh saw.\n"
               "# TYPE objlog_cluster_nodes gauge\nobjlog_cluster_nodes %d\n", c->nnodes);
    fprintf(f, "# HELP objlog_cluster_node_info One per node: its URL, and 1 if it is this one.\n"
               "# TYPE objlog_cluster_node_info gauge\n");
    for (int i = 0; i < c->nnodes; i++)
        fprintf(f, "objlog_cluster_node_info{url=\"%s\",self=\"%d\"} 1\n", c->nodes[i].url,
                c->nodes[i].self);
    cluster_metrics_replicas(f, c, 0);
    cluster_metrics_replicas(f, c, 1);
    static const char *const results[FORWARD_RESULTS] = {"answered", "unreachable",
                                                         "refused"};
    fprintf(f, "# HELP objlog_cluster_forwards_total Reads sent on to the node that applies "
               "their partition, by how they ended.\n"
               "# TYPE objlog_cluster_forwards_total counter\n");
    for (int i = 0; i < FORWARD_RESULTS; i++)
        fprintf(f, "objlog_cluster_forwards_total{result=\"%s\"} %llu\n", results[i],
                (unsigned long long)atomic_load_explicit(&c->forwards[i],
                                                         memory_order_relaxed));
    peers_metrics(f, c->peers);
    bootstrap_metrics(f, c->boot);
    fprintf(f, "# HELP objlog_cluster_refresh_failures_total Membership refreshes that failed.\n"
               "# TYPE objlog_cluster_refresh_failures_total counter\n"
               "objlog_cluster_refresh_failures_total %llu\n",
            (unsigned long long)c->failures);
    pthread_mutex_unlock(&c->mu);
}
