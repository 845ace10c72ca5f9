/* linload.c: the load of linload.h. Histories are kept per key under the
 * key's mutex; each thread owns its HTTP clients. */
#include "linload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "httpc.h"

int64_t linload_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void linload_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int linload_clients(const linload *L, httpc **hs) {
    for (int i = 0; i < L->nurls; i++)
        hs[i] = httpc_new(L->urls[i]);
    return L->nurls;
}

static void linload_free_clients(httpc **hs, int n) {
    for (int i = 0; i < n; i++)
        httpc_destroy(hs[i]);
}

/* PUTs of fresh etags: 200 is a completed write, anything else one that
 * may or may not take effect. */
static void *linload_writer(void *arg) {
    linload *L = arg;
    httpc *hs[LINLOAD_MAX_NODES];
    int n = linload_clients(L, hs);
    for (long i = 0; !atomic_load(&L->stop); i++) {
        long s = atomic_fetch_add(&L->seq, 1);
        int k = (int)(s % LINLOAD_HOT);
        char path[128], body[96], etag[40];
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/hot%d", L->bucket, k);
        snprintf(etag, sizeof(etag), "%032lx", 0xe000000L + s);
        snprintf(body, sizeof(body), "{\"size\":1,\"etag\":\"%s\"}", etag);
        httpc_resp r;
        int64_t inv = linload_now_ns();
        atomic_fetch_add(&L->writes_sent, 1);
        int ok = httpc_do(hs[i % n], "PUT", path, body, NULL, &r) == 0 && r.status == 200;
        int64_t resp = linload_now_ns();
        hist_add(&L->h[k], LIN_WRITE, inv, ok ? resp : T_UNKNOWN, etag);
        if (ok)
            atomic_fetch_add(&L->writes_done, 1);
        if (ok && L->kill_ns && inv > L->kill_ns) {
            long long zero = 0;
            atomic_fetch_add(&L->done_after_kill, 1);
            atomic_compare_exchange_strong(&L->first_write_after_kill_ns, &zero, resp);
        }
        linload_sleep_ms(3); /* a steady load that leaves the brokers their share of 2 cores */
    }
    linload_free_clients(hs, n);
    return NULL;
}

/* Strong GETs: 200 reads the etag, 404 reads "absent"; an unanswered read
 * constrains nothing (but counts against availability). */
static void *linload_reader(void *arg) {
    linload *L = arg;
    httpc *hs[LINLOAD_MAX_NODES];
    int n = linload_clients(L, hs);
    for (long i = 0; !atomic_load(&L->stop); i++) {
        int k = (int)(i % LINLOAD_HOT);
        char path[160];
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/hot%d?consistency=strong",
                 L->bucket, k);
        httpc_resp r;
        int64_t inv = linload_now_ns();
        atomic_fetch_add(&L->reads_sent, 1);
        int rc = httpc_do(hs[i % n], "GET", path, NULL, NULL, &r);
        int64_t resp = linload_now_ns();
        linload_sleep_ms(2);
        if (rc < 0)
            continue;
        if (r.status == 404) {
            hist_add(&L->h[k], LIN_READ, inv, resp, "");
        } else if (r.status == 200) {
            json_t *j = json_loads(r.body, 0, NULL);
            const char *e = json_string_value(json_object_get(j, "etag"));
            hist_add(&L->h[k], LIN_READ, inv, resp, e ? e : "?");
            json_decref(j);
        }
        if (r.status == 404 || r.status == 200)
            atomic_fetch_add(&L->reads_answered, 1);
    }
    linload_free_clients(hs, n);
    return NULL;
}

int linload_start(linload *L, const char *const *urls, int n, const char *bucket) {
    memset(L, 0, sizeof(*L));
    if (n < 1 || n > LINLOAD_MAX_NODES)
        return -1;
    for (int i = 0; i < n; i++)
        snprintf(L->urls[i], sizeof(L->urls[i]), "%s", urls[i]);
    L->nurls = n;
    snprintf(L->bucket, sizeof(L->bucket), "%s", bucket);
    for (int k = 0; k < LINLOAD_HOT; k++)
        pthread_mutex_init(&L->h[k].mu, NULL);
    for (int i = 0; i < 4; i++)
        if (pthread_create(&L->t[i], NULL, i < 2 ? linload_writer : linload_reader, L) != 0)
            return -1;
    return 0;
}

int linload_finish(linload *L, char *msg, size_t n) {
    atomic_store(&L->stop, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(L->t[i], NULL);
    size_t ops = 0, reads = 0, unknown = 0;
    int ok = 1;
    msg[0] = '\0';
    for (int k = 0; k < LINLOAD_HOT; k++) {
        lin_hist *h = &L->h[k];
        for (size_t i = 0; i < h->n; i++) {
            reads += h->ops[i].kind == LIN_READ;
            unknown += h->ops[i].kind == LIN_WRITE && h->ops[i].response == T_UNKNOWN;
        }
        ops += h->n;
        int rc = ok ? lin_check(h->ops, h->n) : 1;
        if (rc != 1) {
            snprintf(msg, n, "hot%d: history of %zu ops is %s (%d stale reads beyond doubt)",
                     k, h->n, rc == 0 ? "NOT linearizable" : "too big to check",
                     lin_stale_reads(h->ops, h->n));
            ok = 0;
        }
        free(h->ops);
        h->ops = NULL;
        pthread_mutex_destroy(&h->mu);
    }
    if (ok)
        snprintf(msg, n, "%d keys, %zu ops (%zu strong reads, %zu writes of unknown outcome), "
                 "%ld writes completed after the kill", LINLOAD_HOT, ops, reads, unknown,
                 atomic_load(&L->done_after_kill));
    return ok;
}
