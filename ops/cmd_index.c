/* cmd_index.c: attribute index commands of the objlog CLI:
 * `objlog index put|get|delete|ls|values` and `objlog find`. Each is one
 * request (or, with --all, every page) to the query service's
 * /v1/buckets/{b}/indexes routes; errors are the service's, reported as
 * every command reports them (cli_fail). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    O_LM = CLI_OPT_OWN, O_EQ, O_FROM, O_TO, O_LM_FROM, O_LM_TO, O_MAX, O_ALL,
    O_CONSISTENCY, O_TOKEN
};

static const char *const names_ix[] = {"BUCKET", "NAME", "FIELD"};

/* {url}/v1/buckets/{b}/indexes[/{name}][suffix]. */
static char *ix_url(cli *c, const char *bucket, const char *name, const char *suffix) {
    char *en = name ? cli_escape(c->h, name) : NULL;
    size_t n = 16 + (en ? strlen(en) : 0) + (suffix ? strlen(suffix) : 0);
    char *s = malloc(n);
    if (!s) {
        free(en);
        return NULL;
    }
    snprintf(s, n, "/indexes%s%s%s", en ? "/" : "", en ? en : "", suffix ? suffix : "");
    free(en);
    char *url = cli_bucket_url(c, bucket, s);
    free(s);
    return url;
}

static void ix_print_one(json_t *o) {
    printf("%s  %s%s  %s", cli_jstr(o, "name"), cli_jstr(o, "field"),
           json_is_true(json_object_get(o, "last_modified")) ? " +last_modified" : "",
           cli_jstr(o, "status"));
    if (!strcmp(cli_jstr(o, "status"), "building"))
        printf(" (%llu of %llu objects indexed)", cli_ju64(o, "indexed_keys"),
               cli_ju64(o, "bucket_objects"));
    printf("\n");
}

/* ---- index put / delete ---- */

static const char put_usage[] =
    "usage: objlog index put BUCKET NAME FIELD [--last-modified]\n"
    "Declares index NAME of BUCKET on FIELD: content_type, storage_class,\n"
    "user_metadata.KEY or tag.KEY (sparse: objects without it are not in it).\n"
    "  --last-modified  composite: value, then last-modified (fast time ranges)\n"
    "On a bucket with objects the index is building until its backfill ends\n"
    "(objlog index get shows the progress); queries answer IndexBuilding.\n";

static int cmd_put(cli *c, int argc, char **argv) {
    static const struct option opts[] = {{"last-modified", no_argument, NULL, O_LM},
                                         CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int rc = 0, o, lm = 0;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0)
        lm |= o == O_LM;
    const char *pos[3];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 3, 3, names_ix, &rc) < 0)
        return rc;
    json_t *b = json_pack("{s:s, s:b}", "field", pos[2], "last_modified", lm);
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char line[512];
    snprintf(line, sizeof(line), "index: %.100s %.64s on %.200s%s\n", pos[0], pos[1], pos[2],
             lm ? " +last_modified" : "");
    rc = cli_write(c, pos[0], "PUT", ix_url(c, pos[0], pos[1], NULL), body, NULL, line);
    free(body);
    return rc;
}

static const char delete_usage[] =
    "usage: objlog index delete BUCKET NAME\n"
    "Drops the index and its rows.\n";

static int cmd_delete(cli *c, int argc, char **argv) {
    const char *pos[2];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 2, names_ix, &rc) < 0)
        return rc;
    char line[256];
    snprintf(line, sizeof(line), "dropped index: %.100s %.64s\n", pos[0], pos[1]);
    return cli_write(c, pos[0], "DELETE", ix_url(c, pos[0], pos[1], NULL), NULL, NULL, line);
}

/* ---- index get / ls ---- */

static const char get_usage[] =
    "usage: objlog index get BUCKET NAME\n"
    "An index: NAME FIELD STATUS (building: objects indexed so far).\n";

static const char ls_usage[] =
    "usage: objlog index ls BUCKET\n"
    "Every index of BUCKET with its status.\n";

static int ix_show(cli *c, int argc, char **argv, int one) {
    const char *pos[2];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, one ? 2 : 1, names_ix, &rc) < 0)
        return rc;
    json_t *j = cli_get_json(c, pos[0], ix_url(c, pos[0], one ? pos[1] : NULL, NULL), &rc);
    if (!j)
        return rc;
    if (c->json) {
        cli_print_json(j);
        return 0;
    }
    if (one) {
        ix_print_one(j);
    } else {
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(j, "indexes"), i, v) ix_print_one(v);
    }
    json_decref(j);
    return 0;
}

static int cmd_get(cli *c, int argc, char **argv) { return ix_show(c, argc, argv, 1); }
static int cmd_ls(cli *c, int argc, char **argv) { return ix_show(c, argc, argv, 0); }

/* ---- queries ---- */

typedef struct query_args {
    const char *eq, *from, *to, *lm_from, *lm_to, *max, *consistency, *token;
    int all;
} query_args;

static int query_opts(cli *c, int argc, char **argv, query_args *a, int *rc) {
    static const struct option opts[] = {
        {"eq", required_argument, NULL, O_EQ},
        {"from", required_argument, NULL, O_FROM},
        {"to", required_argument, NULL, O_TO},
        {"lm-from", required_argument, NULL, O_LM_FROM},
        {"lm-to", required_argument, NULL, O_LM_TO},
        {"max-keys", required_argument, NULL, O_MAX},
        {"all", no_argument, NULL, O_ALL},
        CLI_READ_OPTIONS(O_CONSISTENCY, O_TOKEN)};
    int o;
    memset(a, 0, sizeof(*a));
    while ((o = cli_getopt(c, argc, argv, opts, rc)) >= 0) {
        switch (o) {
        case O_EQ: a->eq = optarg; break;
        case O_FROM: a->from = optarg; break;
        case O_TO: a->to = optarg; break;
        case O_LM_FROM: a->lm_from = optarg; break;
        case O_LM_TO: a->lm_to = optarg; break;
        case O_MAX: a->max = optarg; break;
        case O_ALL: a->all = 1; break;
        case O_CONSISTENCY: a->consistency = optarg; break;
        case O_TOKEN: a->token = optarg; break;
        }
    }
    if (o == CLI_STOP)
        return -1;
    if (a->eq && (a->from || a->to)) {
        *rc = cli_usage_error(c, "--eq excludes --from and --to");
        return -1;
    }
    return (*rc = cli_check_consistency(c, a->consistency)) ? -1 : 0;
}

static json_t *query_fetch(cli *c, const char *bucket, const char *name, const query_args *a,
                           int values, int *rc) {
    cli_list_req q = {.target = bucket, .all = a->all};
    cli_list_param(&q, "eq", a->eq);
    cli_list_param(&q, "from", a->from);
    cli_list_param(&q, "to", a->to);
    cli_list_param(&q, "lm_from", a->lm_from);
    cli_list_param(&q, "lm_to", a->lm_to);
    cli_list_param(&q, values ? "max_values" : "max_keys", a->max);
    cli_list_token_params(&q, a->consistency, a->token);
    static const cli_page_spec objs = {"objects", {"next_continuation_token", NULL},
                                       {"continuation_token", NULL}};
    static const cli_page_spec vals = {"values", {"next_continuation_token", NULL},
                                       {"continuation_token", NULL}};
    return cli_list_get(c, &q, ix_url(c, bucket, name, values ? "/values" : "/objects"),
                        values ? &vals : &objs, rc);
}

static void find_print(cli *c, json_t *j) {
    static const char *const head[] = {"KEY", "SIZE", "LAST_MODIFIED", "ETAG"};
    static const int right[] = {0, 1, 0, 0};
    cli_table t = {.ncols = 4, .head = head, .right = right};
    json_t *objs = json_object_get(j, "objects"), *v;
    size_t i;
    unsigned long long total = 0;
    json_array_foreach(objs, i, v) {
        char size[32];
        cli_size(c, cli_ju64(v, "size"), size, sizeof(size));
        total += cli_ju64(v, "size");
        const char *row[] = {cli_jstr(v, "key"), size, cli_jstr(v, "last_modified"),
                             cli_jstr(v, "etag")};
        cli_table_add(&t, row);
    }
    cli_table_print_free(&t);
    char tot[32];
    cli_size(c, total, tot, sizeof(tot));
    size_t n = json_array_size(objs);
    printf("%zu %s, %s%s\n", n, cli_plural(n, "object", "objects"), tot,
           cli_truncated_note(j));
}

static void values_print(cli *c, json_t *j) {
    static const char *const head[] = {"VALUE", "OBJECTS", "SIZE"};
    static const int right[] = {0, 1, 1};
    cli_table t = {.ncols = 3, .head = head, .right = right};
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(j, "values"), i, v) {
        char n[32], size[32];
        snprintf(n, sizeof(n), "%llu", cli_ju64(v, "count"));
        cli_size(c, cli_ju64(v, "bytes"), size, sizeof(size));
        const char *row[] = {cli_jstr(v, "value"), n, size};
        cli_table_add(&t, row);
    }
    cli_table_print_free(&t);
    printf("%s", *cli_truncated_note(j) ? cli_truncated_note(j) + 1 : "");
    if (*cli_truncated_note(j))
        printf("\n");
}

static int ix_query(cli *c, int argc, char **argv, int values) {
    query_args a;
    int rc = 0;
    const char *pos[2];
    static const char *const names[] = {"BUCKET", "INDEX"};
    if (query_opts(c, argc, argv, &a, &rc) < 0 ||
        cli_positionals(c, argc, argv, pos, 2, 2, names, &rc) < 0)
        return rc;
    json_t *j = query_fetch(c, pos[0], pos[1], &a, values, &rc);
    if (!j)
        return rc;
    return cli_list_output(c, j, values ? values_print : find_print);
}

static const char values_usage[] =
    "usage: objlog index values BUCKET NAME [--eq V | --from V1 --to V2]\n"
    "Objects and bytes per value of the index (e.g. storage per customer),\n"
    "read from counters kept with the objects: no listing.\n"
    "  --max-keys N  values a page (1..1000)   --all  every page\n";

static int cmd_values(cli *c, int argc, char **argv) { return ix_query(c, argc, argv, 1); }

static const char find_usage[] =
    "usage: objlog find BUCKET INDEX [--eq V | --from V1 --to V2] [OPTIONS]\n"
    "Objects whose indexed field is V, or in [V1, V2) (either end optional),\n"
    "in value, (composite: last-modified,) key order; LIST's columns.\n"
    "  --lm-from MS --lm-to MS  last-modified in [MS, MS) (ms since the epoch)\n"
    "  --max-keys N  (1..1000)  --all  every page\n"
    "  --consistency strong|eventual|token  --token TOKEN  (see objlog help get)\n"
    "An index still building answers IndexBuilding (exit 1).\n";

static int cmd_find(cli *c, int argc, char **argv) { return ix_query(c, argc, argv, 0); }

static const cli_cmd index_subs[] = {
    {"put", "index put", cmd_put, put_usage, NULL},
    {"get", "index get", cmd_get, get_usage, NULL},
    {"delete", "index delete", cmd_delete, delete_usage, NULL},
    {"ls", "index ls", cmd_ls, ls_usage, NULL},
    {"values", "index values", cmd_values, values_usage, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

const cli_cmd cli_index_cmds[] = {
    {"index", "index", NULL,
     "usage: objlog index SUBCOMMAND ...\n"
     "  put BUCKET NAME FIELD [--last-modified]  declare an index\n"
     "  get BUCKET NAME            its definition and status\n"
     "  delete BUCKET NAME         drop it\n"
     "  ls BUCKET                  every index of the bucket\n"
     "  values BUCKET NAME         objects and bytes per value\n"
     "objlog find BUCKET INDEX --eq V queries one.\n",
     index_subs},
    {"find", "find", cmd_find, find_usage, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
