/* viewproc.c: see viewproc.h. */
#define _GNU_SOURCE
#include "viewproc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "httpc.h"
#include "storedump.h"

static long long viewproc_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int viewproc_free_port(void) {
    unsigned seed = (unsigned)getpid() ^ (unsigned)viewproc_ms();
    for (int i = 0; i < 200; i++) {
        int port = 12000 + (int)(rand_r(&seed) % 8000);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        int ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return port;
    }
    return 0;
}

void viewproc_init(viewproc *v, const char *boot, const char *data, int port) {
    memset(v, 0, sizeof(*v));
    proc_bin("query/objlogd", v->objlogd, sizeof(v->objlogd));
    snprintf(v->boot, sizeof(v->boot), "%s", boot);
    snprintf(v->data, sizeof(v->data), "%s", data);
    snprintf(v->log, sizeof(v->log), "%s.log", data);
    v->port = port;
}

/* The last bytes of the view's stderr log, on one line, into out. */
static void viewproc_log_tail(const viewproc *v, char *out, size_t n) {
    out[0] = '\0';
    FILE *f = fopen(v->log, "r");
    if (!f)
        return;
    char buf[400];
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, len > (long)sizeof(buf) - 1 ? len - (long)sizeof(buf) + 1 : 0, SEEK_SET);
    size_t got = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[got] = '\0';
    for (char *c = buf; *c; c++)
        *c = *c == '\n' ? '|' : *c;
    snprintf(out, n, "%s", buf);
}

int viewproc_start(viewproc *v, int timeout_ms, char *why, size_t why_size) {
    char listen[64], got[96];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", v->port);
    /* sh execs objlogd, so the child's pid is objlogd's (SIGKILL hits it). */
    char *argv[] = {"/bin/sh", "-c", "log=$1; shift; exec \"$@\" 2>>\"$log\"", "sh", v->log,
                    v->objlogd, "--brokers", v->boot, "--listen", listen, "--data", v->data,
                    NULL};
    v->p = proc_spawn(argv, NULL);
    if (!v->p) {
        snprintf(why, why_size, "spawn objlogd failed");
        return -1;
    }
    if (proc_wait_line(v->p, "OBJLOG_LISTEN=", got, sizeof(got), timeout_ms) < 0 ||
        proc_wait_line(v->p, "OBJLOG_READY", NULL, 0, timeout_ms) < 0) {
        char tail[400];
        viewproc_log_tail(v, tail, sizeof(tail));
        snprintf(why, why_size, "objlogd --data %s did not get ready in %d ms (stderr in %s, "
                 "ending: %s)", v->data, timeout_ms, v->log, tail);
        proc_kill(v->p);
        v->p = NULL;
        return -1;
    }
    const char *colon = strrchr(got, ':');
    int port = colon ? atoi(colon + 1) : 0;
    if (v->port && port != v->port) {
        snprintf(why, why_size, "objlogd listens on %s, not port %d", got, v->port);
        proc_kill(v->p);
        v->p = NULL;
        return -1;
    }
    v->port = port;
    snprintf(v->url, sizeof(v->url), "http://127.0.0.1:%d", port);
    v->starts++;
    return 0;
}

void viewproc_kill(viewproc *v) {
    if (v->p)
        proc_kill(v->p);
    v->p = NULL;
}

int viewproc_stop(viewproc *v, int timeout_ms) {
    if (!v->p)
        return -1;
    int st = proc_stop(v->p, timeout_ms);
    v->p = NULL;
    return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int viewproc_log_end(const char *boot, int partitions, int64_t *hi, char *why,
                     size_t why_size) {
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", boot, err, sizeof(err));
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        snprintf(why, why_size, "kafka client: %s", err);
        return -1;
    }
    int rc = 0;
    for (int p = 0; p < partitions && rc == 0; p++) {
        int64_t lo;
        rd_kafka_resp_err_t e =
            rd_kafka_query_watermark_offsets(rk, "objlog.events", p, &lo, &hi[p], 30000);
        if (e) {
            snprintf(why, why_size, "watermarks of partition %d: %s", p, rd_kafka_err2str(e));
            rc = -1;
        }
    }
    rd_kafka_destroy(rk);
    return rc;
}

int viewproc_wait_applied(const char *url, int partitions, const int64_t *hi,
                          int timeout_ms, char *why, size_t why_size) {
    httpc *c = httpc_new(url);
    long long deadline = viewproc_ms() + timeout_ms;
    int rc = 0;
    for (int p = 0; p < partitions && rc == 0; p++) {
        if (hi[p] == 0)
            continue;
        for (;;) {
            char path[128];
            httpc_resp resp;
            snprintf(path, sizeof(path), "/v1/writes/%d.%lld?timeout_ms=5000", p,
                     (long long)(hi[p] - 1));
            int t = httpc_do(c, "GET", path, NULL, NULL, &resp);
            if (t == 0 && resp.status == 200)
                break;
            if (viewproc_ms() > deadline) {
                snprintf(why, why_size, "GET %s%s: %ld %.200s", url, path,
                         t == 0 ? resp.status : -1L, t == 0 && resp.body ? resp.body : "");
                rc = -1;
                break;
            }
            usleep(100 * 1000);
        }
    }
    httpc_destroy(c);
    return rc;
}

long viewproc_strong_reads_ok(const char *url, const char *const *buckets, int n,
                              int timeout_ms, char *last, size_t last_size) {
    httpc *c = httpc_new(url);
    long long t0 = viewproc_ms(), deadline = t0 + timeout_ms;
    long rc = -1;
    last[0] = '\0';
    for (;;) {
        int ok = 0;
        for (int i = 0; i < n; i++) {
            char path[256];
            httpc_resp resp;
            snprintf(path, sizeof(path), "/v1/buckets/%s/objects?max_keys=1&timeout_ms=5000",
                     buckets[i]);
            int t = httpc_do(c, "GET", path, NULL, NULL, &resp);
            if (t == 0 && resp.status == 200) {
                ok++;
                continue;
            }
            snprintf(last, last_size, "GET %s: %ld %.300s", path, t == 0 ? resp.status : -1L,
                     t == 0 && resp.body ? resp.body : "no answer");
        }
        if (ok == n) {
            rc = (long)(viewproc_ms() - t0);
            break;
        }
        if (viewproc_ms() > deadline)
            break;
        usleep(500 * 1000);
    }
    httpc_destroy(c);
    return rc;
}

int viewproc_rebuild_equal(viewproc *live, const char *rebuild_data, int partitions,
                           size_t rows[OBJLOG_CF_COUNT], int64_t *events, char *why,
                           size_t why_size) {
    int64_t hi[256], a1[256], a2[256];
    viewproc v2;
    if (partitions > 256) {
        snprintf(why, why_size, "too many partitions");
        return -1;
    }
    viewproc_init(&v2, live->boot, rebuild_data, 0);
    int rc = viewproc_log_end(live->boot, partitions, hi, why, why_size);
    if (rc == 0)
        rc = viewproc_start(&v2, 120000, why, why_size);
    if (rc == 0)
        rc = viewproc_wait_applied(v2.url, partitions, hi, 300000, why, why_size);
    if (rc == 0)
        rc = viewproc_wait_applied(live->url, partitions, hi, 120000, why, why_size);
    int s2 = v2.p ? viewproc_stop(&v2, 30000) : 0;
    /* A view that lived through broker faults may take longer to stop:
     * its materializer's Kafka client waits out requests to brokers that
     * went away (objlogd names the stage every 5 s); it must still exit 0. */
    int s1 = live->p ? viewproc_stop(live, 90000) : 0;
    if (rc == 0 && (s1 || s2)) {
        snprintf(why, why_size, "a view did not exit 0 on SIGTERM (live %d, rebuild %d)", s1,
                 s2);
        rc = -1;
    }
    if (rc == 0)
        rc = storedump_applied(live->data, partitions, a1, why, why_size);
    if (rc == 0)
        rc = storedump_applied(rebuild_data, partitions, a2, why, why_size);
    *events = 0;
    for (int p = 0; p < partitions && rc == 0; p++) {
        *events += hi[p];
        if (a1[p] != hi[p] || a2[p] != hi[p]) {
            snprintf(why, why_size, "partition %d: log end %lld, live applied %lld, rebuild %lld",
                     p, (long long)hi[p], (long long)a1[p], (long long)a2[p]);
            rc = -1;
        }
    }
    if (rc == 0)
        rc = storedump_compare(live->data, rebuild_data, rows, why, why_size);
    return rc;
}

/* ---- the fault tests' frame ---- */

long long viewtest_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int viewtest_frame_start(viewtest_frame *f, int partitions, const char *second,
                         char *why, size_t why_size) {
    if (proc_tmpdir(f->root, sizeof(f->root)) < 0) {
        snprintf(why, why_size, "no temporary directory");
        return -1;
    }
    snprintf(f->data1, sizeof(f->data1), "%s/view1", f->root);
    snprintf(f->data2, sizeof(f->data2), "%s/%s", f->root, second);
    f->log = testlog_start(partitions);
    if (!f->log) {
        snprintf(why, why_size, "the log did not start (above)");
        return -1;
    }
    return 0;
}

void viewtest_frame_stop(viewtest_frame *f, const char *test) {
    testlog_stop(f->log);
    f->log = NULL;
    if (!f->root[0])
        return;
    if (f->failed && getenv("OBJLOG_TEST_KEEP"))
        fprintf(stderr, "%s: kept %s\n", test, f->root);
    else
        proc_rmtree(f->root);
}
