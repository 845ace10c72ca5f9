/* proc.c: see proc.h. The registry of live children is test-process state
 * (not library state); it exists only so the atexit hook can kill them. */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROC_MAX 64
static pid_t proc_live[PROC_MAX];
static int proc_hook_set;

static void proc_kill_all(void) {
    for (int i = 0; i < PROC_MAX; i++)
        if (proc_live[i] > 0) {
            kill(proc_live[i], SIGKILL);
            waitpid(proc_live[i], NULL, 0);
            proc_live[i] = 0;
        }
}

static void proc_track(pid_t pid, int add) {
    if (!proc_hook_set) {
        atexit(proc_kill_all);
        proc_hook_set = 1;
    }
    for (int i = 0; i < PROC_MAX; i++) {
        if (add && proc_live[i] == 0) {
            proc_live[i] = pid;
            return;
        }
        if (!add && proc_live[i] == pid) {
            proc_live[i] = 0;
            return;
        }
    }
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pid_t proc_fork_exec(char *const argv[], char *const extra_env[],
                            int in_fd, int out_fd, int err_fd) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    if (in_fd >= 0)
        dup2(in_fd, 0);
    if (out_fd >= 0)
        dup2(out_fd, 1);
    if (err_fd >= 0)
        dup2(err_fd, 2);
    for (int i = 0; extra_env && extra_env[i]; i++)
        putenv(extra_env[i]);
    execv(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

proc *proc_spawn(char *const argv[], char *const extra_env[]) {
    return proc_spawn_err(argv, extra_env, NULL);
}

proc *proc_spawn_err(char *const argv[], char *const extra_env[], const char *err_path) {
    int fds[2];
    int err_fd = err_path ? open(err_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    if ((err_path && err_fd < 0) || pipe2(fds, O_CLOEXEC) < 0) {
        if (err_fd >= 0)
            close(err_fd);
        return NULL;
    }
    proc *p = calloc(1, sizeof(*p));
    if (!p) {
        close(fds[0]);
        close(fds[1]);
        if (err_fd >= 0)
            close(err_fd);
        return NULL;
    }
    p->pid = proc_fork_exec(argv, extra_env, -1, fds[1], err_fd);
    close(fds[1]);
    if (err_fd >= 0)
        close(err_fd);
    if (p->pid < 0) {
        close(fds[0]);
        free(p);
        return NULL;
    }
    p->out_fd = fds[0];
    proc_track(p->pid, 1);
    return p;
}

int proc_wait_line(proc *p, const char *prefix, char *out, size_t out_size,
                   int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    size_t pl = strlen(prefix);
    for (;;) {
        char *nl;
        while ((nl = memchr(p->buf, '\n', p->len)) != NULL) {
            size_t ll = (size_t)(nl - p->buf);
            int hit = ll >= pl && !memcmp(p->buf, prefix, pl);
            if (hit && out_size) {
                size_t n = ll - pl < out_size - 1 ? ll - pl : out_size - 1;
                memcpy(out, p->buf + pl, n);
                out[n] = '\0';
            }
            memmove(p->buf, nl + 1, p->len - ll - 1);
            p->len -= ll + 1;
            if (hit)
                return 0;
        }
        long long left = deadline - now_ms();
        if (left <= 0 || p->len == sizeof(p->buf))
            return -1;
        struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
        if (poll(&pfd, 1, (int)left) <= 0)
            continue;
        ssize_t r = read(p->out_fd, p->buf + p->len, sizeof(p->buf) - p->len);
        if (r <= 0)
            return -1;
        p->len += (size_t)r;
    }
}

static int proc_reap(pid_t pid, int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0)
            return -1;
        if (now_ms() >= deadline)
            return -2;
        usleep(10000);
    }
}

int proc_stop(proc *p, int timeout_ms) {
    if (!p)
        return -1;
    kill(p->pid, SIGTERM);
    int st = proc_reap(p->pid, timeout_ms);
    if (st == -2) {
        kill(p->pid, SIGKILL);
        st = proc_reap(p->pid, 5000);
        st = -1;
    }
    proc_track(p->pid, 0);
    close(p->out_fd);
    free(p);
    return st;
}

void proc_kill(proc *p) {
    if (!p)
        return;
    kill(p->pid, SIGKILL);
    proc_reap(p->pid, 5000);
    proc_track(p->pid, 0);
    close(p->out_fd);
    free(p);
}

int proc_alive(proc *p, char *why, size_t why_size) {
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    /* WNOWAIT: look without reaping, so proc_stop's waitpid still finds it. */
    if (waitid(P_PID, p->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
        snprintf(why, why_size, "waitid: %s", strerror(errno));
        return 0;
    }
    if (si.si_pid == 0)
        return 1;
    if (si.si_code == CLD_EXITED)
        snprintf(why, why_size, "exit %d", si.si_status);
    else
        snprintf(why, why_size, "signal %d (%s)", si.si_status, strsignal(si.si_status));
    return 0;
}

/* Appends what fd has to buf (kept NUL-terminated, excess dropped);
 * returns 0 at EOF, 1 otherwise. */
static int proc_drain(int fd, char *buf, size_t size, size_t *len) {
    char tmp[4096];
    ssize_t r = read(fd, tmp, sizeof(tmp));
    if (r <= 0)
        return 0;
    size_t room = size - 1 - *len;
    size_t n = (size_t)r < room ? (size_t)r : room;
    memcpy(buf + *len, tmp, n);
    *len += n;
    buf[*len] = '\0';
    return 1;
}

int proc_run(char *const argv[], const char *stdin_data, char *out,
             size_t out_size, char *err, size_t err_size, int timeout_ms) {
    int o[2], e[2], in[2];
    if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0 || pipe2(in, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = proc_fork_exec(argv, NULL, in[0], o[1], e[1]);
    close(o[1]);
    close(e[1]);
    close(in[0]);
    if (pid < 0)
        return -1;
    proc_track(pid, 1);
    signal(SIGPIPE, SIG_IGN);
    if (stdin_data && write(in[1], stdin_data, strlen(stdin_data)) < 0)
        (void)0;
    close(in[1]);
    size_t len[2] = {0, 0};
    char *buf[2] = {out, err};
    size_t size[2] = {out_size, err_size};
    struct pollfd pfd[2] = {{.fd = o[0], .events = POLLIN}, {.fd = e[0], .events = POLLIN}};
    out[0] = err[0] = '\0';
    long long deadline = now_ms() + timeout_ms;
    while ((pfd[0].fd >= 0 || pfd[1].fd >= 0) && now_ms() < deadline) {
        if (poll(pfd, 2, 100) <= 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (!proc_drain(pfd[i].fd, buf[i], size[i], &len[i])) {
                close(pfd[i].fd);
                pfd[i].fd = -1;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (pfd[i].fd >= 0)
            close(pfd[i].fd);
    long long left = deadline - now_ms();
    int st = proc_reap(pid, left > 0 ? (int)left : 1);
    if (st == -2) {
        kill(pid, SIGKILL);
        proc_reap(pid, 5000);
        st = -1;
    }
    proc_track(pid, 0);
    if (st < 0 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

const char *proc_bin(const char *rel, char *buf, size_t buf_size) {
    const char *dir = getenv("OBJLOG_BIN_DIR");
    snprintf(buf, buf_size, "%s/%s", dir ? dir : ".", rel);
    return buf;
}

int proc_tmpdir(char *out, size_t out_size) {
    snprintf(out, out_size, "/tmp/objlog-test-XXXXXX");
    return mkdtemp(out) ? 0 : -1;
}

void proc_rmtree(const char *dir) {
    char cmd[1024];
    if (!dir || strncmp(dir, "/tmp/objlog-test-", 17) != 0)
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}
