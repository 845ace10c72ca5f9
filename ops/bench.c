/* bench.c: `objlog bench`, end-to-end throughput of one objlogd: produce N
 * puts through libobjlog_producer (ack=logged) from T threads, wait until
 * the last token of every partition is applied, then N GETs over HTTP from
 * T keep-alive connections. Without --url/--brokers it runs its own
 * `objlogd --embedded` on 127.0.0.1:0 in a temp dir and always stops it
 * (SIGTERM, then SIGKILL; the child also dies with us via PDEATHSIG).
 * The command's options and bench_main live here too; the other modes run
 * on the same bench struct and helpers (bench_int.h) from their own files:
 * --consistency-modes (bench_modes.c), --list (bench_list.c), --stats
 * (bench_stats.c), --apply (bench_apply.c), --conditional (bench_cond.c),
 * --checkpoint (bench_ckpt.c).
 * With --url, what the run wrote is removed when it ends, also after a
 * failure or SIGINT, unless --keep (bench_clean.c).
 * Invariant: every figure is measured from the first produce call, on the
 * monotonic clock, and only successful operations are counted. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_cond.h"
#include "bench_int.h"
#include "cli.h"
#include "objlog_producer.h"

int64_t bench_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Set by SIGINT while a bench against someone else's objlogd runs. Every
 * loop that issues writes or requests checks it, so the run ends early and
 * bench_clean still removes what was written; a second SIGINT kills
 * (SA_RESETHAND), leaving it. */
volatile sig_atomic_t bench_interrupted;

static void on_sigint(int sig) {
    static const char msg[] = "objlog: bench: interrupted; removing what the bench "
                              "wrote (interrupt again to leave it)\n";
    (void)sig;
    bench_interrupted = 1;
    if (write(2, msg, sizeof(msg) - 1) < 0) { /* nothing to do about it */
    }
}

/* ---- our objlogd ---- */

void bench_objlogd_path(char *out, size_t n) {
    char self[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (l > 0) {
        self[l] = '\0';
        snprintf(out, n, "%s/../query/objlogd", dirname(self));
        if (access(out, X_OK) == 0)
            return;
    }
    snprintf(out, n, "objlogd"); /* execvp searches PATH */
}

int bench_rm_entry(const char *path, const struct stat *st, int flag,
             struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* SIGTERM, then SIGKILL after 10 s; reaps the child. */
void bench_child_stop(pid_t pid) {
    kill(pid, SIGTERM);
    int st;
    int64_t deadline = bench_mono_us() + 10 * 1000000;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (bench_mono_us() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            break;
        }
        usleep(20000);
    }
}

static void daemon_stop(bench *b) {
    if (b->daemon > 0) {
        bench_child_stop(b->daemon);
        b->daemon = 0;
        close(b->daemon_out);
    }
    if (b->tmpdir[0])
        nftw(b->tmpdir, bench_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    b->tmpdir[0] = '\0';
}

static void daemon_log_tail(bench *b) {
    char path[128], buf[2048];
    snprintf(path, sizeof(path), "%s/objlogd.log", b->tmpdir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, sz > (long)sizeof(buf) - 1 ? sz - (long)sizeof(buf) + 1 : 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "objlog: bench: objlogd said:\n%s", buf);
}

static pid_t daemon_spawn(bench *b, const char *path, int out_fd) {
    char data[128], log[128];
    snprintf(data, sizeof(data), "%s/data", b->tmpdir);
    snprintf(log, sizeof(log), "%s/objlogd.log", b->tmpdir);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out_fd, 1);
    if (lf >= 0)
        dup2(lf, 2);
    char parts[16];
    snprintf(parts, sizeof(parts), "%d", b->partitions);
    /* --s3: the S3 listener beside the JSON one (loopback, unsigned). */
    char *argv[] = {(char *)path, "--embedded", "--listen", "127.0.0.1:0",
                    "--data", data, "--s3-listen", "127.0.0.1:0", "--s3-anonymous",
                    b->partitions ? "--partitions" : NULL, parts, NULL};
    execvp(path, argv);
    fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
    _exit(127);
}

/* Reads OBJLOG_* lines of fd until OBJLOG_READY: the listen URL (and the
 * bootstrap servers when the daemon holds the log). */
int bench_ready_lines(int fd, char *url, size_t un, char *brokers, size_t bn) {
    return bench_ready_lines_s3(fd, url, un, brokers, bn, NULL, 0);
}

int bench_ready_lines_s3(int fd, char *url, size_t un, char *brokers, size_t bn, char *s3,
                         size_t sn) {
    char buf[4096];
    size_t len = 0;
    int64_t deadline = bench_mono_us() + 60 * 1000000LL;
    url[0] = brokers[0] = '\0';
    while (bench_mono_us() < deadline && !bench_interrupted) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 200) <= 0)
            continue;
        ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (r <= 0)
            return -1;
        len += (size_t)r;
        buf[len] = '\0';
        char *nl;
        while ((nl = strchr(buf, '\n')) != NULL) {
            *nl = '\0';
            if (!strncmp(buf, "OBJLOG_BOOTSTRAP=", 17))
                snprintf(brokers, bn, "%.500s", buf + 17);
            else if (!strncmp(buf, "OBJLOG_LISTEN=", 14))
                snprintf(url, un, "http://%.100s", buf + 14);
            else if (s3 && !strncmp(buf, "OBJLOG_S3_LISTEN=", 17))
                snprintf(s3, sn, "http://%.100s", buf + 17);
            else if (!strcmp(buf, "OBJLOG_READY"))
                return url[0] ? 0 : -1;
            len -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, len + 1);
        }
        if (len >= sizeof(buf) - 1)
            len = 0;
    }
    return -1;
}

static int daemon_wait_ready(bench *b) {
    int rc = bench_ready_lines_s3(b->daemon_out, b->url_buf, sizeof(b->url_buf),
                                  b->brokers_buf, sizeof(b->brokers_buf), b->s3_url,
                                  sizeof(b->s3_url));
    return rc == 0 && b->brokers_buf[0] ? 0 : -1;
}

static int daemon_start(bench *b) {
    char path[PATH_MAX + 32];
    bench_objlogd_path(path, sizeof(path));
    snprintf(b->tmpdir, sizeof(b->tmpdir), "/tmp/objlog-bench-XXXXXX");
    if (!mkdtemp(b->tmpdir)) {
        fprintf(stderr, "objlog: bench: mkdtemp: %s\n", strerror(errno));
        b->tmpdir[0] = '\0';
        return -1;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    b->daemon = daemon_spawn(b, path, fds[1]);
    close(fds[1]);
    b->daemon_out = fds[0];
    if (b->daemon < 0 || daemon_wait_ready(b) < 0) {
        fprintf(stderr, "objlog: bench: %s did not become ready\n", path);
        daemon_log_tail(b);
        return -1;
    }
    b->url = b->url_buf;
    b->brokers = b->brokers_buf;
    return 0;
}

int bench_daemon_start(bench *b) { return daemon_start(b); }

/* ---- phase 1: produce ---- */

void bench_cb(const objlog_write_result *r, void *opaque) {
    bench *b = opaque;
    pthread_mutex_lock(&b->lock);
    if (r->status == OBJLOG_STATUS_LOGGED && r->partition >= 0 &&
        r->partition < BENCH_MAX_PARTS) {
        if (r->offset > b->last_offset[r->partition])
            b->last_offset[r->partition] = r->offset;
    } else if (b->failed++ == 0) {
        snprintf(b->first_error, sizeof(b->first_error), "%s: %.200s",
                 objlog_status_name(r->status), r->error_message);
    }
    b->done++;
    if (r->token[0])
        snprintf(b->last_token, sizeof(b->last_token), "%s", r->token);
    pthread_mutex_unlock(&b->lock);
}

void bench_key(int i, char *out, size_t n) {
    snprintf(out, n, "obj-%08d", i);
}

void *bench_produce_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    for (int i = t->index; i < b->count && !bench_interrupted; i += b->threads) {
        char key[32], etag[32], err[256];
        bench_key(i, key, sizeof(key));
        snprintf(etag, sizeof(etag), "etag-%d", i);
        objlog_object_meta m = {.size = (uint64_t)i, .etag = etag,
                                .content_type = "application/octet-stream"};
        if (objlog_producer_put_object(b->p, b->bucket, key, strlen(key), &m,
                                       NULL, bench_cb, b, err, sizeof(err)) < 0) {
            pthread_mutex_lock(&b->lock);
            if (b->failed++ == 0)
                snprintf(b->first_error, sizeof(b->first_error), "%s", err);
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

/* Runs fn on n threads (bench_thread.index 0..n-1) and joins them. */
int bench_run_n_threads(bench *b, int n, void *(*fn)(void *)) {
    bench_thread *ts = calloc((size_t)n, sizeof(*ts));
    if (!ts)
        return -1;
    for (int i = 0; i < n; i++) {
        ts[i] = (bench_thread){.b = b, .index = i};
        pthread_create(&ts[i].th, NULL, fn, &ts[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(ts[i].th, NULL);
    free(ts);
    return 0;
}

int bench_run_threads(bench *b, void *(*fn)(void *)) {
    return bench_run_n_threads(b, b->threads, fn);
}

int bench_producer_open(bench *b) {
    char err[512];
    objlog_producer_conf *conf = objlog_producer_conf_new();
    if (!conf ||
        objlog_producer_conf_set(conf, "bootstrap.servers", b->brokers, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "query.url", b->url, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "ack", "logged", err, sizeof(err))) {
        fprintf(stderr, "objlog: bench: producer config: %s\n", conf ? err : "oom");
        objlog_producer_conf_destroy(conf);
        return -1;
    }
    b->p = objlog_producer_new(conf, err, sizeof(err));
    if (!b->p) {
        fprintf(stderr, "objlog: bench: producer: %s\n", err);
        return -1;
    }
    return 0;
}

/* Remembers a bucket this run made, for bench_clean. 0, or -1 on memory. */
int bench_created(bench *b, const char *bucket) {
    char(*n)[64] = realloc(b->created, (size_t)(b->n_created + 1) * sizeof(*n));
    if (!n) {
        fprintf(stderr, "objlog: bench: out of memory\n");
        return -1;
    }
    b->created = n;
    snprintf(b->created[b->n_created++], sizeof(*n), "%s", bucket);
    return 0;
}

int bench_create_bucket_named(bench *b, CURL *h, const char *bucket) {
    char url[512], err[256];
    snprintf(url, sizeof(url), "%s/v1/buckets/%s", b->url, bucket);
    cli_resp r;
    if (cli_http(h, "PUT", url, "{}", NULL, &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench: create bucket: cannot reach %s: %s\n", b->url, err);
        return -1;
    }
    int ok = r.status == 200;
    if (!ok) {
        char code[64], msg[256];
        cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
        fprintf(stderr, "objlog: bench: create bucket %s: %s: %s\n", bucket, code, msg);
    }
    cli_resp_free(&r);
    return ok ? bench_created(b, bucket) : -1;
}

int bench_create_bucket(bench *b, CURL *h) {
    snprintf(b->bucket, sizeof(b->bucket), "bench-%d-%lld", (int)getpid(),
             (long long)time(NULL));
    return bench_create_bucket_named(b, h, b->bucket);
}

/* ---- phase 2: wait until applied ---- */

/* A 503 that says the partition is stopped (query/fence.c). */
static int bench_stopped(const cli_resp *r) {
    json_t *j = r->body_len ? json_loads(r->body, 0, NULL) : NULL;
    int stopped = json_is_true(json_object_get(json_object_get(j, "error"), "stopped"));
    json_decref(j);
    return stopped;
}

int bench_wait_applied(bench *b, CURL *h) {
    int64_t deadline = bench_mono_us() + BENCH_WAIT_MS * 1000LL;
    for (int p = 0; p < BENCH_MAX_PARTS; p++) {
        if (b->last_offset[p] < 0)
            continue;
        char url[512], err[256];
        snprintf(url, sizeof(url), "%s/v1/writes/%d.%lld?timeout_ms=2000", b->url, p,
                 (long long)b->last_offset[p]);
        for (;;) {
            cli_resp r;
            if (bench_interrupted)
                return -1;
            if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0) {
                fprintf(stderr, "objlog: bench: outcome of %d.%lld: %s\n", p,
                        (long long)b->last_offset[p], err);
                return -1;
            }
            long st = r.status;
            if (st == 200) {
                cli_resp_free(&r);
                break;
            }
            /* A stopped partition (the log dropped events it had not
             * applied, say) never gets there: no use waiting. */
            int stopped = st == 503 && bench_stopped(&r);
            if (st != 503 || bench_mono_us() > deadline || stopped) {
                char code[64], msg[512];
                cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
                fprintf(stderr, "objlog: bench: outcome of %d.%lld: HTTP %ld %s: %s\n", p,
                        (long long)b->last_offset[p], st, code, msg);
                cli_resp_free(&r);
                return stopped ? -2 : -1;
            }
            cli_resp_free(&r);
        }
    }
    return 0;
}

/* ---- phase 3: GETs ---- */

void *bench_get_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    CURL *h = curl_easy_init();
    long lo = (long)b->gets * t->index / b->threads;
    long hi = (long)b->gets * (t->index + 1) / b->threads;
    long errors = 0;
    for (long j = lo; j < hi && !bench_interrupted; j++) {
        char key[32], url[512], err[256], tok[80] = "";
        bench_key((int)((j * 7919) % b->count), key, sizeof(key));
        if (!strcmp(b->consistency, "token")) { /* tokens are URL-safe */
            pthread_mutex_lock(&b->lock);
            snprintf(tok, sizeof(tok), "&token=%s", b->last_token);
            pthread_mutex_unlock(&b->lock);
        }
        snprintf(url, sizeof(url), "%s/v1/buckets/%s/objects/%s?consistency=%s%s",
                 b->url, b->bucket, key, b->consistency, tok);
        cli_resp r;
        int64_t t0 = bench_mono_us();
        int rc = cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err));
        b->lat_ms[j] = (double)(bench_mono_us() - t0) / 1000.0;
        if (rc < 0 || r.status != 200)
            errors++;
        if (rc == 0)
            cli_resp_free(&r);
    }
    curl_easy_cleanup(h);
    pthread_mutex_lock(&b->lock);
    b->get_errors += errors;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_percentile(const double *sorted, long n, double q) {
    if (n <= 0)
        return 0;
    long i = (long)(q * (double)(n - 1) + 0.5);
    return sorted[i];
}

/* ---- report ---- */

typedef struct figures {
    double produce_s, apply_s, get_s, p50, p99;
} figures;

double bench_rate(long n, double s) { return s > 0 ? (double)n / s : 0; }

static void report(const bench *b, const figures *f) {
    if (b->json) {
        json_t *j = json_pack(
            "{s:i,s:i,s:i,s:{s:i,s:f,s:f},s:{s:i,s:f,s:f},s:{s:i,s:f,s:f,s:f,s:f,s:I,s:s}}",
            "count", b->count, "threads", b->threads, "gets", b->gets,
            "produce", "ops", b->count, "seconds", f->produce_s, "per_second",
            bench_rate(b->count, f->produce_s),
            "apply", "ops", b->count, "seconds", f->apply_s, "per_second",
            bench_rate(b->count, f->apply_s),
            "get", "ops", b->gets, "seconds", f->get_s, "per_second",
            bench_rate(b->gets, f->get_s), "p50_ms", f->p50, "p99_ms", f->p99, "errors",
            (json_int_t)b->get_errors, "consistency", b->consistency);
        cli_print_json_flags(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        return;
    }
    printf("objlog bench: %d puts, %d GETs (%s), %d threads, %s\n", b->count, b->gets,
           b->consistency, b->threads, b->url);
    printf("%-8s %8s %9s %11s\n", "phase", "ops", "seconds", "ops/s");
    printf("%-8s %8d %9.3f %11.1f\n", "produce", b->count, f->produce_s,
           bench_rate(b->count, f->produce_s));
    printf("%-8s %8d %9.3f %11.1f\n", "apply", b->count, f->apply_s,
           bench_rate(b->count, f->apply_s));
    printf("%-8s %8d %9.3f %11.1f   p50 %.3f ms  p99 %.3f ms%s\n", "get", b->gets,
           f->get_s, bench_rate(b->gets, f->get_s), f->p50, f->p99,
           b->get_errors ? "  (errors!)" : "");
    if (b->get_errors)
        printf("get errors: %ld\n", b->get_errors);
}

static int bench_run(bench *b) {
    figures f = {0};
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    if (!h || bench_create_bucket(b, h) < 0 || bench_producer_open(b) < 0)
        goto out;
    int64_t t0 = bench_mono_us();
    bench_run_threads(b, bench_produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    f.produce_s = (double)(bench_mono_us() - t0) / 1e6;
    if (b->failed) {
        fprintf(stderr, "objlog: bench: %ld of %d writes failed (first: %s)\n",
                b->failed, b->count, b->first_error);
        goto out;
    }
    if (bench_wait_applied(b, h) < 0)
        goto out;
    f.apply_s = (double)(bench_mono_us() - t0) / 1e6;
    b->lat_ms = calloc((size_t)(b->gets ? b->gets : 1), sizeof(double));
    if (!b->lat_ms)
        goto out;
    int64_t g0 = bench_mono_us();
    bench_run_threads(b, bench_get_main);
    f.get_s = (double)(bench_mono_us() - g0) / 1e6;
    qsort(b->lat_ms, (size_t)b->gets, sizeof(double), bench_cmp_double);
    f.p50 = bench_percentile(b->lat_ms, b->gets, 0.50);
    f.p99 = bench_percentile(b->lat_ms, b->gets, 0.99);
    if (bench_interrupted)
        goto out;
    report(b, &f);
    rc = b->get_errors ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
    if (h)
        curl_easy_cleanup(h);
    return rc;
}

const char bench_usage_text[] =
    "usage: objlog bench [--url URL --brokers LIST [--keep]] [--count N] [--threads T]\n"
    "                    [--gets N] [--consistency strong|token|eventual] [--partitions N]\n"
    "                    [--json]\n"
    "       objlog bench --consistency-modes [--url URL --brokers LIST [--keep]]\n"
    "                    [--count N] [--threads T] [--gets N] [--write-rate R]\n"
    "                    [--partitions N]\n"
    "       objlog bench --list [--url URL --brokers LIST [--keep]] [--keys N]\n"
    "                    [--deleted N] [--live N] [--versions N] [--lists N]\n"
    "                    [--no-keepalive]\n"
    "       objlog bench --conditional [--url URL --brokers LIST [--keep]]\n"
    "                    [--rates R1,R2,...] [--seconds S] [--linger MS] [--partitions N]\n"
    "       objlog bench --stats [--count N (default 100000)] [--rounds R] [--threads T]\n"
    "                    [--gets N] [--partitions N]\n"
    "       objlog bench --apply [--url URL --brokers LIST [--keep]]\n"
    "                    [--count N (default 200000)] [--buckets B (default 64)]\n"
    "                    [--threads T] [--partitions N]\n"
    "       objlog bench --indexes [--count N (default 20000)] [--rounds R]\n"
    "                    [--url URL --brokers LIST [--keep]]\n"
    "       objlog bench --checkpoint [--count N (default 200000)] [--buckets B]\n"
    "                    [--partitions N]\n"
    "       objlog bench --lifecycle [--url URL --brokers LIST [--keep]]\n"
    "                    [--count N (default 20000)] [--threads T] [--partitions N]\n"
    "       objlog bench --s3 [--keys N (default 1000)] [--lists N (default 400)]\n"
    "                    [--heads N (default 4000)]\n"
    "Without --url the bench starts its own objlogd (embedded log) and stops it: its\n"
    "data goes with it. With --url it removes, when it ends, the buckets it created\n"
    "and everything in them (every version, delete marker and upload), and says so\n"
    "on stderr; --keep leaves them.\n"
    "--apply: events/s of the view applying N PUTs of new keys spread over B buckets\n"
    "while T threads produce them (apply-live), of a second objlogd rebuilding a view\n"
    "from the whole log (apply-rebuild), and of RocksDB alone writing the same rows\n"
    "(rocksdb-raw) and making apply's reads and writes for them (rocksdb-apply-pattern)\n"
    "with objlogd's store options; /raw is the ratio to rocksdb-raw. With --url and\n"
    "--brokers, apply-rebuild replays that deployment's whole log (every event it\n"
    "holds, not only the bench's) into a temporary view on this machine, under a\n"
    "consumer group of its own (objlog-bench-rebuild-PID-TIME) that stays in the\n"
    "cluster's list of groups.\n"
    "--checkpoint: in this process, no objlogd: events/s of the state machine applying\n"
    "N PUTs into a fresh store (a rebuild from the log without Kafka), then rows/s and\n"
    "MB/s of exporting every partition's checkpoint and importing them into another\n"
    "store, and how many times faster export+import is than apply.\n"
    "--indexes: in this process, an index query of 1,000 matches against a LIST of\n"
    "1,000 keys and the PUT apply cost with 0, 1 and 3 indexes; then the same query\n"
    "against LIST over HTTP, on its own objlogd started only then (or --url's).\n"
    "--s3: the S3 endpoint's cost against the JSON API's for the same reads in one\n"
    "run of its own objlogd: N keys, then LISTs of all of them (ListObjectsV2 vs GET\n"
    "/v1/buckets/B/objects) and HEADs of one (HeadObject vs HEAD /objects/K), one\n"
    "connection each, in alternating blocks; mean, p50, p99 and S3/JSON ratios.\n";

static cli *bench_cli; /* for usage errors: one bench a process */

static int bench_usage(const char *why, const char *arg) {
    return cli_usage_error(bench_cli, "%s%s", why, arg ? arg : "");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    int v;
    if (parse_int(s, (int)lo, (int)hi, &v) < 0)
        return -1;
    *out = v;
    return 0;
}

enum {
    O_LIST = CLI_OPT_OWN, O_LIFECYCLE, O_MODES, O_STATS, O_COND, O_NO_KEEPALIVE, O_KEEP, O_BROKERS,
    O_CONSISTENCY, O_WRITE_RATE, O_COUNT, O_ROUNDS, O_THREADS, O_GETS, O_PARTITIONS,
    O_LISTS, O_RATES, O_SECONDS, O_LINGER, O_KEYS, O_DELETED, O_LIVE, O_VERSIONS, O_APPLY,
    O_BUCKETS, O_CKPT, O_S3, O_HEADS, O_INDEXES
};

/* One valued option into b; 0, or -1 when its value is out of range. */
static int bench_value(bench *b, int o, const char *v) {
    switch (o) {
    case O_BROKERS: b->brokers = v; return 0;
    case O_CONSISTENCY: b->consistency = v; return 0;
    case O_WRITE_RATE: return parse_int(v, 1, 100000, &b->write_rate);
    case O_COUNT: return parse_int(v, 1, 100000000, &b->count);
    case O_ROUNDS: return parse_int(v, 1, STATS_ROUNDS_MAX, &b->rounds);
    case O_THREADS: return parse_int(v, 1, 256, &b->threads);
    case O_GETS: return parse_int(v, 0, 100000000, &b->gets);
    case O_PARTITIONS: return parse_int(v, 1, BENCH_MAX_PARTS, &b->partitions);
    case O_LISTS: return parse_int(v, 1, 1000000, &b->list_requests);
    case O_RATES: return bench_cond_parse_rates(&b->cond, v);
    case O_SECONDS: return parse_int(v, 1, 3600, &b->cond.seconds);
    case O_LINGER:
        b->cond.linger = v;
        return parse_int(v, 0, 1000, &(int){0});
    case O_KEYS: return parse_long(v, 1, 10000000, &b->list_keys);
    case O_DELETED: return parse_long(v, 1, 10000000, &b->list_deleted);
    case O_LIVE: return parse_long(v, 1, 1000, &b->list_live);
    case O_VERSIONS: return parse_long(v, 1, 10000000, &b->list_versions);
    case O_BUCKETS: return parse_int(v, 1, 10000, &b->apply_buckets);
    case O_HEADS: return parse_int(v, 1, 10000000, &b->s3_heads);
    default: return -1;
    }
}

static int bench_args(bench *b, cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"list", no_argument, NULL, O_LIST},
        {"consistency-modes", no_argument, NULL, O_MODES},
        {"stats", no_argument, NULL, O_STATS},
        {"lifecycle", no_argument, NULL, O_LIFECYCLE},
        {"conditional", no_argument, NULL, O_COND},
        {"apply", no_argument, NULL, O_APPLY},
        {"checkpoint", no_argument, NULL, O_CKPT},
        {"indexes", no_argument, NULL, O_INDEXES},
        {"s3", no_argument, NULL, O_S3},
        {"heads", required_argument, NULL, O_HEADS},
        {"no-keepalive", no_argument, NULL, O_NO_KEEPALIVE},
        {"keep", no_argument, NULL, O_KEEP},
        {"brokers", required_argument, NULL, O_BROKERS},
        {"consistency", required_argument, NULL, O_CONSISTENCY},
        {"write-rate", required_argument, NULL, O_WRITE_RATE},
        {"count", required_argument, NULL, O_COUNT},
        {"rounds", required_argument, NULL, O_ROUNDS},
        {"threads", required_argument, NULL, O_THREADS},
        {"gets", required_argument, NULL, O_GETS},
        {"partitions", required_argument, NULL, O_PARTITIONS},
        {"lists", required_argument, NULL, O_LISTS},
        {"rates", required_argument, NULL, O_RATES},
        {"seconds", required_argument, NULL, O_SECONDS},
        {"linger", required_argument, NULL, O_LINGER},
        {"keys", required_argument, NULL, O_KEYS},
        {"deleted", required_argument, NULL, O_DELETED},
        {"live", required_argument, NULL, O_LIVE},
        {"versions", required_argument, NULL, O_VERSIONS},
        {"buckets", required_argument, NULL, O_BUCKETS},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_LIST: b->list = 1; break;
        case O_MODES: b->modes = 1; break;
        case O_STATS: b->stats = 1; break;
        case O_LIFECYCLE: b->lifecycle = 1; break;
        case O_COND: b->conditional = 1; break;
        case O_APPLY: b->apply = 1; break;
        case O_CKPT: b->ckpt = 1; break;
        case O_INDEXES: b->indexes = 1; break;
        case O_S3: b->s3 = 1; break;
        case O_NO_KEEPALIVE: b->list_fresh = 1; break;
        case O_KEEP: b->keep = 1; break;
        default:
            if (bench_value(b, o, optarg) < 0) {
                /* "--count=0" is one argument, "--count 0" two */
                const char *opt = optarg == argv[optind - 1] ? argv[optind - 2]
                                                             : argv[optind - 1];
                char name[64];
                snprintf(name, sizeof(name), "%s", opt);
                name[strcspn(name, "=")] = '\0';
                return cli_usage_error(c, "bad value \"%s\" for %s", optarg, name);
            }
        }
    }
    const char *none[1];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, none, 0, 0, NULL, &rc) < 0)
        return rc;
    b->url = c->url_flag;
    b->json = c->json;
    if (b->stats && (b->url || b->brokers))
        return bench_usage("--stats starts its own objlogd processes (it replays one "
                           "log into fresh views with and without the stats view): "
                           "drop --url/--brokers", NULL);
    if (b->ckpt && (b->url || b->brokers))
        return bench_usage("--checkpoint runs in this process, against stores of its "
                           "own: drop --url/--brokers", NULL);
    if (!!b->url != !!b->brokers)
        return bench_usage("--url and --brokers go together (or neither: "
                           "bench starts its own objlogd)", NULL);
    if (strcmp(b->consistency, "strong") && strcmp(b->consistency, "token") &&
        strcmp(b->consistency, "eventual"))
        return bench_usage("--consistency must be strong, token or eventual", NULL);
    return 0;
}

int bench_main(cli *c, int argc, char **argv) {
    bench *b = calloc(1, sizeof(*b));
    if (!b)
        return CLI_EXIT_FAIL;
    bench_cli = c;
    b->count = 0;
    b->rounds = 3;
    b->threads = 4;
    b->gets = -1;
    b->consistency = "strong";
    b->list_keys = 1000;
    b->list_deleted = 100000;
    b->list_live = 10;
    b->list_versions = 100000;
    b->list_requests = 200;
    b->cond.seconds = 5;
    b->write_rate = 200;
    b->apply_buckets = 64;
    bench_cond_parse_rates(&b->cond, "1000,5000");
    for (int i = 0; i < BENCH_MAX_PARTS; i++)
        b->last_offset[i] = -1;
    pthread_mutex_init(&b->lock, NULL);
    int rc = bench_args(b, c, argc, argv);
    if (c->help_shown) {
        pthread_mutex_destroy(&b->lock);
        free(b);
        return CLI_EXIT_OK;
    }
    if (!b->count)
        b->count = b->apply || b->ckpt ? 200000 : b->stats ? 100000 : 20000;
    int nparts = b->partitions ? b->partitions : STATS_DEFAULT_PARTS;
    if (rc == 0 && b->stats && b->count > STATS_PER_BUCKET * nparts) {
        char why[256];
        snprintf(why, sizeof(why), "--stats takes at most %d puts with %d partitions (the "
                 "embedded log keeps ~5 MB per partition and a replay needs it whole)",
                 STATS_PER_BUCKET * nparts, nparts);
        rc = bench_usage(why, NULL);
    }
    if (rc == 0 && b->lifecycle && b->url)
        /* Its objlogd must judge ages two days ahead, as ours would: one
         * started with the test-only clock offset (ops/bench_lifecycle_kafka.sh
         * does that on a real Kafka). */
        fprintf(stderr, "objlog: bench --lifecycle: the objlogd at %s must run with "
                "OBJLOG_TEST_LIFECYCLE_CLOCK_OFFSET_MS=172800000 and "
                "OBJLOG_LIFECYCLE_INTERVAL_MS=100, or nothing expires\n", b->url);
    else if (rc == 0 && b->lifecycle) {
        /* The daemon we start inherits these (objlogd's env flags). */
        setenv("OBJLOG_LIFECYCLE_INTERVAL_MS", "100", 1);
        setenv("OBJLOG_TEST_LIFECYCLE_CLOCK_OFFSET_MS", "172800000", 1);
    }
    if (rc == 0 && b->s3 && b->url) /* it needs the S3 listener it starts */
        rc = bench_usage("--s3 runs its own objlogd: drop --url", NULL);
    if (rc == 0 && b->apply && !b->url) {
        char why[512];
        if (bench_apply_check(b, why, sizeof(why)) < 0)
            rc = bench_usage(why, NULL);
    }
    if (b->gets < 0)
        b->gets = b->stats ? 5000 : b->count;
    int remote = rc == 0 && b->url; /* someone else's objlogd: clean up after us */
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND}, old_sa;
    sigemptyset(&sa.sa_mask);
    /* --apply also stops its rebuild view when interrupted. */
    int caught = ((remote && !b->keep) || (rc == 0 && b->apply)) &&
                 sigaction(SIGINT, &sa, &old_sa) == 0;
    if (rc == 0 && !b->url && !b->ckpt && !b->indexes && daemon_start(b) < 0)
        rc = CLI_EXIT_FAIL;
    if (rc == 0 && b->indexes) {
        rc = bench_index_run(b);
    } else if (rc == 0 && b->ckpt) {
        rc = bench_ckpt_run(b);
    } else if (rc == 0 && b->conditional) {
        char bucket[64] = "";
        b->cond.url = b->url;
        b->cond.brokers = b->brokers;
        b->cond.json = b->json;
        b->cond.stop = &bench_interrupted;
        rc = bench_cond_run(&b->cond, bucket, sizeof(bucket));
        if (bucket[0] && bench_created(b, bucket) < 0)
            rc = CLI_EXIT_FAIL;
    } else if (rc == 0) {
        rc = b->apply   ? bench_apply_run(b)
             : b->s3    ? bench_s3_run(b)
             : b->list  ? bench_list_run(b)
             : b->modes ? bench_modes_run(b)
             : b->stats ? bench_stats_run(b)
             : b->lifecycle ? bench_lifecycle_run(b)
                        : bench_run(b);
    }
    /* No write of ours may still be on its way while the buckets go. */
    objlog_producer_destroy(b->p);
    b->p = NULL;
    if (bench_interrupted)
        rc = CLI_EXIT_FAIL;
    if (remote && !b->keep && b->n_created > 0) {
        int crc = bench_clean(b);
        rc = rc == CLI_EXIT_OK ? crc : rc;
    }
    if (caught)
        sigaction(SIGINT, &old_sa, NULL);
    daemon_stop(b);
    free(b->created);
    free(b->lat_ms);
    free(b->stats_buckets);
    pthread_mutex_destroy(&b->lock);
    free(b);
    return rc;
}
