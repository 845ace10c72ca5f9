/* bench.c: `objlog bench`, end-to-end throughput of one objlogd: produce N
 * puts through libobjlog_producer (ack=logged) from T threads, wait until
 * the last token of every partition is applied, then N GETs over HTTP from
 * T keep-alive connections. Without --url/--brokers it runs its own
 * `objlogd --embedded` on 127.0.0.1:0 in a temp dir and always stops it
 * (SIGTERM, then SIGKILL; the child also dies with us via PDEATHSIG).
 * With --list it measures LIST latency instead (bench_list_run): a plain
 * bucket next to (a) a prefix with few live keys among many deleted ones
 * and (b) one key with many versions among the others. With
 * --consistency-modes it measures GETs under eventual, token and strong at
 * the same load, with a background writer (bench_modes_run). With --stats
 * it measures what the usage counters cost: replays of one log into fresh
 * views with and without the stats view, and stats read latency
 * (bench_stats_run). With --url, what the run wrote is removed when it
 * ends, also after a failure or SIGINT, unless --keep (bench_clean).
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
#include "cli.h"
#include "keycodec.h"
#include "objlog.pb-c.h"
#include "objlog_producer.h"
#include "rangemap.h"

#define BENCH_MAX_PARTS 1024
/* --stats: puts per bucket. A bucket's events share one partition (the
 * range map routes by bucket hash), the embedded log keeps ~5 MB per
 * partition (~30,000 such events), and a replay needs the log whole. */
#define STATS_PER_BUCKET 20000
#define STATS_DEFAULT_PARTS 8    /* objlogd's default --partitions */
#define BENCH_WAIT_MS 120000

typedef struct bench {
    const char *url;
    const char *brokers;
    char url_buf[128];
    char brokers_buf[512];
    int count, threads, gets, json;
    const char *consistency;
    /* our own objlogd, if we started one */
    pid_t daemon;
    int daemon_out;
    char tmpdir[64];
    char bucket[64];
    objlog_producer *p;
    pthread_mutex_t lock;
    int64_t last_offset[BENCH_MAX_PARTS];
    long done, failed;
    char first_error[256];
    double *lat_ms;              /* one per GET */
    long get_errors;
    char last_token[64];         /* of the latest completed write */
    int partitions;              /* our objlogd's --partitions; 0: default */
    /* --list */
    int list, list_requests, list_fresh;
    long list_keys, list_deleted, list_live, list_versions, list_queued;
    /* --conditional: bench_cond.c */
    int conditional;
    /* --consistency-modes */
    int modes, write_rate;
    int bg_stop;                 /* set under lock to end the writer */
    long bg_writes;
    bench_cond_args cond;
    /* --stats */
    int stats, rounds;
    int stats_nbuckets;          /* one per partition, <= STATS_PER_BUCKET puts */
    char (*stats_buckets)[64];
    void *sread;                 /* the stats_read the GET threads share */
    /* With --url the buckets this run created, removed at the end unless
     * --keep (bench_clean). Only buckets whose creation was confirmed are
     * listed, so a name that collided with someone else's is never ours. */
    int keep;
    char (*created)[64];
    int n_created;
    void *clean;                 /* the clean_batch the delete threads share */
} bench;

static int64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Set by SIGINT while a bench against someone else's objlogd runs. Every
 * loop that issues writes or requests checks it, so the run ends early and
 * bench_clean still removes what was written; a second SIGINT kills
 * (SA_RESETHAND), leaving it. */
static volatile sig_atomic_t bench_interrupted;

static void on_sigint(int sig) {
    static const char msg[] = "objlog: bench: interrupted; removing what the bench "
                              "wrote (interrupt again to leave it)\n";
    (void)sig;
    bench_interrupted = 1;
    if (write(2, msg, sizeof(msg) - 1) < 0) { /* nothing to do about it */
    }
}

/* ---- our objlogd ---- */

static void objlogd_path(char *out, size_t n) {
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

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* SIGTERM, then SIGKILL after 10 s; reaps the child. */
static void child_stop(pid_t pid) {
    kill(pid, SIGTERM);
    int st;
    int64_t deadline = mono_us() + 10 * 1000000;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (mono_us() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            break;
        }
        usleep(20000);
    }
}

static void daemon_stop(bench *b) {
    if (b->daemon > 0) {
        child_stop(b->daemon);
        b->daemon = 0;
        close(b->daemon_out);
    }
    if (b->tmpdir[0])
        nftw(b->tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
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
    char *argv[] = {(char *)path, "--embedded", "--listen", "127.0.0.1:0",
                    "--data", data, b->partitions ? "--partitions" : NULL, parts,
                    NULL};
    execvp(path, argv);
    fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
    _exit(127);
}

/* Reads OBJLOG_* lines of fd until OBJLOG_READY: the listen URL (and the
 * bootstrap servers when the daemon holds the log). */
static int ready_lines(int fd, char *url, size_t un, char *brokers, size_t bn) {
    char buf[4096];
    size_t len = 0;
    int64_t deadline = mono_us() + 60 * 1000000LL;
    url[0] = brokers[0] = '\0';
    while (mono_us() < deadline) {
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
    int rc = ready_lines(b->daemon_out, b->url_buf, sizeof(b->url_buf), b->brokers_buf,
                         sizeof(b->brokers_buf));
    return rc == 0 && b->brokers_buf[0] ? 0 : -1;
}

static int daemon_start(bench *b) {
    char path[PATH_MAX + 32];
    objlogd_path(path, sizeof(path));
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

/* ---- phase 1: produce ---- */

static void bench_cb(const objlog_write_result *r, void *opaque) {
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

typedef struct bench_thread {
    bench *b;
    int index;
    pthread_t th;
} bench_thread;

static void bench_key(int i, char *out, size_t n) {
    snprintf(out, n, "obj-%08d", i);
}

static void *produce_main(void *arg) {
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
static int run_n_threads(bench *b, int n, void *(*fn)(void *)) {
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

static int run_threads(bench *b, void *(*fn)(void *)) {
    return run_n_threads(b, b->threads, fn);
}

static int producer_open(bench *b) {
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
static int bench_created(bench *b, const char *bucket) {
    char(*n)[64] = realloc(b->created, (size_t)(b->n_created + 1) * sizeof(*n));
    if (!n) {
        fprintf(stderr, "objlog: bench: out of memory\n");
        return -1;
    }
    b->created = n;
    snprintf(b->created[b->n_created++], sizeof(*n), "%s", bucket);
    return 0;
}

static int create_bucket_named(bench *b, CURL *h, const char *bucket) {
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

static int create_bucket(bench *b, CURL *h) {
    snprintf(b->bucket, sizeof(b->bucket), "bench-%d-%lld", (int)getpid(),
             (long long)time(NULL));
    return create_bucket_named(b, h, b->bucket);
}

/* ---- phase 2: wait until applied ---- */

static int wait_applied(bench *b, CURL *h) {
    int64_t deadline = mono_us() + BENCH_WAIT_MS * 1000LL;
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
            cli_resp_free(&r);
            if (st == 200)
                break;
            if (st != 503 || mono_us() > deadline) {
                fprintf(stderr, "objlog: bench: outcome of %d.%lld: HTTP %ld\n", p,
                        (long long)b->last_offset[p], st);
                return -1;
            }
        }
    }
    return 0;
}

/* ---- phase 3: GETs ---- */

static void *get_main(void *arg) {
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
        int64_t t0 = mono_us();
        int rc = cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err));
        b->lat_ms[j] = (double)(mono_us() - t0) / 1000.0;
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

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, long n, double q) {
    if (n <= 0)
        return 0;
    long i = (long)(q * (double)(n - 1) + 0.5);
    return sorted[i];
}

/* ---- report ---- */

typedef struct figures {
    double produce_s, apply_s, get_s, p50, p99;
} figures;

static double rate(long n, double s) { return s > 0 ? (double)n / s : 0; }

static void report(const bench *b, const figures *f) {
    if (b->json) {
        json_t *j = json_pack(
            "{s:i,s:i,s:i,s:{s:i,s:f,s:f},s:{s:i,s:f,s:f},s:{s:i,s:f,s:f,s:f,s:f,s:I,s:s}}",
            "count", b->count, "threads", b->threads, "gets", b->gets,
            "produce", "ops", b->count, "seconds", f->produce_s, "per_second",
            rate(b->count, f->produce_s),
            "apply", "ops", b->count, "seconds", f->apply_s, "per_second",
            rate(b->count, f->apply_s),
            "get", "ops", b->gets, "seconds", f->get_s, "per_second",
            rate(b->gets, f->get_s), "p50_ms", f->p50, "p99_ms", f->p99, "errors",
            (json_int_t)b->get_errors, "consistency", b->consistency);
        char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        printf("%s\n", s);
        free(s);
        json_decref(j);
        return;
    }
    printf("objlog bench: %d puts, %d GETs (%s), %d threads, %s\n", b->count, b->gets,
           b->consistency, b->threads, b->url);
    printf("%-8s %8s %9s %11s\n", "phase", "ops", "seconds", "ops/s");
    printf("%-8s %8d %9.3f %11.1f\n", "produce", b->count, f->produce_s,
           rate(b->count, f->produce_s));
    printf("%-8s %8d %9.3f %11.1f\n", "apply", b->count, f->apply_s,
           rate(b->count, f->apply_s));
    printf("%-8s %8d %9.3f %11.1f   p50 %.3f ms  p99 %.3f ms%s\n", "get", b->gets,
           f->get_s, rate(b->gets, f->get_s), f->p50, f->p99,
           b->get_errors ? "  (errors!)" : "");
    if (b->get_errors)
        printf("get errors: %ld\n", b->get_errors);
}

static int bench_run(bench *b) {
    figures f = {0};
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    if (!h || create_bucket(b, h) < 0 || producer_open(b) < 0)
        goto out;
    int64_t t0 = mono_us();
    run_threads(b, produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    f.produce_s = (double)(mono_us() - t0) / 1e6;
    if (b->failed) {
        fprintf(stderr, "objlog: bench: %ld of %d writes failed (first: %s)\n",
                b->failed, b->count, b->first_error);
        goto out;
    }
    if (wait_applied(b, h) < 0)
        goto out;
    f.apply_s = (double)(mono_us() - t0) / 1e6;
    b->lat_ms = calloc((size_t)(b->gets ? b->gets : 1), sizeof(double));
    if (!b->lat_ms)
        goto out;
    int64_t g0 = mono_us();
    run_threads(b, get_main);
    f.get_s = (double)(mono_us() - g0) / 1e6;
    qsort(b->lat_ms, (size_t)b->gets, sizeof(double), cmp_double);
    f.p50 = percentile(b->lat_ms, b->gets, 0.50);
    f.p99 = percentile(b->lat_ms, b->gets, 0.99);
    if (bench_interrupted)
        goto out;
    report(b, &f);
    rc = b->get_errors ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
    if (h)
        curl_easy_cleanup(h);
    return rc;
}

/* ---- --consistency-modes: what each consistency costs a GET (issue 5
 * item 6). The same keys, threads and GET count for eventual, token and
 * strong, while a background writer produces at a fixed rate into the same
 * bucket (so the same partition), so strong and token fences have
 * something to wait for. Token reads name the token of the latest write
 * at the time of each request. ListOffsets/s comes from the server's
 * objlog_list_offsets_requests_total, scraped around each phase. ---- */

#define MODES_N 3

typedef struct mode_fig {
    const char *name;
    double seconds, p50, p99;
    double list_offsets;         /* requests in the phase; < 0 unknown */
    long errors, writes;         /* GET errors; background writes meanwhile */
} mode_fig;

/* Sum of every sample of counter `name` on /metrics; -1 if absent. */
static double scrape_counter(bench *b, CURL *h, const char *name) {
    char url[512], err[256];
    snprintf(url, sizeof(url), "%s/metrics", b->url);
    cli_resp r;
    if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0)
        return -1;
    double sum = -1;
    size_t nl = strlen(name);
    for (char *line = r.status == 200 ? r.body : NULL; line && *line;) {
        char *next = strchr(line, '\n');
        if (!strncmp(line, name, nl) && (line[nl] == ' ' || line[nl] == '{')) {
            const char *v = line[nl] == '{' ? strchr(line, '}') : line + nl;
            if (v)
                sum = (sum < 0 ? 0 : sum) + strtod(v + (*v == '}'), NULL);
        }
        line = next ? next + 1 : NULL;
    }
    cli_resp_free(&r);
    return sum;
}

static void *writer_main(void *arg) {
    bench *b = arg;
    int64_t t0 = mono_us();
    for (long i = 0;; i++) {
        int64_t due = t0 + (int64_t)((double)i * 1e6 / b->write_rate);
        int64_t now = mono_us();
        if (due > now)
            usleep((useconds_t)(due - now));
        pthread_mutex_lock(&b->lock);
        int stop = b->bg_stop;
        pthread_mutex_unlock(&b->lock);
        if (stop || bench_interrupted)
            break;
        char key[32], err[256];
        bench_key((int)(i % b->count), key, sizeof(key));
        objlog_object_meta m = {.size = (uint64_t)i, .etag = "bg",
                                .content_type = "application/octet-stream"};
        if (objlog_producer_put_object(b->p, b->bucket, key, strlen(key), &m, NULL,
                                       bench_cb, b, err, sizeof(err)) == 0) {
            pthread_mutex_lock(&b->lock);
            b->bg_writes++;
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

static long bg_writes(bench *b) {
    pthread_mutex_lock(&b->lock);
    long n = b->bg_writes;
    pthread_mutex_unlock(&b->lock);
    return n;
}

static void mode_measure(bench *b, CURL *h, mode_fig *f) {
    b->consistency = f->name;
    b->get_errors = 0;
    double lo0 = scrape_counter(b, h, "objlog_list_offsets_requests_total");
    long w0 = bg_writes(b);
    int64_t t0 = mono_us();
    run_threads(b, get_main);
    f->seconds = (double)(mono_us() - t0) / 1e6;
    f->writes = bg_writes(b) - w0;
    double lo1 = scrape_counter(b, h, "objlog_list_offsets_requests_total");
    f->list_offsets = lo0 >= 0 && lo1 >= 0 ? lo1 - lo0 : -1;
    f->errors = b->get_errors;
    qsort(b->lat_ms, (size_t)b->gets, sizeof(double), cmp_double);
    f->p50 = percentile(b->lat_ms, b->gets, 0.50);
    f->p99 = percentile(b->lat_ms, b->gets, 0.99);
}

static void modes_report(const bench *b, const mode_fig *fs) {
    if (b->json) {
        json_t *arr = json_array();
        for (int i = 0; i < MODES_N; i++) {
            const mode_fig *f = &fs[i];
            json_t *lo = f->list_offsets < 0 ? json_null()
                                             : json_real(rate((long)f->list_offsets,
                                                              f->seconds));
            json_array_append_new(arr, json_pack(
                "{s:s,s:i,s:f,s:f,s:f,s:f,s:I,s:o,s:f}", "consistency", f->name,
                "ops", b->gets, "seconds", f->seconds, "per_second",
                rate(b->gets, f->seconds), "p50_ms", f->p50, "p99_ms", f->p99, "errors",
                (json_int_t)f->errors, "list_offsets_per_second", lo,
                "background_writes_per_second", rate(f->writes, f->seconds)));
        }
        json_t *j = json_pack("{s:{s:i,s:i,s:i,s:i,s:o}}", "consistency_modes", "keys",
                              b->count, "threads", b->threads, "gets", b->gets,
                              "write_rate", b->write_rate, "modes", arr);
        char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        printf("%s\n", s ? s : "{}");
        free(s);
        json_decref(j);
        return;
    }
    printf("objlog bench --consistency-modes: %d keys, %d GETs per mode, %d threads, "
           "background writer %d writes/s, %s\n", b->count, b->gets, b->threads,
           b->write_rate, b->url);
    printf("%-9s %8s %9s %10s %8s %8s %14s %9s\n", "mode", "GETs", "seconds", "GET/s",
           "p50 ms", "p99 ms", "ListOffsets/s", "writes/s");
    for (int i = 0; i < MODES_N; i++) {
        const mode_fig *f = &fs[i];
        char lo[32];
        if (f->list_offsets < 0)
            snprintf(lo, sizeof(lo), "n/a");
        else
            snprintf(lo, sizeof(lo), "%.1f", rate((long)f->list_offsets, f->seconds));
        printf("%-9s %8d %9.3f %10.1f %8.3f %8.3f %14s %9.1f%s\n", f->name, b->gets,
               f->seconds, rate(b->gets, f->seconds), f->p50, f->p99, lo,
               rate(f->writes, f->seconds), f->errors ? "  (errors!)" : "");
    }
    for (int i = 0; i < MODES_N; i++)
        if (fs[i].errors)
            printf("%s GET errors: %ld\n", fs[i].name, fs[i].errors);
}

static int bench_modes_run(bench *b) {
    mode_fig fs[MODES_N] = {{.name = "eventual"}, {.name = "token"}, {.name = "strong"}};
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    pthread_t writer;
    int writing = 0;
    if (!h || create_bucket(b, h) < 0 || producer_open(b) < 0)
        goto out;
    run_threads(b, produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    if (b->failed || wait_applied(b, h) < 0) {
        if (b->failed)
            fprintf(stderr, "objlog: bench: %ld of %d writes failed (first: %s)\n",
                    b->failed, b->count, b->first_error);
        goto out;
    }
    b->lat_ms = calloc((size_t)(b->gets ? b->gets : 1), sizeof(double));
    if (!b->lat_ms || pthread_create(&writer, NULL, writer_main, b) != 0)
        goto out;
    writing = 1;
    usleep(200000); /* let the writer reach its rate before measuring */
    for (int i = 0; i < MODES_N && !bench_interrupted; i++)
        mode_measure(b, h, &fs[i]);
    rc = bench_interrupted ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
    if (writing) {
        pthread_mutex_lock(&b->lock);
        b->bg_stop = 1;
        pthread_mutex_unlock(&b->lock);
        pthread_join(writer, NULL);
        objlog_producer_flush(b->p, BENCH_WAIT_MS);
    }
    if (rc == CLI_EXIT_OK) {
        modes_report(b, fs);
        for (int i = 0; i < MODES_N; i++)
            if (fs[i].errors)
                rc = CLI_EXIT_FAIL;
        if (b->failed) {
            fprintf(stderr, "objlog: bench: %ld background writes failed (first: %s)\n",
                    b->failed, b->first_error);
            rc = CLI_EXIT_FAIL;
        }
    }
    if (h)
        curl_easy_cleanup(h);
    return rc;
}

/* ---- --list: LIST latency where other stores choke (issue 3 item 7) ---- */

/* The mock cluster keeps ~5 MB per partition and drops the oldest data
 * beyond that, so a consumer that falls further behind loses events. A
 * bucket lives in one partition, so each case is produced in batches and
 * every batch is applied before the next: the lag stays < 1 MB at ~100
 * bytes an event, whatever the totals. */
#define LIST_BATCH 8000
#define LIST_CASES 4
#define LIST_MAX_KEYS 1000

typedef struct list_case {
    const char *name;
    const char *what;
    char bucket[64];
    objlog_versioning versioning;
    const char *prefix;          /* LIST prefix, or NULL */
    long events;
    long expect;                 /* keys the LIST must return */
    double p50, p99;
    long errors;
} list_case;

/* Queues one put (del 0) or delete (del 1); failures are counted by
 * bench_cb or here. */
static void list_write(bench *b, const char *bucket, const char *key, int del) {
    char err[256];
    objlog_object_meta m = {.size = 1};
    int rc = del ? objlog_producer_delete_object(b->p, bucket, key, strlen(key), NULL,
                                                 NULL, bench_cb, b, err, sizeof(err))
                 : objlog_producer_put_object(b->p, bucket, key, strlen(key), &m, NULL,
                                              bench_cb, b, err, sizeof(err));
    if (rc < 0) {
        pthread_mutex_lock(&b->lock);
        if (b->failed++ == 0)
            snprintf(b->first_error, sizeof(b->first_error), "%s", err);
        pthread_mutex_unlock(&b->lock);
    }
}

/* Flushes and waits until everything produced so far is applied. */
static int list_settle(bench *b, CURL *h) {
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    if (b->failed) {
        fprintf(stderr, "objlog: bench: %ld writes failed (first: %s)\n", b->failed,
                b->first_error);
        return -1;
    }
    return wait_applied(b, h);
}

/* Counts one queued write; every LIST_BATCH writes, waits for apply. */
static int list_tick(bench *b, CURL *h) {
    if (bench_interrupted)
        return -1;
    if (++b->list_queued % LIST_BATCH == 0)
        return list_settle(b, h);
    return 0;
}

static int gen_plain(bench *b, CURL *h, const list_case *c) {
    for (long i = 0; i < b->list_keys; i++) {
        char key[32];
        snprintf(key, sizeof(key), "obj-%07ld", i);
        list_write(b, c->bucket, key, 0);
        if (list_tick(b, h) < 0)
            return -1;
    }
    return 0;
}

/* Every key is put; all but every stride-th one is deleted right after,
 * so the live keys are spread among the dead ones and a LIST has to get
 * past tombstones (or delete markers) between each pair of hits. */
static int gen_deleted(bench *b, CURL *h, const list_case *c) {
    long total = b->list_deleted + b->list_live;
    long stride = total / b->list_live;
    for (long k = 0; k < total; k++) {
        char key[32];
        snprintf(key, sizeof(key), "dead/k%07ld", k);
        list_write(b, c->bucket, key, 0);
        if (list_tick(b, h) < 0)
            return -1;
        if (k % stride == 0 && k / stride < b->list_live)
            continue;
        list_write(b, c->bucket, key, 1);
        if (list_tick(b, h) < 0)
            return -1;
    }
    return 0;
}

/* list_keys keys; the one in the middle gets list_versions versions. */
static int gen_versions(bench *b, CURL *h, const list_case *c) {
    long hot = b->list_keys / 2;
    for (long i = 0; i < b->list_keys + b->list_versions - 1; i++) {
        char key[32];
        snprintf(key, sizeof(key), "key-%07ld", i < b->list_keys ? i : hot);
        list_write(b, c->bucket, key, 0);
        if (list_tick(b, h) < 0)
            return -1;
    }
    return 0;
}

typedef int list_gen(bench *b, CURL *h, const list_case *c);

/* The outcome of the last write (bench_cb keeps its token) must be OK:
 * a rejected bucket or a capped version would skew the figures. */
static int outcome_ok(bench *b, CURL *h, const char *what) {
    char url[512], err[256];
    snprintf(url, sizeof(url), "%s/v1/writes/%s?timeout_ms=2000", b->url, b->last_token);
    cli_resp r;
    if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench: outcome in %s: %s\n", what, err);
        return -1;
    }
    json_t *j = json_loads(r.body, 0, NULL);
    const char *st = json_string_value(json_object_get(j, "status"));
    int ok = r.status == 200 && st && !strcmp(st, "ok");
    if (!ok)
        fprintf(stderr, "objlog: bench: last write in %s: HTTP %ld %s\n", what, r.status,
                r.body);
    json_decref(j);
    cli_resp_free(&r);
    return ok ? 0 : -1;
}

static int list_build(bench *b, CURL *h, list_case *c, list_gen *gen) {
    char err[512];
    objlog_bucket_conf bc = {.versioning = c->versioning};
    if (objlog_producer_create_bucket_ex(b->p, c->bucket, &bc, NULL, bench_cb, b, err,
                                         sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench: create bucket %s: %s\n", c->bucket, err);
        return -1;
    }
    if (list_settle(b, h) < 0 || outcome_ok(b, h, c->bucket) < 0 ||
        bench_created(b, c->bucket) < 0)
        return -1;
    long before = b->list_queued;
    if (gen(b, h, c) < 0 || list_settle(b, h) < 0 || outcome_ok(b, h, c->bucket) < 0)
        return -1;
    c->events = b->list_queued - before;
    return 0;
}

/* LIST latency of case c: b->list_requests sequential GETs on one
 * keep-alive connection. The first answer is checked for the key count
 * so a broken listing cannot pass for a fast one. */
static int list_measure(bench *b, CURL *h, list_case *c) {
    char *url = NULL;
    char *ep = c->prefix ? curl_easy_escape(h, c->prefix, 0) : NULL;
    if (asprintf(&url, "%s/v1/buckets/%s/objects?max_keys=%d&consistency=eventual%s%s",
                 b->url, c->bucket, LIST_MAX_KEYS, ep ? "&prefix=" : "",
                 ep ? ep : "") < 0)
        url = NULL;
    curl_free(ep);
    double *lat = calloc((size_t)b->list_requests, sizeof(*lat));
    if (!url || !lat) {
        free(url);
        free(lat);
        return -1;
    }
    int rc = 0;
    CURL *own = NULL;
    for (int i = 0; i < b->list_requests && rc == 0 && !bench_interrupted; i++) {
        cli_resp r;
        char err[256];
        if (b->list_fresh) { /* a new connection per request: no keep-alive */
            curl_easy_cleanup(own);
            h = own = curl_easy_init();
            if (!h) {
                rc = -1;
                break;
            }
        }
        int64_t t0 = mono_us();
        if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0) {
            fprintf(stderr, "objlog: bench: LIST %s: %s\n", c->bucket, err);
            rc = -1;
            break;
        }
        lat[i] = (double)(mono_us() - t0) / 1000.0;
        if (r.status != 200)
            c->errors++;
        if (i == 0) {
            json_t *j = json_loads(r.body, 0, NULL);
            long got = (long)json_array_size(json_object_get(j, "objects"));
            json_decref(j);
            if (r.status != 200 || got != c->expect) {
                fprintf(stderr, "objlog: bench: LIST %s returned %ld keys (HTTP %ld), "
                                "expected %ld\n", c->bucket, got, r.status, c->expect);
                rc = -1;
            }
        }
        cli_resp_free(&r);
    }
    curl_easy_cleanup(own);
    qsort(lat, (size_t)b->list_requests, sizeof(double), cmp_double);
    c->p50 = percentile(lat, b->list_requests, 0.50);
    c->p99 = percentile(lat, b->list_requests, 0.99);
    free(lat);
    free(url);
    return rc;
}

/* Bytes one event takes in the log (value + Kafka key), as the producer
 * encodes it: a put with size only, or a delete without version id. */
static size_t list_event_bytes(const char *bucket, const char *key, int del) {
    uint8_t rid[16] = {0};
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__ObjectMeta om = OBJLOG__OBJECT_META__INIT;
    Objlog__PutObject put = OBJLOG__PUT_OBJECT__INIT;
    Objlog__DeleteObject dl = OBJLOG__DELETE_OBJECT__INIT;
    ev.request_id.data = rid;
    ev.request_id.len = sizeof(rid);
    ev.range_epoch = 1;
    ev.timestamp_ms = (int64_t)time(NULL) * 1000;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    om.size = 1;
    put.meta = &om;
    dl.version_id = "";
    if (del) {
        ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
        ev.delete_object = &dl;
    } else {
        ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
        ev.put_object = &put;
    }
    keybuf kb;
    keybuf_init(&kb);
    keycodec_route_key(&kb, bucket, strlen(bucket), (const uint8_t *)key, strlen(key));
    size_t n = objlog__event__get_packed_size(&ev) + kb.len;
    keybuf_free(&kb);
    return n;
}

static double ratio(double x, double base) { return base > 0 ? x / base : 0; }

static void list_report(const bench *b, const list_case *cs, int n, double build_s,
                        size_t put_bytes, size_t del_bytes) {
    if (b->json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, json_pack(
                "{s:s,s:s,s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:f,s:I}", "case", cs[i].name,
                "bucket", cs[i].bucket,
                "what", cs[i].what, "prefix", cs[i].prefix ? cs[i].prefix : "",
                "events", (json_int_t)cs[i].events, "returned",
                (json_int_t)cs[i].expect, "p50_ms", cs[i].p50, "p99_ms", cs[i].p99,
                "p50_vs_plain", ratio(cs[i].p50, cs[0].p50), "p99_vs_plain",
                ratio(cs[i].p99, cs[0].p99), "errors", (json_int_t)cs[i].errors));
        json_t *j = json_pack("{s:{s:i,s:b,s:i,s:s,s:f,s:{s:I,s:I},s:i,s:o}}", "list",
                              "requests", b->list_requests, "keepalive", !b->list_fresh, "max_keys", LIST_MAX_KEYS,
                              "consistency", "eventual", "build_seconds", build_s,
                              "event_bytes", "put", (json_int_t)put_bytes, "delete",
                              (json_int_t)del_bytes, "batch", LIST_BATCH, "cases", arr);
        char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        printf("%s\n", s ? s : "{}");
        free(s);
        json_decref(j);
        return;
    }
    printf("objlog bench --list: %d LISTs per case, max_keys=%d, consistency=eventual, "
           "%s, %s\n", b->list_requests, LIST_MAX_KEYS,
           b->list_fresh ? "a new connection each" : "one keep-alive connection", b->url);
    printf("built in %.1f s; event sizes (value + Kafka key): put %zu B, delete %zu B; "
           "produced in batches of %d, each applied before the next\n", build_s,
           put_bytes, del_bytes, LIST_BATCH);
    printf("%-8s %-50s %8s %8s %8s %8s %7s %7s\n", "case", "what", "events", "returned",
           "p50 ms", "p99 ms", "p50 x", "p99 x");
    for (int i = 0; i < n; i++)
        printf("%-8s %-50s %8ld %8ld %8.3f %8.3f %7.2f %7.2f%s\n", cs[i].name, cs[i].what,
               cs[i].events, cs[i].expect, cs[i].p50, cs[i].p99,
               ratio(cs[i].p50, cs[0].p50), ratio(cs[i].p99, cs[0].p99),
               cs[i].errors ? "  (errors!)" : "");
    printf("(x = ratio to the plain case; the goal is <= 3)\n");
}

static int bench_list_run(bench *b) {
    static char what[LIST_CASES][64];
    list_case cs[LIST_CASES] = {
        {.name = "plain", .versioning = OBJLOG_VERSIONING_UNVERSIONED},
        {.name = "a", .versioning = OBJLOG_VERSIONING_UNVERSIONED, .prefix = "dead/"},
        {.name = "a-dm", .versioning = OBJLOG_VERSIONING_ENABLED, .prefix = "dead/"},
        {.name = "b", .versioning = OBJLOG_VERSIONING_ENABLED},
    };
    list_gen *gens[LIST_CASES] = {gen_plain, gen_deleted, gen_deleted, gen_versions};
    snprintf(what[0], sizeof(what[0]), "%ld live keys", b->list_keys);
    snprintf(what[1], sizeof(what[1]), "%ld live among %ld deleted, prefix", b->list_live,
             b->list_deleted);
    snprintf(what[2], sizeof(what[2]), "%ld live among %ld delete markers, prefix",
             b->list_live, b->list_deleted);
    snprintf(what[3], sizeof(what[3]), "%ld keys, one with %ld versions", b->list_keys,
             b->list_versions);
    long expect[LIST_CASES] = {
        b->list_keys < LIST_MAX_KEYS ? b->list_keys : LIST_MAX_KEYS, b->list_live,
        b->list_live, b->list_keys < LIST_MAX_KEYS ? b->list_keys : LIST_MAX_KEYS};
    long stamp = (long)time(NULL) % 100000;
    for (int i = 0; i < LIST_CASES; i++) {
        cs[i].what = what[i];
        cs[i].expect = expect[i];
        snprintf(cs[i].bucket, sizeof(cs[i].bucket), "bl-%s-%d-%ld", cs[i].name,
                 (int)getpid(), stamp);
    }
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    if (!h || producer_open(b) < 0)
        goto out;
    int64_t t0 = mono_us();
    for (int i = 0; i < LIST_CASES; i++)
        if (list_build(b, h, &cs[i], gens[i]) < 0)
            goto out;
    double build_s = (double)(mono_us() - t0) / 1e6;
    for (int i = 0; i < LIST_CASES; i++)
        if (list_measure(b, h, &cs[i]) < 0 || bench_interrupted)
            goto out;
    list_report(b, cs, LIST_CASES, build_s, list_event_bytes(cs[1].bucket, "dead/k0000000", 0),
                list_event_bytes(cs[1].bucket, "dead/k0000000", 1));
    rc = CLI_EXIT_OK;
    for (int i = 0; i < LIST_CASES; i++)
        if (cs[i].errors)
            rc = CLI_EXIT_FAIL;
out:
    if (h)
        curl_easy_cleanup(h);
    return rc;
}

/* ---- --stats: what the usage counters cost (issue 6 item 6).
 *
 * Apply throughput with and without the stats view, on the same log: our
 * `objlogd --embedded` takes N puts (new keys, one bucket) and applies
 * them; then fresh views (`objlogd --brokers` on an empty --data, alone on
 * the machine but for the log holder) replay that whole log, alternately
 * with the stats view and with --test-no-stats, R rounds each. A replay's
 * rate is measured from the first applied event it reports to the last
 * (GET /v1/lag every few ms), so process start-up and the consumer's
 * first fetch are not counted. Then the read latency of GET
 * /v1/buckets/{b}/stats and GET /v1/stats, eventual and strong, from T
 * keep-alive connections on the embedded daemon. ---- */

#define STATS_ROUNDS_MAX 16
#define STATS_READS 6
#define STATS_POLL_US 2000

typedef struct stats_fig {
    long events;                 /* events in the log (all partitions) */
    int rounds;
    double rate[2][STATS_ROUNDS_MAX]; /* [with|without stats][round] ev/s */
    /* [bucket stats|global stats|prefix usage][eventual|strong] x p50|p99 */
    double lat[STATS_READS][2];
    long errors[STATS_READS];
    char first_error[STATS_READS][160];
    long usage_gets;
    long usage_rows;             /* rows one usage page reads (first page) */
} stats_fig;

typedef struct replay_view {
    pid_t pid;
    int out;
    char dir[64];
    char url[128];
} replay_view;

static void view_stop(replay_view *v) {
    if (v->pid > 0) {
        child_stop(v->pid);
        close(v->out);
    }
    v->pid = 0;
    if (v->dir[0])
        nftw(v->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    v->dir[0] = '\0';
}

static void view_log_tail(const replay_view *v) {
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "tail -5 %s/objlogd.log >&2", v->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "objlog: bench: no log in %s\n", v->dir);
}

/* A fresh view of b's log on an empty data dir, ready to answer. */
static int view_start(bench *b, int no_stats, replay_view *v) {
    char path[PATH_MAX + 32], data[96], log[96], boot[512];
    objlogd_path(path, sizeof(path));
    memset(v, 0, sizeof(*v));
    snprintf(v->dir, sizeof(v->dir), "/tmp/objlog-bench-view-XXXXXX");
    int fds[2];
    if (!mkdtemp(v->dir) || pipe2(fds, O_CLOEXEC) < 0) {
        fprintf(stderr, "objlog: bench: view dir: %s\n", strerror(errno));
        v->dir[0] = '\0';
        return -1;
    }
    snprintf(data, sizeof(data), "%s/data", v->dir);
    snprintf(log, sizeof(log), "%s/objlogd.log", v->dir);
    pid_t parent = getpid();
    v->pid = fork();
    if (v->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fds[1], 1);
        if (lf >= 0)
            dup2(lf, 2);
        char *argv[] = {path, "--brokers", (char *)b->brokers, "--listen",
                        "127.0.0.1:0", "--data", data, "--fetch-wait-ms", "2",
                        no_stats ? "--test-no-stats" : NULL, NULL};
        execvp(path, argv);
        _exit(127);
    }
    close(fds[1]);
    v->out = fds[0];
    if (v->pid < 0 ||
        ready_lines(v->out, v->url, sizeof(v->url), boot, sizeof(boot)) < 0) {
        fprintf(stderr, "objlog: bench: replay view %s did not become ready (log: %s)\n",
                path, log);
        if (v->pid < 0)
            v->pid = 0;
        return -1;
    }
    return 0;
}

/* Sum over partitions of "applied" (or "end") in GET /v1/lag; -1 on error
 * or when a partition stopped (the view says why in its log). */
static long lag_sum(CURL *h, const char *url, const char *field) {
    char u[256], err[256];
    snprintf(u, sizeof(u), "%s/v1/lag", url);
    cli_resp r;
    if (cli_http(h, "GET", u, NULL, NULL, &r, err, sizeof(err)) < 0)
        return -1;
    json_t *j = r.status == 200 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    cli_resp_free(&r);
    json_t *parts = json_object_get(j, "partitions");
    long sum = j && json_is_array(parts) ? 0 : -1;
    for (size_t i = 0; sum >= 0 && i < json_array_size(parts); i++) {
        json_t *p = json_array_get(parts, i);
        const char *state = json_string_value(json_object_get(p, "state"));
        sum = state && !strcmp(state, "stopped")
                  ? -1 : sum + (long)json_integer_value(json_object_get(p, field));
    }
    json_decref(j);
    return sum;
}

/* One replay of the whole log (events long) into a fresh view: events per
 * second from the first applied event seen to the last. -1 on failure. */
static double stats_replay(bench *b, CURL *h, int no_stats, long events) {
    replay_view v;
    double rate = -1;
    if (view_start(b, no_stats, &v) < 0) {
        view_stop(&v);
        return -1;
    }
    int64_t t_ready = mono_us(), t_first = 0;
    int64_t deadline = t_ready + BENCH_WAIT_MS * 1000LL;
    long first = 0, got = 0;
    while (mono_us() < deadline) {
        got = lag_sum(h, v.url, "applied");
        int64_t now = mono_us();
        if (got < 0)
            break;
        if (got > 0 && !t_first) {
            t_first = now;
            first = got;
        }
        if (got >= events) {
            /* A log short enough to be applied before our first look is
             * timed from the view's readiness instead (start-up included). */
            if (got > first)
                rate = (double)(got - first) / ((double)(now - t_first) / 1e6);
            else
                rate = (double)got / ((double)(now - t_ready + 1) / 1e6);
            break;
        }
        usleep(STATS_POLL_US);
    }
    if (rate < 0) {
        fprintf(stderr, "objlog: bench: replay %s stats applied %ld of %ld events\n",
                no_stats ? "without" : "with", got, events);
        view_log_tail(&v);
    }
    view_stop(&v);
    return rate;
}

typedef struct stats_read {
    bench *b;
    const char *url;
    long n;                      /* GETs in all */
    double *lat_ms;
    long errors;
    char first_error[160];
} stats_read;

static void *stats_get_main(void *arg) {
    bench_thread *t = arg;
    stats_read *sr = t->b->sread;
    bench *b = sr->b;
    CURL *h = curl_easy_init();
    long lo = sr->n * t->index / b->threads;
    long hi = sr->n * (t->index + 1) / b->threads;
    long errors = 0;
    char first[160] = "";
    for (long j = lo; j < hi; j++) {
        char err[256];
        cli_resp r;
        int64_t t0 = mono_us();
        int rc = cli_http(h, "GET", sr->url, NULL, NULL, &r, err, sizeof(err));
        sr->lat_ms[j] = (double)(mono_us() - t0) / 1000.0;
        if ((rc < 0 || r.status != 200) && errors++ == 0) {
            char code[64] = "", msg[96] = "";
            if (rc == 0)
                cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
            snprintf(first, sizeof(first), "%.60s %.90s", rc < 0 ? "transport:" : code,
                     rc < 0 ? err : msg);
        }
        if (rc == 0)
            cli_resp_free(&r);
    }
    curl_easy_cleanup(h);
    pthread_mutex_lock(&b->lock);
    if (errors && !sr->first_error[0])
        snprintf(sr->first_error, sizeof(sr->first_error), "%s", first);
    sr->errors += errors;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* p50/p99 of n GETs of url; 0, or -1 on memory. */
static int stats_latency(bench *b, const char *url, long n, stats_fig *f, int which) {
    stats_read sr = {.b = b, .url = url, .n = n};
    sr.lat_ms = calloc((size_t)(n ? n : 1), sizeof(double));
    if (!sr.lat_ms)
        return -1;
    b->sread = &sr;
    run_threads(b, stats_get_main);
    b->sread = NULL;
    qsort(sr.lat_ms, (size_t)n, sizeof(double), cmp_double);
    f->lat[which][0] = percentile(sr.lat_ms, n, 0.50);
    f->lat[which][1] = percentile(sr.lat_ms, n, 0.99);
    f->errors[which] = sr.errors;
    snprintf(f->first_error[which], sizeof(f->first_error[which]), "%s", sr.first_error);
    free(sr.lat_ms);
    return 0;
}

static double best_of(const double *v, int n) {
    double m = 0;
    for (int i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

static const char *stats_read_names[STATS_READS] = {
    "bucket_eventual", "bucket_strong", "global_eventual", "global_strong",
    "usage_eventual", "usage_strong"};

static void stats_report_json(const bench *b, const stats_fig *f) {
    double with = best_of(f->rate[0], f->rounds), without = best_of(f->rate[1], f->rounds);
    json_t *rw = json_array(), *ro = json_array(), *reads = json_object();
    for (int i = 0; i < f->rounds; i++) {
        json_array_append_new(rw, json_real(f->rate[0][i]));
        json_array_append_new(ro, json_real(f->rate[1][i]));
    }
    for (int i = 0; i < STATS_READS; i++)
        json_object_set_new(reads, stats_read_names[i],
                            json_pack("{s:f,s:f,s:I}", "p50_ms", f->lat[i][0], "p99_ms",
                                      f->lat[i][1], "errors", (json_int_t)f->errors[i]));
    json_t *j = json_pack("{s:i,s:I,s:i,s:i,s:i,s:I,s:I,s:{s:o,s:o,s:f,s:f,s:f},s:o}",
        "puts", b->count, "log_events", (json_int_t)f->events, "rounds", f->rounds,
        "threads", b->threads, "gets", b->gets, "usage_gets", (json_int_t)f->usage_gets,
        "usage_rows_per_page", (json_int_t)f->usage_rows,
        "replay_events_per_second", "with_stats", rw, "without_stats", ro,
        "best_with_stats", with, "best_without_stats", without,
        "ratio_with_to_without", without > 0 ? with / without : 0,
        "stats_reads", reads);
    char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
    printf("%s\n", s);
    free(s);
    json_decref(j);
}

static void stats_report(const bench *b, const stats_fig *f) {
    if (b->json) {
        stats_report_json(b, f);
        return;
    }
    double with = best_of(f->rate[0], f->rounds), without = best_of(f->rate[1], f->rounds);
    printf("objlog bench --stats: %d puts (%ld log events) replayed %d times with and "
           "%d times without the stats view; %d stats GETs each, %d threads\n",
           b->count, f->events, f->rounds, f->rounds, b->gets, b->threads);
    printf("%-26s", "replay (events/s)");
    for (int i = 0; i < f->rounds; i++)
        printf(" %10s%-2d", "round ", i + 1);
    printf(" %12s\n", "best");
    const char *rows[2] = {"with stats view", "without (--test-no-stats)"};
    for (int s = 0; s < 2; s++) {
        printf("%-26s", rows[s]);
        for (int i = 0; i < f->rounds; i++)
            printf(" %12.0f", f->rate[s][i]);
        printf(" %12.0f\n", s ? without : with);
    }
    printf("apply throughput with / without the stats view: %.3f\n",
           without > 0 ? with / without : 0);
    printf("%-36s %10s %10s   (usage: %ld GETs of a %ld-row page)\n", "stats read",
           "p50 ms", "p99 ms", f->usage_gets, f->usage_rows);
    const char *paths[3] = {"GET /v1/buckets/{b}/stats", "GET /v1/stats",
                            "GET /v1/buckets/{b}/usage"};
    for (int i = 0; i < STATS_READS; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s %s", paths[i / 2], i % 2 ? "strong" : "eventual");
        printf("%-36s %10.3f %10.3f\n", name, f->lat[i][0], f->lat[i][1]);
        if (f->errors[i])
            printf("  %ld errors (first: %s)\n", f->errors[i], f->first_error[i]);
    }
}

/* Names of b->stats_nbuckets buckets that the default range map puts on
 * distinct partitions. */
static int stats_pick_buckets(bench *b) {
    int nparts = b->partitions ? b->partitions : STATS_DEFAULT_PARTS;
    rangemap *rm = rangemap_new_default(nparts, 1);
    int *used = calloc((size_t)nparts, sizeof(int));
    b->stats_buckets = calloc((size_t)b->stats_nbuckets, sizeof(*b->stats_buckets));
    int n = 0;
    for (int i = 0; rm && used && b->stats_buckets && n < b->stats_nbuckets &&
                    i < 100000; i++) {
        char name[64];
        keybuf kb;
        keybuf_init(&kb);
        snprintf(name, sizeof(name), "bench-%d-%d", (int)getpid(), i);
        if (keycodec_route_key(&kb, name, strlen(name), NULL, 0) == 0) {
            int p = rangemap_partition(rm, kb.data, kb.len);
            if (p >= 0 && p < nparts && !used[p]) {
                used[p] = 1;
                snprintf(b->stats_buckets[n++], 64, "%s", name);
            }
        }
        keybuf_free(&kb);
    }
    rangemap_destroy(rm);
    free(used);
    return n == b->stats_nbuckets ? 0 : -1;
}

static void *stats_produce_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    for (int i = t->index; i < b->count; i += b->threads) {
        char key[32], etag[32], err[256];
        const char *bucket = b->stats_buckets[i % b->stats_nbuckets];
        bench_key(i, key, sizeof(key));
        snprintf(etag, sizeof(etag), "etag-%d", i);
        objlog_object_meta m = {.size = (uint64_t)i, .etag = etag,
                                .content_type = "application/octet-stream"};
        if (objlog_producer_put_object(b->p, bucket, key, strlen(key), &m, NULL,
                                       bench_cb, b, err, sizeof(err)) < 0) {
            pthread_mutex_lock(&b->lock);
            if (b->failed++ == 0)
                snprintf(b->first_error, sizeof(b->first_error), "%s", err);
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

/* The workload: b->count puts of new keys, spread over buckets on
 * distinct partitions, all applied by our embedded daemon. Sets f->events
 * to the log's length. */
static int stats_workload(bench *b, CURL *h, stats_fig *f) {
    b->stats_nbuckets = (b->count + STATS_PER_BUCKET - 1) / STATS_PER_BUCKET;
    if (stats_pick_buckets(b) < 0) {
        fprintf(stderr, "objlog: bench: cannot place %d buckets on distinct partitions\n",
                b->stats_nbuckets);
        return -1;
    }
    for (int i = 0; i < b->stats_nbuckets; i++)
        if (create_bucket_named(b, h, b->stats_buckets[i]) < 0)
            return -1;
    if (producer_open(b) < 0)
        return -1;
    run_threads(b, stats_produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    if (b->failed) {
        fprintf(stderr, "objlog: bench: %ld of %d writes failed (first: %s)\n",
                b->failed, b->count, b->first_error);
        return -1;
    }
    if (wait_applied(b, h) < 0)
        return -1;
    f->events = lag_sum(h, b->url, "end");
    if (f->events <= 0) {
        fprintf(stderr, "objlog: bench: cannot read the log's end offsets\n");
        return -1;
    }
    return 0;
}

static int bench_stats_run(bench *b) {
    stats_fig f = {.rounds = b->rounds};
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    if (!h || stats_workload(b, h, &f) < 0)
        goto out;
    for (int i = 0; i < f.rounds; i++) {
        for (int s = 0; s < 2; s++) {
            /* Alternate which goes first so a drift of the machine's load
             * does not favour one side. */
            int no_stats = (i & 1) ? !s : s;
            if (!b->json)
                fprintf(stderr, "objlog: bench: round %d/%d: replaying %ld events %s "
                                "the stats view\n", i + 1, f.rounds, f.events,
                        no_stats ? "without" : "with");
            double r = stats_replay(b, h, no_stats, f.events);
            if (r < 0)
                goto out;
            f.rate[no_stats][i] = r;
        }
    }
    /* A usage page reads up to 10,000 rows: fewer of them. */
    f.usage_gets = b->gets / 10 > 0 ? b->gets / 10 : 1;
    long first_bucket = (b->count + b->stats_nbuckets - 1) / b->stats_nbuckets;
    f.usage_rows = first_bucket < 10000 ? first_bucket : 10000;
    rc = CLI_EXIT_OK;
    for (int i = 0; i < STATS_READS; i++) {
        char url[600];
        const char *mode = i % 2 ? "strong" : "eventual";
        if (i < 2)
            snprintf(url, sizeof(url), "%s/v1/buckets/%s/stats?consistency=%s", b->url,
                     b->stats_buckets[0], mode);
        else if (i < 4)
            snprintf(url, sizeof(url), "%s/v1/stats?consistency=%s", b->url, mode);
        else
            snprintf(url, sizeof(url), "%s/v1/buckets/%s/usage?consistency=%s", b->url,
                     b->stats_buckets[0], mode);
        if (stats_latency(b, url, i < 4 ? b->gets : f.usage_gets, &f, i) < 0) {
            rc = CLI_EXIT_FAIL;
            goto out;
        }
        if (f.errors[i])
            rc = CLI_EXIT_FAIL;
    }
    stats_report(b, &f);
out:
    if (h)
        curl_easy_cleanup(h);
    return rc;
}

/* ---- cleanup: with --url, remove what this run wrote (issue 11 item 11).
 *
 * A bucket goes only when empty (BucketNotEmpty otherwise), and empty
 * means no version row, no delete marker and no in-progress upload
 * (materializer/apply.c, DeleteBucket). So for each bucket this run
 * created: walk GET .../versions page by page and DELETE every entry by
 * its version id (delete markers too: a DELETE without an id would only
 * add a marker to a versioned bucket; an unversioned object's id is
 * "null"), abort every upload GET .../uploads lists, then DELETE the
 * bucket. A page's deletes go out over CLEAN_CONNS keep-alive connections
 * at once; each waits for its outcome (ack=applied), so the next page and
 * the bucket delete see them. Should the bucket delete still find
 * something (a write of a failed run that landed late), the walk starts
 * over, CLEAN_PASSES times at most. Our own objlogd needs none of this:
 * its data dies with it. ---- */

#define CLEAN_CONNS 8
#define CLEAN_PAGE 1000
#define CLEAN_PASSES 3
#define CLEAN_PROGRESS_US 2000000
#define CLEAN_RETRY_US (60 * 1000000LL)

typedef struct clean_item {
    char *url;                   /* to DELETE; owned */
    char kind;                   /* 'v' version, 'm' delete marker, 'u' upload */
    char first_of_key;           /* the walk's first entry of its key */
    char ok;                     /* set by the delete thread on a 200 */
} clean_item;

typedef struct clean_count {
    long buckets, objects, versions, markers, uploads;
} clean_count;

typedef struct clean_batch {
    clean_item items[CLEAN_PAGE];
    size_t n;
    CURL *h[CLEAN_CONNS];
    long failed;                 /* deletes that did not answer 200 */
    char first_error[512];       /* under bench.lock */
    clean_count count;
    int64_t t0, last_progress;
} clean_batch;

/* The walk of one listing: GET {bucket}/{path}, its array, its markers. */
typedef struct clean_list {
    const char *path;            /* "versions" or "uploads" */
    const char *max_param;
    const char *id_field;        /* "version_id" or "upload_id" */
    const char *id_marker;       /* request parameter for the next page */
    const char *next_id;         /* response field that feeds it */
} clean_list;

static const clean_list clean_versions = {"versions", "max_keys", "version_id",
                                          "version_id_marker", "next_version_id_marker"};
static const clean_list clean_uploads = {"uploads", "max_uploads", "upload_id",
                                         "upload_id_marker", "next_upload_id_marker"};

/* "12,345". */
static const char *grouped(long n, char *out, size_t size) {
    char digits[32];
    int len = snprintf(digits, sizeof(digits), "%ld", n < 0 ? 0 : n);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < size; i++) {
        if (i && (len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
    return out;
}

/* cli_http, but a 503 (SlowDown: the view lags, e.g. behind writes an
 * interrupted run left in flight) is retried for up to CLEAN_RETRY_US. */
static int clean_http(CURL *h, const char *method, const char *url, cli_resp *r,
                      char *err, size_t en) {
    int64_t deadline = mono_us() + CLEAN_RETRY_US;
    for (;;) {
        if (cli_http(h, method, url, NULL, NULL, r, err, en) < 0)
            return -1;
        if (r->status != 503 || mono_us() > deadline)
            return 0;
        cli_resp_free(r);
        usleep(200000);
    }
}

static void clean_note_error(bench *b, clean_batch *cb, const char *what) {
    pthread_mutex_lock(&b->lock);
    if (cb->failed++ == 0)
        snprintf(cb->first_error, sizeof(cb->first_error), "%s", what);
    pthread_mutex_unlock(&b->lock);
}

static void *clean_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    clean_batch *cb = b->clean;
    for (size_t i = (size_t)t->index; i < cb->n; i += CLEAN_CONNS) {
        clean_item *it = &cb->items[i];
        cli_resp r;
        char err[256], what[512];
        if (clean_http(cb->h[t->index], "DELETE", it->url, &r, err, sizeof(err)) < 0) {
            snprintf(what, sizeof(what), "DELETE %s: %s", it->url, err);
            clean_note_error(b, cb, what);
            continue;
        }
        it->ok = r.status == 200;
        if (!it->ok) {
            char code[64], msg[160];
            cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
            snprintf(what, sizeof(what), "DELETE %s: %s: %s", it->url, code, msg);
            clean_note_error(b, cb, what);
        }
        cli_resp_free(&r);
    }
    return NULL;
}

static void clean_progress(clean_batch *cb, const char *bucket) {
    int64_t now = mono_us();
    if (now - cb->t0 < CLEAN_PROGRESS_US || now - cb->last_progress < CLEAN_PROGRESS_US)
        return;
    cb->last_progress = now;
    char n[32];
    fprintf(stderr, "objlog: bench: cleaning up: %s versions and delete markers removed "
            "so far (now in bucket %s)\n",
            grouped(cb->count.versions + cb->count.markers, n, sizeof(n)), bucket);
}

/* Deletes the page's items in parallel, counts those that went, frees
 * their URLs. */
static void clean_batch_run(bench *b, clean_batch *cb, const char *bucket) {
    b->clean = cb;
    run_n_threads(b, CLEAN_CONNS, clean_main);
    b->clean = NULL;
    for (size_t i = 0; i < cb->n; i++) {
        clean_item *it = &cb->items[i];
        if (it->ok) {
            cb->count.objects += it->first_of_key;
            cb->count.versions += it->kind == 'v';
            cb->count.markers += it->kind == 'm';
            cb->count.uploads += it->kind == 'u';
        }
        free(it->url);
    }
    cb->n = 0;
    clean_progress(cb, bucket);
}

/* Queues the DELETE of one listed entry; 0, or -1 on memory. last holds
 * the previous entry's key (objects are counted once per key). */
static int clean_queue(bench *b, CURL *h, clean_batch *cb, const char *bucket,
                       const clean_list *l, json_t *e, char **last) {
    const char *key = json_string_value(json_object_get(e, "key"));
    const char *id = json_string_value(json_object_get(e, l->id_field));
    if (!key || !id)
        return 0; /* not ours to interpret; the bucket delete will say */
    char *ek = cli_escape(h, key), *eid = cli_escape(h, id);
    clean_item *it = &cb->items[cb->n];
    *it = (clean_item){.kind = l == &clean_uploads ? 'u'
                               : json_is_true(json_object_get(e, "delete_marker")) ? 'm'
                                                                                   : 'v'};
    int rc = !ek || !eid ? -1
             : it->kind == 'u'
                 ? asprintf(&it->url, "%s/v1/buckets/%s/uploads/%s?key=%s", b->url, bucket,
                            eid, ek)
                 : asprintf(&it->url, "%s/v1/buckets/%s/objects/%s?version_id=%s", b->url,
                            bucket, ek, eid);
    free(ek);
    free(eid);
    if (rc < 0)
        return -1;
    if (it->kind != 'u' && (!*last || strcmp(*last, key) != 0)) {
        it->first_of_key = 1;
        free(*last);
        *last = strdup(key);
    }
    cb->n++;
    return 0;
}

/* GET one page of l in bucket after the markers (NULL: the first page).
 * The page, or NULL with *gone set when the bucket no longer exists, or
 * NULL after saying why. */
static json_t *clean_page(bench *b, CURL *h, const char *bucket, const clean_list *l,
                          const char *key_marker, const char *id_marker, int *gone) {
    char *url = NULL, *ek = key_marker ? cli_escape(h, key_marker) : NULL;
    char *eid = id_marker ? cli_escape(h, id_marker) : NULL;
    int rc = asprintf(&url, "%s/v1/buckets/%s/%s?%s=%d%s%s%s%s%s%s", b->url, bucket, l->path,
                      l->max_param, CLEAN_PAGE, ek ? "&key_marker=" : "", ek ? ek : "",
                      eid ? "&" : "", eid ? l->id_marker : "", eid ? "=" : "",
                      eid ? eid : "");
    free(ek);
    free(eid);
    if (rc < 0)
        return NULL;
    cli_resp r;
    char err[256], code[64] = "", msg[256] = "";
    *gone = 0;
    rc = clean_http(h, "GET", url, &r, err, sizeof(err));
    free(url);
    if (rc < 0) {
        fprintf(stderr, "objlog: bench: list %s of %s: %s\n", l->path, bucket, err);
        return NULL;
    }
    json_t *j = r.status == 200 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    if (!j) {
        cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
        *gone = !strcmp(code, "NoSuchBucket");
        if (!*gone)
            fprintf(stderr, "objlog: bench: list %s of %s: %s: %s\n", l->path, bucket,
                    code, msg);
    }
    cli_resp_free(&r);
    return j;
}

/* Deletes every entry l lists in bucket. 0, 1 if the bucket is gone, -1
 * after saying why. */
static int clean_walk(bench *b, CURL *h, clean_batch *cb, const char *bucket,
                      const clean_list *l) {
    char *km = NULL, *im = NULL, *last = NULL;
    int rc = 0;
    for (;;) {
        int gone;
        json_t *page = clean_page(b, h, bucket, l, km, im, &gone);
        if (!page) {
            rc = gone ? 1 : -1;
            break;
        }
        json_t *arr = json_object_get(page, l == &clean_uploads ? "uploads" : "versions");
        for (size_t i = 0; rc == 0 && i < json_array_size(arr) && i < CLEAN_PAGE; i++)
            rc = clean_queue(b, h, cb, bucket, l, json_array_get(arr, i), &last);
        clean_batch_run(b, cb, bucket);
        const char *nk = json_string_value(json_object_get(page, "next_key_marker"));
        const char *ni = json_string_value(json_object_get(page, l->next_id));
        int more = rc == 0 && json_is_true(json_object_get(page, "is_truncated")) && nk;
        free(km);
        free(im);
        km = more ? strdup(nk) : NULL;
        /* A "null" marker names a version we just deleted, which the view
         * refuses (it looks the null version up); the key marker alone
         * resumes after the key, and a null version is an unversioned
         * key's only one. Anything it skipped would show in the next pass. */
        im = more && ni && *ni && strcmp(ni, "null") != 0 ? strdup(ni) : NULL;
        json_decref(page);
        if (rc < 0)
            fprintf(stderr, "objlog: bench: out of memory\n");
        if (!more)
            break;
    }
    free(km);
    free(im);
    free(last);
    return rc;
}

/* DELETE the bucket: 0 removed, 1 gone already, 2 not empty (why says
 * what remains), -1 any other failure (why says it). */
static int clean_bucket_delete(bench *b, CURL *h, const char *bucket, char *why,
                               size_t wn) {
    char url[512], err[256], code[64], msg[256];
    snprintf(url, sizeof(url), "%s/v1/buckets/%s", b->url, bucket);
    cli_resp r;
    if (clean_http(h, "DELETE", url, &r, err, sizeof(err)) < 0) {
        snprintf(why, wn, "%s", err);
        return -1;
    }
    long st = r.status;
    cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
    cli_resp_free(&r);
    if (st == 200)
        return 0;
    if (!strcmp(code, "NoSuchBucket"))
        return 1;
    snprintf(why, wn, "%s: %s", code, msg);
    return !strcmp(code, "BucketNotEmpty") ? 2 : -1;
}

/* Empties and removes one bucket. 0 (removed, or already gone), or -1
 * after naming it and why on stderr. */
static int clean_bucket(bench *b, CURL *h, clean_batch *cb, const char *bucket) {
    char why[600] = "";
    for (int pass = 0; pass < CLEAN_PASSES; pass++) {
        int rc = clean_walk(b, h, cb, bucket, &clean_versions);
        if (rc == 0)
            rc = clean_walk(b, h, cb, bucket, &clean_uploads);
        if (rc == 1)
            return 0;
        if (rc < 0) {
            fprintf(stderr, "objlog: bench: could not remove bucket %s (listing it "
                    "failed)\n", bucket);
            return -1;
        }
        rc = clean_bucket_delete(b, h, bucket, why, sizeof(why));
        if (rc == 0)
            cb->count.buckets++;
        if (rc == 0 || rc == 1)
            return 0;
        if (rc < 0)
            break;
    }
    fprintf(stderr, "objlog: bench: could not remove bucket %s: %s%s%s\n", bucket, why,
            cb->failed ? "; first failed delete: " : "", cb->failed ? cb->first_error : "");
    return -1;
}

/* The one line that says what went: "removed 3 buckets (12,345 objects,
 * 40 versions) from URL", or "removed 2 of 3 buckets ..." when some are
 * left (each named above it). */
static void clean_say(const bench *b, const clean_count *n, int left) {
    char bk[32], all[32], ob[32], ve[32], ma[32], up[32], of[48] = "", dm[64] = "",
        mpu[64] = "";
    if (left)
        snprintf(of, sizeof(of), " of %s", grouped(b->n_created, all, sizeof(all)));
    if (n->markers)
        snprintf(dm, sizeof(dm), ", %s delete markers", grouped(n->markers, ma, sizeof(ma)));
    if (n->uploads)
        snprintf(mpu, sizeof(mpu), ", %s uploads", grouped(n->uploads, up, sizeof(up)));
    fprintf(stderr, "objlog: bench: removed %s%s %s (%s objects, %s versions%s%s) from %s\n",
            grouped(n->buckets, bk, sizeof(bk)), of,
            cli_plural((size_t)(left ? b->n_created : n->buckets), "bucket", "buckets"),
            grouped(n->objects, ob, sizeof(ob)), grouped(n->versions, ve, sizeof(ve)), dm, mpu,
            b->url);
}

/* Removes every bucket b->created names, with what is in it, and says so
 * in one line. A CLI exit code. */
static int bench_clean(bench *b) {
    clean_batch *cb = calloc(1, sizeof(*cb));
    CURL *h = curl_easy_init();
    int ok = cb && h, left = 0;
    for (int i = 0; ok && i < CLEAN_CONNS; i++)
        ok = (cb->h[i] = curl_easy_init()) != NULL;
    if (ok) {
        cb->t0 = mono_us();
        for (int i = 0; i < b->n_created; i++)
            left += clean_bucket(b, h, cb, b->created[i]) < 0;
        clean_say(b, &cb->count, left);
    } else {
        fprintf(stderr, "objlog: bench: out of memory: the bench's buckets are left on %s\n",
                b->url);
        left = b->n_created;
    }
    for (int i = 0; cb && i < CLEAN_CONNS; i++)
        if (cb->h[i])
            curl_easy_cleanup(cb->h[i]);
    if (h)
        curl_easy_cleanup(h);
    free(cb);
    return left ? CLI_EXIT_FAIL : CLI_EXIT_OK;
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
    "Without --url the bench starts its own objlogd (embedded log) and stops it: its\n"
    "data goes with it. With --url it removes, when it ends, the buckets it created\n"
    "and everything in them (every version, delete marker and upload), and says so\n"
    "on stderr; --keep leaves them.\n";

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
    O_LIST = CLI_OPT_OWN, O_MODES, O_STATS, O_COND, O_NO_KEEPALIVE, O_KEEP, O_BROKERS,
    O_CONSISTENCY, O_WRITE_RATE, O_COUNT, O_ROUNDS, O_THREADS, O_GETS, O_PARTITIONS,
    O_LISTS, O_RATES, O_SECONDS, O_LINGER, O_KEYS, O_DELETED, O_LIVE, O_VERSIONS
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
    default: return -1;
    }
}

static int bench_args(bench *b, cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"list", no_argument, NULL, O_LIST},
        {"consistency-modes", no_argument, NULL, O_MODES},
        {"stats", no_argument, NULL, O_STATS},
        {"conditional", no_argument, NULL, O_COND},
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
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_LIST: b->list = 1; break;
        case O_MODES: b->modes = 1; break;
        case O_STATS: b->stats = 1; break;
        case O_COND: b->conditional = 1; break;
        case O_NO_KEEPALIVE: b->list_fresh = 1; break;
        case O_KEEP: b->keep = 1; break;
        default:
            if (bench_value(b, o, optarg) < 0) {
                char name[64];
                snprintf(name, sizeof(name), "%s", argv[optind - 1]);
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
    bench_cond_parse_rates(&b->cond, "1000,5000");
    for (int i = 0; i < BENCH_MAX_PARTS; i++)
        b->last_offset[i] = -1;
    pthread_mutex_init(&b->lock, NULL);
    int rc = bench_args(b, c, argc, argv);
    if (!b->count)
        b->count = b->stats ? 100000 : 20000;
    int nparts = b->partitions ? b->partitions : STATS_DEFAULT_PARTS;
    if (rc == 0 && b->stats && b->count > STATS_PER_BUCKET * nparts) {
        char why[256];
        snprintf(why, sizeof(why), "--stats takes at most %d puts with %d partitions (the "
                 "embedded log keeps ~5 MB per partition and a replay needs it whole)",
                 STATS_PER_BUCKET * nparts, nparts);
        rc = bench_usage(why, NULL);
    }
    if (b->gets < 0)
        b->gets = b->stats ? 5000 : b->count;
    int remote = rc == 0 && b->url; /* someone else's objlogd: clean up after us */
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND}, old_sa;
    sigemptyset(&sa.sa_mask);
    int caught = remote && !b->keep && sigaction(SIGINT, &sa, &old_sa) == 0;
    if (rc == 0 && !b->url && daemon_start(b) < 0)
        rc = CLI_EXIT_FAIL;
    if (rc == 0 && b->conditional) {
        char bucket[64] = "";
        b->cond.url = b->url;
        b->cond.brokers = b->brokers;
        b->cond.json = b->json;
        b->cond.stop = &bench_interrupted;
        rc = bench_cond_run(&b->cond, bucket, sizeof(bucket));
        if (bucket[0] && bench_created(b, bucket) < 0)
            rc = CLI_EXIT_FAIL;
    } else if (rc == 0) {
        rc = b->list    ? bench_list_run(b)
             : b->modes ? bench_modes_run(b)
             : b->stats ? bench_stats_run(b)
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
