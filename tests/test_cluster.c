/* test_cluster.c: three objlogd nodes of one cluster on a real 3-broker
 * Kafka. Every node is a process on
 * loopback (`objlogd --brokers --cluster c1`), a child of the test, killed
 * with it even when it fails (proc.h); the Kafka nodes are the shared
 * fixture's (testlog.h).
 *
 * What it pins: the group gives every partition to exactly one node and
 * every node's GET /v1/cluster says the same; writes go through every
 * node (a node that does not apply the write's partition takes the
 * outcome from the node that does); reads through every node (a node
 * that does not apply the partition answers 307 to the one that does, with
 * its URL in Location and X-Objlog-Node); after SIGKILL of the node that
 * applies a busy partition, its keys are read again with strong
 * consistency through the survivors with the values acknowledged before
 * the kill, and writes to it succeed again. It prints the failover time.
 * Then the usage stats gathered across the nodes (test_cluster_stats):
 * every node answers the global, tenant, bucket and top stats exactly.
 * Last, S3's ListBuckets gathered the same way through every node. */
#include <ctype.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "clusternodes.h"
#include "httpc.h"
#include "linload.h"
#include "proc.h"
#include "testlog.h"

#define NODES 3      /* started by the setup */
#define MAX_NODES 4  /* a 4th joins in test_join_and_leave */
#define PARTS 4
#define KEYS 24

static cnodes g;
static char *node_flags[] = {"--ready-max-lag", "1", "--eventual-max-lag", "100000", NULL};

static int group_setup(void **state) {
    (void)state;
    g.s3 = 1; /* every node serves S3 too */
    g.named = 1; /* --node-name node-I, log lines in DIR/node-I.log */
    return cnodes_setup(&g, "c1", PARTS, NODES, MAX_NODES, node_flags);
}

/* Every node still running must stop cleanly on SIGTERM (exit 0: under
 * the sanitizers also no leak, no error). */
static int group_teardown(void **state) {
    (void)state;
    return cnodes_teardown(&g);
}

/* 1 when node i sees `want` nodes and every partition active on one of
 * them; owner[p] gets the active URL. */
static int cluster_settled(int i, int want, char owner[PARTS][128]) {
    json_t *j = cnodes_cluster_of(&g, i);
    json_t *parts = json_object_get(j, "partitions");
    int ok = j && (int)json_array_size(json_object_get(j, "nodes")) == want &&
             json_array_size(parts) == PARTS;
    for (int p = 0; ok && p < PARTS; p++) {
        const char *a = json_string_value(json_object_get(json_array_get(parts, (size_t)p), "active"));
        ok = a != NULL;
        if (ok)
            snprintf(owner[p], 128, "%s", a);
    }
    json_decref(j);
    return ok;
}

/* Until every running node agrees on who applies each partition, every
 * partition has one owner, and each owner is a running node that applies
 * it by its own account. */
static void wait_settled(int want, char owner[PARTS][128], int timeout_ms) {
    int64_t until = cnodes_mono_ms() + timeout_ms;
    for (;;) {
        char seen[MAX_NODES][PARTS][128];
        int agree = 1, first = -1;
        for (int i = 0; i < MAX_NODES && agree; i++) {
            if (!g.n[i].p)
                continue;
            agree = cluster_settled(i, want, seen[i]);
            if (agree && first < 0)
                first = i;
            for (int p = 0; agree && first >= 0 && p < PARTS; p++)
                agree = strcmp(seen[i][p], seen[first][p]) == 0;
        }
        /* Each owner says it applies the partition (its "local"). */
        for (int p = 0; agree && first >= 0 && p < PARTS; p++) {
            int found = 0;
            for (int i = 0; i < MAX_NODES; i++) {
                if (!g.n[i].p || strcmp(g.n[i].url, seen[first][p]) != 0)
                    continue;
                json_t *j = cnodes_cluster_of(&g, i);
                found = json_is_true(json_object_get(
                    json_array_get(json_object_get(j, "partitions"), (size_t)p), "local"));
                json_decref(j);
            }
            agree = found;
        }
        if (agree && first >= 0) {
            memcpy(owner, seen[first], sizeof(seen[first]));
            return;
        }
        if (cnodes_mono_ms() > until)
            fail_msg("the cluster did not settle on %d nodes in %d ms", want, timeout_ms);
        cnodes_sleep_ms(250);
    }
}

static int running(void) {
    int n = 0;
    for (int i = 0; i < MAX_NODES; i++)
        n += g.n[i].p != NULL;
    return n;
}

/* A running node other than `not`. */
static int other_running(int not) {
    for (int i = 0; i < MAX_NODES; i++)
        if (g.n[i].p && i != not)
            return i;
    return -1;
}

static void put_key(int via, const char *bucket, const char *key, const char *etag) {
    char path[256], body[128];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, key);
    snprintf(body, sizeof(body), "{\"size\":7,\"etag\":\"%s\"}", etag);
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[via].raw, "PUT", path, body, NULL, &r), 0);
    if (r.status != 200)
        fail_msg("PUT %s via node %d: HTTP %ld %s", path, via, r.status, r.body);
}

/* The etag a strong GET through node `via` sees, following redirects;
 * "" with the status otherwise. */
static long get_etag(int via, const char *bucket, const char *key, char *etag, size_t n) {
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
    return r.status;
}

/* The node that applies bucket b: the one that answers a LIST of it
 * itself, not forwarded. */
static int bucket_node(const char *bucket) {
    char path[128];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects?max_keys=1", bucket);
    for (int i = 0; i < MAX_NODES; i++) {
        httpc_resp r;
        if (!g.n[i].p || httpc_do(g.n[i].raw, "GET", path, NULL, NULL, &r) < 0)
            continue;
        if (r.status == 200 && !strstr(r.headers, "x-objlog-forwarded-by:"))
            return i;
    }
    return -1;
}

/* Node i's objlog_cluster_forwards_total{result="answered"}. */
static long forwards_answered(int i) {
    static const char name[] = "objlog_cluster_forwards_total{result=\"answered\"} ";
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[i].raw, "GET", "/metrics", NULL, NULL, &r), 0);
    const char *at = strstr(r.body, name);
    assert_non_null(at);
    return atol(at + strlen(name));
}

static void test_cluster_nodes(void **state) {
    (void)state;
    char owner[PARTS][128];
    wait_settled(NODES, owner, 90000);
    /* exactly once: every partition on one node, every node counted */
    int per_node[MAX_NODES] = {0};
    for (int p = 0; p < PARTS; p++) {
        int i = cnodes_of_url(&g, owner[p]);
        if (i < 0)
            fail_msg("partition %d is active on %s, not one of our nodes", p, owner[p]);
        per_node[i]++;
    }
    int total = 0;
    for (int i = 0; i < NODES; i++)
        total += per_node[i];
    assert_int_equal(total, PARTS);
    json_t *j = cnodes_cluster_of(&g, 0);
    assert_string_equal(json_string_value(json_object_get(j, "cluster")), "c1");
    assert_string_equal(json_string_value(json_object_get(j, "group")), "objlog-cluster-c1");
    assert_string_equal(json_string_value(json_object_get(j, "self")), g.n[0].url);
    json_decref(j);
    /* objlog cluster: the same, as tables */
    char bin[512], out[8192], err[2048];
    proc_bin("ops/objlog", bin, sizeof(bin));
    char *argv[] = {bin, "cluster", "--url", g.n[1].url, NULL};
    assert_int_equal(proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 20000), 0);
    char line[256];
    snprintf(line, sizeof(line), "cluster c1 (group objlog-cluster-c1), asked %s\n", g.n[1].url);
    assert_non_null(strstr(out, line));
    assert_non_null(strstr(out, "NODE"));
    assert_non_null(strstr(out, "PARTITION"));
    for (int i = 0; i < NODES; i++)
        assert_non_null(strstr(out, g.n[i].url));
    /* /metrics: the nodes and every partition's active node */
    httpc_resp mr;
    assert_int_equal(httpc_do(g.n[2].raw, "GET", "/metrics", NULL, NULL, &mr), 0);
    assert_non_null(strstr(mr.body, "objlog_cluster_nodes 3\n"));
    for (int p = 0; p < PARTS; p++) {
        char want[512];
        snprintf(want, sizeof(want),
                 "objlog_cluster_partition_applied{partition=\"%d\",node=\"%.200s\",role=\"active\"} ",
                 p, owner[p]);
        assert_non_null(strstr(mr.body, want));
    }

    /* writes through every node, reads through every node */
    const char *buckets[3] = {"bk-a", "bk-b", "bk-c"};
    for (int b = 0; b < 3; b++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/buckets/%s", buckets[b]);
        httpc_resp r;
        assert_int_equal(httpc_do(g.n[b].raw, "PUT", path, "{}", NULL, &r), 0);
        if (r.status != 200)
            fail_msg("PUT %s via node %d: HTTP %ld %s", path, b, r.status, r.body);
    }
    for (int k = 0; k < KEYS; k++) {
        char key[16], etag[40];
        snprintf(key, sizeof(key), "k%02d", k);
        snprintf(etag, sizeof(etag), "%032d", k);
        put_key(k % NODES, buckets[k % 3], key, etag);
    }
    for (int k = 0; k < KEYS; k++) {
        char key[16], want[40], got[64];
        snprintf(key, sizeof(key), "k%02d", k);
        snprintf(want, sizeof(want), "%032d", k);
        for (int via = 0; via < NODES; via++) {
            long st = get_etag(via, buckets[k % 3], key, got, sizeof(got));
            if (st != 200 || strcmp(got, want) != 0)
                fail_msg("GET %s/%s via node %d: HTTP %ld etag '%s', want '%s'",
                         buckets[k % 3], key, via, st, got, want);
        }
    }
    /* ready (--ready-max-lag 1): each node answers for the partitions it
     * applies, not for the ones it does not (those lag here for good) */
    for (int i = 0; i < NODES; i++) {
        httpc_resp rr;
        long st = 0;
        for (int t = 0; t < 100 && st != 200; t++) {
            if (httpc_do(g.n[i].raw, "GET", "/readyz", NULL, NULL, &rr) == 0)
                st = rr.status;
            if (st != 200)
                cnodes_sleep_ms(100);
        }
        if (st != 200)
            fail_msg("node %d /readyz: HTTP %ld %s", i, st, rr.body);
    }
    /* GET /v1/buckets spans every partition: each node's page of its own,
     * merged, walked 4 at a time, each page through the next node (the
     * token is signed with the key every node shares) */
    for (int b = 0; b < 10; b++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/buckets/lb-%02d", b);
        httpc_resp br;
        assert_int_equal(httpc_do(g.n[b % NODES].raw, "PUT", path, "{}", NULL, &br), 0);
        assert_int_equal(br.status, 200);
    }
    char walked[2048] = "", path[1024] = "/v1/buckets?max_buckets=4";
    int pages = 0;
    for (;;) {
        httpc_resp br;
        assert_int_equal(httpc_do(g.n[pages % NODES].raw, "GET", path, NULL, NULL, &br), 0);
        if (br.status != 200)
            fail_msg("GET %s via node %d: HTTP %ld %s", path, pages % NODES, br.status, br.body);
        json_t *pj = json_loads(br.body, 0, NULL);
        size_t k;
        json_t *b;
        json_array_foreach(json_object_get(pj, "buckets"), k, b) {
            strcat(walked, json_string_value(json_object_get(b, "name")));
            strcat(walked, " ");
        }
        pages++;
        const char *nt = json_string_value(json_object_get(pj, "next_continuation_token"));
        int more = json_is_true(json_object_get(pj, "is_truncated"));
        assert_int_equal(more, nt != NULL);
        if (nt) {
            char *e = httpc_escape(g.n[0].raw, nt, strlen(nt));
            snprintf(path, sizeof(path), "/v1/buckets?max_buckets=4&continuation_token=%s", e);
            free(e);
        }
        json_decref(pj);
        if (!more)
            break;
        assert_true(pages < 10);
    }
    assert_string_equal(walked, "bk-a bk-b bk-c lb-00 lb-01 lb-02 lb-03 lb-04 lb-05 lb-06 "
                                "lb-07 lb-08 lb-09 ");
    assert_int_equal(pages, 4);
    /* the nodes' own parameters are theirs only */
    httpc_resp br;
    assert_int_equal(httpc_do(g.n[0].raw, "GET", "/v1/buckets?partitions=0", NULL, NULL, &br), 0);
    assert_int_equal(br.status, 400);
    assert_non_null(strstr(br.body, "partitions is for objlogd nodes"));

    /* a node that does not apply the partition forwards the read to the
     * one that does and says so */
    int home = bucket_node("bk-a");
    assert_true(home >= 0);
    int other = (home + 1) % NODES;
    long fwd_before = forwards_answered(other);
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[other].raw, "GET", "/v1/buckets/bk-a/objects/k00", NULL,
                              NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"etag\":\"00000000000000000000000000000000\""));
    char want[256];
    snprintf(want, sizeof(want), "x-objlog-node: %s\n", g.n[home].url);
    assert_non_null(strstr(r.headers, want));
    snprintf(want, sizeof(want), "x-objlog-forwarded-by: %s\n", g.n[other].url);
    assert_non_null(strstr(r.headers, want));
    /* errors come back as the owner gave them */
    assert_int_equal(httpc_do(g.n[other].raw, "GET", "/v1/buckets/bk-a/objects/nope", NULL,
                              NULL, &r), 0);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(r.body, "NoSuchKey"));
    /* the cost of the hop, for the record (printed, not asserted) */
    int64_t t[2];
    for (int side = 0; side < 2; side++) {
        int via = side ? other : home;
        int64_t t0 = cnodes_mono_ms();
        for (int i = 0; i < 300; i++) {
            assert_int_equal(httpc_do(g.n[via].raw, "GET", "/v1/buckets/bk-a/objects/k00",
                                      NULL, NULL, &r), 0);
            assert_int_equal(r.status, 200);
        }
        t[side] = cnodes_mono_ms() - t0;
    }
    print_message("300 strong GETs one at a time: %lld ms on the owner, %lld ms through "
                  "another node (forwarded)\n", (long long)t[0], (long long)t[1]);
    /* counted on the forwarding node: exactly the 302 reads above */
    assert_int_equal(forwards_answered(other) - fwd_before, 302);
    /* one hop only: a request already forwarded is not sent on again */
    char hop[300];
    snprintf(hop, sizeof(hop), "X-Objlog-Hop: %s", g.n[home].url);
    const char *hdrs[] = {hop, NULL};
    assert_int_equal(httpc_do(g.n[other].raw, "GET", "/v1/buckets/bk-a/objects/k00", NULL,
                              hdrs, &r), 0);
    assert_int_equal(r.status, 503);
    assert_non_null(strstr(r.body, "this node does not apply the partition"));
}

/* Strong GETs through node 0 (which stays) while nodes come and go:
 * how many are answered (200) and how many are not (503 while a partition
 * moves, transport errors). */
typedef struct reader {
    pthread_t t;
    atomic_int stop;
    long ok, other;
} reader;

static void *reader_main(void *arg) {
    reader *rd = arg;
    httpc *h = httpc_new(g.n[0].url);
    const char *paths[3] = {"/v1/buckets/bk-a/objects/k00", "/v1/buckets/bk-b/objects/k01",
                            "/v1/buckets/bk-c/objects/k02"};
    for (long i = 0; !atomic_load(&rd->stop); i++) {
        httpc_resp r;
        if (httpc_do(h, "GET", paths[i % 3], NULL, NULL, &r) == 0 && r.status == 200)
            rd->ok++;
        else
            rd->other++;
    }
    httpc_destroy(h);
    return NULL;
}

/* A 4th node joins, then one of the first three leaves (SIGTERM): the
 * group moves partitions cooperatively (sticky): on the join only the
 * partitions the new node takes change owner, on the leave only the
 * leaver's; reads through a node that stays keep being answered (the
 * share is printed). */
/* Node of each of these buckets (made here if need be). */
#define EVB 20
static void ev_bucket_nodes(int *node, int create) {
    for (int b = 0; b < EVB; b++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/buckets/ev-%02d", b);
        if (create) {
            httpc_resp r;
            assert_int_equal(httpc_do(g.n[0].raw, "PUT", path, "{}", NULL, &r), 0);
            assert_int_equal(r.status, 200);
        }
        snprintf(path, sizeof(path), "ev-%02d", b);
        node[b] = bucket_node(path);
    }
}

static void test_join_and_leave(void **state) {
    (void)state;
    char before[PARTS][128], joined[PARTS][128], left[PARTS][128];
    wait_settled(running(), before, 60000);
    int ev_before[EVB], ev_after[EVB];
    ev_bucket_nodes(ev_before, 1);
    reader rd = {0};
    assert_int_equal(pthread_create(&rd.t, NULL, reader_main, &rd), 0);
    int64_t t0 = cnodes_mono_ms();
    assert_int_equal(cnodes_start(&g, 3), 0);
    /* A cooperative join takes two rebalances: the group is settled on 4
     * members before the new one has anything; wait for its share. */
    for (int has = 0; !has;) {
        wait_settled(4, joined, 90000);
        for (int p = 0; p < PARTS; p++)
            has |= strcmp(joined[p], g.n[3].url) == 0;
        if (!has && cnodes_mono_ms() - t0 > 90000)
            fail_msg("join: the new node got no partition in 90 s");
        if (!has)
            cnodes_sleep_ms(250);
    }
    int64_t join_ms = cnodes_mono_ms() - t0;
    int moved = 0, to_new = 0;
    for (int p = 0; p < PARTS; p++) {
        if (strcmp(before[p], joined[p]) == 0)
            continue;
        moved++;
        to_new += strcmp(joined[p], g.n[3].url) == 0;
    }
    if (moved != to_new || to_new < 1)
        fail_msg("join: %d partitions moved, %d of them to the new node", moved, to_new);
    /* --eventual-max-lag: the node that gave a partition up still answers
     * eventual reads of it from its own copy (nothing was written since,
     * so it is within the bound); strong ones go to the new node */
    ev_bucket_nodes(ev_after, 0);
    int b = 0;
    while (b < EVB && ev_after[b] != 3)
        b++;
    if (b == EVB)
        fail_msg("none of %d buckets is on the new node", EVB);
    char path[96];
    httpc_resp er;
    snprintf(path, sizeof(path), "/v1/buckets/ev-%02d?consistency=eventual", b);
    assert_int_equal(httpc_do(g.n[ev_before[b]].raw, "GET", path, NULL, NULL, &er), 0);
    assert_int_equal(er.status, 200);
    assert_null(strstr(er.headers, "x-objlog-forwarded-by:"));
    snprintf(path, sizeof(path), "/v1/buckets/ev-%02d?consistency=strong", b);
    assert_int_equal(httpc_do(g.n[ev_before[b]].raw, "GET", path, NULL, NULL, &er), 0);
    assert_int_equal(er.status, 200);
    assert_non_null(strstr(er.headers, "x-objlog-forwarded-by:"));
    t0 = cnodes_mono_ms();
    assert_int_equal(proc_stop(g.n[1].p, 20000), 0);
    char leaver[128];
    snprintf(leaver, sizeof(leaver), "%s", g.n[1].url);
    cnodes_forget(&g, 1);
    wait_settled(3, left, 90000);
    int64_t leave_ms = cnodes_mono_ms() - t0;
    for (int p = 0; p < PARTS; p++)
        if (strcmp(joined[p], left[p]) != 0 && strcmp(joined[p], leaver) != 0)
            fail_msg("leave: partition %d moved from %s, which stayed", p, joined[p]);
    atomic_store(&rd.stop, 1);
    pthread_join(rd.t, NULL);
    print_message("join: %d partition(s) moved to the new node, settled in %lld ms; leave: "
                  "settled in %lld ms; reads through a staying node meanwhile: %ld of %ld "
                  "answered (%.1f%%)\n", to_new, (long long)join_ms, (long long)leave_ms,
                  rd.ok, rd.ok + rd.other,
                  rd.ok + rd.other ? 100.0 * (double)rd.ok / (double)(rd.ok + rd.other) : 0);
}

/* ---- single-key histories across nodes, through a failover ---- */

/* Starts the linearizability load on bk-a through every node but home. */
static void lin_start(linload *L, int home) {
    const char *urls[MAX_NODES];
    int n = 0;
    for (int i = 0; i < MAX_NODES; i++)
        if (g.n[i].p && i != home)
            urls[n++] = g.n[i].url;
    assert_int_equal(linload_start(L, urls, n, "bk-a"), 0);
}

/* Stops the load and checks every key's history. */
static void lin_finish(linload *L) {
    char msg[512];
    if (linload_finish(L, msg, sizeof(msg)) != 1)
        fail_msg("%s", msg);
    print_message("linearizable across nodes through the failover: %s\n", msg);
    assert_true(atomic_load(&L->reads_answered) > 0);
    assert_true(atomic_load(&L->done_after_kill) > 0);
}

/* ---- what the survivors say of a node that died ---- */

/* "1,3" of the partitions owner[] gives url. */
static void parts_of(char owner[PARTS][128], const char *url, char *out, size_t n) {
    size_t len = 0;
    out[0] = '\0';
    for (int p = 0; p < PARTS; p++)
        if (strcmp(owner[p], url) == 0)
            len += (size_t)snprintf(out + len, n - len, "%s%d", len ? "," : "", p);
}

/* Every line of node i's log says whose it is: "<ts> [node-I] LEVEL". */
static void assert_lines_named(int i, const char *log) {
    char tag[32];
    snprintf(tag, sizeof(tag), "Z [node-%d] ", i);
    int lines = 0;
    for (const char *l = log; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        /* "2026-12-01T23:27:42.566Z [node-I] " */
        if (len < 24 + strlen(tag) || memcmp(l + 23, tag, strlen(tag)) != 0)
            fail_msg("node %d's log line %d lacks '%s': %.*s", i, lines + 1, tag, (int)len, l);
        lines++;
        l = nl ? nl + 1 : l + len;
    }
    assert_true(lines > 10);
}

/* Waits for needle in node i's log; fails with the log's tail. */
static void wait_log(int i, const char *needle, int timeout_ms) {
    int64_t until = cnodes_mono_ms() + timeout_ms;
    for (;;) {
        char *log = cnodes_log(&g, i);
        int found = log && strstr(log, needle);
        if (found || cnodes_mono_ms() > until) {
            size_t n = log ? strlen(log) : 0;
            if (!found)
                fail_msg("node %d did not log '%s' in %d ms; its log ends:\n%s", i, needle,
                         timeout_ms, log ? log + (n > 3000 ? n - 3000 : 0) : "(none)");
            free(log);
            return;
        }
        free(log);
        cnodes_sleep_ms(200);
    }
}

/* The status page of node v as headless Chromium renders it (its DOM,
 * malloc'd), after its script's first refreshes; NULL when there is no
 * chromium (a failure under CI=true, where ops/setup.sh installs it). */
static char *status_page_dom(int v) {
    const char *paths[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser", NULL};
    const char *chromium = NULL;
    for (int i = 0; paths[i] && !chromium; i++)
        if (access(paths[i], X_OK) == 0)
            chromium = paths[i];
    if (!chromium) {
        const char *ci = getenv("CI");
        if (ci && strcmp(ci, "true") == 0)
            fail_msg("chromium is not installed (ops/setup.sh installs it); CI=true: not skipped");
        print_message("no chromium: the status page's departed row is not checked\n");
        return NULL;
    }
    char profile[320], url[160], err[4096];
    snprintf(profile, sizeof(profile), "%.250s/chromium-%d", g.dir, v);
    snprintf(url, sizeof(url), "%s/", g.n[v].url);
    char prof_flag[340];
    snprintf(prof_flag, sizeof(prof_flag), "--user-data-dir=%s", profile);
    /* timeout(1) ends chromium (and so its children) should it hang */
    char *argv[] = {"/usr/bin/timeout", "-k", "5", "90", (char *)chromium, "--headless=new",
                    "--no-sandbox", "--disable-gpu", prof_flag, "--no-first-run",
                    "--no-default-browser-check", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-extensions",
                    "--disable-dev-shm-usage", "--virtual-time-budget=8000", "--dump-dom", url,
                    NULL};
    size_t n = 1 << 20;
    char *out = malloc(n);
    assert_non_null(out);
    int rc = proc_run(argv, NULL, out, n, err, sizeof(err), 120000);
    if (rc != 0)
        fail_msg("chromium --dump-dom %s: exit %d: %.500s", url, rc, err);
    return out;
}

/* After SIGKILL of node home (it was active for before[]'s partitions of
 * url; after[] is where they went): each survivor logs a WARN naming it
 * and its partitions when it stops answering and again when it leaves
 * (with where each partition went), shows it as gone in GET /v1/cluster
 * and objlog cluster, and exports objlog_cluster_peer_up 0 for it. */
static void check_peer_signals(int home, const char *url, char before[PARTS][128],
                               char after[PARTS][128]) {
    char had[64], want[512];
    parts_of(before, url, had, sizeof(had));
    assert_true(had[0] != '\0');
    for (int v = 0; v < MAX_NODES; v++) {
        if (!g.n[v].p)
            continue;
        snprintf(want, sizeof(want), "[node-%d] WARN cluster: peer node-%d (%s) stopped "
                 "answering (GET /v1/lag: ", v, home, url);
        wait_log(v, want, 10000);
        snprintf(want, sizeof(want), "); it is active for partitions %s and standby for none",
                 had);
        wait_log(v, want, 1000);
        /* the departure, with each partition's new node */
        size_t len = (size_t)snprintf(want, sizeof(want), "[node-%d] WARN cluster: peer node-%d "
                                      "(%s) left the cluster; partitions it was active for: ",
                                      v, home, url);
        for (int p = 0, k = 0; p < PARTS; p++) {
            if (strcmp(before[p], url) != 0)
                continue;
            len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%d (now on node-%d)",
                                    k++ ? ", " : "", p, cnodes_of_url(&g, after[p]));
        }
        wait_log(v, want, 10000);
        char *log = cnodes_log(&g, v);
        assert_non_null(log);
        assert_lines_named(v, log);
        free(log);
        /* GET /v1/cluster: the members by name and state, the dead one gone */
        json_t *j = cnodes_cluster_of(&g, v);
        assert_non_null(j);
        size_t k;
        json_t *nd;
        json_array_foreach(json_object_get(j, "nodes"), k, nd) {
            int i = cnodes_of_url(&g, json_string_value(json_object_get(nd, "url")));
            char name[32];
            snprintf(name, sizeof(name), "node-%d", i);
            assert_true(i >= 0 && i != home);
            assert_string_equal(json_string_value(json_object_get(nd, "name")), name);
            assert_string_equal(json_string_value(json_object_get(nd, "state")), "up");
        }
        json_t *gone = json_array_get(json_object_get(j, "departed"), 0);
        char name[32];
        snprintf(name, sizeof(name), "node-%d", home);
        assert_string_equal(json_string_value(json_object_get(gone, "url")), url);
        assert_string_equal(json_string_value(json_object_get(gone, "name")), name);
        assert_string_equal(json_string_value(json_object_get(gone, "state")), "gone");
        const char *at = json_string_value(json_object_get(gone, "gone_at"));
        assert_true(at && strlen(at) == 24 && at[23] == 'Z');
        json_int_t ago = json_integer_value(json_object_get(gone, "gone_seconds_ago"));
        assert_true(ago >= 0 && ago < 120);
        char got[64] = "";
        json_t *pv;
        size_t len2 = 0;
        json_array_foreach(json_object_get(gone, "partitions"), k, pv)
            len2 += (size_t)snprintf(got + len2, sizeof(got) - len2, "%s%lld", k ? "," : "",
                                     (long long)json_integer_value(pv));
        assert_string_equal(got, had);
        json_decref(j);
        /* /metrics: 0 for it, 1 for every other peer */
        httpc_resp mr;
        assert_int_equal(httpc_do(g.n[v].raw, "GET", "/metrics", NULL, NULL, &mr), 0);
        snprintf(want, sizeof(want), "objlog_cluster_peer_up{node=\"%s\",name=\"node-%d\"} 0\n",
                 url, home);
        if (!strstr(mr.body, want))
            fail_msg("node %d /metrics lacks %s", v, want);
        for (int o = 0; o < MAX_NODES; o++) {
            if (!g.n[o].p || o == v)
                continue;
            snprintf(want, sizeof(want),
                     "objlog_cluster_peer_up{node=\"%s\",name=\"node-%d\"} 1\n", g.n[o].url, o);
            if (!strstr(mr.body, want))
                fail_msg("node %d /metrics lacks %s", v, want);
        }
    }
    /* objlog cluster: the dead node's row says gone, and when */
    char bin[512], out[8192], err[2048], row[512];
    proc_bin("ops/objlog", bin, sizeof(bin));
    int via = other_running(home);
    char *argv[] = {bin, "cluster", "--url", g.n[via].url, NULL};
    assert_int_equal(proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 20000), 0);
    snprintf(row, sizeof(row), "%s  node-%d", url, home);
    const char *line = strstr(out, row);
    if (!line || !strstr(line, " gone ") || strchr(line, '\n') < strstr(line, " gone "))
        fail_msg("objlog cluster has no gone row for %s:\n%s", url, out);
    snprintf(row, sizeof(row), "%s  node-%d", g.n[via].url, via);
    line = strstr(out, row);
    assert_non_null(line);
    assert_non_null(strstr(line, "up, asked"));
    /* the status page: a row of the nodes table for it, gone */
    char *dom = status_page_dom(via);
    if (dom) {
        snprintf(row, sizeof(row), "<tr class=\"node gone\" data-self=\"false\"><td>node-%d %s</td>"
                 "<td>gone ", home, url);
        if (!strstr(dom, row))
            fail_msg("the status page of node %d has no '%s' row; its nodes table: %.1500s", via,
                     row, strstr(dom, "id=\"nodes\"") ? strstr(dom, "id=\"nodes\"") : dom);
        free(dom);
    }
}

/* SIGKILL the node that applies bk-a: its keys come back through the
 * survivors, strong, with every acknowledged value; writes resume; the
 * survivors say so (check_peer_signals). */
static void test_failover(void **state) {
    (void)state;
    int home = bucket_node("bk-a");
    assert_true(home >= 0);
    /* a LIST page through the node about to die: its token must still
     * work on the partition's next node */
    httpc_resp lr;
    assert_int_equal(httpc_do(g.n[home].raw, "GET", "/v1/buckets/bk-a/objects?max_keys=3", NULL,
                              NULL, &lr), 0);
    assert_int_equal(lr.status, 200);
    json_t *page = json_loads(lr.body, 0, NULL);
    const char *tok = json_string_value(json_object_get(page, "next_continuation_token"));
    assert_non_null(tok);
    char *etok = httpc_escape(g.n[home].raw, tok, strlen(tok));
    char next_path[512];
    snprintf(next_path, sizeof(next_path), "/v1/buckets/bk-a/objects?max_keys=3&continuation_token=%s",
             etok);
    free(etok);
    json_decref(page);
    char before[PARTS][128], home_url[128];
    wait_settled(running(), before, 60000);
    snprintf(home_url, sizeof(home_url), "%s", g.n[home].url);
    linload L;
    lin_start(&L, home);
    cnodes_sleep_ms(1000); /* histories from before the kill too */
    L.kill_ns = linload_now_ns();
    int64_t t0 = cnodes_mono_ms();
    proc_kill(g.n[home].p);
    cnodes_forget(&g, home);
    int via = other_running(home);
    char got[64];
    long st = 0;
    int64_t first_read = -1;
    while (cnodes_mono_ms() - t0 < 90000) {
        st = get_etag(via, "bk-a", "k00", got, sizeof(got));
        if (st == 200) {
            first_read = cnodes_mono_ms() - t0;
            break;
        }
        cnodes_sleep_ms(100);
    }
    if (first_read < 0)
        fail_msg("bk-a not readable through node %d 90 s after the kill (last HTTP %ld)", via,
                 st);
    /* Each survivor's membership refresh (once a second) sees the move. */
    char owner[PARTS][128];
    wait_settled(running(), owner, 60000);
    check_peer_signals(home, home_url, before, owner);
    /* the next page, with the dead node's token, from the new node */
    assert_int_equal(httpc_do(g.n[via].raw, "GET", next_path, NULL, NULL, &lr), 0);
    if (lr.status != 200)
        fail_msg("LIST page 2 after failover: HTTP %ld %s", lr.status, lr.body);
    page = json_loads(lr.body, 0, NULL);
    json_t *objs = json_object_get(page, "objects");
    assert_int_equal(json_array_size(objs), 3);
    const char *want_keys[3] = {"k09", "k12", "k15"};
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(objs, i), "key")),
                            want_keys[i]);
    json_decref(page);
    /* every key acknowledged before the kill, through both survivors */
    for (int k = 0; k < KEYS; k += 3) {
        char key[16], want[40];
        snprintf(key, sizeof(key), "k%02d", k);
        snprintf(want, sizeof(want), "%032d", k);
        for (int v = 0; v < MAX_NODES; v++) {
            if (!g.n[v].p)
                continue;
            st = get_etag(v, "bk-a", key, got, sizeof(got));
            if (st != 200 || strcmp(got, want) != 0)
                fail_msg("after failover: GET bk-a/%s via node %d: HTTP %ld etag '%s', want '%s'",
                         key, v, st, got, want);
        }
    }
    /* writes to the moved partition succeed again, through either survivor */
    int64_t w0 = cnodes_mono_ms();
    put_key(via, "bk-a", "after-kill", "ffffffffffffffffffffffffffffffff");
    int64_t write_ms = cnodes_mono_ms() - w0;
    for (int v = 0; v < MAX_NODES; v++) {
        if (!g.n[v].p)
            continue;
        st = get_etag(v, "bk-a", "after-kill", got, sizeof(got));
        assert_int_equal(st, 200);
        assert_string_equal(got, "ffffffffffffffffffffffffffffffff");
    }
    cnodes_sleep_ms(1500); /* and from after it */
    lin_finish(&L);
    print_message("failover: kill -> first strong read of the moved partition %lld ms; "
                  "a write to it then took %lld ms\n", (long long)first_read,
                  (long long)write_ms);
}

/* ---- usage stats gathered across the nodes ---- */

#define ST_BUCKETS 7
#define ST_FIELDS 10

static const char *const st_fields[ST_FIELDS] = {
    "objects", "bytes", "versions", "version_bytes", "noncurrent_versions", "noncurrent_bytes",
    "delete_markers", "uploads", "upload_part_bytes", "buckets"};

/* Names picked by their hash so that, with PARTS 4, st-acme has a bucket
 * on every partition (so on every node that applies one) and st-beta on
 * two: a tenant's rows sit on several nodes. */
static const struct {
    const char *name, *tenant;
    int versioned;
} st_defs[ST_BUCKETS] = {
    {"st-echo", "st-acme", 0},  {"st-foxtrot", "st-acme", 0}, {"st-bravo", "st-acme", 0},
    {"st-delta", "st-acme", 1}, {"st-blue", "st-beta", 0},    {"st-lima", "st-beta", 0},
    {"st-alpha", "st-gamma", 0},
};

typedef struct st_usage {
    long long f[ST_FIELDS];
} st_usage;

/* GET path through node via (not following redirects); the parsed body of
 * a 200, failing otherwise. */
static json_t *st_get(int via, const char *path) {
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[via].raw, "GET", path, NULL, NULL, &r), 0);
    if (r.status != 200)
        fail_msg("GET %s via node %d: HTTP %ld %s", path, via, r.status, r.body);
    json_t *j = json_loads(r.body, 0, NULL);
    assert_non_null(j);
    return j;
}

static void st_read(json_t *j, st_usage *u) {
    for (int f = 0; f < ST_FIELDS; f++)
        u->f[f] = json_integer_value(json_object_get(j, st_fields[f]));
}

static void st_expect(json_t *j, const st_usage *want, const char *what, int via) {
    for (int f = 0; f < ST_FIELDS; f++) {
        json_t *v = json_object_get(j, st_fields[f]);
        if (f == ST_FIELDS - 1 && !v)
            continue; /* a bucket's stats carry no bucket count */
        if (json_integer_value(v) != want->f[f])
            fail_msg("%s via node %d: %s is %lld, want %lld", what, via, st_fields[f],
                     (long long)json_integer_value(v), want->f[f]);
    }
}

/* Writes through rotating nodes; the expected usage of each bucket. */
static void st_write(st_usage *b) {
    for (int i = 0; i < ST_BUCKETS; i++) {
        char path[96], body[128];
        snprintf(path, sizeof(path), "/v1/buckets/%s", st_defs[i].name);
        snprintf(body, sizeof(body), "{\"tenant\":\"%s\"%s}", st_defs[i].tenant,
                 st_defs[i].versioned ? ",\"versioning\":\"Enabled\"" : "");
        httpc_resp r;
        int via = other_running(i % MAX_NODES);
        assert_int_equal(httpc_do(g.n[via].raw, "PUT", path, body, NULL, &r), 0);
        if (r.status != 200)
            fail_msg("PUT %s via node %d: HTTP %ld %s", path, via, r.status, r.body);
        memset(&b[i], 0, sizeof(b[i]));
        for (int k = 0; k < i + 2; k++) {
            char kp[128], kb[128];
            long long size = 1000LL * (i + 1) + k;
            snprintf(kp, sizeof(kp), "/v1/buckets/%s/objects/o%d", st_defs[i].name, k);
            snprintf(kb, sizeof(kb), "{\"size\":%lld,\"etag\":\"%032d\"}", size, k);
            via = other_running((i + k) % MAX_NODES);
            assert_int_equal(httpc_do(g.n[via].raw, "PUT", kp, kb, NULL, &r), 0);
            if (r.status != 200)
                fail_msg("PUT %s via node %d: HTTP %ld %s", kp, via, r.status, r.body);
            b[i].f[0]++, b[i].f[1] += size, b[i].f[2]++, b[i].f[3] += size;
        }
        if (!st_defs[i].versioned)
            continue;
        /* an overwrite: o0 (1000 * (i + 1) bytes) becomes noncurrent */
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/o0", st_defs[i].name);
        assert_int_equal(httpc_do(g.n[other_running(-1)].raw, "PUT", path,
                                  "{\"size\":5,\"etag\":\"0123456789abcdef0123456789abcdef\"}",
                                  NULL, &r), 0);
        assert_int_equal(r.status, 200);
        long long old = 1000LL * (i + 1);
        b[i].f[1] += 5 - old, b[i].f[2]++, b[i].f[3] += 5, b[i].f[4]++, b[i].f[5] += old;
    }
}

/* Every bucket, its tenant and its stats, read bucket by bucket (GET
 * /v1/buckets, then each bucket's own stats): the recount the gathered
 * sums must equal. */
static void st_recount(int via, st_usage *total, long long *tenants, json_t *top) {
    memset(total, 0, sizeof(*total));
    char tnames[64][64];
    int nt = 0;
    json_t *list = st_get(via, "/v1/buckets?max_buckets=1000&consistency=strong");
    assert_false(json_is_true(json_object_get(list, "is_truncated")));
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(list, "buckets"), i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *tenant = json_string_value(json_object_get(e, "tenant"));
        char path[128];
        snprintf(path, sizeof(path), "/v1/buckets/%s/stats?consistency=strong", name);
        json_t *bs = st_get(via, path);
        st_usage u;
        st_read(bs, &u);
        for (int f = 0; f < ST_FIELDS - 1; f++)
            total->f[f] += u.f[f];
        total->f[ST_FIELDS - 1]++;
        json_array_append_new(top, json_pack("{s:s, s:s, s:I, s:I, s:I}", "bucket", name,
                                             "tenant", tenant, "objects", u.f[0], "bytes",
                                             u.f[1], "versions", u.f[2]));
        json_decref(bs);
        int seen = 0;
        for (int t = 0; t < nt; t++)
            seen |= strcmp(tnames[t], tenant) == 0;
        if (!seen && nt < 64)
            snprintf(tnames[nt++], sizeof(tnames[0]), "%s", tenant);
    }
    json_decref(list);
    *tenants = nt;
}

static int st_top_cmp(const void *a, const void *b) {
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t bx = json_integer_value(json_object_get(x, "bytes"));
    json_int_t by = json_integer_value(json_object_get(y, "bytes"));
    if (bx != by)
        return bx > by ? -1 : 1;
    return strcmp(json_string_value(json_object_get(x, "bucket")),
                  json_string_value(json_object_get(y, "bucket")));
}

/* The recount's buckets as /v1/stats/top?by=bytes orders them. */
static json_t *st_sorted(json_t *arr) {
    size_t n = json_array_size(arr);
    json_t **v = calloc(n ? n : 1, sizeof(*v));
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(arr, i);
    qsort(v, n, sizeof(*v), st_top_cmp);
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append(out, v[i]);
    free(v);
    return out;
}

/* A node's own parameter, misused: 400 with an S3-style code. */
static void st_bad(int via, const char *path, int hop) {
    char h[300];
    snprintf(h, sizeof(h), "X-Objlog-Hop: %s", g.n[via].url);
    const char *hdrs[] = {h, NULL};
    httpc_resp r;
    assert_int_equal(httpc_do(g.n[via].raw, "GET", path, NULL, hop ? hdrs : NULL, &r), 0);
    if (r.status != 400 || !strstr(r.body, "\"code\":\"InvalidArgument\"") ||
        !strstr(r.body, "partitions is for objlogd nodes"))
        fail_msg("GET %s%s via node %d: HTTP %ld %s, want 400 InvalidArgument", path,
                 hop ? " (hop)" : "", via, r.status, r.body);
}

/* GET /v1/stats, /v1/tenants/{t}/stats and /v1/stats/top through every
 * node are the sums of every node's partitions: exactly what was
 * written, and equal to a recount made bucket by bucket. */
static void test_cluster_stats(void **state) {
    (void)state;
    char owner[PARTS][128];
    wait_settled(running(), owner, 30000);
    int nodes_with_parts = 0;
    for (int i = 0; i < MAX_NODES; i++) {
        int has = 0;
        for (int p = 0; g.n[i].p && p < PARTS; p++)
            has |= strcmp(owner[p], g.n[i].url) == 0;
        nodes_with_parts += has;
    }
    assert_true(nodes_with_parts >= 2); /* st-acme's rows span nodes */

    int first = other_running(-1);
    json_t *j = st_get(first, "/v1/stats?consistency=strong");
    st_usage base;
    st_read(j, &base);
    long long base_tenants = json_integer_value(json_object_get(j, "tenants"));
    json_decref(j);

    st_usage b[ST_BUCKETS];
    st_write(b);
    static const char *const tenants[3] = {"st-acme", "st-beta", "st-gamma"};
    st_usage want_t[3] = {{{0}}}, want_g = base;
    for (int i = 0; i < ST_BUCKETS; i++) {
        int t = strcmp(st_defs[i].tenant, "st-acme") == 0   ? 0
                : strcmp(st_defs[i].tenant, "st-beta") == 0 ? 1 : 2;
        for (int f = 0; f < ST_FIELDS - 1; f++) {
            want_t[t].f[f] += b[i].f[f];
            want_g.f[f] += b[i].f[f];
        }
        want_t[t].f[ST_FIELDS - 1]++;
        want_g.f[ST_FIELDS - 1]++;
    }
    /* the figures the numbers below come from, for the record */
    assert_int_equal(want_t[0].f[0], 2 + 3 + 4 + 5);
    assert_int_equal(want_t[0].f[4], 1);

    st_usage recount;
    long long recount_tenants;
    json_t *rtop = json_array();
    st_recount(first, &recount, &recount_tenants, rtop);
    json_t *want_top = st_sorted(rtop);
    json_decref(rtop);
    for (int f = 0; f < ST_FIELDS; f++)
        assert_int_equal(recount.f[f], want_g.f[f]);
    assert_int_equal(recount_tenants, base_tenants + 3);

    char *top_body = NULL;
    for (int via = 0; via < MAX_NODES; via++) {
        if (!g.n[via].p)
            continue;
        j = st_get(via, "/v1/stats?consistency=strong");
        st_expect(j, &want_g, "GET /v1/stats", via);
        assert_int_equal(json_integer_value(json_object_get(j, "tenants")), recount_tenants);
        assert_null(json_object_get(j, "tenant_names")); /* the nodes' detail stays inside */
        json_decref(j);
        for (int t = 0; t < 3; t++) {
            char path[96];
            snprintf(path, sizeof(path), "/v1/tenants/%s/stats", tenants[t]);
            j = st_get(via, path);
            st_expect(j, &want_t[t], path, via);
            assert_string_equal(json_string_value(json_object_get(j, "tenant")), tenants[t]);
            json_decref(j);
        }
        for (int i = 0; i < ST_BUCKETS; i++) {
            char path[96];
            snprintf(path, sizeof(path), "/v1/buckets/%s/stats", st_defs[i].name);
            httpc_resp r;
            assert_int_equal(httpc_do(g.n[via].h, "GET", path, NULL, NULL, &r), 0);
            assert_int_equal(r.status, 200);
            j = json_loads(r.body, 0, NULL);
            st_expect(j, &b[i], path, via);
            json_decref(j);
        }
        /* top: every bucket, ordered as the recount; and a short top is
         * the head of the long one (the merge keeps the nodes' best) */
        j = st_get(via, "/v1/stats/top?by=bytes&limit=100");
        json_t *got = json_object_get(j, "buckets");
        if (!json_equal(got, want_top)) {
            char *gs = json_dumps(got, 0), *ws = json_dumps(want_top, 0);
            fail_msg("top via node %d:\n got %s\nwant %s", via, gs, ws);
        }
        char *s = json_dumps(j, JSON_SORT_KEYS);
        if (!top_body)
            top_body = s;
        else
            assert_string_equal(s, top_body), free(s);
        json_decref(j);
        j = st_get(via, "/v1/stats/top?by=bytes&limit=3");
        got = json_object_get(j, "buckets");
        assert_int_equal(json_array_size(got), 3);
        for (size_t i = 0; i < 3; i++)
            assert_true(json_equal(json_array_get(got, i), json_array_get(want_top, i)));
        assert_string_equal(json_string_value(json_array_get(got, 0) ? json_object_get(
                                json_array_get(got, 0), "bucket") : NULL), "st-alpha");
        json_decref(j);
    }
    free(top_body);
    json_decref(want_top);

    /* partitions= is for the nodes themselves */
    st_bad(first, "/v1/stats?partitions=0", 0);
    st_bad(first, "/v1/tenants/st-acme/stats?partitions=0,1", 0);
    st_bad(first, "/v1/stats/top?partitions=3", 0);
    st_bad(first, "/v1/stats?partitions=x", 1);
    st_bad(first, "/v1/stats?partitions=0,9", 1);
    st_bad(first, "/v1/tenants/st-acme/stats?partitions=1;2", 1);
    print_message("cluster stats: %d nodes hold partitions; %lld buckets, %lld tenants\n",
                  nodes_with_parts, recount.f[ST_FIELDS - 1], recount_tenants);
}

/* S3's ListBuckets through every node: each gathers every node's buckets
 * (they live on partitions the nodes share out), whole and in pages of
 * max-buckets=3 followed by their continuation tokens, in name order. */
static void test_s3_list_buckets(void **state) {
    (void)state;
    char owner[PARTS][128];
    wait_settled(running(), owner, 30000);
    static const char *const names[] = {"s3lb-a", "s3lb-b", "s3lb-c", "s3lb-d",
                                        "s3lb-e", "s3lb-f", "s3lb-g"};
    const int nn = (int)(sizeof(names) / sizeof(names[0]));
    int first = other_running(-1);
    for (int i = 0; i < nn; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/buckets/%s", names[i]);
        httpc_resp r;
        assert_int_equal(httpc_do(g.n[first].h, "PUT", path, "{}", NULL, &r), 0);
        assert_int_equal(r.status, 200);
    }
    for (int i = 0; i < MAX_NODES; i++) {
        if (!g.n[i].p)
            continue;
        httpc *s3 = httpc_new(g.n[i].s3);
        httpc_resp r;
        assert_int_equal(httpc_do(s3, "GET", "/?prefix=s3lb-", NULL, NULL, &r), 0);
        if (r.status != 200)
            fail_msg("node %d ListBuckets: %ld %s", i, r.status, r.body);
        const char *at = r.body;
        for (int k = 0; k < nn; k++) { /* each once, in order */
            char want[64];
            snprintf(want, sizeof(want), "<Name>%s</Name>", names[k]);
            const char *hit = strstr(at, want);
            if (!hit)
                fail_msg("node %d ListBuckets lacks %s: %s", i, names[k], r.body);
            at = hit + 1;
        }
        /* pages of 3: 3 + 3 + 1, each token the last name of its page */
        char path[256] = "/?prefix=s3lb-&max-buckets=3";
        int seen = 0, pages = 0;
        for (;;) {
            assert_int_equal(httpc_do(s3, "GET", path, NULL, NULL, &r), 0);
            assert_int_equal(r.status, 200);
            pages++;
            for (const char *p = r.body; (p = strstr(p, "<Name>")); p++)
                seen++;
            const char *t = strstr(r.body, "<ContinuationToken>");
            if (!t)
                break;
            t += strlen("<ContinuationToken>");
            const char *e = strstr(t, "</ContinuationToken>");
            assert_non_null(e);
            char tok[128] = "";
            size_t k = 0;
            for (const char *c = t; c < e && k + 4 < sizeof(tok); c++) /* '=' and '+' */
                k += (size_t)snprintf(tok + k, sizeof(tok) - k, isalnum((unsigned char)*c)
                                      ? "%c" : "%%%02X", *c);
            snprintf(path, sizeof(path), "/?prefix=s3lb-&max-buckets=3&continuation-token=%s",
                     tok);
        }
        assert_int_equal(seen, nn);
        assert_int_equal(pages, 3);
        httpc_destroy(s3);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_nodes),
        cmocka_unit_test(test_join_and_leave),
        cmocka_unit_test(test_failover),
        cmocka_unit_test(test_cluster_stats),
        cmocka_unit_test(test_s3_list_buckets),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
