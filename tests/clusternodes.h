/* clusternodes.h: objlogd nodes of one cluster as children of a test
 * (test_cluster, test_standby): a temp dir, the log (testlog.h: the
 * shared real Kafka), a token secret every node shares, and nodes started
 * with `--cluster NAME --token-secret-file` plus the test's own flags,
 * each killed with the test even when it fails (proc.h). */
#ifndef OBJLOG_TEST_CLUSTERNODES_H
#define OBJLOG_TEST_CLUSTERNODES_H

#include <stdint.h>

#include <jansson.h>

#include "httpc.h"
#include "proc.h"
#include "testlog.h"

#define CNODES_MAX 8

typedef struct cnode {
    proc *p;            /* NULL while not running */
    char data[300];
    char url[128];
    char s3[128];       /* its S3 endpoint's URL (cnodes.s3), else "" */
    int s3_port;        /* kept across restarts */
    httpc *h;           /* follows redirects */
    httpc *raw;         /* does not */
} cnode;

typedef struct cnodes {
    char dir[256];
    testlog *log;
    cnode n[CNODES_MAX];
    int max;                     /* nodes the test may start */
    const char *cluster;
    char *const *extra;          /* more objlogd flags, NULL-ended */
    const char *admin_token;     /* sent by cnodes_cluster_of; NULL none */
    /* Set before cnodes_setup: every node serves S3 too (one blob
     * directory shared by all, DIR/blobs), on a port of its own: signed
     * with the keys of s3_credentials when set, else anonymous. */
    int s3;
    const char *s3_credentials;
    /* Set before cnodes_setup: node i runs with --node-name node-I and
     * its log lines go to DIR/node-I.log (cnodes_log), not the test's
     * stderr. */
    int named;
} cnodes;

/* The log of `partitions` partitions, the shared secret and nodes
 * 0..start-1 of at most max; 0, or -1 with why on stderr. */
int cnodes_setup(cnodes *g, const char *cluster, int partitions, int start, int max,
                 char *const extra[]);
/* Starts node i (its data dir kept across restarts). 0 or -1. */
int cnodes_start(cnodes *g, int i);
/* Forgets node i after it was killed or stopped. */
void cnodes_forget(cnodes *g, int i);
/* SIGTERM to every node still running (each must exit 0), the log
 * stopped, the dir removed. 0, or -1 when a node did not exit 0. */
int cnodes_teardown(cnodes *g);
/* GET /v1/cluster of node i, parsed (NULL if it did not answer 200). */
json_t *cnodes_cluster_of(cnodes *g, int i);
/* Node i's log so far (g->named), NUL-terminated and malloc'd; NULL none. */
char *cnodes_log(const cnodes *g, int i);
/* The node whose URL is url, -1 none. */
int cnodes_of_url(const cnodes *g, const char *url);

int64_t cnodes_mono_ms(void);
void cnodes_sleep_ms(int ms);

#endif
