/* clusternodes.c: see clusternodes.h. */
#include "clusternodes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t cnodes_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cnodes_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void cnodes_secret(const cnodes *g, char *out, size_t n) {
    snprintf(out, n, "%s/token-secret", g->dir);
}

/* A loopback port nothing listens on now (the kernel's choice). */
static int cnodes_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

int cnodes_start(cnodes *g, int i) {
    cnode *n = &g->n[i];
    char secret[300], *argv[40], listen[64], blobs[300];
    int k = 0;
    if (g->s3) {
        if (!n->s3_port && !(n->s3_port = cnodes_free_port()))
            return -1;
        snprintf(listen, sizeof(listen), "127.0.0.1:%d", n->s3_port);
        snprintf(n->s3, sizeof(n->s3), "http://%s", listen);
        snprintf(blobs, sizeof(blobs), "%.250s/blobs", g->dir);
        argv[k++] = "--s3-listen";
        argv[k++] = listen;
        if (g->s3_credentials) {
            argv[k++] = "--s3-credentials";
            argv[k++] = (char *)g->s3_credentials;
        } else {
            argv[k++] = "--s3-anonymous";
        }
        argv[k++] = "--blob-dir";
        argv[k++] = blobs;
    }
    char data[sizeof(n->data)]; /* g->dir and n->data are both in g */
    snprintf(data, sizeof(data), "%.250s/node-%d", g->dir, i);
    memcpy(n->data, data, sizeof(data));
    cnodes_secret(g, secret, sizeof(secret));
    argv[k++] = "--cluster";
    argv[k++] = (char *)g->cluster;
    argv[k++] = "--token-secret-file";
    argv[k++] = secret;
    char name[32], log[300];
    if (g->named) {
        snprintf(name, sizeof(name), "node-%d", i);
        snprintf(log, sizeof(log), "%.250s/node-%d.log", g->dir, i);
        argv[k++] = "--node-name";
        argv[k++] = name;
    }
    for (int j = 0; g->extra && g->extra[j] && k < 39; j++)
        argv[k++] = g->extra[j];
    argv[k] = NULL;
    n->p = testlog_start_view_err(g->log, n->data, argv, g->named ? log : NULL, n->url,
                                  sizeof(n->url));
    if (!n->p)
        return -1;
    n->h = httpc_new(n->url);
    n->raw = httpc_new(n->url);
    httpc_follow(n->h, 1);
    return 0;
}

void cnodes_forget(cnodes *g, int i) {
    cnode *n = &g->n[i];
    httpc_destroy(n->h);
    httpc_destroy(n->raw);
    n->h = n->raw = NULL;
    n->p = NULL;
}

int cnodes_setup(cnodes *g, const char *cluster, int partitions, int start, int max,
                 char *const extra[]) {
    if (!testlog_is_kafka()) {
        fprintf(stderr, "a cluster test needs a real Kafka (OBJLOG_TEST_LOG=kafka)\n");
        return -1;
    }
    if (max > CNODES_MAX || proc_tmpdir(g->dir, sizeof(g->dir)) < 0)
        return -1;
    g->cluster = cluster;
    g->max = max;
    g->extra = extra;
    /* one token secret for every node: a LIST token outlives its node */
    char secret[300];
    cnodes_secret(g, secret, sizeof(secret));
    FILE *f = fopen(secret, "w");
    if (!f || fputs("cluster test shared token secret, 32+ bytes", f) < 0 || fclose(f) != 0)
        return -1;
    g->log = testlog_start(partitions);
    if (!g->log)
        return -1;
    for (int i = 0; i < start; i++)
        if (cnodes_start(g, i) < 0)
            return -1;
    return 0;
}

int cnodes_teardown(cnodes *g) {
    int rc = 0;
    for (int i = 0; i < g->max; i++) {
        if (g->n[i].p && proc_stop(g->n[i].p, 15000) != 0) {
            fprintf(stderr, "node %d did not exit 0 on SIGTERM\n", i);
            rc = -1;
        }
        cnodes_forget(g, i);
    }
    testlog_stop(g->log);
    proc_rmtree(g->dir);
    return rc;
}

json_t *cnodes_cluster_of(cnodes *g, int i) {
    httpc_resp r;
    char auth[300];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", g->admin_token ? g->admin_token : "");
    const char *hdrs[] = {auth, NULL};
    if (httpc_do(g->n[i].raw, "GET", "/v1/cluster", NULL, g->admin_token ? hdrs : NULL, &r) < 0 ||
        r.status != 200)
        return NULL;
    return json_loads(r.body, 0, NULL);
}

char *cnodes_log(const cnodes *g, int i) {
    char path[300];
    snprintf(path, sizeof(path), "%.250s/node-%d.log", g->dir, i);
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (size_t got = 1; f && got > 0;) {
        if (len + 4096 + 1 > cap) {
            char *nb = realloc(buf, cap = cap * 2 + 8192);
            if (!nb)
                break;
            buf = nb;
        }
        got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
    }
    if (f)
        fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

int cnodes_of_url(const cnodes *g, const char *url) {
    for (int i = 0; url && i < g->max; i++)
        if (strcmp(g->n[i].url, url) == 0)
            return i;
    return -1;
}
