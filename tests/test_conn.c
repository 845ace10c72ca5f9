/* test_conn.c: objlogd's connections and logs,
 * against a real `objlogd --embedded` over loopback sockets.
 *
 * Connections: a request dripped one header line at a time gets 408 and
 * is closed at its deadline; a client that half-closes after its request
 * gets a 100+ KB LIST answer whole; with --max-connections N the N+1st
 * connection waits and is answered once one closes; out of descriptors
 * (ulimit -n far below the connections offered) objlogd keeps a floor of
 * them free, neither spins nor floods its log, and serves again when they
 * close.
 * Logs: every stderr line carries a timestamp and level, in text or JSON
 * (--log-format); --access-log writes one line per answer with the
 * request id the client saw.
 *
 * Each objlogd runs under /bin/sh (exec: same pid) so its stderr can go
 * to a file and its open-file limit be set; proc.h kills it on failure. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "proc.h"

static char objlogd[1024];

typedef struct daemon_ {
    proc *p;
    int port;
    int s3port;                  /* with --s3-listen, else 0 */
    char dir[256];
    char err_path[300];
} daemon_;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* objlogd --embedded with extra args (NULL-ended) and extra environment
 * ("K=V", NULL-ended, may be NULL); nofile > 0 sets its open-file limit
 * (soft and hard, so objlogd cannot raise it). */
static void daemon_start_env(daemon_ *d, int nofile, char *const *args, char *const *env) {
    assert_int_equal(proc_tmpdir(d->dir, sizeof(d->dir)), 0);
    snprintf(d->err_path, sizeof(d->err_path), "%s/stderr", d->dir);
    char script[512], data[300];
    snprintf(data, sizeof(data), "%s/data", d->dir);
    if (nofile > 0)
        snprintf(script, sizeof(script), "ulimit -n %d && exec \"$0\" \"$@\" 2>%s", nofile,
                 d->err_path);
    else
        snprintf(script, sizeof(script), "exec \"$0\" \"$@\" 2>%s", d->err_path);
    char *argv[40] = {"/bin/sh", "-c", script, objlogd, "--embedded", "--partitions", "2",
                      "--listen", "127.0.0.1:0", "--data", data};
    int n = 11, s3 = 0;
    for (int i = 0; args && args[i]; i++) {
        s3 |= strcmp(args[i], "--s3-listen") == 0;
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    d->p = proc_spawn(argv, env);
    assert_non_null(d->p);
    char listen[64];
    assert_int_equal(proc_wait_line(d->p, "OBJLOG_LISTEN=", listen, sizeof(listen), 60000), 0);
    char *colon = strrchr(listen, ':');
    assert_non_null(colon);
    d->port = atoi(colon + 1);
    d->s3port = 0;
    if (s3) {
        assert_int_equal(
            proc_wait_line(d->p, "OBJLOG_S3_LISTEN=", listen, sizeof(listen), 10000), 0);
        d->s3port = atoi(strrchr(listen, ':') + 1);
    }
    char rest[16];
    assert_int_equal(proc_wait_line(d->p, "OBJLOG_READY", rest, sizeof(rest), 60000), 0);
}

static void daemon_start(daemon_ *d, int nofile, char *const *args) {
    daemon_start_env(d, nofile, args, NULL);
}

/* The stderr objlogd wrote (malloc'd). */
static char *daemon_stderr(const daemon_ *d) {
    FILE *f = fopen(d->err_path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void daemon_stop(daemon_ *d) {
    int status = proc_stop(d->p, 20000);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    proc_rmtree(d->dir);
}

/* ---------------------------------------------------------------- sockets */

static int sock_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void sock_send(int fd, const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        assert_true(w > 0);
        s += w;
        n -= (size_t)w;
    }
}

/* Reads what arrives within wait_ms into buf (appending at *len);
 * returns 1 on EOF, 0 otherwise. */
static int sock_read(int fd, char *buf, size_t size, size_t *len, int wait_ms) {
    long long end = now_ms() + wait_ms;
    for (;;) {
        int left = (int)(end - now_ms());
        if (left < 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, left) <= 0)
            return 0;
        ssize_t r = recv(fd, buf + *len, size - 1 - *len, 0);
        if (r <= 0)
            return 1;
        *len += (size_t)r;
        buf[*len] = '\0';
        if (*len + 1 >= size)
            return 0;
    }
}

/* One whole HTTP answer on fd (Content-Length framed): status, and the
 * body's offset in buf. */
static int read_answer(int fd, char *buf, size_t size, size_t *len, size_t *body) {
    *len = 0;
    buf[0] = '\0';
    long long end = now_ms() + 20000;
    int eof = 0;
    while (now_ms() < end) {
        char *hdr_end = strstr(buf, "\r\n\r\n");
        if (hdr_end) {
            const char *cl = strcasestr(buf, "Content-Length:");
            assert_non_null(cl);
            size_t want = (size_t)atol(cl + 15);
            *body = (size_t)(hdr_end + 4 - buf);
            if (*len >= *body + want)
                return atoi(buf + 9);
        }
        if (eof)
            break;
        eof = sock_read(fd, buf, size, len, 200);
    }
    fail_msg("no whole answer: %zu bytes: %.200s", *len, buf);
    return -1;
}

/* The value of a metric line "name value" in objlogd's /metrics, asked on
 * an open connection (a new one might wait behind the cap). */
static long long metric_on(int fd, const char *name) {
    static char buf[1 << 20];
    size_t len = 0, body = 0;
    buf[0] = '\0';
    sock_send(fd, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(read_answer(fd, buf, sizeof(buf), &len, &body), 200);
    char want[256];
    snprintf(want, sizeof(want), "\n%s ", name);
    const char *p = strstr(buf + body - 1, want);
    if (!p)
        fail_msg("no metric %s", name);
    return atoll(p + strlen(want));
}

static long long metric(int port, const char *name) {
    int fd = sock_connect(port);
    long long v = metric_on(fd, name);
    close(fd);
    return v;
}

static int http_status(int port, const char *method, const char *path, const char *body) {
    int fd = sock_connect(port);
    char req[4096];
    snprintf(req, sizeof(req),
             "%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
             method, path, body ? strlen(body) : 0, body ? body : "");
    sock_send(fd, req);
    static char buf[1 << 16];
    size_t len = 0, off = 0;
    buf[0] = '\0';
    int status = read_answer(fd, buf, sizeof(buf), &len, &off);
    close(fd);
    return status;
}

/* ---------------------------------------------------------------- cases */

/* evhttp's timeout restarts on every byte: a header line every 300 ms
 * kept a connection forever. The deadline counts from the first byte. */
static void test_request_deadline(void **state) {
    (void)state;
    daemon_ d;
    char *args[] = {"--request-timeout-ms", "1000", NULL};
    daemon_start(&d, 0, args);
    int fd = sock_connect(d.port);
    long long t0 = now_ms();
    sock_send(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n");
    char buf[4096] = "";
    size_t len = 0;
    int eof = 0;
    while (!eof && now_ms() - t0 < 8000) {
        if (send(fd, "X-Drip: 1\r\n", 11, MSG_NOSIGNAL) < 0)
            break; /* closed under us: read what came */
        eof = sock_read(fd, buf, sizeof(buf), &len, 300);
    }
    if (!eof)
        eof = sock_read(fd, buf, sizeof(buf), &len, 2000);
    long long took = now_ms() - t0;
    assert_true(eof);
    assert_true(took < 8000);
    assert_non_null(strstr(buf, "HTTP/1.1 408 Request Timeout\r\n"));
    assert_non_null(strstr(buf, "\"code\":\"RequestTimeout\""));
    close(fd);
    /* A request sent whole is not affected, and the deadline is counted. */
    assert_int_equal(http_status(d.port, "GET", "/healthz", NULL), 200);
    assert_int_equal(metric(d.port, "objlog_http_request_timeouts_total"), 1);
    char *err = daemon_stderr(&d);
    assert_non_null(strstr(err, "NOTICE http: closing a connection: its request was not "
                                "complete within 1000 ms"));
    free(err);
    daemon_stop(&d);
}

/* A client that shuts down its sending side after the request still gets
 * the whole answer (evhttp took the read EOF for a failure and dropped
 * all but the first 16,384 bytes). */
static void test_half_close_gets_whole_answer(void **state) {
    (void)state;
    daemon_ d;
    daemon_start(&d, 0, NULL);
    assert_int_equal(http_status(d.port, "PUT", "/v1/buckets/half", NULL), 200);
    char key[1000], path[1200];
    memset(key, 'k', 900);
    for (int i = 0; i < 130; i++) {
        snprintf(key + 900, sizeof(key) - 900, "%04d", i);
        snprintf(path, sizeof(path), "/v1/buckets/half/objects/%s", key);
        assert_int_equal(http_status(d.port, "PUT", path, "{\"etag\":\"e\",\"size\":1}"), 200);
    }
    for (int round = 0; round < 2; round++) {
        int fd = sock_connect(d.port);
        /* Round 0 is a strong read (may park on its fence), 1 eventual. */
        sock_send(fd, round == 0
                          ? "GET /v1/buckets/half/objects?max_keys=1000 HTTP/1.1\r\nHost: t\r\n\r\n"
                          : "GET /v1/buckets/half/objects?max_keys=1000&consistency=eventual "
                            "HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_int_equal(shutdown(fd, SHUT_WR), 0);
        static char buf[1 << 18];
        size_t len = 0;
        buf[0] = '\0';
        long long t0 = now_ms();
        while (!sock_read(fd, buf, sizeof(buf), &len, 1000) && now_ms() - t0 < 20000) {
        }
        close(fd);
        char *hdr_end = strstr(buf, "\r\n\r\n");
        assert_non_null(hdr_end);
        assert_int_equal(atoi(buf + 9), 200);
        const char *cl = strcasestr(buf, "Content-Length:");
        assert_non_null(cl);
        size_t want = (size_t)atol(cl + 15), got = len - (size_t)(hdr_end + 4 - buf);
        assert_true(want > 100000);
        assert_int_equal(got, want);
        json_t *j = json_loadb(hdr_end + 4, got, 0, NULL);
        assert_non_null(j);
        assert_int_equal(json_array_size(json_object_get(j, "objects")), 130);
        json_decref(j);
    }
    assert_int_equal(metric(d.port, "objlog_http_answers_cut_total"), 0);
    daemon_stop(&d);
}

/* One request on a new connection: its status (read_answer's), and
 * whether objlogd then closed the connection (within 2 s). */
static int ask_once(int port, const char *path, int *closed) {
    int fd = sock_connect(port);
    char req[512];
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
    sock_send(fd, req);
    static char buf[1 << 20];
    size_t len = 0, body = 0;
    int status = read_answer(fd, buf, sizeof(buf), &len, &body);
    *closed = sock_read(fd, buf, sizeof(buf), &len, 2000);
    close(fd);
    return status;
}

/* --max-connections 4 (one worker): past the four, the worker takes two
 * more for /healthz, /readyz and /metrics only (each answers one request
 * and closes; any other path is 503 SlowDown); with those two busy, a
 * seventh connection waits in the backlog, unanswered, until one closes. */
static void test_connection_cap(void **state) {
    (void)state;
    daemon_ d;
    char *args[] = {"--max-connections", "4", "--threads", "1", NULL};
    daemon_start(&d, 0, args);
    int fds[4];
    for (int i = 0; i < 4; i++)
        fds[i] = sock_connect(d.port);
    /* The first connection answers: all four are objlogd's. */
    assert_int_equal(metric_on(fds[0], "objlog_http_connections"), 4);
    assert_int_equal(metric_on(fds[0], "objlog_http_connections_max"), 4);
    int closed = 0;
    assert_int_equal(ask_once(d.port, "/v1/buckets", &closed), 503);
    assert_true(closed);
    assert_int_equal(ask_once(d.port, "/healthz", &closed), 200);
    assert_true(closed);
    /* both reserve slots held by requests in progress (an idle one would
     * be dropped after a second) */
    int reserve[2] = {sock_connect(d.port), sock_connect(d.port)};
    sock_send(reserve[0], "GET /healthz HTTP/1.1\r\n");
    sock_send(reserve[1], "GET /healthz HTTP/1.1\r\n");
    int seventh = sock_connect(d.port); /* the kernel completes it: backlog */
    sock_send(seventh, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    char buf[4096] = "";
    size_t len = 0;
    assert_int_equal(sock_read(seventh, buf, sizeof(buf), &len, 1500), 0);
    assert_int_equal(len, 0);
    close(fds[3]);
    size_t body = 0;
    assert_int_equal(read_answer(seventh, buf, sizeof(buf), &len, &body), 200);
    assert_true(metric_on(fds[0], "objlog_http_connections") >= 5);
    assert_true(metric_on(fds[0], "objlog_http_accept_pauses_total{reason=\"limit\"}") >= 1);
    assert_true(metric_on(fds[0], "objlog_http_reserve_refusals_total") == 1);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    close(reserve[0]);
    close(reserve[1]);
    close(seventh);
    daemon_stop(&d);
}

/* More idle connections than --max-connections on the S3 port (the cap
 * counts both ports) and one more on the JSON port, all holding their
 * slots for the default 5 s idle timeout: /healthz, /readyz and /metrics
 * on the JSON port are still answered at once, well inside 2 s (before,
 * a probe waited in the backlog until idle connections were dropped after
 * evhttp's 60 s). */
static void test_probes_at_the_cap(void **state) {
    (void)state;
    daemon_ d;
    char *args[] = {"--max-connections", "4", "--threads", "1", "--s3-listen",
                    "127.0.0.1:0", "--s3-anonymous", NULL};
    daemon_start(&d, 0, args);
    enum { IDLE = 12 };
    int idle[IDLE + 1];
    for (int i = 0; i < IDLE; i++)
        idle[i] = sock_connect(d.s3port);
    idle[IDLE] = sock_connect(d.port);
    usleep(200 * 1000); /* objlogd takes what it will take */
    const char *probes[] = {"/healthz", "/readyz", "/metrics"};
    for (int i = 0; i < 3; i++) {
        long long t0 = now_ms();
        int closed = 0;
        assert_int_equal(ask_once(d.port, probes[i], &closed), 200);
        long long took = now_ms() - t0;
        print_message("%s at the cap: %lld ms\n", probes[i], took);
        if (took > 2000)
            fail_msg("%s took %lld ms at the connection cap", probes[i], took);
    }
    for (int i = 0; i <= IDLE; i++)
        close(idle[i]);
    daemon_stop(&d);
}

/* --idle-timeout-ms (here through OBJLOG_IDLE_TIMEOUT_MS) closes a
 * connection that sends nothing, and one idle between requests, on both
 * ports; a request being received is under the request deadline instead.
 * With the cap at 4 and 12 idle connections offered, the backlog drains:
 * every one of them is taken and closed in turn. */
static void test_idle_timeout(void **state) {
    (void)state;
    daemon_ d;
    char *args[] = {"--max-connections", "4", "--threads", "1", "--s3-listen",
                    "127.0.0.1:0", "--s3-anonymous", NULL};
    char *env[] = {"OBJLOG_IDLE_TIMEOUT_MS=400", NULL};
    daemon_start_env(&d, 0, args, env);
    char buf[4096];
    size_t len = 0, body = 0;
    /* never a byte, on either port */
    int silent = sock_connect(d.port), s3silent = sock_connect(d.s3port);
    long long t0 = now_ms();
    assert_int_equal(sock_read(silent, buf, sizeof(buf), &len, 3000), 1);
    assert_int_equal(sock_read(s3silent, buf, sizeof(buf), &len, 3000), 1);
    assert_int_equal(len, 0); /* closed without a word */
    long long took = now_ms() - t0;
    print_message("a silent connection closed after %lld ms\n", took);
    assert_true(took >= 300 && took < 3000);
    close(silent);
    close(s3silent);
    /* idle after an answer: closed no sooner than the timeout after the
     * request was sent (timed from the send, which the server's answer
     * can only follow: a late reader on a busy machine cannot make the
     * close look early) */
    int fd = sock_connect(d.port);
    t0 = now_ms();
    sock_send(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(read_answer(fd, buf, sizeof(buf), &len, &body), 200);
    len = 0;
    assert_int_equal(sock_read(fd, buf, sizeof(buf), &len, 3000), 1);
    assert_true(now_ms() - t0 >= 400);
    close(fd);
    /* a request arriving slowly is not idle: 900 ms between its halves */
    fd = sock_connect(d.port);
    sock_send(fd, "GET /healthz HTTP/1.1\r\n");
    usleep(900 * 1000);
    sock_send(fd, "Host: t\r\n\r\n");
    assert_int_equal(read_answer(fd, buf, sizeof(buf), &len, &body), 200);
    close(fd);
    /* the backlog drains */
    enum { IDLE = 12 };
    int idle[IDLE];
    for (int i = 0; i < IDLE; i++)
        idle[i] = sock_connect(d.s3port);
    t0 = now_ms();
    for (int i = 0; i < IDLE; i++) {
        len = 0;
        if (sock_read(idle[i], buf, sizeof(buf), &len, 8000) != 1)
            fail_msg("idle connection %d still open after %lld ms", i, now_ms() - t0);
        close(idle[i]);
    }
    print_message("%d idle connections at a cap of 4 closed in %lld ms\n", IDLE,
                  now_ms() - t0);
    assert_true(metric(d.port, "objlog_http_idle_closes_total") >= IDLE + 3);
    daemon_stop(&d);
}

static double cpu_seconds(pid_t pid) {
    char path[64], buf[2048];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    assert_non_null(p);
    unsigned long long ut = 0, st = 0;
    /* fields after the command: state(3) ... utime(14) stime(15) */
    assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                            &ut, &st), 2);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int count_lines_with(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* Descriptors pid has open. */
static int open_fds(pid_t pid) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The TCP ports pid listens on but `except` (the embedded Kafka's
 * brokers, for objlogd --embedded with one listener): the sockets among
 * its descriptors whose inode /proc/net/tcp lists in state LISTEN. */
static int listen_ports(pid_t pid, int except, int *ports, int max) {
    enum { MAXL = 64 };
    unsigned long inode[MAXL];
    int port[MAXL], nl = 0, n = 0;
    FILE *f = fopen("/proc/net/tcp", "r");
    assert_non_null(f);
    char line[512];
    while (fgets(line, sizeof(line), f) && nl < MAXL) {
        unsigned lport, st;
        unsigned long ino;
        if (sscanf(line, " %*d: %*x:%x %*x:%*x %x %*s %*s %*s %*d %*d %lu", &lport, &st,
                   &ino) == 3 && st == 0x0A) {
            inode[nl] = ino;
            port[nl++] = (int)lport;
        }
    }
    fclose(f);
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL && n < max;) {
        char path[320], target[64];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        ssize_t len = readlink(path, target, sizeof(target) - 1);
        unsigned long ino;
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (sscanf(target, "socket:[%lu]", &ino) != 1)
            continue;
        for (int i = 0; i < nl; i++)
            if (inode[i] == ino && port[i] != except)
                ports[n++] = port[i];
    }
    closedir(d);
    return n;
}

static int connect_nb(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    assert_true(rc == 0 || errno == EINPROGRESS);
    return fd;
}

/* 400 connections against 160 descriptors. evconnlistener retried a
 * failed accept() at once, forever (a core busy, a warning per try);
 * objlogd stops accepting while fewer than 32 descriptors are free,
 * saying so once per 10 s per worker, so the store and Kafka always have
 * some: a connection to the embedded Kafka's brokers then is accepted
 * (librdkafka's mock broker polls one it cannot accept in a busy loop,
 * logging each try: 3 s of CPU and 96 MB of log in 3 s). */
static void test_out_of_descriptors(void **state) {
    (void)state;
    daemon_ d;
    char *args[] = {"--max-connections", "10000", "--threads", "2", NULL};
    daemon_start(&d, 160, args);
    enum { N = 400 };
    int fds[N + 8], nfds = 0;
    for (int i = 0; i < N; i++)
        fds[nfds++] = connect_nb(d.port);
    sleep(1);
    int brokers[8];
    int nb = listen_ports(d.p->pid, d.port, brokers, 8);
    assert_int_equal(nb, 3); /* the embedded cluster's three brokers */
    for (int i = 0; i < nb; i++)
        fds[nfds++] = connect_nb(brokers[i]);
    int held = open_fds(d.p->pid);
    print_message("objlogd holds %d of its 160 descriptors\n", held);
    assert_true(held <= 160 - 16);
    double c0 = cpu_seconds(d.p->pid);
    sleep(3);
    double used = cpu_seconds(d.p->pid) - c0;
    print_message("objlogd at its descriptor floor: %.2f s of CPU in 3 s\n", used);
    assert_true(used < 0.45); /* under 15% of a core; the busy loops took 100% */
    char *err = daemon_stderr(&d);
    int lines = count_lines_with(err, "WARN http: accept: fewer than 32 of the 160 open "
                                      "files are free");
    print_message("stderr: %zu bytes, %d accept warnings\n", strlen(err), lines);
    assert_true(lines >= 1 && lines <= 2); /* one per worker per 10 s */
    assert_int_equal(count_lines_with(err, "Too many open files"), 0);
    assert_true(strlen(err) < 8192);
    free(err);
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    /* Descriptors are back: it serves again (the pause is 100 ms). */
    long long t0 = now_ms();
    assert_int_equal(http_status(d.port, "GET", "/healthz", NULL), 200);
    assert_true(now_ms() - t0 < 5000);
    assert_true(metric(d.port, "objlog_http_accept_pauses_total{reason=\"descriptors\"}") >= 1);
    daemon_stop(&d);
}

/* ---------------------------------------------------------------- logs */

static int is_log_prefix(const char *line) {
    /* 2026-11-23T20:09:14.123Z LEVEL component: */
    if (strlen(line) < 26 || line[4] != '-' || line[10] != 'T' || line[19] != '.' ||
        line[23] != 'Z' || line[24] != ' ')
        return 0;
    static const char *const levels[] = {"ERROR ", "WARN ", "NOTICE ", "INFO ", "DEBUG "};
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        if (strncmp(line + 25, levels[i], strlen(levels[i])) == 0)
            return strstr(line + 25, ": ") != NULL;
    return 0;
}

/* Every stderr line of a run (start, requests, SIGTERM) has the prefix. */
static void test_text_log_lines(void **state) {
    (void)state;
    daemon_ d;
    daemon_start(&d, 0, NULL);
    assert_int_equal(http_status(d.port, "GET", "/healthz", NULL), 200);
    int status = proc_stop(d.p, 20000);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *err = daemon_stderr(&d);
    int lines = 0;
    for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n"), lines++)
        if (!is_log_prefix(line))
            fail_msg("not a log line: \"%s\"", line);
    assert_true(lines >= 4); /* embedded warning, view, group, stop */
    free(err);
    proc_rmtree(d.dir);
}

/* --log-format json: one object per line with ts, level, component, msg;
 * the access log too, one line per answer, carrying the request id the
 * client got. */
static void test_json_logs_and_access_log(void **state) {
    (void)state;
    daemon_ d;
    char access[320];
    char dir[256];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    snprintf(access, sizeof(access), "%s/access.log", dir);
    char *args[] = {"--log-format", "json", "--access-log", access, NULL};
    daemon_start(&d, 0, args);
    /* Three answers: 200, 404 and a PUT. */
    int fd = sock_connect(d.port);
    char buf[8192] = "";
    size_t len = 0, body = 0;
    sock_send(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(read_answer(fd, buf, sizeof(buf), &len, &body), 200);
    char rid[64] = "";
    const char *h = strcasestr(buf, "X-Objlog-Request-Id: ");
    assert_non_null(h);
    sscanf(h + 21, "%63[0-9a-f]", rid);
    assert_int_equal(strlen(rid), 32);
    buf[0] = '\0';
    sock_send(fd, "GET /v1/buckets/nobucket/objects/k HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(read_answer(fd, buf, sizeof(buf), &len, &body), 404);
    buf[0] = '\0';
    sock_send(fd, "PUT /v1/buckets/logged HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_int_equal(read_answer(fd, buf, sizeof(buf), &len, &body), 200);
    close(fd);
    int status = proc_stop(d.p, 20000);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    char *err = daemon_stderr(&d);
    int lines = 0;
    for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n"), lines++) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j)
            fail_msg("not JSON: \"%s\"", line);
        const char *ts = json_string_value(json_object_get(j, "ts"));
        const char *level = json_string_value(json_object_get(j, "level"));
        assert_non_null(ts);
        assert_int_equal(strlen(ts), 24);
        assert_true(ts[10] == 'T' && ts[23] == 'Z');
        assert_non_null(level);
        assert_true(strcmp(level, "info") == 0 || strcmp(level, "warn") == 0);
        assert_non_null(json_string_value(json_object_get(j, "component")));
        assert_non_null(json_string_value(json_object_get(j, "msg")));
        json_decref(j);
    }
    assert_true(lines >= 4);
    free(err);

    FILE *f = fopen(access, "r");
    assert_non_null(f);
    char line[4096];
    const char *want[3][3] = {{"GET", "/healthz", "200"},
                              {"GET", "/v1/buckets/nobucket/objects/k", "404"},
                              {"PUT", "/v1/buckets/logged", "200"}};
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        assert_true(n < 3);
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "component")), "access");
        assert_string_equal(json_string_value(json_object_get(j, "method")), want[n][0]);
        assert_string_equal(json_string_value(json_object_get(j, "path")), want[n][1]);
        assert_int_equal(json_integer_value(json_object_get(j, "status")), atoi(want[n][2]));
        assert_true(json_integer_value(json_object_get(j, "bytes")) > 0);
        double secs = json_real_value(json_object_get(j, "seconds"));
        assert_true(secs >= 0 && secs < 10);
        assert_true(strncmp(json_string_value(json_object_get(j, "peer")), "127.0.0.1:", 10)
                    == 0);
        assert_int_equal(strlen(json_string_value(json_object_get(j, "request_id"))), 32);
        if (n == 0)
            assert_string_equal(json_string_value(json_object_get(j, "request_id")), rid);
        json_decref(j);
        n++;
    }
    fclose(f);
    assert_int_equal(n, 3);
    proc_rmtree(d.dir);
    proc_rmtree(dir);
}

/* A bad --log-format is a usage error naming the value. */
static void test_bad_log_format(void **state) {
    (void)state;
    char out[512], err[512];
    char *argv[] = {objlogd, "--log-format", "xml", NULL};
    assert_int_equal(proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 10000), 2);
    assert_non_null(strstr(err, "objlogd: --log-format must be text or json (got 'xml')"));
}

int main(void) {
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    struct rlimit rl;
    /* the test holds 400 sockets at once */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_log_format),
        cmocka_unit_test(test_request_deadline),
        cmocka_unit_test(test_half_close_gets_whole_answer),
        cmocka_unit_test(test_connection_cap),
        cmocka_unit_test(test_probes_at_the_cap),
        cmocka_unit_test(test_idle_timeout),
        cmocka_unit_test(test_out_of_descriptors),
        cmocka_unit_test(test_text_log_lines),
        cmocka_unit_test(test_json_logs_and_access_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
