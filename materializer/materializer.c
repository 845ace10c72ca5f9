/* materializer.c: the consumer thread that keeps the views equal to the
 * applied log prefix (docs/ARCHITECTURE.md, "The state machine's rules").
 * Owns the Kafka consumer (assign every partition; in cluster mode
 * subscribe, cooperative, and apply what the group assigns;
 * auto.offset.reset=error either way), the DLQ producer and the published
 * applied offsets that waiters block on.
 *
 * Invariant: a batch's effects, its outcomes and the new applied offset of
 * every partition in it reach RocksDB in ONE WriteBatch; only after that
 * write are the offsets published to waiters and committed (async) to the
 * consumer group, which is informative only (lag tools): restart, and a
 * partition the group assigns, always resume from the store. An undecodable message is acked by the DLQ
 * before the batch that records it is written, so it is never lost. A
 * batch the store cannot write (a full disk) is abandoned whole and
 * stalls every partition until a retry writes (stall.h): never a loop of
 * failing writes, never a write past the failure. */
#include "objlog_logger.h"
#include "materializer.h"

#include "apply.h"
#include "rows.h"
#include "janitor.h"
#include "control.h"
#include "kafkaconf.h"
#include "stall.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#define MAT_POLL_MS 50
/* librdkafka statistics interval (broker RTTs for /metrics). */
#define MAT_STATS_MS "5000"
/* The longest a stop waits for the consumer's close (mat_close_consumer). */
#define MAT_CLOSE_MS 1000
/* While paused for idleness: the poll's wait (a kick ends it early). */
#define MAT_IDLE_POLL_MS 250
#define MAT_META_TIMEOUT_MS 10000
#define MAT_DLQ_TIMEOUT_MS 10000
/* Outcome codes counted per outcome (Objlog__OutcomeCode is 0..12 today;
 * room for more without a layout change). */
#define MAT_OUTCOMES 32

struct objlog_materializer {
    objlog_logger_limit log_consumer; /* consumer thread only */
    objlog_store *store;
    char *topic;
    char *dlq_topic;
    int batch_max;
    int apply_delay_ms;
    int stats_view;       /* 0 only in benches (conf test_no_stats) */
    rd_kafka_t *consumer;
    rd_kafka_t *dlq;
    rangemap *rm;
    int nparts;
    /* Cluster mode (conf cluster): the group assigns partitions to this
     * view; owned[p] is 1 while p is assigned here (always 1 otherwise).
     * Written by the materializer thread (the rebalance callback runs in
     * its polls, or while closing), read by anyone. */
    int cluster;
    int hold_new;         /* conf hold_new */
    atomic_int *owned;
    /* Standbys (conf standbys): a second consumer, assigned and never a
     * group member, applies the partitions the cluster's placement gives
     * this node besides the group's. standby[p] is 1 while p is assigned
     * to it and not to the group consumer (materializer thread writes,
     * anyone reads); standby_want is the placement's latest wish (under
     * mu; standby_dirty until the thread took it). Both consumers' queues
     * wake the thread through wake_fd, so neither waits on the other. */
    rd_kafka_t *standby_rk;
    atomic_int *standby;
    uint8_t *standby_want;
    int standby_dirty;
    int wake_fd[2];
    /* Holds (objlog_materializer_hold): partitions whose rows another
     * thread replaces (a checkpoint import). hold_want is asked under mu;
     * the thread takes it between batches, stops fetching p and sets
     * held[p] (anyone reads); a release re-reads p's applied offset from
     * the store and fetches from there. */
    uint8_t *hold_want;
    int hold_dirty;
    atomic_int *held;

    pthread_t thread;
    int started;
    atomic_int running;
    /* Idle pause (conf idle_pause_ms): paused is written by the
     * materializer thread only; kicked by anyone. */
    int idle_pause_ms;
    atomic_int paused;
    atomic_int kicked;

    /* Published state, guarded by mu; cv signals every change. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t *applied;
    char **perr;          /* stop reason per partition, NULL while running */
    int waits_cancelled;  /* cancel_waits: every wait_applied returns -1 */
    void (*progress)(void *opaque); /* set_progress_cb; runs on each broadcast */
    void *progress_opaque;
    uint64_t dlq_total;
    objlog_broker_rtt rtt[OBJLOG_MAX_BROKER_RTTS]; /* from the stats callback */
    int nrtt;
    uint64_t events_applied;
    uint64_t by_outcome[MAT_OUTCOMES]; /* events applied per outcome code */
    /* Log times (Kafka timestamps, ms; -1 unknown) per partition, for lag in
     * seconds: newest applied event, newest event taken from the log, and
     * the oldest taken but not yet applied (-1 when none is pending). */
    int64_t *applied_ts;
    int64_t *fetched_ts;
    int64_t *pending_ts;

    /* DLQ attempts: the consumer thread numbers them, the DR callback
     * (called from rd_kafka_flush on that same thread) acks them. */
    uint64_t dlq_attempt;
    atomic_uint_fast64_t dlq_acked;

    /* Consumer-thread state. */
    int64_t *next;        /* next offset to take per partition */
    int64_t *batch_next;  /* next offset after this batch, -1 untouched */
    int64_t *batch_ts;    /* log time of the batch's last event per partition */
    uint64_t batch_outcomes[MAT_OUTCOMES];
    apply_batch *batch;
    rd_kafka_message_t **msgs;
    janitor *janitor;     /* compacts away tombstones of mass deletes */
    stall *stall;         /* the store's failed writes and their retries */
};

/* ---- setup ---- */

static char *mat_strdup(const char *s, const char *dflt) {
    return strdup(s && s[0] ? s : dflt);
}

static int conf_set(rd_kafka_conf_t *c, const char *k, const char *v,
                    char *errstr, size_t es) {
    char tmp[512];
    if (rd_kafka_conf_set(c, k, v, tmp, sizeof(tmp)) == RD_KAFKA_CONF_OK)
        return 0;
    snprintf(errstr, es, "kafka config %s: %s", k, tmp);
    return -1;
}

/* librdkafka's statistics (every MAT_STATS_MS, on the materializer thread,
 * from consumer_poll): keeps each broker's round-trip time for /metrics. */
static int mat_stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
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

/* ---- cluster mode: the group decides which partitions this view applies ---- */

static void mat_broadcast(objlog_materializer *m);

static void mat_set_owned(objlog_materializer *m,
                          const rd_kafka_topic_partition_list_t *parts, int owned) {
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p >= 0 && p < m->nparts && strcmp(parts->elems[i].topic, m->topic) == 0)
            atomic_store(&m->owned[p], owned);
    }
}

static void mat_part_list(char *out, size_t n, const rd_kafka_topic_partition_list_t *parts) {
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < parts->cnt && k < n - 16; i++)
        k += (size_t)snprintf(out + k, n - k, "%s%d", i ? "," : "", parts->elems[i].partition);
}

static void mat_hold_new(objlog_materializer *m, const rd_kafka_topic_partition_list_t *parts);
static void mat_pause_held(objlog_materializer *m, rd_kafka_t *rk,
                           const rd_kafka_topic_partition_list_t *parts);

/* Moves partitions into or out of the standby consumer's assignment, from
 * where this view stands (m->next), on the materializer thread. */
static void mat_standby_move(objlog_materializer *m, rd_kafka_topic_partition_list_t *tp,
                             int add) {
    if (!tp->cnt)
        return;
    for (int i = 0; i < tp->cnt; i++) {
        int32_t p = tp->elems[i].partition;
        tp->elems[i].offset = m->next[p];
        if (!add)
            atomic_store(&m->standby[p], 0);
    }
    if (add)
        mat_hold_new(m, tp);
    rd_kafka_error_t *e = add ? rd_kafka_incremental_assign(m->standby_rk, tp)
                              : rd_kafka_incremental_unassign(m->standby_rk, tp);
    if (add && !e)
        mat_pause_held(m, m->standby_rk, tp);
    char list[512];
    mat_part_list(list, sizeof(list), tp);
    if (e) {
        objlog_logf(OBJLOG_LEVEL_ERR, "materializer", "standby: %s partitions [%s]: %s",
                    add ? "assign" : "unassign", list, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return;
    }
    for (int i = 0; add && i < tp->cnt; i++)
        atomic_store(&m->standby[tp->elems[i].partition], 1);
    objlog_logf(OBJLOG_LEVEL_INFO, "materializer", "standby: %s partitions [%s]",
                add ? "applying" : "dropped", list);
}

static int mat_partition_stopped(objlog_materializer *m, int32_t p);

/* 1 while p may be fetched: not stopped for good, not held. */
static int mat_runs(objlog_materializer *m, int32_t p) {
    return !atomic_load(&m->held[p]) && !mat_partition_stopped(m, p);
}

/* Takes the placement's latest wish, between batches: applies as standby
 * what it wants and the group did not assign here, drops the rest. */
static void mat_standby_sync(objlog_materializer *m) {
    if (!m->standby_rk)
        return;
    pthread_mutex_lock(&m->mu);
    int dirty = m->standby_dirty;
    m->standby_dirty = 0;
    pthread_mutex_unlock(&m->mu);
    if (!dirty)
        return;
    rd_kafka_topic_partition_list_t *add = rd_kafka_topic_partition_list_new(m->nparts);
    rd_kafka_topic_partition_list_t *drop = rd_kafka_topic_partition_list_new(m->nparts);
    for (int p = 0; p < m->nparts; p++) {
        pthread_mutex_lock(&m->mu);
        int want = m->standby_want[p] && !m->perr[p];
        pthread_mutex_unlock(&m->mu);
        want = want && !atomic_load(&m->owned[p]);
        int cur = atomic_load(&m->standby[p]);
        if (want != cur)
            rd_kafka_topic_partition_list_add(want ? add : drop, m->topic, p);
    }
    mat_standby_move(m, drop, 0);
    mat_standby_move(m, add, 1);
    if (add->cnt || drop->cnt) {
        pthread_mutex_lock(&m->mu);
        mat_broadcast(m);
        pthread_mutex_unlock(&m->mu);
    }
    rd_kafka_topic_partition_list_destroy(add);
    rd_kafka_topic_partition_list_destroy(drop);
}

/* The group assigned parts here: a standby of one of them hands over to
 * the group consumer, which fetches from the same m->next. */
static void mat_standby_handover(objlog_materializer *m,
                                 const rd_kafka_topic_partition_list_t *parts) {
    if (!m->standby_rk)
        return;
    rd_kafka_topic_partition_list_t *drop = rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p >= 0 && p < m->nparts && atomic_load(&m->standby[p]))
            rd_kafka_topic_partition_list_add(drop, m->topic, p);
    }
    mat_standby_move(m, drop, 0);
    rd_kafka_topic_partition_list_destroy(drop);
}

static int64_t mat_stored_log_time(objlog_store *s, int32_t p, int64_t applied);
static void deadline_after(struct timespec *ts, int ms);

/* conf hold_new: a partition this store never applied is held as it
 * arrives, before anything is fetched for it (its rows may come from a
 * peer's checkpoint instead of the log from offset 0). */
static void mat_hold_new(objlog_materializer *m, const rd_kafka_topic_partition_list_t *parts) {
    if (!m->hold_new)
        return;
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p >= 0 && p < m->nparts && m->next[p] == 0 && !atomic_load(&m->held[p])) {
            m->hold_want[p] = 1;
            atomic_store(&m->held[p], 1);
        }
    }
    pthread_mutex_unlock(&m->mu);
}

/* Held partitions among parts stay unfetched on rk (a release seeks). */
static void mat_pause_held(objlog_materializer *m, rd_kafka_t *rk,
                           const rd_kafka_topic_partition_list_t *parts) {
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p >= 0 && p < m->nparts && atomic_load(&m->held[p]))
            rd_kafka_topic_partition_list_add(tp, m->topic, p);
    }
    if (tp->cnt)
        rd_kafka_pause_partitions(rk, tp);
    rd_kafka_topic_partition_list_destroy(tp);
}

/* Holds and releases asked since the last batch (objlog_materializer_hold):
 * a held partition is paused on both consumers; a released one fetches
 * again from the applied offset its store holds now. */
static void mat_holds_sync(objlog_materializer *m) {
    pthread_mutex_lock(&m->mu);
    int dirty = m->hold_dirty;
    m->hold_dirty = 0;
    pthread_mutex_unlock(&m->mu);
    if (!dirty)
        return;
    for (int32_t p = 0; p < m->nparts; p++) {
        pthread_mutex_lock(&m->mu);
        int want = m->hold_want[p];
        pthread_mutex_unlock(&m->mu);
        if (want == atomic_load(&m->held[p]))
            continue;
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
        rd_kafka_t *rk = atomic_load(&m->owned[p]) ? m->consumer
                         : m->standby_rk && atomic_load(&m->standby[p]) ? m->standby_rk
                                                                         : NULL;
        if (want) {
            rd_kafka_topic_partition_list_add(tp, m->topic, p);
            rd_kafka_pause_partitions(m->consumer, tp);
            if (m->standby_rk)
                rd_kafka_pause_partitions(m->standby_rk, tp);
            atomic_store(&m->held[p], 1);
        } else {
            int64_t a = objlog_store_applied(m->store, p);
            pthread_mutex_lock(&m->mu);
            m->applied[p] = m->next[p] = a;
            m->applied_ts[p] = m->fetched_ts[p] = mat_stored_log_time(m->store, p, a);
            m->pending_ts[p] = -1;
            pthread_mutex_unlock(&m->mu);
            atomic_store(&m->held[p], 0);
            rd_kafka_topic_partition_list_add(tp, m->topic, p)->offset = a;
            if (rk && !mat_partition_stopped(m, p)) {
                rd_kafka_resume_partitions(rk, tp);
                rd_kafka_error_t *e = rd_kafka_seek_partitions(rk, tp, 0);
                if (e)
                    rd_kafka_error_destroy(e);
            }
        }
        rd_kafka_topic_partition_list_destroy(tp);
    }
    pthread_mutex_lock(&m->mu);
    mat_broadcast(m);
    pthread_mutex_unlock(&m->mu);
}

/* Incremental (cooperative) rebalance, on the materializer thread (inside
 * rd_kafka_consumer_poll) or while closing. A partition is fetched from
 * where this view stands (m->next: its store's applied offset, or past the
 * batch in hand), never from the group's committed offset: each view's
 * position is its own store's. */
static void mat_rebalance(objlog_materializer *m, rd_kafka_t *rk, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t *parts) {
    rd_kafka_error_t *e = NULL;
    int assign = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS;
    if (assign) {
        mat_standby_handover(m, parts);
        mat_hold_new(m, parts);
        for (int i = 0; i < parts->cnt; i++) {
            int32_t p = parts->elems[i].partition;
            if (p >= 0 && p < m->nparts)
                parts->elems[i].offset = m->next[p];
        }
        e = rd_kafka_incremental_assign(rk, parts);
        if (!e)
            mat_set_owned(m, parts, 1);
        if (!e)
            mat_pause_held(m, rk, parts);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        mat_set_owned(m, parts, 0);
        e = rd_kafka_incremental_unassign(rk, parts);
        pthread_mutex_lock(&m->mu);
        m->standby_dirty = 1; /* the placement may want it as a standby */
        pthread_mutex_unlock(&m->mu);
    } else {
        objlog_logf(OBJLOG_LEVEL_WARNING, "materializer", "rebalance: %s",
                    rd_kafka_err2str(err));
        return;
    }
    char list[512];
    mat_part_list(list, sizeof(list), parts);
    if (e) {
        objlog_logf(OBJLOG_LEVEL_ERR, "materializer", "cluster: %s partitions [%s]: %s",
                    assign ? "assign" : "revoke", list, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    } else {
        objlog_logf(OBJLOG_LEVEL_INFO, "materializer", "cluster: %s partitions [%s]",
                    assign ? "assigned" : "revoked", list);
    }
    pthread_mutex_lock(&m->mu);
    mat_broadcast(m); /* waiters and parked reads look again */
    pthread_mutex_unlock(&m->mu);
}

static void mat_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t *parts, void *opaque) {
    mat_rebalance(opaque, rk, err, parts);
}

/* Group membership of a cluster node: cooperative-sticky moves only the
 * partitions that must move; a dead node's are reassigned within the
 * session timeout (6 s, the brokers' minimum by default); client.id carries
 * the node's URL for its peers (query/cluster.c). */
static int mat_cluster_conf(rd_kafka_conf_t *c, const objlog_materializer_conf *conf,
                            char *errstr, size_t es) {
    if (conf_set(c, "partition.assignment.strategy", "cooperative-sticky", errstr, es) ||
        conf_set(c, "session.timeout.ms", "6000", errstr, es) ||
        conf_set(c, "heartbeat.interval.ms", "1000", errstr, es) ||
        (conf->client_id && conf_set(c, "client.id", conf->client_id, errstr, es)))
        return -1;
    rd_kafka_conf_set_rebalance_cb(c, mat_rebalance_cb);
    return 0;
}

static rd_kafka_t *mat_consumer_new(objlog_materializer *m,
                                    const objlog_materializer_conf *conf,
                                    char *errstr, size_t es) {
    rd_kafka_conf_t *c = objlog_kafka_conf_new(conf->brokers, errstr, es);
    if (!c)
        return NULL;
    rd_kafka_conf_set_log_cb(c, objlog_logger_rdkafka); /* our logger's lines */
    const char *group = conf->group_id && conf->group_id[0]
                            ? conf->group_id : "objlog-materializer";
    /* Waiters block on the next batch: the fetch wait bounds idle apply
     * latency where the broker does not answer early (objlogd.c). */
    char fetch_wait[16];
    snprintf(fetch_wait, sizeof(fetch_wait), "%d",
             conf->fetch_wait_max_ms > 0 ? conf->fetch_wait_max_ms : 100);
    if (conf->cluster && mat_cluster_conf(c, conf, errstr, es) < 0) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    if (conf_set(c, "group.id", group, errstr, es) ||
        conf_set(c, "enable.auto.commit", "false", errstr, es) ||
        conf_set(c, "enable.auto.offset.store", "false", errstr, es) ||
        conf_set(c, "auto.offset.reset", "error", errstr, es) ||
        conf_set(c, "enable.partition.eof", "false", errstr, es) ||
        conf_set(c, "fetch.wait.max.ms", fetch_wait, errstr, es) ||
        /* A fetch request must go out the moment apply wants more. */
        conf_set(c, "socket.nagle.disable", "true", errstr, es) ||
        /* librdkafka's backoff grows to 10 s over an outage; applying
         * should resume within a second of the brokers' return. */
        conf_set(c, "reconnect.backoff.max.ms", "1000", errstr, es) ||
        conf_set(c, "statistics.interval.ms", MAT_STATS_MS, errstr, es) ||
        /* librdkafka prefetches up to 64 MB while the view trails the log;
         * 16 MB keeps ~50,000 events ahead of apply (batches are 1,000)
         * and bounds the view's memory. */
        conf_set(c, "queued.max.messages.kbytes", "16384", errstr, es)) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    rd_kafka_conf_set_stats_cb(c, mat_stats_cb);
    rd_kafka_conf_set_opaque(c, m);
    char tmp[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, tmp, sizeof(tmp));
    if (!rk) {
        snprintf(errstr, es, "kafka consumer: %s", tmp);
        rd_kafka_conf_destroy(c);
        return NULL;
    }
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

static rd_kafka_t *mat_dlq_new(objlog_materializer *m,
                               const objlog_materializer_conf *conf,
                               char *errstr, size_t es) {
    rd_kafka_conf_t *c = objlog_kafka_conf_new(conf->brokers, errstr, es);
    if (!c)
        return NULL;
    rd_kafka_conf_set_log_cb(c, objlog_logger_rdkafka); /* our logger's lines */
    if (conf_set(c, "acks", "all", errstr, es) ||
        conf_set(c, "enable.idempotence", "true", errstr, es) ||
        conf_set(c, "linger.ms", "0", errstr, es)) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(c, mat_dlq_dr);
    rd_kafka_conf_set_opaque(c, m);
    char tmp[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, tmp, sizeof(tmp));
    if (!rk) {
        snprintf(errstr, es, "kafka DLQ producer: %s", tmp);
        rd_kafka_conf_destroy(c);
    }
    return rk;
}

static int64_t mat_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Closes the consumer within MAT_CLOSE_MS. A close only settles the
 * group's committed positions (for lag tools; the view's own positions are
 * in the store), and with the brokers gone rd_kafka_consumer_close waits
 * for its requests to time out (a minute): a stop must not. */
static void mat_close_consumer(objlog_materializer *m, rd_kafka_t *rk) {
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_error_t *e = rd_kafka_consumer_close_queue(rk, q);
    int64_t until = mat_mono_ms() + MAT_CLOSE_MS;
    while (!e && !rd_kafka_consumer_closed(rk) && mat_mono_ms() < until) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 100);
        /* A cluster node leaving its group gives its partitions back. */
        if (ev && rd_kafka_event_type(ev) == RD_KAFKA_EVENT_REBALANCE)
            mat_rebalance(m, rk, rd_kafka_event_error(ev),
                          rd_kafka_event_topic_partition_list(ev));
        if (ev)
            rd_kafka_event_destroy(ev);
    }
    int closed = !e && rd_kafka_consumer_closed(rk);
    if (e)
        rd_kafka_error_destroy(e);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy_flags(rk, closed ? 0 : RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
}

static void mat_free(objlog_materializer *m) {
    if (m->consumer)
        mat_close_consumer(m, m->consumer);
    if (m->standby_rk)
        mat_close_consumer(m, m->standby_rk);
    for (int i = 0; i < 2; i++)
        if (m->wake_fd[i] > 0)
            close(m->wake_fd[i]);
    free(m->standby);
    free(m->standby_want);
    free(m->hold_want);
    free(m->held);
    if (m->dlq) {
        rd_kafka_flush(m->dlq, 2000);
        rd_kafka_destroy(m->dlq);
    }
    janitor_destroy(m->janitor);
    stall_destroy(m->stall);
    rangemap_destroy(m->rm);
    apply_batch_destroy(m->batch);
    if (m->perr)
        for (int i = 0; i < m->nparts; i++)
            free(m->perr[i]);
    free(m->perr);
    free(m->owned);
    free(m->applied);
    free(m->applied_ts);
    free(m->fetched_ts);
    free(m->pending_ts);
    free(m->batch_ts);
    free(m->next);
    free(m->batch_next);
    free(m->msgs);
    free(m->topic);
    free(m->dlq_topic);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

/* Log time of the newest applied event of p from its stored outcome, so lag
 * in seconds is known after a restart; -1 if none or already trimmed. */
static int64_t mat_stored_log_time(objlog_store *s, int32_t p, int64_t applied) {
    Objlog__Outcome *o = NULL;
    char err[256];
    if (applied <= 0 ||
        objlog_store_get_outcome(s, p, applied - 1, &o, err, sizeof(err)) !=
            OBJLOG_OUTCOME_FOUND)
        return -1;
    int64_t t = (int64_t)o->log_time_ms;
    objlog__outcome__free_unpacked(o, NULL);
    return t;
}

/* The stats view's mode. A store is applied with counters from its first
 * event or never (bench only): counters added halfway would be wrong
 * forever, so each mode refuses the other's store. 0 or -1 (errstr). */
static int mat_stats_mode(objlog_materializer *m, int no_stats, char *errstr,
                          size_t es) {
    rocksdb_t *db = objlog_store_db(m->store);
    rocksdb_column_family_handle_t *cf = objlog_store_cf(m->store, OBJLOG_CF_META);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *err = NULL;
    size_t vn = 0, kn = strlen(APPLY_META_NO_STATS);
    char *v = rocksdb_get_cf(db, ro, cf, APPLY_META_NO_STATS, kn, &vn, &err);
    int marked = v != NULL, used = 0;
    rocksdb_free(v);
    for (int p = 0; p < m->nparts && !used; p++)
        used = objlog_store_applied(m->store, p) > 0;
    if (err)
        snprintf(errstr, es, "store: %s", err);
    else if (!no_stats && marked)
        snprintf(errstr, es, "this store was applied without the stats view "
                             "(bench only): its counters are not exact; rebuild it by "
                             "replay into an empty data dir");
    else if (no_stats && !marked && used)
        snprintf(errstr, es, "applying without the stats view needs an empty "
                             "store (this one holds applied events)");
    else if (no_stats && !marked)
        rocksdb_put_cf(db, wo, cf, APPLY_META_NO_STATS, kn, "", 0, &err);
    if (err && !errstr[0])
        snprintf(errstr, es, "store: %s", err);
    rocksdb_free(err);
    rocksdb_readoptions_destroy(ro);
    rocksdb_writeoptions_destroy(wo);
    m->stats_view = !no_stats;
    return errstr[0] ? -1 : 0;
}

/* Lets a consumer's queue wake the materializer thread's poll(): librdkafka
 * writes a byte to wake_fd when the queue turns non-empty. */
static int mat_wake_on(objlog_materializer *m, rd_kafka_t *rk) {
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    if (!q)
        return -1;
    rd_kafka_queue_io_event_enable(q, m->wake_fd[1], "w", 1);
    rd_kafka_queue_destroy(q);
    return 0;
}

/* The standby consumer: assigned by the materializer (never subscribed, so
 * never a group member), woken with the group consumer through one pipe. */
static int mat_standby_new(objlog_materializer *m, const objlog_materializer_conf *conf,
                           char *errstr, size_t es) {
    size_t np = (size_t)m->nparts;
    m->standby = calloc(np, sizeof(*m->standby));
    m->standby_want = calloc(np, sizeof(*m->standby_want));
    if (!m->standby || !m->standby_want) {
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    if (pipe(m->wake_fd) < 0) {
        snprintf(errstr, es, "pipe: %s", strerror(errno));
        m->wake_fd[0] = m->wake_fd[1] = 0;
        return -1;
    }
    /* librdkafka writes from its threads: never block them on a full pipe. */
    for (int i = 0; i < 2; i++)
        if (fcntl(m->wake_fd[i], F_SETFL, O_NONBLOCK) < 0 ||
            fcntl(m->wake_fd[i], F_SETFD, FD_CLOEXEC) < 0) {
            snprintf(errstr, es, "pipe: %s", strerror(errno));
            return -1;
        }
    objlog_materializer_conf sc = *conf;
    char group[320];
    snprintf(group, sizeof(group), "%s.standby",
             conf->group_id && conf->group_id[0] ? conf->group_id : "objlog-materializer");
    sc.cluster = 0;
    sc.group_id = group;
    m->standby_rk = mat_consumer_new(m, &sc, errstr, es);
    if (!m->standby_rk || mat_wake_on(m, m->standby_rk) < 0 ||
        mat_wake_on(m, m->consumer) < 0) {
        if (m->standby_rk && !errstr[0])
            snprintf(errstr, es, "standby consumer: no queue");
        return -1;
    }
    return 0;
}

objlog_materializer *objlog_materializer_new(const objlog_materializer_conf *conf,
                                             objlog_store *store, char *errstr,
                                             size_t errstr_size) {
    if (!conf || !conf->brokers || !store) {
        snprintf(errstr, errstr_size, "materializer: brokers and store are required");
        return NULL;
    }
    objlog_materializer *m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&m->mu, NULL);
    m->store = store;
    m->topic = mat_strdup(conf->topic, "objlog.events");
    m->dlq_topic = mat_strdup(conf->dlq_topic, "objlog.dlq");
    m->batch_max = conf->batch_max > 0 ? conf->batch_max : 1000;
    m->idle_pause_ms = conf->idle_pause_ms > 0 ? conf->idle_pause_ms : 0;
    m->apply_delay_ms = conf->apply_delay_ms > 0 ? conf->apply_delay_ms : 0;
    m->janitor = janitor_new(store, conf->compact_after_deletes > 0
                                        ? (uint64_t)conf->compact_after_deletes
                                        : 10000);
    m->stall = stall_new();
    const char *control = conf->control_topic && conf->control_topic[0]
                              ? conf->control_topic : "objlog.control";

    m->cluster = conf->cluster;
    m->hold_new = conf->cluster && conf->hold_new;
    m->consumer = mat_consumer_new(m, conf, errstr, errstr_size);
    if (!m->consumer)
        goto fail;
    m->dlq = mat_dlq_new(m, conf, errstr, errstr_size);
    if (!m->dlq)
        goto fail;
    m->nparts = control_topic_partitions(m->consumer, m->topic,
                                         MAT_META_TIMEOUT_MS, errstr, errstr_size);
    if (m->nparts < 1)
        goto fail;
    m->rm = control_load_rangemap(m->consumer, control, m->topic,
                                  MAT_META_TIMEOUT_MS, errstr, errstr_size);
    if (!m->rm)
        goto fail;
    /* Before the first batch applies or anyone reads a stats row. */
    int up = objlog_store_upgrade(store, m->rm, errstr, errstr_size);
    if (up < 0)
        goto fail;
    if (up == 1)
        objlog_logf(OBJLOG_LEVEL_INFO, "materializer",
                    "store upgraded to format %d: usage rows kept per partition",
                    OBJLOG_STORE_FORMAT);
    size_t np = (size_t)m->nparts;
    m->applied = calloc(np, sizeof(*m->applied));
    m->next = calloc(np, sizeof(*m->next));
    m->batch_next = calloc(np, sizeof(*m->batch_next));
    m->perr = calloc(np, sizeof(*m->perr));
    m->msgs = calloc((size_t)m->batch_max, sizeof(*m->msgs));
    m->applied_ts = calloc(np, sizeof(*m->applied_ts));
    m->fetched_ts = calloc(np, sizeof(*m->fetched_ts));
    m->pending_ts = calloc(np, sizeof(*m->pending_ts));
    m->batch_ts = calloc(np, sizeof(*m->batch_ts));
    m->owned = calloc(np, sizeof(*m->owned));
    m->held = calloc(np, sizeof(*m->held));
    m->hold_want = calloc(np, sizeof(*m->hold_want));
    m->batch = apply_batch_new(store, m->rm);
    if (!m->applied || !m->next || !m->batch_next || !m->perr || !m->msgs ||
        !m->applied_ts || !m->fetched_ts || !m->pending_ts || !m->batch_ts || !m->owned ||
        !m->held || !m->hold_want || !m->batch || !m->stall) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    errstr[0] = '\0';
    if (mat_stats_mode(m, conf->test_no_stats, errstr, errstr_size) < 0)
        goto fail;
    apply_batch_set_stats(m->batch, m->stats_view);
    if (m->cluster && conf->standbys > 0 &&
        mat_standby_new(m, conf, errstr, errstr_size) < 0)
        goto fail;
    for (int p = 0; p < m->nparts; p++) {
        atomic_store(&m->owned[p], !m->cluster);
        m->applied[p] = m->next[p] = objlog_store_applied(store, p);
        m->dlq_total += objlog_store_dlq_count(store, p);
        m->applied_ts[p] = m->fetched_ts[p] = mat_stored_log_time(store, p, m->applied[p]);
        m->pending_ts[p] = -1;
    }
    return m;
fail:
    mat_free(m);
    return NULL;
}

/* Wakes every waiter, blocked (cv) or not (progress); m->mu held. */
static void mat_broadcast(objlog_materializer *m) {
    pthread_cond_broadcast(&m->cv);
    if (m->progress)
        m->progress(m->progress_opaque);
}

void objlog_materializer_set_progress_cb(objlog_materializer *m,
                                         void (*fn)(void *opaque), void *opaque) {
    pthread_mutex_lock(&m->mu);
    m->progress = fn;
    m->progress_opaque = opaque;
    pthread_mutex_unlock(&m->mu);
}

/* ---- partition errors ---- */

/* Stops partition p for good with reason (published to waiters). */
static void mat_stop_partition(objlog_materializer *m, int32_t p, const char *why) {
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(tp, m->topic, p);
    rd_kafka_pause_partitions(m->consumer, tp);
    if (m->standby_rk)
        rd_kafka_pause_partitions(m->standby_rk, tp);
    rd_kafka_topic_partition_list_destroy(tp);
    pthread_mutex_lock(&m->mu);
    if (!m->perr[p])
        m->perr[p] = strdup(why);
    mat_broadcast(m);
    pthread_mutex_unlock(&m->mu);
    objlog_logf(OBJLOG_LEVEL_ERR, "materializer", "%s", why);
}

static int mat_partition_stopped(objlog_materializer *m, int32_t p) {
    pthread_mutex_lock(&m->mu);
    int s = m->perr[p] != NULL;
    pthread_mutex_unlock(&m->mu);
    return s;
}

/* The log no longer holds the applied position: say exactly why and how to
 * recover, never skip (docs/ARCHITECTURE.md, "The state machine's rules"). */
static void mat_offset_lost(objlog_materializer *m, int32_t p) {
    int64_t lo = -1, hi = -1, at = m->next[p];
    char why[512];
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
        m->consumer, m->topic, p, &lo, &hi, MAT_META_TIMEOUT_MS);
    if (err)
        snprintf(why, sizeof(why),
                 "partition %d: applied offset %" PRId64 " is out of range of the "
                 "log (watermarks unavailable: %s): the view cannot be brought up "
                 "to date without data loss; rebuild it from a topic that still "
                 "holds the full log", p, at, rd_kafka_err2str(err));
    else if (at > hi)
        snprintf(why, sizeof(why),
                 "partition %d: applied offset %" PRId64 " is past the log end %"
                 PRId64 ": this view was built from a different log; rebuild it "
                 "from the topic it serves", p, at, hi);
    else
        snprintf(why, sizeof(why),
                 "partition %d: log start moved past applied offset %" PRId64
                 " (log now starts at %" PRId64 "): the view cannot be brought up "
                 "to date without data loss; rebuild it from a topic that still "
                 "holds the full log", p, at, lo);
    mat_stop_partition(m, p, why);
}

static void mat_consumer_error(objlog_materializer *m, rd_kafka_message_t *msg) {
    int32_t p = msg->partition;
    int ours = msg->rkt && p >= 0 && p < m->nparts &&
               strcmp(rd_kafka_topic_name(msg->rkt), m->topic) == 0;
    if (ours && (msg->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
                 msg->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE)) {
        if (!mat_partition_stopped(m, p))
            mat_offset_lost(m, p);
        return;
    }
    /* Anything else is transient for librdkafka (it retries): report it,
     * once per interval while the brokers stay away. */
    objlog_logf_limited(&m->log_consumer, OBJLOG_LEVEL_WARNING, "materializer",
                        "consumer: %s", rd_kafka_message_errstr(msg));
}

/* ---- one batch ---- */

static void mat_note_fetched(objlog_materializer *m, int32_t p, int64_t ts) {
    pthread_mutex_lock(&m->mu);
    if (ts > m->fetched_ts[p])
        m->fetched_ts[p] = ts;
    if (m->pending_ts[p] < 0)
        m->pending_ts[p] = ts;
    pthread_mutex_unlock(&m->mu);
}

/* Puts msg into the batch if it is the next event of a partition that its
 * consumer applies here (a standby's message after the group assigned the
 * partition here is the group consumer's to fetch). 1 taken, 0 dropped. */
static int mat_take(objlog_materializer *m, rd_kafka_message_t *msg, int standby, int *n) {
    if (msg->err) {
        mat_consumer_error(m, msg);
        rd_kafka_message_destroy(msg);
        return 0;
    }
    int32_t p = msg->partition;
    int mine = p >= 0 && p < m->nparts && !atomic_load(&m->held[p]) &&
               (standby ? atomic_load(&m->standby[p]) && !atomic_load(&m->owned[p])
                        : atomic_load(&m->owned[p]));
    if (!mine || msg->offset < m->next[p] || mat_partition_stopped(m, p)) {
        rd_kafka_message_destroy(msg); /* refetched, moved or stopped: decided */
        return 0;
    }
    m->next[p] = msg->offset + 1;
    m->msgs[(*n)++] = msg;
    mat_note_fetched(m, p, rd_kafka_message_timestamp(msg, NULL));
    return 1;
}

/* Collects up to batch_max messages in fetch order; the first poll waits a
 * little, the rest take only what is already fetched. */
static int mat_gather_one(objlog_materializer *m) {
    int n = 0;
    while (n < m->batch_max) {
        rd_kafka_message_t *msg =
            rd_kafka_consumer_poll(m->consumer, n > 0 ? 0
                                                : atomic_load(&m->paused) ? MAT_IDLE_POLL_MS
                                                                          : MAT_POLL_MS);
        if (!msg)
            break;
        int err = msg->err != 0;
        mat_take(m, msg, 0, &n);
        if (err && n == 0 && !atomic_load(&m->running))
            break;
    }
    return n;
}

/* Blocks until either consumer's queue turns non-empty (or a kick, or
 * ms), then empties the pipe: the polls that follow take what came. */
static void mat_wait_wake(objlog_materializer *m, int ms) {
    struct pollfd pfd = {.fd = m->wake_fd[0], .events = POLLIN};
    if (poll(&pfd, 1, ms) > 0) {
        char buf[64];
        while (read(m->wake_fd[0], buf, sizeof(buf)) > 0)
            ;
    }
}

/* With a standby consumer: takes from both in turn without waiting, and
 * waits (on the pipe) only when neither had anything. */
static int mat_gather_two(objlog_materializer *m) {
    int n = 0;
    for (int waited = 0;; waited = 1) {
        for (int got = 1; got && n < m->batch_max;) {
            rd_kafka_message_t *a = rd_kafka_consumer_poll(m->consumer, 0);
            if (a)
                mat_take(m, a, 0, &n);
            rd_kafka_message_t *b =
                n < m->batch_max ? rd_kafka_consumer_poll(m->standby_rk, 0) : NULL;
            if (b)
                mat_take(m, b, 1, &n);
            got = a || b;
        }
        if (n > 0 || waited || !atomic_load(&m->running))
            return n;
        mat_wait_wake(m, atomic_load(&m->paused) ? MAT_IDLE_POLL_MS : MAT_POLL_MS);
    }
}

static int mat_gather(objlog_materializer *m) {
    return m->standby_rk ? mat_gather_two(m) : mat_gather_one(m);
}

static void hdr_add_i64(rd_kafka_headers_t *h, const char *name, int64_t v) {
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%" PRId64, v);
    rd_kafka_header_add(h, name, -1, buf, n);
}

/* Sends msg to the DLQ and waits for the ack; retries while running.
 * 0 acked, -1 shutting down before it was acked. */
static int mat_dlq_send(objlog_materializer *m, const rd_kafka_message_t *msg,
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
        objlog_logf(OBJLOG_LEVEL_WARNING, "materializer", "DLQ %s: %s; retrying", m->dlq_topic,
                rd_kafka_err2str(err));
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* Stages one message. 0, or -1 if the batch must be abandoned. */
static int mat_apply_one(objlog_materializer *m, const rd_kafka_message_t *msg,
                         int *dlq_n, char *errstr, size_t es) {
    char why[256];
    int64_t ts = rd_kafka_message_timestamp(msg, NULL);
    Objlog__Event *ev = apply_decode(msg->payload, msg->len, why, sizeof(why));
    if (!ev) {
        if (mat_dlq_send(m, msg, why) < 0) {
            snprintf(errstr, es, "stopping before the DLQ acked %d.%" PRId64,
                     msg->partition, msg->offset);
            return -1;
        }
        (*dlq_n)++;
        m->batch_ts[msg->partition] = ts;
        m->batch_outcomes[OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT]++;
        return apply_invalid(m->batch, msg->partition, msg->offset, ts, why,
                             errstr, es);
    }
    Objlog__OutcomeCode code = OBJLOG__OUTCOME_CODE__OUTCOME_OK;
    int rc = apply_event(m->batch, msg->partition, msg->offset, ts, ev, &code,
                         errstr, es);
    objlog__event__free_unpacked(ev, NULL);
    m->batch_ts[msg->partition] = ts;
    if (rc == 0 && (int)code >= 0 && (int)code < MAT_OUTCOMES)
        m->batch_outcomes[code]++;
    return rc;
}

static void mat_commit_async(objlog_materializer *m) {
    rd_kafka_topic_partition_list_t *tp =
        rd_kafka_topic_partition_list_new(m->nparts);
    for (int p = 0; p < m->nparts; p++)
        if (m->batch_next[p] >= 0 && atomic_load(&m->owned[p])) /* not a standby's */
            rd_kafka_topic_partition_list_add(tp, m->topic, p)->offset =
                m->batch_next[p];
    if (tp->cnt)
        rd_kafka_commit(m->consumer, tp, 1);
    rd_kafka_topic_partition_list_destroy(tp);
}

static void mat_publish(objlog_materializer *m, int n, int dlq_n) {
    pthread_mutex_lock(&m->mu);
    for (int p = 0; p < m->nparts; p++) {
        if (m->batch_next[p] < 0)
            continue;
        m->applied[p] = m->batch_next[p];
        m->applied_ts[p] = m->batch_ts[p];
        m->pending_ts[p] = m->next[p] > m->applied[p] ? m->pending_ts[p] : -1;
    }
    for (int i = 0; i < MAT_OUTCOMES; i++)
        m->by_outcome[i] += m->batch_outcomes[i];
    m->events_applied += (uint64_t)n;
    m->dlq_total += (uint64_t)dlq_n;
    mat_broadcast(m);
    pthread_mutex_unlock(&m->mu);
}

/* The standby partitions that still run, at their next offsets; NULL
 * without a standby consumer. */
static rd_kafka_topic_partition_list_t *mat_standby_list(objlog_materializer *m) {
    if (!m->standby_rk)
        return NULL;
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(m->nparts);
    for (int p = 0; p < m->nparts; p++)
        if (atomic_load(&m->standby[p]) && mat_runs(m, p))
            rd_kafka_topic_partition_list_add(tp, m->topic, p)->offset = m->next[p];
    return tp;
}

static void mat_standby_seek(objlog_materializer *m) {
    rd_kafka_topic_partition_list_t *tp = mat_standby_list(m);
    if (!tp)
        return;
    rd_kafka_error_t *e = tp->cnt ? rd_kafka_seek_partitions(m->standby_rk, tp, 0) : NULL;
    if (e)
        rd_kafka_error_destroy(e);
    rd_kafka_topic_partition_list_destroy(tp);
}

/* Rewinds the fetch positions to the last written offsets so that an
 * abandoned batch is consumed again rather than skipped. */
static void mat_rewind(objlog_materializer *m) {
    pthread_mutex_lock(&m->mu);
    for (int p = 0; p < m->nparts; p++) {
        m->next[p] = m->applied[p];
        m->pending_ts[p] = -1;
    }
    pthread_mutex_unlock(&m->mu);
    rd_kafka_topic_partition_list_t *tp =
        rd_kafka_topic_partition_list_new(m->nparts);
    for (int p = 0; p < m->nparts; p++)
        if (mat_runs(m, p) && atomic_load(&m->owned[p]))
            rd_kafka_topic_partition_list_add(tp, m->topic, p)->offset = m->next[p];
    if (m->cluster) {
        /* The group owns the assignment: move the positions only. */
        rd_kafka_error_t *e = rd_kafka_seek_partitions(m->consumer, tp, 0);
        if (e)
            rd_kafka_error_destroy(e);
    } else {
        rd_kafka_assign(m->consumer, tp);
    }
    rd_kafka_topic_partition_list_destroy(tp);
    mat_standby_seek(m);
    atomic_store(&m->paused, 0); /* a new assignment fetches */
}

static void mat_fetch(objlog_materializer *m, int on);

/* The store refused a write: nothing of the batch was applied (one
 * WriteBatch), so every partition goes back to its stored offset and
 * stops fetching until a retry writes (mat_stall_retry). */
static void mat_stall(objlog_materializer *m, const char *err) {
    stall_failed(m->stall, err, mat_mono_ms());
    mat_rewind(m);
    mat_fetch(m, 0);
}

static void mat_process(objlog_materializer *m, int n) {
    char errstr[512];
    int dlq_n = 0, rc = 0, store_failed = 0;
    apply_batch_clear(m->batch);
    memset(m->batch_outcomes, 0, sizeof(m->batch_outcomes));
    for (int p = 0; p < m->nparts; p++)
        m->batch_next[p] = -1;
    for (int i = 0; i < n && rc == 0; i++) {
        rd_kafka_message_t *msg = m->msgs[i];
        rc = mat_apply_one(m, msg, &dlq_n, errstr, sizeof(errstr));
        m->batch_next[msg->partition] = msg->offset + 1;
    }
    for (int p = 0; p < m->nparts && rc == 0; p++)
        if (m->batch_next[p] >= 0)
            apply_set_applied(m->batch, p, m->batch_next[p]);
    if (rc == 0 && m->apply_delay_ms > 0) {
        struct timespec ts = {m->apply_delay_ms / 1000,
                              (long)(m->apply_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (rc == 0) {
        rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
        char *err = NULL;
        rocksdb_write_writebatch_wi(objlog_store_db(m->store), wo,
                                    apply_batch_wb(m->batch), &err);
        rocksdb_writeoptions_destroy(wo);
        if (err) {
            snprintf(errstr, sizeof(errstr), "%s", err);
            rocksdb_free(err);
            rc = -1;
            store_failed = 1;
        }
    }
    for (int i = 0; i < n; i++)
        rd_kafka_message_destroy(m->msgs[i]);
    if (rc == 0) {
        const keybuf *lo, *hi;
        uint64_t dels = apply_batch_deletes(m->batch, &lo, &hi);
        janitor_note(m->janitor, dels, lo, hi);
    }
    apply_batch_clear(m->batch);
    if (store_failed) {
        mat_stall(m, errstr);
        return;
    }
    if (rc < 0) {
        objlog_logf(OBJLOG_LEVEL_ERR, "materializer", "batch abandoned: %s", errstr);
        mat_rewind(m);
        return;
    }
    stall_written(m->stall, 1, mat_mono_ms());
    mat_publish(m, n, dlq_n);
    mat_commit_async(m);
}

/* ---- idle pause ---- */

/* Stops fetching every running partition, or fetches again from where it
 * stopped (m->next). Resuming also seeks to that position: librdkafka
 * 2.0.2's broker thread starts fetching a merely resumed partition only at
 * its next wake-up, up to a second later; a seek wakes it. */
static void mat_fetch(objlog_materializer *m, int on) {
    int pause = !on;
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(m->nparts);
    for (int p = 0; p < m->nparts; p++)
        if (mat_runs(m, p) && atomic_load(&m->owned[p]))
            rd_kafka_topic_partition_list_add(tp, m->topic, p)->offset = m->next[p];
    if (pause) {
        rd_kafka_pause_partitions(m->consumer, tp);
    } else {
        rd_kafka_resume_partitions(m->consumer, tp);
        rd_kafka_error_t *e = rd_kafka_seek_partitions(m->consumer, tp, 0);
        if (e)
            rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(tp);
    rd_kafka_topic_partition_list_t *st = mat_standby_list(m);
    if (st && pause)
        rd_kafka_pause_partitions(m->standby_rk, st);
    else if (st)
        rd_kafka_resume_partitions(m->standby_rk, st);
    if (st)
        rd_kafka_topic_partition_list_destroy(st);
    if (!pause)
        mat_standby_seek(m);
}

static void mat_set_paused(objlog_materializer *m, int pause) {
    mat_fetch(m, !pause);
    atomic_store(&m->paused, pause);
}

void objlog_materializer_kick(objlog_materializer *m) {
    if (!m || !atomic_load(&m->paused) || atomic_exchange(&m->kicked, 1))
        return;
    /* End the poll in progress (rd_kafka_yield does not reach it). */
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(m->consumer);
    if (q) {
        rd_kafka_queue_yield(q);
        rd_kafka_queue_destroy(q);
    }
    if (m->standby_rk && write(m->wake_fd[1], "k", 1) < 0) {
        /* full pipe: the thread has a wake-up pending anyway */
    }
}

int objlog_materializer_idle(objlog_materializer *m) { return atomic_load(&m->paused); }

/* ---- a stalled store ---- */

/* An empty write: RocksDB answers it with its background error while it
 * stops writes (its own recovery from a full disk clears that error once
 * there is space again: its SstFileManager looks every 5 s, flushes and
 * resumes); otherwise it costs one empty WAL record. */
static int mat_store_probe(objlog_materializer *m, char *errstr, size_t es) {
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *err = NULL;
    rocksdb_write(objlog_store_db(m->store), wo, wb, &err);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_writebatch_destroy(wb);
    if (!err)
        return 0;
    snprintf(errstr, es, "%s", err);
    rocksdb_free(err);
    return -1;
}

/* A message taken while stalled is dropped and its partition paused:
 * it started fetching meanwhile (a rebalance, a release) and is sought
 * back to m->next with every other partition when the stall ends. */
static void mat_stall_drop(objlog_materializer *m, rd_kafka_t *rk, rd_kafka_message_t *msg) {
    if (msg->err) {
        mat_consumer_error(m, msg);
    } else if (msg->rkt) {
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(tp, rd_kafka_topic_name(msg->rkt), msg->partition);
        rd_kafka_pause_partitions(rk, tp);
        rd_kafka_topic_partition_list_destroy(tp);
    }
    rd_kafka_message_destroy(msg);
}

/* Polls both consumers for up to ms without applying: callbacks still
 * run, so a cluster node's rebalances never wait on its disk. */
static void mat_stall_poll(objlog_materializer *m, int ms) {
    rd_kafka_t *rks[2] = {m->consumer, m->standby_rk};
    for (int c = 0; c < 2 && rks[c]; c++) {
        int wait = c == 0 ? ms : 0;
        for (int i = 0; i < m->batch_max; i++, wait = 0) {
            rd_kafka_message_t *msg = rd_kafka_consumer_poll(rks[c], wait);
            if (!msg)
                break;
            mat_stall_drop(m, rks[c], msg);
        }
    }
}

/* While stalled: waits for the retry in short steps (a stop is never kept
 * waiting), then probes; a write that goes through ends the stall and
 * every partition fetches again from its stored offset. */
static void mat_stall_retry(objlog_materializer *m) {
    int64_t wait = stall_wait_ms(m->stall, mat_mono_ms());
    if (wait > 0) {
        mat_stall_poll(m, wait < MAT_POLL_MS ? (int)wait : MAT_POLL_MS);
        return;
    }
    char err[512];
    if (mat_store_probe(m, err, sizeof(err)) < 0) {
        stall_failed(m->stall, err, mat_mono_ms());
        return;
    }
    stall_written(m->stall, 0, mat_mono_ms());
    mat_fetch(m, 1);
    pthread_mutex_lock(&m->mu);
    mat_broadcast(m);
    pthread_mutex_unlock(&m->mu);
}

static void *mat_run(void *arg) {
    objlog_materializer *m = arg;
    int64_t quiet_since = mat_mono_ms();
    while (atomic_load(&m->running)) {
        mat_holds_sync(m);
        mat_standby_sync(m);
        if (stall_wait_ms(m->stall, mat_mono_ms()) >= 0) {
            mat_stall_retry(m);
            quiet_since = mat_mono_ms();
            continue;
        }
        int n = mat_gather(m);
        int64_t now = mat_mono_ms();
        if (n > 0) {
            mat_process(m, n);
            quiet_since = now;
            continue;
        }
        if (!m->idle_pause_ms)
            continue;
        if (!atomic_load(&m->paused)) {
            if (now - quiet_since >= m->idle_pause_ms)
                mat_set_paused(m, 1);
            continue;
        }
        /* Only a kick resumes (the query service's: writes, fenced reads,
         * and its once-a-second look at the log's end). Never a broker
         * call of our own here: with the brokers gone it can outlast its
         * timeout, and a stop would wait for it. */
        if (atomic_exchange(&m->kicked, 0)) {
            mat_set_paused(m, 0);
            quiet_since = now;
        }
    }
    return NULL;
}

int objlog_materializer_start(objlog_materializer *m, char *errstr,
                              size_t errstr_size) {
    if (m->started) {
        snprintf(errstr, errstr_size, "materializer already started");
        return -1;
    }
    rd_kafka_topic_partition_list_t *tp =
        rd_kafka_topic_partition_list_new(m->nparts);
    rd_kafka_resp_err_t err;
    if (m->cluster) {
        /* The group assigns (mat_rebalance); positions come from the store. */
        rd_kafka_topic_partition_list_add(tp, m->topic, RD_KAFKA_PARTITION_UA);
        err = rd_kafka_subscribe(m->consumer, tp);
    } else {
        for (int p = 0; p < m->nparts; p++)
            rd_kafka_topic_partition_list_add(tp, m->topic, p)->offset = m->next[p];
        err = rd_kafka_assign(m->consumer, tp);
    }
    rd_kafka_topic_partition_list_destroy(tp);
    if (err) {
        snprintf(errstr, errstr_size, "%s %s: %s", m->cluster ? "subscribe" : "assign",
                 m->topic, rd_kafka_err2str(err));
        return -1;
    }
    atomic_store(&m->running, 1);
    if (pthread_create(&m->thread, NULL, mat_run, m) != 0) {
        atomic_store(&m->running, 0);
        snprintf(errstr, errstr_size, "materializer thread: %s", strerror(errno));
        return -1;
    }
    m->started = 1;
    return 0;
}

void objlog_materializer_destroy(objlog_materializer *m) {
    if (!m)
        return;
    if (m->started) {
        atomic_store(&m->running, 0);
        pthread_join(m->thread, NULL);
        m->started = 0;
    }
    pthread_mutex_lock(&m->mu);
    mat_broadcast(m); /* no waiter may sleep on a freed cv */
    pthread_mutex_unlock(&m->mu);
    mat_free(m);
}

/* ---- queries ---- */

int objlog_materializer_owns(objlog_materializer *m, int32_t partition) {
    if (partition < 0 || partition >= m->nparts)
        return 0;
    return atomic_load(&m->owned[partition]);
}

int objlog_materializer_cluster(const objlog_materializer *m) { return m->cluster; }

int objlog_materializer_role(objlog_materializer *m, int32_t partition) {
    if (partition < 0 || partition >= m->nparts || atomic_load(&m->held[partition]))
        return OBJLOG_ROLE_NONE;
    if (atomic_load(&m->owned[partition]))
        return OBJLOG_ROLE_ACTIVE;
    return m->standby && atomic_load(&m->standby[partition]) ? OBJLOG_ROLE_STANDBY
                                                             : OBJLOG_ROLE_NONE;
}

int objlog_materializer_applies(objlog_materializer *m, int32_t partition) {
    return objlog_materializer_role(m, partition) != OBJLOG_ROLE_NONE;
}

int objlog_materializer_held(objlog_materializer *m, int32_t partition) {
    return partition >= 0 && partition < m->nparts && atomic_load(&m->held[partition]);
}

int objlog_materializer_fetches(objlog_materializer *m, int32_t partition) {
    if (partition < 0 || partition >= m->nparts)
        return 0;
    return atomic_load(&m->owned[partition]) ||
           (m->standby && atomic_load(&m->standby[partition]));
}

int objlog_materializer_hold(objlog_materializer *m, int32_t partition, int timeout_ms) {
    if (partition < 0 || partition >= m->nparts)
        return -1;
    pthread_mutex_lock(&m->mu);
    m->hold_want[partition] = 1;
    m->hold_dirty = 1;
    pthread_mutex_unlock(&m->mu);
    objlog_materializer_kick(m);
    struct timespec until;
    deadline_after(&until, timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    while (!atomic_load(&m->held[partition]) && rc == 0) {
        if (m->waits_cancelled ||
            pthread_cond_timedwait(&m->cv, &m->mu, &until) == ETIMEDOUT)
            rc = atomic_load(&m->held[partition]) ? 0 : -1;
    }
    if (rc < 0) { /* not taken in time: withdraw the ask */
        m->hold_want[partition] = 0;
        m->hold_dirty = 1;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

void objlog_materializer_release(objlog_materializer *m, int32_t partition) {
    if (partition < 0 || partition >= m->nparts)
        return;
    pthread_mutex_lock(&m->mu);
    m->hold_want[partition] = 0;
    m->hold_dirty = 1;
    pthread_mutex_unlock(&m->mu);
    objlog_materializer_kick(m);
}

int objlog_materializer_set_standbys(objlog_materializer *m, const uint8_t *want) {
    if (!m->standby_rk)
        return -1;
    int changed = 0;
    pthread_mutex_lock(&m->mu);
    for (int p = 0; p < m->nparts; p++) {
        changed |= m->standby_want[p] != (want[p] != 0);
        m->standby_want[p] = want[p] != 0;
    }
    m->standby_dirty |= changed;
    pthread_mutex_unlock(&m->mu);
    if (changed)
        objlog_materializer_kick(m); /* an idle thread takes it now */
    return 0;
}

int objlog_materializer_partitions(const objlog_materializer *m) {
    return m->nparts;
}

int objlog_materializer_stats_view(const objlog_materializer *m) {
    return m->stats_view;
}

const rangemap *objlog_materializer_rangemap(const objlog_materializer *m) {
    return m->rm;
}

int64_t objlog_materializer_applied(objlog_materializer *m, int32_t partition) {
    if (partition < 0 || partition >= m->nparts)
        return -1;
    pthread_mutex_lock(&m->mu);
    int64_t v = m->applied[partition];
    pthread_mutex_unlock(&m->mu);
    return v;
}

static void deadline_after(struct timespec *ts, int ms) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int objlog_materializer_wait_applied(objlog_materializer *m, int32_t partition,
                                     int64_t offset, int timeout_ms) {
    if (partition < 0 || partition >= m->nparts)
        return -1;
    struct timespec until;
    deadline_after(&until, timeout_ms > 0 ? timeout_ms : 0);
    int rc = 1;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        if (m->applied[partition] > offset) {
            rc = 0;
            break;
        }
        if (m->perr[partition] || m->waits_cancelled) {
            rc = -1;
            break;
        }
        if (pthread_cond_timedwait(&m->cv, &m->mu, &until) == ETIMEDOUT) {
            rc = m->applied[partition] > offset ? 0 : 1;
            break;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

void objlog_materializer_cancel_waits(objlog_materializer *m) {
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->waits_cancelled = 1;
    mat_broadcast(m);
    pthread_mutex_unlock(&m->mu);
}

const char *objlog_materializer_partition_error(objlog_materializer *m,
                                                int32_t partition, char *buf,
                                                size_t buf_size) {
    if (partition < 0 || partition >= m->nparts || buf_size == 0)
        return NULL;
    const char *r = NULL;
    pthread_mutex_lock(&m->mu);
    if (m->perr[partition]) {
        snprintf(buf, buf_size, "%s", m->perr[partition]);
        r = buf;
    }
    pthread_mutex_unlock(&m->mu);
    return r;
}

int objlog_materializer_store_stalled(objlog_materializer *m, char *why, size_t why_size) {
    return stall_active(m->stall, why, why_size);
}

uint64_t objlog_materializer_store_write_errors(objlog_materializer *m) {
    return stall_errors(m->stall);
}

uint64_t objlog_materializer_dlq_count(objlog_materializer *m) {
    pthread_mutex_lock(&m->mu);
    uint64_t v = m->dlq_total;
    pthread_mutex_unlock(&m->mu);
    return v;
}

uint64_t objlog_materializer_events_applied(objlog_materializer *m) {
    pthread_mutex_lock(&m->mu);
    uint64_t v = m->events_applied;
    pthread_mutex_unlock(&m->mu);
    return v;
}

uint64_t objlog_materializer_events_by_outcome(objlog_materializer *m,
                                               Objlog__OutcomeCode code) {
    if ((int)code < 0 || (int)code >= MAT_OUTCOMES)
        return 0;
    pthread_mutex_lock(&m->mu);
    uint64_t v = m->by_outcome[code];
    pthread_mutex_unlock(&m->mu);
    return v;
}

int objlog_materializer_log_times(objlog_materializer *m, int32_t partition,
                                  objlog_log_times *out) {
    if (partition < 0 || partition >= m->nparts)
        return -1;
    pthread_mutex_lock(&m->mu);
    out->applied_ms = m->applied_ts[partition];
    out->fetched_ms = m->fetched_ts[partition];
    out->pending_ms = m->pending_ts[partition];
    pthread_mutex_unlock(&m->mu);
    return 0;
}
