/* peers.c: a cluster node's memory of its peers across membership
 * refreshes (peers.h).
 *
 * The refresher sees the group as it is now; an operator wants to hear
 * what changed: a node that stopped answering (SIGKILL, a partition of
 * the network) is heard of on the next refresh, a second later, long
 * before the group expels it after its session timeout; a node that left
 * is named with the partitions it had and where they went. So each peer
 * keeps the last things the refreshes said of it: its name (its own
 * --node-name, from its GET /v1/lag), whether it answered, the
 * partitions it was active for, and when it stopped answering or left.
 *
 * Invariant: each change is logged once, on the refresh that saw it (a
 * peer answering again after a WARN gets one INFO; a peer that left gets
 * one WARN, then none until it rejoins); a departed peer is kept
 * PEERS_GONE_KEEP_MS and then forgotten. */
#define _GNU_SOURCE
#include "peers.h"

#include <stdlib.h>
#include <string.h>

#include "objlog_logger.h"

struct peer {
    char url[CLUSTER_URL_MAX];
    char name[OBJLOG_NODE_NAME_MAX + 1]; /* "" until it says */
    int member;                  /* listed by the last refresh */
    int up;                      /* answered the last refresh that listed it */
    int64_t absent_mono;         /* first refresh that missed it; 0 while a member */
    int64_t down_real;           /* when it stopped answering; 0 while it answers */
    int64_t gone_real;           /* when it was declared gone; 0 while not */
    uint8_t *active;             /* [nparts]: active for p at the last sight */
    uint8_t *standby;            /* [nparts]: standby for p at the last sight */
};

void peers_init(peers *ps, int nparts) {
    memset(ps, 0, sizeof(*ps));
    ps->nparts = nparts;
}

static void peer_free(peer *p) {
    free(p->active);
    free(p->standby);
}

void peers_free(peers *ps) {
    for (int i = 0; i < ps->n; i++)
        peer_free(&ps->v[i]);
    free(ps->v);
    ps->v = NULL;
    ps->n = ps->cap = 0;
}

static peer *peers_find(peers *ps, const char *url) {
    for (int i = 0; i < ps->n; i++)
        if (strcmp(ps->v[i].url, url) == 0)
            return &ps->v[i];
    return NULL;
}

static peer *peers_add(peers *ps, const char *url) {
    if (ps->n == ps->cap) {
        int cap = ps->cap ? ps->cap * 2 : 8;
        peer *v = realloc(ps->v, (size_t)cap * sizeof(*v));
        if (!v)
            return NULL;
        ps->v = v;
        ps->cap = cap;
    }
    peer *p = &ps->v[ps->n];
    memset(p, 0, sizeof(*p));
    p->active = calloc((size_t)ps->nparts, 1);
    p->standby = calloc((size_t)ps->nparts, 1);
    if (!p->active || !p->standby) {
        peer_free(p);
        return NULL;
    }
    snprintf(p->url, sizeof(p->url), "%s", url);
    ps->n++;
    return p;
}

/* "NAME (URL)", or "URL" while its name is not known. */
static void peer_label(const peer *p, char *out, size_t n) {
    if (p->name[0])
        snprintf(out, n, "%s (%s)", p->name, p->url);
    else
        snprintf(out, n, "%s", p->url);
}

/* "1,4,7" of the partitions set in bits; "none" when empty. */
static void peer_parts_text(const uint8_t *bits, int nparts, char *out, size_t n) {
    size_t len = 0;
    out[0] = '\0';
    for (int p = 0; p < nparts && len + 16 < n; p++)
        if (bits[p])
            len += (size_t)snprintf(out + len, n - len, "%s%d", len ? "," : "", p);
    if (!out[0])
        snprintf(out, n, "none");
}

/* The partitions this peer had, with where the group put each now:
 * "1 (now on B), 4 (unassigned)". */
static void peer_moves_text(const peer *pr, const cluster_node *nodes, const cluster_part *parts,
                            int nparts, char *out, size_t n) {
    size_t len = 0;
    out[0] = '\0';
    for (int p = 0; p < nparts && len + 64 + CLUSTER_URL_MAX < n; p++) {
        if (!pr->active[p])
            continue;
        int o = parts[p].owner;
        const char *to = o < 0 ? NULL : nodes[o].name[0] ? nodes[o].name : nodes[o].url;
        len += (size_t)snprintf(out + len, n - len, "%s%d (%s%s)", len ? ", " : "", p,
                                to ? "now on " : "unassigned", to ? to : "");
    }
    if (!out[0])
        snprintf(out, n, "none");
}

static int64_t peer_ago_s(int64_t since, int64_t now) {
    return since && now > since ? (now - since) / 1000 : 0;
}

/* A peer the refresh lists: what it says of it, and what changed. */
static void peers_seen(peers *ps, const cluster_node *nd, int ni, int n, const cluster_part *parts,
                       const uint8_t *role, int64_t real_ms) {
    peer *p = peers_find(ps, nd->url);
    int fresh = p == NULL, was_gone = p && p->gone_real;
    if (!p && !(p = peers_add(ps, nd->url)))
        return;
    if (nd->name[0])
        snprintf(p->name, sizeof(p->name), "%s", nd->name);
    /* Its active partitions are the group's word; its standbys only its
     * own (its GET /v1/lag): one that does not answer keeps the last. */
    for (int q = 0; q < ps->nparts; q++) {
        p->active[q] = parts[q].owner == ni;
        if (nd->reachable)
            p->standby[q] = role[(size_t)q * (size_t)n + (size_t)ni] == OBJLOG_ROLE_STANDBY;
    }
    char who[CLUSTER_URL_MAX + OBJLOG_NODE_NAME_MAX + 4];
    peer_label(p, who, sizeof(who));
    if (was_gone)
        objlog_logf(OBJLOG_LEVEL_INFO, "cluster", "peer %s rejoined the cluster (gone %llds)",
                    who, (long long)peer_ago_s(p->gone_real, real_ms));
    else if (fresh)
        objlog_logf(OBJLOG_LEVEL_INFO, "cluster", "peer %s %s", who,
                    ps->observed ? "joined the cluster" : "is a member");
    p->member = 1;
    p->absent_mono = 0;
    p->gone_real = 0;
    int was_up = fresh || was_gone ? 1 : p->up;
    p->up = nd->reachable;
    if (was_up && !p->up) {
        char act[256], sb[256];
        peer_parts_text(p->active, ps->nparts, act, sizeof(act));
        peer_parts_text(p->standby, ps->nparts, sb, sizeof(sb));
        p->down_real = real_ms;
        objlog_logf(OBJLOG_LEVEL_WARNING, "cluster", "peer %s stopped answering (%s); it is "
                    "active for partitions %s and standby for %s: their reads go to another "
                    "replica or answer 503 until it answers or the group moves them", who,
                    nd->why[0] ? nd->why : "no answer", act, sb);
    } else if (!was_up && p->up) {
        objlog_logf(OBJLOG_LEVEL_INFO, "cluster", "peer %s answers again (after %llds)", who,
                    (long long)peer_ago_s(p->down_real, real_ms));
        p->down_real = 0;
    }
}

/* A peer the refresh does not list: gone once the group settled without
 * it (or it stayed away PEERS_ABSENT_MS). */
static void peers_missed(peer *p, const cluster_node *nodes, const cluster_part *parts,
                         int nparts, int stable, int64_t mono_ms, int64_t real_ms) {
    if (p->gone_real)
        return;
    if (p->member) {
        p->member = 0;
        p->absent_mono = mono_ms;
    }
    if (!stable && mono_ms - p->absent_mono < PEERS_ABSENT_MS)
        return;
    char who[CLUSTER_URL_MAX + OBJLOG_NODE_NAME_MAX + 4], moves[1024];
    peer_label(p, who, sizeof(who));
    peer_moves_text(p, nodes, parts, nparts, moves, sizeof(moves));
    p->gone_real = real_ms;
    p->up = 0;
    if (!p->down_real)
        p->down_real = real_ms;
    objlog_logf(OBJLOG_LEVEL_WARNING, "cluster", "peer %s left the cluster; partitions it "
                "was active for: %s", who, moves);
}

void peers_observe(peers *ps, const cluster_node *nodes, int n, const cluster_part *parts,
                   const uint8_t *role, int stable, int64_t mono_ms, int64_t real_ms) {
    for (int i = 0; i < n; i++)
        if (!nodes[i].self)
            peers_seen(ps, &nodes[i], i, n, parts, role, real_ms);
    for (int k = 0; k < ps->n; k++) {
        int listed = 0;
        for (int i = 0; i < n && !listed; i++)
            listed = strcmp(nodes[i].url, ps->v[k].url) == 0;
        if (!listed)
            peers_missed(&ps->v[k], nodes, parts, ps->nparts, stable, mono_ms, real_ms);
    }
    for (int k = 0; k < ps->n;) { /* forget the long gone */
        if (ps->v[k].gone_real && real_ms - ps->v[k].gone_real > PEERS_GONE_KEEP_MS) {
            peer_free(&ps->v[k]);
            ps->v[k] = ps->v[--ps->n];
        } else {
            k++;
        }
    }
    ps->observed = 1;
}

static json_t *peers_parts_json(const uint8_t *bits, int nparts) {
    json_t *a = json_array();
    for (int p = 0; a && p < nparts; p++)
        if (bits[p])
            json_array_append_new(a, json_integer(p));
    return a;
}

json_t *peers_departed_json(const peers *ps, int64_t real_ms) {
    json_t *a = json_array();
    const peer **gone = calloc((size_t)(ps->n ? ps->n : 1), sizeof(*gone));
    int ng = 0;
    for (int k = 0; gone && k < ps->n; k++)
        if (ps->v[k].gone_real)
            gone[ng++] = &ps->v[k];
    for (int i = 1; i < ng; i++) /* newest first; a few entries */
        for (int j = i; j > 0 && gone[j]->gone_real > gone[j - 1]->gone_real; j--) {
            const peer *t = gone[j];
            gone[j] = gone[j - 1];
            gone[j - 1] = t;
        }
    for (int i = 0; a && i < ng; i++) {
        const peer *p = gone[i];
        char at[32];
        objlog_logger_format_time(p->gone_real, at, sizeof(at));
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:o, s:s, s:s, s:I, s:o}", "id", p->url, "url", p->url,
                         "name", p->name[0] ? json_string(p->name) : json_null(), "state",
                         "gone", "gone_at", at, "gone_seconds_ago",
                         (json_int_t)peer_ago_s(p->gone_real, real_ms), "partitions",
                         peers_parts_json(p->active, ps->nparts)));
    }
    free(gone);
    return a;
}

const char *peers_name(const peers *ps, const char *url) {
    for (int k = 0; k < ps->n; k++)
        if (strcmp(ps->v[k].url, url) == 0)
            return ps->v[k].name[0] ? ps->v[k].name : NULL;
    return NULL;
}

int64_t peers_down_since(const peers *ps, const char *url) {
    for (int k = 0; k < ps->n; k++)
        if (strcmp(ps->v[k].url, url) == 0)
            return ps->v[k].up ? 0 : ps->v[k].down_real;
    return 0;
}

void peers_metrics(FILE *f, const peers *ps) {
    fprintf(f, "# HELP objlog_cluster_peer_up 1 for a peer that answered the last membership "
               "refresh, 0 for one that did not or left the cluster (kept %d minutes).\n"
               "# TYPE objlog_cluster_peer_up gauge\n", PEERS_GONE_KEEP_MS / 60000);
    for (int k = 0; k < ps->n; k++)
        fprintf(f, "objlog_cluster_peer_up{node=\"%s\",name=\"%s\"} %d\n", ps->v[k].url,
                ps->v[k].name, ps->v[k].member && ps->v[k].up);
}
