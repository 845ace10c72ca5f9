/* test_s3_bytes.c: the S3 endpoint keeps the bytes, as the clients people
 * use meet it. An `objlogd --brokers` view of the test's log (testlog.h)
 * with `--s3-listen` and `--blob-dir`:
 *
 *  - aws-cli: `s3 cp` up and down of 1 byte and of 20 MB (a multipart
 *    upload of three parts), `s3 sync` of a directory both ways, each file
 *    compared byte for byte;
 *  - rclone: `sync` both ways and `check`; s3cmd: `put` and `get`;
 *  - bodies over 1 MiB stream: a 256 MiB PUT and GET without objlogd's
 *    memory growing by their size; refused or cut bodies leave nothing;
 *  - a SIGKILL of objlogd during 200 concurrent PutObjects: after a
 *    restart every acknowledged object reads back byte for byte and its
 *    blob is in the directory (tests/s3/put_storm.py, storm_verify.py);
 *  - `--s3-blob-url` (a frontend keeps the bytes): one clean 307 that an
 *    HTTP client and rclone follow to a blob server the test runs, and
 *    aws-cli, boto3 and s3cmd report as a 307 (they follow only S3's own
 *    region redirects) (tests/s3/redirect_check.py).
 *
 * Every process is a child of the test (proc.h), killed with it. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "filetree.h"
#include "proc.h"
#include "s3daemon.h"
#include "testlog.h"
#include "viewproc.h"

static struct {
    testlog *log;
    proc *view;
    char dir[256], data[300], blobs[300], creds[300];
    char s3[128], json[128];
    int s3port;
} g;

static int start_view(void) {
    char listen[64];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", g.s3port);
    char *extra[] = {"--s3-listen", listen, "--s3-credentials", g.creds, "--s3-anonymous",
                     "--blob-dir", g.blobs, NULL};
    g.view = testlog_start_view(g.log, g.data, extra, g.json, sizeof(g.json));
    return g.view ? 0 : -1;
}

static int group_setup(void **state) {
    (void)state;
    if (proc_tmpdir(g.dir, sizeof(g.dir)) < 0 || !(g.log = testlog_start(2)))
        return -1;
    snprintf(g.data, sizeof(g.data), "%s/data", g.dir);
    snprintf(g.blobs, sizeof(g.blobs), "%s/blobs", g.dir);
    snprintf(g.creds, sizeof(g.creds), "%s/s3-credentials", g.dir);
    FILE *f = fopen(g.creds, "w");
    if (!f || fputs("objlogtest objlogtest-secret tenant-a\n", f) < 0 || fclose(f) != 0 ||
        chmod(g.creds, 0600) != 0 || mkdir(g.data, 0700) != 0)
        return -1;
    if (!(g.s3port = viewproc_free_port()))
        return -1;
    snprintf(g.s3, sizeof(g.s3), "http://127.0.0.1:%d", g.s3port);
    return start_view();
}

static int group_teardown(void **state) {
    (void)state;
    if (g.view)
        proc_stop(g.view, 15000);
    testlog_stop(g.log);
    if (g.dir[0])
        proc_rmtree(g.dir);
    return 0;
}

/* A tool (absolute path first) with nothing of the user's but the test's
 * key: HOME is the test's dir; stdout into out, stderr into err. */
static int tool_v(char *out, size_t on, char *err, size_t en, const char *const *args) {
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
    int rc = proc_run(argv, NULL, out, on, err, en, 300000);
    if (rc != 0)
        print_message("%s %s: exit %d: %s\n", args[0], args[1], rc, err);
    return rc;
}
#define tool(...)                                                                  \
    tool_v(g_out, sizeof(g_out), g_err, sizeof(g_err), (const char *const[]){__VA_ARGS__, NULL})
static char g_out[65536], g_err[65536];

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

static void test_awscli_round_trips(void **state) {
    (void)state;
    char up[400], down[400], tree[400], back[400];
    assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.s3, "s3", "mb", "s3://cli-bytes"),
                     0);
    static const size_t sizes[] = {1, 20 << 20};
    for (size_t i = 0; i < 2; i++) {
        snprintf(up, sizeof(up), "%s/up-%zu", g.dir, sizes[i]);
        snprintf(down, sizeof(down), "%s/down-%zu", g.dir, sizes[i]);
        random_file(up, sizes[i]);
        char dst[128];
        snprintf(dst, sizeof(dst), "s3://cli-bytes/f-%zu", sizes[i]);
        assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.s3, "s3", "cp", up, dst,
                              "--only-show-errors"), 0);
        assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.s3, "s3", "cp", dst, down,
                              "--only-show-errors"), 0);
        assert_same_bytes(up, down);
    }
    /* the 20 MB file went up as a multipart upload (aws-cli's 8 MB parts) */
    assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.s3, "--output", "json", "s3api",
                          "head-object", "--bucket", "cli-bytes", "--key", "f-20971520"), 0);
    assert_non_null(strstr(g_out, "-3\\\""));
    assert_non_null(strstr(g_out, "\"ContentLength\": 20971520"));
    snprintf(tree, sizeof(tree), "%s/tree", g.dir);
    snprintf(back, sizeof(back), "%s/tree-back", g.dir);
    make_tree(tree);
    assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.s3, "s3", "sync", tree,
                          "s3://cli-bytes/tree", "--only-show-errors"), 0);
    assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.s3, "s3", "sync",
                          "s3://cli-bytes/tree", back, "--only-show-errors"), 0);
    assert_same_bytes(tree, back);
    /* a second sync up finds nothing to do */
    assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.s3, "s3", "sync", tree,
                          "s3://cli-bytes/tree"), 0);
    assert_null(strstr(g_out, "upload:"));
}

/* The test's key for rclone (remote NAME at s3, path style) and for
 * s3cmd (s3), each in a config file of the test's dir named file. */
static void rclone_conf(char *path, size_t n, const char *file, const char *name,
                        const char *s3) {
    snprintf(path, n, "%s/%s", g.dir, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "[%s]\ntype = s3\nprovider = Other\nenv_auth = false\n"
               "access_key_id = objlogtest\nsecret_access_key = objlogtest-secret\n"
               "endpoint = %s\nregion = us-east-1\nforce_path_style = true\n", name, s3);
    assert_int_equal(fclose(f), 0);
}

static void s3cmd_conf(char *path, size_t n, const char *file, const char *s3) {
    snprintf(path, n, "%s/%s", g.dir, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "[default]\naccess_key = objlogtest\nsecret_key = objlogtest-secret\n"
               "host_base = %s\nhost_bucket = %s\nuse_https = False\n"
               "bucket_location = us-east-1\nsignature_v2 = False\n", s3 + 7, s3 + 7);
    assert_int_equal(fclose(f), 0);
}

static void test_rclone_round_trips(void **state) {
    (void)state;
    char conf[400], tree[400], back[400];
    rclone_conf(conf, sizeof(conf), "rclone.conf", "objlog", g.s3);
    snprintf(tree, sizeof(tree), "%s/rtree", g.dir);
    snprintf(back, sizeof(back), "%s/rtree-back", g.dir);
    make_tree(tree);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "mkdir", "objlog:rc-bytes"), 0);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "sync", tree,
                          "objlog:rc-bytes/t"), 0);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "check", tree,
                          "objlog:rc-bytes/t", "--download"), 0);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "sync", "objlog:rc-bytes/t",
                          back), 0);
    assert_same_bytes(tree, back);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "check", back,
                          "objlog:rc-bytes/t"), 0);
}

static void test_s3cmd_round_trips(void **state) {
    (void)state;
    char cfg[400], up[400], down[400];
    s3cmd_conf(cfg, sizeof(cfg), "s3cfg", g.s3);
    snprintf(up, sizeof(up), "%s/s3cmd-up", g.dir);
    snprintf(down, sizeof(down), "%s/s3cmd-down", g.dir);
    random_file(up, 300000);
    assert_int_equal(tool("/usr/bin/s3cmd", "-c", cfg, "mb", "s3://s3cmd-bytes"), 0);
    assert_int_equal(tool("/usr/bin/s3cmd", "-c", cfg, "put", up, "s3://s3cmd-bytes/x"), 0);
    assert_int_equal(tool("/usr/bin/s3cmd", "-c", cfg, "get", "s3://s3cmd-bytes/x", down), 0);
    assert_same_bytes(up, down);
}

static long count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    long n = 0;
    for (int ch; f && (ch = fgetc(f)) != EOF;)
        n += ch == '\n';
    if (f)
        fclose(f);
    return n;
}

/* Bodies over 1 MiB stream (tests/s3/stream_check.py): a 256 MiB PUT and
 * GET with objlogd's peak memory flat, 100 Continue, bodies refused at
 * the head or cut short leave nothing. Anonymous requests, on a bucket
 * they own. */
static void test_streamed_bodies(void **state) {
    (void)state;
    char script[512], pid[24], out[8192], err[16384];
    snprintf(script, sizeof(script), "%s/s3/stream_check.py", OBJLOG_TESTS_DIR);
    snprintf(pid, sizeof(pid), "%d", (int)g.view->pid);
    /* AddressSanitizer keeps freed memory in quarantine (256 MiB): its
     * objlogd's peak says nothing about what objlogd holds */
#ifdef __SANITIZE_ADDRESS__
    char *memory = "no-memory-check";
#else
    char *memory = "memory-check";
#endif
    char *argv[] = {"/usr/bin/python3", script, g.s3, g.blobs, pid, memory, NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 300000);
    if (rc != 0)
        fail_msg("stream_check.py exited %d:\n%s\n%s", rc, out, err);
    print_message("%s", out);
    assert_non_null(strstr(out, " checks passed"));
}

/* 200 concurrent PutObjects of 256 KiB; objlogd SIGKILLed once some were
 * acknowledged; after a restart every acknowledged one reads back. */
static void test_kill_during_puts(void **state) {
    (void)state;
    char acks[400], script[512], verify[512], out[4096], err[16384];
    assert_int_equal(tool("/usr/bin/aws", "--endpoint-url", g.s3, "s3", "mb",
                          "s3://storm-bucket"), 0);
    snprintf(acks, sizeof(acks), "%s/storm-acks", g.dir);
    snprintf(script, sizeof(script), "%s/s3/put_storm.py", OBJLOG_TESTS_DIR);
    char *argv[] = {"/usr/bin/python3", script, g.s3, "storm-bucket", acks, "200", "262144",
                    NULL};
    proc *storm = proc_spawn(argv, NULL);
    assert_non_null(storm);
    long acked = 0;
    for (int i = 0; i < 3000 && (acked = count_lines(acks)) < 20; i++)
        usleep(10000);
    proc_kill(g.view); /* SIGKILL, mid-storm */
    g.view = NULL;
    char line[128];
    int rc = proc_wait_line(storm, "storm:", line, sizeof(line), 120000);
    proc_stop(storm, 10000);
    assert_int_equal(rc, 0);
    print_message("killed after %ld acknowledgements; storm%s\n", acked, line);
    assert_true(acked >= 20);
    assert_int_equal(start_view(), 0);
    snprintf(verify, sizeof(verify), "%s/s3/storm_verify.py", OBJLOG_TESTS_DIR);
    char *vargv[] = {"/usr/bin/python3", verify, g.s3, acks, g.blobs, NULL};
    rc = proc_run(vargv, NULL, out, sizeof(out), err, sizeof(err), 300000);
    if (rc != 0)
        fail_msg("storm_verify.py: exit %d\n%s\n%s", rc, out, err);
    print_message("%s", out);
    long n = 0;
    assert_int_equal(sscanf(out, "verify: %ld", &n), 1);
    assert_int_equal(n, count_lines(acks));
    assert_true(n >= acked);
}

/* --s3-blob-url: the redirect to a blob server the test runs. */
static void test_redirect(void **state) {
    (void)state;
    char www[400], script[512], srv_py[512], port[16], tmpl[256], prefix[128], ready[32];
    snprintf(www, sizeof(www), "%s/www", g.dir);
    assert_int_equal(mkdir(www, 0700), 0);
    int bport = viewproc_free_port();
    assert_true(bport > 0);
    snprintf(port, sizeof(port), "%d", bport);
    snprintf(srv_py, sizeof(srv_py), "%s/s3/blobserver.py", OBJLOG_TESTS_DIR);
    char *sargv[] = {"/usr/bin/python3", srv_py, www, port, NULL};
    proc *srv = proc_spawn(sargv, NULL);
    assert_non_null(srv);
    assert_int_equal(proc_wait_line(srv, "BLOBSERVER_READY", ready, sizeof(ready), 30000), 0);
    snprintf(prefix, sizeof(prefix), "http://127.0.0.1:%d", bport);
    snprintf(tmpl, sizeof(tmpl), "%s/{bucket}/{key}?blob={blob_id}&version={version_id}",
             prefix);
    s3daemon d;
    char *extra[] = {"--s3-blob-url", tmpl, NULL};
    assert_int_equal(s3daemon_start(&d, "objlogtest objlogtest-secret tenant-a\n", extra), 0);
    snprintf(script, sizeof(script), "%s/s3/redirect_check.py", OBJLOG_TESTS_DIR);
    char *argv[] = {"/usr/bin/env", "HOME=/nonexistent", "AWS_CONFIG_FILE=/dev/null",
                    "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "/usr/bin/python3", script, d.s3,
                    www, prefix, NULL};
    int rc = proc_run(argv, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err), 120000);
    if (rc != 0)
        fail_msg("redirect_check.py exited %d:\n%s\n%s", rc, g_out, g_err);
    print_message("%s", g_out);
    /* aws-cli: a clean 307, not "multiple unmatching Content-Length" */
    assert_int_not_equal(tool("/usr/bin/aws", "--endpoint-url", d.s3, "s3", "cp",
                              "s3://redir-bucket/dir/one two.txt", "-"), 0);
    assert_non_null(strstr(g_err, "307"));
    assert_null(strstr(g_err, "Content-Length"));
    /* rclone follows it */
    char conf[400];
    rclone_conf(conf, sizeof(conf), "rclone-redirect.conf", "r", d.s3);
    assert_int_equal(tool("/usr/bin/rclone", "--config", conf, "cat",
                          "r:redir-bucket/dir/one two.txt"), 0);
    assert_string_equal(g_out, "bytes a frontend keeps\n");
    /* s3cmd: a 307 error, not a crash on the body */
    char cfg[400];
    s3cmd_conf(cfg, sizeof(cfg), "s3cfg-redirect", d.s3);
    assert_int_not_equal(tool("/usr/bin/s3cmd", "-c", cfg, "get",
                              "s3://redir-bucket/dir/one two.txt", "-"), 0);
    assert_non_null(strstr(g_err, "307"));
    assert_null(strstr(g_err, "Traceback"));
    assert_null(strstr(g_err, "IncompleteRead"));
    /* every request the blob server saw named the blob and the version */
    char log[500];
    snprintf(log, sizeof(log), "%s/requests.log", www);
    FILE *lf = fopen(log, "r");
    assert_non_null(lf);
    char l[512];
    int gets = 0;
    while (fgets(l, sizeof(l), lf)) {
        assert_non_null(strstr(l, "GET /redir-bucket/dir/one%20two.txt?blob="
                                  "a4e0f6587e9db2c8cb05c481ac906d0cfeacc33a998b38d3a4a3912d6243ae03"
                                  "&version=null"));
        gets++;
    }
    fclose(lf);
    assert_int_equal(gets, 2); /* redirect_check.py's urllib, rclone */
    assert_int_equal(s3daemon_stop(&d), 0);
    proc_stop(srv, 5000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awscli_round_trips),
        cmocka_unit_test(test_rclone_round_trips),
        cmocka_unit_test(test_s3cmd_round_trips),
        cmocka_unit_test(test_redirect),
        cmocka_unit_test(test_streamed_bodies),
        cmocka_unit_test(test_kill_during_puts),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
