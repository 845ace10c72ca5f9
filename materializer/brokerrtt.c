/* brokerrtt.c: the round-trip times of the brokers the consumer talks to,
 * from librdkafka's statistics (JSON, every MAT_STATS_MS), for /metrics.
 * Invariant: only real broker connections count, each broker once: the
 * group coordinator repeats a broker's id and bootstrap entries have none,
 * so neither may hide or double a broker's figure. */
#include "brokerrtt.h"

#include "matint.h"

#include <string.h>

#include <jansson.h>

int brokerrtt_stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
    (void)rk;
    objlog_materializer *m = opaque;
    json_t *root = json_loadb(json, len, 0, NULL);
    json_t *brokers = json_object_get(root, "brokers");
    objlog_broker_rtt rtt[OBJLOG_MAX_BROKER_RTTS];
    int n = 0;
    const char *name;
    json_t *b;
    json_object_foreach(brokers, name, b) {
        json_t *id = json_object_get(b, "nodeid"), *r = json_object_get(b, "rtt");
        const char *src = json_string_value(json_object_get(b, "source"));
        /* Real connections only: the group coordinator ("logical") repeats
         * a broker's id, bootstrap entries have none. */
        if (n >= OBJLOG_MAX_BROKER_RTTS || !json_is_integer(id) ||
            json_integer_value(id) < 0 || !json_is_object(r) || !src ||
            (strcmp(src, "learned") != 0 && strcmp(src, "configured") != 0))
            continue;
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= rtt[i].broker == (int32_t)json_integer_value(id);
        if (dup)
            continue;
        rtt[n].broker = (int32_t)json_integer_value(id);
        rtt[n].avg_us = json_integer_value(json_object_get(r, "avg"));
        rtt[n].p99_us = json_integer_value(json_object_get(r, "p99"));
        n++;
    }
    json_decref(root);
    pthread_mutex_lock(&m->mu);
    memcpy(m->rtt, rtt, sizeof(rtt[0]) * (size_t)n);
    m->nrtt = n;
    pthread_mutex_unlock(&m->mu);
    return 0; /* librdkafka frees json */
}

int objlog_materializer_broker_rtts(objlog_materializer *m, objlog_broker_rtt *out, int max) {
    pthread_mutex_lock(&m->mu);
    int n = m->nrtt < max ? m->nrtt : max;
    memcpy(out, m->rtt, sizeof(out[0]) * (size_t)n);
    pthread_mutex_unlock(&m->mu);
    return n;
}
