/* bench_view.c: the bench's views of its own log: a second objlogd
 * (`objlogd --brokers`) that the bench starts on an empty --data in a temp
 * dir, reads through GET /v1/lag and stops, for the modes that time a
 * replay of the log into a fresh view (--stats, bench_stats.c; --apply,
 * bench_apply.c). A view runs in a process group of its own, so a Ctrl-C
 * at the terminal reaches the bench, which then stops it, rather than the
 * view behind the bench's back.
 * Invariant: a view's temp dir and process group live exactly from
 * bench_view_start to bench_view_stop, which the caller reaches on every
 * path, failures and SIGINT included; the view also dies with the bench
 * (PDEATHSIG). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_int.h"
#include "cli.h"

#define VIEW_MAX_EXTRA 8
#define VIEW_STOP_US (10 * 1000000LL)

/* SIGTERM to the view's process group, SIGKILL after VIEW_STOP_US; the
 * group is signalled again before the view is reaped, while its id is
 * still the group's, so nothing the view started outlives it. */
static void view_group_stop(pid_t pid) {
    kill(-pid, SIGTERM);
    int64_t deadline = bench_mono_us() + VIEW_STOP_US;
    siginfo_t si;
    for (;;) {
        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid)
            break;
        if (bench_mono_us() > deadline) {
            kill(-pid, SIGKILL);
            break;
        }
        usleep(20000);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

void bench_view_stop(bench_view *v) {
    if (v->pid > 0) {
        view_group_stop(v->pid);
        close(v->out);
    }
    v->pid = 0;
    if (v->dir[0])
        nftw(v->dir, bench_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    v->dir[0] = '\0';
}

void bench_view_log_tail(const bench_view *v) {
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "tail -5 %s/objlogd.log >&2", v->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "objlog: bench: no log in %s\n", v->dir);
}

int bench_view_start(bench *b, const char *const *extra, bench_view *v) {
    char path[PATH_MAX + 32], data[96], log[96], boot[512];
    bench_objlogd_path(path, sizeof(path));
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
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fds[1], 1);
        if (lf >= 0)
            dup2(lf, 2);
        char *argv[8 + VIEW_MAX_EXTRA] = {path, "--brokers", (char *)b->brokers, "--listen",
                                          "127.0.0.1:0", "--data", data};
        for (int i = 0; extra && extra[i] && i < VIEW_MAX_EXTRA; i++)
            argv[7 + i] = (char *)extra[i];
        execvp(path, argv);
        _exit(127);
    }
    close(fds[1]);
    v->out = fds[0];
    if (v->pid > 0)
        setpgid(v->pid, v->pid); /* also here: the child may not have run yet */
    if (v->pid < 0 ||
        bench_ready_lines(v->out, v->url, sizeof(v->url), boot, sizeof(boot)) < 0) {
        fprintf(stderr, "objlog: bench: replay view %s did not become ready (log: %s)\n",
                path, log);
        if (v->pid < 0)
            v->pid = 0;
        return -1;
    }
    return 0;
}

long bench_lag_sum(CURL *h, const char *url, const char *field) {
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
