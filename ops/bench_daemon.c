/* bench_daemon.c: the objlogd processes `objlog bench` starts: where the
 * binary is, the bench's own `objlogd --embedded` in a temp dir (started,
 * read until ready, stopped), the OBJLOG_* ready lines every started
 * objlogd prints, and stopping and cleaning up after a child.
 * Invariant: a child the bench starts never outlives it: it dies with us
 * (PDEATHSIG), and bench_daemon_stop / bench_child_stop escalate from
 * SIGTERM to SIGKILL and reap it; its temp dir goes with it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_int.h"

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

int bench_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
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

void bench_daemon_stop(bench *b) {
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
    /* --s3, --s3-bytes: the S3 listener beside the JSON one (loopback,
     * unsigned), its bytes in the temp dir. */
    char blobs[140];
    snprintf(blobs, sizeof(blobs), "%s/blobs", b->tmpdir);
    char *argv[] = {(char *)path, "--embedded", "--listen", "127.0.0.1:0",
                    "--data", data, "--s3-listen", "127.0.0.1:0", "--s3-anonymous",
                    "--blob-dir", blobs,
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

int bench_daemon_start(bench *b) {
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
