/* bucketsgather.c: what a cluster node asks other nodes about buckets,
 * for every API.
 *
 * A bucket listing: each node is asked (GET /v1/buckets, one hop) for the
 * first names of the partitions it applies, and their answers are merged
 * by name. Each bucket lives on one partition, so on one node, and the
 * first max of the union are the page.
 *
 * A bucket's record (cluster_ask_owner): a write produced where it
 * arrived (an S3 PUT whose body streams here) needs its bucket's owner
 * and ACL, which a node that applies the bucket's partition gives (GET
 * /v1/buckets/{b}, signed as this node, at that node's fence); the
 * request runs again here with them (http_ctx.peer), and is judged here.
 *
 * Invariant: done is called once, on c's worker, with the page or with
 * the error of the first node that failed; it answers c in its API's
 * format (the JSON API with its token, S3 with its own). */
#define _GNU_SOURCE
#include "core.h"
#include "cluster.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

typedef struct bgather {
    int max;
    cluster_buckets_fn *done;
    void *arg;
} bgather;

static int bgather_cmp(const void *a, const void *b) {
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
                  json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

/* The nodes' pages merged: the first max by name, and whether more remain. */
static json_t *bgather_merge(json_t *const *parsed, int n, int max, int *more) {
    json_t *all = json_array(), *page = json_array();
    *more = 0;
    for (int i = 0; i < n; i++) {
        size_t k;
        json_t *b;
        *more |= json_is_true(json_object_get(parsed[i], "is_truncated"));
        json_array_foreach(json_object_get(parsed[i], "buckets"), k, b)
            json_array_append(all, b);
    }
    size_t total = json_array_size(all);
    json_t **v = malloc((total ? total : 1) * sizeof(*v));
    if (!v || !page) {
        free(v);
        json_decref(all);
        json_decref(page);
        return NULL;
    }
    for (size_t i = 0; i < total; i++)
        v[i] = json_array_get(all, i);
    qsort(v, total, sizeof(*v), bgather_cmp);
    size_t keep = total < (size_t)max ? total : (size_t)max;
    for (size_t i = 0; i < keep; i++)
        json_array_append(page, v[i]);
    *more |= total > keep;
    free(v);
    json_decref(all);
    return page;
}

static void bgather_done(http_ctx *c, const gather_reply *r, int n, void *arg) {
    bgather *g = arg;
    json_t *parsed[GATHER_MAX] = {0};
    int failed = -1;
    for (int i = 0; i < n && failed < 0; i++)
        if (!(parsed[i] = r[i].status == 200 ? json_loads(r[i].body, 0, NULL) : NULL))
            failed = i;
    int more = 0;
    json_t *page = failed < 0 ? bgather_merge(parsed, n, g->max, &more) : NULL;
    if (failed < 0 && !page)
        http_reply_error(c, 500, "InternalError", "out of memory");
    else
        g->done(c, page, more, failed >= 0 ? &r[failed] : NULL, g->arg);
    json_decref(page);
    for (int i = 0; i < n; i++)
        json_decref(parsed[i]);
    free(g);
}

int cluster_buckets_gather(http_ctx *c, int max, const char *prefix, const char *tenant,
                           const char *after, cluster_buckets_fn *done, void *arg) {
    int np = objlog_materializer_partitions(c->q->m);
    cluster_gather_plan g;
    cluster_gather_plan_init(c, np, &g);
    for (int i = 0; g.plan == 1 && i < g.nn; i++) {
        char list[GATHER_MAX * 5 + 4096] = "";
        size_t len = 0;
        for (int p = 0; p < np && len < sizeof(list) - 12; p++)
            if (g.owner[p] == i)
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", len ? "," : "", p);
        if (asprintf(&g.paths[i], "/v1/buckets?max_buckets=%d&partitions=%s", max, list) < 0)
            g.paths[i] = NULL;
        cluster_query_add(&g.paths[i], "prefix", prefix);
        cluster_query_add(&g.paths[i], "tenant", tenant);
        cluster_query_add(&g.paths[i], "after_name", after);
        cluster_query_add(&g.paths[i], "consistency", http_param_get(c, "consistency", NULL));
        cluster_query_add(&g.paths[i], "timeout_ms", http_param_get(c, "timeout_ms", NULL));
        if (!g.paths[i])
            g.plan = -3;
    }
    bgather *bg = g.plan == 1 ? calloc(1, sizeof(*bg)) : NULL;
    if (g.plan == -3 || (g.plan == 1 && !bg)) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        free(bg);
        g.plan = -3;
    } else if (g.plan == 1) {
        *bg = (bgather){.max = max, .done = done, .arg = arg};
        forward_gather(c, g.urls, (const char *const *)g.paths, g.nn, bgather_done, bg);
    }
    cluster_gather_plan_free(&g);
    return g.plan == 0 ? 0 : g.plan == 1 ? 1 : 2;
}

/* ---- one bucket's record, from a node that applies it ---- */

static void owner_done(http_ctx *c, const gather_reply *r, int n, void *arg) {
    (void)n;
    (void)arg;
    json_t *j = r[0].status == 200 ? json_loads(r[0].body, 0, NULL) : NULL;
    const char *tenant = json_string_value(json_object_get(j, "tenant"));
    const char *acl = json_string_value(json_object_get(j, "acl"));
    if (!tenant) {
        forward_gather_error(c, &r[0]);
    } else {
        http_peer_bucket pb = {.known = 1};
        snprintf(pb.tenant, sizeof(pb.tenant), "%s", tenant);
        snprintf(pb.acl, sizeof(pb.acl), "%s", acl ? acl : "");
        http_rerun_peer(c, &pb);
    }
    json_decref(j);
}

int cluster_ask_owner(http_ctx *c, const char *bucket, int32_t part) {
    char url[CLUSTER_URL_MAX], path[128];
    int who = cluster_pick(c->q->cluster, part, 0, url, sizeof(url));
    if (who == CLUSTER_OWNER_SELF)
        return 0;
    if (who != CLUSTER_OWNER_PEER) {
        http_reply_error(c, 503, "SlowDown",
                         "bucket %s's partition %d has no reachable node right now (the "
                         "cluster is rebalancing); retry", bucket, (int)part);
        return 1;
    }
    /* a bucket name is [a-z0-9.-]: nothing to escape */
    snprintf(path, sizeof(path), "/v1/buckets/%s", bucket);
    const char *urls[1] = {url}, *paths[1] = {path};
    /* asked as the node (the admin role): the record whoever the caller,
     * whose rights this node judges from it (owner, ACL) */
    http_ctx as_node = *c;
    as_node.authz = 1;
    as_node.admin = 1;
    return forward_gather(&as_node, urls, paths, 1, owner_done, NULL);
}
