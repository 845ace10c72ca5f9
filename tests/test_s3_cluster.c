/* test_s3_cluster.c: the S3 endpoint of every node of a 3-node cluster
 * answers for every bucket, as the clients people use meet it. Three
 * `objlogd --cluster` nodes on the shared real Kafka, each with
 * `--s3-listen` and `--s3-credentials`, one blob directory shared by all
 * (nodes on one machine), no standbys: each partition is applied by one
 * node, and a request for it through another node is sent on (one hop,
 * signed with the cluster's secret).
 *
 *  - aws-cli through every node: `s3 cp` up through one node and down
 *    through the two others (1 byte, 20 MB multipart), `s3 sync` of a
 *    directory up through one node and down through each other, compared
 *    with cmp and diff;
 *  - rclone `sync` and `check` and s3cmd `put`/`get`, each across nodes;
 *  - boto3 (tests/s3/cluster_check.py): which node answers and which
 *    forwards, ranges, HEAD, conditional GETs, listings, a 64 MiB object
 *    streamed across the hop, writes through every node, another tenant
 *    refused through every node, canned ACLs holding across the hop for
 *    an anonymous caller.
 *
 * Every process is a child of the test (proc.h), killed with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "clusternodes.h"
#include "filetree.h"
#include "proc.h"
#include "testlog.h"

#define NODES 3
#define PARTS 4

static cnodes g;
static char g_creds[300];
static char *node_flags[] = {"--ready-max-lag", "1", NULL};

/* Until node i sees every node, each with its S3 listener, and every
 * partition active somewhere. */
static int node_ready(int i) {
    json_t *j = cnodes_cluster_of(&g, i);
    json_t *nodes = json_object_get(j, "nodes"), *parts = json_object_get(j, "partitions");
    int ok = j && json_array_size(nodes) == NODES && json_array_size(parts) == PARTS;
    for (size_t k = 0; ok && k < NODES; k++)
        ok = json_string_value(json_object_get(
                 json_object_get(json_array_get(nodes, k), "listeners"), "s3")) != NULL;
    for (size_t p = 0; ok && p < PARTS; p++)
        ok = json_string_value(json_object_get(json_array_get(parts, p), "active")) != NULL;
    json_decref(j);
    return ok;
}

static int group_setup(void **state) {
    (void)state;
    g.s3 = 1;
    g.s3_credentials = g_creds;
    if (cnodes_setup(&g, "s3c", PARTS, 0, NODES, node_flags) < 0)
        return -1;
    snprintf(g_creds, sizeof(g_creds), "%s/s3-credentials", g.dir);
    FILE *f = fopen(g_creds, "w");
    if (!f || fputs("objlogtest objlogtest-secret tenant-a\nother other-secret tenant-b\n", f) < 0 ||
        fclose(f) != 0 || chmod(g_creds, 0600) != 0)
        return -1;
    for (int i = 0; i < NODES; i++)
        if (cnodes_start(&g, i) < 0)
            return -1;
    int64_t until = cnodes_mono_ms() + 90000;
    for (int i = 0; i < NODES; i++) {
        while (!node_ready(i)) {
            if (cnodes_mono_ms() > until) {
                fprintf(stderr, "node %d did not see the cluster with its S3 listeners\n", i);
                return -1;
            }
            cnodes_sleep_ms(250);
        }
    }
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    return cnodes_teardown(&g);
}

static char g_out[65536], g_err[65536];

/* A tool (absolute path first) with nothing of the user's but the test's
 * key: HOME is the test's dir. */
static int tool_v(const char *const *args) {
    char home[300];
    snprintf(home, sizeof(home), "HOME=%s", g.dir);
    char *argv[48] = {"/usr/bin/env", "-i", home, "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
                      "AWS_ACCESS_KEY_ID=objlogtest", "AWS_SECRET_ACCESS_KEY=objlogtest-secret",
                      "AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null",
                      "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_PAGER="};
    int n = 11;
    for (int i = 0; args[i] && n < 47; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    int rc = proc_run(argv, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err), 300000);
    if (rc != 0)
        print_message("%s %s: exit %d: %s\n", args[0], args[1], rc, g_err);
    return rc;
}
#define tool(...) tool_v((const char *const[]){__VA_ARGS__, NULL})

static void random_file(const char *path, size_t n) {
    assert_int_equal(filetree_random_file(path, n), 0);
}

static void make_tree(const char *root) { assert_int_equal(filetree_make(root), 0); }

/* The two files (or trees) hold the same bytes. */
static void assert_same_bytes(const char *a, const char *b) {
    char why[4800];
    if (filetree_same(a, b, why, sizeof(why)) < 0)
        fail_msg("%s", why);
}

/* aws-cli: each object goes up through one node and comes down through
 * the two others; a tree synced up through node 0 comes down through
 * nodes 1 and 2. Several buckets, so that several nodes apply them. */
static void test_awscli_every_node(void **state) {
    (void)state;
    static const size_t sizes[] = {1, 20 << 20};
    /* on partitions 1, 0 and 2 (names differing at their start: the bucket
     * hash spreads those) */
    static const char *const buckets[NODES] = {"s3://c-cli", "s3://d-cli", "s3://g-cli"};
    char up[400], down[400], dst[128];
    for (int b = 0; b < NODES; b++) {
        const char *bucket = buckets[b];
        assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.n[b].s3, "s3", "mb", bucket), 0);
        for (int up_node = 0; up_node < NODES; up_node++) {
            for (size_t s = 0; s < 2; s++) {
                snprintf(up, sizeof(up), "%s/up-%d-%d-%zu", g.dir, b, up_node, sizes[s]);
                random_file(up, sizes[s]);
                snprintf(dst, sizeof(dst), "%s/f-%d-%zu", bucket, up_node, sizes[s]);
                assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.n[up_node].s3, "s3",
                                      "cp", up, dst, "--only-show-errors"), 0);
                for (int k = 1; k < NODES; k++) {
                    int via = (up_node + k) % NODES;
                    snprintf(down, sizeof(down), "%s/down-%d-%d-%zu-%d", g.dir, b, up_node,
                             sizes[s], via);
                    assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.n[via].s3, "s3",
                                          "cp", dst, down, "--only-show-errors"), 0);
                    assert_same_bytes(up, down);
                }
            }
        }
    }
    char tree[400], back[400];
    snprintf(tree, sizeof(tree), "%s/tree", g.dir);
    make_tree(tree);
    assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.n[0].s3, "s3", "sync", tree,
                          "s3://d-cli/tree", "--only-show-errors"), 0);
    for (int via = 1; via < NODES; via++) {
        snprintf(back, sizeof(back), "%s/tree-back-%d", g.dir, via);
        assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.n[via].s3, "s3", "sync",
                              "s3://d-cli/tree", back, "--only-show-errors"), 0);
        assert_same_bytes(tree, back);
        /* and nothing to do going up again through this node */
        assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.n[via].s3, "s3", "sync", tree,
                              "s3://d-cli/tree"), 0);
        assert_null(strstr(g_out, "upload:"));
    }
}

/* rclone up through node 1, checked through node 2 (its bytes read),
 * down through node 0; s3cmd up through node 2, down through node 0. */
static void test_rclone_s3cmd_across_nodes(void **state) {
    (void)state;
    char conf[400], tree[400], back[400];
    snprintf(conf, sizeof(conf), "%s/rclone.conf", g.dir);
    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    for (int i = 0; i < NODES; i++)
        fprintf(f, "[n%d]\ntype = s3\nprovider = Other\nenv_auth = false\n"
                   "access_key_id = objlogtest\nsecret_access_key = objlogtest-secret\n"
                   "endpoint = %s\nregion = us-east-1\nforce_path_style = true\n\n", i,
                g.n[i].s3);
    assert_int_equal(fclose(f), 0);
    snprintf(tree, sizeof(tree), "%s/rtree", g.dir);
    snprintf(back, sizeof(back), "%s/rtree-back", g.dir);
    make_tree(tree);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "mkdir", "n1:rc-cluster"), 0);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "sync", tree, "n1:rc-cluster/t"), 0);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "check", tree, "n2:rc-cluster/t",
                          "--download"), 0);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "sync", "n0:rc-cluster/t", back), 0);
    assert_same_bytes(tree, back);

    char cfg[NODES][400], up[400], down[400];
    for (int i = 0; i < NODES; i++) {
        snprintf(cfg[i], sizeof(cfg[i]), "%s/s3cfg-%d", g.dir, i);
        f = fopen(cfg[i], "w");
        assert_non_null(f);
        fprintf(f, "[default]\naccess_key = objlogtest\nsecret_key = objlogtest-secret\n"
                   "host_base = %s\nhost_bucket = %s\nuse_https = False\n"
                   "bucket_location = us-east-1\nsignature_v2 = False\n", g.n[i].s3 + 7,
                g.n[i].s3 + 7);
        assert_int_equal(fclose(f), 0);
    }
    snprintf(up, sizeof(up), "%s/s3cmd-up", g.dir);
    random_file(up, 300000);
    assert_int_equal(tool("/usr/bin/s3cmd", "-c", cfg[2], "mb", "s3://s3cmd-cluster"), 0);
    assert_int_equal(tool("/usr/bin/s3cmd", "-c", cfg[2], "put", up, "s3://s3cmd-cluster/x"), 0);
    for (int i = 0; i < NODES; i++) {
        snprintf(down, sizeof(down), "%s/s3cmd-down-%d", g.dir, i);
        assert_int_equal(tool("/usr/bin/s3cmd", "-c", cfg[i], "get", "s3://s3cmd-cluster/x",
                              down), 0);
        assert_same_bytes(up, down);
    }
}

/* boto3 through every node (tests/s3/cluster_check.py). */
static void test_boto3_every_node(void **state) {
    (void)state;
    char script[512], nodes[512], out[8192], err[16384];
    snprintf(script, sizeof(script), "%s/s3/cluster_check.py", OBJLOG_TESTS_DIR);
    snprintf(nodes, sizeof(nodes), "%s,%s,%s", g.n[0].s3, g.n[1].s3, g.n[2].s3);
    char *argv[] = {"/usr/bin/env", "-u", "AWS_CA_BUNDLE", "HOME=/nonexistent",
                    "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                    "/usr/bin/python3", script, nodes, NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 300000);
    if (rc != 0)
        fail_msg("cluster_check.py exited %d:\n%s\n%s", rc, out, err);
    assert_non_null(strstr(out, " checks passed"));
    print_message("%s", out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boto3_every_node),
        cmocka_unit_test(test_awscli_every_node),
        cmocka_unit_test(test_rclone_s3cmd_across_nodes),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
