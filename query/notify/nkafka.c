/* nkafka.c: exactly-once delivery of one events partition's feed records
 * to Kafka (nkafka.h). The invariant: a record reaches a read_committed
 * consumer in the same transaction that moves the partition's position
 * past it, so after any crash, fencing or partition move the next
 * producer starts from the committed position and neither skips nor
 * repeats a record. The transactional id is per events partition, so the
 * node that takes a partition over fences the one that had it. */
#include "nkafka.h"

#include "kafkaconf.h"
#include "objlog_logger.h"
#include "topics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nk_env_open(nk_env *e, const char *brokers, const char *topic, char *errstr, size_t es) {
    memset(e, 0, sizeof(*e));
    e->brokers = brokers;
    e->topic = topic;
    e->timeout_ms = 30000;
    e->mock = -1;
    pthread_mutex_init(&e->mu, NULL);
    snprintf(e->group, sizeof(e->group), "objlog.notify.%s", topic);
    rd_kafka_conf_t *c = objlog_kafka_conf_new(brokers, errstr, es);
    if (!c)
        return -1;
    char tmp[256];
    if (rd_kafka_conf_set(c, "group.id", e->group, tmp, sizeof(tmp)) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(c, "isolation.level", "read_committed", tmp, sizeof(tmp)) !=
            RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(c, "enable.auto.commit", "false", tmp, sizeof(tmp)) !=
            RD_KAFKA_CONF_OK) {
        snprintf(errstr, es, "notifier: %s", tmp);
        rd_kafka_conf_destroy(c);
        return -1;
    }
    rd_kafka_conf_set_log_cb(c, objlog_logger_rdkafka);
    if (!(e->admin = rd_kafka_new(RD_KAFKA_CONSUMER, c, tmp, sizeof(tmp)))) {
        snprintf(errstr, es, "notifier: %s", tmp);
        return -1;
    }
    return 0;
}

void nk_env_close(nk_env *e) {
    if (e->admin)
        rd_kafka_destroy(e->admin);
    e->admin = NULL;
    pthread_mutex_destroy(&e->mu);
}

static int nk_is_mock(nk_env *e);

/* Whether the cluster is librdkafka's mock, asked once. */
static int nk_mock(nk_env *e) {
    pthread_mutex_lock(&e->mu);
    if (e->mock < 0)
        e->mock = nk_is_mock(e);
    int m = e->mock;
    pthread_mutex_unlock(&e->mu);
    return m;
}

static void nk_fail(nk_part *pt, const char *what, const char *why) {
    snprintf(pt->error, sizeof(pt->error), "%.60s: %.180s", what, why);
}

/* The position the group committed for the partition (0: none yet). */
static int nk_read_pos(nk_env *e, nk_part *pt) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, e->topic, pt->p);
    rd_kafka_resp_err_t err = rd_kafka_committed(e->admin, l, e->timeout_ms);
    if (!err)
        err = l->elems[0].err;
    int64_t off = l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        nk_fail(pt, "read the committed position", rd_kafka_err2str(err));
        return -1;
    }
    pt->pos = off < 0 ? 0 : off;
    return 0;
}

int nk_open(nk_env *e, nk_part *pt) {
    char tmp[256], tid[400];
    nk_mock(e);
    rd_kafka_conf_t *c = objlog_kafka_conf_new(e->brokers, tmp, sizeof(tmp));
    if (!c) {
        nk_fail(pt, "producer", tmp);
        return -1;
    }
    snprintf(tid, sizeof(tid), "%s.%d", e->group, pt->p);
    if (rd_kafka_conf_set(c, "transactional.id", tid, tmp, sizeof(tmp)) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(c, "linger.ms", "1", tmp, sizeof(tmp)) != RD_KAFKA_CONF_OK ||
        /* the coordinator answers CONCURRENT_TRANSACTIONS to the next
         * AddOffsetsToTxn until the last commit's markers are written:
         * retried after 100 ms by default, which made most of the delay */
        rd_kafka_conf_set(c, "retry.backoff.ms", "5", tmp, sizeof(tmp)) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(c);
        nk_fail(pt, "producer", tmp);
        return -1;
    }
    rd_kafka_conf_set_log_cb(c, objlog_logger_rdkafka);
    if (!(pt->tx = rd_kafka_new(RD_KAFKA_PRODUCER, c, tmp, sizeof(tmp)))) {
        nk_fail(pt, "producer", tmp);
        return -1;
    }
    rd_kafka_error_t *err = rd_kafka_init_transactions(pt->tx, e->timeout_ms);
    if (err) {
        nk_fail(pt, "init transactions", rd_kafka_error_string(err));
        rd_kafka_error_destroy(err);
        nk_close(pt);
        return -1;
    }
    /* after the fence: no earlier producer can commit past what we read */
    if (nk_read_pos(e, pt) < 0) {
        nk_close(pt);
        return -1;
    }
    pt->error[0] = '\0';
    return 0;
}

void nk_close(nk_part *pt) {
    if (pt->tx)
        rd_kafka_destroy(pt->tx);
    pt->tx = NULL;
    pt->pos = -1;
}

/* After a failed transactional call: abort what can be aborted, close
 * what cannot go on. Always -1. */
static int nk_txn_failed(nk_part *pt, const char *what, rd_kafka_error_t *err) {
    nk_fail(pt, what, rd_kafka_error_string(err));
    int fatal = rd_kafka_error_is_fatal(err);
    int abort = rd_kafka_error_txn_requires_abort(err);
    rd_kafka_error_destroy(err);
    if (!fatal && abort) {
        rd_kafka_error_t *a = rd_kafka_abort_transaction(pt->tx, 30000);
        if (!a)
            return -1;
        rd_kafka_error_destroy(a);
    }
    nk_close(pt); /* start over from the committed position */
    return -1;
}

static int nk_produce(nk_part *pt, const nk_msg *m) {
    for (int tries = 0;; tries++) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            pt->tx, RD_KAFKA_V_TOPIC(m->topic), RD_KAFKA_V_KEY(m->key, m->kn),
            RD_KAFKA_V_VALUE((void *)m->value, m->vn), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_END);
        if (!err)
            return 0;
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || tries > 300) {
            nk_fail(pt, "produce", rd_kafka_err2str(err));
            return -1;
        }
        rd_kafka_poll(pt->tx, 100);
    }
}

int nk_deliver(nk_env *e, nk_part *pt, const nk_msg *m, size_t n, int64_t next) {
    rd_kafka_error_t *err = rd_kafka_begin_transaction(pt->tx);
    if (err)
        return nk_txn_failed(pt, "begin transaction", err);
    for (size_t i = 0; i < n; i++)
        if (nk_produce(pt, &m[i]) < 0) {
            rd_kafka_error_t *a = rd_kafka_abort_transaction(pt->tx, 30000);
            if (a)
                rd_kafka_error_destroy(a);
            char keep[256];
            snprintf(keep, sizeof(keep), "%s", pt->error);
            nk_close(pt);
            snprintf(pt->error, sizeof(pt->error), "%s", keep);
            return -1;
        }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, e->topic, pt->p)->offset = next;
    rd_kafka_consumer_group_metadata_t *g = rd_kafka_consumer_group_metadata_new(e->group);
    err = rd_kafka_send_offsets_to_transaction(pt->tx, l, g, e->timeout_ms);
    rd_kafka_consumer_group_metadata_destroy(g);
    rd_kafka_topic_partition_list_destroy(l);
    if (err)
        return nk_txn_failed(pt, "send the position", err);
    for (int tries = 0;; tries++) {
        err = rd_kafka_commit_transaction(pt->tx, e->timeout_ms);
        if (!err)
            break;
        if (!rd_kafka_error_is_retriable(err) || tries >= 3)
            return nk_txn_failed(pt, "commit", err);
        rd_kafka_error_destroy(err);
    }
    pt->pos = next;
    pt->error[0] = '\0';
    if (nk_mock(e) == 1) {
        l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, e->topic, pt->p)->offset = next;
        rd_kafka_commit(e->admin, l, 0);
        rd_kafka_topic_partition_list_destroy(l);
    }
    return 0;
}

/* librdkafka's mock cluster (the embedded log) answers no CreateTopics
 * but creates a topic a metadata request names. */
static int nk_is_mock(nk_env *e) {
    char *id = rd_kafka_clusterid(e->admin, e->timeout_ms);
    int mock = id && strncmp(id, "mockCluster", 11) == 0;
    if (id)
        rd_kafka_mem_free(e->admin, id);
    return mock;
}

static int nk_mock_topic(nk_env *e, const char *name, char *errstr, size_t es) {
    rd_kafka_topic_t *t = rd_kafka_topic_new(e->admin, name, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err =
        t ? rd_kafka_metadata(e->admin, 0, t, &md, e->timeout_ms) : RD_KAFKA_RESP_ERR__FAIL;
    if (md)
        rd_kafka_metadata_destroy(md);
    if (t)
        rd_kafka_topic_destroy(t);
    if (err)
        snprintf(errstr, es, "topic %s: %s", name, rd_kafka_err2str(err));
    return err ? -1 : 0;
}

int nk_topic_ready(nk_env *e, const char *name, char *errstr, size_t es) {
    if (nk_mock(e) == 1)
        return nk_mock_topic(e, name, errstr, es);
    int rc = objlog_topics_create_like(e->admin, e->topic, name, e->timeout_ms, errstr, es);
    if (rc == 1)
        objlog_logf(OBJLOG_LEVEL_INFO, "notify", "created topic %s for the change feed", name);
    return rc < 0 ? -1 : 0;
}
