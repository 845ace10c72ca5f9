/* matkafka.c: the materializer's Kafka clients (matkafka.h): the
 * consumers' configuration (the group's, the standby's), the DLQ producer
 * and the send of an undecodable message to the DLQ, acked before the
 * batch that records it is written. Their lines and librdkafka's go to
 * the materializer's log as component "kafka".
 *
 * Invariant: a DLQ send returns 0 only once the broker acked that very
 * attempt (attempts are numbered under dlq_mu; a late report of an
 * abandoned one cannot count), so an undecodable message is never lost. */
#include "matkafka.h"

#include "assign.h"
#include "brokerrtt.h"
#include "kafkaconf.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* librdkafka statistics interval (broker RTTs for /metrics). */
#define MAT_STATS_MS "5000"
#define MAT_DLQ_TIMEOUT_MS 10000

static int conf_set(rd_kafka_conf_t *c, const char *k, const char *v,
                    char *errstr, size_t es) {
    char tmp[512];
    if (rd_kafka_conf_set(c, k, v, tmp, sizeof(tmp)) == RD_KAFKA_CONF_OK)
        return 0;
    snprintf(errstr, es, "kafka config %s: %s", k, tmp);
    return -1;
}

/* Group membership of a cluster node: cooperative-sticky moves only the
 * partitions that must move; a dead node's are reassigned within the
 * session timeout (6 s, the brokers' minimum by default); client.id carries
 * the node's URL for its peers (query/cluster/cluster.c). */
static int mat_cluster_conf(rd_kafka_conf_t *c, const objlog_materializer_conf *conf,
                            char *errstr, size_t es) {
    if (conf_set(c, "partition.assignment.strategy", "cooperative-sticky", errstr, es) ||
        conf_set(c, "session.timeout.ms", "6000", errstr, es) ||
        conf_set(c, "heartbeat.interval.ms", "1000", errstr, es) ||
        (conf->client_id && conf_set(c, "client.id", conf->client_id, errstr, es)))
        return -1;
    rd_kafka_conf_set_rebalance_cb(c, assign_rebalance_cb);
    return 0;
}

/* librdkafka's lines of the handles made here go where the materializer's
 * go (conf log_cb), named as objlogd has always named them. */
static void mat_kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    objlog_materializer *m = rk ? rd_kafka_opaque(rk) : NULL;
    matlog_printf(m ? &m->log : NULL, objlog_kafka_log_level(level, buf), "kafka",
                  "%s: %s: %s", rk ? rd_kafka_name(rk) : "-", fac, buf);
}

/* A handle of m made from c (taken: freed on failure), with its lines
 * through mat_kafka_log and m as its callbacks' opaque. NULL with errstr
 * "<what>: why". */
static rd_kafka_t *mat_kafka_new(objlog_materializer *m, rd_kafka_type_t type,
                                 rd_kafka_conf_t *c, const char *what, char *errstr,
                                 size_t es) {
    rd_kafka_conf_set_log_cb(c, mat_kafka_log);
    rd_kafka_conf_set_opaque(c, m);
    char tmp[512];
    rd_kafka_t *rk = rd_kafka_new(type, c, tmp, sizeof(tmp));
    if (!rk) {
        snprintf(errstr, es, "%s: %s", what, tmp);
        rd_kafka_conf_destroy(c);
    }
    return rk;
}

/* A Kafka conf for brokers with the n settings kv (key, value). NULL with
 * errstr naming the refused key. */
static rd_kafka_conf_t *mat_kafka_conf(const char *brokers, const char *const kv[][2],
                                       size_t n, char *errstr, size_t es) {
    rd_kafka_conf_t *c = objlog_kafka_conf_new(brokers, errstr, es);
    for (size_t i = 0; c && i < n; i++)
        if (conf_set(c, kv[i][0], kv[i][1], errstr, es) < 0) {
            rd_kafka_conf_destroy(c);
            c = NULL;
        }
    return c;
}

rd_kafka_t *mat_consumer_new(objlog_materializer *m, const objlog_materializer_conf *conf,
                             char *errstr, size_t es) {
    const char *group = conf->group_id && conf->group_id[0]
                            ? conf->group_id : "objlog-materializer";
    /* Waiters block on the next batch: the fetch wait bounds idle apply
     * latency where the broker does not answer early (objlogd.c). */
    char fetch_wait[16];
    snprintf(fetch_wait, sizeof(fetch_wait), "%d",
             conf->fetch_wait_max_ms > 0 ? conf->fetch_wait_max_ms : 100);
    const char *const kv[][2] = {
        {"group.id", group},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"auto.offset.reset", "error"},
        {"enable.partition.eof", "false"},
        {"fetch.wait.max.ms", fetch_wait},
        /* A fetch request must go out the moment apply wants more. */
        {"socket.nagle.disable", "true"},
        /* librdkafka's backoff grows to 10 s over an outage; applying
         * should resume within a second of the brokers' return. */
        {"reconnect.backoff.max.ms", "1000"},
        {"statistics.interval.ms", MAT_STATS_MS},
        /* librdkafka prefetches up to 64 MB while the view trails the log;
         * 16 MB keeps ~50,000 events ahead of apply (batches are 1,000,
         * 8,000 while a backlog is applied, catchup.h)
         * and bounds the view's memory. */
        {"queued.max.messages.kbytes", "16384"},
    };
    rd_kafka_conf_t *c = mat_kafka_conf(conf->brokers, kv, sizeof(kv) / sizeof(kv[0]), errstr, es);
    if (c && conf->cluster && mat_cluster_conf(c, conf, errstr, es) < 0) {
        rd_kafka_conf_destroy(c);
        c = NULL;
    }
    if (!c)
        return NULL;
    rd_kafka_conf_set_stats_cb(c, brokerrtt_stats_cb);
    rd_kafka_t *rk = mat_kafka_new(m, RD_KAFKA_CONSUMER, c, "kafka consumer", errstr, es);
    if (rk)
        rd_kafka_poll_set_consumer(rk);
    return rk;
}

/* Delivery report: a DLQ message counts only once the broker acked it.
 * Messages carry their attempt number, so a late report of an abandoned
 * attempt cannot be mistaken for the current one. */
static void mat_dlq_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    objlog_materializer *mat = opaque;
    if (!m->err)
        atomic_store(&mat->dlq_acked, (uint64_t)(uintptr_t)m->_private);
}

rd_kafka_t *mat_dlq_new(objlog_materializer *m, const objlog_materializer_conf *conf,
                        char *errstr, size_t es) {
    static const char *const kv[][2] = {
        {"acks", "all"}, {"enable.idempotence", "true"}, {"linger.ms", "0"}};
    rd_kafka_conf_t *c = mat_kafka_conf(conf->brokers, kv, sizeof(kv) / sizeof(kv[0]), errstr, es);
    if (!c)
        return NULL;
    rd_kafka_conf_set_dr_msg_cb(c, mat_dlq_dr);
    return mat_kafka_new(m, RD_KAFKA_PRODUCER, c, "kafka DLQ producer", errstr, es);
}

/* ---- the DLQ ---- */

static void hdr_add_i64(rd_kafka_headers_t *h, const char *name, int64_t v) {
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%" PRId64, v);
    rd_kafka_header_add(h, name, -1, buf, n);
}

/* Sends msg to the DLQ and waits for the ack; retries while running.
 * 0 acked, -1 shutting down before it was acked. m->dlq_mu held. */
static int mat_dlq_send_locked(objlog_materializer *m, const rd_kafka_message_t *msg,
                               const char *why) {
    while (atomic_load(&m->running)) {
        uint64_t attempt = ++m->dlq_attempt;
        rd_kafka_headers_t *h = rd_kafka_headers_new(3);
        hdr_add_i64(h, "objlog.partition", msg->partition);
        hdr_add_i64(h, "objlog.offset", msg->offset);
        rd_kafka_header_add(h, "objlog.error", -1, why, -1);
        rd_kafka_resp_err_t err = rd_kafka_producev(
            m->dlq, RD_KAFKA_V_TOPIC(m->dlq_topic),
            RD_KAFKA_V_KEY(msg->key, msg->key_len),
            RD_KAFKA_V_VALUE(msg->payload, msg->len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
            RD_KAFKA_V_OPAQUE((void *)(uintptr_t)attempt), RD_KAFKA_V_END);
        if (err) {
            rd_kafka_headers_destroy(h); /* not taken over on failure */
        } else {
            rd_kafka_flush(m->dlq, MAT_DLQ_TIMEOUT_MS);
            if (atomic_load(&m->dlq_acked) == attempt)
                return 0;
            err = RD_KAFKA_RESP_ERR__MSG_TIMED_OUT;
        }
        matlog_printf(&m->log, MATLOG_WARNING, "materializer", "DLQ %s: %s; retrying", m->dlq_topic,
                      rd_kafka_err2str(err));
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* Lanes send one message at a time: the attempt numbers and their acks
 * (mat_dlq_dr) belong to one flush. */
int mat_dlq_send(objlog_materializer *m, const rd_kafka_message_t *msg, const char *why) {
    pthread_mutex_lock(&m->dlq_mu);
    int rc = mat_dlq_send_locked(m, msg, why);
    pthread_mutex_unlock(&m->dlq_mu);
    return rc;
}
