/* cmd_ranges.c: `objlog ranges ls`, the range map an objlogd routes and
 * fences by (GET /v1/ranges): its epoch, then one row per range: START
 * (the first route key, hex), BUCKET and KEY when the start lies inside a
 * bucket, PARTITION and STATE; and `objlog ranges split|move|merge`, the
 * handoffs (POST /v1/ranges/KIND), which print the new epoch, the
 * partitions, the request records moved and how long writes waited.
 *
 * Invariant: arguments are checked before any request; --json prints the
 * server's answer untouched. */
#define _GNU_SOURCE
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ranges_print(cli *c, json_t *j) {
    (void)c;
    static const char *const head[] = {"START", "BUCKET", "KEY", "PARTITION", "STATE"};
    static const int right[] = {0, 0, 0, 1, 0};
    cli_table t = {.ncols = 5, .head = head, .right = right};
    json_t *ranges = json_object_get(j, "ranges");
    size_t i;
    json_t *r;
    printf("epoch %lld, %zu %s\n", cli_jint(j, "epoch"), json_array_size(ranges),
           cli_plural(json_array_size(ranges), "range", "ranges"));
    json_array_foreach(ranges, i, r) {
        char part[24];
        const char *start = cli_jstr(r, "start");
        snprintf(part, sizeof(part), "%lld", cli_jint(r, "partition"));
        const char *row[] = {start[0] ? start : "(first)",
                             json_object_get(r, "bucket") ? cli_jstr(r, "bucket") : "-",
                             json_object_get(r, "key") ? cli_jstr(r, "key") : "-", part,
                             cli_jstr(r, "state")};
        cli_table_add(&t, row);
    }
    cli_table_print_free(&t);
}

static int ranges_ls(cli *c, int argc, char **argv) {
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, NULL, 0, NULL, &rc) < 0)
        return rc;
    char *url = NULL;
    if (asprintf(&url, "%s/v1/ranges", c->url) < 0)
        url = NULL;
    json_t *j = cli_get_json(c, c->url, url, &rc);
    if (!j)
        return rc;
    return cli_list_output(c, j, ranges_print);
}

/* ---- split, move, merge ---- */

enum { O_TO = 1000, O_KEY };

/* objlog ranges KIND BUCKET [--key K] [--to P]: POST /v1/ranges/KIND. */
static int ranges_handoff(cli *c, int argc, char **argv, const char *kind, int takes_to) {
    static const struct option opts[] = {{"to", required_argument, NULL, O_TO},
                                         {"key", required_argument, NULL, O_KEY},
                                         CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    static const char *const names[] = {"BUCKET"};
    int rc = 0, o;
    const char *to = NULL, *key = NULL;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        to = o == O_TO ? optarg : to;
        key = o == O_KEY ? optarg : key;
    }
    const char *pos[1];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, 1, 1, names, &rc) < 0)
        return rc;
    if (to && !takes_to)
        return cli_usage_error(c, "--to does not apply to a merge (the range joins the one "
                                  "before it)");
    if ((rc = cli_check_range(c, "--to", to, 0, 1000000)))
        return rc;
    if (key && !*key)
        return cli_usage_error(c, "--key must not be empty (leave it out for the bucket's "
                                  "first key)");
    json_t *b = json_pack("{s:s}", "bucket", pos[0]);
    if (b && key)
        json_object_set_new(b, "key", json_string(key));
    if (b && to)
        json_object_set_new(b, "to_partition", json_integer(strtoll(to, NULL, 10)));
    char *body = b ? json_dumps(b, JSON_COMPACT) : NULL;
    json_decref(b);
    if (!body)
        return cli_fail(c, pos[0], "InternalError", "out of memory", 0, NULL);
    char *url = NULL;
    if (asprintf(&url, "%s/v1/ranges/%s", c->url, kind) < 0)
        url = NULL;
    json_t *j = cli_send_json(c, pos[0], "POST", url, body, NULL, &rc);
    free(body);
    if (!j)
        return rc;
    if (c->json) {
        cli_print_json(j);
    } else {
        printf("%s: the range of %s%s%s moved from partition %lld to %lld, epoch %lld; %lld "
               "request records moved; %.3f s, writes held %.3f s\n",
               kind, pos[0], key ? "/" : "", key ? key : "", cli_jint(j, "from_partition"),
               cli_jint(j, "to_partition"),
               cli_jint(j, "epoch"), cli_jint(j, "imported_requests"),
               json_real_value(json_object_get(j, "seconds")),
               json_real_value(json_object_get(j, "writes_held_seconds")));
    }
    json_decref(j);
    return 0;
}

static int ranges_split(cli *c, int argc, char **argv) {
    return ranges_handoff(c, argc, argv, "split", 1);
}

static int ranges_move(cli *c, int argc, char **argv) {
    return ranges_handoff(c, argc, argv, "move", 1);
}

static int ranges_merge(cli *c, int argc, char **argv) {
    return ranges_handoff(c, argc, argv, "merge", 0);
}

const cli_cmd cli_ranges_cmds[] = {
    {"ls", "ranges ls", ranges_ls,
     "usage: objlog ranges ls [--json]\n"
     "The range map: its epoch, then per range its first route key (hex), the\n"
     "bucket and key it falls in (when inside a bucket), its partition and\n"
     "state.\n",
     NULL},
    {"split", "ranges split", ranges_split,
     "usage: objlog ranges split BUCKET [--key KEY] [--to PARTITION]\n"
     "Splits the range holding BUCKET at the bucket's first key (or at KEY\n"
     "inside it): from there on, the rest of that range moves to PARTITION\n"
     "(default: the least loaded one). Answers once the target applied the\n"
     "range's state. A bucket split inside lists and counts as one; while it\n"
     "spans partitions it cannot be indexed (merge it first).\n",
     NULL},
    {"move", "ranges move", ranges_move,
     "usage: objlog ranges move BUCKET [--key KEY] [--to PARTITION]\n"
     "Moves the whole range holding BUCKET (or BUCKET/KEY) to PARTITION\n"
     "(default: the least loaded one).\n",
     NULL},
    {"merge", "ranges merge", ranges_merge,
     "usage: objlog ranges merge BUCKET [--key KEY]\n"
     "Merges the range holding BUCKET (or BUCKET/KEY) into the range before\n"
     "it, on that range's partition.\n",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};
