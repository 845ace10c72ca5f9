/* cmd_ranges.c: `objlog ranges ls`, the range map an objlogd routes and
 * fences by (GET /v1/ranges): its epoch, then one row per range: START
 * (the first route key, hex), BUCKET and KEY when the start lies inside a
 * bucket, PARTITION and STATE.
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

const cli_cmd cli_ranges_cmds[] = {
    {"ls", "ranges ls", ranges_ls,
     "usage: objlog ranges ls [--json]\n"
     "The range map: its epoch, then per range its first route key (hex), the\n"
     "bucket and key it falls in (when inside a bucket), its partition and\n"
     "state.\n",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};
