/* bench_notify.c: objlog bench --notify: what the change feed delivers and
 * what it costs, against one objlogd (ours on the embedded log, or --url
 * and --brokers):
 *   1. N PUTs into a bucket without a configuration, then N into one whose
 *      configuration sends every creation to a Kafka topic: the PUT rate
 *      of each (until applied) and their ratio; the records/s the feed
 *      delivered, from the first PUT until a read_committed consumer has
 *      all N;
 *   2. N PUTs into a bucket whose configuration is a webhook served by
 *      this process: records/s from the first PUT to the last POST;
 *   3. for each --rates R (default 1000,10000) for --seconds S (default
 *      10): PUTs paced at R/s with ack=applied, and the delay from a
 *      write's acknowledgement to its record reaching the read_committed
 *      consumer, p50 and p99 (a record seen before its acknowledgement
 *      counts 0 ms and is counted).
 * Invariant: every phase runs in this process against the same daemon on
 * the monotonic clock; request ids carry the write's number, so a record
 * names the write it reports. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "bench_int.h"

#define NB_TOPIC_FMT "bench-feed-%d"

/* ---- a webhook endpoint in this process ---- */

typedef struct nb_hook {
    int fd, port;
    pthread_t th;
    long posts;
    int64_t last_us;
    pthread_mutex_t mu;
    volatile int stop;
} nb_hook;

/* Reads one request (headers, then Content-Length bytes), answers 200. */
static void hook_serve(nb_hook *h, int c) {
    static char buf[65536];
    size_t n = 0;
    long want = -1;
    size_t hdr_end = 0;
    for (;;) {
        ssize_t r = read(c, buf + n, sizeof(buf) - 1 - n);
        if (r <= 0)
            return;
        n += (size_t)r;
        buf[n] = '\0';
        char *e = hdr_end ? NULL : strstr(buf, "\r\n\r\n");
        if (e) {
            hdr_end = (size_t)(e - buf) + 4;
            char *cl = strcasestr(buf, "Content-Length:");
            want = cl ? strtol(cl + 15, NULL, 10) : 0;
        }
        if (hdr_end && (long)(n - hdr_end) >= want)
            break;
        if (n == sizeof(buf) - 1)
            return;
    }
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    if (write(c, ok, sizeof(ok) - 1) < 0)
        return;
    pthread_mutex_lock(&h->mu);
    h->posts++;
    h->last_us = bench_mono_us();
    pthread_mutex_unlock(&h->mu);
}

static void *hook_main(void *arg) {
    nb_hook *h = arg;
    while (!h->stop) {
        int c = accept(h->fd, NULL, NULL);
        if (c < 0)
            continue;
        hook_serve(h, c);
        close(c);
    }
    return NULL;
}

static int hook_start(nb_hook *h) {
    memset(h, 0, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    h->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (h->fd < 0 || bind(h->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(h->fd, 128) < 0 || getsockname(h->fd, (struct sockaddr *)&a, &al) < 0)
        return -1;
    h->port = ntohs(a.sin_port);
    return pthread_create(&h->th, NULL, hook_main, h) == 0 ? 0 : -1;
}

static void hook_stop(nb_hook *h) {
    h->stop = 1;
    shutdown(h->fd, SHUT_RDWR);
    close(h->fd);
    pthread_join(h->th, NULL);
    pthread_mutex_destroy(&h->mu);
}

/* ---- configurations ---- */

static int nb_configure(bench *b, CURL *h, const char *bucket, const char *arn) {
    char url[512], body[700], err[256];
    snprintf(url, sizeof(url), "%s/v1/buckets/%s/notifications", b->url, bucket);
    snprintf(body, sizeof(body),
             "{\"configurations\":[{\"id\":\"bench\",\"arn\":\"%s\",\"events\":"
             "[\"s3:ObjectCreated:*\"]}]}", arn);
    cli_resp r;
    if (cli_http(h, "PUT", url, body, NULL, &r, err, sizeof(err)) < 0 || r.status != 200) {
        fprintf(stderr, "objlog: bench: set notifications: %s\n", r.body ? r.body : err);
        cli_resp_free(&r);
        return -1;
    }
    cli_resp_free(&r);
    return 0;
}

/* warm(arg) runs after the bucket is set up and before the clock starts
 * (a consumer that must already read the topic). */
static double nb_put_phase(bench *b, CURL *h, const char *bucket, const char *arn,
                           int (*warm)(bench *, const char *, void *), void *arg,
                           int64_t *t0) {
    if (bench_create_bucket_named(b, h, bucket) < 0 || (arn && nb_configure(b, h, bucket, arn) < 0))
        return -1;
    snprintf(b->bucket, sizeof(b->bucket), "%.63s", bucket);
    if (warm && warm(b, bucket, arg) < 0)
        return -1;
    *t0 = bench_mono_us();
    bench_run_threads(b, bench_produce_main);
    if (bench_settle(b, h) < 0)
        return -1;
    return bench_rate(b->count, (double)(bench_mono_us() - *t0) / 1e6);
}

/* ---- the read_committed consumer ---- */

typedef struct nb_consumer {
    rd_kafka_t *rk;
} nb_consumer;

static int consumer_open(bench *b, nb_consumer *c, const char *topic) {
    char err[256], group[64];
    snprintf(group, sizeof(group), "bench-notify-%d", (int)getpid());
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", b->brokers, err, sizeof(err)) ||
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err)) ||
        rd_kafka_conf_set(conf, "isolation.level", "read_committed", err, sizeof(err)) ||
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, sizeof(err)) ||
        rd_kafka_conf_set(conf, "fetch.wait.max.ms", "5", err, sizeof(err)) ||
        rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err))) {
        rd_kafka_conf_destroy(conf);
        fprintf(stderr, "objlog: bench: consumer: %s\n", err);
        return -1;
    }
    if (!(c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err)))) {
        fprintf(stderr, "objlog: bench: consumer: %s\n", err);
        return -1;
    }
    rd_kafka_poll_set_consumer(c->rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(c->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    return 0;
}

static void consumer_close(nb_consumer *c) {
    if (!c->rk)
        return;
    rd_kafka_consumer_close(c->rk);
    rd_kafka_destroy(c->rk);
    c->rk = NULL;
}

/* The write number a record of round `round` carries in its
 * x-amz-request-id (nb_rid: B0B0, 8 hex digits of the number, 4 of the
 * pid, 2 of the round), -1 none. */
static long record_write(const rd_kafka_message_t *m, int round) {
    json_t *j = json_loadb(m->payload, m->len, 0, NULL);
    json_t *r = json_array_get(json_object_get(j, "Records"), 0);
    const char *rid = json_string_value(
        json_object_get(json_object_get(r, "responseElements"), "x-amz-request-id"));
    long n = -1;
    if (rid && strlen(rid) >= 18 && strncmp(rid, "B0B0", 4) == 0) {
        char num[9], rd[3];
        memcpy(num, rid + 4, 8);
        num[8] = '\0';
        memcpy(rd, rid + 16, 2);
        rd[2] = '\0';
        if (strtol(rd, NULL, 16) == round)
            n = strtol(num, NULL, 16);
    }
    json_decref(j);
    return n;
}

static int64_t consume_until(nb_consumer *c, long want, int64_t timeout_us);

/* One PUT of key "warm-up" into bucket and its record read back: the
 * topic exists, the consumer has its partitions, the notifier its
 * producer, before any clock starts. */
static int nb_warm_consumer(bench *b, const char *bucket, void *arg) {
    nb_consumer *c = arg;
    objlog_object_meta m = {.size = 1, .etag = "w"};
    objlog_write_result r;
    char err[256];
    if (objlog_producer_put_object_sync(b->p, bucket, "warm-up", 7, &m, NULL, &r, err,
                                        sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench: warm-up write: %s\n", err);
        return -1;
    }
    return consume_until(c, 1, 120 * 1000000LL) < 0 ? -1 : 0;
}

/* The same for a webhook: its first POST. */
static int nb_warm_hook(bench *b, const char *bucket, void *arg) {
    nb_hook *hk = arg;
    objlog_object_meta m = {.size = 1, .etag = "w"};
    objlog_write_result r;
    char err[256];
    if (objlog_producer_put_object_sync(b->p, bucket, "warm-up", 7, &m, NULL, &r, err,
                                        sizeof(err)) < 0)
        return -1;
    for (int i = 0; i < 6000; i++) {
        pthread_mutex_lock(&hk->mu);
        long n = hk->posts;
        pthread_mutex_unlock(&hk->mu);
        if (n >= 1) {
            pthread_mutex_lock(&hk->mu);
            hk->posts = 0;
            pthread_mutex_unlock(&hk->mu);
            return 0;
        }
        usleep(20000);
    }
    return -1;
}

/* Polls until `want` records arrived (or timeout_us): the time of the last. */
static int64_t consume_until(nb_consumer *c, long want, int64_t timeout_us) {
    long got = 0;
    int64_t last = -1, until = bench_mono_us() + timeout_us;
    while (got < want && bench_mono_us() < until && !bench_interrupted) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, 100);
        if (!m)
            continue;
        if (!m->err) {
            got++;
            last = bench_mono_us();
        }
        rd_kafka_message_destroy(m);
    }
    if (got < want)
        fprintf(stderr, "objlog: bench: %ld of %ld records arrived\n", got, want);
    return got < want ? -1 : last;
}

/* ---- latency at a paced rate ---- */

typedef struct nb_lat {
    bench *b;
    int64_t *ack_us;       /* per write; 0 not acknowledged yet */
    long n;
    pthread_mutex_t mu;
    long failed;
} nb_lat;

typedef struct nb_op {
    nb_lat *l;
    long i;
} nb_op;

static void nb_rid(uint8_t rid[OBJLOG_REQUEST_ID_LEN], long i, int round) {
    memset(rid, 0, OBJLOG_REQUEST_ID_LEN);
    rid[0] = rid[1] = 0xB0;
    rid[2] = (uint8_t)(i >> 24);
    rid[3] = (uint8_t)(i >> 16);
    rid[4] = (uint8_t)(i >> 8);
    rid[5] = (uint8_t)i;
    rid[6] = (uint8_t)getpid();
    rid[7] = (uint8_t)(getpid() >> 8);
    rid[8] = (uint8_t)round;
}

static void lat_cb(const objlog_write_result *r, void *opaque) {
    nb_op *op = opaque;
    nb_lat *l = op->l;
    pthread_mutex_lock(&l->mu);
    if (r->status == OBJLOG_STATUS_OK)
        l->ack_us[op->i] = bench_mono_us();
    else
        l->failed++;
    pthread_mutex_unlock(&l->mu);
    free(op);
}

typedef struct nb_round {
    double achieved, p50, p99;
    long early, records;
} nb_round;

static int nb_latency_round(bench *b, CURL *h, nb_consumer *c, int rate, int round,
                            const char *bucket, nb_round *out) {
    long n = (long)rate * b->cond.seconds;
    nb_lat l = {.b = b, .n = n};
    pthread_mutex_init(&l.mu, NULL);
    l.ack_us = calloc((size_t)n, sizeof(*l.ack_us));
    int64_t *seen_us = calloc((size_t)n, sizeof(*seen_us));
    double *d = calloc((size_t)n, sizeof(*d));
    if (!l.ack_us || !seen_us || !d)
        return -1;
    int64_t t0 = bench_mono_us();
    long got = 0;
    for (long i = 0; i < n && !bench_interrupted; i++) {
        int64_t due = t0 + (int64_t)((double)i * 1e6 / rate);
        while (bench_mono_us() < due) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, 0);
            if (!m) {
                usleep(50);
                continue;
            }
            long w = m->err ? -1 : record_write(m, round);
            if (w >= 0 && w < n && !seen_us[w]) {
                seen_us[w] = bench_mono_us();
                got++;
            }
            rd_kafka_message_destroy(m);
        }
        char key[32], err[256];
        uint8_t rid[OBJLOG_REQUEST_ID_LEN];
        nb_rid(rid, i, round);
        snprintf(key, sizeof(key), "r%d-%06ld", round, i);
        objlog_object_meta m = {.size = 1, .etag = "e"};
        objlog_write_opts o = {.request_id = rid};
        nb_op *op = malloc(sizeof(*op));
        *op = (nb_op){&l, i};
        if (objlog_producer_put_object(b->p, bucket, key, strlen(key), &m, &o, lat_cb, op, err,
                                       sizeof(err)) < 0) {
            free(op);
            l.failed++;
        }
    }
    double secs = (double)(bench_mono_us() - t0) / 1e6;
    int64_t until = bench_mono_us() + 60 * 1000000LL;
    while (got < n - l.failed && bench_mono_us() < until && !bench_interrupted) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, 100);
        if (!m)
            continue;
        long w = m->err ? -1 : record_write(m, round);
        if (w >= 0 && w < n && !seen_us[w]) {
            seen_us[w] = bench_mono_us();
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    objlog_producer_flush(b->p, 30000);
    (void)h;
    long k = 0;
    out->early = 0;
    pthread_mutex_lock(&l.mu);
    for (long i = 0; i < n; i++) {
        if (!seen_us[i] || !l.ack_us[i])
            continue;
        int64_t dd = seen_us[i] - l.ack_us[i];
        if (dd < 0)
            out->early++;
        d[k++] = dd < 0 ? 0 : (double)dd / 1000.0;
    }
    pthread_mutex_unlock(&l.mu);
    qsort(d, (size_t)k, sizeof(*d), bench_cmp_double);
    out->achieved = (double)n / secs;
    out->records = k;
    out->p50 = bench_percentile(d, k, 0.50);
    out->p99 = bench_percentile(d, k, 0.99);
    free(d);
    free(seen_us);
    free(l.ack_us);
    pthread_mutex_destroy(&l.mu);
    return k > 0 ? 0 : -1;
}

static int nb_applied_producer(bench *b, objlog_producer **out) {
    char err[512];
    objlog_producer_conf *conf = objlog_producer_conf_new();
    if (!conf ||
        objlog_producer_conf_set(conf, "bootstrap.servers", b->brokers, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "query.url", b->url, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "ack", "applied", err, sizeof(err))) {
        fprintf(stderr, "objlog: bench: producer config: %s\n", conf ? err : "oom");
        objlog_producer_conf_destroy(conf);
        return -1;
    }
    *out = objlog_producer_new(conf, err, sizeof(err));
    if (!*out)
        fprintf(stderr, "objlog: bench: producer: %s\n", err);
    return *out ? 0 : -1;
}

int bench_notify_run(bench *b) {
    CURL *h = curl_easy_init();
    char base[64], name[96], topic[64], arn[200];
    int rc = CLI_EXIT_FAIL;
    nb_consumer c = {0}, lc = {0};
    nb_hook hook;
    int hook_on = 0;
    nb_round rounds[BENCH_COND_MAX_RATES];
    snprintf(base, sizeof(base), "bench-nt-%d", (int)getpid());
    snprintf(topic, sizeof(topic), NB_TOPIC_FMT, (int)getpid());
    if (!h || bench_producer_open(b) < 0)
        goto out;
    int64_t t0;
    snprintf(name, sizeof(name), "%s-plain", base);
    double r0 = nb_put_phase(b, h, name, NULL, NULL, NULL, &t0);
    snprintf(name, sizeof(name), "%s-kafka", base);
    snprintf(arn, sizeof(arn), "arn:objlog:kafka:::%s", topic);
    if (r0 < 0 || consumer_open(b, &c, topic) < 0)
        goto out;
    double r1 = nb_put_phase(b, h, name, arn, nb_warm_consumer, &c, &t0);
    if (r1 < 0)
        goto out;
    int64_t last = consume_until(&c, b->count, 300 * 1000000LL);
    if (last < 0)
        goto out;
    double kafka_rate = bench_rate(b->count, (double)(last - t0) / 1e6);
    consumer_close(&c);
    if (hook_start(&hook) < 0) {
        fprintf(stderr, "objlog: bench: cannot listen for the webhook\n");
        goto out;
    }
    hook_on = 1;
    snprintf(name, sizeof(name), "%s-hook", base);
    snprintf(arn, sizeof(arn), "arn:objlog:webhook:::http%%3A%%2F%%2F127.0.0.1%%3A%d%%2Fh",
             hook.port);
    if (nb_put_phase(b, h, name, arn, nb_warm_hook, &hook, &t0) < 0)
        goto out;
    int64_t until = bench_mono_us() + 300 * 1000000LL;
    long posts = 0;
    int64_t hook_last = 0;
    while (bench_mono_us() < until && !bench_interrupted) {
        pthread_mutex_lock(&hook.mu);
        posts = hook.posts;
        hook_last = hook.last_us;
        pthread_mutex_unlock(&hook.mu);
        if (posts >= b->count)
            break;
        usleep(20000);
    }
    if (posts < b->count) {
        fprintf(stderr, "objlog: bench: %ld of %d webhook records arrived\n", posts, b->count);
        goto out;
    }
    double hook_rate = bench_rate(b->count, (double)(hook_last - t0) / 1e6);
    /* paced writes, acknowledged when applied */
    objlog_producer *applied = NULL;
    snprintf(name, sizeof(name), "%s-lat", base);
    snprintf(arn, sizeof(arn), "arn:objlog:kafka:::%s-lat", topic);
    if (bench_create_bucket_named(b, h, name) < 0 || nb_configure(b, h, name, arn) < 0 ||
        nb_applied_producer(b, &applied) < 0)
        goto out;
    objlog_producer *keep = b->p;
    b->p = applied;
    char lat_topic[96];
    snprintf(lat_topic, sizeof(lat_topic), "%s-lat", topic);
    int ok = consumer_open(b, &lc, lat_topic) == 0 && nb_warm_consumer(b, name, &lc) == 0;
    for (int i = 0; ok && i < b->cond.n_rates; i++)
        ok = nb_latency_round(b, h, &lc, b->cond.rates[i], i, name, &rounds[i]) == 0;
    consumer_close(&lc);
    b->p = keep;
    objlog_producer_destroy(applied);
    if (!ok)
        goto out;
    if (b->json) {
        printf("{\"count\":%d,\"threads\":%d,\"puts_per_s\":%.1f,\"puts_per_s_with_config\":"
               "%.1f,\"ratio\":%.3f,\"kafka_records_per_s\":%.1f,\"webhook_records_per_s\":"
               "%.1f,\"latency\":[", b->count, b->threads, r0, r1, r1 / r0, kafka_rate,
               hook_rate);
        for (int i = 0; i < b->cond.n_rates; i++)
            printf("%s{\"rate\":%d,\"achieved\":%.1f,\"records\":%ld,\"p50_ms\":%.2f,"
                   "\"p99_ms\":%.2f,\"before_ack\":%ld}", i ? "," : "", b->cond.rates[i],
                   rounds[i].achieved, rounds[i].records, rounds[i].p50, rounds[i].p99,
                   rounds[i].early);
        printf("]}\n");
    } else {
        printf("notify: %d PUTs a phase, %d producer threads, %s\n"
               "  PUT rate, no configuration:        %10.1f puts/s\n"
               "  PUT rate, one Kafka configuration: %10.1f puts/s (ratio %.3f)\n"
               "  records delivered to Kafka:        %10.1f /s (first PUT to last record)\n"
               "  records delivered to a webhook:    %10.1f /s (first PUT to last POST)\n",
               b->count, b->threads, b->url, r0, r1, r1 / r0, kafka_rate, hook_rate);
        for (int i = 0; i < b->cond.n_rates; i++)
            printf("  at %5d writes/s (%.0f achieved): acknowledged -> visible p50 %.2f ms, "
                   "p99 %.2f ms (%ld records, %ld before their ack)\n",
                   b->cond.rates[i], rounds[i].achieved, rounds[i].p50, rounds[i].p99,
                   rounds[i].records, rounds[i].early);
    }
    rc = CLI_EXIT_OK;
out:
    consumer_close(&c);
    if (hook_on)
        hook_stop(&hook);
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
