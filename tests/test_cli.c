/* test_cli.c: the real `objlog` binary against a real `objlogd --brokers`
 * view of the test's log, the mock cluster of `objlogd --kafka-only` or a
 * real 3-node Kafka (testlog.h)
 * (docs/ARCHITECTURE.md, "HTTP routes as built" and "Processes"):
 * exact stdout and exit codes of mb, put,
 * get, head, ls and rm, percent-encoding of odd keys, and the error
 * contract (one line on stderr naming the S3 code, exit 1; usage errors
 * exit 2). One objlogd serves the whole group; each test uses its own
 * buckets. Values the server chooses (version ids, tokens, timestamps) are
 * read back through --json and then asserted exactly in the readable
 * output. Also covered: versions (table, delimiter, paging inside one
 * key's versions), bucket settings, versioning, rb, the version cap, and
 * every mpu subcommand with S3's multipart ETag; lag (table
 * with known offsets, --json, --watch stopped by SIGINT) and bench
 * --consistency-modes; stats (bucket, tenant, global, top:
 * exact readable output with human sizes; usage errors), bench --stats and
 * usage (prefix usage: exact table, --sort, paging with progress, --json,
 * errors); and bench --apply. The bench runs that start their
 * own objlogd (on its own mock cluster) never touch the test's log: they
 * run on the mock variant only. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <regex.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "proc.h"
#include "testlog.h"
#include "token.h"

#define OUT_SIZE 65536

typedef struct server {
    testlog *log;
    proc *daemon;
    char dir[256];
    char url[128];
    char bootstrap[1024];
    char objlog[512];
} server;

static server g_srv;
static char g_out[OUT_SIZE], g_err[OUT_SIZE];

static int group_setup(void **state) {
    (void)state;
    char bin[512], data[300];
    if (proc_tmpdir(g_srv.dir, sizeof(g_srv.dir)) < 0)
        return -1;
    snprintf(data, sizeof(data), "%s/data", g_srv.dir);
    proc_bin("query/objlogd", bin, sizeof(bin));
    proc_bin("ops/objlog", g_srv.objlog, sizeof(g_srv.objlog));
    g_srv.log = testlog_start(4);
    if (!g_srv.log) {
        proc_rmtree(g_srv.dir);
        return -1;
    }
    snprintf(g_srv.bootstrap, sizeof(g_srv.bootstrap), "%s", testlog_bootstrap(g_srv.log));
    char *argv[] = {bin, "--brokers", g_srv.bootstrap, "--listen", "127.0.0.1:0", "--data",
                    data, NULL};
    g_srv.daemon = proc_spawn(argv, NULL);
    char listen[64];
    if (!g_srv.daemon ||
        proc_wait_line(g_srv.daemon, "OBJLOG_LISTEN=", listen, sizeof(listen), 60000) < 0 ||
        proc_wait_line(g_srv.daemon, "OBJLOG_READY", NULL, 0, 60000) < 0) {
        fprintf(stderr, "objlogd did not become ready\n");
        if (g_srv.daemon)
            proc_kill(g_srv.daemon);
        g_srv.daemon = NULL;
        testlog_stop(g_srv.log);
        proc_rmtree(g_srv.dir);
        return -1;
    }
    snprintf(g_srv.url, sizeof(g_srv.url), "http://%s", listen);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    int st = proc_stop(g_srv.daemon, 10000);
    testlog_stop(g_srv.log);
    proc_rmtree(g_srv.dir);
    /* SIGTERM is a graceful shutdown: objlogd exits 0. */
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "objlogd exit status %d\n", st);
        return -1;
    }
    return 0;
}

/* Runs objlog --url URL args... (NULL-ended); stdout/stderr in g_out/g_err. */
static int objlog(const char *first, ...) {
    char *argv[64];
    int n = 0;
    argv[n++] = g_srv.objlog;
    argv[n++] = "--url";
    argv[n++] = g_srv.url;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < 63; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    return proc_run(argv, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err), 30000);
}

static json_t *json_out(void) {
    json_t *j = json_loads(g_out, 0, NULL);
    if (!j)
        fail_msg("not JSON: %s (stderr %s)", g_out, g_err);
    return j;
}

static const char *js(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void assert_ok(int rc) {
    if (rc != 0)
        fail_msg("objlog exit %d; stderr: %s", rc, g_err);
}

/* The value of "name: " in readable output (copied). */
static void line_value(const char *out, const char *name, char *v, size_t n) {
    char pat[64];
    snprintf(pat, sizeof(pat), "%s: ", name);
    const char *p = strstr(out, pat);
    assert_non_null(p);
    p += strlen(pat);
    size_t l = strcspn(p, "\n");
    assert_true(l < n);
    memcpy(v, p, l);
    v[l] = '\0';
}

static void test_mb_put_get_head(void **state) {
    (void)state;
    char want[4096], vid[64], tok[64];
    assert_ok(objlog("mb", "photos", NULL));
    assert_string_equal(g_out, "make_bucket: photos\n");
    assert_string_equal(g_err, "");

    assert_ok(objlog("put", "photos", "2026/a b.jpg", "--size", "123", "--etag", "abc",
                     "--content-type", "image/jpeg", "--blob-id", "blob-1",
                     "--meta", "owner=alice", "--meta", "camera=x100", "--tag",
                     "team=blue sky", NULL));
    line_value(g_out, "version_id", vid, sizeof(vid));
    line_value(g_out, "token", tok, sizeof(tok));
    token_part tp[4];
    assert_int_equal(token_parse(tok, tp, 4), 1);
    snprintf(want, sizeof(want), "key: 2026/a b.jpg\nversion_id: %s\netag: abc\ntoken: %s\n",
             vid, tok);
    assert_string_equal(g_out, want);

    assert_ok(objlog("--json", "get", "photos", "2026/a b.jpg", NULL));
    json_t *j = json_out();
    assert_string_equal(js(j, "version_id"), vid);
    assert_string_equal(js(j, "key"), "2026/a b.jpg");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "tags"), "team")),
                        "blue sky");
    char lm[64];
    snprintf(lm, sizeof(lm), "%s", js(j, "last_modified"));
    json_decref(j);

    assert_ok(objlog("get", "photos", "2026/a b.jpg", NULL));
    snprintf(want, sizeof(want),
             "bucket: photos\nkey: 2026/a b.jpg\nversion_id: %s\nsize: 123 B\netag: abc\n"
             "content_type: image/jpeg\nblob_id: blob-1\nstorage_class: STANDARD\n"
             "last_modified: %s\nmeta.owner: alice\nmeta.camera: x100\ntag.team: blue sky\n",
             vid, lm);
    /* user metadata order is the server's; accept either order */
    if (strcmp(g_out, want) != 0)
        snprintf(want, sizeof(want),
                 "bucket: photos\nkey: 2026/a b.jpg\nversion_id: %s\nsize: 123 B\netag: abc\n"
                 "content_type: image/jpeg\nblob_id: blob-1\nstorage_class: STANDARD\n"
                 "last_modified: %s\nmeta.camera: x100\nmeta.owner: alice\ntag.team: blue sky\n",
                 vid, lm);
    assert_string_equal(g_out, want);

    /* head: the same ISO 8601 time as get (not the HTTP date) */
    assert_ok(objlog("head", "photos", "2026/a b.jpg", NULL));
    snprintf(want, sizeof(want),
             "key: 2026/a b.jpg\nversion_id: %s\nsize: 123 B\netag: abc\nlast_modified: %s\n",
             vid, lm);
    assert_string_equal(g_out, want);

    /* get by version id */
    assert_ok(objlog("get", "photos", "2026/a b.jpg", "--version-id", vid, NULL));
    assert_non_null(strstr(g_out, "size: 123 B\n"));
}

static void test_odd_keys_round_trip(void **state) {
    (void)state;
    const char *keys[] = {"we?rd #%20 key", "caf\xc3\xa9/\xf0\x9f\x98\x80.txt",
                          "a+b&c=d", "../up", NULL};
    assert_ok(objlog("mb", "odd-keys", NULL));
    for (int i = 0; keys[i]; i++) {
        assert_ok(objlog("put", "odd-keys", keys[i], "--size", "9", "--etag", "e", NULL));
        assert_ok(objlog("--json", "get", "odd-keys", keys[i], NULL));
        json_t *j = json_out();
        assert_string_equal(js(j, "key"), keys[i]);
        json_decref(j);
    }
    assert_ok(objlog("--json", "ls", "odd-keys", NULL));
    json_t *j = json_out();
    assert_int_equal(json_array_size(json_object_get(j, "objects")), 4);
    json_decref(j);
}

static void ls_times(char lm[3][64]) {
    assert_ok(objlog("--json", "ls", "listing", NULL));
    json_t *j = json_out();
    json_t *objs = json_object_get(j, "objects");
    assert_int_equal(json_array_size(objs), 3);
    for (int i = 0; i < 3; i++)
        snprintf(lm[i], 64, "%s", js(json_array_get(objs, (size_t)i), "last_modified"));
    assert_string_equal(js(json_array_get(objs, 0), "key"), "a.txt");
    json_decref(j);
}

static void test_ls_columns_prefixes_and_pages(void **state) {
    (void)state;
    char want[4096], lm[3][64];
    assert_ok(objlog("mb", "listing", "--tenant", "acme", NULL));
    assert_ok(objlog("put", "listing", "photos/c.jpg", "--size", "77", "--etag", "ec", NULL));
    assert_ok(objlog("put", "listing", "a.txt", "--size", "5", "--etag", "ea", NULL));
    assert_ok(objlog("put", "listing", "photos/b.jpg", "--size", "1234", "--etag", "eb", NULL));
    ls_times(lm);

    assert_ok(objlog("ls", "listing", NULL));
    snprintf(want, sizeof(want),
             "KEY              SIZE  LAST_MODIFIED             ETAG\n"
             "a.txt             5 B  %s  ea\n"
             "photos/b.jpg  1.2 KiB  %s  eb\n"
             "photos/c.jpg     77 B  %s  ec\n"
             "3 objects, 0 prefixes, 1.3 KiB\n", lm[0], lm[1], lm[2]);
    assert_string_equal(g_out, want);

    /* --all follows continuation tokens: same listing one key per page */
    assert_ok(objlog("ls", "listing", "--max-keys", "1", "--all", NULL));
    assert_string_equal(g_out, want);

    assert_ok(objlog("ls", "listing", "--max-keys", "1", NULL));
    snprintf(want, sizeof(want),
             "KEY    SIZE  LAST_MODIFIED             ETAG\n"
             "a.txt   5 B  %s  ea\n"
             "1 object, 0 prefixes, 5 B (truncated; --all lists the rest)\n", lm[0]);
    assert_string_equal(g_out, want);

    assert_ok(objlog("ls", "listing", "--delimiter", "/", NULL));
    snprintf(want, sizeof(want),
             "PRE photos/\n"
             "KEY    SIZE  LAST_MODIFIED             ETAG\n"
             "a.txt   5 B  %s  ea\n"
             "1 object, 1 prefix, 5 B\n", lm[0]);
    assert_string_equal(g_out, want);

    assert_ok(objlog("ls", "listing", "--prefix", "photos/", "--start-after",
                     "photos/b.jpg", NULL));
    snprintf(want, sizeof(want),
             "KEY           SIZE  LAST_MODIFIED             ETAG\n"
             "photos/c.jpg  77 B  %s  ec\n"
             "1 object, 0 prefixes, 77 B\n", lm[2]);
    assert_string_equal(g_out, want);

    assert_ok(objlog("--json", "ls", "listing", "--max-keys", "2", NULL));
    json_t *j = json_out();
    assert_true(json_is_true(json_object_get(j, "is_truncated")));
    assert_int_equal(json_integer_value(json_object_get(j, "key_count")), 2);
    json_decref(j);
}

static void test_rm_plain_and_versioned(void **state) {
    (void)state;
    char want[512], vid[64], marker[64];
    assert_ok(objlog("mb", "plain", NULL));
    assert_ok(objlog("put", "plain", "k", "--size", "1", NULL));
    assert_null(strstr(g_out, "etag")); /* none given: no blank "etag:" line */
    /* a write sent again with its request id is the same write */
    static const char rid[] = "0123456789abcdef0123456789abcdef";
    assert_ok(objlog("--json", "put", "plain", "again", "--request-id", rid, NULL));
    json_t *first = json_out();
    assert_string_equal(js(first, "request_id"), rid);
    assert_ok(objlog("--json", "put", "plain", "again", "--size", "5", "--request-id", rid,
                     NULL));
    json_t *second = json_out();
    assert_string_equal(js(second, "request_id"), rid);
    json_decref(first);
    json_decref(second);
    assert_ok(objlog("head", "plain", "again", NULL));
    assert_non_null(strstr(g_out, "size: 0 B\n")); /* not written twice */
    assert_int_equal(objlog("rm", "plain", "again", "--request-id", "12ab", NULL), 2);
    assert_non_null(strstr(g_err, "--request-id 12ab: a request id is 32 hex digits"));
    assert_ok(objlog("rm", "plain", "k", NULL));
    assert_string_equal(g_out, "delete: plain/k\n");
    assert_int_equal(objlog("get", "plain", "k", NULL), 1);
    assert_string_equal(g_out, "");

    assert_ok(objlog("mb", "versioned", "--versioning", "Enabled", NULL));
    assert_ok(objlog("put", "versioned", "k", "--size", "2", NULL));
    line_value(g_out, "version_id", vid, sizeof(vid));
    assert_ok(objlog("--json", "rm", "versioned", "k", NULL));
    json_t *j = json_out();
    assert_true(json_is_true(json_object_get(j, "delete_marker")));
    snprintf(marker, sizeof(marker), "%s", js(j, "version_id"));
    json_decref(j);
    assert_string_not_equal(marker, vid);
    assert_int_equal(objlog("get", "versioned", "k", NULL), 1);
    /* the old version is still there by id */
    assert_ok(objlog("get", "versioned", "k", "--version-id", vid, NULL));
    assert_non_null(strstr(g_out, "size: 2 B\n"));
    /* deleting the marker by id brings the key back */
    assert_ok(objlog("rm", "versioned", "k", "--version-id", marker, NULL));
    snprintf(want, sizeof(want), "delete: versioned/k (version %s)\n", marker);
    assert_string_equal(g_out, want);
    assert_ok(objlog("head", "versioned", "k", NULL));
    assert_non_null(strstr(g_out, vid));
    assert_ok(objlog("rm", "versioned", "k", NULL));
    assert_true(strncmp(g_out, "delete: versioned/k (delete marker ", 35) == 0);
}

static void assert_err_prefix(const char *prefix) {
    if (strncmp(g_err, prefix, strlen(prefix)) != 0)
        fail_msg("stderr \"%s\" does not start with \"%s\"", g_err, prefix);
}

static void test_errors_name_the_problem(void **state) {
    (void)state;
    assert_ok(objlog("mb", "errs", NULL));
    assert_int_equal(objlog("get", "errs", "missing.jpg", NULL), 1);
    assert_string_equal(g_out, "");
    assert_err_prefix("objlog: get errs/missing.jpg: NoSuchKey: ");
    assert_int_equal(objlog("get", "no-such-bucket", "k", NULL), 1);
    assert_err_prefix("objlog: get no-such-bucket/k: NoSuchBucket: ");
    assert_int_equal(objlog("mb", "errs", NULL), 1);
    assert_err_prefix("objlog: mb errs: BucketAlreadyExists: ");
    assert_ok(objlog("put", "errs", "k", "--etag", "one", NULL));
    assert_int_equal(objlog("put", "errs", "k", "--if-none-match", NULL), 1);
    assert_err_prefix("objlog: put errs/k: PreconditionFailed: ");
    assert_int_equal(objlog("put", "errs", "k", "--if-match", "two", NULL), 1);
    assert_err_prefix("objlog: put errs/k: PreconditionFailed: ");
    assert_ok(objlog("put", "errs", "k", "--if-match", "one", "--etag", "two", NULL));
    assert_int_equal(objlog("head", "errs", "nope", NULL), 1);
    assert_err_prefix("objlog: head errs/nope: ");

    /* usage errors: exit 2, nothing sent */
    assert_int_equal(objlog("frobnicate", NULL), 2);
    assert_non_null(strstr(g_err, "unknown command \"frobnicate\""));
    assert_int_equal(objlog("get", "errs", NULL), 2);
    assert_int_equal(objlog("put", "errs", "k", "--size", "lots", NULL), 2);
    assert_int_equal(objlog("ls", "errs", "--bogus", NULL), 2);
    assert_int_equal(objlog("mb", "errs2", "--versioning", "Sometimes", NULL), 2);
    assert_int_equal(objlog("put", "errs", "k", "--tag", "=v", NULL), 2);
    assert_non_null(strstr(g_err, "--tag takes name=value, not \"=v\""));
    assert_int_equal(objlog("put", "errs", "k", "--tag", "a=\xc0", NULL), 2);
    assert_non_null(strstr(g_err, "--tag \"a=\xc0\": name and value must be UTF-8"));
    assert_int_equal(objlog("put", "errs", "k", "--meta", "\xc0=v", NULL), 2);
    /* a tag the server refuses: exit 1 with its reason */
    char long_tag[200];
    memset(long_tag, 'k', 129);
    snprintf(long_tag + 129, sizeof(long_tag) - 129, "=v");
    assert_int_equal(objlog("put", "errs", "k", "--tag", long_tag, NULL), 1);
    assert_err_prefix("objlog: put errs/k: InvalidArgument: invalid tag \"kkkk");

    /* nothing listening: exit 1 and the URL in the message */
    char *argv[] = {g_srv.objlog, "--url", "http://127.0.0.1:1", "get", "b", "k", NULL};
    assert_int_equal(proc_run(argv, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err), 10000), 1);
    assert_err_prefix("objlog: get b/k: ConnectionError: cannot reach http://127.0.0.1:1");
}

/* objlog stats: usage errors exit 2 with the reason, before any request;
 * an unreachable server exits 1 naming the target. */
static void test_stats_usage_errors(void **state) {
    (void)state;
    static const struct {
        const char *args[6];
        const char *why;
    } rows[] = {
        {{"stats", "b", "--tenant", "t", NULL}, "a BUCKET or --tenant, not both"},
        {{"stats", "b", "--top", NULL}, "--top lists buckets"},
        {{"stats", "--tenant", "t", "--top", NULL}, "--top lists buckets"},
        {{"stats", "--by", "bytes", NULL}, "--by and --limit go with --top"},
        {{"stats", "--limit", "3", NULL}, "--by and --limit go with --top"},
        {{"stats", "--top", "--by", "size", NULL},
         "--by must be bytes, objects or versions, not \"size\""},
        {{"stats", "--top", "--limit", "0", NULL}, "--limit must be 1 to 100, not \"0\""},
        {{"stats", "--top", "--limit", "101", NULL}, "--limit must be 1 to 100"},
        {{"stats", "--top", "--limit", "x", NULL}, "--limit must be 1 to 100"},
        {{"stats", "a", "b", NULL}, "unexpected argument \"b\""},
        {{"stats", "--bogus", NULL}, "unknown option '--bogus'"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *const *a = rows[i].args;
        int rc = objlog(a[0], a[1], a[2], a[3], a[4], a[5]);
        if (rc != 2 || !strstr(g_err, rows[i].why))
            fail_msg("row %zu: exit %d, stderr \"%s\" (want \"%s\")", i, rc, g_err,
                     rows[i].why);
        assert_string_equal(g_out, "");
    }
    char *argv[] = {g_srv.objlog, "--url", "http://127.0.0.1:1", "stats", "--top", NULL};
    assert_int_equal(proc_run(argv, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err), 10000), 1);
    assert_err_prefix("objlog: stats top: ConnectionError: cannot reach http://127.0.0.1:1");
    char *argv2[] = {g_srv.objlog, "--url", "http://127.0.0.1:1", "stats", "--tenant",
                     "acme", NULL};
    assert_int_equal(proc_run(argv2, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err), 10000), 1);
    assert_err_prefix("objlog: stats tenant acme: ConnectionError: ");
}

/* objlog usage: the table (groups, the direct line, TOTAL; human sizes and
 * shares of bytes), --sort, --prefix, every page walked with progress on
 * stderr, --json merged into one document, and the errors. */
static void test_usage(void **state) {
    (void)state;
    static const struct { const char *key, *size; } objs[] = {
        {"photos/2024/a.jpg", "1536"}, {"photos/2024/b.jpg", "2560"},
        {"photos/2025/c.jpg", "1024"}, {"photos/readme", "7"},
        {"docs/x", "3000"}, {"docs/gone", "999999"}, {"top.txt", "100"}};
    assert_ok(objlog("mb", "us-cli", NULL));
    for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++)
        assert_ok(objlog("put", "us-cli", objs[i].key, "--size", objs[i].size, NULL));
    assert_ok(objlog("rm", "us-cli", "docs/gone", NULL));

    assert_ok(objlog("usage", "us-cli", NULL));
    assert_string_equal(g_out,
        "PREFIX    OBJECTS    BYTES  %BYTES\n"
        "docs/           1  2.9 KiB   36.5%\n"
        "photos/         4  5.0 KiB   62.3%\n"
        "(direct)        1    100 B    1.2%\n"
        "TOTAL           6  8.0 KiB  100.0%\n");
    assert_string_equal(g_err, "");
    assert_ok(objlog("usage", "us-cli", "--sort", "bytes", NULL));
    assert_string_equal(g_out,
        "PREFIX    OBJECTS    BYTES  %BYTES\n"
        "photos/         4  5.0 KiB   62.3%\n"
        "docs/           1  2.9 KiB   36.5%\n"
        "(direct)        1    100 B    1.2%\n"
        "TOTAL           6  8.0 KiB  100.0%\n");
    assert_ok(objlog("usage", "us-cli", "--prefix", "photos/", "--sort", "objects", NULL));
    assert_string_equal(g_out,
        "PREFIX        OBJECTS    BYTES  %BYTES\n"
        "photos/2024/        2  4.0 KiB   79.9%\n"
        "photos/2025/        1  1.0 KiB   20.0%\n"
        "(direct)            1      7 B    0.1%\n"
        "TOTAL               4  5.0 KiB  100.0%\n");
    assert_ok(objlog("usage", "us-cli", "--delimiter", "", NULL));
    assert_string_equal(g_out,
        "PREFIX    OBJECTS    BYTES  %BYTES\n"
        "(direct)        6  8.0 KiB  100.0%\n"
        "TOTAL           6  8.0 KiB  100.0%\n");

    /* one row a page: six pages, the same table, progress on stderr (the
     * fifth page sees top.txt, so photos/ is complete and returned there) */
    assert_ok(objlog("usage", "us-cli", "--max-rows", "1", NULL));
    assert_string_equal(g_out,
        "PREFIX    OBJECTS    BYTES  %BYTES\n"
        "docs/           1  2.9 KiB   36.5%\n"
        "photos/         4  5.0 KiB   62.3%\n"
        "(direct)        1    100 B    1.2%\n"
        "TOTAL           6  8.0 KiB  100.0%\n");
    assert_string_equal(g_err,
        "objlog: usage us-cli: 1 row scanned, 1 prefix so far\n"
        "objlog: usage us-cli: 2 rows scanned, 1 prefix so far\n"
        "objlog: usage us-cli: 3 rows scanned, 1 prefix so far\n"
        "objlog: usage us-cli: 4 rows scanned, 1 prefix so far\n"
        "objlog: usage us-cli: 5 rows scanned, 2 prefixes so far\n");
    assert_ok(objlog("--json", "usage", "us-cli", "--max-rows", "1", "--sort", "bytes", NULL));
    assert_string_equal(g_out,
        "{\"bucket\":\"us-cli\",\"prefix\":\"\",\"delimiter\":\"/\",\"common_prefixes\":["
        "{\"prefix\":\"photos/\",\"objects\":4,\"bytes\":5127},"
        "{\"prefix\":\"docs/\",\"objects\":1,\"bytes\":3000}],"
        "\"direct\":{\"objects\":1,\"bytes\":100},\"total\":{\"objects\":6,\"bytes\":8227},"
        "\"rows_scanned\":6,\"max_prefixes\":1000,\"max_rows\":1,\"is_truncated\":false}\n");

    assert_int_equal(objlog("usage", "us-nosuch", NULL), 1);
    assert_string_equal(g_out, "");
    assert_string_equal(g_err,
                        "objlog: usage us-nosuch: NoSuchBucket: bucket us-nosuch does not exist\n");
    static const struct {
        const char *args[5];
        const char *why;
    } rows[] = {
        {{"usage", NULL}, "missing BUCKET"},
        {{"usage", "us-cli", "--sort", "size", NULL},
         "--sort must be key, bytes or objects, not \"size\""},
        {{"usage", "us-cli", "--max-rows", "0", NULL}, "--max-rows must be 1 to 100000, not \"0\""},
        {{"usage", "us-cli", "--max-rows", "x", NULL}, "--max-rows must be 1 to 100000"},
        {{"usage", "us-cli", "--depth", "2", NULL}, "unknown option '--depth'"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *const *a = rows[i].args;
        int rc = objlog(a[0], a[1], a[2], a[3], a[4]);
        if (rc != 2 || !strstr(g_err, rows[i].why))
            fail_msg("row %zu: exit %d, stderr \"%s\" (want \"%s\")", i, rc, g_err,
                     rows[i].why);
        assert_string_equal(g_out, "");
    }
}

static void assert_bench_json(int count, int gets) {
    json_t *j = json_out();
    assert_int_equal(json_integer_value(json_object_get(j, "count")), count);
    const char *phases[] = {"produce", "apply", "get"};
    for (int i = 0; i < 3; i++) {
        json_t *ph = json_object_get(j, phases[i]);
        assert_non_null(ph);
        assert_int_equal(json_integer_value(json_object_get(ph, "ops")), i == 2 ? gets : count);
        assert_true(json_real_value(json_object_get(ph, "per_second")) > 0);
    }
    json_t *g = json_object_get(j, "get");
    assert_int_equal(json_integer_value(json_object_get(g, "errors")), 0);
    assert_true(json_real_value(json_object_get(g, "p99_ms")) >=
                json_real_value(json_object_get(g, "p50_ms")));
    json_decref(j);
}


/* ---- versions, bucket settings, multipart ---- */

typedef struct ver_row {
    char key[64], vid[32], lm[64];
    int latest, dm;
    long long size;
} ver_row;

/* The versions listing of bucket as rows, via --json --all. */
static size_t versions_rows(const char *bucket, ver_row *rows, size_t max) {
    assert_ok(objlog("--json", "versions", bucket, "--all", NULL));
    json_t *j = json_out();
    json_t *vs = json_object_get(j, "versions");
    size_t n = json_array_size(vs);
    assert_true(n <= max);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(vs, i);
        snprintf(rows[i].key, sizeof(rows[i].key), "%s", js(v, "key"));
        snprintf(rows[i].vid, sizeof(rows[i].vid), "%s", js(v, "version_id"));
        snprintf(rows[i].lm, sizeof(rows[i].lm), "%s", js(v, "last_modified"));
        rows[i].latest = json_is_true(json_object_get(v, "is_latest"));
        rows[i].dm = json_is_true(json_object_get(v, "delete_marker"));
        rows[i].size = json_integer_value(json_object_get(v, "size"));
    }
    json_decref(j);
    return n;
}

/* The readable row the CLI prints for r (column widths as given). */
static void ver_line(char *out, size_t n, const ver_row *r, int kw) {
    char size[32];
    snprintf(size, sizeof(size), "%lld B", r->size);
    snprintf(out, n, "%-*s  %-16s  %-6s  %-13s  %4s  %s\n", kw, r->key, r->vid,
             r->latest ? "yes" : "no", r->dm ? "yes" : "no", r->dm ? "-" : size, r->lm);
}

static void test_versions_table(void **state) {
    (void)state;
    char want[8192], line[2048], vid[4][64];
    assert_ok(objlog("mb", "vers", "--versioning", "Enabled", NULL));
    assert_ok(objlog("put", "vers", "a.txt", "--size", "5", NULL));
    line_value(g_out, "version_id", vid[0], sizeof(vid[0]));
    assert_ok(objlog("put", "vers", "a.txt", "--size", "7", NULL));
    line_value(g_out, "version_id", vid[1], sizeof(vid[1]));
    assert_ok(objlog("rm", "vers", "a.txt", NULL));
    assert_ok(objlog("put", "vers", "b/c", "--size", "9", NULL));
    line_value(g_out, "version_id", vid[3], sizeof(vid[3]));

    ver_row rows[8];
    assert_int_equal(versions_rows("vers", rows, 8), 4);
    /* newest first within a key; the marker is the latest of a.txt */
    assert_string_equal(rows[0].key, "a.txt");
    assert_true(rows[0].dm && rows[0].latest);
    assert_string_equal(rows[1].vid, vid[1]);
    assert_false(rows[1].latest);
    assert_string_equal(rows[2].vid, vid[0]);
    assert_string_equal(rows[3].vid, vid[3]);
    assert_true(rows[3].latest && !rows[3].dm);

    snprintf(want, sizeof(want), "%-5s  %-16s  %-6s  %-13s  %4s  %s\n", "KEY",
             "VERSION_ID", "LATEST", "DELETE_MARKER", "SIZE", "LAST_MODIFIED");
    for (int i = 0; i < 4; i++) {
        ver_line(line, sizeof(line), &rows[i], 5);
        strcat(want, line);
    }
    strcat(want, "4 versions (1 delete marker), 0 prefixes\n");
    assert_ok(objlog("versions", "vers", NULL));
    assert_string_equal(g_out, want);
    /* one version per page: --all neither repeats nor skips inside a.txt */
    assert_ok(objlog("versions", "vers", "--max-keys", "1", "--all", NULL));
    assert_string_equal(g_out, want);

    assert_ok(objlog("versions", "vers", "--max-keys", "2", NULL));
    snprintf(want, sizeof(want), "%-5s  %-16s  %-6s  %-13s  %4s  %s\n", "KEY",
             "VERSION_ID", "LATEST", "DELETE_MARKER", "SIZE", "LAST_MODIFIED");
    for (int i = 0; i < 2; i++) {
        ver_line(line, sizeof(line), &rows[i], 5);
        strcat(want, line);
    }
    strcat(want, "2 versions (1 delete marker), 0 prefixes (truncated; --all lists the rest)\n");
    assert_string_equal(g_out, want);

    /* key and version id markers: resume after a.txt's newest version */
    assert_ok(objlog("--json", "versions", "vers", "--key-marker", "a.txt",
                     "--version-id-marker", rows[0].vid, NULL));
    json_t *j = json_out();
    json_t *vs = json_object_get(j, "versions");
    assert_int_equal(json_array_size(vs), 3);
    assert_string_equal(js(json_array_get(vs, 0), "version_id"), vid[1]);
    json_decref(j);

    assert_ok(objlog("versions", "vers", "--delimiter", "/", NULL));
    snprintf(want, sizeof(want), "PRE b/\n%-5s  %-16s  %-6s  %-13s  %4s  %s\n", "KEY",
             "VERSION_ID", "LATEST", "DELETE_MARKER", "SIZE", "LAST_MODIFIED");
    for (int i = 0; i < 3; i++) {
        ver_line(line, sizeof(line), &rows[i], 5);
        strcat(want, line);
    }
    strcat(want, "3 versions (1 delete marker), 1 prefix\n");
    assert_string_equal(g_out, want);

    assert_ok(objlog("versions", "vers", "--prefix", "zzz", NULL));
    assert_string_equal(g_out, "0 versions (0 delete markers), 0 prefixes\n");
    assert_int_equal(objlog("versions", "vers", "--max-keys", "many", NULL), 2);
    assert_int_equal(objlog("versions", "no-such-bucket", NULL), 1);
    assert_err_prefix("objlog: versions no-such-bucket: NoSuchBucket: ");
}

static void test_bucket_settings_versioning_rb(void **state) {
    (void)state;
    char want[1024], created[64];
    assert_ok(objlog("mb", "settings", "--tenant", "acme", "--max-versions", "2", NULL));
    assert_ok(objlog("--json", "bucket", "settings", NULL));
    json_t *j = json_out();
    snprintf(created, sizeof(created), "%s", js(j, "created"));
    /* one partition holds it (standalone: no node URL) */
    json_t *parts = json_object_get(j, "partitions");
    assert_int_equal(json_array_size(parts), 1);
    long long part = json_integer_value(json_object_get(json_array_get(parts, 0), "partition"));
    assert_string_equal(js(json_array_get(parts, 0), "node"), "");
    json_decref(j);
    assert_ok(objlog("bucket", "settings", NULL));
    /* no blank "versioning:" line for a bucket never versioned */
    snprintf(want, sizeof(want),
             "name: settings\ntenant: acme\nmax_versions: 2\n"
             "quota.max_bytes: 0\nquota.max_objects: 0\ncreated: %s\nacl: private\n"
             "partitions: %lld\n", created, part);
    assert_string_equal(g_out, want);

    /* the rate limit in force, as JSON (printed once, freed once) */
    assert_ok(objlog("ratelimit", "settings", "--rps", "5", NULL));
    assert_ok(objlog("--json", "ratelimit", "settings", NULL));
    j = json_out();
    assert_string_equal(js(j, "bucket"), "settings");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "all"), "rps")), 5);
    json_decref(j);
    assert_ok(objlog("ratelimit", "settings", "--delete", NULL));

    assert_ok(objlog("versioning", "settings", "Enabled", NULL));
    assert_string_equal(g_out, "versioning: settings Enabled\n");
    assert_ok(objlog("bucket", "settings", NULL));
    assert_non_null(strstr(g_out, "\nversioning: Enabled\n"));
    assert_int_equal(objlog("versioning", "settings", "Unversioned", NULL), 2);
    assert_non_null(strstr(g_err, "Enabled or Suspended"));

    /* the cap: two versions per key, the third PUT is refused */
    char v1[64], v2[64];
    assert_ok(objlog("put", "settings", "k", "--size", "1", NULL));
    line_value(g_out, "version_id", v1, sizeof(v1));
    assert_ok(objlog("put", "settings", "k", "--size", "2", NULL));
    line_value(g_out, "version_id", v2, sizeof(v2));
    assert_int_equal(objlog("put", "settings", "k", "--size", "3", NULL), 1);
    assert_err_prefix("objlog: put settings/k: TooManyVersions: ");

    /* rb only when empty: versions count */
    assert_int_equal(objlog("rb", "settings", NULL), 1);
    assert_err_prefix("objlog: rb settings: BucketNotEmpty: ");
    assert_ok(objlog("rm", "settings", "k", "--version-id", v1, NULL));
    assert_ok(objlog("rm", "settings", "k", "--version-id", v2, NULL));
    assert_ok(objlog("rb", "settings", NULL));
    assert_string_equal(g_out, "remove_bucket: settings\n");
    assert_int_equal(objlog("bucket", "settings", NULL), 1);
    assert_err_prefix("objlog: bucket settings: NoSuchBucket: ");
    assert_int_equal(objlog("rb", "settings", NULL), 1);
    assert_err_prefix("objlog: rb settings: NoSuchBucket: ");
    /* recreate after delete, with the default cap */
    assert_ok(objlog("mb", "settings", NULL));
    assert_ok(objlog("bucket", "settings", NULL));
    assert_non_null(strstr(g_out, "\nmax_versions: 100000\n"));
    assert_int_equal(objlog("mb", "capless", "--max-versions", "0", NULL), 2);
}

#define ETAG1 "0123456789abcdef0123456789abcdef"
#define ETAG2 "fedcba9876543210fedcba9876543210"

/* S3's multipart ETag: hex(md5(binary md5 of each part)) + "-" + count. */
static void multipart_etag(const char *const *etags, int n, char *out, size_t out_n) {
    uint8_t bin[16 * 4], md[16];
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 16; b++) {
            unsigned v;
            assert_int_equal(sscanf(etags[i] + 2 * b, "%2x", &v), 1);
            bin[16 * i + b] = (uint8_t)v;
        }
    unsigned int mdn = 0;
    assert_int_equal(EVP_Digest(bin, (size_t)(16 * n), md, &mdn, EVP_md5(), NULL), 1);
    char hex[33];
    for (int b = 0; b < 16; b++)
        snprintf(hex + 2 * b, 3, "%02x", md[b]);
    snprintf(out, out_n, "%s-%d", hex, n);
}

static void test_mpu_commands(void **state) {
    (void)state;
    char want[4096], id[64], id2[64], tok[64], lm[2][64], init[2][64];
    assert_ok(objlog("mb", "mpb", NULL));
    assert_ok(objlog("mpu", "create", "mpb", "big/file", "--content-type", "video/mp4",
                     NULL));
    line_value(g_out, "upload_id", id, sizeof(id));
    line_value(g_out, "token", tok, sizeof(tok));
    assert_int_equal(strlen(id), 16);
    snprintf(want, sizeof(want), "key: big/file\nupload_id: %s\ntoken: %s\n", id, tok);
    assert_string_equal(g_out, want);
    assert_ok(objlog("mpu", "create", "mpb", "big/other", NULL));
    line_value(g_out, "upload_id", id2, sizeof(id2));
    assert_true(strcmp(id, id2) < 0); /* ids sort by initiation */

    assert_ok(objlog("mpu", "part", "mpb", "big/file", id, "1", "--size", "5242880",
                     "--etag", ETAG1, "--blob-id", "blob-1", NULL));
    line_value(g_out, "token", tok, sizeof(tok));
    snprintf(want, sizeof(want), "upload_id: %s\npart_number: 1\netag: %s\ntoken: %s\n",
             id, ETAG1, tok);
    assert_string_equal(g_out, want);
    assert_ok(objlog("mpu", "part", "mpb", "big/file", id, "2", "--size", "1", "--etag",
                     ETAG1, NULL));
    /* re-upload replaces */
    assert_ok(objlog("mpu", "part", "mpb", "big/file", id, "2", "--size", "100", "--etag",
                     ETAG2, NULL));

    assert_ok(objlog("--json", "mpu", "parts", "mpb", "big/file", id, NULL));
    json_t *j = json_out();
    json_t *ps = json_object_get(j, "parts");
    assert_int_equal(json_array_size(ps), 2);
    for (int i = 0; i < 2; i++)
        snprintf(lm[i], 64, "%s", js(json_array_get(ps, (size_t)i), "last_modified"));
    json_decref(j);
    snprintf(want, sizeof(want),
             "PART     SIZE  ETAG                              LAST_MODIFIED\n"
             "   1  5.0 MiB  %s  %s\n"
             "   2    100 B  %s  %s\n"
             "2 parts, 5.0 MiB\n", ETAG1, lm[0], ETAG2, lm[1]);
    assert_ok(objlog("mpu", "parts", "mpb", "big/file", id, NULL));
    assert_string_equal(g_out, want);
    assert_ok(objlog("mpu", "parts", "mpb", "big/file", id, "--max-parts", "1", "--all",
                     NULL));
    assert_string_equal(g_out, want);
    assert_ok(objlog("mpu", "parts", "mpb", "big/file", id, "--part-number-marker", "1",
                     NULL));
    snprintf(want, sizeof(want),
             "PART   SIZE  ETAG                              LAST_MODIFIED\n"
             "   2  100 B  %s  %s\n"
             "1 part, 100 B\n", ETAG2, lm[1]);
    assert_string_equal(g_out, want);

    assert_ok(objlog("--json", "mpu", "ls", "mpb", NULL));
    j = json_out();
    json_t *us = json_object_get(j, "uploads");
    assert_int_equal(json_array_size(us), 2);
    for (int i = 0; i < 2; i++)
        snprintf(init[i], 64, "%s", js(json_array_get(us, (size_t)i), "initiated"));
    json_decref(j);
    snprintf(want, sizeof(want),
             "KEY        UPLOAD_ID         INITIATED\n"
             "big/file   %s  %s\n"
             "big/other  %s  %s\n"
             "2 uploads, 0 prefixes\n", id, init[0], id2, init[1]);
    assert_ok(objlog("mpu", "ls", "mpb", NULL));
    assert_string_equal(g_out, want);
    assert_ok(objlog("mpu", "ls", "mpb", "--max-uploads", "1", "--all", NULL));
    assert_string_equal(g_out, want);
    assert_ok(objlog("mpu", "ls", "mpb", "--delimiter", "/", NULL));
    assert_string_equal(g_out, "PRE big/\n0 uploads, 1 prefix\n");
    assert_ok(objlog("mpu", "ls", "mpb", "--key-marker", "big/file", NULL));
    snprintf(want, sizeof(want),
             "KEY        UPLOAD_ID         INITIATED\n"
             "big/other  %s  %s\n"
             "1 upload, 0 prefixes\n", id2, init[1]);
    assert_string_equal(g_out, want);

    /* complete: the list is checked against the recorded parts */
    assert_int_equal(objlog("mpu", "complete", "mpb", "big/file", id, "2:" ETAG2,
                            "1:" ETAG1, NULL), 1);
    assert_err_prefix("objlog: mpu complete mpb/big/file: InvalidPartOrder: ");
    assert_int_equal(objlog("mpu", "complete", "mpb", "big/file", id, "1:" ETAG2,
                            "2:" ETAG2, NULL), 1);
    assert_err_prefix("objlog: mpu complete mpb/big/file: InvalidPart: ");
    assert_ok(objlog("mpu", "complete", "mpb", "big/file", id, "1:" ETAG1, "2:" ETAG2,
                     NULL));
    char vid[64], etag[64];
    const char *parts[] = {ETAG1, ETAG2};
    multipart_etag(parts, 2, etag, sizeof(etag));
    line_value(g_out, "version_id", vid, sizeof(vid));
    line_value(g_out, "token", tok, sizeof(tok));
    snprintf(want, sizeof(want), "key: big/file\nversion_id: %s\netag: %s\ntoken: %s\n",
             vid, etag, tok);
    assert_string_equal(g_out, want);
    assert_ok(objlog("get", "mpb", "big/file", NULL));
    assert_non_null(strstr(g_out, "\nsize: 5.0 MiB (5242980 B)\n"));
    assert_non_null(strstr(g_out, "\ncontent_type: video/mp4\n"));
    assert_int_equal(objlog("mpu", "parts", "mpb", "big/file", id, NULL), 1);
    assert_err_prefix("objlog: mpu parts mpb/big/file: NoSuchUpload: ");

    assert_ok(objlog("mpu", "abort", "mpb", "big/other", id2, NULL));
    snprintf(want, sizeof(want), "abort: mpb/big/other (upload %s)\n", id2);
    assert_string_equal(g_out, want);
    assert_int_equal(objlog("mpu", "abort", "mpb", "big/other", id2, NULL), 1);
    assert_err_prefix("objlog: mpu abort mpb/big/other: NoSuchUpload: ");
    assert_ok(objlog("mpu", "ls", "mpb", NULL));
    assert_string_equal(g_out, "0 uploads, 0 prefixes\n");

    /* usage errors: exit 2, nothing sent */
    assert_int_equal(objlog("mpu", NULL), 2);
    assert_int_equal(objlog("mpu", "frob", "mpb", NULL), 2);
    assert_int_equal(objlog("mpu", "part", "mpb", "k", id, "0", "--size", "1", "--etag",
                            "e", NULL), 2);
    assert_int_equal(objlog("mpu", "part", "mpb", "k", id, "10001", "--size", "1",
                            "--etag", "e", NULL), 2);
    assert_int_equal(objlog("mpu", "part", "mpb", "k", id, "1", NULL), 2);
    /* a part etag is an MD5: refused here, not at complete */
    assert_int_equal(objlog("mpu", "part", "mpb", "k", id, "1", "--size", "1", "--etag",
                            "e", NULL), 2);
    assert_non_null(strstr(g_err, "32 hex digits"));
    assert_int_equal(objlog("mpu", "complete", "mpb", "k", id, NULL), 2);
    assert_int_equal(objlog("mpu", "complete", "mpb", "k", id, "1-" ETAG1, NULL), 2);
    assert_non_null(strstr(g_err, "N:ETAG"));
}

/* ---- objlog ranges ls: the default map of the test's 4 partitions ---- */

static void test_ranges_ls(void **state) {
    (void)state;
    assert_ok(objlog("--json", "ranges", "ls", NULL));
    json_t *j = json_out();
    assert_int_equal(json_integer_value(json_object_get(j, "epoch")), 1);
    json_t *rs = json_object_get(j, "ranges");
    assert_int_equal(json_array_size(rs), 4);
    static const char *const start[] = {"", "4000", "8000", "c000"};
    for (size_t i = 0; i < 4; i++) {
        json_t *r = json_array_get(rs, i);
        assert_string_equal(js(r, "start"), start[i]);
        assert_int_equal(json_integer_value(json_object_get(r, "partition")), (long)i);
        assert_string_equal(js(r, "state"), "serving");
        assert_null(json_object_get(r, "bucket")); /* hash boundaries */
    }
    json_decref(j);
    assert_ok(objlog("ranges", "ls", NULL));
    assert_string_equal(g_out, "epoch 1, 4 ranges\n"
                               "START    BUCKET  KEY  PARTITION  STATE\n"
                               "(first)  -       -            0  serving\n"
                               "4000     -       -            1  serving\n"
                               "8000     -       -            2  serving\n"
                               "c000     -       -            3  serving\n");
    assert_int_equal(objlog("ranges", NULL), 2);
    assert_non_null(strstr(g_err, "missing SUBCOMMAND"));
    assert_int_equal(objlog("ranges", "ls", "x", NULL), 2);
    assert_non_null(strstr(g_err, "unexpected argument \"x\""));
    assert_int_equal(objlog("ranges", "split", NULL), 2);
}

/* ---- objlog lag: runs first in the group, so the log holds
 * only what this test writes and every offset is known. ---- */

/* Polls lag --json until every partition has end == applied (the end
 * offsets come from a cache); returns the parsed JSON. */
static json_t *lag_settled(void) {
    for (int i = 0; i < 100; i++) {
        assert_ok(objlog("--json", "lag", NULL));
        json_t *j = json_out();
        size_t k;
        json_t *p;
        int settled = 1;
        json_array_foreach(json_object_get(j, "partitions"), k, p)
            if (json_integer_value(json_object_get(p, "end")) !=
                json_integer_value(json_object_get(p, "applied")))
                settled = 0;
        if (settled)
            return j;
        json_decref(j);
        usleep(50000);
    }
    fail_msg("lag did not settle: %s", g_out);
    return NULL;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_lag_table_json_watch(void **state) {
    (void)state;
    char tok[64], want[4096], line[256];
    assert_ok(objlog("mb", "lag", NULL));
    for (int i = 0; i < 3; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        assert_ok(objlog("put", "lag", key, "--size", "1", NULL));
    }
    line_value(g_out, "token", tok, sizeof(tok));
    token_part tp[4];
    assert_int_equal(token_parse(tok, tp, 4), 1);
    /* a bucket lives in one partition: mb + 3 puts are offsets 0..3 there */
    assert_int_equal(tp[0].offset, 3);
    int hot = (int)tp[0].partition;

    json_t *j = lag_settled();
    json_t *ps = json_object_get(j, "partitions");
    assert_int_equal(json_array_size(ps), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *p = json_array_get(ps, i);
        long long want_off = (int)i == hot ? 4 : 0;
        assert_int_equal(json_integer_value(json_object_get(p, "partition")), (long)i);
        assert_int_equal(json_integer_value(json_object_get(p, "applied")), want_off);
        assert_int_equal(json_integer_value(json_object_get(p, "end")), want_off);
        assert_int_equal(json_integer_value(json_object_get(p, "lag_messages")), 0);
        assert_string_equal(js(p, "state"), "running");
    }
    assert_int_equal(json_integer_value(json_object_get(j, "max_lag_messages")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "events_applied")), 4);
    assert_int_equal(json_integer_value(json_object_get(j, "dlq_events")), 0);
    json_decref(j);

    assert_ok(objlog("lag", NULL));
    snprintf(want, sizeof(want), "PARTITION  APPLIED  END  LAG  LAG_S  STATE\n");
    for (int i = 0; i < 4; i++) {
        int off = i == hot ? 4 : 0;
        snprintf(line, sizeof(line), "%9d  %7d  %3d  %3d  0.000  running\n", i, off, off, 0);
        strcat(want, line);
    }
    strcat(want, "max lag 0 messages (0.000 s); since objlogd started: 4 events applied, "
           "0 dlq events\n");
    assert_string_equal(g_out, want);
    assert_string_equal(g_err, "");

    /* usage errors and an unreachable server */
    assert_int_equal(objlog("lag", "--interval", "1", NULL), 2);
    assert_int_equal(objlog("lag", "--watch", "--interval", "0", NULL), 2);
    assert_int_equal(objlog("lag", "--frob", NULL), 2);
    char *dead[] = {g_srv.objlog, "--url", "http://127.0.0.1:1", "lag", NULL};
    assert_int_equal(proc_run(dead, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err),
                              10000), 1);
    assert_err_prefix("objlog: lag http://127.0.0.1:1: ConnectionError: ");

    /* --watch: refreshes every 0.2 s until SIGINT, then exits 0; stdout is
     * a pipe here, so no ANSI codes, and from the second refresh on the
     * rate column is measured (nothing is written: 0.0 events/s). */
    char *argv[] = {g_srv.objlog, "--url", g_srv.url, "lag", "--watch", "--interval",
                    "0.2", NULL};
    proc *w = proc_spawn(argv, NULL);
    assert_non_null(w);
    usleep(1100000);
    kill(w->pid, SIGINT);
    size_t len = w->len;
    memcpy(g_out, w->buf, len);
    for (;;) {
        struct pollfd pfd = {.fd = w->out_fd, .events = POLLIN};
        if (poll(&pfd, 1, 5000) <= 0)
            break;
        ssize_t r = read(w->out_fd, g_out + len, sizeof(g_out) - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    g_out[len] = '\0';
    int st = proc_stop(w, 5000);
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    int refreshes =
        count_of(g_out, "PARTITION  APPLIED  END  LAG  LAG_S  STATE    RATE/S\n");
    if (refreshes < 2 || refreshes > 7)
        fail_msg("%d refreshes in 1.1 s at 0.2 s:\n%s", refreshes, g_out);
    assert_int_equal(count_of(g_out, "max lag 0 messages (0.000 s); since objlogd started: "
                                     "4 events applied, 0 dlq events\n"), refreshes);
    assert_null(strchr(g_out, '\033'));
    snprintf(line, sizeof(line), "%9d  %7d  %3d  %3d  0.000  running       -\n", hot, 4, 4, 0);
    assert_int_equal(count_of(g_out, line), 1);
    snprintf(line, sizeof(line), "%9d  %7d  %3d  %3d  0.000  running     0.0\n", hot, 4, 4, 0);
    assert_int_equal(count_of(g_out, line), refreshes - 1);
}

/* The quota line the readable output must show for a stats JSON object. */
static void quota_line(json_t *j, char *out, size_t n) {
    json_t *q = json_object_get(j, "quota");
    out[0] = '\0';
    if (!json_is_object(q))
        return;
    json_int_t mb = json_integer_value(json_object_get(q, "max_bytes"));
    json_int_t mo = json_integer_value(json_object_get(q, "max_objects"));
    assert_int_equal(mb, 0);
    assert_int_equal(mo, 0);
    snprintf(out, n, "quota: none\n");
}

/* objlog stats BUCKET / --tenant / global / --top: exact readable output
 * with human sizes, --json as served, errors exit 1 naming the code. */
static void test_stats(void **state) {
    (void)state;
    assert_ok(objlog("mb", "st-a", "--tenant", "st-acme", NULL));
    assert_ok(objlog("mb", "st-b", "--tenant", "st-acme", NULL));
    assert_ok(objlog("put", "st-a", "k1", "--size", "1536", NULL));
    assert_ok(objlog("put", "st-a", "k2", "--size", "3221225472", NULL));
    assert_ok(objlog("put", "st-b", "x", "--size", "10", NULL));

    assert_ok(objlog("--json", "stats", "st-a", NULL));
    json_t *j = json_out();
    assert_int_equal(json_integer_value(json_object_get(j, "bytes")), 3221227008LL);
    char q[64], want[2048];
    quota_line(j, q, sizeof(q));
    json_decref(j);
    assert_ok(objlog("stats", "st-a", NULL));
    snprintf(want, sizeof(want),
             "bucket: st-a\ntenant: st-acme\nobjects: 2\n"
             "bytes: 3.0 GiB (3221227008 B)\nversions: 2\n"
             "version_bytes: 3.0 GiB (3221227008 B)\nnoncurrent_versions: 0\n"
             "noncurrent_bytes: 0 B\ndelete_markers: 0\nuploads: 0\n"
             "upload_part_bytes: 0 B\n%s", q);
    assert_string_equal(g_out, want);

    assert_ok(objlog("stats", "--tenant", "st-acme", NULL));
    assert_string_equal(g_out,
                        "tenant: st-acme\nbuckets: 2\nobjects: 3\n"
                        "bytes: 3.0 GiB (3221227018 B)\nversions: 3\n"
                        "version_bytes: 3.0 GiB (3221227018 B)\nnoncurrent_versions: 0\n"
                        "noncurrent_bytes: 0 B\ndelete_markers: 0\nuploads: 0\n"
                        "upload_part_bytes: 0 B\n");

    /* global: the readable numbers are the served ones */
    assert_ok(objlog("--json", "stats", NULL));
    j = json_out();
    long long objects = (long long)json_integer_value(json_object_get(j, "objects"));
    long long buckets = (long long)json_integer_value(json_object_get(j, "buckets"));
    json_decref(j);
    assert_true(objects >= 3 && buckets >= 2);
    assert_ok(objlog("stats", NULL));
    char line[128];
    snprintf(line, sizeof(line), "\nbuckets: %lld\nobjects: %lld\n", buckets, objects);
    if (!strstr(g_out, line))
        fail_msg("global stats lack \"%s\": %s", line, g_out);
    assert_non_null(strstr(g_out, "tenants: "));

    /* st-a is the biggest bucket by bytes */
    assert_ok(objlog("stats", "--top", "--by", "bytes", "--limit", "1", NULL));
    assert_string_equal(g_out,
                        "BUCKET  TENANT   OBJECTS    BYTES  VERSIONS\n"
                        "st-a    st-acme        2  3.0 GiB         2\n"
                        "1 bucket by bytes\n");
    assert_ok(objlog("--json", "stats", "--top", "--limit", "1", NULL));
    j = json_out();
    assert_string_equal(js(j, "by"), "bytes");
    assert_int_equal(json_array_size(json_object_get(j, "buckets")), 1);
    json_decref(j);

    assert_int_equal(objlog("stats", "st-nosuch", NULL), 1);
    assert_string_equal(g_out, "");
    assert_err_prefix("objlog: stats st-nosuch: NoSuchBucket: ");
}

/* bench --stats with small counts (it starts its own objlogd and replay
 * views): the log holds the bucket and every put, each round replayed it
 * with and without the stats view, and every stats read succeeded. */
/* objlog ARGS... without the group's --url (for commands that start their
 * own objlogd). */
static int objlog_own(int timeout_ms, char *const *args) {
    char *argv[32] = {g_srv.objlog};
    int n = 1;
    for (; args[n - 1] && n < 31; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    return proc_run(argv, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err), timeout_ms);
}

static void test_bench_stats(void **state) {
    (void)state;
    if (testlog_is_kafka()) {
        print_message("bench --stats starts its own objlogd on its own mock cluster, "
                      "never the test's log: checked by the mock variant only\n");
        skip();
    }
    char *run[] = {"--json", "bench", "--stats", "--count", "300", "--rounds", "2",
                   "--threads", "2", "--gets", "40", NULL};
    assert_ok(objlog_own(120000, run));
    json_t *j = json_out();
    assert_int_equal(json_integer_value(json_object_get(j, "puts")), 300);
    assert_int_equal(json_integer_value(json_object_get(j, "log_events")), 301);
    assert_int_equal(json_integer_value(json_object_get(j, "rounds")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "gets")), 40);
    json_t *rp = json_object_get(j, "replay_events_per_second");
    const char *sides[] = {"with_stats", "without_stats"};
    for (int i = 0; i < 2; i++) {
        json_t *a = json_object_get(rp, sides[i]);
        assert_int_equal(json_array_size(a), 2);
        for (size_t r = 0; r < 2; r++)
            assert_true(json_real_value(json_array_get(a, r)) > 0);
    }
    assert_true(json_real_value(json_object_get(rp, "ratio_with_to_without")) > 0);
    const char *reads[] = {"bucket_eventual", "bucket_strong", "global_eventual",
                           "global_strong", "usage_eventual", "usage_strong"};
    assert_int_equal(json_integer_value(json_object_get(j, "usage_gets")), 4);
    assert_int_equal(json_integer_value(json_object_get(j, "usage_rows_per_page")), 300);
    json_t *sr = json_object_get(j, "stats_reads");
    for (int i = 0; i < 6; i++) {
        json_t *r = json_object_get(sr, reads[i]);
        assert_non_null(r);
        assert_int_equal(json_integer_value(json_object_get(r, "errors")), 0);
        assert_true(json_real_value(json_object_get(r, "p99_ms")) >=
                    json_real_value(json_object_get(r, "p50_ms")));
    }
    json_decref(j);
    char *zero[] = {"bench", "--stats", "--count", "0", NULL};
    assert_int_equal(objlog_own(10000, zero), 2);
    char *rounds[] = {"bench", "--stats", "--rounds", "17", NULL};
    assert_int_equal(objlog_own(10000, rounds), 2);
    assert_int_equal(objlog("bench", "--stats", NULL), 2);
    assert_err_prefix("objlog: bench: --stats starts its own objlogd processes");
    /* More puts than the embedded log can hold for a whole replay. */
    char *big[] = {"bench", "--stats", "--partitions", "1", "--count", "20001", NULL};
    assert_int_equal(objlog_own(10000, big), 2);
    assert_err_prefix("objlog: bench: --stats takes at most 20000 puts with 1 partitions");
}

/* 1 if a running process has arg (a temp dir) in its command line. */
static int proc_running_with(const char *arg) {
    int found = 0;
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && !found && (e = readdir(d)) != NULL;) {
        char path[300], cmd[4096];
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(cmd, 1, sizeof(cmd) - 1, f) : 0;
        if (f)
            fclose(f);
        for (size_t i = 0; i < n; i++)
            cmd[i] = cmd[i] ? cmd[i] : ' ';
        cmd[n] = '\0';
        found = strstr(cmd, arg) != NULL;
    }
    if (d)
        closedir(d);
    return found;
}

/* bench --apply with small counts (it starts its own objlogd, then a
 * second one that rebuilds a view from the same log): every phase counts
 * exactly its events, the rebuild the whole log (8 CreateBuckets and 2000
 * PUTs); every rate is positive; the RocksDB baselines made exactly the
 * calls apply makes (raw: 2 puts an event; apply pattern: 5 reads and 5
 * puts an event, and per batch of 1000 one read and one put of each of the
 * 8 buckets' stats rows, the tenant's and the global one, and one put of
 * each partition's applied offset); the rebuild view is gone afterwards,
 * with its dir; bad values are usage errors. */
static void test_bench_apply(void **state) {
    (void)state;
    if (testlog_is_kafka()) {
        print_message("bench --apply starts its own objlogd on its own mock cluster, "
                      "never the test's log: checked by the mock variant only\n");
        skip();
    }
    char *run[] = {"--json", "bench", "--apply", "--count", "2000", "--buckets", "8",
                   "--apply-threads", "3", NULL};
    assert_ok(objlog_own(120000, run));
    assert_string_equal(g_err, "");
    json_t *all = json_out();
    json_t *j = json_object_get(all, "apply");
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 2000);
    assert_int_equal(json_integer_value(json_object_get(j, "apply_threads")), 3);
    assert_string_equal(js(j, "wal"), "off");
    assert_int_equal(json_integer_value(json_object_get(j, "buckets")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "partitions")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "batch_events")), 1000);
    assert_int_equal(json_integer_value(json_object_get(j, "log_events")), 2008);
    json_t *store = json_object_get(j, "store");
    assert_int_equal(json_integer_value(json_object_get(store, "block_cache_bytes")),
                     32 << 20);
    assert_int_equal(json_integer_value(json_object_get(store, "memtable_bytes")), 32 << 20);
    static const struct {
        const char *name;
        long long events, reads, puts; /* reads, puts: -1 not reported */
    } want[] = {{"apply-live", 2000, -1, -1},
                {"apply-rebuild", 2008, -1, -1},
                {"rocksdb-raw", 2000, 0, 4000},
                /* per batch: 24 stats rows (8 buckets, each on its own
                 * partition with its tenant's and its global row), and
                 * 8 "applied" rows */
                {"rocksdb-apply-pattern", 2000, 3 * 2000 + 2 * 24, 3 * 2000 + 2 * (24 + 8)}};
    json_t *phases = json_object_get(j, "phases");
    assert_int_equal(json_array_size(phases), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *ph = json_array_get(phases, i);
        assert_string_equal(js(ph, "phase"), want[i].name);
        assert_int_equal(json_integer_value(json_object_get(ph, "events")), want[i].events);
        assert_true(json_real_value(json_object_get(ph, "seconds")) > 0);
        assert_true(json_real_value(json_object_get(ph, "events_per_second")) > 0);
        assert_true(json_real_value(json_object_get(ph, "ratio_to_raw")) > 0);
        if (want[i].reads < 0) {
            assert_null(json_object_get(ph, "reads"));
            continue;
        }
        assert_int_equal(json_integer_value(json_object_get(ph, "reads")), want[i].reads);
        assert_int_equal(json_integer_value(json_object_get(ph, "puts")), want[i].puts);
    }
    assert_true(json_real_value(json_object_get(json_array_get(phases, 2), "ratio_to_raw")) ==
                1.0);
    json_t *view = json_object_get(j, "rebuild_view");
    pid_t pid = (pid_t)json_integer_value(json_object_get(view, "pid"));
    const char *dir = js(view, "dir");
    assert_true(pid > 0);
    assert_int_equal(strncmp(dir, "/tmp/objlog-bench-view-", 23), 0);
    assert_int_equal(strncmp(js(view, "group"), "objlog-bench-rebuild-", 21), 0);
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(access(dir, F_OK), -1);
    assert_false(proc_running_with(dir));
    json_decref(all);

    assert_ok(objlog("help", "bench", NULL));
    assert_non_null(strstr(g_out, "\n       objlog bench --apply [--url URL --brokers LIST "
                                  "[--keep]]\n"));
    static const struct {
        char *args[8];
        const char *err;
    } bad[] = {
        {{"bench", "--apply", "--count", "0", NULL}, "bad value \"0\" for --count"},
        {{"bench", "--apply", "--count", "2k", NULL}, "bad value \"2k\" for --count"},
        {{"bench", "--apply", "--buckets", "0", NULL}, "bad value \"0\" for --buckets"},
        {{"bench", "--apply", "--buckets", "x", NULL}, "bad value \"x\" for --buckets"},
        {{"bench", "--apply", "--apply-threads", "0", NULL},
         "bad value \"0\" for --apply-threads"},
        {{"bench", "--apply", "--apply-threads", "65", NULL},
         "bad value \"65\" for --apply-threads"},
        /* all 100000 PUTs and the 64 CreateBuckets on one partition */
        {{"bench", "--apply", "--partitions", "1", "--count", "100000", NULL},
         "--apply would put 100064 events ("},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want_err[256];
        snprintf(want_err, sizeof(want_err), "objlog: bench: %s", bad[i].err);
        assert_int_equal(objlog_own(10000, bad[i].args), 2);
        assert_string_equal(g_out, "");
        assert_err_prefix(want_err);
    }
}

/* bench against a running objlogd, then (mock variant only: that objlogd
 * has its own mock cluster, not the test's log) with one it starts and
 * stops. */
static void test_bench(void **state) {
    (void)state;
    assert_ok(objlog("--json", "bench", "--brokers", g_srv.bootstrap, "--count", "300",
                     "--threads", "3", "--gets", "200", NULL));
    assert_bench_json(300, 200);
    if (!testlog_is_kafka()) {
        char *argv[] = {g_srv.objlog, "--json", "bench", "--count", "200", "--threads", "2",
                        NULL};
        assert_int_equal(proc_run(argv, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err),
                                  60000), 0);
        assert_bench_json(200, 200);
    }
    char *bad[] = {g_srv.objlog, "bench", "--brokers", "127.0.0.1:1", NULL};
    assert_int_equal(proc_run(bad, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err), 10000), 2);
}

/* bench --list with small counts: every case returns what it must and
 * the figures are sane. */
static void test_bench_list(void **state) {
    (void)state;
    assert_ok(objlog("--json", "bench", "--list", "--brokers", g_srv.bootstrap, "--keys",
                     "50", "--deleted", "300", "--live", "3", "--versions", "200",
                     "--lists", "20", NULL));
    json_t *j = json_out();
    json_t *l = json_object_get(j, "list");
    assert_int_equal(json_integer_value(json_object_get(l, "requests")), 20);
    json_t *cs = json_object_get(l, "cases");
    assert_int_equal(json_array_size(cs), 4);
    static const struct {
        const char *name;
        long events, returned;
    } want[] = {{"plain", 50, 50}, {"a", 603, 3}, {"a-dm", 603, 3}, {"b", 249, 50}};
    for (size_t i = 0; i < 4; i++) {
        json_t *c = json_array_get(cs, i);
        assert_string_equal(js(c, "case"), want[i].name);
        assert_int_equal(json_integer_value(json_object_get(c, "events")), want[i].events);
        assert_int_equal(json_integer_value(json_object_get(c, "returned")),
                         want[i].returned);
        assert_int_equal(json_integer_value(json_object_get(c, "errors")), 0);
        assert_true(json_real_value(json_object_get(c, "p99_ms")) >=
                    json_real_value(json_object_get(c, "p50_ms")));
        assert_true(json_real_value(json_object_get(c, "p50_ms")) > 0);
    }
    json_decref(j);
}

/* bench --consistency-modes with small counts: the three modes in order,
 * the same GET count each, no errors, sane latencies; strong reads cost
 * ListOffsets requests when the server counts them. */
static void test_bench_consistency_modes(void **state) {
    (void)state;
    assert_ok(objlog("--json", "bench", "--consistency-modes", "--brokers", g_srv.bootstrap,
                     "--count", "200", "--gets", "150", "--threads", "2", "--write-rate",
                     "100", NULL));
    json_t *j = json_out();
    json_t *m = json_object_get(j, "consistency_modes");
    assert_int_equal(json_integer_value(json_object_get(m, "gets")), 150);
    assert_int_equal(json_integer_value(json_object_get(m, "write_rate")), 100);
    json_t *ms = json_object_get(m, "modes");
    assert_int_equal(json_array_size(ms), 3);
    static const char *const names[] = {"eventual", "token", "strong"};
    for (size_t i = 0; i < 3; i++) {
        json_t *f = json_array_get(ms, i);
        assert_string_equal(js(f, "consistency"), names[i]);
        assert_int_equal(json_integer_value(json_object_get(f, "ops")), 150);
        assert_int_equal(json_integer_value(json_object_get(f, "errors")), 0);
        assert_true(json_real_value(json_object_get(f, "p50_ms")) > 0);
        assert_true(json_real_value(json_object_get(f, "p99_ms")) >=
                    json_real_value(json_object_get(f, "p50_ms")));
        assert_true(json_real_value(json_object_get(f, "per_second")) > 0);
        /* a phase of 150 GETs can end between two background writes */
        assert_true(json_is_number(json_object_get(f, "background_writes_per_second")));
    }
    json_t *lo = json_object_get(json_array_get(ms, 2), "list_offsets_per_second");
    assert_true(json_is_null(lo) || json_real_value(lo) > 0);
    json_decref(j);
    /* readable table: one row per mode */
    assert_ok(objlog("bench", "--consistency-modes", "--brokers", g_srv.bootstrap,
                     "--count", "50", "--gets", "40", "--threads", "2", NULL));
    assert_non_null(strstr(g_out, "\nmode          GETs   seconds      GET/s   p50 ms   "
                                  "p99 ms  ListOffsets/s  writes/s\n"));
    assert_non_null(strstr(g_out, "\neventual        40 "));
    assert_non_null(strstr(g_out, "\ntoken           40 "));
    assert_non_null(strstr(g_out, "\nstrong          40 "));
}

/* ---- command lines people know ---- */

/* GET path from the group's objlogd (HTTP/1.0, raw socket): the status,
 * and the body in body. */
static int raw_get(const char *path, char *body, size_t n) {
    int port = atoi(strrchr(g_srv.url, ':') + 1);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    char req[2048], buf[OUT_SIZE];
    int rl = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: t\r\n\r\n", path);
    assert_int_equal(write(fd, req, (size_t)rl), rl);
    size_t len = 0;
    ssize_t r;
    while (len < sizeof(buf) - 1 && (r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
        len += (size_t)r;
    close(fd);
    buf[len] = '\0';
    int status = 0;
    assert_int_equal(sscanf(buf, "HTTP/1.%*d %d", &status), 1);
    const char *b = strstr(buf, "\r\n\r\n");
    snprintf(body, n, "%s", b ? b + 4 : "");
    return status;
}

static void assert_iso8601(const char *t) {
    regex_t re;
    assert_int_equal(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                                  "\\.[0-9]{3}Z$", REG_EXTENDED | REG_NOSUB), 0);
    int rc = regexec(&re, t, 0, NULL, 0);
    regfree(&re);
    if (rc != 0)
        fail_msg("not ISO 8601 UTC with ms: \"%s\"", t);
}

/* getopt_long everywhere: --opt=value, "--" before a key that starts with
 * '-', help CMD / CMD --help, a missing value or argument named. */
static void test_command_lines(void **state) {
    (void)state;
    static char usage[OUT_SIZE], want[OUT_SIZE + 128];
    assert_ok(objlog("mb", "cl-opts", "--tenant=cl-t", NULL));
    assert_ok(objlog("put", "cl-opts", "k", "--size=1536", "--etag=e1", NULL));
    assert_ok(objlog("--json", "head", "cl-opts", "k", NULL));
    json_t *j = json_out();
    assert_int_equal(json_integer_value(json_object_get(j, "size")), 1536);
    assert_string_equal(js(j, "etag"), "e1");
    json_decref(j);

    /* "--" ends the options: the key is "-weird-key" */
    assert_ok(objlog("put", "cl-opts", "--size", "3", "--", "-weird-key", NULL));
    assert_true(strncmp(g_out, "key: -weird-key\n", 16) == 0);
    assert_ok(objlog("--json", "get", "cl-opts", "--", "-weird-key", NULL));
    j = json_out();
    assert_string_equal(js(j, "key"), "-weird-key");
    assert_int_equal(json_integer_value(json_object_get(j, "size")), 3);
    json_decref(j);
    assert_int_equal(objlog("get", "cl-opts", "-weird-key", NULL), 2);
    assert_string_equal(g_err, "objlog: get: unknown option '-w'\n"
                               "(objlog help get shows the usage)\n");

    /* help: stdout, exit 0, that command's usage; the same three ways */
    assert_ok(objlog("help", "ls", NULL));
    assert_true(strncmp(g_out, "usage: objlog ls [OPTIONS] BUCKET\n", 34) == 0);
    snprintf(usage, sizeof(usage), "%s", g_out);
    assert_ok(objlog("ls", "--help", NULL));
    assert_string_equal(g_out, usage);
    assert_ok(objlog("ls", "-h", NULL));
    assert_string_equal(g_out, usage);
    assert_ok(objlog("mpu", "part", "--help", NULL));
    assert_true(strncmp(g_out, "usage: objlog mpu part ", 23) == 0);
    snprintf(usage, sizeof(usage), "%s", g_out);
    assert_ok(objlog("mpu", "help", "part", NULL));
    assert_string_equal(g_out, usage);
    assert_ok(objlog("help", "mpu", "part", NULL));
    assert_string_equal(g_out, usage);
    assert_string_equal(g_err, "");
    /* bench --help prints its usage and runs nothing (it once ran the
     * whole bench after the usage) */
    assert_ok(objlog("help", "bench", NULL));
    snprintf(usage, sizeof(usage), "%s", g_out);
    assert_ok(objlog("bench", "--help", NULL));
    assert_string_equal(g_out, usage);
    assert_string_equal(g_err, "");
    assert_ok(objlog("help", "lag", NULL)); /* lag --help too (it asked the server) */
    snprintf(usage, sizeof(usage), "%s", g_out);
    assert_ok(objlog("lag", "--help", NULL));
    assert_string_equal(g_out, usage);
    assert_string_equal(g_err, "");
    assert_ok(objlog("help", NULL));
    assert_true(strncmp(g_out, "usage: objlog [--url URL]", 25) == 0);

    /* a missing value names the option; an unknown option names itself */
    assert_int_equal(objlog("ls", "cl-opts", "--max-keys", NULL), 2);
    assert_string_equal(g_out, "");
    assert_string_equal(g_err, "objlog: ls: option '--max-keys' needs a value\n"
                               "(objlog help ls shows the usage)\n");
    assert_int_equal(objlog("versions", "cl-opts", "--frob=1", NULL), 2);
    assert_string_equal(g_err, "objlog: versions: unknown option '--frob'\n"
                               "(objlog help versions shows the usage)\n");
    /* a missing argument prints the command's usage */
    assert_ok(objlog("help", "get", NULL));
    snprintf(want, sizeof(want), "objlog: get: missing KEY\n%s", g_out);
    assert_int_equal(objlog("get", "cl-opts", NULL), 2);
    assert_string_equal(g_out, "");
    assert_string_equal(g_err, want);
    assert_ok(objlog("help", "mpu", "abort", NULL));
    snprintf(want, sizeof(want), "objlog: mpu abort: missing UPLOAD_ID\n%s", g_out);
    assert_int_equal(objlog("mpu", "abort", "cl-opts", "k", NULL), 2);
    assert_string_equal(g_err, want);
}

/* --json: every error is one JSON object on stderr, stdout stays empty;
 * results carry only the fields that mean something for the command. */
static void test_json_errors_and_fields(void **state) {
    (void)state;
    assert_ok(objlog("mb", "cl-json", NULL));
    assert_int_equal(objlog("--json", "ls", "cl-json", "--max-keys", NULL), 2);
    assert_string_equal(g_out, "");
    assert_string_equal(g_err, "{\"error\":{\"code\":\"UsageError\",\"message\":\"option "
                               "'--max-keys' needs a value\",\"command\":\"ls\"}}\n");
    assert_int_equal(objlog("get", "cl-json", "--json", NULL), 2);
    assert_string_equal(g_err, "{\"error\":{\"code\":\"UsageError\",\"message\":\"missing "
                               "KEY\",\"command\":\"get\"}}\n");
    assert_int_equal(objlog("--json", "get", "cl-json", "nope", NULL), 1);
    assert_string_equal(g_out, "");
    json_t *j = json_loads(g_err, 0, NULL);
    assert_non_null(j);
    json_t *e = json_object_get(j, "error");
    assert_string_equal(js(e, "code"), "NoSuchKey");
    assert_string_equal(js(e, "command"), "get");
    assert_string_equal(js(e, "target"), "cl-json/nope");
    assert_string_equal(js(e, "message"), "the key does not exist");
    assert_int_equal(json_integer_value(json_object_get(e, "status")), 404);
    assert_int_equal(strlen(js(e, "request_id")), 32);
    assert_int_equal(json_object_size(e), 6);
    json_decref(j);
    /* readable: still the one line */
    assert_int_equal(objlog("get", "cl-json", "nope", NULL), 1);
    assert_string_equal(g_err, "objlog: get cl-json/nope: NoSuchKey: the key does not exist\n");

    /* a put's result: no empty etag, no delete_marker */
    assert_ok(objlog("--json", "put", "cl-json", "k", "--size", "1", NULL));
    j = json_out();
    assert_string_equal(js(j, "bucket"), "cl-json");
    assert_string_equal(js(j, "key"), "k");
    assert_string_equal(js(j, "version_id"), "null");
    assert_null(json_object_get(j, "etag"));
    assert_null(json_object_get(j, "delete_marker"));
    assert_non_null(json_object_get(j, "token"));
    assert_int_equal(json_object_size(j), 5); /* + request_id */
    json_decref(j);
    /* a get's: no empty checksum or blob id, no always-false delete_marker */
    assert_ok(objlog("--json", "get", "cl-json", "k", NULL));
    j = json_out();
    assert_null(json_object_get(j, "checksum"));
    assert_null(json_object_get(j, "blob_id"));
    assert_null(json_object_get(j, "delete_marker"));
    assert_null(json_object_get(j, "user_metadata"));
    assert_iso8601(js(j, "last_modified"));
    json_decref(j);
    /* a bucket write's: the bucket, token and request id only */
    assert_ok(objlog("--json", "mb", "cl-json2", NULL));
    j = json_out();
    assert_string_equal(js(j, "bucket"), "cl-json2");
    assert_null(json_object_get(j, "version_id"));
    assert_int_equal(json_object_size(j), 3);
    json_decref(j);
}

/* One time format (ISO 8601 UTC, ms) and sizes with units in tables with
 * headers; --bytes gives exact counts. */
static void test_times_and_sizes(void **state) {
    (void)state;
    char want[4096], lm[64];
    assert_ok(objlog("mb", "cl-sizes", NULL));
    assert_ok(objlog("put", "cl-sizes", "big", "--size", "1572864", NULL));
    assert_ok(objlog("--json", "get", "cl-sizes", "big", NULL));
    json_t *j = json_out();
    snprintf(lm, sizeof(lm), "%s", js(j, "last_modified"));
    json_decref(j);
    assert_iso8601(lm);
    assert_ok(objlog("head", "cl-sizes", "big", NULL));
    snprintf(want, sizeof(want),
             "key: big\nversion_id: null\nsize: 1.5 MiB (1572864 B)\netag: \n"
             "last_modified: %s\n", lm);
    assert_string_equal(g_out, want);
    assert_ok(objlog("ls", "cl-sizes", NULL));
    snprintf(want, sizeof(want),
             "KEY     SIZE  LAST_MODIFIED             ETAG\n"
             "big  1.5 MiB  %s  \n"
             "1 object, 0 prefixes, 1.5 MiB\n", lm);
    assert_string_equal(g_out, want);
    assert_ok(objlog("ls", "--bytes", "cl-sizes", NULL));
    snprintf(want, sizeof(want),
             "KEY     SIZE  LAST_MODIFIED             ETAG\n"
             "big  1572864  %s  \n"
             "1 object, 0 prefixes, 1572864\n", lm);
    assert_string_equal(g_out, want);
    assert_ok(objlog("--bytes", "head", "cl-sizes", "big", NULL));
    assert_non_null(strstr(g_out, "\nsize: 1572864\n"));
    assert_ok(objlog("bucket", "cl-sizes", NULL));
    char created[64];
    line_value(g_out, "created", created, sizeof(created));
    assert_iso8601(created);
}

/* get, head, ls and versions take --consistency and --token. */
static void test_consistency_and_token(void **state) {
    (void)state;
    char tok[64], vid[64];
    assert_ok(objlog("mb", "cl-cons", "--versioning", "Enabled", NULL));
    assert_ok(objlog("put", "cl-cons", "k", "--size", "1", NULL));
    assert_ok(objlog("put", "cl-cons", "k", "--size", "2", NULL));
    line_value(g_out, "token", tok, sizeof(tok));
    line_value(g_out, "version_id", vid, sizeof(vid));
    /* the put's token: the get sees that write */
    assert_ok(objlog("--json", "get", "cl-cons", "k", "--consistency", "token", "--token",
                     tok, NULL));
    json_t *j = json_out();
    assert_string_equal(js(j, "version_id"), vid);
    json_decref(j);
    assert_ok(objlog("--json", "head", "cl-cons", "k", "--token", tok, NULL));
    j = json_out();
    assert_string_equal(js(j, "version_id"), vid);
    json_decref(j);
    assert_ok(objlog("--json", "ls", "cl-cons", "--consistency=token", "--token", tok, NULL));
    j = json_out();
    assert_int_equal(json_array_size(json_object_get(j, "objects")), 1);
    json_decref(j);
    assert_ok(objlog("--json", "versions", "cl-cons", "--token", tok, NULL));
    j = json_out();
    assert_int_equal(json_array_size(json_object_get(j, "versions")), 2);
    json_decref(j);
    assert_ok(objlog("ls", "cl-cons", "--consistency", "eventual", NULL));
    assert_ok(objlog("versions", "cl-cons", "--consistency", "strong", NULL));
    /* a bad mode is a usage error naming it; a bad token the server's 400 */
    static const char *const cmds[] = {"get", "head", "ls", "versions"};
    for (int i = 0; i < 4; i++) {
        int rc = i < 2 ? objlog(cmds[i], "cl-cons", "k", "--consistency", "always", NULL)
                       : objlog(cmds[i], "cl-cons", "--consistency", "always", NULL);
        assert_int_equal(rc, 2);
        char want[256];
        snprintf(want, sizeof(want), "objlog: %s: --consistency must be strong, eventual or "
                 "token, not \"always\"\n(objlog help %s shows the usage)\n", cmds[i],
                 cmds[i]);
        assert_string_equal(g_err, want);
    }
    assert_int_equal(objlog("get", "cl-cons", "k", "--consistency", "token", "--token",
                            "junk", NULL), 1);
    assert_err_prefix("objlog: get cl-cons/k: InvalidArgument: ");
}

/* ---- bench --url removes what it wrote ---- */

/* Every bucket name GET /v1/buckets returns, one a line, in order. */
static void bucket_names(char *out, size_t n) {
    static char body[OUT_SIZE];
    assert_int_equal(raw_get("/v1/buckets?max_buckets=1000", body, sizeof(body)), 200);
    json_t *j = json_loads(body, 0, NULL);
    assert_non_null(j);
    assert_false(json_is_true(json_object_get(j, "is_truncated")));
    json_t *bs = json_object_get(j, "buckets");
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(bs); i++)
        len += (size_t)snprintf(out + len, n - len, "%s\n", js(json_array_get(bs, i), "name"));
    assert_true(len < n);
    json_decref(j);
}

/* stderr ends with the bench's one cleanup line (progress may precede it). */
static void assert_removed_line(const char *what) {
    char want[512];
    snprintf(want, sizeof(want), "objlog: bench: removed %s from %s\n", what, g_srv.url);
    size_t el = strlen(g_err), wl = strlen(want);
    if (el < wl || strcmp(g_err + el - wl, want) != 0)
        fail_msg("stderr does not end with \"%s\": %s", want, g_err);
}

/* Against a running objlogd the bench removes every bucket it created,
 * with every version, delete marker and upload in it, and says how many
 * in one line; buckets it did not create stay as they were; --keep
 * leaves its bucket; SIGINT ends the run early and still cleans up. */
static void test_bench_url_cleanup(void **state) {
    (void)state;
    static char before[OUT_SIZE], after[OUT_SIZE];
    assert_ok(objlog("mb", "cl-bench-mine", NULL));
    assert_ok(objlog("put", "cl-bench-mine", "obj-00000000", "--size", "7", NULL));
    assert_ok(objlog("mb", "cl-bench-vmine", "--versioning", "Enabled", NULL));
    assert_ok(objlog("put", "cl-bench-vmine", "k", "--size", "1", NULL));
    assert_ok(objlog("rm", "cl-bench-vmine", "k", NULL));
    bucket_names(before, sizeof(before));
    assert_non_null(strstr(before, "cl-bench-mine\n"));

    assert_ok(objlog("bench", "--brokers", g_srv.bootstrap, "--count", "300", "--gets", "50",
                     "--threads", "2", NULL));
    assert_removed_line("1 bucket (300 objects, 300 versions)");
    bucket_names(after, sizeof(after));
    assert_string_equal(after, before);

    /* four buckets: 50 keys; 303 keys, 300 deleted; the same versioned
     * (300 delete markers); 50 keys, one with 200 versions */
    assert_ok(objlog("--json", "bench", "--list", "--brokers", g_srv.bootstrap, "--keys",
                     "50", "--deleted", "300", "--live", "3", "--versions", "200",
                     "--lists", "5", NULL));
    assert_removed_line("4 buckets (406 objects, 605 versions, 300 delete markers)");
    bucket_names(after, sizeof(after));
    assert_string_equal(after, before);

    /* 200 warm-up keys and 50 keys written twice (If-None-Match, If-Match) */
    assert_ok(objlog("bench", "--conditional", "--brokers", g_srv.bootstrap, "--rates", "100",
                     "--seconds", "1", NULL));
    assert_removed_line("1 bucket (250 objects, 250 versions)");
    bucket_names(after, sizeof(after));
    assert_string_equal(after, before);

    /* what the test made itself is untouched */
    assert_ok(objlog("--json", "get", "cl-bench-mine", "obj-00000000", NULL));
    json_t *j = json_out();
    assert_int_equal(json_integer_value(json_object_get(j, "size")), 7);
    json_decref(j);
    ver_row rows[4];
    assert_int_equal(versions_rows("cl-bench-vmine", rows, 4), 2);

    /* --keep: the bucket stays, with its objects, and nothing is said */
    assert_ok(objlog("bench", "--brokers", g_srv.bootstrap, "--count", "40", "--gets", "10",
                     "--threads", "2", "--keep", NULL));
    assert_null(strstr(g_err, "removed"));
    bucket_names(after, sizeof(after));
    const char *bl = after, *kept = NULL;
    int extra = 0;
    for (const char *nl; (nl = strchr(bl, '\n')) != NULL; bl = nl + 1) {
        char name[128];
        snprintf(name, sizeof(name), "%.*s\n", (int)(nl - bl), bl);
        if (!strstr(before, name)) {
            extra++;
            kept = bl;
        }
    }
    assert_int_equal(extra, 1);
    assert_int_equal(strncmp(kept, "bench-", 6), 0);
    char bucket[128];
    snprintf(bucket, sizeof(bucket), "%.*s", (int)strcspn(kept, "\n"), kept);
    assert_ok(objlog("--json", "ls", bucket, "--max-keys", "1000", NULL));
    j = json_out();
    assert_int_equal(json_array_size(json_object_get(j, "objects")), 40);
    json_decref(j);
    snprintf(before, sizeof(before), "%s", after);

    /* SIGINT in the middle (a GET phase far too long to finish): the run
     * stops, still removes its bucket, and exits 1. The shell execs objlog
     * in the foreground, so SIGINT is not ignored as in a background job. */
    char *sh[] = {"/bin/sh", "-c",
                  "(sleep 2; kill -INT $$) & exec \"$0\" --url \"$1\" bench --brokers \"$2\" "
                  "--count 300 --gets 10000000 --threads 2",
                  g_srv.objlog, g_srv.url, g_srv.bootstrap, NULL};
    assert_int_equal(proc_run(sh, NULL, g_out, sizeof(g_out), g_err, sizeof(g_err), 60000),
                     1);
    assert_non_null(strstr(g_err, "objlog: bench: interrupted; removing what the bench "
                                  "wrote (interrupt again to leave it)\n"));
    char *last = strstr(g_err, "objlog: bench: removed 1 bucket (");
    assert_non_null(last);
    assert_string_equal(strchr(last, '\n'), "\n"); /* the last line */
    bucket_names(after, sizeof(after));
    assert_string_equal(after, before);
}

/* objlog ls without a bucket: GET /v1/buckets by name, page by page. */
static void test_ls_buckets(void **state) {
    (void)state;
    static const char *const names[] = {"cl-bk-a", "cl-bk-b", "cl-bk-c", "cl-bk-d",
                                        "cl-bk-e"};
    /* created out of order: the listing sorts by name */
    for (int i = 4; i >= 0; i--)
        assert_ok(objlog("mb", names[i], i == 1 ? "--tenant=cl-bt" : "--tenant=", NULL));
    assert_ok(objlog("--json", "ls", "--prefix", "cl-bk-", "--max-buckets", "2", NULL));
    json_t *j = json_out();
    json_t *bs = json_object_get(j, "buckets");
    assert_int_equal(json_array_size(bs), 2);
    assert_string_equal(js(json_array_get(bs, 0), "name"), "cl-bk-a");
    assert_string_equal(js(json_array_get(bs, 1), "name"), "cl-bk-b");
    assert_string_equal(js(json_array_get(bs, 1), "tenant"), "cl-bt");
    assert_iso8601(js(json_array_get(bs, 0), "created"));
    assert_true(json_is_true(json_object_get(j, "is_truncated")));
    char next[256], path[512], body[OUT_SIZE];
    snprintf(next, sizeof(next), "%s", js(j, "next_continuation_token"));
    json_decref(j);
    /* --all walks every page: five buckets, two a page */
    assert_ok(objlog("--json", "ls", "--prefix=cl-bk-", "--max-buckets=2", "--all", NULL));
    j = json_out();
    bs = json_object_get(j, "buckets");
    assert_int_equal(json_array_size(bs), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(js(json_array_get(bs, i), "name"), names[i]);
    assert_false(json_is_true(json_object_get(j, "is_truncated")));
    char created[5][64];
    for (size_t i = 0; i < 5; i++)
        snprintf(created[i], 64, "%s", js(json_array_get(bs, i), "created"));
    json_decref(j);
    assert_ok(objlog("ls", "--prefix", "cl-bk-", "--max-buckets", "2", "--all", NULL));
    char want[4096];
    snprintf(want, sizeof(want),
             "NAME     TENANT  VERSIONING  CREATED\n"
             "cl-bk-a          -           %s\n"
             "cl-bk-b  cl-bt   -           %s\n"
             "cl-bk-c          -           %s\n"
             "cl-bk-d          -           %s\n"
             "cl-bk-e          -           %s\n"
             "5 buckets\n", created[0], created[1], created[2], created[3], created[4]);
    assert_string_equal(g_out, want);
    assert_ok(objlog("ls", "--prefix", "cl-bk-", "--tenant", "cl-bt", NULL));
    snprintf(want, sizeof(want), "NAME     TENANT  VERSIONING  CREATED\n"
             "cl-bk-b  cl-bt   -           %s\n1 bucket\n", created[1]);
    assert_string_equal(g_out, want);

    /* the second page over HTTP from the first page's token */
    snprintf(path, sizeof(path), "/v1/buckets?prefix=cl-bk-&max_buckets=2&"
             "continuation_token=%s", next);
    assert_int_equal(raw_get(path, body, sizeof(body)), 200);
    j = json_loads(body, 0, NULL);
    assert_string_equal(js(json_array_get(json_object_get(j, "buckets"), 0), "name"),
                        "cl-bk-c");
    json_decref(j);
    /* a tampered token, one for another prefix, a bad max_buckets: 400 */
    next[strlen(next) / 2] = next[strlen(next) / 2] == 'A' ? 'B' : 'A';
    snprintf(path, sizeof(path), "/v1/buckets?prefix=cl-bk-&continuation_token=%s", next);
    assert_int_equal(raw_get(path, body, sizeof(body)), 400);
    j = json_loads(body, 0, NULL);
    assert_string_equal(js(json_object_get(j, "error"), "code"), "InvalidArgument");
    json_decref(j);
    static const char *const bad[] = {"/v1/buckets?max_buckets=0",
                                      "/v1/buckets?max_buckets=1001",
                                      "/v1/buckets?max_buckets=x"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(raw_get(bad[i], body, sizeof(body)), 400);
        j = json_loads(body, 0, NULL);
        assert_string_equal(js(json_object_get(j, "error"), "code"), "InvalidArgument");
        assert_string_equal(js(json_object_get(j, "error"), "message"),
                            "max_buckets must be an integer in 1..1000");
        json_decref(j);
    }
    assert_int_equal(objlog("ls", "--max-buckets", "0", NULL), 2);
    assert_int_equal(objlog("ls", "--max-keys", "3", NULL), 2);
    assert_int_equal(objlog("ls", "cl-bk-a", "--tenant", "x", NULL), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lag_table_json_watch), /* first: known offsets */
        cmocka_unit_test(test_mb_put_get_head),
        cmocka_unit_test(test_odd_keys_round_trip),
        cmocka_unit_test(test_ls_columns_prefixes_and_pages),
        cmocka_unit_test(test_rm_plain_and_versioned),
        cmocka_unit_test(test_errors_name_the_problem),
        cmocka_unit_test(test_stats_usage_errors),
        cmocka_unit_test(test_versions_table),
        cmocka_unit_test(test_bucket_settings_versioning_rb),
        cmocka_unit_test(test_mpu_commands),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_bench),
        cmocka_unit_test(test_bench_list),
        cmocka_unit_test(test_bench_consistency_modes),
        cmocka_unit_test(test_bench_stats),
        cmocka_unit_test(test_bench_apply),
        cmocka_unit_test(test_command_lines),
        cmocka_unit_test(test_json_errors_and_fields),
        cmocka_unit_test(test_times_and_sizes),
        cmocka_unit_test(test_consistency_and_token),
        cmocka_unit_test(test_ls_buckets),
        cmocka_unit_test(test_bench_url_cleanup),
        cmocka_unit_test(test_ranges_ls),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
