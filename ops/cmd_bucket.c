/* cmd_bucket.c: the bucket commands of objlog: mb, rb, bucket (settings),
 * versioning, and `ls` without a bucket (GET /v1/buckets).
 * Invariant: a bucket write's --json result names the bucket and carries
 * the write's token and request id, nothing that is empty for a bucket
 * (a bucket has no version id or ETag). */
#define _GNU_SOURCE
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { O_TENANT = CLI_OPT_OWN, O_VERSIONING, O_MAX_VERSIONS, O_RPS, O_BURST, O_WRITE_RPS,
       O_WRITE_BURST, O_DELETE };

static const char *const names_bucket[] = {"BUCKET", "STATUS"};

/* Sends a bucket write; prints line, or with --json {bucket, extra..,
 * token, request_id}. extra: a name/value pair or NULL. */
static int bucket_write(cli *c, const char *bucket, const char *method, char *url,
                        const char *body, const char *line, const char *extra_name,
                        const char *extra_value) {
    int rc;
    json_t *j = cli_send_json(c, bucket, method, url, body, NULL, &rc);
    if (!j)
        return rc;
    if (c->json) {
        static const char *const keep[] = {"token", "request_id", NULL};
        json_t *out = json_pack("{s:s}", "bucket", bucket);
        if (extra_name)
            json_object_set_new(out, extra_name, json_string(extra_value));
        cli_pick(out, j, keep);
        cli_print_json(out);
    } else {
        fputs(line, stdout);
    }
    json_decref(j);
    return 0;
}

/* ---- mb ---- */

static const char mb_usage[] =
    "usage: objlog mb [--tenant T] [--versioning Enabled|Suspended]\n"
    "                 [--max-versions N] BUCKET\n"
    "Creates a bucket (3-63 characters of a-z, 0-9, '.', '-').\n";

static int cmd_mb(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"tenant", required_argument, NULL, O_TENANT},
        {"versioning", required_argument, NULL, O_VERSIONING},
        {"max-versions", required_argument, NULL, O_MAX_VERSIONS},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    const char *tenant = NULL, *versioning = NULL, *max_versions = NULL;
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_TENANT: tenant = optarg; break;
        case O_VERSIONING: versioning = optarg; break;
        case O_MAX_VERSIONS: max_versions = optarg; break;
        }
    }
    const char *pos[1];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 1, 1, names_bucket, &rc) < 0)
        return rc;
    if (versioning && strcmp(versioning, "Enabled") && strcmp(versioning, "Suspended"))
        return cli_usage_error(c, "--versioning must be Enabled or Suspended, not \"%s\"",
                               versioning);
    unsigned long long mv = 0;
    if (max_versions && (cli_parse_u64(max_versions, &mv) < 0 || mv == 0))
        return cli_usage_error(c, "--max-versions must be a positive number, not \"%s\"",
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
    char line[160];
    snprintf(line, sizeof(line), "make_bucket: %.100s\n", pos[0]);
    rc = bucket_write(c, pos[0], "PUT", cli_path(c, pos[0], NULL), body, line, NULL, NULL);
    free(body);
    return rc;
}

/* ---- rb, versioning ---- */

static const char rb_usage[] =
    "usage: objlog rb BUCKET\n"
    "Removes a bucket; it must hold no version, delete marker or upload.\n";

static int cmd_rb(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 1, names_bucket, &rc) < 0)
        return rc;
    char line[160];
    snprintf(line, sizeof(line), "remove_bucket: %.100s\n", pos[0]);
    return bucket_write(c, pos[0], "DELETE", cli_path(c, pos[0], NULL), NULL, line, NULL,
                        NULL);
}

static const char versioning_usage[] =
    "usage: objlog versioning BUCKET Enabled|Suspended\n"
    "Sets a bucket's versioning.\n";

static int cmd_versioning(cli *c, int argc, char **argv) {
    const char *pos[2];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 2, names_bucket, &rc) < 0)
        return rc;
    if (strcmp(pos[1], "Enabled") && strcmp(pos[1], "Suspended"))
        return cli_usage_error(c, "versioning must be Enabled or Suspended, not \"%s\"",
                               pos[1]);
    char body[64], line[160];
    snprintf(body, sizeof(body), "{\"status\":\"%s\"}", pos[1]);
    snprintf(line, sizeof(line), "versioning: %.100s %s\n", pos[0], pos[1]);
    return bucket_write(c, pos[0], "PUT", cli_bucket_url(c, pos[0], "/versioning"), body,
                        line, "versioning", pos[1]);
}

/* ---- bucket ---- */

static const char bucket_usage[] =
    "usage: objlog bucket BUCKET\n"
    "Prints a bucket's settings: tenant, versioning, version cap, quota, created.\n";

static int cmd_bucket(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 1, names_bucket, &rc) < 0)
        return rc;
    json_t *j = cli_get_json(c, pos[0], cli_path(c, pos[0], NULL), &rc);
    if (!j || c->json)
        return j ? cli_print_object(c, j) : rc;
    /* "partitions: 3 (on URL), 0": where the bucket's keys are applied */
    json_t *parts = json_incref(json_object_get(j, "partitions"));
    json_object_del(j, "partitions");
    cli_print_flat("", j);
    json_decref(j);
    json_t *p;
    size_t i;
    json_array_foreach(parts, i, p) {
        const char *node = cli_jstr(p, "node");
        printf("%s%lld%s%s%s", i ? ", " : "partitions: ", cli_jint(p, "partition"),
               *node ? " (on " : "", node, *node ? ")" : "");
    }
    if (json_array_size(parts))
        printf("\n");
    json_decref(parts);
    return 0;
}

/* ---- ratelimit (admission control) ---- */

static const char ratelimit_usage[] =
    "usage: objlog ratelimit BUCKET [--rps N] [--burst N] [--write-rps N]\n"
    "                        [--write-burst N] | [--delete]\n"
    "Without options prints the bucket's request-rate limit in force (its own,\n"
    "objlogd's --rate-limit-bucket default, or none) and its tenant's. --rps:\n"
    "every request per second; --write-rps: writes, on top; 0 = no limit, even\n"
    "over the default; --burst/--write-burst: the token bucket's depth (default\n"
    "the rate). Over it objlogd answers 503 SlowDown with Retry-After. --delete\n"
    "returns the bucket to the default. The setting is an event in the log.\n";

static int cmd_ratelimit(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"rps", required_argument, NULL, O_RPS},
        {"burst", required_argument, NULL, O_BURST},
        {"write-rps", required_argument, NULL, O_WRITE_RPS},
        {"write-burst", required_argument, NULL, O_WRITE_BURST},
        {"delete", no_argument, NULL, O_DELETE},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    static const char *const fields[] = {"rps", "burst", "write_rps", "write_burst"};
    const char *val[4] = {NULL, NULL, NULL, NULL};
    int del = 0, rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        if (o >= O_RPS && o <= O_WRITE_BURST)
            val[o - O_RPS] = optarg;
        else if (o == O_DELETE)
            del = 1;
    }
    const char *pos[1];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 1, 1, names_bucket, &rc) < 0)
        return rc;
    int any = val[0] || val[1] || val[2] || val[3];
    if (del && any)
        return cli_usage_error(c, "--delete takes no other option");
    if (del)
        return bucket_write(c, pos[0], "DELETE", cli_bucket_url(c, pos[0], "/ratelimit"),
                            NULL, "ratelimit: deleted (the default applies)\n", NULL, NULL);
    if (!any) {
        json_t *j = cli_get_json(c, pos[0], cli_bucket_url(c, pos[0], "/ratelimit"), &rc);
        if (!j)
            return rc;
        if (c->json) {
            cli_print_json(j); /* takes j */
            return 0;
        }
        cli_print_flat("", j);
        json_decref(j);
        return 0;
    }
    if (!val[0] && !val[2])
        return cli_usage_error(c, "give --rps and/or --write-rps (0 = no limit)");
    json_t *b = json_object();
    for (int i = 0; i < 4; i++) {
        unsigned long long v;
        if (!val[i])
            continue;
        if (cli_parse_u64(val[i], &v) < 0 || v > 1000000) {
            json_decref(b);
            return cli_usage_error(c, "--%s must be 0 to 1000000, not \"%s\"",
                                   opts[i].name, val[i]);
        }
        json_object_set_new(b, fields[i], json_integer((json_int_t)v));
    }
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char line[300];
    snprintf(line, sizeof(line), "ratelimit: %.100s %s\n", pos[0], body);
    rc = bucket_write(c, pos[0], "PUT", cli_bucket_url(c, pos[0], "/ratelimit"), body, line,
                      NULL, NULL);
    free(body);
    return rc;
}

/* ---- ls without a bucket ---- */

static void buckets_print(cli *c, json_t *j) {
    (void)c;
    static const char *const head[] = {"NAME", "TENANT", "VERSIONING", "CREATED"};
    static const int right[] = {0, 0, 0, 0};
    cli_table t = {.ncols = 4, .head = head, .right = right};
    json_t *bs = json_object_get(j, "buckets");
    size_t i;
    json_t *b;
    json_array_foreach(bs, i, b) {
        const char *vs = cli_jstr(b, "versioning");
        const char *row[] = {cli_jstr(b, "name"), cli_jstr(b, "tenant"), *vs ? vs : "-",
                             cli_jstr(b, "created")};
        cli_table_add(&t, row);
    }
    cli_table_print_free(&t);
    size_t n = json_array_size(bs);
    printf("%zu %s%s\n", n, cli_plural(n, "bucket", "buckets"), cli_truncated_note(j));
}

int cli_list_buckets(cli *c, const char *prefix, const char *tenant, const char *max,
                     const char *consistency, const char *token, int all) {
    int rc = cli_check_range(c, "--max-buckets", max, 1, 1000);
    if (rc)
        return rc;
    char *base = NULL;
    if (asprintf(&base, "%s/v1/buckets", c->url) < 0)
        base = NULL; /* its contents are undefined on failure */
    cli_list_req q = {.target = "buckets", .all = all};
    cli_list_param(&q, "prefix", prefix);
    cli_list_param(&q, "tenant", tenant);
    cli_list_param(&q, "max_buckets", max);
    cli_list_token_params(&q, consistency, token);
    static const cli_page_spec sp = {"buckets", {"next_continuation_token", NULL},
                                     {"continuation_token", NULL}};
    json_t *j = cli_list_get(c, &q, base, &sp, &rc);
    if (!j)
        return rc;
    json_object_set_new(j, "bucket_count",
                        json_integer((json_int_t)json_array_size(json_object_get(j, "buckets"))));
    return cli_list_output(c, j, buckets_print);
}

const cli_cmd cli_bucket_cmds[] = {
    {"mb", "mb", cmd_mb, mb_usage, NULL},
    {"rb", "rb", cmd_rb, rb_usage, NULL},
    {"bucket", "bucket", cmd_bucket, bucket_usage, NULL},
    {"versioning", "versioning", cmd_versioning, versioning_usage, NULL},
    {"ratelimit", "ratelimit", cmd_ratelimit, ratelimit_usage, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
