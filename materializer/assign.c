/* assign.c: which partitions this view applies, on the materializer
 * thread: in cluster mode the consumer group's cooperative rebalances,
 * the standby placement (a second consumer, assigned and never a group
 * member) and the holds of partitions whose rows a checkpoint import
 * replaces; and the role queries other threads read from that.
 *
 * Invariant: a partition is fetched by at most one consumer here, always
 * from where this view stands (m->next: its store's applied offset, or
 * past the batch in hand), never from a group's committed offset; a held
 * partition is fetched by neither until its release re-reads the store.
 * owned, standby and held are written here on the materializer thread and
 * read by anyone. */
#include "assign.h"

#include "matint.h"

#include <stdio.h>
#include <string.h>

static void assign_set_owned(objlog_materializer *m,
                             const rd_kafka_topic_partition_list_t *parts, int owned) {
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p >= 0 && p < m->nparts && strcmp(parts->elems[i].topic, m->topic) == 0)
            atomic_store(&m->owned[p], owned);
    }
}

static void assign_part_list(char *out, size_t n, const rd_kafka_topic_partition_list_t *parts) {
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < parts->cnt && k < n - 16; i++)
        k += (size_t)snprintf(out + k, n - k, "%s%d", i ? "," : "", parts->elems[i].partition);
}

/* conf hold_new: a partition this store never applied is held as it
 * arrives, before anything is fetched for it (its rows may come from a
 * peer's checkpoint instead of the log from offset 0). */
static void assign_hold_new(objlog_materializer *m, const rd_kafka_topic_partition_list_t *parts) {
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
static void assign_pause_held(objlog_materializer *m, rd_kafka_t *rk,
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

/* Logs what became of a change of parts ("<who>: <done> partitions [..]",
 * or "<who>: <verb> partitions [..]: why" when e failed it; e is freed).
 * 0 done, -1 failed. */
static int assign_report(objlog_materializer *m, const char *who,
                         const rd_kafka_topic_partition_list_t *parts, rd_kafka_error_t *e,
                         const char *verb, const char *done) {
    char list[512];
    assign_part_list(list, sizeof(list), parts);
    if (!e) {
        matlog_printf(&m->log, MATLOG_INFO, "materializer", "%s: %s partitions [%s]", who,
                      done, list);
        return 0;
    }
    matlog_printf(&m->log, MATLOG_ERR, "materializer", "%s: %s partitions [%s]: %s", who, verb,
                  list, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return -1;
}

/* Moves partitions into or out of the standby consumer's assignment, from
 * where this view stands (m->next), on the materializer thread. */
static void assign_standby_move(objlog_materializer *m, rd_kafka_topic_partition_list_t *tp,
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
        assign_hold_new(m, tp);
    rd_kafka_error_t *e = add ? rd_kafka_incremental_assign(m->standby_rk, tp)
                              : rd_kafka_incremental_unassign(m->standby_rk, tp);
    if (add && !e)
        assign_pause_held(m, m->standby_rk, tp);
    for (int i = 0; add && !e && i < tp->cnt; i++)
        atomic_store(&m->standby[tp->elems[i].partition], 1);
    assign_report(m, "standby", tp, e, add ? "assign" : "unassign", add ? "applying" : "dropped");
}

/* Takes the placement's latest wish, between batches: applies as standby
 * what it wants and the group did not assign here, drops the rest. */
void assign_standby_sync(objlog_materializer *m) {
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
    assign_standby_move(m, drop, 0);
    assign_standby_move(m, add, 1);
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
static void assign_standby_handover(objlog_materializer *m,
                                    const rd_kafka_topic_partition_list_t *parts) {
    if (!m->standby_rk)
        return;
    rd_kafka_topic_partition_list_t *drop = rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p >= 0 && p < m->nparts && atomic_load(&m->standby[p]))
            rd_kafka_topic_partition_list_add(drop, m->topic, p);
    }
    assign_standby_move(m, drop, 0);
    rd_kafka_topic_partition_list_destroy(drop);
}

/* Log time of the newest applied event of p from its stored outcome, so lag
 * in seconds is known after a restart; -1 if none or already trimmed. */
static int64_t assign_stored_log_time(objlog_store *s, int32_t p, int64_t applied) {
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

int64_t assign_position_load(objlog_materializer *m, int32_t p) {
    int64_t a = objlog_store_applied(m->store, p);
    int64_t ts = assign_stored_log_time(m->store, p, a);
    pthread_mutex_lock(&m->mu);
    m->applied[p] = m->next[p] = a;
    m->applied_ts[p] = m->fetched_ts[p] = ts;
    m->pending_ts[p] = -1;
    pthread_mutex_unlock(&m->mu);
    return a;
}

/* Holds and releases asked since the last batch (objlog_materializer_hold):
 * a held partition is paused on both consumers; a released one fetches
 * again from the applied offset its store holds now. */
void assign_holds_sync(objlog_materializer *m) {
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
            int64_t a = assign_position_load(m, p);
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
void assign_rebalance(objlog_materializer *m, rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts) {
    rd_kafka_error_t *e = NULL;
    int assign = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS;
    if (assign) {
        assign_standby_handover(m, parts);
        assign_hold_new(m, parts);
        for (int i = 0; i < parts->cnt; i++) {
            int32_t p = parts->elems[i].partition;
            if (p >= 0 && p < m->nparts)
                parts->elems[i].offset = m->next[p];
        }
        e = rd_kafka_incremental_assign(rk, parts);
        if (!e)
            assign_set_owned(m, parts, 1);
        if (!e)
            assign_pause_held(m, rk, parts);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        assign_set_owned(m, parts, 0);
        e = rd_kafka_incremental_unassign(rk, parts);
        pthread_mutex_lock(&m->mu);
        m->standby_dirty = 1; /* the placement may want it as a standby */
        pthread_mutex_unlock(&m->mu);
    } else {
        matlog_printf(&m->log, MATLOG_WARNING, "materializer", "rebalance: %s",
                      rd_kafka_err2str(err));
        return;
    }
    assign_report(m, "cluster", parts, e, assign ? "assign" : "revoke",
                  assign ? "assigned" : "revoked");
    pthread_mutex_lock(&m->mu);
    mat_broadcast(m); /* waiters and parked reads look again */
    pthread_mutex_unlock(&m->mu);
}

void assign_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
    assign_rebalance(opaque, rk, err, parts);
}

/* ---- what this view applies ---- */

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
