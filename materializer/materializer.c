/* materializer.c: the consumer thread that keeps the views equal to the
 * applied log prefix (docs/ARCHITECTURE.md, "The state machine's rules").
 * Owns the Kafka consumer (made by matkafka.c; assign every partition; in
 * cluster mode subscribe, cooperative, and apply what the group assigns,
 * assign.c; auto.offset.reset=error either way), the DLQ producer's
 * handle, the backlog look (catchup.h) and the published applied offsets
 * that waiters block on. Its lines and librdkafka's go to the conf's log
 * callback (matlog.h).
 *
 * A consumed batch is split by partition among the apply threads (lanes.h):
 * each lane applies its partitions' events in log order into its own
 * WriteBatch.
 *
 * Invariant: a lane's effects, its outcomes and the new applied offset of
 * every partition in it reach RocksDB in ONE WriteBatch; only after that
 * write are those offsets published to waiters and committed (async) to the
 * consumer group, which is informative only (lag tools): restart, and a
 * partition the group assigns, always resume from the store. An
 * undecodable message is acked by the DLQ before the batch that records
 * it is written, so it is never lost. A batch the store cannot write (a
 * full disk) is abandoned whole and stalls every partition until a retry
 * writes (stall.h): never a loop of failing writes, never a write past
 * the failure. */
#include "materializer.h"

#include "apply.h"
#include "assign.h"
#include "brokerrtt.h"
#include "control.h"
#include "deadline.h"
#include "handoff.h"
#include "kafkaconf.h"
#include "matint.h"
#include "matkafka.h"
#include "rangewait.h"
#include "rows.h"

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


#define MAT_POLL_MS 50
/* The longest a stop waits for the consumer's close (mat_close_consumer). */
#define MAT_CLOSE_MS 1000
/* While paused for idleness: the poll's wait (a kick ends it early). */
#define MAT_IDLE_POLL_MS 250
#define MAT_META_TIMEOUT_MS 10000
/* ---- setup ---- */

static char *mat_strdup(const char *s, const char *dflt) {
    return strdup(s && s[0] ? s : dflt);
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
            assign_rebalance(m, rk, rd_kafka_event_error(ev),
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
    rangemap_destroy(atomic_load(&m->cur_map));
    for (size_t i = 0; i < m->nold_maps; i++)
        rangemap_destroy(m->old_maps[i]);
    free(m->old_maps);
    free(m->wait_in);
    rangewait_free(m->rwait);
    lanes_destroy(m->lanes);
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
    pthread_mutex_destroy(&m->dlq_mu);
    pthread_cond_destroy(&m->cv);
    free(m);
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

static void mat_lane_apply(void *arg, mat_lane *l);

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
    pthread_mutex_init(&m->dlq_mu, NULL);
    m->log = (matlog){conf->log_cb, conf->log_opaque};
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
    if (m->stall)
        stall_set_log(m->stall, &m->log);
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
    rangemap *cur = control_load_rangemaps(m->consumer, control, m->topic,
                                           MAT_META_TIMEOUT_MS, &m->rm, errstr, errstr_size);
    if (!cur)
        goto fail;
    atomic_store(&m->cur_map, cur);
    /* Before the first batch applies or anyone reads a stats row. */
    int up = objlog_store_upgrade(store, m->rm, errstr, errstr_size);
    if (up < 0)
        goto fail;
    if (up == 1)
        matlog_printf(&m->log, MATLOG_INFO, "materializer",
                      "store upgraded to format %d: usage rows kept per partition",
                      OBJLOG_STORE_FORMAT);
    size_t np = (size_t)m->nparts;
    m->applied = calloc(np, sizeof(*m->applied));
    m->next = calloc(np, sizeof(*m->next));
    m->batch_next = calloc(np, sizeof(*m->batch_next));
    m->perr = calloc(np, sizeof(*m->perr));
    m->batch_cap = m->batch_max > CATCHUP_BULK_BATCH ? m->batch_max : CATCHUP_BULK_BATCH;
    m->batch_cur = m->batch_max;
    catchup_init(&m->catchup, mat_mono_ms());
    m->msgs = calloc((size_t)m->batch_cap, sizeof(*m->msgs));
    m->applied_ts = calloc(np, sizeof(*m->applied_ts));
    m->fetched_ts = calloc(np, sizeof(*m->fetched_ts));
    m->pending_ts = calloc(np, sizeof(*m->pending_ts));
    m->batch_ts = calloc(np, sizeof(*m->batch_ts));
    m->wait_in = malloc(np * sizeof(*m->wait_in));
    for (size_t i = 0; m->wait_in && i < np; i++)
        m->wait_in[i] = -1;
    m->rwait = rangewait_new((int)np);
    m->owned = calloc(np, sizeof(*m->owned));
    m->held = calloc(np, sizeof(*m->held));
    m->hold_want = calloc(np, sizeof(*m->hold_want));
    m->lanes = lanes_new(lanes_pick(conf->apply_threads, sysconf(_SC_NPROCESSORS_ONLN), m->nparts),
                         m->batch_cap, store, m->rm, mat_lane_apply, m);
    if (!m->applied || !m->next || !m->batch_next || !m->perr || !m->msgs ||
        !m->applied_ts || !m->fetched_ts || !m->pending_ts || !m->batch_ts || !m->owned ||
        !m->held || !m->hold_want || !m->lanes || !m->stall || !m->wait_in || !m->rwait) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    errstr[0] = '\0';
    if (mat_stats_mode(m, conf->test_no_stats, errstr, errstr_size) < 0)
        goto fail;
    for (int i = 0; i < lanes_count(m->lanes); i++)
        apply_batch_set_stats(lanes_get(m->lanes, i)->batch, m->stats_view);
    if (m->cluster && conf->standbys > 0 &&
        mat_standby_new(m, conf, errstr, errstr_size) < 0)
        goto fail;
    for (int p = 0; p < m->nparts; p++) {
        atomic_store(&m->owned[p], !m->cluster);
        assign_position_load(m, p);
        m->dlq_total += objlog_store_dlq_count(store, p);
    }
    return m;
fail:
    mat_free(m);
    return NULL;
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
    matlog_printf(&m->log, MATLOG_ERR, "materializer", "%s", why);
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
    matlog_printf_limited(&m->log, &m->log_consumer, MATLOG_WARNING, "materializer",
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
    while (n < m->batch_cur) {
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
        for (int got = 1; got && n < m->batch_cur;) {
            rd_kafka_message_t *a = rd_kafka_consumer_poll(m->consumer, 0);
            if (a)
                mat_take(m, a, 0, &n);
            rd_kafka_message_t *b =
                n < m->batch_cur ? rd_kafka_consumer_poll(m->standby_rk, 0) : NULL;
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
    m->batch_cur = catchup_batch(&m->catchup, m->batch_max);
    return m->standby_rk ? mat_gather_two(m) : mat_gather_one(m);
}

/* Events in the log past what is applied, over the partitions running
 * here, from the high watermarks the consumers last saw (cached by
 * librdkafka from fetch responses: no broker call). */
static int64_t mat_backlog(objlog_materializer *m) {
    int64_t sum = 0;
    for (int p = 0; p < m->nparts; p++) {
        rd_kafka_t *rk = atomic_load(&m->owned[p])                     ? m->consumer
                         : m->standby && atomic_load(&m->standby[p]) ? m->standby_rk
                                                                     : NULL;
        int64_t lo, hi;
        if (!rk || !mat_runs(m, p) ||
            rd_kafka_get_watermark_offsets(rk, m->topic, p, &lo, &hi) != 0 || hi < 0)
            continue;
        pthread_mutex_lock(&m->mu);
        int64_t next = m->next[p];
        pthread_mutex_unlock(&m->mu);
        sum += hi > next ? hi - next : 0;
    }
    return sum;
}

/* After a batch, and every CATCHUP_LOOK_MS when idle: the backlog, its
 * rate, the figures /metrics shows. */
#define CATCHUP_LOOK_MS 250
static void mat_catchup(objlog_materializer *m, int64_t now, int applied) {
    if (!applied && now - m->catchup_at_ms < CATCHUP_LOOK_MS)
        return;
    m->catchup_at_ms = now;
    pthread_mutex_lock(&m->mu);
    uint64_t total = m->events_applied;
    pthread_mutex_unlock(&m->mu);
    catchup_note(&m->catchup, &m->log, now, total, mat_backlog(m));
    catchup_figures f;
    catchup_figures_get(&m->catchup, &f);
    pthread_mutex_lock(&m->mu);
    m->cfig = f;
    pthread_mutex_unlock(&m->mu);
}

/* Stages one message into its lane's batch. 0, 1 if it is a RangeIn that
 * must wait for its source (nothing staged: its partition stops here for
 * this batch), or -1 if the lane's batch must be abandoned (l->errstr). */
static int mat_apply_one(objlog_materializer *m, mat_lane *l, const rd_kafka_message_t *msg) {
    char why[256];
    int64_t ts = rd_kafka_message_timestamp(msg, NULL);
    Objlog__Event *ev = apply_decode(msg->payload, msg->len, why, sizeof(why));
    if (!ev) {
        if (mat_dlq_send(m, msg, why) < 0) {
            snprintf(l->errstr, sizeof(l->errstr), "stopping before the DLQ acked %d.%" PRId64,
                     msg->partition, msg->offset);
            return -1;
        }
        l->dlq_n++;
        m->batch_ts[msg->partition] = ts;
        l->outcomes[OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT]++;
        return apply_invalid(l->batch, msg->partition, msg->offset, ts, why, l->errstr,
                             sizeof(l->errstr));
    }
    if (ev->op_case == OBJLOG__EVENT__OP_RANGE_IN && ev->range_in &&
        !rangewait_ready(m, m->rwait, l->batch, msg->partition, msg->offset, ev->range_in)) {
        objlog__event__free_unpacked(ev, NULL);
        m->wait_in[msg->partition] = msg->offset;
        return 1;
    }
    Objlog__OutcomeCode code = OBJLOG__OUTCOME_CODE__OUTCOME_OK;
    int rc = apply_event(l->batch, msg->partition, msg->offset, ts, ev, &code, l->errstr,
                         sizeof(l->errstr));
    objlog__event__free_unpacked(ev, NULL);
    m->batch_ts[msg->partition] = ts;
    if (rc == 0 && (int)code >= 0 && (int)code < MAT_OUTCOMES)
        l->outcomes[code]++;
    return rc;
}

/* A lane's share of the batch (lanes_fn): its events in log order, the
 * applied offsets of its partitions, one write. */
static void mat_lane_apply(void *arg, mat_lane *l) {
    objlog_materializer *m = arg;
    int nl = lanes_count(m->lanes);
    apply_batch_clear(l->batch);
    for (int i = 0; i < l->n && l->rc == 0; i++) {
        rd_kafka_message_t *msg = l->msgs[i];
        if (m->wait_in[msg->partition] >= 0)
            continue; /* after a RangeIn that waits */
        int rc = mat_apply_one(m, l, msg);
        l->rc = rc < 0 ? rc : 0;
        m->batch_next[msg->partition] = rc == 1 ? msg->offset : msg->offset + 1;
    }
    for (int p = l->index; p < m->nparts && l->rc == 0; p += nl)
        if (m->batch_next[p] >= 0)
            apply_set_applied(l->batch, p, m->batch_next[p]);
    if (l->rc == 0 && m->apply_delay_ms > 0) {
        struct timespec ts = {m->apply_delay_ms / 1000,
                              (long)(m->apply_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (l->rc == 0 && objlog_store_write_view(m->store, apply_batch_wb(l->batch), l->errstr,
                                              sizeof(l->errstr)) < 0) {
        l->rc = -1;
        l->store_failed = 1;
    }
    if (l->rc == 0)
        apply_batch_written(l->batch);
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

/* The partitions stopped at a RangeIn fetch again from it (their events
 * after it in this batch were not applied); returns how many events were
 * skipped that way, and naps a little so that a wait does not spin. */
static int mat_wait_in_rewind(objlog_materializer *m) {
    int skipped = 0, waiting = 0;
    for (int p = 0; p < m->nparts; p++) {
        if (m->wait_in[p] < 0)
            continue;
        for (int i = 0; i < lanes_count(m->lanes); i++) {
            mat_lane *l = lanes_get(m->lanes, i);
            for (int j = 0; j < l->n; j++)
                skipped += l->msgs[j] && l->msgs[j]->partition == p &&
                           l->msgs[j]->offset >= m->wait_in[p];
        }
        rd_kafka_t *rk = atomic_load(&m->owned[p]) ? m->consumer : m->standby_rk;
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(tp, m->topic, p)->offset = m->wait_in[p];
        pthread_mutex_lock(&m->mu);
        m->next[p] = m->wait_in[p];
        pthread_mutex_unlock(&m->mu);
        rd_kafka_error_t *e = rk ? rd_kafka_seek_partitions(rk, tp, 0) : NULL;
        if (e)
            rd_kafka_error_destroy(e);
        rd_kafka_topic_partition_list_destroy(tp);
        m->wait_in[p] = -1;
        waiting = 1;
    }
    if (waiting) {
        int64_t now = mat_mono_ms();
        if (now - m->wait_logged_ms > 10000) {
            m->wait_logged_ms = now;
            matlog_printf(&m->log, MATLOG_INFO, "materializer",
                          "a RangeIn waits for its range: its source partition to apply its "
                          "RangeOut here, or the range's import from the node that did");
        }
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return skipped;
}

/* The lanes that wrote publish their partitions; a lane that failed
 * leaves its partitions at their stored offsets, so the rewind (or the
 * stall) takes exactly them back. */
static void mat_process(objlog_materializer *m, int n) {
    int nl = lanes_count(m->lanes);
    lanes_reset(m->lanes);
    memset(m->batch_outcomes, 0, sizeof(m->batch_outcomes));
    for (int p = 0; p < m->nparts; p++)
        m->batch_next[p] = -1;
    for (int i = 0; i < n; i++) {
        mat_lane *l = lanes_get(m->lanes, m->msgs[i]->partition % nl);
        l->msgs[l->n++] = m->msgs[i];
    }
    lanes_run(m->lanes);
    int applied = 0, dlq_n = 0;
    mat_lane *failed = NULL;
    for (int k = 0; k < nl; k++) {
        mat_lane *l = lanes_get(m->lanes, k);
        if (l->rc < 0) {
            if (!failed || l->store_failed)
                failed = l;
            for (int i = 0; i < l->n; i++)
                m->batch_next[l->msgs[i]->partition] = -1;
        } else if (l->n > 0) {
            const keybuf *lo, *hi;
            uint64_t dels = apply_batch_deletes(l->batch, &lo, &hi);
            janitor_note(m->janitor, dels, lo, hi);
            applied += l->n;
            dlq_n += l->dlq_n;
            for (int i = 0; i < MAT_OUTCOMES; i++)
                m->batch_outcomes[i] += l->outcomes[i];
        }
        apply_batch_clear(l->batch);
    }
    applied -= mat_wait_in_rewind(m);
    for (int i = 0; i < n; i++)
        rd_kafka_message_destroy(m->msgs[i]);
    if (applied > 0) {
        mat_publish(m, applied, dlq_n);
        mat_commit_async(m);
    }
    if (failed && failed->store_failed) {
        mat_stall(m, failed->errstr);
        return;
    }
    if (failed) {
        matlog_printf(&m->log, MATLOG_ERR, "materializer", "batch abandoned: %s", failed->errstr);
        mat_rewind(m);
        return;
    }
    stall_written(m->stall, 1, mat_mono_ms());
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

/* RocksDB answers an empty write with its background error while it stops
 * writes (its own recovery from a full disk clears that error once there
 * is space again: its SstFileManager looks every 5 s, flushes and
 * resumes); with the WAL off the store also refuses writes from a failed
 * flush until one succeeds (objlog_store_probe). */
static int mat_store_probe(objlog_materializer *m, char *errstr, size_t es) {
    return objlog_store_probe(m->store, errstr, es);
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
        assign_holds_sync(m);
        assign_standby_sync(m);
        if (stall_wait_ms(m->stall, mat_mono_ms()) >= 0) {
            mat_stall_retry(m);
            quiet_since = mat_mono_ms();
            continue;
        }
        int n = mat_gather(m);
        int64_t now = mat_mono_ms();
        if (n > 0)
            mat_process(m, n);
        mat_catchup(m, now, n > 0);
        if (n > 0) {
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
        /* The group assigns (assign_rebalance); positions come from the store. */
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

/* ---- queries, and the asks assign.c takes between batches ---- */

int objlog_materializer_hold(objlog_materializer *m, int32_t partition, int timeout_ms) {
    if (partition < 0 || partition >= m->nparts)
        return -1;
    pthread_mutex_lock(&m->mu);
    m->hold_want[partition] = 1;
    m->hold_dirty = 1;
    pthread_mutex_unlock(&m->mu);
    objlog_materializer_kick(m);
    struct timespec until;
    deadline_after_ms(&until, timeout_ms);
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

void objlog_materializer_catchup(objlog_materializer *m, int64_t *backlog,
                                 double *events_per_s, double *eta_s) {
    pthread_mutex_lock(&m->mu);
    *backlog = m->cfig.backlog;
    *events_per_s = m->cfig.rate;
    *eta_s = m->cfig.eta_s;
    pthread_mutex_unlock(&m->mu);
}

int objlog_materializer_apply_threads(const objlog_materializer *m) {
    return lanes_count(m->lanes);
}

int objlog_materializer_partitions(const objlog_materializer *m) {
    return m->nparts;
}

int objlog_materializer_stats_view(const objlog_materializer *m) {
    return m->stats_view;
}

const rangemap *objlog_materializer_rangemap(const objlog_materializer *m) {
    return atomic_load(&((objlog_materializer *)m)->cur_map);
}

int objlog_materializer_set_rangemap(objlog_materializer *m, rangemap *rm) {
    pthread_mutex_lock(&m->mu);
    rangemap **o = realloc(m->old_maps, (m->nold_maps + 1) * sizeof(*o));
    if (o) {
        m->old_maps = o;
        o[m->nold_maps++] = atomic_exchange(&m->cur_map, rm);
    }
    pthread_mutex_unlock(&m->mu);
    if (!o)
        rangemap_destroy(rm);
    return o ? 0 : -1;
}

int64_t objlog_materializer_applied(objlog_materializer *m, int32_t partition) {
    if (partition < 0 || partition >= m->nparts)
        return -1;
    pthread_mutex_lock(&m->mu);
    int64_t v = m->applied[partition];
    pthread_mutex_unlock(&m->mu);
    return v;
}

int objlog_materializer_wait_applied(objlog_materializer *m, int32_t partition,
                                     int64_t offset, int timeout_ms) {
    if (partition < 0 || partition >= m->nparts)
        return -1;
    struct timespec until;
    deadline_after_ms(&until, timeout_ms > 0 ? timeout_ms : 0);
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
