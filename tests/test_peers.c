/* test_peers.c: what a cluster node says of its peers as refreshes come
 * (query/cluster/peers.c), one refresh a step, with the times given: each
 * change logged once (the WARNs caught through the logger's sink, exact),
 * a missing peer gone when the group is Stable without it or after 5 s,
 * the partitions it had and where they went, the standbys a peer that
 * stopped answering last said it had, departed peers kept 10 minutes in
 * GET /v1/cluster's shape and in objlog_cluster_peer_up, and a rejoin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objlog_logger.h"
#include "peers.h"

#define NP 4
#define A "http://127.0.0.1:1001"
#define B "http://127.0.0.1:1002"
#define C "http://127.0.0.1:1003"

/* The WARN lines the sink took since the last take. */
static char warns[8][1024];
static int nwarns;

static void sink(void *arg, int64_t ms, int level, const char *component, const char *msg) {
    (void)arg;
    (void)ms;
    (void)level;
    if (nwarns < 8)
        snprintf(warns[nwarns], sizeof(warns[0]), "%s: %s", component, msg);
    nwarns++;
}

/* One refresh's members: self A, and B and C when listed. owner[p]
 * indexes the nodes listed; sb[p]: the index of p's standby, -1 none. */
typedef struct view {
    cluster_node nodes[3];
    int n;
    cluster_part parts[NP];
    uint8_t role[NP * 3];
} view;

static void view_node(view *v, const char *url, const char *name, int reachable) {
    cluster_node *nd = &v->nodes[v->n++];
    memset(nd, 0, sizeof(*nd));
    snprintf(nd->url, sizeof(nd->url), "%s", url);
    snprintf(nd->name, sizeof(nd->name), "%s", reachable ? name : "");
    nd->self = strcmp(url, A) == 0;
    nd->reachable = reachable;
    if (!reachable)
        snprintf(nd->why, sizeof(nd->why), "GET /v1/lag: Couldn't connect to server");
}

static void view_parts(view *v, const int *owner, const int *sb) {
    memset(v->role, 0, sizeof(v->role));
    for (int p = 0; p < NP; p++) {
        v->parts[p] = (cluster_part){.owner = owner[p], .applied = -1, .end = -1};
        if (owner[p] >= 0)
            v->role[p * v->n + owner[p]] = OBJLOG_ROLE_ACTIVE;
        if (sb[p] >= 0 && v->nodes[sb[p]].reachable)
            v->role[p * v->n + sb[p]] = OBJLOG_ROLE_STANDBY;
    }
}

static void observe(peers *ps, const view *v, int stable, int64_t t_ms) {
    nwarns = 0;
    peers_observe(ps, v->nodes, v->n, v->parts, v->role, stable, t_ms, 1700000000000 + t_ms);
}

static char *metrics_of(const peers *ps) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    peers_metrics(f, ps);
    fclose(f);
    return buf;
}

static int setup(void **state) {
    peers *ps = calloc(1, sizeof(*ps));
    peers_init(ps, NP);
    *state = ps;
    objlog_logger_set_level(OBJLOG_LEVEL_WARNING); /* the sink sees what is written */
    return objlog_logger_set_sink(sink, NULL);
}

static int teardown(void **state) {
    peers_free(*state);
    free(*state);
    objlog_logger_set_sink(NULL, NULL);
    return 0;
}

/* A, B, C up: B active for 1 and 3 and standby for 0, C active for 2. */
static void three_up(view *v, int b_reachable) {
    memset(v, 0, sizeof(*v));
    view_node(v, A, "node-a", 1);
    view_node(v, B, "node-b", b_reachable);
    view_node(v, C, "node-c", 1);
    static const int owner[NP] = {0, 1, 2, 1}, sb[NP] = {1, 2, 0, 0};
    view_parts(v, owner, sb);
}

static void stop_leave_rejoin(void **state) {
    peers *ps = *state;
    view v;
    three_up(&v, 1);
    observe(ps, &v, 1, 1000);
    assert_int_equal(nwarns, 0); /* members are INFO */
    char *m = metrics_of(ps);
    assert_non_null(strstr(m, "objlog_cluster_peer_up{node=\"" B "\",name=\"node-b\"} 1\n"));
    assert_non_null(strstr(m, "objlog_cluster_peer_up{node=\"" C "\",name=\"node-c\"} 1\n"));
    assert_null(strstr(m, A "\""));  /* not a peer of itself */
    free(m);

    /* B stops answering: one WARN, with the standby it last said it had */
    three_up(&v, 0);
    observe(ps, &v, 1, 2000);
    assert_int_equal(nwarns, 1);
    assert_string_equal(warns[0], "cluster: peer node-b (" B ") stopped answering (GET /v1/lag: "
                                  "Couldn't connect to server); it is active for partitions 1,3 "
                                  "and standby for 0: their reads go to another replica or "
                                  "answer 503 until it answers or the group moves them");
    assert_int_equal(peers_down_since(ps, B), 1700000002000);
    observe(ps, &v, 1, 3000);
    assert_int_equal(nwarns, 0); /* said once */
    m = metrics_of(ps);
    assert_non_null(strstr(m, "{node=\"" B "\",name=\"node-b\"} 0\n"));
    free(m);

    /* it answers again: INFO only, and no longer down */
    three_up(&v, 1);
    observe(ps, &v, 1, 4000);
    assert_int_equal(nwarns, 0);
    assert_int_equal(peers_down_since(ps, B), 0);

    /* the group lists it no more, mid-rebalance: not gone before 5 s */
    view w = {0};
    view_node(&w, A, "node-a", 1);
    view_node(&w, C, "node-c", 1);
    static const int moved[NP] = {0, 1, 1, 0}, none[NP] = {-1, -1, -1, -1};
    view_parts(&w, moved, none);
    observe(ps, &w, 0, 10000);
    assert_int_equal(nwarns, 0);
    observe(ps, &w, 0, 14999);
    assert_int_equal(nwarns, 0);
    json_t *d = peers_departed_json(ps, 1700000014999);
    assert_int_equal(json_array_size(d), 0);
    json_decref(d);
    observe(ps, &w, 0, 15000);
    assert_int_equal(nwarns, 1);
    assert_string_equal(warns[0], "cluster: peer node-b (" B ") left the cluster; partitions it "
                                  "was active for: 1 (now on node-c), 3 (now on node-a)");
    observe(ps, &w, 1, 16000);
    assert_int_equal(nwarns, 0); /* said once */

    /* departed: GET /v1/cluster's shape, newest first */
    d = peers_departed_json(ps, 1700000075000);
    assert_int_equal(json_array_size(d), 1);
    json_t *g = json_array_get(d, 0);
    assert_string_equal(json_string_value(json_object_get(g, "url")), B);
    assert_string_equal(json_string_value(json_object_get(g, "name")), "node-b");
    assert_string_equal(json_string_value(json_object_get(g, "state")), "gone");
    assert_string_equal(json_string_value(json_object_get(g, "gone_at")),
                        "2023-11-14T22:13:35.000Z");
    assert_int_equal(json_integer_value(json_object_get(g, "gone_seconds_ago")), 60);
    json_t *parts = json_object_get(g, "partitions");
    assert_int_equal(json_array_size(parts), 2);
    assert_int_equal(json_integer_value(json_array_get(parts, 0)), 1);
    assert_int_equal(json_integer_value(json_array_get(parts, 1)), 3);
    json_decref(d);
    m = metrics_of(ps);
    assert_non_null(strstr(m, "{node=\"" B "\",name=\"node-b\"} 0\n"));
    free(m);

    /* it rejoins: INFO, no longer departed, up again */
    three_up(&v, 1);
    observe(ps, &v, 1, 20000);
    assert_int_equal(nwarns, 0);
    d = peers_departed_json(ps, 1700000020000);
    assert_int_equal(json_array_size(d), 0);
    json_decref(d);
    m = metrics_of(ps);
    assert_non_null(strstr(m, "{node=\"" B "\",name=\"node-b\"} 1\n"));
    free(m);
}

/* A stable group without it: gone at once; forgotten after 10 minutes. */
static void stable_leave_then_forgotten(void **state) {
    peers *ps = *state;
    view v, w = {0};
    three_up(&v, 1);
    observe(ps, &v, 1, 1000);
    view_node(&w, A, "node-a", 1);
    view_node(&w, B, "node-b", 1);
    static const int owner[NP] = {0, 1, 0, 1}, none[NP] = {-1, -1, -1, -1};
    view_parts(&w, owner, none);
    observe(ps, &w, 1, 2000);
    assert_int_equal(nwarns, 1);
    assert_string_equal(warns[0], "cluster: peer node-c (" C ") left the cluster; partitions it "
                                  "was active for: 2 (now on node-a)");
    observe(ps, &w, 1, 2000 + PEERS_GONE_KEEP_MS);
    json_t *d = peers_departed_json(ps, 1700000002000 + PEERS_GONE_KEEP_MS);
    assert_int_equal(json_array_size(d), 1); /* kept 10 minutes ... */
    json_decref(d);
    observe(ps, &w, 1, 2001 + PEERS_GONE_KEEP_MS);
    d = peers_departed_json(ps, 1700000002001 + PEERS_GONE_KEEP_MS);
    assert_int_equal(json_array_size(d), 0); /* ... then forgotten */
    json_decref(d);
    char *m = metrics_of(ps);
    assert_null(strstr(m, C));
    assert_non_null(strstr(m, "{node=\"" B "\",name=\"node-b\"} 1\n"));
    free(m);
    assert_int_equal(nwarns, 0);
    assert_string_equal(peers_name(ps, B), "node-b");
    assert_null(peers_name(ps, C));
}

/* A peer first seen not answering is warned of at once, by URL (no name
 * yet), and a partition with no node is said to be unassigned. */
static void first_seen_down_then_gone(void **state) {
    peers *ps = *state;
    view v = {0}, w = {0};
    view_node(&v, A, "node-a", 1);
    view_node(&v, B, "node-b", 0);
    static const int owner[NP] = {0, 1, 0, 0}, none[NP] = {-1, -1, -1, -1};
    view_parts(&v, owner, none);
    observe(ps, &v, 1, 1000);
    assert_int_equal(nwarns, 1);
    assert_string_equal(warns[0], "cluster: peer " B " stopped answering (GET /v1/lag: Couldn't "
                                  "connect to server); it is active for partitions 1 and standby "
                                  "for none: their reads go to another replica or answer 503 "
                                  "until it answers or the group moves them");
    view_node(&w, A, "node-a", 1);
    static const int orphan[NP] = {0, -1, 0, 0};
    view_parts(&w, orphan, none);
    observe(ps, &w, 1, 2000);
    assert_int_equal(nwarns, 1);
    assert_string_equal(warns[0], "cluster: peer " B " left the cluster; partitions it was "
                                  "active for: 1 (unassigned)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(stop_leave_rejoin, setup, teardown),
        cmocka_unit_test_setup_teardown(stable_leave_then_forgotten, setup, teardown),
        cmocka_unit_test_setup_teardown(first_seen_down_then_gone, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
