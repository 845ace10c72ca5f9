/* cluster.c: `objlog cluster`, a cluster's nodes and who applies each
 * partition: GET /v1/cluster of the node --url names, as two tables
 * (NODE NAME STATE PARTITIONS STANDBY-FOR, nodes that left included for
 * a while; then PARTITION ACTIVE APPLIED END LAG STANDBYS) or, with
 * --json, the server's JSON. A node that is not in a cluster answers 404
 * NotACluster, which is the command's error. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cluster_usage_text[] =
    "usage: objlog cluster [--json]\n"
    "The cluster the node at --url belongs to: its nodes (URL, name, state: up,\n"
    "\"asked\" for the one asked, unreachable since when it stopped answering,\n"
    "or gone and when, for 10 minutes after a node left; the partitions it\n"
    "applies as active and as standby, or had when it left), then every\n"
    "partition's active node and its applied offset, the log's end and the lag\n"
    "(\"-\" while unknown), and its standbys with their lag in events.\n";

static void cluster_int_cell(json_t *o, const char *name, char *out, size_t n) {
    json_t *v = json_object_get(o, name);
    if (json_is_integer(v))
        snprintf(out, n, "%lld", (long long)json_integer_value(v));
    else
        snprintf(out, n, "-");
}

/* "0,2,5" from a JSON array of partition numbers; "-" when empty. */
static void cluster_list_cell(json_t *arr, char *out, size_t n) {
    size_t k, len = 0;
    json_t *p;
    out[0] = '\0';
    json_array_foreach(arr, k, p)
        if (len < n - 16)
            len += (size_t)snprintf(out + len, n - len, "%s%lld", k ? "," : "",
                                    (long long)json_integer_value(p));
    if (!out[0])
        snprintf(out, n, "-");
}

/* "URL (lag), ..." of a partition's standbys; "-" when none. */
static void cluster_standbys_cell(json_t *arr, char *out, size_t n) {
    size_t k, len = 0;
    json_t *s;
    out[0] = '\0';
    json_array_foreach(arr, k, s)
        if (len < n - 64)
            len += (size_t)snprintf(out + len, n - len, "%s%s (%lld)", k ? ", " : "",
                                    cli_jstr(s, "url"),
                                    (long long)json_integer_value(json_object_get(s, "lag")));
    if (!out[0])
        snprintf(out, n, "-");
}

/* "3m12s" of a count of seconds. */
static void cluster_ago(long long s, char *out, size_t n) {
    if (s >= 3600)
        snprintf(out, n, "%lldh%02lldm", s / 3600, s / 60 % 60);
    else if (s >= 60)
        snprintf(out, n, "%lldm%02llds", s / 60, s % 60);
    else
        snprintf(out, n, "%llds", s);
}

/* A member's STATE: up (this one: "up, asked"), or unreachable and since
 * when. */
static void cluster_state_cell(json_t *nd, char *out, size_t n) {
    const char *state = cli_jstr(nd, "state"), *since = cli_jstr(nd, "unreachable_since");
    if (!*state) /* a node from before states */
        state = json_is_true(json_object_get(nd, "reachable")) ? "up" : "unreachable";
    if (strcmp(state, "unreachable") == 0 && *since)
        snprintf(out, n, "unreachable since %s", since);
    else
        snprintf(out, n, "%s%s", state,
                 json_is_true(json_object_get(nd, "self")) ? ", asked" : "");
}

static void cluster_print(cli *c, json_t *j) {
    (void)c;
    static const char *const nhead[] = {"NODE", "NAME", "STATE", "PARTITIONS", "STANDBY-FOR"};
    static const int nright[] = {0, 0, 0, 0, 0};
    cli_table nt = {.ncols = 5, .head = nhead, .right = nright};
    size_t i;
    json_t *nd;
    json_array_foreach(json_object_get(j, "nodes"), i, nd) {
        char parts[512], standing[512], state[96];
        cluster_list_cell(json_object_get(nd, "partitions"), parts, sizeof(parts));
        cluster_list_cell(json_object_get(nd, "standbys"), standing, sizeof(standing));
        cluster_state_cell(nd, state, sizeof(state));
        const char *name = cli_jstr(nd, "name");
        const char *row[] = {cli_jstr(nd, "url"), *name ? name : "-", state, parts, standing};
        cli_table_add(&nt, row);
    }
    /* The nodes that left, for a while after: what they had, and when. */
    json_array_foreach(json_object_get(j, "departed"), i, nd) {
        char parts[512], state[96], ago[32];
        cluster_list_cell(json_object_get(nd, "partitions"), parts, sizeof(parts));
        cluster_ago((long long)json_integer_value(json_object_get(nd, "gone_seconds_ago")), ago,
                    sizeof(ago));
        snprintf(state, sizeof(state), "gone %s ago (%s)", ago, cli_jstr(nd, "gone_at"));
        const char *name = cli_jstr(nd, "name");
        const char *row[] = {cli_jstr(nd, "url"), *name ? name : "-", state, parts, "-"};
        cli_table_add(&nt, row);
    }
    printf("cluster %s (group %s), asked %s\n", cli_jstr(j, "cluster"), cli_jstr(j, "group"),
           cli_jstr(j, "self"));
    cli_table_print_free(&nt);
    static const char *const phead[] = {"PARTITION", "ACTIVE", "APPLIED", "END", "LAG",
                                        "STANDBYS (LAG)"};
    static const int pright[] = {1, 0, 1, 1, 1, 0};
    cli_table pt = {.ncols = 6, .head = phead, .right = pright};
    json_t *p;
    json_array_foreach(json_object_get(j, "partitions"), i, p) {
        char part[16], applied[32], end[32], lag[32], standbys[1024];
        cluster_int_cell(p, "partition", part, sizeof(part));
        cluster_int_cell(p, "applied", applied, sizeof(applied));
        cluster_int_cell(p, "end", end, sizeof(end));
        cluster_int_cell(p, "lag", lag, sizeof(lag));
        cluster_standbys_cell(json_object_get(p, "standbys"), standbys, sizeof(standbys));
        const char *active = json_string_value(json_object_get(p, "active"));
        const char *row[] = {part, active ? active : "-", applied, end, lag, standbys};
        cli_table_add(&pt, row);
    }
    putchar('\n');
    cli_table_print_free(&pt);
    const char *err = json_string_value(json_object_get(j, "error"));
    if (err && *err)
        printf("note: the last membership refresh failed: %s\n", err);
}

int cluster_main(cli *c, int argc, char **argv) {
    const char *none[1];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, none, 0, NULL, &rc) < 0)
        return rc;
    char *url = NULL;
    if (asprintf(&url, "%s/v1/cluster", c->url) < 0)
        return cli_fail(c, c->url, "InternalError", "out of memory", 0, NULL);
    json_t *j = cli_get_json(c, c->url, url, &rc);
    if (!j)
        return rc;
    return cli_list_output(c, j, cluster_print);
}
