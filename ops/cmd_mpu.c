/* cmd_mpu.c: `objlog mpu`, the metadata of multipart uploads: create, part,
 * complete, abort, ls (uploads in progress) and parts. Part numbers are
 * 1..10000 and a part's ETag is its MD5 (32 hex digits), checked here so a
 * typo fails at once rather than at complete. Invariant: every upload
 * request carries the key (the server routes the event by it). */
#define _GNU_SOURCE
#include "cli.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_META 64

enum {
    O_CTYPE = CLI_OPT_OWN, O_SCLASS, O_CHECKSUM, O_META, O_SIZE, O_ETAG, O_BLOB,
    O_IF_NONE_MATCH, O_IF_MATCH, O_PREFIX, O_DELIMITER, O_KEY_MARKER, O_UPLOAD_MARKER,
    O_MAX_UPLOADS, O_ALL, O_PART_MARKER, O_MAX_PARTS
};

static const char *const names_up[] = {"BUCKET", "KEY", "UPLOAD_ID", "N", "N:ETAG"};

static void target_of(char *out, size_t n, const char **pos) {
    snprintf(out, n, "%s/%s", pos[0], pos[1]);
}

/* URL of /v1/buckets/{b}/uploads[/{id}{suffix}]?key=K (key NULL: none). */
static char *upload_url(cli *c, const char *bucket, const char *id, const char *suffix,
                        const char *key) {
    char *eid = id ? cli_escape(c->h, id) : NULL;
    char *tail = NULL;
    if ((id && !eid) ||
        asprintf(&tail, "/uploads%s%s%s", id ? "/" : "", id ? eid : "",
                 suffix ? suffix : "") < 0)
        tail = NULL;
    free(eid);
    char *url = tail ? cli_bucket_url(c, bucket, tail) : NULL;
    free(tail);
    if (url && cli_query_add(c, &url, "key", key) < 0) {
        free(url);
        url = NULL;
    }
    return url;
}

/* --json of an upload write: {bucket, key, upload_id?} + the kept fields. */
static void upload_json(json_t *j, const char **pos, const char *upload_id,
                        const char *const *keep) {
    json_t *out = json_pack("{s:s, s:s}", "bucket", pos[0], "key", pos[1]);
    if (upload_id)
        json_object_set_new(out, "upload_id", json_string(upload_id));
    cli_pick(out, j, keep);
    cli_print_json(out);
}

/* ---- create ---- */

static const char create_usage[] =
    "usage: objlog mpu create [--content-type T] [--storage-class C]\n"
    "                         [--checksum C] [--meta NAME=VALUE ...] BUCKET KEY\n"
    "Starts a multipart upload; prints its upload_id.\n";

static int cmd_create(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"content-type", required_argument, NULL, O_CTYPE},
        {"storage-class", required_argument, NULL, O_SCLASS},
        {"checksum", required_argument, NULL, O_CHECKSUM},
        {"meta", required_argument, NULL, O_META},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    json_t *b = json_object(), *um = json_object();
    json_object_set_new(b, "user_metadata", um);
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        const char *field = o == O_CTYPE ? "content_type"
                          : o == O_SCLASS ? "storage_class"
                          : o == O_CHECKSUM ? "checksum" : NULL;
        if (field) {
            json_object_set_new(b, field, json_string(optarg));
            continue;
        }
        const char *eq = strchr(optarg, '=');
        if (!eq || eq == optarg) {
            json_decref(b);
            return cli_usage_error(c, "--meta takes name=value, not \"%s\"", optarg);
        }
        char *name = strndup(optarg, (size_t)(eq - optarg));
        json_object_set_new(um, name, json_string(eq + 1));
        free(name);
    }
    const char *pos[2];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 2, 2, names_up, &rc) < 0) {
        json_decref(b);
        return rc;
    }
    json_object_set_new(b, "key", json_string(pos[1]));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char target[2048];
    target_of(target, sizeof(target), pos);
    json_t *j = cli_send_json(c, target, "POST", upload_url(c, pos[0], NULL, NULL, NULL),
                              body, NULL, &rc);
    free(body);
    if (rc)
        return rc;
    static const char *const keep[] = {"upload_id", "token", "request_id", NULL};
    if (c->json)
        upload_json(j, pos, NULL, keep);
    else
        printf("key: %s\nupload_id: %s\ntoken: %s\n", pos[1], cli_jstr(j, "upload_id"),
               cli_jstr(j, "token"));
    json_decref(j);
    return 0;
}

/* ---- part ---- */

static const char part_usage[] =
    "usage: objlog mpu part --size N --etag MD5 [--blob-id ID] BUCKET KEY UPLOAD_ID N\n"
    "Records part N (1..10000) of an upload; MD5 is 32 hex digits.\n";

static int etag_is_md5(const char *e) {
    size_t n = strlen(e);
    for (size_t i = 0; n == 32 && i < n; i++)
        if (!isxdigit((unsigned char)e[i]))
            return 0;
    return n == 32;
}

static int cmd_part(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"size", required_argument, NULL, O_SIZE},
        {"etag", required_argument, NULL, O_ETAG},
        {"blob-id", required_argument, NULL, O_BLOB},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    const char *size = NULL, *etag = NULL, *blob = NULL;
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_SIZE: size = optarg; break;
        case O_ETAG: etag = optarg; break;
        case O_BLOB: blob = optarg; break;
        }
    }
    const char *pos[4];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 4, 4, names_up, &rc) < 0)
        return rc;
    unsigned long long n, sz;
    if (cli_parse_u64(pos[3], &n) < 0 || n < 1 || n > 10000)
        return cli_usage_error(c, "part number must be 1 to 10000, not \"%s\"", pos[3]);
    if (!size || !etag)
        return cli_usage_error(c, "mpu part needs --size and --etag");
    if (cli_parse_u64(size, &sz) < 0)
        return cli_usage_error(c, "--size must be a byte count, not \"%s\"", size);
    if (!etag_is_md5(etag))
        return cli_usage_error(c, "--etag must be the part's MD5, 32 hex digits, not \"%s\"",
                               etag);
    json_t *b = json_pack("{s:I, s:s}", "size", (json_int_t)sz, "etag", etag);
    if (blob)
        json_object_set_new(b, "blob_id", json_string(blob));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char target[2048], suffix[32];
    target_of(target, sizeof(target), pos);
    snprintf(suffix, sizeof(suffix), "/parts/%llu", n);
    json_t *j = cli_send_json(c, target, "PUT",
                              upload_url(c, pos[0], pos[2], suffix, pos[1]), body, NULL,
                              &rc);
    free(body);
    if (rc)
        return rc;
    if (c->json) {
        static const char *const keep[] = {"token", "request_id", NULL};
        json_t *out = json_pack("{s:s, s:s, s:s, s:I, s:s}", "bucket", pos[0], "key",
                                pos[1], "upload_id", pos[2], "part_number",
                                (json_int_t)n, "etag", etag);
        cli_pick(out, j, keep);
        cli_print_json(out);
    } else {
        printf("upload_id: %s\npart_number: %llu\netag: %s\ntoken: %s\n", pos[2], n, etag,
               cli_jstr(j, "token"));
    }
    json_decref(j);
    return 0;
}

/* ---- complete ---- */

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
        if (cli_parse_u64(num, &pn) < 0 || pn < 1 || pn > 10000) {
            *bad = i;
            json_decref(parts);
            return NULL;
        }
        json_array_append_new(parts, json_pack("{s:I, s:s}", "part_number", (json_int_t)pn,
                                               "etag", colon + 1));
    }
    return json_pack("{s:o}", "parts", parts);
}

static const char complete_usage[] =
    "usage: objlog mpu complete [--if-none-match] [--if-match ETAG]\n"
    "                           BUCKET KEY UPLOAD_ID N:ETAG...\n"
    "Completes an upload from its parts, in ascending part order: N:ETAG is a\n"
    "part number and the ETag given to `mpu part` for it. A whole round:\n"
    "  objlog mpu create docs big.iso                  # upload_id: U\n"
    "  objlog mpu part --size 5242880 --etag E1 docs big.iso U 1\n"
    "  objlog mpu part --size 1000 --etag E2 docs big.iso U 2\n"
    "  objlog mpu complete docs big.iso U 1:E1 2:E2    # every part but the\n"
    "                                                  # last is >= 5 MiB\n";

static int cmd_complete(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"if-none-match", no_argument, NULL, O_IF_NONE_MATCH},
        {"if-match", required_argument, NULL, O_IF_MATCH},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    const char *if_match = NULL;
    int if_none_match = 0, rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        if (o == O_IF_NONE_MATCH)
            if_none_match = 1;
        else if (o == O_IF_MATCH)
            if_match = optarg;
    }
    if (o == CLI_STOP)
        return rc;
    const char **pos = calloc((size_t)argc + 1, sizeof(*pos));
    if (!pos)
        return CLI_EXIT_FAIL;
    int npos = cli_positionals(c, argc, argv, pos, 4, argc, names_up, &rc);
    int bad = 0;
    json_t *b = npos < 0 ? NULL : complete_body(pos + 3, npos - 3, &bad);
    if (npos >= 0 && !b)
        rc = cli_usage_error(c, "parts are N:ETAG with N 1 to 10000, not \"%s\"",
                             pos[3 + bad]);
    if (!b) {
        free(pos);
        return rc;
    }
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char im[256], target[2048];
    const char *hdrs[3] = {NULL, NULL, NULL};
    int nh = 0;
    if (if_none_match)
        hdrs[nh++] = "If-None-Match: *";
    if (if_match) {
        snprintf(im, sizeof(im), "If-Match: %s", if_match);
        hdrs[nh++] = im;
    }
    target_of(target, sizeof(target), pos);
    json_t *j = cli_send_json(c, target, "POST",
                              upload_url(c, pos[0], pos[2], "/complete", pos[1]), body,
                              hdrs, &rc);
    free(body);
    if (!rc) {
        static const char *const keep[] = {"version_id", "etag", "token", "request_id",
                                           NULL};
        if (c->json)
            upload_json(j, pos, NULL, keep);
        else
            printf("key: %s\nversion_id: %s\netag: %s\ntoken: %s\n", pos[1],
                   cli_jstr(j, "version_id"), cli_jstr(j, "etag"), cli_jstr(j, "token"));
        json_decref(j);
    }
    free(pos);
    return rc;
}

/* ---- abort ---- */

static const char abort_usage[] =
    "usage: objlog mpu abort BUCKET KEY UPLOAD_ID\n"
    "Aborts an upload and forgets its parts.\n";

static int cmd_abort(cli *c, int argc, char **argv) {
    const char *pos[3];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 3, names_up, &rc) < 0)
        return rc;
    char target[2048];
    target_of(target, sizeof(target), pos);
    json_t *j = cli_send_json(c, target, "DELETE",
                              upload_url(c, pos[0], pos[2], NULL, pos[1]), NULL, NULL,
                              &rc);
    if (rc)
        return rc;
    static const char *const keep[] = {"token", "request_id", NULL};
    if (c->json)
        upload_json(j, pos, pos[2], keep);
    else
        printf("abort: %s (upload %s)\n", target, pos[2]);
    json_decref(j);
    return 0;
}

/* ---- ls, parts ---- */

static void uploads_print(cli *c, json_t *j) {
    (void)c;
    static const char *const head[] = {"KEY", "UPLOAD_ID", "INITIATED"};
    static const int right[] = {0, 0, 0};
    cli_table t = {.ncols = 3, .head = head, .right = right};
    size_t i;
    json_t *v;
    json_t *ups = json_object_get(j, "uploads");
    json_array_foreach(ups, i, v) {
        const char *row[] = {cli_jstr(v, "key"), cli_jstr(v, "upload_id"),
                             cli_jstr(v, "initiated")};
        cli_table_add(&t, row);
    }
    cli_print_prefixes(j);
    cli_table_print_free(&t);
    size_t nu = json_array_size(ups);
    size_t np = json_array_size(json_object_get(j, "common_prefixes"));
    printf("%zu %s, %zu %s%s\n", nu, cli_plural(nu, "upload", "uploads"), np,
           cli_plural(np, "prefix", "prefixes"), cli_truncated_note(j));
}

/* A count option: a usage error unless a number in lo..hi. */
static const char ls_usage[] =
    "usage: objlog mpu ls [--prefix P] [--delimiter D] [--key-marker K]\n"
    "                     [--upload-id-marker U] [--max-uploads N] [--all] BUCKET\n"
    "Lists the uploads in progress (KEY UPLOAD_ID INITIATED).\n";

static int cmd_ls(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"prefix", required_argument, NULL, O_PREFIX},
        {"delimiter", required_argument, NULL, O_DELIMITER},
        {"key-marker", required_argument, NULL, O_KEY_MARKER},
        {"upload-id-marker", required_argument, NULL, O_UPLOAD_MARKER},
        {"max-uploads", required_argument, NULL, O_MAX_UPLOADS},
        {"all", no_argument, NULL, O_ALL},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    const char *prefix = NULL, *delim = NULL, *km = NULL, *um = NULL, *max = NULL;
    int all = 0, rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_PREFIX: prefix = optarg; break;
        case O_DELIMITER: delim = optarg; break;
        case O_KEY_MARKER: km = optarg; break;
        case O_UPLOAD_MARKER: um = optarg; break;
        case O_MAX_UPLOADS: max = optarg; break;
        case O_ALL: all = 1; break;
        }
    }
    const char *pos[1];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 1, 1, names_up, &rc) < 0 ||
        (rc = cli_check_range(c, "--max-uploads", max, 0, 1000)))
        return rc;
    cli_list_req q = {.target = pos[0], .all = all};
    cli_list_param(&q, "prefix", prefix);
    cli_list_param(&q, "delimiter", delim);
    cli_list_param(&q, "key_marker", km);
    cli_list_param(&q, "upload_id_marker", um);
    cli_list_param(&q, "max_uploads", max);
    static const cli_page_spec sp = {"uploads",
                                     {"next_key_marker", "next_upload_id_marker"},
                                     {"key_marker", "upload_id_marker"}};
    return cli_list_run(c, &q, cli_bucket_url(c, pos[0], "/uploads"), &sp, uploads_print, &rc);
}

static void parts_print(cli *c, json_t *j) {
    static const char *const head[] = {"PART", "SIZE", "ETAG", "LAST_MODIFIED"};
    static const int right[] = {1, 1, 0, 0};
    cli_table t = {.ncols = 4, .head = head, .right = right};
    size_t i;
    json_t *v;
    unsigned long long total = 0;
    json_t *parts = json_object_get(j, "parts");
    json_array_foreach(parts, i, v) {
        char pn[16], size[32];
        snprintf(pn, sizeof(pn), "%lld", cli_jint(v, "part_number"));
        cli_size(c, cli_ju64(v, "size"), size, sizeof(size));
        total += cli_ju64(v, "size");
        const char *row[] = {pn, size, cli_jstr(v, "etag"), cli_jstr(v, "last_modified")};
        cli_table_add(&t, row);
    }
    cli_table_print_free(&t);
    size_t n = json_array_size(parts);
    char tot[32];
    cli_size(c, total, tot, sizeof(tot));
    printf("%zu %s, %s%s\n", n, cli_plural(n, "part", "parts"), tot, cli_truncated_note(j));
}

static const char parts_usage[] =
    "usage: objlog mpu parts [--part-number-marker N] [--max-parts N] [--all]\n"
    "                        [--bytes] BUCKET KEY UPLOAD_ID\n"
    "Lists an upload's recorded parts (PART SIZE ETAG LAST_MODIFIED).\n";

static int cmd_parts(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"part-number-marker", required_argument, NULL, O_PART_MARKER},
        {"max-parts", required_argument, NULL, O_MAX_PARTS},
        {"all", no_argument, NULL, O_ALL},
        CLI_BYTES_OPTION, CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    const char *pm = NULL, *max = NULL;
    int all = 0, rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_PART_MARKER: pm = optarg; break;
        case O_MAX_PARTS: max = optarg; break;
        case O_ALL: all = 1; break;
        }
    }
    const char *pos[3];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 3, 3, names_up, &rc) < 0 ||
        (rc = cli_check_range(c, "--max-parts", max, 0, 1000)) ||
        (rc = cli_check_range(c, "--part-number-marker", pm, 0, 10000)))
        return rc;
    char target[2048];
    target_of(target, sizeof(target), pos);
    cli_list_req q = {.target = target, .all = all};
    cli_list_param(&q, "part_number_marker", pm);
    cli_list_param(&q, "max_parts", max);
    static const cli_page_spec sp = {"parts", {"next_part_number_marker", NULL},
                                     {"part_number_marker", NULL}};
    return cli_list_run(c, &q, upload_url(c, pos[0], pos[2], "/parts", pos[1]), &sp,
                        parts_print, &rc);
}

const cli_cmd cli_mpu_cmds[] = {
    {"create", "mpu create", cmd_create, create_usage, NULL},
    {"part", "mpu part", cmd_part, part_usage, NULL},
    {"complete", "mpu complete", cmd_complete, complete_usage, NULL},
    {"abort", "mpu abort", cmd_abort, abort_usage, NULL},
    {"ls", "mpu ls", cmd_ls, ls_usage, NULL},
    {"parts", "mpu parts", cmd_parts, parts_usage, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
