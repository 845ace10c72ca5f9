/* rangetest.c: see rangetest.h. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rangetest.h"

json_t *rt_req_json(httpc *h, const char *method, const char *path, const char *body,
                    long want) {
    httpc_resp r;
    assert_int_equal(httpc_do(h, method, path, body, NULL, &r), 0);
    if (r.status != want)
        fprintf(stderr, "%s %s: %ld %s\n", method, path, r.status, r.body);
    assert_int_equal(r.status, want);
    json_t *j = json_loads(r.body, 0, NULL);
    assert_non_null(j);
    return j;
}

json_t *rt_handoff(httpc *h, const char *kind, const char *body) {
    char path[64];
    snprintf(path, sizeof(path), "/v1/ranges/%s", kind);
    json_t *j = rt_req_json(h, "POST", path, body, 200);
    fprintf(stderr, "handoff %s %s: epoch %lld, partition %lld -> %lld, %lld requests "
                    "imported, %.3f s, writes held %.3f s\n",
            kind, body, (long long)json_integer_value(json_object_get(j, "epoch")),
            (long long)json_integer_value(json_object_get(j, "from_partition")),
            (long long)json_integer_value(json_object_get(j, "to_partition")),
            (long long)json_integer_value(json_object_get(j, "imported_requests")),
            json_real_value(json_object_get(j, "seconds")),
            json_real_value(json_object_get(j, "writes_held_seconds")));
    return j;
}

long rt_map_epoch(httpc *h) {
    json_t *m = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    long e = (long)json_integer_value(json_object_get(m, "epoch"));
    json_decref(m);
    return e;
}

long rt_metric(httpc *h, const char *series) {
    httpc_resp r;
    assert_int_equal(httpc_do(h, "GET", "/metrics", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    const char *at = strstr(r.body, series);
    while (at && at != r.body && at[-1] != '\n')
        at = strstr(at + 1, series);
    return at ? atol(at + strlen(series)) : -1;
}

void rt_restart_live(viewproc *live, const char *const *env) {
    char why[256];
    viewproc_stop(live, 10000);
    for (int i = 0; env && env[i]; i += 2)
        setenv(env[i], env[i + 1], 1);
    int rc = viewproc_start(live, 60000, why, sizeof(why));
    for (int i = 0; env && env[i]; i += 2)
        unsetenv(env[i]);
    if (rc < 0)
        fprintf(stderr, "restart: %s\n", why);
    assert_int_equal(rc, 0);
}

int rt_group_start(viewtest_frame *f, viewproc *live, int partitions) {
    char why[256];
    if (viewtest_frame_start(f, partitions, "rebuild", why, sizeof(why)) < 0) {
        fprintf(stderr, "setup: %s\n", why);
        return -1;
    }
    viewproc_init(live, testlog_bootstrap(f->log), f->data1, 0);
    if (viewproc_start(live, 60000, why, sizeof(why)) < 0) {
        fprintf(stderr, "start: %s\n", why);
        return -1;
    }
    return 0;
}

void rt_group_stop(viewtest_frame *f, viewproc *live, const char *test) {
    if (live->p)
        viewproc_kill(live);
    viewtest_frame_stop(f, test);
}
