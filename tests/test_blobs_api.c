/* test_blobs_api.c: GET /v1/blobs (query/api/blobsapi.c) and `objlog blobs
 * ls` (ops/cmd_blobs.c) against one objlogd --embedded of three
 * partitions with --api-credentials, a child of the test killed with it
 * even when it fails (proc.h). Objects written through the JSON API with
 * explicit blob ids: two keys sharing one id, an overwrite in an
 * unversioned bucket (the old id goes), an upload in progress (its parts'
 * ids count), a versioned bucket where versions are deleted by version id
 * (an id goes unless another key still names it) and a delete marker (the
 * version below still counts). Pinned down: the exact list in byte order;
 * pages of 2 chained by next_after equal it, the last page has none;
 * `after` starts after an id or between ids; every partition's position
 * at least past the last write it took; 400 for a bad limit, a long
 * after, an unknown or repeated parameter; 403 for a tenant; the CLI's
 * lines, footer, --json and its usage errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "httpc.h"
#include "proc.h"
#include "s3daemon.h"

#define NPARTS 3
#define TOK_ADMIN "tok-admin-0123456789"
#define TOK_TENANT "tok-alpha-0123456789"
/* Buckets whose names hash to partitions 1, 2 and 0 of the three (asserted
 * by write_all): an id two of them name is named in two partitions. */
#define B_PLAIN "bl-plain"
#define B_MPU "bl-three"
#define B_VER "bl-four"

static s3daemon g;
static char objlog_bin[1024], tokdir[256], creds[300];

/* The newest offset a write of ours took in each partition (-1 none). */
static long long last_write[NPARTS] = {-1, -1, -1};

/* Every id the writes leave referenced, in byte order. */
static const char *const WANT[] = {
    "Z-upper-sorts-first", "blob-a2",     "blob-c-shared", "blob-k3-new",
    "blob-part-1",         "blob-part-2", "blob-shared",
};
#define NWANT (sizeof(WANT) / sizeof(WANT[0]))

static int group_setup(void **state) {
    (void)state;
    proc_bin("ops/objlog", objlog_bin, sizeof(objlog_bin));
    if (proc_tmpdir(tokdir, sizeof(tokdir)) < 0)
        return -1;
    snprintf(creds, sizeof(creds), "%s/api-tokens", tokdir);
    FILE *f = fopen(creds, "w");
    if (!f || fputs(TOK_ADMIN " admin\n" TOK_TENANT " tenant-a\n", f) < 0 || fclose(f) != 0 ||
        chmod(creds, 0600) != 0)
        return -1;
    char *extra[] = {"--api-credentials", creds, "--partitions", "3", NULL};
    return s3daemon_start(&g, "objlogtest objlogtest-secret tenant-a\n", extra);
}

static int group_teardown(void **state) {
    (void)state;
    int rc = s3daemon_stop(&g);
    proc_rmtree(tokdir);
    return rc;
}

static json_t *json_of(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("not JSON (%s): %s", je.text, text);
    return j;
}

/* method path [body] with token: the status, the answer's JSON into *out
 * (caller decrefs). */
static long call_as(const char *token, const char *method, const char *path, const char *body,
                    json_t **out) {
    char auth[128];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    const char *hdrs[] = {auth, NULL};
    httpc_resp r;
    assert_int_equal(httpc_do(g.h, method, path, body, hdrs, &r), 0);
    *out = json_of(r.body);
    return r.status;
}

static long call(const char *method, const char *path, const char *body, json_t **out) {
    return call_as(TOK_ADMIN, method, path, body, out);
}

/* A write that must succeed: notes its position; its version id into
 * vid (may be NULL), its upload id into uid (may be NULL). Its partition. */
static int write_ok(const char *method, const char *path, const char *body, char *vid,
                    char *uid) {
    json_t *j;
    long st = call(method, path, body, &j);
    if (st != 200) {
        char *s = json_dumps(j, JSON_COMPACT);
        fail_msg("%s %s: %ld %s", method, path, st, s);
    }
    const char *tok = json_string_value(json_object_get(j, "token"));
    int p = -1;
    long long off = -1;
    assert_non_null(tok);
    assert_int_equal(sscanf(tok, "%d.%lld", &p, &off), 2);
    assert_true(p >= 0 && p < NPARTS);
    if (off > last_write[p])
        last_write[p] = off;
    if (vid)
        snprintf(vid, 64, "%s", json_string_value(json_object_get(j, "version_id")));
    if (uid)
        snprintf(uid, 64, "%s", json_string_value(json_object_get(j, "upload_id")));
    json_decref(j);
    return p;
}

static void put_obj(const char *bucket, const char *key, const char *blob, char *vid) {
    char path[200], body[200];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, key);
    if (blob)
        snprintf(body, sizeof(body), "{\"size\":10,\"etag\":\"e\",\"blob_id\":\"%s\"}", blob);
    else
        snprintf(body, sizeof(body), "{\"size\":10,\"etag\":\"e\"}");
    write_ok("PUT", path, body, vid, NULL);
}

static void del_version(const char *bucket, const char *key, const char *vid) {
    char path[300];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s%s%s", bucket, key,
             vid ? "?version_id=" : "", vid ? vid : "");
    write_ok("DELETE", path, NULL, NULL, NULL);
}

/* The writes WANT is the outcome of. */
static void write_all(void) {
    char v_a1[64], v_c[64], uid[64], path[300];
    int pp = write_ok("PUT", "/v1/buckets/" B_PLAIN, "{}", NULL, NULL);
    put_obj(B_PLAIN, "k1", "blob-shared", NULL);
    put_obj(B_PLAIN, "k2", "blob-shared", NULL);
    put_obj(B_PLAIN, "k3", "blob-k3-old", NULL);
    put_obj(B_PLAIN, "k3", "blob-k3-new", NULL); /* the old version goes */
    put_obj(B_PLAIN, "k4", NULL, NULL);          /* no blob: nothing */
    put_obj(B_PLAIN, "k5", "Z-upper-sorts-first", NULL);

    /* an upload in progress: its parts' ids count */
    int pm = write_ok("PUT", "/v1/buckets/" B_MPU, "{}", NULL, NULL);
    write_ok("POST", "/v1/buckets/" B_MPU "/uploads", "{\"key\":\"big\"}", NULL, uid);
    assert_true(uid[0] != '\0');
    for (int n = 1; n <= 2; n++) {
        char body[128];
        snprintf(path, sizeof(path), "/v1/buckets/" B_MPU "/uploads/%s/parts/%d?key=big", uid, n);
        snprintf(body, sizeof(body),
                 "{\"size\":5242880,\"etag\":\"%032d\",\"blob_id\":\"blob-part-%d\"}", n,
                 n);
        write_ok("PUT", path, body, NULL, NULL);
    }

    /* versions deleted by id: an id goes unless another key names it */
    int pv = write_ok("PUT", "/v1/buckets/" B_VER, "{\"versioning\":\"Enabled\"}", NULL, NULL);
    /* three buckets, three partitions: the listing merges them */
    assert_true(pp != pm && pm != pv && pv != pp);
    put_obj(B_VER, "a", "blob-a1", v_a1);
    put_obj(B_VER, "a", "blob-a2", NULL);
    assert_true(v_a1[0] != '\0');
    del_version(B_VER, "a", v_a1); /* blob-a1 goes */
    del_version(B_VER, "a", NULL); /* a delete marker: blob-a2 stays */
    put_obj(B_VER, "c", "blob-c-shared", v_c);
    put_obj(B_VER, "d", "blob-c-shared", NULL);
    del_version(B_VER, "c", v_c); /* d still names it */
    put_obj(B_VER, "e", "blob-shared", NULL); /* another bucket's key, same id */
}

/* GET /v1/blobs?query: 200's JSON (caller decrefs). */
static json_t *blobs_get(const char *query) {
    char path[2200];
    snprintf(path, sizeof(path), "/v1/blobs%s%s", query ? "?" : "", query ? query : "");
    json_t *j;
    long st = call("GET", path, NULL, &j);
    if (st != 200) {
        char *s = json_dumps(j, JSON_COMPACT);
        fail_msg("GET %s: %ld %s", path, st, s);
    }
    assert_true(json_is_array(json_object_get(j, "blobs")));
    assert_int_equal(json_integer_value(json_object_get(j, "partitions")), NPARTS);
    return j;
}

static void assert_ids(json_t *blobs, const char *const *want, size_t n) {
    char *s = json_dumps(blobs, JSON_COMPACT);
    if (json_array_size(blobs) != n)
        fail_msg("%zu ids, wanted %zu: %s", json_array_size(blobs), n, s);
    for (size_t i = 0; i < n; i++)
        if (strcmp(json_string_value(json_array_get(blobs, i)), want[i]) != 0)
            fail_msg("id %zu: %s, wanted %s", i, s, want[i]);
    free(s);
}

/* Each partition once, in order, applied past the newest write it took. */
static void assert_positions(json_t *j) {
    json_t *pos = json_object_get(j, "positions");
    assert_int_equal(json_array_size(pos), NPARTS);
    for (int p = 0; p < NPARTS; p++) {
        json_t *e = json_array_get(pos, (size_t)p);
        assert_int_equal(json_integer_value(json_object_get(e, "partition")), p);
        long long applied = json_integer_value(json_object_get(e, "applied"));
        if (applied <= last_write[p])
            fail_msg("partition %d: applied %lld, but a write took offset %lld", p, applied,
                     last_write[p]);
    }
}

static void assert_refused(const char *token, const char *query, long status, const char *code,
                           const char *message) {
    char path[2200];
    snprintf(path, sizeof(path), "/v1/blobs?%s", query);
    json_t *j;
    long st = call_as(token, "GET", path, NULL, &j);
    json_t *e = json_object_get(j, "error");
    const char *c = json_string_value(json_object_get(e, "code"));
    const char *m = json_string_value(json_object_get(e, "message"));
    if (st != status || !c || strcmp(c, code) != 0 || !m || strcmp(m, message) != 0)
        fail_msg("GET %s: %ld %s %s, wanted %ld %s %s", path, st, c ? c : "-", m ? m : "-",
                 status, code, message);
    json_decref(j);
}

static void test_listing(void **state) {
    (void)state;
    /* nothing written yet: an empty list, every position */
    json_t *j = blobs_get(NULL);
    assert_int_equal(json_array_size(json_object_get(j, "blobs")), 0);
    assert_null(json_object_get(j, "next_after"));
    assert_null(json_object_get(j, "node")); /* not a cluster */
    assert_positions(j);
    json_decref(j);

    write_all();
    j = blobs_get(NULL);
    assert_ids(json_object_get(j, "blobs"), WANT, NWANT);
    assert_null(json_object_get(j, "next_after"));
    assert_positions(j);
    json_decref(j);

    /* limit = the count: one page, no next_after */
    j = blobs_get("limit=7");
    assert_ids(json_object_get(j, "blobs"), WANT, NWANT);
    assert_null(json_object_get(j, "next_after"));
    json_decref(j);
}

static void test_pages(void **state) {
    (void)state;
    const char *got[NWANT + 1];
    json_t *pages[NWANT + 1];
    size_t n = 0, np = 0;
    char query[1200] = "limit=2";
    for (;;) {
        assert_true(np <= NWANT);
        json_t *j = pages[np++] = blobs_get(query);
        json_t *blobs = json_object_get(j, "blobs"), *v;
        size_t i;
        assert_true(json_array_size(blobs) >= 1 && json_array_size(blobs) <= 2);
        json_array_foreach(blobs, i, v) {
            assert_true(n < NWANT);
            got[n++] = json_string_value(v);
        }
        assert_positions(j);
        json_t *next = json_object_get(j, "next_after");
        if (!next)
            break;
        /* next_after is the page's last id */
        assert_string_equal(json_string_value(next),
                            json_string_value(json_array_get(blobs, json_array_size(blobs) - 1)));
        char *e = httpc_escape(g.h, json_string_value(next), json_string_length(next));
        snprintf(query, sizeof(query), "limit=2&after=%s", e);
        free(e);
    }
    assert_int_equal(np, 4); /* 2 + 2 + 2 + 1 */
    assert_int_equal(n, NWANT);
    for (size_t i = 0; i < NWANT; i++)
        assert_string_equal(got[i], WANT[i]);
    for (size_t i = 0; i < np; i++)
        json_decref(pages[i]);

    /* after an id, and between two ids */
    json_t *j = blobs_get("after=blob-c-shared");
    assert_ids(json_object_get(j, "blobs"), WANT + 3, NWANT - 3);
    json_decref(j);
    j = blobs_get("after=blob-c&limit=1");
    assert_ids(json_object_get(j, "blobs"), WANT + 2, 1);
    assert_string_equal(json_string_value(json_object_get(j, "next_after")), "blob-c-shared");
    json_decref(j);
    j = blobs_get("after=");
    assert_ids(json_object_get(j, "blobs"), WANT, NWANT);
    json_decref(j);
    j = blobs_get("after=zzz");
    assert_int_equal(json_array_size(json_object_get(j, "blobs")), 0);
    assert_null(json_object_get(j, "next_after"));
    json_decref(j);
}

static void test_refusals(void **state) {
    (void)state;
    const char *lim = "limit must be an integer in 1..10000";
    assert_refused(TOK_ADMIN, "limit=0", 400, "InvalidArgument", lim);
    assert_refused(TOK_ADMIN, "limit=abc", 400, "InvalidArgument", lim);
    assert_refused(TOK_ADMIN, "limit=10001", 400, "InvalidArgument", lim);
    assert_refused(TOK_ADMIN, "limit=", 400, "InvalidArgument", lim);
    assert_refused(TOK_ADMIN, "limit=-1", 400, "InvalidArgument", lim);
    assert_refused(TOK_ADMIN, "max=5", 400, "InvalidArgument",
                   "unknown parameter max (this route takes after and limit)");
    assert_refused(TOK_ADMIN, "limit=2&limit=3", 400, "InvalidArgument",
                   "parameter limit given twice");
    char q[1200] = "after=";
    memset(q + 6, 'x', 1025);
    q[6 + 1025] = '\0';
    assert_refused(TOK_ADMIN, q, 400, "InvalidArgument",
                   "after is 1025 bytes; a blob id is at most 1024");
    q[6 + 1024] = '\0'; /* 1024 bytes: taken */
    json_decref(blobs_get(q));
    /* a tenant's token: the admin's route */
    assert_refused(TOK_TENANT, "limit=2", 403, "AccessDenied", "this route needs the admin role");
    json_t *j;
    assert_int_equal(call("POST", "/v1/blobs", "{}", &j), 405);
    json_decref(j);
}

/* objlog ARGS... --url JSON_URL --token TOKEN: exit code, stdout into out,
 * stderr into err. */
static int run_cli(const char *token, char *const *args, char *out, size_t on, char *err,
                   size_t en) {
    char *argv[20] = {objlog_bin};
    int i = 0;
    for (; args[i]; i++)
        argv[i + 1] = args[i];
    argv[++i] = "--url";
    argv[++i] = g.json;
    argv[++i] = "--token";
    argv[++i] = (char *)token;
    argv[++i] = NULL;
    return proc_run(argv, NULL, out, on, err, en, 30000);
}

/* The footer's positions, " 0:N 1:N 2:N", as /v1/blobs tells them now
 * (nothing is written meanwhile). */
static void positions_text(char *out, size_t n) {
    json_t *j = blobs_get("limit=1");
    size_t used = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(j, "positions"), i, e)
        used += (size_t)snprintf(out + used, n - used, " %lld:%lld",
                                 (long long)json_integer_value(json_object_get(e, "partition")),
                                 (long long)json_integer_value(json_object_get(e, "applied")));
    json_decref(j);
}

static void test_cli(void **state) {
    (void)state;
    static char out[16384], err[4096], want[4096], pos[256];
    positions_text(pos, sizeof(pos));
    size_t used = 0;
    for (size_t i = 0; i < NWANT; i++)
        used += (size_t)snprintf(want + used, sizeof(want) - used, "%s\n", WANT[i]);
    snprintf(want + used, sizeof(want) - used, "%zu blob ids (partitions:%s)\n", NWANT, pos);

    char *all[] = {"blobs", "ls", "--all", "--limit", "2", NULL};
    assert_int_equal(run_cli(TOK_ADMIN, all, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, want);
    assert_string_equal(err, "");
    char *all_default[] = {"blobs", "ls", "--all", NULL};
    assert_int_equal(run_cli(TOK_ADMIN, all_default, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, want);

    /* one page: the footer says where the rest starts */
    char *page[] = {"blobs", "ls", "--limit=2", "--after", "blob-a2", NULL};
    assert_int_equal(run_cli(TOK_ADMIN, page, out, sizeof(out), err, sizeof(err)), 0);
    snprintf(want, sizeof(want),
             "blob-c-shared\nblob-k3-new\n2 blob ids (partitions:%s); more after blob-k3-new "
             "(--after it, or --all)\n",
             pos);
    assert_string_equal(out, want);

    /* --json --all: the pages merged, no next_after */
    char *json[] = {"blobs", "ls", "--all", "--limit", "3", "--json", NULL};
    assert_int_equal(run_cli(TOK_ADMIN, json, out, sizeof(out), err, sizeof(err)), 0);
    json_t *j = json_of(out);
    assert_ids(json_object_get(j, "blobs"), WANT, NWANT);
    assert_null(json_object_get(j, "next_after"));
    assert_int_equal(json_array_size(json_object_get(j, "positions")), NPARTS);
    json_decref(j);

    /* usage errors: named, exit 2, nothing on stdout */
    char *zero[] = {"blobs", "ls", "--limit", "0", NULL};
    assert_int_equal(run_cli(TOK_ADMIN, zero, out, sizeof(out), err, sizeof(err)), 2);
    assert_string_equal(out, "");
    assert_non_null(strstr(err, "--limit must be 1 to 10000, not \"0\""));
    char *abc[] = {"blobs", "ls", "--limit=abc", NULL};
    assert_int_equal(run_cli(TOK_ADMIN, abc, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "--limit must be 1 to 10000, not \"abc\""));
    char *extra[] = {"blobs", "ls", "bucket", NULL};
    assert_int_equal(run_cli(TOK_ADMIN, extra, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "unexpected argument \"bucket\""));

    /* the server's refusal: exit 1, one line naming its code */
    char *plain[] = {"blobs", "ls", NULL};
    assert_int_equal(run_cli(TOK_TENANT, plain, out, sizeof(out), err, sizeof(err)), 1);
    assert_string_equal(out, "");
    snprintf(want, sizeof(want), "objlog: blobs ls %s: AccessDenied: this route needs the "
             "admin role\n", g.json);
    assert_string_equal(err, want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_pages),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
