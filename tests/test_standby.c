/* test_standby.c: standby replicas on a real 3-broker
 * Kafka: three objlogd nodes of cluster s1 with `--standbys 1`, processes
 * on loopback, children of the test (proc.h), killed with it even when it
 * fails; the Kafka nodes are the shared fixture's (testlog.h).
 *
 * What it pins: every partition has one active node (the group's) and one
 * standby, the node after the active one in URL order, never the active
 * node itself, and every node says the same; a standby applies its
 * partition up to the active node's offset and answers a strong read of
 * it itself (not forwarded); /metrics and /v1/lag name the role. Then
 * SIGKILL of the active node of a busy partition while 2 writers and 2
 * strong readers work on hot keys through the survivors: reads keep being
 * answered (counted: the figure is printed), writes complete from the
 * standby's outcome before the group has even moved the partition, every
 * key's history is linearizable, every value acknowledged before the kill
 * is read back, and the two survivors settle with a standby again. A
 * 4th node with an empty store then joins: it copies every partition it
 * gets from a peer's checkpoint and applies only the
 * log's tail.
 *
 * Ranges between nodes (test_handoff_across_nodes): a bucket is split
 * under writes, its upper half moving to a partition applied by nodes
 * that do not apply the bucket's: the request goes to the coordinator,
 * each replica of the target that lacks the source imports the range
 * over the network (counted in /metrics), LIST through every node lists
 * every key once; the target's active node is SIGKILLed and its standby
 * serves the moved keys; a merge brings the range back over stale rows,
 * which the import replaces (a key deleted meanwhile stays deleted). The
 * coordinator then dies between a split's RangeOut and RangeIn
 * (test_coordinator_dies): the source's node finishes it from the log,
 * and no write sent meanwhile is lost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "clusternodes.h"
#include "httpc.h"
#include "linload.h"
#include "proc.h"
#include "testlog.h"

#define NODES 3      /* started by the setup */
#define MAX_NODES 4  /* a 4th joins in test_bootstrap */
#define PARTS 4
#define KEYS 12

static cnodes g;
/* Every handoff pauses after its RangeOut and after its RangeIn, so that
 * test_coordinator_dies can kill the coordinator between them. */
#define PAUSE_MS 2000
static char *node_flags[] = {"--standbys", "1", "--test-handoff-pause-ms", "2000", NULL};

static int group_setup(void **state) {
    (void)state;
    return cnodes_setup(&g, "s1", PARTS, NODES, MAX_NODES, node_flags);
}

static int group_teardown(void **state) {
    (void)state;
    return cnodes_teardown(&g);
}

static int url_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The node after `active` among the running nodes in URL order. */
static int ring_next(int active) {
    const char *urls[MAX_NODES];
    int n = 0, at = 0;
    for (int i = 0; i < MAX_NODES; i++)
        if (g.n[i].p)
            urls[n++] = g.n[i].url;
    qsort(urls, (size_t)n, sizeof(urls[0]), url_cmp);
    while (at < n && strcmp(urls[at], g.n[active].url) != 0)
        at++;
    return cnodes_of_url(&g, urls[(at + 1) % n]);
}

typedef struct placement {
    int active[PARTS];
    int standby[PARTS];
} placement;

/* Node i's view: 1 when every partition has an active node and exactly
 * one standby, another node. */
static int placement_of(int i, placement *pl) {
    json_t *j = cnodes_cluster_of(&g, i);
    json_t *parts = json_object_get(j, "partitions");
    int ok = j && json_array_size(parts) == PARTS;
    for (int p = 0; ok && p < PARTS; p++) {
        json_t *e = json_array_get(parts, (size_t)p);
        json_t *sb = json_object_get(e, "standbys");
        pl->active[p] = cnodes_of_url(&g, json_string_value(json_object_get(e, "active")));
        ok = pl->active[p] >= 0 && json_array_size(sb) == 1;
        if (!ok)
            break;
        json_t *s0 = json_array_get(sb, 0);
        pl->standby[p] = cnodes_of_url(&g, json_string_value(json_object_get(s0, "url")));
        ok = pl->standby[p] >= 0 && pl->standby[p] != pl->active[p];
    }
    json_decref(j);
    return ok;
}

/* Until every running node reports the same placement: each partition's
 * standby the ring successor of its active node. */
static void wait_placed(placement *out, int timeout_ms) {
    int64_t until = cnodes_mono_ms() + timeout_ms;
    for (;;) {
        placement pl[MAX_NODES];
        int first = -1, ok = 1;
        for (int i = 0; i < MAX_NODES && ok; i++) {
            if (!g.n[i].p)
                continue;
            ok = placement_of(i, &pl[i]);
            if (ok && first < 0)
                first = i;
            for (int p = 0; ok && first >= 0 && p < PARTS; p++)
                ok = pl[i].active[p] == pl[first].active[p] &&
                     pl[i].standby[p] == pl[first].standby[p] && g.n[pl[i].active[p]].p;
        }
        for (int p = 0; ok && first >= 0 && p < PARTS; p++)
            ok = pl[first].standby[p] == ring_next(pl[first].active[p]);
        if (ok && first >= 0) {
            *out = pl[first];
            return;
        }
        if (cnodes_mono_ms() > until)
            fail_msg("no agreed placement with one standby per partition in %d ms",
                     timeout_ms);
        cnodes_sleep_ms(250);
    }
}

/* Node i's /v1/lag row of partition p (its end fetched after the request
 * came): applied and end, 0; -1 if it did not answer. */
static int lag_row(int i, int p, long long *applied, long long *end, char *role, size_t rn) {
    httpc_resp r;
    if (httpc_do(g.n[i].h, "GET", "/v1/lag", NULL, NULL, &r) < 0 || r.status != 200)
        return -1;
    json_t *j = json_loads(r.body, 0, NULL);
    json_t *row = json_array_get(json_object_get(j, "partitions"), (size_t)p);
    *applied = json_integer_value(json_object_get(row, "applied"));
    *end = json_integer_value(json_object_get(row, "end"));
    const char *ro = json_string_value(json_object_get(row, "role"));
    snprintf(role, rn, "%s", ro ? ro : "");
    json_decref(j);
    return row ? 0 : -1;
}

/* Until, for every partition, its active node and its standby (each by its
 * own /v1/lag) have applied exactly up to the log's end. */
static void wait_caught_up(const placement *pl, int timeout_ms) {
    int64_t until = cnodes_mono_ms() + timeout_ms;
    for (;;) {
        int ok = 1;
        for (int p = 0; ok && p < PARTS; p++) {
            long long a1, e1, a2, e2;
            char r1[16], r2[16];
            ok = lag_row(pl->active[p], p, &a1, &e1, r1, sizeof(r1)) == 0 &&
                 lag_row(pl->standby[p], p, &a2, &e2, r2, sizeof(r2)) == 0 &&
                 strcmp(r1, "active") == 0 && strcmp(r2, "standby") == 0 && a1 == e1 &&
                 a2 == e1 && e2 == e1;
        }
        if (ok)
            return;
        if (cnodes_mono_ms() > until)
            fail_msg("standbys did not catch up in %d ms", timeout_ms);
        cnodes_sleep_ms(250);
    }
}

/* PUT through node via; the partition of the write from its token. */
static int put_key(int via, const char *bucket, const char *key, const char *etag) {
    char path[256], body[128];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, key);
    snprintf(body, sizeof(body), "{\"size\":7,\"etag\":\"%s\"}", etag);
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[via].h, "PUT", path, body, NULL, &r), 0);
    if (r.status != 200)
        fail_msg("PUT %s via node %d: HTTP %ld %s", path, via, r.status, r.body);
    return atoi(r.token);
}

static void make_bucket(int via, const char *bucket) {
    char path[128];
    snprintf(path, sizeof(path), "/v1/buckets/%s", bucket);
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[via].h, "PUT", path, "{}", NULL, &r), 0);
    if (r.status != 200)
        fail_msg("create %s: HTTP %ld %s", bucket, r.status, r.body);
}

/* Strong GET through node via: the status; etag and whether it was
 * forwarded (X-Objlog-Forwarded-By) filled on 200. */
static long get_key(int via, const char *bucket, const char *key, char *etag, size_t n,
                    int *forwarded) {
    char path[256];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?consistency=strong", bucket, key);
    httpc_resp r;
    etag[0] = '\0';
    if (httpc_do(g.n[via].h, "GET", path, NULL, NULL, &r) < 0)
        return -1;
    json_t *j = r.status == 200 ? json_loads(r.body, 0, NULL) : NULL;
    const char *e = json_string_value(json_object_get(j, "etag"));
    snprintf(etag, n, "%s", e ? e : "");
    json_decref(j);
    if (forwarded)
        *forwarded = strstr(r.headers, "x-objlog-forwarded-by:") != NULL;
    return r.status;
}

static int bucket_part = -1; /* partition of bucket "sb-a" (test_placement) */

static void test_placement(void **state) {
    (void)state;
    placement pl;
    wait_placed(&pl, 90000);
    make_bucket(0, "sb-a");
    make_bucket(1, "sb-b");
    for (int k = 0; k < KEYS; k++) {
        char key[16], etag[40];
        snprintf(key, sizeof(key), "k%02d", k);
        snprintf(etag, sizeof(etag), "%032d", k);
        bucket_part = put_key(k % NODES, "sb-a", key, etag);
        put_key((k + 1) % NODES, "sb-b", key, etag);
    }
    wait_caught_up(&pl, 30000);
    int sb = pl.standby[bucket_part], act = pl.active[bucket_part];
    /* the standby answers a strong read of its partition itself */
    char etag[64];
    int fwd = -1;
    assert_int_equal(get_key(sb, "sb-a", "k05", etag, sizeof(etag), &fwd), 200);
    assert_string_equal(etag, "00000000000000000000000000000005");
    assert_int_equal(fwd, 0);
    /* /v1/lag: the role of each partition at each node, the same offset */
    long long applied, end, a2, e2;
    char role[16];
    assert_int_equal(lag_row(sb, bucket_part, &applied, &end, role, sizeof(role)), 0);
    assert_string_equal(role, "standby");
    assert_int_equal(lag_row(act, bucket_part, &a2, &e2, role, sizeof(role)), 0);
    assert_string_equal(role, "active");
    assert_int_equal(applied, a2);
    assert_int_equal(applied, e2);
    /* /metrics of every node: the standby's applied offset, by role (the
     * membership refresh runs once a second) */
    char want[256];
    snprintf(want, sizeof(want),
             "objlog_cluster_partition_applied{partition=\"%d\",node=\"%s\",role=\"standby\"} %lld\n",
             bucket_part, g.n[sb].url, applied);
    char want_lag[256];
    snprintf(want_lag, sizeof(want_lag),
             "objlog_cluster_partition_lag{partition=\"%d\",node=\"%s\",role=\"standby\"} 0\n",
             bucket_part, g.n[sb].url);
    for (int i = 0; i < MAX_NODES; i++) {
        if (!g.n[i].p)
            continue;
        httpc_resp r;
        int64_t until = cnodes_mono_ms() + 5000;
        for (;;) {
            assert_int_equal(httpc_do(g.n[i].h, "GET", "/metrics", NULL, NULL, &r), 0);
            if (strstr(r.body, want) && strstr(r.body, want_lag))
                break;
            if (cnodes_mono_ms() > until)
                fail_msg("node %d /metrics lacks: %s or %s", i, want, want_lag);
            cnodes_sleep_ms(200);
        }
    }
    /* objlog cluster: the standby and its lag in the partition's row */
    char bin[512], out[8192], err[2048], cell[256];
    proc_bin("ops/objlog", bin, sizeof(bin));
    char *argv[] = {bin, "cluster", "--url", g.n[act].url, NULL};
    int64_t until = cnodes_mono_ms() + 5000;
    snprintf(cell, sizeof(cell), "%s (0)\n", g.n[sb].url);
    for (;;) {
        assert_int_equal(proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 20000), 0);
        if (strstr(out, "STANDBYS (LAG)") && strstr(out, "STANDBY-FOR") && strstr(out, cell))
            break;
        if (cnodes_mono_ms() > until)
            fail_msg("objlog cluster lacks '%s' in:\n%s", cell, out);
        cnodes_sleep_ms(200);
    }
    print_message("placement: partition %d active on node %d, standby on node %d, both at "
                  "offset %lld\n", bucket_part, act, sb, applied);
}

/* ---- ranges between nodes ---- */

static long long metric_of(int i, const char *name);

#define XR_KEYS 200
#define XR_MAX 1200

typedef struct xr_obj {
    char key[16];
    char etag[40];
} xr_obj;

/* The keys acknowledged so far and their etags (one writer at a time). */
typedef struct xr_set {
    xr_obj o[XR_MAX];
    int n;
} xr_set;

static void xr_put(xr_set *s, const char *key, const char *etag) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->o[i].key, key)) {
            snprintf(s->o[i].etag, sizeof(s->o[i].etag), "%s", etag);
            return;
        }
    assert_true(s->n < XR_MAX);
    snprintf(s->o[s->n].key, sizeof(s->o[0].key), "%s", key);
    snprintf(s->o[s->n].etag, sizeof(s->o[0].etag), "%s", etag);
    s->n++;
}

static void xr_del(xr_set *s, const char *key) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->o[i].key, key))
            s->o[i] = s->o[--s->n];
}

static int xr_cmp(const void *a, const void *b) {
    return strcmp(((const xr_obj *)a)->key, ((const xr_obj *)b)->key);
}

/* "key etag\n" of every object, in key order. */
static char *xr_text(xr_set *s) {
    qsort(s->o, (size_t)s->n, sizeof(s->o[0]), xr_cmp);
    char *out = calloc((size_t)s->n + 1, 64);
    for (int i = 0; i < s->n; i++)
        sprintf(out + strlen(out), "%s %s\n", s->o[i].key, s->o[i].etag);
    return out;
}

/* A strong LIST of bucket through node via, 37 keys a page, as text. */
static char *xr_list(int via, const char *bucket) {
    char *out = calloc(XR_MAX + 1, 64), tok[512] = "", path[1024];
    for (int pages = 0;; pages++) {
        assert_true(pages < 100);
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects?consistency=strong&max_keys=37%s%s",
                 bucket, tok[0] ? "&continuation_token=" : "", tok);
        httpc_resp r;
        assert_int_equal(httpc_do(g.n[via].h, "GET", path, NULL, NULL, &r), 0);
        if (r.status != 200)
            fail_msg("LIST %s via node %d: HTTP %ld %s", bucket, via, r.status, r.body);
        json_t *j = json_loads(r.body, 0, NULL);
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(j, "objects"), i, e)
            sprintf(out + strlen(out), "%s %s\n", json_string_value(json_object_get(e, "key")),
                    json_string_value(json_object_get(e, "etag")));
        const char *next = json_string_value(json_object_get(j, "next_continuation_token"));
        char *esc = next ? httpc_escape(g.n[via].h, next, strlen(next)) : NULL;
        snprintf(tok, sizeof(tok), "%s", esc ? esc : "");
        free(esc);
        json_decref(j);
        if (!tok[0])
            return out;
    }
}

typedef struct xr_writer {
    httpc *h;
    xr_set *set;
    atomic_int stop;
    int sent, acked;
    char err[512];
} xr_writer;

/* Writes a%04d and w%04d in turn (below and above the split key) until
 * stopped, recording each acknowledged one. */
static void *xr_write_main(void *arg) {
    xr_writer *w = arg;
    for (int i = 0; !atomic_load(&w->stop) && w->sent < 400; i++) {
        char path[128], body[128], etag[40], key[16];
        snprintf(etag, sizeof(etag), "%032d", 500000 + i);
        snprintf(key, sizeof(key), "%c%04d", i % 2 ? 'w' : 'a', i);
        /* A write through a node that does not run the handoff meets
         * WrongRange and waits for the new map: up to the import and the
         * test's pauses, past the default 2 s. */
        snprintf(path, sizeof(path), "/v1/buckets/xrr/objects/%s?timeout_ms=20000", key);
        snprintf(body, sizeof(body), "{\"size\":3,\"etag\":\"%s\"}", etag);
        httpc_resp r;
        w->sent++;
        if (httpc_do(w->h, "PUT", path, body, NULL, &r) == 0 && r.status == 200) {
            w->acked++;
            xr_put(w->set, key, etag);
        } else if (!w->err[0]) {
            snprintf(w->err, sizeof(w->err), "PUT %s: HTTP %ld %.150s", path, r.status, r.body);
        }
    }
    return NULL;
}

/* POST /v1/ranges/<kind> through node via; the answer's JSON (200 only). */
static json_t *xr_handoff(int via, const char *kind, const char *body, char *node, size_t nn) {
    char path[64];
    snprintf(path, sizeof(path), "/v1/ranges/%s", kind);
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[via].h, "POST", path, body, NULL, &r), 0);
    if (r.status != 200)
        fail_msg("%s %s via node %d: HTTP %ld %s", kind, body, via, r.status, r.body);
    const char *at = strstr(r.headers, "x-objlog-node:");
    snprintf(node, nn, "%s", at ? at + 15 : "");
    node[strcspn(node, "\r\n")] = '\0';
    return json_loads(r.body, 0, NULL);
}

static int xr_role(int i, int p) {
    long long a, e;
    char role[16];
    return lag_row(i, p, &a, &e, role, sizeof(role)) == 0 && strcmp(role, "none") != 0;
}

/* Until every running node routes by map epoch `epoch` or newer (each
 * follows the control topic within about a second). */
static void xr_wait_epoch(long long epoch) {
    int64_t until = cnodes_mono_ms() + 10000;
    for (int i = 0; i < MAX_NODES; i++) {
        while (g.n[i].p) {
            httpc_resp r;
            assert_int_equal(httpc_do(g.n[i].h, "GET", "/v1/ranges", NULL, NULL, &r), 0);
            json_t *j = json_loads(r.body, 0, NULL);
            long long e = json_integer_value(json_object_get(j, "epoch"));
            json_decref(j);
            if (e >= epoch)
                break;
            if (cnodes_mono_ms() > until)
                fail_msg("node %d still routes by map epoch %lld, not %lld", i, e, epoch);
            cnodes_sleep_ms(100);
        }
    }
}

static void xr_expect_list(xr_set *want, const char *when) {
    char *w = xr_text(want);
    for (int i = 0; i < MAX_NODES; i++) {
        if (!g.n[i].p)
            continue;
        char *got = xr_list(i, "xrr");
        if (strcmp(got, w) != 0)
            fail_msg("%s: LIST xrr via node %d differs (%zu bytes, want %zu)", when, i,
                     strlen(got), strlen(w));
        free(got);
    }
    free(w);
}

static void test_handoff_across_nodes(void **state) {
    (void)state;
    placement pl;
    wait_placed(&pl, 60000);
    static xr_set want;
    make_bucket(0, "xrr");
    int p = -1;
    for (int k = 0; k < XR_KEYS; k++) {
        char key[16], etag[40];
        snprintf(key, sizeof(key), "k%04d", k);
        snprintf(etag, sizeof(etag), "%032d", k);
        p = put_key(k % NODES, "xrr", key, etag);
        xr_put(&want, key, etag);
    }
    /* The target: a partition active on the node that holds no replica
     * of p; its standby may hold p (then it has the range locally). */
    int q = -1, coord = pl.active[0];
    for (int c = 0; c < PARTS; c++)
        if (c != p && pl.active[c] != pl.active[p] && pl.active[c] != pl.standby[p])
            q = c;
    for (int c = 0; q < 0 && c < PARTS; c++)
        if (c != p && pl.active[c] != pl.active[p])
            q = c;
    assert_true(q >= 0);
    int via = 0;
    while (via == coord)
        via++;
    xr_writer w = {.h = httpc_new(g.n[via].url), .set = &want};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, xr_write_main, &w), 0);
    cnodes_sleep_ms(300);
    char body[160], node[256];
    snprintf(body, sizeof(body), "{\"bucket\":\"xrr\",\"key\":\"k0100\",\"to_partition\":%d}", q);
    int64_t t0 = cnodes_mono_ms();
    json_t *j = xr_handoff(via, "split", body, node, sizeof(node));
    int64_t took = cnodes_mono_ms() - t0;
    assert_int_equal(json_integer_value(json_object_get(j, "from_partition")), p);
    assert_int_equal(json_integer_value(json_object_get(j, "to_partition")), q);
    long long out_off = json_integer_value(json_object_get(j, "range_out_offset"));
    long long epoch = json_integer_value(json_object_get(j, "epoch"));
    json_decref(j);
    assert_string_equal(node, g.n[coord].url); /* run by the coordinator */
    cnodes_sleep_ms(500);
    atomic_store(&w.stop, 1);
    pthread_join(t, NULL);
    httpc_destroy(w.h);
    if (w.acked != w.sent)
        fail_msg("%d of %d writes across the split not acknowledged: %s", w.sent - w.acked,
                 w.sent, w.err);
    xr_wait_epoch(epoch);
    xr_expect_list(&want, "after the split");

    /* Each replica of q that holds no replica of p imported the range over
     * the network, once; no other node imported anything. */
    int importers = 0;
    for (int i = 0; i < NODES; i++) {
        int of_q = xr_role(i, q), of_p = xr_role(i, p);
        long long ok = metric_of(i, "objlog_range_imports_total{result=\"ok\"}");
        assert_int_equal(ok, of_q && !of_p ? 1 : 0);
        importers += (int)ok;
        if (ok)
            assert_true(metric_of(i, "objlog_range_import_rows_total") > 100);
    }
    assert_true(importers >= 1);
    /* The handoff's range stream on a node that applies p but not q (one
     * that applies both took the RangeIn, and the marker with it); bad
     * names are refused. */
    int src = xr_role(pl.active[p], q) ? pl.standby[p] : pl.active[p];
    char path[128];
    httpc_resp r;
    snprintf(path, sizeof(path), "/v1/partitions/%d/handoffs/x1/checkpoint", p);
    assert_int_equal(httpc_do(g.n[src].h, "GET", path, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 400);
    snprintf(path, sizeof(path), "/v1/partitions/%d/handoffs/%lld/checkpoint", p, out_off - 1);
    assert_int_equal(httpc_do(g.n[src].h, "GET", path, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(r.body, "NoSuchHandoff"));
    snprintf(path, sizeof(path), "/v1/partitions/%d/handoffs/%lld/checkpoint", p, out_off);
    assert_int_equal(httpc_do(g.n[src].h, "GET", path, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_memory_equal(r.body, "OBJLCKPT", 8);
    print_message("across nodes: split of xrr (partition %d -> %d, nodes %d -> %d) under %d "
                  "writes (%d acknowledged) took %lld ms; %d replica(s) of %d imported the "
                  "range\n", p, q, pl.active[p], pl.active[q], w.sent, w.acked, (long long)took,
                  importers, q);

    /* Deleted on q, then merged back to p, whose nodes hold stale rows of
     * the range: the key stays deleted. */
    httpc_resp d;
    assert_int_equal(httpc_do(g.n[0].h, "DELETE", "/v1/buckets/xrr/objects/k0150", NULL, NULL,
                              &d), 0);
    assert_int_equal(d.status, 200);
    xr_del(&want, "k0150");
    /* q's active node dies: its standby serves the moved keys. */
    int dead = pl.active[q], sb = pl.standby[q], via2 = 0;
    while (via2 == dead)
        via2++;
    proc_kill(g.n[dead].p);
    cnodes_forget(&g, dead);
    char etag[64];
    assert_int_equal(get_key(via2, "xrr", "k0199", etag, sizeof(etag), NULL), 200);
    assert_string_equal(etag, "00000000000000000000000000000199");
    assert_int_equal(get_key(via2, "xrr", "k0150", etag, sizeof(etag), NULL), 404);
    print_message("across nodes: node %d (active of %d) killed; node %d, its standby, served "
                  "the moved keys\n", dead, q, sb);
    assert_int_equal(cnodes_start(&g, dead), 0);
    wait_placed(&pl, 60000);
    coord = pl.active[0];
    snprintf(body, sizeof(body), "{\"bucket\":\"xrr\",\"key\":\"k0100\"}");
    j = xr_handoff(dead == coord ? (coord + 1) % NODES : dead, "merge", body, node,
                   sizeof(node));
    assert_int_equal(json_integer_value(json_object_get(j, "to_partition")), p);
    xr_wait_epoch(json_integer_value(json_object_get(j, "epoch")));
    json_decref(j);
    xr_put(&want, "k0199", "00000000000000000000000000009199");
    put_key(1, "xrr", "k0199", "00000000000000000000000000009199");
    xr_expect_list(&want, "after the merge back");
    assert_int_equal(get_key(2, "xrr", "k0150", etag, sizeof(etag), NULL), 404);
}

static long long xr_epoch(int i) {
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[i].h, "GET", "/v1/ranges", NULL, NULL, &r), 0);
    json_t *j = json_loads(r.body, 0, NULL);
    long long e = json_integer_value(json_object_get(j, "epoch"));
    json_decref(j);
    return e;
}

typedef struct xr_post {
    int via;
    char body[160];
    long status;
} xr_post;

static void *xr_post_main(void *arg) {
    xr_post *x = arg;
    httpc *h = httpc_new(g.n[x->via].url);
    httpc_resp r;
    x->status = httpc_do(h, "POST", "/v1/ranges/split", x->body, NULL, &r) == 0 ? r.status : -1;
    httpc_destroy(h);
    return NULL;
}

/* The coordinator is SIGKILLed between the RangeOut and the RangeIn of a
 * split between nodes: the node holding the RangeOut's marker (the
 * source's) finishes it from the log, the map comes out, and every write
 * sent meanwhile through another node is acknowledged and listed once. */
static void test_coordinator_dies(void **state) {
    (void)state;
    placement pl;
    wait_placed(&pl, 60000);
    int coord = pl.active[0], via = (coord + 1) % NODES;
    static xr_set want;
    char *have = xr_list(via, "xrr");
    for (char *l = have; *l;) {
        char *sp = strchr(l, ' '), *nl = strchr(l, '\n');
        *sp = *nl = '\0';
        xr_put(&want, l, sp + 1);
        l = nl + 1;
    }
    free(have);
    int p = put_key(via, "xrr", "k0001", "00000000000000000000000000000001");
    int q = -1;
    for (int c = 0; c < PARTS; c++)
        if (c != p && pl.active[c] != coord)
            q = c;
    assert_true(q >= 0);
    long long epoch = xr_epoch(via);
    xr_writer w = {.h = httpc_new(g.n[via].url), .set = &want};
    pthread_t wt, st;
    assert_int_equal(pthread_create(&wt, NULL, xr_write_main, &w), 0);
    xr_post post = {.via = via};
    snprintf(post.body, sizeof(post.body),
             "{\"bucket\":\"xrr\",\"key\":\"k0050\",\"to_partition\":%d}", q);
    assert_int_equal(pthread_create(&st, NULL, xr_post_main, &post), 0);
    cnodes_sleep_ms(PAUSE_MS / 2); /* the RangeOut applied, the pause runs */
    proc_kill(g.n[coord].p);
    cnodes_forget(&g, coord);
    int64_t t0 = cnodes_mono_ms();
    xr_wait_epoch(epoch + 1);
    int64_t finished = cnodes_mono_ms() - t0;
    pthread_join(st, NULL);
    cnodes_sleep_ms(300);
    atomic_store(&w.stop, 1);
    pthread_join(wt, NULL);
    httpc_destroy(w.h);
    if (w.acked != w.sent)
        fail_msg("%d of %d writes around the coordinator's death not acknowledged: %s",
                 w.sent - w.acked, w.sent, w.err);
    xr_expect_list(&want, "after the coordinator died");
    print_message("across nodes: coordinator (node %d) killed after the RangeOut of a split "
                  "%d -> %d (its request answered %ld); the map was out %lld ms later; %d "
                  "writes, all acknowledged, listed once\n", coord, p, q, post.status,
                  (long long)finished, w.sent);
    assert_int_equal(cnodes_start(&g, coord), 0);
    wait_placed(&pl, 60000);
}

/* SIGKILL the active node of sb-a's partition under load: its standby
 * keeps answering strong reads and writes complete throughout. */
static void test_standby_failover(void **state) {
    (void)state;
    assert_true(bucket_part >= 0);
    placement pl;
    wait_placed(&pl, 30000);
    int home = pl.active[bucket_part], sb = pl.standby[bucket_part];
    const char *urls[MAX_NODES];
    int n = 0;
    for (int i = 0; i < MAX_NODES; i++)
        if (g.n[i].p && i != home)
            urls[n++] = g.n[i].url;
    linload L;
    assert_int_equal(linload_start(&L, urls, n, "sb-a"), 0);
    cnodes_sleep_ms(1500); /* histories from before the kill too */
    long reads0 = atomic_load(&L.reads_sent), ok0 = atomic_load(&L.reads_answered);
    L.kill_ns = linload_now_ns();
    int64_t t0 = cnodes_mono_ms();
    proc_kill(g.n[home].p);
    cnodes_forget(&g, home);
    /* the standby answers at once: no waiting for the group */
    char etag[64];
    int fwd = -1;
    long st = get_key(sb, "sb-a", "k07", etag, sizeof(etag), &fwd);
    int64_t first_read_ms = cnodes_mono_ms() - t0;
    assert_int_equal(st, 200);
    assert_string_equal(etag, "00000000000000000000000000000007");
    assert_int_equal(fwd, 0);
    /* until the group gives the partition to a survivor */
    int64_t until = cnodes_mono_ms() + 90000, moved_ms = -1;
    while (moved_ms < 0 && cnodes_mono_ms() < until) {
        json_t *j = cnodes_cluster_of(&g, sb);
        json_t *e = json_array_get(json_object_get(j, "partitions"), (size_t)bucket_part);
        int a = cnodes_of_url(&g, json_string_value(json_object_get(e, "active")));
        if (a >= 0 && a != home)
            moved_ms = cnodes_mono_ms() - t0;
        json_decref(j);
        if (moved_ms < 0)
            cnodes_sleep_ms(100);
    }
    if (moved_ms < 0)
        fail_msg("the group did not move partition %d within 90 s", bucket_part);
    long reads_during = atomic_load(&L.reads_sent) - reads0;
    long ok_during = atomic_load(&L.reads_answered) - ok0;
    cnodes_sleep_ms(1500); /* and histories from after the move */
    char msg[512];
    if (linload_finish(&L, msg, sizeof(msg)) != 1)
        fail_msg("%s", msg);
    long long fw = atomic_load(&L.first_write_after_kill_ns);
    assert_true(fw > 0);
    int64_t first_write_ms = (fw - L.kill_ns) / 1000000;
    /* every value acknowledged before the kill, through both survivors */
    for (int k = 0; k < KEYS; k++) {
        char key[16], want[40];
        snprintf(key, sizeof(key), "k%02d", k);
        snprintf(want, sizeof(want), "%032d", k);
        for (int v = 0; v < MAX_NODES; v++) {
            if (!g.n[v].p)
                continue;
            st = get_key(v, "sb-a", key, etag, sizeof(etag), NULL);
            if (st != 200 || strcmp(etag, want) != 0)
                fail_msg("after failover: sb-a/%s via node %d: HTTP %ld etag '%s', want '%s'",
                         key, v, st, etag, want);
        }
    }
    /* the two survivors: one active, the other its standby, caught up */
    wait_placed(&pl, 60000);
    wait_caught_up(&pl, 30000);
    print_message("standby failover: kill -> strong read via the standby %lld ms, -> first "
                  "write acknowledged %lld ms, -> partition moved by the group %lld ms; strong "
                  "reads kill -> move: %ld of %ld answered (%.2f%%); %s\n",
                  (long long)first_read_ms, (long long)first_write_ms, (long long)moved_ms,
                  ok_during, reads_during,
                  reads_during ? 100.0 * (double)ok_during / (double)reads_during : 0.0, msg);
    /* Reads through the standby node never wait for the group; through the
     * other survivor, a read forwarded to the dead node at the instant of
     * the kill is sent on to the standby, so none should be lost. */
    assert_true(reads_during > 100);
    assert_true(ok_during * 100 >= reads_during * 99);
    assert_true(first_write_ms < moved_ms);
}

/* Node i's figure from /metrics (name with its labels, then a space). */
static long long metric_of(int i, const char *name) {
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[i].h, "GET", "/metrics", NULL, NULL, &r), 0);
    char line[256];
    snprintf(line, sizeof(line), "\n%s", name); /* a sample, not its # HELP */
    const char *at = strstr(r.body, line);
    if (!at)
        fail_msg("node %d /metrics lacks %s", i, name);
    return atoll(at + strlen(line));
}

/* A 4th node with an empty store joins: every partition the group or the
 * placement gives it is copied from a peer's checkpoint, then only the
 * log's tail is applied, never the log from offset 0. */
static void test_bootstrap(void **state) {
    (void)state;
    const int nw = MAX_NODES - 1;
    /* data in every partition: buckets until each has some */
    int covered[PARTS] = {0}, ncov = 0, via = 0;
    for (int b = 0; ncov < PARTS && b < 64; b++) {
        char bucket[32];
        /* names that differ at their start: the bucket hash takes the top
         * 16 bits of FNV-1a, which names differing only at the end share */
        snprintf(bucket, sizeof(bucket), "%c%c-boot", 'a' + b % 26, 'a' + b / 26);
        while (!g.n[via].p)
            via = (via + 1) % MAX_NODES;
        make_bucket(via, bucket);
        int p = -1;
        for (int k = 0; k < 50; k++) {
            char key[16], etag[40];
            snprintf(key, sizeof(key), "o%03d", k);
            snprintf(etag, sizeof(etag), "%032d", b * 1000 + k);
            p = put_key(via, bucket, key, etag);
        }
        ncov += !covered[p];
        covered[p] = 1;
        via = (via + 1) % MAX_NODES;
    }
    assert_int_equal(ncov, PARTS);
    int64_t t0 = cnodes_mono_ms();
    assert_int_equal(cnodes_start(&g, nw), 0);
    placement pl;
    wait_placed(&pl, 90000);
    wait_caught_up(&pl, 60000);
    int64_t ready_ms = cnodes_mono_ms() - t0;
    /* what the new node applies, and how far the log is */
    int mine = 0;
    long long ends = 0;
    for (int p = 0; p < PARTS; p++) {
        long long a, e;
        char role[16];
        assert_int_equal(lag_row(nw, p, &a, &e, role, sizeof(role)), 0);
        if (strcmp(role, "none") == 0)
            continue;
        assert_int_equal(a, e);
        assert_true(e > 0);
        mine++;
        ends += e;
    }
    assert_true(mine >= 1);
    long long ok = metric_of(nw, "objlog_bootstraps_total{result=\"ok\"} ");
    long long failed = metric_of(nw, "objlog_bootstraps_total{result=\"failed\"} ");
    long long rows = metric_of(nw, "objlog_bootstrap_rows_total ");
    if (ok < mine || failed != 0) /* placement may have moved one on since: ok > mine */
    {
        httpc_resp cr;
        httpc_do(g.n[nw].h, "GET", "/v1/cluster", NULL, NULL, &cr);
        fail_msg("the new node %s applies %d partition(s) but copied %lld (%lld failed): %s",
                 g.n[nw].url, mine, ok, failed, cr.body);
    }
    assert_int_equal(failed, 0);
    assert_true(rows > 0);
    /* events it applied itself: the tails only */
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[nw].h, "GET", "/v1/lag", NULL, NULL, &r), 0);
    json_t *lag = json_loads(r.body, 0, NULL);
    long long applied_here = json_integer_value(json_object_get(lag, "events_applied"));
    json_decref(lag);
    if (applied_here * 10 > ends)
        fail_msg("the new node applied %lld events itself of the %lld in its partitions: "
                 "it replayed instead of copying", applied_here, ends);
    /* its copy answers: every value through the new node */
    for (int k = 0; k < KEYS; k++) {
        char key[16], want[40], etag[64];
        snprintf(key, sizeof(key), "k%02d", k);
        snprintf(want, sizeof(want), "%032d", k);
        long st = get_key(nw, "sb-b", key, etag, sizeof(etag), NULL);
        if (st != 200 || strcmp(etag, want) != 0)
            fail_msg("sb-b/%s via the new node: HTTP %ld etag '%s'", key, st, etag);
    }
    print_message("bootstrap: a new node took %d partition(s) (active or standby) with %lld "
                  "events in the log; it copied %lld checkpoint rows from peers and applied "
                  "%lld events itself; joined -> every replica caught up in %lld ms\n",
                  mine, ends, rows, applied_here, (long long)ready_ms);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_handoff_across_nodes),
        cmocka_unit_test(test_coordinator_dies),
        cmocka_unit_test(test_standby_failover),
        cmocka_unit_test(test_bootstrap),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
