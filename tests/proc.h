/* proc.h: child processes for integration tests. Every process a test starts
 * is killed when the test ends, even when it fails or crashes: children get
 * PR_SET_PDEATHSIG(SIGKILL) and an atexit hook SIGKILLs any still running.
 * stdout of a child is captured through a pipe so a test can wait for the
 * machine-readable OBJLOG_* lines objlogd prints. */
#ifndef OBJLOG_TEST_PROC_H
#define OBJLOG_TEST_PROC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct proc {
    pid_t pid;
    int out_fd;         /* read end of the child's stdout */
    char buf[8192];     /* unread captured stdout */
    size_t len;
} proc;

/* Starts argv[0] (a path) with argv; extra_env entries ("K=V", NULL-ended,
 * may be NULL) are added to the environment. NULL on failure. */
proc *proc_spawn(char *const argv[], char *const extra_env[]);
/* The same with its stderr appended to the file err_path (NULL: the
 * test's stderr), for a test that reads what the child logged. */
proc *proc_spawn_err(char *const argv[], char *const extra_env[], const char *err_path);
/* Reads stdout until a line starting with prefix; copies the rest of that
 * line (after the prefix) into out. 0 found, -1 timeout/EOF. */
int proc_wait_line(proc *p, const char *prefix, char *out, size_t out_size,
                   int timeout_ms);
/* SIGTERM, wait up to timeout_ms, then SIGKILL. Returns the exit status as
 * from waitpid (or -1), and frees p. */
int proc_stop(proc *p, int timeout_ms);
/* SIGKILL now and reap; frees p. */
void proc_kill(proc *p);
/* 1 while p runs; 0 once it has ended, with how in why ("exit 1",
 * "signal 6"). It is not reaped: proc_stop still frees it. */
int proc_alive(proc *p, char *why, size_t why_size);

/* Runs argv to completion, capturing stdout and stderr (each truncated to
 * size-1, NUL-terminated). Returns the exit code, or -1. */
int proc_run(char *const argv[], const char *stdin_data, char *out,
             size_t out_size, char *err, size_t err_size, int timeout_ms);

/* Path of a built binary: $OBJLOG_BIN_DIR/<rel> (tests run from ctest). */
const char *proc_bin(const char *rel, char *buf, size_t buf_size);

/* A fresh temp directory (mkdtemp); rm -rf with proc_rmtree. */
int proc_tmpdir(char *out, size_t out_size);
void proc_rmtree(const char *dir);

#endif
