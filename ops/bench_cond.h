/* bench_cond.h: `objlog bench --conditional` (ops/bench_cond.c), the
 * conditional PUT round-trip latency scenario. Internal to the
 * objlog CLI; bench.c parses the shared options and starts the objlogd. */
#ifndef OBJLOG_BENCH_COND_H
#define OBJLOG_BENCH_COND_H

#include <signal.h>
#include <stddef.h>

#define BENCH_COND_MAX_RATES 16

typedef struct bench_cond_args {
    const char *url;             /* objlogd HTTP base URL */
    const char *brokers;         /* its Kafka bootstrap servers */
    int rates[BENCH_COND_MAX_RATES]; /* target writes/s, run in this order */
    int n_rates;
    int seconds;                 /* per rate */
    const char *linger;          /* kafka.linger.ms for the producer, or NULL */
    int json;
    const volatile sig_atomic_t *stop; /* set (SIGINT): end early, report nothing */
} bench_cond_args;

/* Parses "1000,5000" into a->rates. 0, or -1 if malformed (each rate
 * 1..100000, at most BENCH_COND_MAX_RATES). */
int bench_cond_parse_rates(bench_cond_args *a, const char *list);

/* Runs every rate; prints one line (or one JSON object) per rate. Returns
 * a CLI exit code: CLI_EXIT_FAIL if any write failed or the setup did.
 * bucket receives the name of the bucket it created ("" if none), so the
 * caller can remove it. */
int bench_cond_run(const bench_cond_args *a, char *bucket, size_t bucket_size);

#endif
