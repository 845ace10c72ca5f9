/* cmd_blobs.c: `objlog blobs ls`, the blob ids the asked node's
 * partitions reference (GET /v1/blobs, admin only): one id per line, then
 * a footer with the count and the applied offset of each partition the
 * listing reflects at least. --all follows next_after to the end.
 *
 * Invariant: arguments are checked before any request; with --all the
 * pages are asked in strictly increasing order of `after`, so a listing
 * always ends, and the positions shown are the first page's (every later
 * page reflects at least those). --json prints the server's answer (with
 * --all, the pages merged: no next_after). */
#define _GNU_SOURCE
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOBS_MAX_LIMIT 10000

/* One page after `after` (NULL: the first), or NULL with *rc set. */
static json_t *blobs_page(cli *c, const char *after, const char *limit, int *rc) {
    char *url = NULL;
    if (asprintf(&url, "%s/v1/blobs", c->url) < 0)
        url = NULL;
    if (url && (cli_query_add(c, &url, "after", after) < 0 ||
                cli_query_add(c, &url, "limit", limit) < 0)) {
        free(url);
        url = NULL;
    }
    json_t *j = cli_get_json(c, c->url, url, rc);
    if (j && !json_is_array(json_object_get(j, "blobs"))) {
        json_decref(j);
        *rc = cli_fail(c, c->url, "InvalidResponse", "the answer has no blobs array", 0, NULL);
        return NULL;
    }
    return j;
}

/* Appends every page after acc's first onto acc (its blobs), dropping
 * next_after once the listing ended. 0, or an exit code. */
static int blobs_rest(cli *c, json_t *acc, const char *limit) {
    json_t *blobs = json_object_get(acc, "blobs");
    char *after = NULL;
    int rc = 0;
    while (!rc && json_is_string(json_object_get(acc, "next_after"))) {
        const char *next = json_string_value(json_object_get(acc, "next_after"));
        if (after && strcmp(next, after) <= 0) {
            rc = cli_fail(c, c->url, "InvalidResponse",
                          "next_after does not move forward: the listing would not end", 0,
                          NULL);
            break;
        }
        free(after);
        if (!(after = strdup(next))) {
            rc = cli_fail(c, c->url, "InternalError", "out of memory", 0, NULL);
            break;
        }
        json_t *page = blobs_page(c, after, limit, &rc);
        if (!page)
            break;
        json_array_extend(blobs, json_object_get(page, "blobs"));
        json_t *n = json_object_get(page, "next_after");
        if (n)
            json_object_set(acc, "next_after", n);
        else
            json_object_del(acc, "next_after");
        json_decref(page);
    }
    free(after);
    return rc;
}

static void blobs_print(cli *c, json_t *j) {
    (void)c;
    json_t *blobs = json_object_get(j, "blobs"), *v;
    size_t i, n = json_array_size(blobs);
    json_array_foreach(blobs, i, v)
        printf("%s\n", json_string_value(v) ? json_string_value(v) : "");
    printf("%zu blob %s", n, cli_plural(n, "id", "ids"));
    if (*cli_jstr(j, "node"))
        printf(" on %s", cli_jstr(j, "node"));
    printf(" (partitions:");
    json_t *positions = json_object_get(j, "positions");
    if (json_array_size(positions) == 0)
        printf(" none");
    json_array_foreach(positions, i, v)
        printf(" %lld:%lld", cli_jint(v, "partition"), cli_jint(v, "applied"));
    printf(")");
    if (json_is_string(json_object_get(j, "next_after")))
        printf("; more after %s (--after it, or --all)", cli_jstr(j, "next_after"));
    putchar('\n');
}

enum { O_AFTER = CLI_OPT_OWN, O_LIMIT, O_ALL };

static int blobs_ls(cli *c, int argc, char **argv) {
    static const struct option opts[] = {{"after", required_argument, NULL, O_AFTER},
                                         {"limit", required_argument, NULL, O_LIMIT},
                                         {"all", no_argument, NULL, O_ALL},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    int rc = 0, o, all = 0;
    const char *after = NULL, *limit = NULL;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        after = o == O_AFTER ? optarg : after;
        limit = o == O_LIMIT ? optarg : limit;
        all |= o == O_ALL;
    }
    if (o == CLI_STOP || cli_positionals(c, argc, argv, NULL, 0, 0, NULL, &rc) < 0)
        return rc;
    if ((rc = cli_check_range(c, "--limit", limit, 1, BLOBS_MAX_LIMIT)))
        return rc;
    json_t *j = blobs_page(c, after, limit, &rc);
    if (!j)
        return rc;
    if (all && (rc = blobs_rest(c, j, limit))) {
        json_decref(j);
        return rc;
    }
    return cli_list_output(c, j, blobs_print);
}

const cli_cmd cli_blobs_cmds[] = {
    {"ls", "blobs ls", blobs_ls,
     "usage: objlog blobs ls [--after ID] [--limit N] [--all]\n"
     "The blob ids referenced by a version or an upload's part in the partitions\n"
     "the node asked applies (GET /v1/blobs; admin only), in byte order, one a\n"
     "line, then \"N blob ids (partitions: P:OFFSET ...)\": the listing reflects\n"
     "at least each partition's log up to OFFSET. In a cluster, that node's\n"
     "partitions only: ask every node.\n"
     "  --after ID   start after this id\n"
     "  --limit N    ids per page, 1 to 10000 (default 1000)\n"
     "  --all        every page to the end (the positions are the first page's)\n"
     "--json prints the API's answer (with --all, the pages merged).\n",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};
