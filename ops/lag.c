/* lag.c: `objlog lag`, the operator's view of how far each partition's
 * materialized view trails the log (docs/ARCHITECTURE.md, "Reads"):
 * GET /v1/lag as a table (PARTITION APPLIED END LAG LAG_S STATE) and a
 * summary line; --json prints
 * the server's JSON; --watch redraws every --interval seconds until SIGINT
 * or SIGTERM (exit 0), adding each partition's apply rate (events/s)
 * measured between two refreshes. Invariant: the screen is cleared with
 * ANSI codes only when stdout is a terminal, and every refresh is flushed,
 * so a pipe or a log file gets plain successive tables. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define LAG_COLS 7
#define LAG_MAX_PARTS 4096

/* Set by the signal handler only; the watch loop polls it. */
static volatile sig_atomic_t lag_stop;

static void lag_on_signal(int sig) {
    (void)sig;
    lag_stop = 1;
}

typedef struct lag_args {
    cli *c;
    const char *url;
    int json, watch;
    double interval;
} lag_args;

/* Applied offsets of the previous refresh, for the rate column. */
typedef struct lag_prev {
    int valid;
    double at;
    int64_t applied[LAG_MAX_PARTS];
    unsigned char seen[LAG_MAX_PARTS];
} lag_prev;

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char lag_usage_text[] =
    "usage: objlog lag [--json] [--watch [--interval S]]\n"
    "Per partition: APPLIED END LAG LAG_S STATE (and RATE/S with --watch), then\n"
    "the max lag. --watch refreshes every S seconds (0.05..3600, default 1)\n"
    "until Ctrl-C.\n";

enum { O_WATCH = CLI_OPT_OWN, O_INTERVAL };

static int lag_parse(cli *c, lag_args *a, int argc, char **argv) {
    static const struct option opts[] = {
        {"watch", no_argument, NULL, O_WATCH},
        {"interval", required_argument, NULL, O_INTERVAL},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int interval_given = 0, rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        if (o == O_WATCH) {
            a->watch = 1;
            continue;
        }
        char *end = NULL;
        a->interval = strtod(optarg, &end);
        if (!*optarg || *end || !(a->interval >= 0.05 && a->interval <= 3600))
            return cli_usage_error(c, "--interval must be 0.05 to 3600 seconds, not \"%s\"",
                                   optarg);
        interval_given = 1;
    }
    const char *none[1];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, none, 0, 0, NULL, &rc) < 0)
        return rc;
    if (interval_given && !a->watch)
        return cli_usage_error(c, "--interval needs --watch");
    return 0;
}

/* Fetches /v1/lag. 0 with *out (object) and the raw body in *r, or an exit
 * code after one error line on stderr. */
static int lag_fetch(CURL *h, const lag_args *a, cli_resp *r, json_t **out) {
    char url[1024], err[256], auth[600];
    const char *hdrs[2];
    snprintf(url, sizeof(url), "%s/v1/lag", a->url);
    if (cli_http(h, "GET", url, NULL, cli_auth_headers(a->c, NULL, hdrs, 2, auth, sizeof(auth)),
                 r, err, sizeof(err)) < 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "cannot reach %s: %s", a->url, err);
        return cli_fail(a->c, a->url, "ConnectionError", msg, 0, NULL);
    }
    if (r->status != 200) {
        char code[64], msg[512];
        cli_error_of(r, code, sizeof(code), msg, sizeof(msg));
        long status = r->status;
        cli_resp_free(r);
        return cli_fail(a->c, a->url, code, msg, status, NULL);
    }
    *out = json_loads(r->body, 0, NULL);
    if (!*out || !json_is_array(json_object_get(*out, "partitions"))) {
        json_decref(*out);
        *out = NULL;
        cli_resp_free(r);
        return cli_fail(a->c, a->url, "InvalidResponse", "server answered no lag JSON", 0,
                        NULL);
    }
    return 0;
}

static long long jll(json_t *o, const char *name) {
    return (long long)json_integer_value(json_object_get(o, name));
}

static double jnum(json_t *o, const char *name) {
    return json_number_value(json_object_get(o, name));
}

/* Rate of partition p since the previous refresh, or "-" if unknown. */
static void lag_rate(const lag_prev *prev, int p, long long applied, double now,
                     char *out, size_t n) {
    if (!prev || !prev->valid || p < 0 || p >= LAG_MAX_PARTS || !prev->seen[p] ||
        now <= prev->at) {
        snprintf(out, n, "-");
        return;
    }
    snprintf(out, n, "%.1f", (double)(applied - prev->applied[p]) / (now - prev->at));
}

/* Prints the table (cells formatted first so the columns fit the widest
 * value); rate column only when prev is given (watch mode). */
static void lag_table(json_t *j, lag_prev *prev, double now) {
    static const char *const head[LAG_COLS] = {"PARTITION", "APPLIED", "END", "LAG",
                                               "LAG_S", "STATE", "RATE/S"};
    static const int right[LAG_COLS] = {1, 1, 1, 1, 1, 0, 1};
    int ncols = prev ? LAG_COLS : LAG_COLS - 1;
    json_t *parts = json_object_get(j, "partitions");
    size_t n = json_array_size(parts);
    char(*cell)[LAG_COLS][32] = calloc(n ? n : 1, sizeof(*cell));
    if (!cell)
        return;
    size_t w[LAG_COLS];
    for (int c = 0; c < LAG_COLS; c++)
        w[c] = strlen(head[c]);
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(parts, i);
        const char *st = json_string_value(json_object_get(p, "state"));
        snprintf(cell[i][0], 32, "%lld", jll(p, "partition"));
        snprintf(cell[i][1], 32, "%lld", jll(p, "applied"));
        snprintf(cell[i][2], 32, "%lld", jll(p, "end"));
        snprintf(cell[i][3], 32, "%lld", jll(p, "lag_messages"));
        snprintf(cell[i][4], 32, "%.3f", jnum(p, "lag_seconds"));
        snprintf(cell[i][5], 32, "%s", st ? st : "?");
        lag_rate(prev, (int)jll(p, "partition"), jll(p, "applied"), now, cell[i][6], 32);
        for (int c = 0; c < ncols; c++)
            if (strlen(cell[i][c]) > w[c])
                w[c] = strlen(cell[i][c]);
    }
    for (size_t i = 0; i <= n; i++) {
        for (int c = 0; c < ncols; c++) {
            const char *v = i == 0 ? head[c] : cell[i - 1][c];
            int last = c == ncols - 1;
            if (right[c])
                printf("%*s%s", (int)w[c], v, last ? "" : "  ");
            else if (last)
                printf("%s", v);
            else
                printf("%-*s  ", (int)w[c], v);
        }
        putchar('\n');
    }
    free(cell);
}

static void lag_remember(json_t *j, lag_prev *prev, double now) {
    size_t i;
    json_t *p;
    memset(prev->seen, 0, sizeof(prev->seen));
    json_array_foreach(json_object_get(j, "partitions"), i, p) {
        long long part = jll(p, "partition");
        if (part < 0 || part >= LAG_MAX_PARTS)
            continue;
        prev->applied[part] = jll(p, "applied");
        prev->seen[part] = 1;
    }
    prev->at = now;
    prev->valid = 1;
}

static void lag_print(json_t *j, lag_prev *prev, double now) {
    lag_table(j, prev, now);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(j, "partitions"), i, p) {
        const char *e = json_string_value(json_object_get(p, "error"));
        if (e && *e)
            printf("partition %lld stopped: %s\n", jll(p, "partition"), e);
    }
    /* objlogd's counters: since that process started, not since the log began */
    printf("max lag %lld messages (%.3f s); since objlogd started: %lld events applied, "
           "%lld dlq events\n",
           jll(j, "max_lag_messages"), jnum(j, "max_lag_seconds"), jll(j, "events_applied"),
           jll(j, "dlq_events"));
}

static int lag_once(CURL *h, const lag_args *a) {
    cli_resp r;
    json_t *j = NULL;
    int rc = lag_fetch(h, a, &r, &j);
    if (rc)
        return rc;
    if (a->json) {
        fputs(r.body, stdout);
        if (r.body_len == 0 || r.body[r.body_len - 1] != '\n')
            putchar('\n');
    } else {
        lag_print(j, NULL, 0);
    }
    json_decref(j);
    cli_resp_free(&r);
    return CLI_EXIT_OK;
}

/* Sleeps s seconds unless a stop signal comes first. */
static void lag_sleep(double s) {
    struct timespec ts = {.tv_sec = (time_t)s,
                          .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (!lag_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* One refresh of --watch. A failed fetch is reported and the watch goes
 * on: an operator watching a restart wants the table back when it is. */
static void lag_refresh(CURL *h, const lag_args *a, lag_prev *prev, int tty) {
    cli_resp r;
    json_t *j = NULL;
    if (lag_fetch(h, a, &r, &j) != 0) {
        prev->valid = 0;
        return;
    }
    double now = mono_s();
    if (a->json) {
        char *s = json_dumps(j, JSON_COMPACT);
        printf("%s\n", s ? s : "{}");
        free(s);
    } else {
        if (tty)
            fputs("\033[H\033[2J", stdout);
        char when[32];
        time_t t = time(NULL);
        struct tm tm;
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
        printf("objlog lag %s every %.2g s at %s (Ctrl-C stops)\n", a->url, a->interval,
               when);
        lag_print(j, prev, now);
        if (!tty)
            putchar('\n');
    }
    lag_remember(j, prev, now);
    json_decref(j);
    cli_resp_free(&r);
}

static int lag_watch(CURL *h, const lag_args *a) {
    struct sigaction sa = {.sa_handler = lag_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: the sleep wakes at once */
    sigaction(SIGTERM, &sa, NULL);
    lag_prev *prev = calloc(1, sizeof(*prev));
    if (!prev)
        return CLI_EXIT_FAIL;
    int tty = isatty(STDOUT_FILENO);
    while (!lag_stop) {
        lag_refresh(h, a, prev, tty);
        fflush(stdout);
        lag_sleep(a->interval);
    }
    free(prev);
    return CLI_EXIT_OK;
}

int lag_main(cli *c, int argc, char **argv) {
    lag_args a = {.c = c, .interval = 1.0};
    int rc = lag_parse(c, &a, argc, argv);
    if (rc || c->help_shown)
        return rc;
    a.url = c->url;
    a.json = c->json;
    rc = a.watch ? lag_watch(c->h, &a) : lag_once(c->h, &a);
    return rc;
}
