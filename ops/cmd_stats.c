/* cmd_stats.c: the usage commands of objlog: stats (the usage
 * counters of a bucket, a tenant, everything, or the top buckets) and usage
 * (objects and bytes per common prefix one level down, every page walked).
 * Invariant: arguments are checked before any request; the readable sizes
 * come from cli_size, --json prints the server's counters untouched. */
#define _GNU_SOURCE
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    O_TENANT = CLI_OPT_OWN, O_TOP, O_BY, O_LIMIT, O_PREFIX, O_DELIMITER, O_SORT,
    O_MAX_ROWS
};

static const char *const names_bucket[] = {"BUCKET"};

/* ---- stats ---- */

/* "name: 1.5 KiB (1536 B)": the exact count too past 1 KiB. */
static void size_line(cli *c, json_t *j, const char *name) {
    char h[64];
    if (!json_object_get(j, name))
        return;
    unsigned long long n = cli_ju64(j, name);
    cli_size(c, n, h, sizeof(h));
    if (c->bytes || n < 1024)
        printf("%s: %s\n", name, h);
    else
        printf("%s: %s (%llu B)\n", name, h, n);
}

static void count_line(json_t *j, const char *name) {
    if (json_object_get(j, name))
        printf("%s: %llu\n", name, cli_ju64(j, name));
}

static void quota_line(cli *c, json_t *j) {
    json_t *q = json_object_get(j, "quota");
    if (!json_is_object(q))
        return;
    unsigned long long mb = cli_ju64(q, "max_bytes"), mo = cli_ju64(q, "max_objects");
    if (!mb && !mo) {
        printf("quota: none\n");
        return;
    }
    char h[64] = "unlimited", o[32] = "unlimited";
    if (mb)
        cli_size(c, mb, h, sizeof(h));
    if (mo)
        snprintf(o, sizeof(o), "%llu", mo);
    printf("quota: max_bytes %s, max_objects %s\n", h, o);
}

static void stats_print(cli *c, json_t *j) {
    if (json_object_get(j, "bucket"))
        printf("bucket: %s\n", cli_jstr(j, "bucket"));
    if (json_object_get(j, "tenant"))
        printf("tenant: %s\n", cli_jstr(j, "tenant"));
    count_line(j, "tenants");
    count_line(j, "buckets");
    count_line(j, "objects");
    size_line(c, j, "bytes");
    count_line(j, "versions");
    size_line(c, j, "version_bytes");
    count_line(j, "noncurrent_versions");
    size_line(c, j, "noncurrent_bytes");
    count_line(j, "delete_markers");
    count_line(j, "uploads");
    size_line(c, j, "upload_part_bytes");
    quota_line(c, j);
}

static void stats_top_print(cli *c, json_t *j) {
    static const char *const head[] = {"BUCKET", "TENANT", "OBJECTS", "BYTES", "VERSIONS"};
    static const int right[] = {0, 0, 1, 1, 1};
    cli_table t = {.ncols = 5, .head = head, .right = right};
    size_t i;
    json_t *v;
    json_t *rows = json_object_get(j, "buckets");
    json_array_foreach(rows, i, v) {
        char objs[32], bytes[64], vers[32];
        snprintf(objs, sizeof(objs), "%llu", cli_ju64(v, "objects"));
        cli_size(c, cli_ju64(v, "bytes"), bytes, sizeof(bytes));
        snprintf(vers, sizeof(vers), "%llu", cli_ju64(v, "versions"));
        const char *row[] = {cli_jstr(v, "bucket"), cli_jstr(v, "tenant"), objs, bytes,
                             vers};
        cli_table_add(&t, row);
    }
    cli_table_print_free(&t);
    size_t n = json_array_size(rows);
    printf("%zu %s by %s\n", n, cli_plural(n, "bucket", "buckets"), cli_jstr(j, "by"));
}

/* The URL of the one stats request the arguments name. */
static char *stats_url(cli *c, const char *bucket, const char *tenant, int top,
                       const char *by, const char *limit) {
    char *url = NULL;
    if (bucket)
        return cli_bucket_url(c, bucket, "/stats");
    if (tenant) {
        char *e = cli_escape(c->h, tenant);
        if (!e || asprintf(&url, "%s/v1/tenants/%s/stats", c->url, e) < 0)
            url = NULL;
        free(e);
        return url;
    }
    if (asprintf(&url, "%s/v1/stats%s", c->url, top ? "/top" : "") < 0)
        return NULL;
    if (cli_query_add(c, &url, "by", by) < 0 || cli_query_add(c, &url, "limit", limit) < 0) {
        free(url);
        url = NULL;
    }
    return url;
}

static int stats_check(cli *c, const char *bucket, const char *tenant, int top,
                       const char *by, const char *limit) {
    unsigned long long n;
    if (bucket && tenant)
        return cli_usage_error(c, "stats takes a BUCKET or --tenant, not both");
    if (top && (bucket || tenant))
        return cli_usage_error(c, "--top lists buckets; it takes no BUCKET or --tenant");
    if (!top && (by || limit))
        return cli_usage_error(c, "--by and --limit go with --top");
    if (by && strcmp(by, "bytes") && strcmp(by, "objects") && strcmp(by, "versions"))
        return cli_usage_error(c, "--by must be bytes, objects or versions, not \"%s\"", by);
    if (limit && (cli_parse_u64(limit, &n) < 0 || n < 1 || n > 100))
        return cli_usage_error(c, "--limit must be 1 to 100, not \"%s\"", limit);
    if (tenant && !*tenant)
        return cli_usage_error(c, "--tenant must not be empty");
    return 0;
}

static const char stats_usage[] =
    "usage: objlog stats [--bytes] [BUCKET | --tenant T | --top [--by F] [--limit N]]\n"
    "Usage counters: of a bucket, of a tenant's buckets, or (no argument) of\n"
    "everything; --top: the N (1..100, default 10) largest buckets by F\n"
    "(bytes, objects or versions).\n";

static int cmd_stats(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"tenant", required_argument, NULL, O_TENANT},
        {"top", no_argument, NULL, O_TOP},
        {"by", required_argument, NULL, O_BY},
        {"limit", required_argument, NULL, O_LIMIT},
        CLI_BYTES_OPTION, CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    const char *tenant = NULL, *by = NULL, *limit = NULL;
    int top = 0, rc = 0, o, n;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_TENANT: tenant = optarg; break;
        case O_TOP: top = 1; break;
        case O_BY: by = optarg; break;
        case O_LIMIT: limit = optarg; break;
        }
    }
    const char *pos[1] = {NULL};
    if (o == CLI_STOP || (n = cli_positionals(c, argc, argv, pos, 0, 1, names_bucket, &rc)) < 0)
        return rc;
    const char *bucket = n ? pos[0] : NULL;
    if ((rc = stats_check(c, bucket, tenant, top, by, limit)))
        return rc;
    char target[1100];
    snprintf(target, sizeof(target), "%s%s", bucket ? bucket : tenant ? "tenant " : "",
             bucket ? "" : tenant ? tenant : top ? "top" : "global");
    json_t *j = cli_get_json(c, target, stats_url(c, bucket, tenant, top, by, limit), &rc);
    if (!j)
        return rc;
    return cli_list_output(c, j, top ? stats_top_print : stats_print);
}

/* ---- usage ---- */

typedef struct usage_args {
    const char *bucket, *prefix, *delimiter, *sort, *max_rows;
} usage_args;

static json_t *usage_page(cli *c, const usage_args *a, const char *cont, int *rc) {
    char *url = cli_bucket_url(c, a->bucket, "/usage");
    if (url && (cli_query_add(c, &url, "prefix", a->prefix) < 0 ||
                cli_query_add(c, &url, "delimiter", a->delimiter) < 0 ||
                cli_query_add(c, &url, "max_rows", a->max_rows) < 0 ||
                cli_query_add(c, &url, "continuation_token", cont) < 0)) {
        free(url);
        url = NULL;
    }
    return cli_get_json(c, a->bucket, url, rc);
}

/* Progress of a walk of several pages on stderr: one line rewritten in
 * place on a terminal, one line per page otherwise (logs). */
static void usage_progress(const char *bucket, long long rows, size_t groups, int tty) {
    fprintf(stderr, "%sobjlog: usage %s: %lld %s scanned, %zu %s so far%s",
            tty ? "\r" : "", bucket, rows, cli_plural((size_t)rows, "row", "rows"), groups,
            cli_plural(groups, "prefix", "prefixes"), tty ? "" : "\n");
}

/* Every page merged into the first: groups appended, the last page's
 * running direct/total, rows summed; the result has the one-page shape
 * (not truncated, no token). NULL with *rc on a failed page. */
static json_t *usage_walk(cli *c, const usage_args *a, int *rc) {
    json_t *acc = usage_page(c, a, NULL, rc);
    long long rows = acc ? cli_jint(acc, "rows_scanned") : 0;
    /* Progress is for a person: not with --json, whose stderr is errors. */
    int tty = isatty(fileno(stderr)), shown = 0;
    while (acc && json_is_true(json_object_get(acc, "is_truncated"))) {
        char *tok = strdup(cli_jstr(acc, "next_continuation_token"));
        if (!c->json)
            usage_progress(a->bucket, rows,
                           json_array_size(json_object_get(acc, "common_prefixes")), tty);
        shown = !c->json;
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
        rows += cli_jint(page, "rows_scanned");
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
        rows[i] = (usage_row){.g = g, .order = i, .metric = cli_ju64(g, by)};
    qsort(rows, n, sizeof(*rows), usage_row_cmp);
    for (i = 0; i < n; i++)
        json_array_append(sorted, rows[i].g);
    json_object_set_new(j, "common_prefixes", sorted);
    free(rows);
}

static void usage_row_add(cli *c, cli_table *t, const char *name, json_t *counts,
                          unsigned long long total_bytes) {
    char objs[32], bytes[64], share[16];
    unsigned long long b = cli_ju64(counts, "bytes");
    snprintf(objs, sizeof(objs), "%llu", cli_ju64(counts, "objects"));
    cli_size(c, b, bytes, sizeof(bytes));
    if (!total_bytes)
        snprintf(share, sizeof(share), "-");
    else
        snprintf(share, sizeof(share), "%.1f%%", (double)b * 100.0 / (double)total_bytes);
    const char *row[] = {name, objs, bytes, share};
    cli_table_add(t, row);
}

static void usage_print(cli *c, json_t *j) {
    static const char *const head[] = {"PREFIX", "OBJECTS", "BYTES", "%BYTES"};
    static const int right[] = {0, 1, 1, 1};
    cli_table t = {.ncols = 4, .head = head, .right = right};
    json_t *total = json_object_get(j, "total");
    unsigned long long tb = cli_ju64(total, "bytes");
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(j, "common_prefixes"), i, g)
        usage_row_add(c, &t, cli_jstr(g, "prefix"), g, tb);
    usage_row_add(c, &t, "(direct)", json_object_get(j, "direct"), tb);
    usage_row_add(c, &t, "TOTAL", total, tb);
    cli_table_print_free(&t);
}

static const char usage_usage[] =
    "usage: objlog usage [--prefix P] [--delimiter D] [--sort key|bytes|objects]\n"
    "                    [--max-rows N] [--bytes] BUCKET\n"
    "Objects and bytes per common prefix one level down (PREFIX OBJECTS BYTES\n"
    "%BYTES); delimiter \"/\" unless given (\"\" = none); (direct) = keys at this\n"
    "level. Every page is walked (--max-rows: rows a page reads, 1..100000).\n";

static int cmd_usage(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"prefix", required_argument, NULL, O_PREFIX},
        {"delimiter", required_argument, NULL, O_DELIMITER},
        {"sort", required_argument, NULL, O_SORT},
        {"max-rows", required_argument, NULL, O_MAX_ROWS},
        CLI_BYTES_OPTION, CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    usage_args a = {.sort = "key", .delimiter = "/"};
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_PREFIX: a.prefix = optarg; break;
        case O_DELIMITER: a.delimiter = optarg; break;
        case O_SORT: a.sort = optarg; break;
        case O_MAX_ROWS: a.max_rows = optarg; break;
        }
    }
    const char *pos[1];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 1, 1, names_bucket, &rc) < 0)
        return rc;
    if (strcmp(a.sort, "key") && strcmp(a.sort, "bytes") && strcmp(a.sort, "objects"))
        return cli_usage_error(c, "--sort must be key, bytes or objects, not \"%s\"", a.sort);
    if ((rc = cli_check_range(c, "--max-rows", a.max_rows, 1, 100000)))
        return rc;
    a.bucket = pos[0];
    json_t *j = usage_walk(c, &a, &rc);
    if (!j)
        return rc;
    usage_sort(j, a.sort);
    return cli_list_output(c, j, usage_print);
}

const cli_cmd cli_stats_cmds[] = {
    {"stats", "stats", cmd_stats, stats_usage, NULL},
    {"usage", "usage", cmd_usage, usage_usage, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
