/* objlog.c: the `objlog` command-line client of the objlogd HTTP API
 * (DESIGN §8): mb, rb, bucket, versioning, put, get, head, ls, versions,
 * rm, mpu (multipart upload metadata), stats (usage counters, issue 6),
 * usage (objects and bytes per common prefix, every page walked, issue 6),
 * lag (ops/lag.c), topics (ops/topics.c) and bench.
 * Readable output by default; --json prints the server's JSON as it
 * came. Invariant: a command prints its result on stdout only when the request succeeded;
 * every failure is one line on stderr naming the command, the target and
 * the S3 error code ("objlog: get photos/a.jpg: NoSuchKey: ..."), exit 1;
 * usage errors exit 2. */
#define _GNU_SOURCE
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "cli.h"
#include "objlog_producer.h"

#define DEFAULT_URL "http://127.0.0.1:8080"
#define MAX_META 64

typedef struct cli {
    const char *url;
    int json;
    CURL *h;
    const char *cmd;
} cli;

static void usage(FILE *f) {
    fprintf(f,
        "usage: objlog [--url URL] [--json] [--version] COMMAND ...\n"
        "  mb BUCKET [--tenant T] [--versioning Enabled|Suspended] [--max-versions N]\n"
        "  rb BUCKET\n"
        "  bucket BUCKET                      (settings)\n"
        "  versioning BUCKET Enabled|Suspended\n"
        "  put BUCKET KEY [--size N] [--etag E] [--content-type T] [--blob-id ID]\n"
        "                 [--storage-class C] [--checksum C] [--meta k=v ...]\n"
        "                 [--if-none-match] [--if-match ETAG]\n"
        "  get BUCKET KEY [--version-id V]\n"
        "  head BUCKET KEY [--version-id V]\n"
        "  ls BUCKET [--prefix P] [--delimiter D] [--start-after K] [--max-keys N] [--all]\n"
        "  rm BUCKET KEY [--version-id V]\n"
        "  versions BUCKET [--prefix P] [--delimiter D] [--key-marker K]\n"
        "                  [--version-id-marker V] [--max-keys N] [--all]\n"
        "  mpu create BUCKET KEY [--content-type T] [--storage-class C] [--meta k=v ...]\n"
        "  mpu part BUCKET KEY UPLOAD_ID N --size N --etag E [--blob-id ID]\n"
        "  mpu complete BUCKET KEY UPLOAD_ID N:ETAG... [--if-none-match] [--if-match E]\n"
        "  mpu abort BUCKET KEY UPLOAD_ID\n"
        "  mpu ls BUCKET [--prefix P] [--delimiter D] [--key-marker K]\n"
        "                [--upload-id-marker U] [--max-uploads N] [--all]\n"
        "  mpu parts BUCKET KEY UPLOAD_ID [--part-number-marker N] [--max-parts N] [--all]\n"
        "  lag [--watch [--interval S]]       (per-partition lag; --json: as served)\n"
        "  stats [BUCKET | --tenant T | --top [--by bytes|objects|versions] [--limit N]]\n"
        "                                     (usage; no argument: global totals)\n"
        "  usage BUCKET [--prefix P] [--delimiter D] [--sort key|bytes|objects]\n"
        "               [--max-rows N]      (objects and bytes per common prefix one\n"
        "                                     level down; delimiter \"/\" unless given,\n"
        "                                     \"\" = none; (direct) = keys at this level)\n"
        "  topics create|check [--brokers B] [--partitions N] [--replication N]\n"
        "                                     (objlog's Kafka topics; talks to Kafka)\n"
        "  bench [--url U --brokers B] [--count N] [--threads T] [--gets N]\n"
        "  bench --consistency-modes [--write-rate R] [--gets N] [--threads T]\n"
        "  bench --list [--keys N] [--deleted N] [--versions N] [--lists N]\n"
        "  bench --conditional [--rates 1000,5000] [--seconds S]\n"
        "  bench --stats [--count N] [--threads T] [--gets N]\n"
        "URL defaults to $OBJLOG_URL or " DEFAULT_URL ".\n");
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "objlog: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(objlog --help lists the commands)\n");
    return CLI_EXIT_USAGE;
}

/* ---- argument parsing: positionals plus a per-command option table ---- */

typedef struct opt {
    const char *name;
    int has_arg;          /* 0 flag, 1 value, 2 repeatable value */
    const char **value;   /* has_arg 1 */
    int *flag;            /* has_arg 0, or the count for has_arg 2 */
    const char **list;    /* has_arg 2: MAX_META entries */
} opt;

/* Returns 0, or a usage exit code. Global --url/--json are accepted
 * anywhere after the command too. Takes min..max positionals into pos;
 * *npos_out (if not NULL) gets how many came. */
static int parse_args_var(cli *c, int argc, char **argv, opt *opts,
                          const char **pos, int min, int npos, int *npos_out) {
    int got = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            c->json = 1;
            continue;
        }
        if (!strcmp(a, "--url")) {
            if (++i >= argc)
                return usage_error("--url needs a value%s", "");
            c->url = argv[i];
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            if (got >= npos)
                return usage_error("unexpected argument \"%s\"", a);
            pos[got++] = a;
            continue;
        }
        opt *o = opts;
        while (o && o->name && strcmp(o->name, a) != 0)
            o++;
        if (!o || !o->name)
            return usage_error("unknown option %s", a);
        if (o->has_arg == 0) {
            *o->flag = 1;
            continue;
        }
        if (++i >= argc)
            return usage_error("%s needs a value", a);
        if (o->has_arg == 1) {
            *o->value = argv[i];
        } else {
            if (*o->flag >= MAX_META)
                return usage_error("too many %s", a);
            o->list[(*o->flag)++] = argv[i];
        }
    }
    if (got < min)
        return usage_error("missing arguments (see usage)%s", "");
    if (npos_out)
        *npos_out = got;
    return 0;
}

static int parse_args(cli *c, int argc, char **argv, opt *opts,
                      const char **pos, int npos) {
    return parse_args_var(c, argc, argv, opts, pos, npos, npos, NULL);
}

/* ---- request helpers ---- */

static char *path_of(cli *c, const char *bucket, const char *key) {
    char *eb = cli_escape(c->h, bucket);
    char *ek = key ? cli_escape(c->h, key) : NULL;
    char *url = NULL;
    if (eb && (!key || ek)) {
        if (key) {
            if (asprintf(&url, "%s/v1/buckets/%s/objects/%s", c->url, eb, ek) < 0)
                url = NULL;
        } else if (asprintf(&url, "%s/v1/buckets/%s", c->url, eb) < 0) {
            url = NULL;
        }
    }
    free(eb);
    free(ek);
    return url;
}

/* Appends "&name=escaped(value)" (or '?' first) to *url. */
static int query_add(cli *c, char **url, const char *name, const char *value) {
    if (!value)
        return 0;
    char *e = cli_escape(c->h, value);
    char *n = NULL;
    int rc = e ? asprintf(&n, "%s%c%s=%s", *url, strchr(*url, '?') ? '&' : '?',
                          name, e) : -1;
    free(e);
    if (rc < 0)
        return -1;
    free(*url);
    *url = n;
    return 0;
}

static int fail(cli *c, const char *target, const char *code, const char *msg) {
    fprintf(stderr, "objlog: %s %s: %s: %s\n", c->cmd, target, code, msg);
    return CLI_EXIT_FAIL;
}

/* Sends the request; on any failure prints the one error line. Returns 0
 * with *r filled (status 2xx), or an exit code. */
static int request(cli *c, const char *target, const char *method,
                   const char *url, const char *body, const char *const *hdrs,
                   cli_resp *r) {
    char err[256];
    if (!url)
        return fail(c, target, "InternalError", "out of memory");
    if (cli_http(c->h, method, url, body, hdrs, r, err, sizeof(err)) < 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "cannot reach %s: %s", c->url, err);
        return fail(c, target, "ConnectionError", msg);
    }
    if (r->status >= 200 && r->status < 300)
        return 0;
    char code[64], msg[512];
    cli_error_of(r, code, sizeof(code), msg, sizeof(msg));
    cli_resp_free(r);
    return fail(c, target, code, msg);
}

static json_t *parse_json(cli *c, const char *target, cli_resp *r, int *rc) {
    json_t *j = json_loads(r->body, 0, NULL);
    *rc = 0;
    if (!j || !json_is_object(j)) {
        json_decref(j);
        *rc = fail(c, target, "InvalidResponse", "server answered non-JSON");
        return NULL;
    }
    return j;
}

/* GET url (taken: freed here) and parse its JSON object; NULL with *rc
 * set when the request or the answer failed. */
static json_t *get_json(cli *c, const char *target, char *url, int *rc) {
    cli_resp r;
    *rc = request(c, target, "GET", url, NULL, NULL, &r);
    free(url);
    if (*rc)
        return NULL;
    json_t *j = parse_json(c, target, &r, rc);
    cli_resp_free(&r);
    return j;
}

static void print_json_body(const cli_resp *r) {
    fputs(r->body, stdout);
    if (r->body_len == 0 || r->body[r->body_len - 1] != '\n')
        fputc('\n', stdout);
}

static const char *jstr(json_t *o, const char *name) {
    const char *s = json_string_value(json_object_get(o, name));
    return s ? s : "";
}

static json_int_t jint(json_t *o, const char *name) {
    return json_integer_value(json_object_get(o, name));
}

/* ---- commands ---- */

static int parse_u64(const char *s, unsigned long long *v);

static int cmd_mb(cli *c, int argc, char **argv) {
    const char *pos[1], *tenant = NULL, *versioning = NULL, *max_versions = NULL;
    opt opts[] = {{"--tenant", 1, &tenant, NULL, NULL},
                  {"--versioning", 1, &versioning, NULL, NULL},
                  {"--max-versions", 1, &max_versions, NULL, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 1);
    if (rc)
        return rc;
    if (versioning && strcmp(versioning, "Enabled") && strcmp(versioning, "Suspended"))
        return usage_error("--versioning must be Enabled or Suspended, not \"%s\"",
                           versioning);
    unsigned long long mv = 0;
    if (max_versions && (parse_u64(max_versions, &mv) < 0 || mv == 0))
        return usage_error("--max-versions must be a positive number, not \"%s\"",
                           max_versions);
    json_t *b = json_object();
    if (tenant)
        json_object_set_new(b, "tenant", json_string(tenant));
    if (versioning)
        json_object_set_new(b, "versioning", json_string(versioning));
    if (max_versions)
        json_object_set_new(b, "max_versions", json_integer((json_int_t)mv));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char *url = path_of(c, pos[0], NULL);
    cli_resp r;
    rc = request(c, pos[0], "PUT", url, body, NULL, &r);
    free(url);
    free(body);
    if (rc)
        return rc;
    if (c->json)
        print_json_body(&r);
    else
        printf("make_bucket: %s\n", pos[0]);
    cli_resp_free(&r);
    return 0;
}

static int parse_u64(const char *s, unsigned long long *v) {
    char *end = NULL;
    if (!s || !*s || *s == '-')
        return -1;
    *v = strtoull(s, &end, 10);
    return *end ? -1 : 0;
}

static json_t *put_body(const char *size, const char *etag, const char *ctype,
                        const char *blob, const char *sclass,
                        const char *checksum, const char **meta, int nmeta,
                        int *bad) {
    json_t *b = json_object();
    unsigned long long n = 0;
    *bad = 0;
    if (size && parse_u64(size, &n) < 0)
        *bad = 1;
    json_object_set_new(b, "size", json_integer((json_int_t)n));
    if (etag)
        json_object_set_new(b, "etag", json_string(etag));
    if (ctype)
        json_object_set_new(b, "content_type", json_string(ctype));
    if (blob)
        json_object_set_new(b, "blob_id", json_string(blob));
    if (sclass)
        json_object_set_new(b, "storage_class", json_string(sclass));
    if (checksum)
        json_object_set_new(b, "checksum", json_string(checksum));
    json_t *um = json_object();
    for (int i = 0; i < nmeta; i++) {
        const char *eq = strchr(meta[i], '=');
        if (!eq || eq == meta[i]) {
            *bad = 2;
            break;
        }
        char *name = strndup(meta[i], (size_t)(eq - meta[i]));
        json_object_set_new(um, name, json_string(eq + 1));
        free(name);
    }
    json_object_set_new(b, "user_metadata", um);
    return b;
}

static int cmd_put(cli *c, int argc, char **argv) {
    const char *pos[2], *size = NULL, *etag = NULL, *ctype = NULL, *blob = NULL,
               *sclass = NULL, *checksum = NULL, *if_match = NULL;
    const char *meta[MAX_META];
    int nmeta = 0, if_none_match = 0;
    opt opts[] = {{"--size", 1, &size, NULL, NULL},
                  {"--etag", 1, &etag, NULL, NULL},
                  {"--content-type", 1, &ctype, NULL, NULL},
                  {"--blob-id", 1, &blob, NULL, NULL},
                  {"--storage-class", 1, &sclass, NULL, NULL},
                  {"--checksum", 1, &checksum, NULL, NULL},
                  {"--meta", 2, NULL, &nmeta, meta},
                  {"--if-none-match", 0, NULL, &if_none_match, NULL},
                  {"--if-match", 1, &if_match, NULL, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 2);
    if (rc)
        return rc;
    int bad;
    json_t *b = put_body(size, etag, ctype, blob, sclass, checksum, meta, nmeta, &bad);
    if (bad) {
        json_decref(b);
        return bad == 1 ? usage_error("--size must be a byte count, not \"%s\"", size)
                        : usage_error("--meta takes name=value%s", "");
    }
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char im[256];
    const char *hdrs[3] = {NULL, NULL, NULL};
    int nh = 0;
    if (if_none_match)
        hdrs[nh++] = "If-None-Match: *";
    if (if_match) {
        snprintf(im, sizeof(im), "If-Match: %s", if_match);
        hdrs[nh++] = im;
    }
    char target[2048];
    snprintf(target, sizeof(target), "%s/%s", pos[0], pos[1]);
    char *url = path_of(c, pos[0], pos[1]);
    cli_resp r;
    rc = request(c, target, "PUT", url, body, hdrs, &r);
    free(url);
    free(body);
    if (rc)
        return rc;
    if (c->json) {
        print_json_body(&r);
    } else {
        json_t *j = parse_json(c, target, &r, &rc);
        if (j) {
            printf("key: %s\nversion_id: %s\netag: %s\ntoken: %s\n", pos[1],
                   jstr(j, "version_id"), jstr(j, "etag"), jstr(j, "token"));
            json_decref(j);
        }
    }
    cli_resp_free(&r);
    return rc;
}

static void print_object(json_t *j) {
    printf("bucket: %s\n", jstr(j, "bucket"));
    printf("key: %s\n", jstr(j, "key"));
    printf("version_id: %s\n", jstr(j, "version_id"));
    printf("size: %lld\n", (long long)jint(j, "size"));
    printf("etag: %s\n", jstr(j, "etag"));
    printf("content_type: %s\n", jstr(j, "content_type"));
    printf("blob_id: %s\n", jstr(j, "blob_id"));
    printf("storage_class: %s\n", jstr(j, "storage_class"));
    printf("checksum: %s\n", jstr(j, "checksum"));
    printf("last_modified: %s\n", jstr(j, "last_modified"));
    if (json_is_true(json_object_get(j, "delete_marker")))
        printf("delete_marker: true\n");
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(j, "user_metadata"), name, v)
        printf("meta.%s: %s\n", name, json_string_value(v) ? json_string_value(v) : "");
}

/* URL of object pos[0]/pos[1] (with ?version_id= if given) and its
 * "bucket/key" name for messages. NULL on allocation failure. */
static char *object_url(cli *c, const char **pos, const char *version_id,
                        char *target, size_t target_size) {
    snprintf(target, target_size, "%s/%s", pos[0], pos[1]);
    char *url = path_of(c, pos[0], pos[1]);
    if (url && query_add(c, &url, "version_id", version_id) < 0) {
        free(url);
        url = NULL;
    }
    return url;
}

static int cmd_get_or_head(cli *c, int argc, char **argv, int head) {
    const char *pos[2], *version_id = NULL;
    opt opts[] = {{"--version-id", 1, &version_id, NULL, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 2);
    if (rc)
        return rc;
    char target[2048];
    char *url = object_url(c, pos, version_id, target, sizeof(target));
    cli_resp r;
    rc = request(c, target, head ? "HEAD" : "GET", url, NULL, NULL, &r);
    free(url);
    if (rc)
        return rc;
    if (head) {
        if (c->json) {
            json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:I,s:s}", "bucket", pos[0],
                                  "key", pos[1], "version_id", r.version_id,
                                  "etag", r.etag, "size",
                                  (json_int_t)strtoll(r.size, NULL, 10),
                                  "last_modified", r.last_modified);
            char *s = json_dumps(j, JSON_COMPACT);
            printf("%s\n", s);
            free(s);
            json_decref(j);
        } else {
            printf("key: %s\nversion_id: %s\nsize: %s\netag: %s\nlast_modified: %s\n",
                   pos[1], r.version_id, r.size, r.etag, r.last_modified);
        }
    } else if (c->json) {
        print_json_body(&r);
    } else {
        json_t *j = parse_json(c, target, &r, &rc);
        if (j)
            print_object(j);
        json_decref(j);
    }
    cli_resp_free(&r);
    return rc;
}

static int cmd_rm(cli *c, int argc, char **argv) {
    const char *pos[2], *version_id = NULL;
    opt opts[] = {{"--version-id", 1, &version_id, NULL, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 2);
    if (rc)
        return rc;
    char target[2048];
    char *url = object_url(c, pos, version_id, target, sizeof(target));
    cli_resp r;
    rc = request(c, target, "DELETE", url, NULL, NULL, &r);
    free(url);
    if (rc)
        return rc;
    if (c->json) {
        print_json_body(&r);
    } else {
        json_t *j = json_loads(r.body, 0, NULL);
        if (version_id)
            printf("delete: %s (version %s)\n", target, version_id);
        else if (json_is_true(json_object_get(j, "delete_marker")))
            printf("delete: %s (delete marker %s)\n", target, jstr(j, "version_id"));
        else
            printf("delete: %s\n", target);
        json_decref(j);
    }
    cli_resp_free(&r);
    return 0;
}

/* ---- ls ---- */

typedef struct ls_args {
    const char *bucket, *prefix, *delimiter, *start_after, *max_keys;
    int all;
} ls_args;

/* Fetches one page; returns it parsed, or NULL with *rc set. */
static json_t *ls_page(cli *c, const ls_args *a, const char *cont, int *rc) {
    char *base = path_of(c, a->bucket, NULL);
    char *url = NULL;
    if (base && asprintf(&url, "%s/objects", base) < 0)
        url = NULL;
    free(base);
    if (url && (query_add(c, &url, "prefix", a->prefix) ||
                query_add(c, &url, "delimiter", a->delimiter) ||
                query_add(c, &url, "start_after", a->start_after) ||
                query_add(c, &url, "max_keys", a->max_keys) ||
                query_add(c, &url, "continuation_token", cont))) {
        free(url);
        url = NULL;
    }
    return get_json(c, a->bucket, url, rc);
}

/* Appends the page's objects and prefixes into acc (the first page). */
static void ls_merge(json_t *acc, json_t *page) {
    json_array_extend(json_object_get(acc, "objects"), json_object_get(page, "objects"));
    json_array_extend(json_object_get(acc, "common_prefixes"),
                      json_object_get(page, "common_prefixes"));
    size_t n = json_array_size(json_object_get(acc, "objects")) +
               json_array_size(json_object_get(acc, "common_prefixes"));
    json_object_set_new(acc, "key_count", json_integer((json_int_t)n));
    json_object_set(acc, "is_truncated", json_object_get(page, "is_truncated"));
    json_t *next = json_object_get(page, "next_continuation_token");
    if (next)
        json_object_set(acc, "next_continuation_token", next);
    else
        json_object_del(acc, "next_continuation_token");
}

static int num_width(unsigned long long v) {
    int w = 1;
    while (v >= 10) {
        v /= 10;
        w++;
    }
    return w;
}

static void ls_print(json_t *j) {
    json_t *objs = json_object_get(j, "objects");
    json_t *pres = json_object_get(j, "common_prefixes");
    size_t i;
    json_t *v;
    int kw = 1, sw = 1;
    unsigned long long total = 0;
    json_array_foreach(objs, i, v) {
        int l = (int)strlen(jstr(v, "key"));
        int s = num_width((unsigned long long)jint(v, "size"));
        kw = l > kw ? l : kw;
        sw = s > sw ? s : sw;
        total += (unsigned long long)jint(v, "size");
    }
    json_array_foreach(pres, i, v)
        printf("PRE %s\n", json_string_value(v) ? json_string_value(v) : "");
    json_array_foreach(objs, i, v)
        printf("%-*s  %*lld  %s  %s\n", kw, jstr(v, "key"), sw,
               (long long)jint(v, "size"), jstr(v, "last_modified"), jstr(v, "etag"));
    size_t no = json_array_size(objs), np = json_array_size(pres);
    printf("%zu object%s, %zu prefix%s, %llu bytes%s\n", no, no == 1 ? "" : "s",
           np, np == 1 ? "" : "es", total,
           json_is_true(json_object_get(j, "is_truncated"))
               ? " (truncated; --all lists the rest)" : "");
}

static int cmd_ls(cli *c, int argc, char **argv) {
    const char *pos[1];
    ls_args a = {0};
    opt opts[] = {{"--prefix", 1, &a.prefix, NULL, NULL},
                  {"--delimiter", 1, &a.delimiter, NULL, NULL},
                  {"--start-after", 1, &a.start_after, NULL, NULL},
                  {"--max-keys", 1, &a.max_keys, NULL, NULL},
                  {"--all", 0, NULL, &a.all, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 1);
    if (rc)
        return rc;
    unsigned long long mk;
    if (a.max_keys && parse_u64(a.max_keys, &mk) < 0)
        return usage_error("--max-keys must be a number, not \"%s\"", a.max_keys);
    a.bucket = pos[0];
    json_t *acc = ls_page(c, &a, NULL, &rc);
    while (acc && a.all && json_is_true(json_object_get(acc, "is_truncated"))) {
        const char *next = json_string_value(json_object_get(acc, "next_continuation_token"));
        if (!next)
            break;
        char *tok = strdup(next);
        json_t *page = ls_page(c, &a, tok, &rc);
        free(tok);
        if (!page) {
            json_decref(acc);
            return rc;
        }
        ls_merge(acc, page);
        json_decref(page);
    }
    if (!acc)
        return rc;
    if (c->json) {
        char *s = json_dumps(acc, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
    } else {
        ls_print(acc);
    }
    json_decref(acc);
    return 0;
}

/* ---- buckets: rb, bucket, versioning ---- */

/* URL of /v1/buckets/{bucket}{suffix}; suffix is already escaped. */
static char *bucket_url(cli *c, const char *bucket, const char *suffix) {
    char *base = path_of(c, bucket, NULL);
    char *url = NULL;
    if (base && asprintf(&url, "%s%s", base, suffix) < 0)
        url = NULL;
    free(base);
    return url;
}

/* Sends method to url with body and prints either the JSON answer or
 * `line`. For the commands whose readable answer is one fixed line. */
static int simple_write(cli *c, const char *target, const char *method,
                        char *url, const char *body, const char *line) {
    cli_resp r;
    int rc = request(c, target, method, url, body, NULL, &r);
    free(url);
    if (rc)
        return rc;
    if (c->json)
        print_json_body(&r);
    else
        fputs(line, stdout);
    cli_resp_free(&r);
    return 0;
}

static int cmd_rb(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = parse_args(c, argc, argv, NULL, pos, 1);
    if (rc)
        return rc;
    char line[128];
    snprintf(line, sizeof(line), "remove_bucket: %.100s\n", pos[0]);
    return simple_write(c, pos[0], "DELETE", path_of(c, pos[0], NULL), NULL, line);
}

static int cmd_versioning(cli *c, int argc, char **argv) {
    const char *pos[2];
    int rc = parse_args(c, argc, argv, NULL, pos, 2);
    if (rc)
        return rc;
    if (strcmp(pos[1], "Enabled") && strcmp(pos[1], "Suspended"))
        return usage_error("versioning must be Enabled or Suspended, not \"%s\"",
                           pos[1]);
    char body[64], line[160];
    snprintf(body, sizeof(body), "{\"status\":\"%s\"}", pos[1]);
    snprintf(line, sizeof(line), "versioning: %.100s %s\n", pos[0], pos[1]);
    return simple_write(c, pos[0], "PUT", bucket_url(c, pos[0], "/versioning"),
                        body, line);
}

/* One "name: value" line per scalar, nested objects as "parent.name". */
static void print_flat(const char *prefix, json_t *o) {
    const char *name;
    json_t *v;
    json_object_foreach(o, name, v) {
        char full[256];
        snprintf(full, sizeof(full), "%s%s", prefix, name);
        if (json_is_object(v)) {
            char sub[260];
            snprintf(sub, sizeof(sub), "%s.", full);
            print_flat(sub, v);
        } else if (json_is_string(v)) {
            printf("%s: %s\n", full, json_string_value(v));
        } else if (json_is_integer(v)) {
            printf("%s: %lld\n", full, (long long)json_integer_value(v));
        } else if (json_is_boolean(v)) {
            printf("%s: %s\n", full, json_is_true(v) ? "true" : "false");
        } else if (!json_is_null(v)) {
            char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            printf("%s: %s\n", full, d ? d : "");
            free(d);
        }
    }
}

static int cmd_bucket(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = parse_args(c, argc, argv, NULL, pos, 1);
    if (rc)
        return rc;
    char *url = path_of(c, pos[0], NULL);
    cli_resp r;
    rc = request(c, pos[0], "GET", url, NULL, NULL, &r);
    free(url);
    if (rc)
        return rc;
    if (c->json) {
        print_json_body(&r);
    } else {
        json_t *j = parse_json(c, pos[0], &r, &rc);
        if (j)
            print_flat("", j);
        json_decref(j);
    }
    cli_resp_free(&r);
    return rc;
}

/* ---- readable tables ---- */

/* A table of text cells printed with each column as wide as its widest
 * cell; columns flagged right-aligned are numbers. */
#define TABLE_MAX_COLS 8

typedef struct table {
    int ncols;
    const char *const *head;
    const int *right;
    char **cells;            /* row-major, owned */
    size_t nrows, cap;
} table;

static void table_add(table *t, const char *const *row) {
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        char **n = realloc(t->cells, cap * (size_t)t->ncols * sizeof(*n));
        if (!n)
            return;
        t->cells = n;
        t->cap = cap;
    }
    for (int i = 0; i < t->ncols; i++)
        t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = strdup(row[i]);
    t->nrows++;
}

static void table_row_print(const table *t, const int *w, const char *const *row) {
    for (int i = 0; i < t->ncols; i++) {
        const char *cell = row[i] ? row[i] : "";
        int last = i == t->ncols - 1;
        if (t->right[i])
            printf("%*s", w[i], cell);
        else if (last)
            fputs(cell, stdout);
        else
            printf("%-*s", w[i], cell);
        fputs(last ? "\n" : "  ", stdout);
    }
}

static void table_print_free(table *t) {
    int w[TABLE_MAX_COLS];
    for (int i = 0; i < t->ncols; i++)
        w[i] = (int)strlen(t->head[i]);
    for (size_t r = 0; r < t->nrows; r++)
        for (int i = 0; i < t->ncols; i++) {
            const char *cell = t->cells[r * (size_t)t->ncols + (size_t)i];
            int l = cell ? (int)strlen(cell) : 0;
            w[i] = l > w[i] ? l : w[i];
        }
    if (t->nrows)
        table_row_print(t, w, t->head);
    for (size_t r = 0; r < t->nrows; r++)
        table_row_print(t, w, (const char *const *)&t->cells[r * (size_t)t->ncols]);
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

/* ---- paged listings: versions, uploads, parts ---- */

/* How one listing pages: the array it returns, and which response fields
 * feed which request parameters for the next page (up to two markers). */
typedef struct page_spec {
    const char *array;
    const char *next_field[2];
    const char *marker_param[2];
} page_spec;

#define LIST_MAX_PARAMS 8

typedef struct list_req {
    const char *target;          /* for error messages */
    const char *base;            /* URL without query */
    const char *name[LIST_MAX_PARAMS];
    const char *value[LIST_MAX_PARAMS];  /* NULL: parameter absent */
    int n;
    int all;
} list_req;

static void list_param(list_req *q, const char *name, const char *value) {
    if (q->n < LIST_MAX_PARAMS) {
        q->name[q->n] = name;
        q->value[q->n++] = value;
    }
}

static json_t *list_page(cli *c, const list_req *q, int *rc) {
    char *url = strdup(q->base);
    for (int i = 0; url && i < q->n; i++)
        if (query_add(c, &url, q->name[i], q->value[i]) < 0) {
            free(url);
            url = NULL;
        }
    return get_json(c, q->target, url, rc);
}

static void list_merge(json_t *acc, json_t *page, const page_spec *sp) {
    json_t *arr = json_object_get(acc, sp->array);
    if (!arr)
        json_object_set_new(acc, sp->array, arr = json_array());
    json_array_extend(arr, json_object_get(page, sp->array));
    json_t *pres = json_object_get(page, "common_prefixes");
    if (pres)
        json_array_extend(json_object_get(acc, "common_prefixes"), pres);
    json_object_set(acc, "is_truncated", json_object_get(page, "is_truncated"));
    for (int i = 0; i < 2 && sp->next_field[i]; i++) {
        json_t *v = json_object_get(page, sp->next_field[i]);
        if (v)
            json_object_set(acc, sp->next_field[i], v);
        else
            json_object_del(acc, sp->next_field[i]);
    }
}

/* Sets the marker parameters of q from the page's next_* fields; the
 * strings are copied into store. 0 if there is a next page. */
static int list_next(list_req *q, json_t *page, const page_spec *sp,
                     char store[2][1100]) {
    int any = 0;
    for (int i = 0; i < 2 && sp->next_field[i]; i++) {
        json_t *v = json_object_get(page, sp->next_field[i]);
        const char *s = json_string_value(v);
        char num[32];
        if (json_is_integer(v)) {
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
            s = num;
        }
        for (int k = 0; k < q->n; k++)
            if (!strcmp(q->name[k], sp->marker_param[i])) {
                snprintf(store[i], 1100, "%s", s ? s : "");
                q->value[k] = s ? store[i] : NULL;
                any |= s && *s;
            }
    }
    return any ? 0 : -1;
}

/* Fetches one page, or every page with q->all, merged into the first. */
static json_t *list_fetch(cli *c, list_req *q, const page_spec *sp, int *rc) {
    json_t *acc = list_page(c, q, rc);
    char store[2][1100];
    while (acc && q->all && json_is_true(json_object_get(acc, "is_truncated")) &&
           list_next(q, acc, sp, store) == 0) {
        json_t *page = list_page(c, q, rc);
        if (!page) {
            json_decref(acc);
            return NULL;
        }
        list_merge(acc, page, sp);
        json_decref(page);
    }
    return acc;
}

static int list_output(cli *c, json_t *j, void (*print)(json_t *)) {
    if (!j)
        return CLI_EXIT_FAIL;
    if (c->json) {
        char *s = json_dumps(j, JSON_COMPACT);
        printf("%s\n", s ? s : "{}");
        free(s);
    } else {
        print(j);
    }
    json_decref(j);
    return 0;
}

static const char *truncated_note(json_t *j) {
    return json_is_true(json_object_get(j, "is_truncated"))
               ? " (truncated; --all lists the rest)" : "";
}

static void print_prefixes(json_t *j) {
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(j, "common_prefixes"), i, v)
        printf("PRE %s\n", json_string_value(v) ? json_string_value(v) : "");
}

static const char *plural(size_t n, const char *one, const char *many) {
    return n == 1 ? one : many;
}

static void versions_print(json_t *j) {
    static const char *const head[] = {"KEY", "VERSION_ID", "LATEST",
                                       "DELETE_MARKER", "SIZE", "LAST_MODIFIED"};
    static const int right[] = {0, 0, 0, 0, 1, 0};
    table t = {.ncols = 6, .head = head, .right = right};
    size_t i, markers = 0;
    json_t *v;
    json_t *vers = json_object_get(j, "versions");
    json_array_foreach(vers, i, v) {
        int dm = json_is_true(json_object_get(v, "delete_marker"));
        char size[32];
        snprintf(size, sizeof(size), "%lld", (long long)jint(v, "size"));
        const char *row[] = {jstr(v, "key"), jstr(v, "version_id"),
                             json_is_true(json_object_get(v, "is_latest")) ? "yes" : "no",
                             dm ? "yes" : "no", dm ? "-" : size,
                             jstr(v, "last_modified")};
        markers += (size_t)dm;
        table_add(&t, row);
    }
    print_prefixes(j);
    table_print_free(&t);
    size_t nv = json_array_size(vers);
    size_t np = json_array_size(json_object_get(j, "common_prefixes"));
    printf("%zu %s (%zu %s), %zu %s%s\n", nv, plural(nv, "version", "versions"),
           markers, plural(markers, "delete marker", "delete markers"), np,
           plural(np, "prefix", "prefixes"), truncated_note(j));
}

static int check_count(const char *opt_name, const char *v) {
    unsigned long long n;
    if (v && parse_u64(v, &n) < 0) {
        char msg[64];
        snprintf(msg, sizeof(msg), "%s must be a number, not \"%%s\"", opt_name);
        return usage_error(msg, v);
    }
    return 0;
}

static int cmd_versions(cli *c, int argc, char **argv) {
    const char *pos[1], *prefix = NULL, *delim = NULL, *km = NULL, *vm = NULL,
               *max_keys = NULL;
    int all = 0;
    opt opts[] = {{"--prefix", 1, &prefix, NULL, NULL},
                  {"--delimiter", 1, &delim, NULL, NULL},
                  {"--key-marker", 1, &km, NULL, NULL},
                  {"--version-id-marker", 1, &vm, NULL, NULL},
                  {"--max-keys", 1, &max_keys, NULL, NULL},
                  {"--all", 0, NULL, &all, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 1);
    if (rc || (rc = check_count("--max-keys", max_keys)))
        return rc;
    char *base = bucket_url(c, pos[0], "/versions");
    if (!base)
        return fail(c, pos[0], "InternalError", "out of memory");
    list_req q = {.target = pos[0], .base = base, .all = all};
    list_param(&q, "prefix", prefix);
    list_param(&q, "delimiter", delim);
    list_param(&q, "key_marker", km);
    list_param(&q, "version_id_marker", vm);
    list_param(&q, "max_keys", max_keys);
    static const page_spec sp = {"versions",
                                 {"next_key_marker", "next_version_id_marker"},
                                 {"key_marker", "version_id_marker"}};
    json_t *j = list_fetch(c, &q, &sp, &rc);
    free(base);
    return j ? list_output(c, j, versions_print) : rc;
}

/* ---- multipart: mpu create|part|complete|abort|ls|parts ---- */

/* URL of /v1/buckets/{b}/uploads[/{id}{suffix}]?key=K (key NULL: none). */
static char *upload_url(cli *c, const char *bucket, const char *id,
                        const char *suffix, const char *key) {
    char *eid = id ? cli_escape(c->h, id) : NULL;
    char *tail = NULL;
    if ((id && !eid) ||
        asprintf(&tail, "/uploads%s%s%s", id ? "/" : "", id ? eid : "",
                 suffix ? suffix : "") < 0)
        tail = NULL;
    free(eid);
    char *url = tail ? bucket_url(c, bucket, tail) : NULL;
    free(tail);
    if (url && query_add(c, &url, "key", key) < 0) {
        free(url);
        url = NULL;
    }
    return url;
}

static int cmd_mpu_create(cli *c, int argc, char **argv) {
    const char *pos[2], *ctype = NULL, *sclass = NULL, *checksum = NULL;
    const char *meta[MAX_META];
    int nmeta = 0;
    opt opts[] = {{"--content-type", 1, &ctype, NULL, NULL},
                  {"--storage-class", 1, &sclass, NULL, NULL},
                  {"--checksum", 1, &checksum, NULL, NULL},
                  {"--meta", 2, NULL, &nmeta, meta},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 2);
    if (rc)
        return rc;
    int bad;
    json_t *b = put_body(NULL, NULL, ctype, NULL, sclass, checksum, meta, nmeta, &bad);
    if (bad) {
        json_decref(b);
        return usage_error("--meta takes name=value%s", "");
    }
    json_object_del(b, "size");
    json_object_set_new(b, "key", json_string(pos[1]));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char target[2048];
    snprintf(target, sizeof(target), "%s/%s", pos[0], pos[1]);
    char *url = upload_url(c, pos[0], NULL, NULL, NULL);
    cli_resp r;
    rc = request(c, target, "POST", url, body, NULL, &r);
    free(url);
    free(body);
    if (rc)
        return rc;
    if (c->json) {
        print_json_body(&r);
    } else {
        json_t *j = parse_json(c, target, &r, &rc);
        if (j)
            printf("key: %s\nupload_id: %s\ntoken: %s\n", pos[1], jstr(j, "upload_id"),
                   jstr(j, "token"));
        json_decref(j);
    }
    cli_resp_free(&r);
    return rc;
}

/* Readable answer of a write: the named fields of the response JSON. */
static int write_answer(cli *c, const char *target, cli_resp *r,
                        const char *lead) {
    int rc = 0;
    if (c->json) {
        print_json_body(r);
    } else {
        json_t *j = parse_json(c, target, r, &rc);
        if (j)
            printf("%sversion_id: %s\netag: %s\ntoken: %s\n", lead,
                   jstr(j, "version_id"), jstr(j, "etag"), jstr(j, "token"));
        json_decref(j);
    }
    cli_resp_free(r);
    return rc;
}

static int cmd_mpu_part(cli *c, int argc, char **argv) {
    const char *pos[4], *size = NULL, *etag = NULL, *blob = NULL;
    opt opts[] = {{"--size", 1, &size, NULL, NULL},
                  {"--etag", 1, &etag, NULL, NULL},
                  {"--blob-id", 1, &blob, NULL, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 4);
    if (rc)
        return rc;
    unsigned long long n, sz;
    if (parse_u64(pos[3], &n) < 0 || n < 1 || n > 10000)
        return usage_error("part number must be 1 to 10000, not \"%s\"", pos[3]);
    if (!size || !etag)
        return usage_error("mpu part needs --size and --etag%s", "");
    if (parse_u64(size, &sz) < 0)
        return usage_error("--size must be a byte count, not \"%s\"", size);
    size_t en = strlen(etag);
    int hex = en == 32;
    for (size_t i = 0; hex && i < en; i++)
        hex = isxdigit((unsigned char)etag[i]) != 0;
    if (!hex)
        return usage_error("--etag must be the part's MD5, 32 hex digits, not \"%s\"", etag);
    json_t *b = json_pack("{s:I,s:s}", "size", (json_int_t)sz, "etag", etag);
    if (blob)
        json_object_set_new(b, "blob_id", json_string(blob));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char target[2048], suffix[32];
    snprintf(target, sizeof(target), "%s/%s", pos[0], pos[1]);
    snprintf(suffix, sizeof(suffix), "/parts/%llu", n);
    char *url = upload_url(c, pos[0], pos[2], suffix, pos[1]);
    cli_resp r;
    rc = request(c, target, "PUT", url, body, NULL, &r);
    free(url);
    free(body);
    if (rc)
        return rc;
    if (c->json) {
        print_json_body(&r);
    } else {
        json_t *j = parse_json(c, target, &r, &rc);
        if (j)
            printf("upload_id: %s\npart_number: %llu\netag: %s\ntoken: %s\n", pos[2], n,
                   etag, jstr(j, "token"));
        json_decref(j);
    }
    cli_resp_free(&r);
    return rc;
}

/* "N:ETAG" arguments into {"parts":[{"part_number","etag"}]}; NULL and
 * *bad = index of the bad one. */
static json_t *complete_body(const char **args, int n, int *bad) {
    json_t *parts = json_array();
    for (int i = 0; i < n; i++) {
        const char *colon = strchr(args[i], ':');
        char num[16];
        unsigned long long pn;
        size_t l = colon ? (size_t)(colon - args[i]) : 0;
        if (!colon || l == 0 || l >= sizeof(num) || !colon[1]) {
            *bad = i;
            json_decref(parts);
            return NULL;
        }
        memcpy(num, args[i], l);
        num[l] = '\0';
        if (parse_u64(num, &pn) < 0 || pn < 1 || pn > 10000) {
            *bad = i;
            json_decref(parts);
            return NULL;
        }
        json_array_append_new(parts, json_pack("{s:I,s:s}", "part_number",
                                               (json_int_t)pn, "etag", colon + 1));
    }
    return json_pack("{s:o}", "parts", parts);
}

static int cmd_mpu_complete(cli *c, int argc, char **argv) {
    const char **pos = calloc((size_t)argc + 1, sizeof(*pos));
    const char *if_match = NULL;
    int if_none_match = 0, npos = 0;
    opt opts[] = {{"--if-none-match", 0, NULL, &if_none_match, NULL},
                  {"--if-match", 1, &if_match, NULL, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    if (!pos)
        return CLI_EXIT_FAIL;
    int rc = parse_args_var(c, argc, argv, opts, pos, 4, argc, &npos);
    int bad = 0;
    json_t *b = rc ? NULL : complete_body(pos + 3, npos - 3, &bad);
    if (!rc && !b)
        rc = usage_error("parts are N:ETAG with N 1 to 10000, not \"%s\"", pos[3 + bad]);
    if (rc) {
        free(pos);
        return rc;
    }
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char im[256], target[2048], lead[2100];
    const char *hdrs[3] = {NULL, NULL, NULL};
    int nh = 0;
    if (if_none_match)
        hdrs[nh++] = "If-None-Match: *";
    if (if_match) {
        snprintf(im, sizeof(im), "If-Match: %s", if_match);
        hdrs[nh++] = im;
    }
    snprintf(target, sizeof(target), "%s/%s", pos[0], pos[1]);
    snprintf(lead, sizeof(lead), "key: %s\n", pos[1]);
    char *url = upload_url(c, pos[0], pos[2], "/complete", pos[1]);
    cli_resp r;
    rc = request(c, target, "POST", url, body, hdrs, &r);
    free(url);
    free(body);
    free(pos);
    return rc ? rc : write_answer(c, target, &r, lead);
}

static int cmd_mpu_abort(cli *c, int argc, char **argv) {
    const char *pos[3];
    int rc = parse_args(c, argc, argv, NULL, pos, 3);
    if (rc)
        return rc;
    char target[2048], line[2200];
    snprintf(target, sizeof(target), "%s/%s", pos[0], pos[1]);
    snprintf(line, sizeof(line), "abort: %s (upload %s)\n", target, pos[2]);
    return simple_write(c, target, "DELETE", upload_url(c, pos[0], pos[2], NULL, pos[1]),
                        NULL, line);
}

static void uploads_print(json_t *j) {
    static const char *const head[] = {"KEY", "UPLOAD_ID", "INITIATED"};
    static const int right[] = {0, 0, 0};
    table t = {.ncols = 3, .head = head, .right = right};
    size_t i;
    json_t *v;
    json_t *ups = json_object_get(j, "uploads");
    json_array_foreach(ups, i, v) {
        const char *row[] = {jstr(v, "key"), jstr(v, "upload_id"), jstr(v, "initiated")};
        table_add(&t, row);
    }
    print_prefixes(j);
    table_print_free(&t);
    size_t nu = json_array_size(ups);
    size_t np = json_array_size(json_object_get(j, "common_prefixes"));
    printf("%zu %s, %zu %s%s\n", nu, plural(nu, "upload", "uploads"), np,
           plural(np, "prefix", "prefixes"), truncated_note(j));
}

static int cmd_mpu_ls(cli *c, int argc, char **argv) {
    const char *pos[1], *prefix = NULL, *delim = NULL, *km = NULL, *um = NULL,
               *max = NULL;
    int all = 0;
    opt opts[] = {{"--prefix", 1, &prefix, NULL, NULL},
                  {"--delimiter", 1, &delim, NULL, NULL},
                  {"--key-marker", 1, &km, NULL, NULL},
                  {"--upload-id-marker", 1, &um, NULL, NULL},
                  {"--max-uploads", 1, &max, NULL, NULL},
                  {"--all", 0, NULL, &all, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 1);
    if (rc || (rc = check_count("--max-uploads", max)))
        return rc;
    char *base = bucket_url(c, pos[0], "/uploads");
    if (!base)
        return fail(c, pos[0], "InternalError", "out of memory");
    list_req q = {.target = pos[0], .base = base, .all = all};
    list_param(&q, "prefix", prefix);
    list_param(&q, "delimiter", delim);
    list_param(&q, "key_marker", km);
    list_param(&q, "upload_id_marker", um);
    list_param(&q, "max_uploads", max);
    static const page_spec sp = {"uploads",
                                 {"next_key_marker", "next_upload_id_marker"},
                                 {"key_marker", "upload_id_marker"}};
    json_t *j = list_fetch(c, &q, &sp, &rc);
    free(base);
    return j ? list_output(c, j, uploads_print) : rc;
}

static void parts_print(json_t *j) {
    static const char *const head[] = {"PART", "SIZE", "ETAG", "LAST_MODIFIED"};
    static const int right[] = {1, 1, 0, 0};
    table t = {.ncols = 4, .head = head, .right = right};
    size_t i;
    json_t *v;
    unsigned long long total = 0;
    json_t *parts = json_object_get(j, "parts");
    json_array_foreach(parts, i, v) {
        char pn[16], size[32];
        snprintf(pn, sizeof(pn), "%lld", (long long)jint(v, "part_number"));
        snprintf(size, sizeof(size), "%lld", (long long)jint(v, "size"));
        total += (unsigned long long)jint(v, "size");
        const char *row[] = {pn, size, jstr(v, "etag"), jstr(v, "last_modified")};
        table_add(&t, row);
    }
    table_print_free(&t);
    size_t n = json_array_size(parts);
    printf("%zu %s, %llu bytes%s\n", n, plural(n, "part", "parts"), total,
           truncated_note(j));
}

static int cmd_mpu_parts(cli *c, int argc, char **argv) {
    const char *pos[3], *pm = NULL, *max = NULL;
    int all = 0;
    opt opts[] = {{"--part-number-marker", 1, &pm, NULL, NULL},
                  {"--max-parts", 1, &max, NULL, NULL},
                  {"--all", 0, NULL, &all, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 3);
    if (rc || (rc = check_count("--max-parts", max)) ||
        (rc = check_count("--part-number-marker", pm)))
        return rc;
    char target[2048];
    snprintf(target, sizeof(target), "%s/%s", pos[0], pos[1]);
    char *base = upload_url(c, pos[0], pos[2], "/parts", pos[1]);
    if (!base)
        return fail(c, target, "InternalError", "out of memory");
    list_req q = {.target = target, .base = base, .all = all};
    list_param(&q, "part_number_marker", pm);
    list_param(&q, "max_parts", max);
    static const page_spec sp = {"parts", {"next_part_number_marker", NULL},
                                 {"part_number_marker", NULL}};
    json_t *j = list_fetch(c, &q, &sp, &rc);
    free(base);
    return j ? list_output(c, j, parts_print) : rc;
}

static int cmd_mpu(cli *c, int argc, char **argv) {
    static const struct {
        const char *name, *cmd;
        int (*fn)(cli *, int, char **);
    } subs[] = {{"create", "mpu create", cmd_mpu_create},
                {"part", "mpu part", cmd_mpu_part},
                {"complete", "mpu complete", cmd_mpu_complete},
                {"abort", "mpu abort", cmd_mpu_abort},
                {"ls", "mpu ls", cmd_mpu_ls},
                {"parts", "mpu parts", cmd_mpu_parts}};
    if (argc < 1)
        return usage_error("mpu needs a subcommand (create, part, complete, abort, "
                           "ls, parts)%s", "");
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        if (!strcmp(argv[0], subs[i].name)) {
            c->cmd = subs[i].cmd;
            return subs[i].fn(c, argc - 1, argv + 1);
        }
    return usage_error("unknown mpu subcommand \"%s\"", argv[0]);
}

/* ---- stats: usage counters (issue 6) ---- */

/* "1.5 MiB (1572864 bytes)"; under 1 KiB just "512 bytes". */
static void human_size(unsigned long long n, char *out, size_t size) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(out, size, "%llu %s", n, n == 1 ? "byte" : "bytes");
        return;
    }
    double v = (double)n / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, size, "%.1f %s (%llu bytes)", v, units[u], n);
}

static unsigned long long ju64(json_t *o, const char *name) {
    json_int_t v = jint(o, name);
    return v < 0 ? 0 : (unsigned long long)v;
}

static void stats_count_line(json_t *j, const char *name) {
    if (json_object_get(j, name))
        printf("%s: %llu\n", name, ju64(j, name));
}

static void stats_size_line(json_t *j, const char *name) {
    char h[96];
    if (!json_object_get(j, name))
        return;
    human_size(ju64(j, name), h, sizeof(h));
    printf("%s: %s\n", name, h);
}

static void stats_quota_line(json_t *j) {
    json_t *q = json_object_get(j, "quota");
    if (!json_is_object(q))
        return;
    unsigned long long mb = ju64(q, "max_bytes"), mo = ju64(q, "max_objects");
    if (!mb && !mo) {
        printf("quota: none\n");
        return;
    }
    char h[96] = "unlimited", o[32] = "unlimited";
    if (mb)
        human_size(mb, h, sizeof(h));
    if (mo)
        snprintf(o, sizeof(o), "%llu", mo);
    printf("quota: max_bytes %s, max_objects %s\n", h, o);
}

static void stats_print(json_t *j) {
    if (json_object_get(j, "bucket"))
        printf("bucket: %s\n", jstr(j, "bucket"));
    if (json_object_get(j, "tenant"))
        printf("tenant: %s\n", jstr(j, "tenant"));
    stats_count_line(j, "tenants");
    stats_count_line(j, "buckets");
    stats_count_line(j, "objects");
    stats_size_line(j, "bytes");
    stats_count_line(j, "versions");
    stats_size_line(j, "version_bytes");
    stats_count_line(j, "noncurrent_versions");
    stats_size_line(j, "noncurrent_bytes");
    stats_count_line(j, "delete_markers");
    stats_count_line(j, "uploads");
    stats_size_line(j, "upload_part_bytes");
    stats_quota_line(j);
}

static void stats_top_print(json_t *j) {
    static const char *const head[] = {"BUCKET", "TENANT", "OBJECTS", "BYTES",
                                       "VERSIONS"};
    static const int right[] = {0, 0, 1, 1, 1};
    table t = {.ncols = 5, .head = head, .right = right};
    size_t i;
    json_t *v;
    json_t *rows = json_object_get(j, "buckets");
    json_array_foreach(rows, i, v) {
        char objs[32], bytes[96], vers[32];
        snprintf(objs, sizeof(objs), "%llu", ju64(v, "objects"));
        human_size(ju64(v, "bytes"), bytes, sizeof(bytes));
        snprintf(vers, sizeof(vers), "%llu", ju64(v, "versions"));
        const char *row[] = {jstr(v, "bucket"), jstr(v, "tenant"), objs, bytes, vers};
        table_add(&t, row);
    }
    table_print_free(&t);
    size_t n = json_array_size(rows);
    printf("%zu %s by %s\n", n, plural(n, "bucket", "buckets"), jstr(j, "by"));
}

/* The URL of the one stats request the arguments name (usage-checked). */
static int stats_url(cli *c, const char *bucket, const char *tenant, int top,
                     const char *by, const char *limit, char **url) {
    *url = NULL;
    if (top) {
        if (asprintf(url, "%s/v1/stats/top", c->url) < 0)
            *url = NULL;
        if (*url && (query_add(c, url, "by", by) < 0 ||
                     query_add(c, url, "limit", limit) < 0)) {
            free(*url);
            *url = NULL;
        }
        return 0;
    }
    if (bucket) {
        *url = bucket_url(c, bucket, "/stats");
        return 0;
    }
    if (tenant) {
        char *e = cli_escape(c->h, tenant);
        if (e && asprintf(url, "%s/v1/tenants/%s/stats", c->url, e) < 0)
            *url = NULL;
        free(e);
        return 0;
    }
    if (asprintf(url, "%s/v1/stats", c->url) < 0)
        *url = NULL;
    return 0;
}

static int stats_check(const char *bucket, const char *tenant, int top,
                       const char *by, const char *limit) {
    unsigned long long n;
    if (bucket && tenant)
        return usage_error("stats takes a BUCKET or --tenant, not both%s", "");
    if (top && (bucket || tenant))
        return usage_error("--top lists buckets; it takes no BUCKET or --tenant%s", "");
    if (!top && (by || limit))
        return usage_error("--by and --limit go with --top%s", "");
    if (by && strcmp(by, "bytes") && strcmp(by, "objects") && strcmp(by, "versions"))
        return usage_error("--by must be bytes, objects or versions, not \"%s\"", by);
    if (limit && (parse_u64(limit, &n) < 0 || n < 1 || n > 100))
        return usage_error("--limit must be 1 to 100, not \"%s\"", limit);
    if (tenant && !*tenant)
        return usage_error("--tenant must not be empty%s", "");
    return 0;
}

/* objlog stats [BUCKET | --tenant T | --top [--by F] [--limit N]] */
static int cmd_stats(cli *c, int argc, char **argv) {
    const char *pos[1] = {NULL}, *tenant = NULL, *by = NULL, *limit = NULL;
    int top = 0, npos = 0;
    opt opts[] = {{"--tenant", 1, &tenant, NULL, NULL},
                  {"--top", 0, NULL, &top, NULL},
                  {"--by", 1, &by, NULL, NULL},
                  {"--limit", 1, &limit, NULL, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args_var(c, argc, argv, opts, pos, 0, 1, &npos);
    const char *bucket = npos ? pos[0] : NULL;
    if (rc || (rc = stats_check(bucket, tenant, top, by, limit)))
        return rc;
    char target[1100];
    snprintf(target, sizeof(target), "%s%s", bucket ? bucket : tenant ? "tenant " : "",
             bucket ? "" : tenant ? tenant : top ? "top" : "global");
    char *url;
    stats_url(c, bucket, tenant, top, by, limit, &url);
    cli_resp r;
    rc = request(c, target, "GET", url, NULL, NULL, &r);
    free(url);
    if (rc)
        return rc;
    if (c->json) {
        print_json_body(&r);
    } else {
        json_t *j = parse_json(c, target, &r, &rc);
        if (j) {
            if (top)
                stats_top_print(j);
            else
                stats_print(j);
        }
        json_decref(j);
    }
    cli_resp_free(&r);
    return rc;
}

/* ---- usage: objects and bytes per common prefix (issue 6) ---- */

typedef struct usage_args {
    const char *bucket, *prefix, *delimiter, *sort, *max_rows;
} usage_args;

static json_t *usage_page(cli *c, const usage_args *a, const char *cont, int *rc) {
    char *url = bucket_url(c, a->bucket, "/usage");
    if (url && (query_add(c, &url, "prefix", a->prefix) < 0 ||
                query_add(c, &url, "delimiter", a->delimiter) < 0 ||
                query_add(c, &url, "max_rows", a->max_rows) < 0 ||
                query_add(c, &url, "continuation_token", cont) < 0)) {
        free(url);
        url = NULL;
    }
    return get_json(c, a->bucket, url, rc);
}

/* Progress of a walk of several pages on stderr: one line rewritten in
 * place on a terminal, one line per page otherwise (logs). */
static void usage_progress(const char *bucket, long long rows, size_t groups, int tty) {
    fprintf(stderr, "%sobjlog: usage %s: %lld %s scanned, %zu %s so far%s",
            tty ? "\r" : "", bucket, rows, plural((size_t)rows, "row", "rows"), groups,
            plural(groups, "prefix", "prefixes"), tty ? "" : "\n");
}

/* Every page merged into the first: groups appended, the last page's
 * running direct/total, rows summed; the result has the one-page shape
 * (not truncated, no token). NULL with *rc on a failed page. */
static json_t *usage_walk(cli *c, const usage_args *a, int *rc) {
    json_t *acc = usage_page(c, a, NULL, rc);
    long long rows = acc ? (long long)jint(acc, "rows_scanned") : 0;
    int tty = isatty(fileno(stderr)), shown = 0;
    while (acc && json_is_true(json_object_get(acc, "is_truncated"))) {
        char *tok = strdup(jstr(acc, "next_continuation_token"));
        usage_progress(a->bucket, rows,
                       json_array_size(json_object_get(acc, "common_prefixes")), tty);
        shown = 1;
        json_t *page = tok ? usage_page(c, a, tok, rc) : NULL;
        free(tok);
        if (!page) {
            json_decref(acc);
            acc = NULL;
            break;
        }
        json_array_extend(json_object_get(acc, "common_prefixes"),
                          json_object_get(page, "common_prefixes"));
        json_object_set(acc, "direct", json_object_get(page, "direct"));
        json_object_set(acc, "total", json_object_get(page, "total"));
        json_object_set(acc, "is_truncated", json_object_get(page, "is_truncated"));
        json_object_set(acc, "next_continuation_token",
                        json_object_get(page, "next_continuation_token"));
        rows += (long long)jint(page, "rows_scanned");
        json_decref(page);
    }
    if (shown && tty)
        fputc('\n', stderr);
    if (!acc)
        return NULL;
    json_object_del(acc, "next_continuation_token");
    json_object_set_new(acc, "rows_scanned", json_integer(rows));
    return acc;
}

typedef struct usage_row {
    json_t *g;
    size_t order;                /* key order, for ties */
    unsigned long long metric;
} usage_row;

static int usage_row_cmp(const void *x, const void *y) {
    const usage_row *a = x, *b = y;
    if (a->metric != b->metric)
        return a->metric < b->metric ? 1 : -1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Reorders common_prefixes largest first by "bytes" or "objects"; ties
 * keep key order. "key" (the served order) leaves them. */
static void usage_sort(json_t *j, const char *by) {
    json_t *arr = json_object_get(j, "common_prefixes");
    size_t n = json_array_size(arr), i;
    json_t *g;
    if (!strcmp(by, "key") || n < 2)
        return;
    usage_row *rows = calloc(n, sizeof(*rows));
    json_t *sorted = json_array();
    if (!rows || !sorted) {
        free(rows);
        json_decref(sorted);
        return;
    }
    json_array_foreach(arr, i, g)
        rows[i] = (usage_row){.g = g, .order = i, .metric = ju64(g, by)};
    qsort(rows, n, sizeof(*rows), usage_row_cmp);
    for (i = 0; i < n; i++)
        json_array_append(sorted, rows[i].g);
    json_object_set_new(j, "common_prefixes", sorted);
    free(rows);
}

/* "12.3%" of total, "-" when the total is 0. */
static void usage_share(unsigned long long part, unsigned long long total, char *out,
                        size_t n) {
    if (!total)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%.1f%%", (double)part * 100.0 / (double)total);
}

static void usage_row_add(table *t, const char *name, json_t *counts,
                          unsigned long long total_bytes) {
    char objs[32], bytes[96], share[16];
    snprintf(objs, sizeof(objs), "%llu", ju64(counts, "objects"));
    human_size(ju64(counts, "bytes"), bytes, sizeof(bytes));
    usage_share(ju64(counts, "bytes"), total_bytes, share, sizeof(share));
    const char *row[] = {name, objs, bytes, share};
    table_add(t, row);
}

static void usage_print(json_t *j) {
    static const char *const head[] = {"PREFIX", "OBJECTS", "BYTES", "%BYTES"};
    static const int right[] = {0, 1, 1, 1};
    table t = {.ncols = 4, .head = head, .right = right};
    json_t *total = json_object_get(j, "total");
    unsigned long long tb = ju64(total, "bytes");
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(j, "common_prefixes"), i, g)
        usage_row_add(&t, jstr(g, "prefix"), g, tb);
    usage_row_add(&t, "(direct)", json_object_get(j, "direct"), tb);
    usage_row_add(&t, "TOTAL", total, tb);
    table_print_free(&t);
}

/* objlog usage BUCKET [--prefix P] [--delimiter D] [--sort F] [--max-rows N] */
static int cmd_usage(cli *c, int argc, char **argv) {
    const char *pos[1];
    usage_args a = {0};
    opt opts[] = {{"--prefix", 1, &a.prefix, NULL, NULL},
                  {"--delimiter", 1, &a.delimiter, NULL, NULL},
                  {"--sort", 1, &a.sort, NULL, NULL},
                  {"--max-rows", 1, &a.max_rows, NULL, NULL},
                  {NULL, 0, NULL, NULL, NULL}};
    int rc = parse_args(c, argc, argv, opts, pos, 1);
    if (rc)
        return rc;
    unsigned long long n;
    if (!a.sort)
        a.sort = "key";
    if (strcmp(a.sort, "key") && strcmp(a.sort, "bytes") && strcmp(a.sort, "objects"))
        return usage_error("--sort must be key, bytes or objects, not \"%s\"", a.sort);
    if (a.max_rows && (parse_u64(a.max_rows, &n) < 0 || n < 1 || n > 100000))
        return usage_error("--max-rows must be 1 to 100000, not \"%s\"", a.max_rows);
    if (!a.delimiter)
        a.delimiter = "/";
    a.bucket = pos[0];
    json_t *j = usage_walk(c, &a, &rc);
    if (!j)
        return rc;
    usage_sort(j, a.sort);
    return list_output(c, j, usage_print);
}

int main(int argc, char **argv) {
    cli c = {0};
    const char *url_flag = NULL;
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        if (!strcmp(argv[i], "--json")) {
            c.json = 1;
        } else if (!strcmp(argv[i], "--url") && i + 1 < argc) {
            url_flag = argv[++i];
        } else if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("objlog %s (libobjlog_producer %s, librdkafka %s)\n", OBJLOG_VERSION_STR,
                   objlog_producer_version(), rd_kafka_version_str());
            return 0;
        } else {
            return usage_error("unknown option %s", argv[i]);
        }
    }
    if (i >= argc)
        return usage_error("missing command%s", "");
    c.cmd = argv[i];
    int rest_argc = argc - i - 1;
    char **rest = argv + i + 1;
    /* bench starts its own objlogd unless told where one runs, so only an
     * explicit --url counts there, not $OBJLOG_URL. */
    if (!strcmp(c.cmd, "bench"))
        return bench_main(rest_argc, rest, url_flag, c.json);
    c.url = url_flag ? url_flag : getenv("OBJLOG_URL");
    if (!c.url || !*c.url)
        c.url = DEFAULT_URL;
    if (!strcmp(c.cmd, "lag"))
        return lag_main(rest_argc, rest, c.url, c.json);
    if (!strcmp(c.cmd, "topics"))
        return topics_main(rest_argc, rest);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    c.h = curl_easy_init();
    int rc;
    if (!strcmp(c.cmd, "mb"))
        rc = cmd_mb(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "put"))
        rc = cmd_put(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "get"))
        rc = cmd_get_or_head(&c, rest_argc, rest, 0);
    else if (!strcmp(c.cmd, "head"))
        rc = cmd_get_or_head(&c, rest_argc, rest, 1);
    else if (!strcmp(c.cmd, "ls"))
        rc = cmd_ls(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "rm"))
        rc = cmd_rm(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "rb"))
        rc = cmd_rb(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "bucket"))
        rc = cmd_bucket(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "versioning"))
        rc = cmd_versioning(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "versions"))
        rc = cmd_versions(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "mpu"))
        rc = cmd_mpu(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "stats"))
        rc = cmd_stats(&c, rest_argc, rest);
    else if (!strcmp(c.cmd, "usage"))
        rc = cmd_usage(&c, rest_argc, rest);
    else
        rc = usage_error("unknown command \"%s\"", c.cmd);
    curl_easy_cleanup(c.h);
    curl_global_cleanup();
    return rc;
}
