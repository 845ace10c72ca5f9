/* cmd_object.c: the object commands of objlog: put, get, head, rm, ls and
 * versions (docs/ARCHITECTURE.md, "HTTP routes as built"). Reads take
 * --consistency strong|eventual|token and --token (the server's
 * consistency= and token= parameters: docs/ARCHITECTURE.md, "Reads").
 * Invariant: --json prints only the fields that mean something for the
 * command (no empty strings, no flags that are always false there); the
 * readable form prints the same facts, sizes with units, times as the
 * server's ISO 8601 UTC. */
#define _GNU_SOURCE
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_META 64
#define MAX_TAGS 10

enum {
    O_SIZE = CLI_OPT_OWN, O_ETAG, O_CTYPE, O_BLOB, O_SCLASS, O_CHECKSUM, O_META, O_TAG,
    O_IF_NONE_MATCH, O_IF_MATCH, O_REQUEST_ID, O_VERSION_ID, O_CONSISTENCY, O_TOKEN, O_PREFIX,
    O_DELIMITER, O_START_AFTER, O_MAX_KEYS, O_ALL, O_KEY_MARKER, O_VID_MARKER,
    O_TENANT, O_MAX_BUCKETS
};

static const char *const names_bk[] = {"BUCKET", "KEY"};

/* "b/k" for messages. */
static void target_of(char *out, size_t n, const char *bucket, const char *key) {
    snprintf(out, n, "%s/%s", bucket, key);
}

/* A sizes' "name: value" line: units, and the exact count past 1 KiB. */
static void size_line(cli *c, const char *name, unsigned long long n) {
    char s[64];
    cli_size(c, n, s, sizeof(s));
    if (c->bytes || n < 1024)
        printf("%s: %s\n", name, s);
    else
        printf("%s: %s (%llu B)\n", name, s, n);
}

/* ---- put ---- */

typedef struct put_args {
    const char *size, *etag, *ctype, *blob, *sclass, *checksum, *if_match, *request_id;
    const char *meta[MAX_META];
    const char *tags[MAX_TAGS];
    int nmeta, ntags, if_none_match;
} put_args;

/* NAME=VALUE arguments of flag into a new JSON object set as b.field;
 * -1 after a usage error. */
static int put_pairs(cli *c, json_t *b, const char *field, const char *flag,
                     const char *const *args, int n, int *rc) {
    json_t *o = json_object();
    json_object_set_new(b, field, o);
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(args[i], '=');
        if (!eq || eq == args[i]) {
            *rc = cli_usage_error(c, "--%s takes name=value, not \"%s\"", flag, args[i]);
            return -1;
        }
        /* jansson refuses a name or value that is not UTF-8: say so
         * rather than drop the pair. */
        char *name = strndup(args[i], (size_t)(eq - args[i]));
        int bad = !name || json_object_set_new(o, name, json_string(eq + 1)) < 0;
        free(name);
        if (bad) {
            *rc = cli_usage_error(c, "--%s \"%s\": name and value must be UTF-8", flag,
                                  args[i]);
            return -1;
        }
    }
    return 0;
}

static json_t *put_body(cli *c, const put_args *a, int *rc) {
    unsigned long long n = 0;
    *rc = 0;
    if (a->size && cli_parse_u64(a->size, &n) < 0) {
        *rc = cli_usage_error(c, "--size must be a byte count, not \"%s\"", a->size);
        return NULL;
    }
    json_t *b = json_pack("{s:I}", "size", (json_int_t)n);
    const char *names[] = {"etag", "content_type", "blob_id", "storage_class", "checksum"};
    const char *vals[] = {a->etag, a->ctype, a->blob, a->sclass, a->checksum};
    for (int i = 0; i < 5; i++)
        if (vals[i])
            json_object_set_new(b, names[i], json_string(vals[i]));
    if (put_pairs(c, b, "user_metadata", "meta", a->meta, a->nmeta, rc) < 0 ||
        put_pairs(c, b, "tags", "tag", a->tags, a->ntags, rc) < 0) {
        json_decref(b);
        return NULL;
    }
    return b;
}

static const char put_usage[] =
    "usage: objlog put [OPTIONS] BUCKET KEY\n"
    "Writes an object's metadata (the data lives elsewhere).\n"
    "  --size N            bytes (default 0)\n"
    "  --etag E  --content-type T  --blob-id ID  --storage-class C  --checksum C\n"
    "  --meta NAME=VALUE   user metadata (repeatable)\n"
    "  --tag NAME=VALUE    object tag (repeatable, at most 10)\n"
    "  --if-none-match     only if the key does not exist\n"
    "  --if-match ETAG     only if the current version has this ETag\n"
    "  --request-id HEX    the request id (32 hex digits) of a write whose outcome\n"
    "                      was unknown: sent again, it is the same write, once\n"
    "Prints key, version_id, etag (when given) and token (for --token on a\n"
    "later read).\n";

static int cmd_put(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"size", required_argument, NULL, O_SIZE},
        {"etag", required_argument, NULL, O_ETAG},
        {"content-type", required_argument, NULL, O_CTYPE},
        {"blob-id", required_argument, NULL, O_BLOB},
        {"storage-class", required_argument, NULL, O_SCLASS},
        {"checksum", required_argument, NULL, O_CHECKSUM},
        {"meta", required_argument, NULL, O_META},
        {"tag", required_argument, NULL, O_TAG},
        {"if-none-match", no_argument, NULL, O_IF_NONE_MATCH},
        {"if-match", required_argument, NULL, O_IF_MATCH},
        {"request-id", required_argument, NULL, O_REQUEST_ID},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    put_args a = {0};
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_SIZE: a.size = optarg; break;
        case O_ETAG: a.etag = optarg; break;
        case O_CTYPE: a.ctype = optarg; break;
        case O_BLOB: a.blob = optarg; break;
        case O_SCLASS: a.sclass = optarg; break;
        case O_CHECKSUM: a.checksum = optarg; break;
        case O_IF_NONE_MATCH: a.if_none_match = 1; break;
        case O_IF_MATCH: a.if_match = optarg; break;
        case O_REQUEST_ID: a.request_id = optarg; break;
        case O_META:
            if (a.nmeta >= MAX_META)
                return cli_usage_error(c, "at most %d --meta", MAX_META);
            a.meta[a.nmeta++] = optarg;
            break;
        case O_TAG:
            if (a.ntags >= MAX_TAGS)
                return cli_usage_error(c, "at most %d --tag (S3's limit)", MAX_TAGS);
            a.tags[a.ntags++] = optarg;
            break;
        }
    }
    const char *pos[2];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 2, 2, names_bk, &rc) < 0)
        return rc;
    if (a.request_id && !cli_request_id_ok(a.request_id))
        return cli_usage_error(c, "--request-id %s: a request id is 32 hex digits",
                               a.request_id);
    json_t *b = put_body(c, &a, &rc);
    if (!b)
        return rc;
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char im[256], rid[64], target[2048];
    const char *hdrs[4] = {NULL, NULL, NULL, NULL};
    int nh = 0;
    if (a.if_none_match)
        hdrs[nh++] = "If-None-Match: *";
    if (a.if_match) {
        snprintf(im, sizeof(im), "If-Match: %s", a.if_match);
        hdrs[nh++] = im;
    }
    if (a.request_id) {
        snprintf(rid, sizeof(rid), "X-Objlog-Request-Id: %s", a.request_id);
        hdrs[nh++] = rid;
    }
    target_of(target, sizeof(target), pos[0], pos[1]);
    char *url = cli_path(c, pos[0], pos[1]);
    cli_resp r;
    rc = cli_request(c, target, "PUT", url, body, hdrs, &r);
    free(url);
    free(body);
    if (rc)
        return rc;
    json_t *j = cli_parse_json(c, target, &r, &rc);
    cli_resp_free(&r);
    if (!j)
        return rc;
    if (c->json) {
        static const char *const keep[] = {"version_id", "etag", "token", "request_id",
                                           NULL};
        json_t *out = json_pack("{s:s, s:s}", "bucket", pos[0], "key", pos[1]);
        cli_pick(out, j, keep);
        cli_print_json(out);
    } else {
        static const char *const fields[] = {"version_id", "etag", "token", NULL};
        printf("key: %s\n", pos[1]);
        cli_print_fields(j, fields);
    }
    json_decref(j);
    return 0;
}

/* ---- get, head ---- */

typedef struct read_args {
    const char *version_id, *consistency, *token;
} read_args;

/* The URL of object b/k with the read's parameters. */
static char *object_url(cli *c, const char *bucket, const char *key, const read_args *a) {
    char *url = cli_path(c, bucket, key);
    if (url && (cli_query_add(c, &url, "version_id", a->version_id) < 0 ||
                cli_query_add(c, &url, "consistency", a->consistency) < 0 ||
                cli_query_add(c, &url, "token", a->token) < 0)) {
        free(url);
        url = NULL;
    }
    return url;
}

static void print_object(cli *c, json_t *j) {
    static const char *const lines[] = {"bucket", "key", "version_id", NULL, "etag",
                                        "content_type", "blob_id", "storage_class",
                                        "checksum", "cache_control", "content_disposition",
                                        "content_encoding", "content_language", "expires",
                                        "last_modified"};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (!lines[i]) {
            size_line(c, "size", cli_ju64(j, "size"));
            continue;
        }
        const char *v = cli_jstr(j, lines[i]);
        if (*v)
            printf("%s: %s\n", lines[i], v);
    }
    const char *name;
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(j, "parts"), i, v)
        printf("part.%zu: %s %llu\n", i + 1, cli_jstr(v, "blob_id"),
               (unsigned long long)cli_ju64(v, "size"));
    json_object_foreach(json_object_get(j, "user_metadata"), name, v)
        printf("meta.%s: %s\n", name, json_string_value(v) ? json_string_value(v) : "");
    json_object_foreach(json_object_get(j, "tags"), name, v)
        printf("tag.%s: %s\n", name, json_string_value(v) ? json_string_value(v) : "");
}

/* The fields of a GET answer that mean something (a GET never answers a
 * delete marker: that is a 404). */
static json_t *object_json(json_t *j) {
    static const char *const keep[] = {"bucket", "key", "version_id", "size", "etag",
                                       "content_type", "blob_id", "storage_class",
                                       "checksum", "cache_control", "content_disposition",
                                       "content_encoding", "content_language", "expires",
                                       "last_modified", NULL};
    json_t *o = json_object();
    cli_pick(o, j, keep);
    json_t *um = json_object_get(j, "user_metadata");
    if (json_object_size(um))
        json_object_set(o, "user_metadata", um);
    json_t *tags = json_object_get(j, "tags");
    if (json_object_size(tags))
        json_object_set(o, "tags", tags);
    json_t *parts = json_object_get(j, "parts");
    if (json_array_size(parts))
        json_object_set(o, "parts", parts);
    return o;
}

static int get_or_head(cli *c, int argc, char **argv, int head) {
    static const struct option opts[] = {
        {"version-id", required_argument, NULL, O_VERSION_ID},
        CLI_READ_OPTIONS(O_CONSISTENCY, O_TOKEN)};
    read_args a = {0};
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_VERSION_ID: a.version_id = optarg; break;
        case O_CONSISTENCY: a.consistency = optarg; break;
        case O_TOKEN: a.token = optarg; break;
        }
    }
    const char *pos[2];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 2, 2, names_bk, &rc) < 0 ||
        (rc = cli_check_consistency(c, a.consistency)))
        return rc;
    char target[2048];
    target_of(target, sizeof(target), pos[0], pos[1]);
    char *url = object_url(c, pos[0], pos[1], &a);
    cli_resp r;
    rc = cli_request(c, target, head ? "HEAD" : "GET", url, NULL, NULL, &r);
    free(url);
    if (rc)
        return rc;
    if (head) {
        unsigned long long size = strtoull(r.size, NULL, 10);
        if (c->json) {
            cli_print_json(json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "bucket", pos[0],
                                     "key", pos[1], "version_id", r.version_id, "etag",
                                     r.etag, "size", (json_int_t)size, "last_modified",
                                     r.last_modified));
        } else {
            printf("key: %s\nversion_id: %s\n", pos[1], r.version_id);
            size_line(c, "size", size);
            printf("etag: %s\nlast_modified: %s\n", r.etag, r.last_modified);
        }
        cli_resp_free(&r);
        return 0;
    }
    json_t *j = cli_parse_json(c, target, &r, &rc);
    cli_resp_free(&r);
    if (!j)
        return rc;
    if (c->json)
        cli_print_json(object_json(j));
    else
        print_object(c, j);
    json_decref(j);
    return 0;
}

static const char get_usage[] =
    "usage: objlog get [--version-id V] [--consistency strong|eventual|token]\n"
    "                  [--token TOKEN] [--bytes] BUCKET KEY\n"
    "Prints an object's metadata (the latest version, or V).\n"
    "  --consistency  strong (default): everything acknowledged before;\n"
    "                 token: at least the write --token names (put prints it);\n"
    "                 eventual: whatever this objlogd has applied\n";

static const char head_usage[] =
    "usage: objlog head [--version-id V] [--consistency strong|eventual|token]\n"
    "                   [--token TOKEN] [--bytes] BUCKET KEY\n"
    "Prints an object's version id, size, ETag and time (HEAD).\n";

static int cmd_get(cli *c, int argc, char **argv) { return get_or_head(c, argc, argv, 0); }
static int cmd_head(cli *c, int argc, char **argv) { return get_or_head(c, argc, argv, 1); }

/* ---- rm ---- */

static const char rm_usage[] =
    "usage: objlog rm [--version-id V] [--request-id HEX] BUCKET KEY\n"
    "Deletes the key (a delete marker when versioned) or version V.\n"
    "  --request-id HEX    the request id of a delete whose outcome was unknown\n";

static int cmd_rm(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"version-id", required_argument, NULL, O_VERSION_ID},
        {"request-id", required_argument, NULL, O_REQUEST_ID},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    const char *version_id = NULL, *request_id = NULL;
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        if (o == O_VERSION_ID)
            version_id = optarg;
        else if (o == O_REQUEST_ID)
            request_id = optarg;
    }
    const char *pos[2];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 2, 2, names_bk, &rc) < 0)
        return rc;
    if (request_id && !cli_request_id_ok(request_id))
        return cli_usage_error(c, "--request-id %s: a request id is 32 hex digits",
                               request_id);
    char hrid[64];
    const char *hdrs[2] = {NULL, NULL};
    if (request_id) {
        snprintf(hrid, sizeof(hrid), "X-Objlog-Request-Id: %s", request_id);
        hdrs[0] = hrid;
    }
    char target[2048];
    target_of(target, sizeof(target), pos[0], pos[1]);
    read_args a = {.version_id = version_id};
    char *url = object_url(c, pos[0], pos[1], &a);
    cli_resp r;
    rc = cli_request(c, target, "DELETE", url, NULL, hdrs, &r);
    free(url);
    if (rc)
        return rc;
    json_t *j = cli_parse_json(c, target, &r, &rc);
    cli_resp_free(&r);
    if (!j)
        return rc;
    int marker = json_is_true(json_object_get(j, "delete_marker"));
    if (c->json) {
        static const char *const keep[] = {"version_id", "token", "request_id", NULL};
        json_t *out = json_pack("{s:s, s:s, s:b}", "bucket", pos[0], "key", pos[1],
                                "delete_marker", marker);
        cli_pick(out, j, keep);
        cli_print_json(out);
    } else if (version_id) {
        printf("delete: %s (version %s)\n", target, version_id);
    } else if (marker) {
        printf("delete: %s (delete marker %s)\n", target, cli_jstr(j, "version_id"));
    } else {
        printf("delete: %s\n", target);
    }
    json_decref(j);
    return 0;
}

/* ---- ls ---- */

typedef struct ls_args {
    const char *prefix, *delimiter, *start_after, *max_keys, *consistency, *token;
    const char *tenant, *max_buckets;
    int all;
} ls_args;

static void ls_print(cli *c, json_t *j) {
    static const char *const head[] = {"KEY", "SIZE", "LAST_MODIFIED", "ETAG"};
    static const int right[] = {0, 1, 0, 0};
    cli_table t = {.ncols = 4, .head = head, .right = right};
    json_t *objs = json_object_get(j, "objects");
    size_t i;
    json_t *v;
    unsigned long long total = 0;
    json_array_foreach(objs, i, v) {
        char size[32];
        cli_size(c, cli_ju64(v, "size"), size, sizeof(size));
        total += cli_ju64(v, "size");
        const char *row[] = {cli_jstr(v, "key"), size, cli_jstr(v, "last_modified"),
                             cli_jstr(v, "etag")};
        cli_table_add(&t, row);
    }
    cli_print_prefixes(j);
    cli_table_print_free(&t);
    size_t no = json_array_size(objs);
    size_t np = json_array_size(json_object_get(j, "common_prefixes"));
    char tot[32];
    cli_size(c, total, tot, sizeof(tot));
    printf("%zu %s, %zu %s, %s%s\n", no, cli_plural(no, "object", "objects"), np,
           cli_plural(np, "prefix", "prefixes"), tot, cli_truncated_note(j));
}

static int ls_objects(cli *c, const char *bucket, const ls_args *a) {
    if (a->tenant || a->max_buckets)
        return cli_usage_error(c, "--tenant and --max-buckets list buckets: drop BUCKET");
    int rc = cli_check_range(c, "--max-keys", a->max_keys, 0, 1000);
    if (rc)
        return rc;
    cli_list_req q = {.target = bucket, .all = a->all};
    cli_list_param(&q, "prefix", a->prefix);
    cli_list_param(&q, "delimiter", a->delimiter);
    cli_list_param(&q, "start_after", a->start_after);
    cli_list_param(&q, "max_keys", a->max_keys);
    cli_list_token_params(&q, a->consistency, a->token);
    static const cli_page_spec sp = {"objects", {"next_continuation_token", NULL},
                                     {"continuation_token", NULL}};
    json_t *j = cli_list_get(c, &q, cli_bucket_url(c, bucket, "/objects"), &sp, &rc);
    if (!j)
        return rc;
    size_t kc = json_array_size(json_object_get(j, "objects")) +
                json_array_size(json_object_get(j, "common_prefixes"));
    json_object_set_new(j, "key_count", json_integer((json_int_t)kc));
    return cli_list_output(c, j, ls_print);
}

static const char ls_usage[] =
    "usage: objlog ls [OPTIONS] BUCKET\n"
    "       objlog ls [--prefix P] [--tenant T] [--max-buckets N] [--all]\n"
    "Lists a bucket's objects (KEY SIZE LAST_MODIFIED ETAG) or, without a\n"
    "bucket, the buckets (NAME TENANT VERSIONING CREATED), by name.\n"
    "  --prefix P  --delimiter D  --start-after K\n"
    "  --max-keys N       objects a page (0..1000, default 1000)\n"
    "  --max-buckets N    buckets a page (1..1000, default 1000)\n"
    "  --tenant T         only this tenant's buckets\n"
    "  --all              every page (follows continuation tokens)\n"
    "  --consistency strong|eventual|token  --token TOKEN  (see objlog help get)\n"
    "  --bytes            sizes as exact byte counts\n";

static int cmd_ls(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"prefix", required_argument, NULL, O_PREFIX},
        {"delimiter", required_argument, NULL, O_DELIMITER},
        {"start-after", required_argument, NULL, O_START_AFTER},
        {"max-keys", required_argument, NULL, O_MAX_KEYS},
        {"all", no_argument, NULL, O_ALL},
        {"consistency", required_argument, NULL, O_CONSISTENCY},
        {"token", required_argument, NULL, O_TOKEN},
        {"tenant", required_argument, NULL, O_TENANT},
        {"max-buckets", required_argument, NULL, O_MAX_BUCKETS},
        CLI_BYTES_OPTION, CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    ls_args a = {0};
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_PREFIX: a.prefix = optarg; break;
        case O_DELIMITER: a.delimiter = optarg; break;
        case O_START_AFTER: a.start_after = optarg; break;
        case O_MAX_KEYS: a.max_keys = optarg; break;
        case O_ALL: a.all = 1; break;
        case O_CONSISTENCY: a.consistency = optarg; break;
        case O_TOKEN: a.token = optarg; break;
        case O_TENANT: a.tenant = optarg; break;
        case O_MAX_BUCKETS: a.max_buckets = optarg; break;
        }
    }
    const char *pos[1] = {NULL};
    int n;
    if (o == CLI_STOP ||
        (n = cli_positionals(c, argc, argv, pos, 0, 1, names_bk, &rc)) < 0 ||
        (rc = cli_check_consistency(c, a.consistency)))
        return rc;
    if (n == 1)
        return ls_objects(c, pos[0], &a);
    if (a.delimiter || a.start_after || a.max_keys)
        return cli_usage_error(c, "--delimiter, --start-after and --max-keys list "
                                  "objects: give a BUCKET");
    return cli_list_buckets(c, a.prefix, a.tenant, a.max_buckets, a.consistency, a.token,
                            a.all);
}

/* ---- versions ---- */

static void versions_print(cli *c, json_t *j) {
    static const char *const head[] = {"KEY", "VERSION_ID", "LATEST",
                                       "DELETE_MARKER", "SIZE", "LAST_MODIFIED"};
    static const int right[] = {0, 0, 0, 0, 1, 0};
    cli_table t = {.ncols = 6, .head = head, .right = right};
    size_t i, markers = 0;
    json_t *v;
    json_t *vers = json_object_get(j, "versions");
    json_array_foreach(vers, i, v) {
        int dm = json_is_true(json_object_get(v, "delete_marker"));
        char size[32];
        cli_size(c, cli_ju64(v, "size"), size, sizeof(size));
        const char *row[] = {cli_jstr(v, "key"), cli_jstr(v, "version_id"),
                             json_is_true(json_object_get(v, "is_latest")) ? "yes" : "no",
                             dm ? "yes" : "no", dm ? "-" : size,
                             cli_jstr(v, "last_modified")};
        markers += (size_t)dm;
        cli_table_add(&t, row);
    }
    cli_print_prefixes(j);
    cli_table_print_free(&t);
    size_t nv = json_array_size(vers);
    size_t np = json_array_size(json_object_get(j, "common_prefixes"));
    printf("%zu %s (%zu %s), %zu %s%s\n", nv, cli_plural(nv, "version", "versions"),
           markers, cli_plural(markers, "delete marker", "delete markers"), np,
           cli_plural(np, "prefix", "prefixes"), cli_truncated_note(j));
}

static const char versions_usage[] =
    "usage: objlog versions [OPTIONS] BUCKET\n"
    "Lists every version and delete marker, newest first within a key.\n"
    "  --prefix P  --delimiter D  --key-marker K  --version-id-marker V\n"
    "  --max-keys N       versions a page (0..1000)\n"
    "  --all              every page\n"
    "  --consistency strong|eventual|token  --token TOKEN  (see objlog help get)\n"
    "  --bytes            sizes as exact byte counts\n";

static int cmd_versions(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"prefix", required_argument, NULL, O_PREFIX},
        {"delimiter", required_argument, NULL, O_DELIMITER},
        {"key-marker", required_argument, NULL, O_KEY_MARKER},
        {"version-id-marker", required_argument, NULL, O_VID_MARKER},
        {"max-keys", required_argument, NULL, O_MAX_KEYS},
        {"all", no_argument, NULL, O_ALL},
        CLI_READ_OPTIONS(O_CONSISTENCY, O_TOKEN)};
    const char *prefix = NULL, *delim = NULL, *km = NULL, *vm = NULL, *max = NULL,
               *cons = NULL, *token = NULL;
    int all = 0, rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_PREFIX: prefix = optarg; break;
        case O_DELIMITER: delim = optarg; break;
        case O_KEY_MARKER: km = optarg; break;
        case O_VID_MARKER: vm = optarg; break;
        case O_MAX_KEYS: max = optarg; break;
        case O_ALL: all = 1; break;
        case O_CONSISTENCY: cons = optarg; break;
        case O_TOKEN: token = optarg; break;
        }
    }
    const char *pos[1];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 1, 1, names_bk, &rc) < 0 ||
        (rc = cli_check_consistency(c, cons)) ||
        (rc = cli_check_range(c, "--max-keys", max, 0, 1000)))
        return rc;
    cli_list_req q = {.target = pos[0], .all = all};
    cli_list_param(&q, "prefix", prefix);
    cli_list_param(&q, "delimiter", delim);
    cli_list_param(&q, "key_marker", km);
    cli_list_param(&q, "version_id_marker", vm);
    cli_list_param(&q, "max_keys", max);
    cli_list_param(&q, "consistency", cons);
    cli_list_param(&q, "token", token);
    static const cli_page_spec sp = {"versions",
                                     {"next_key_marker", "next_version_id_marker"},
                                     {"key_marker", "version_id_marker"}};
    return cli_list_run(c, &q, cli_bucket_url(c, pos[0], "/versions"), &sp, versions_print,
                        &rc);
}

const cli_cmd cli_object_cmds[] = {
    {"put", "put", cmd_put, put_usage, NULL},
    {"get", "get", cmd_get, get_usage, NULL},
    {"head", "head", cmd_head, head_usage, NULL},
    {"rm", "rm", cmd_rm, rm_usage, NULL},
    {"ls", "ls", cmd_ls, ls_usage, NULL},
    {"versions", "versions", cmd_versions, versions_usage, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
