/* producer.c: objlog_producer, the write path of libobjlog_producer
 * (docs/ARCHITECTURE.md, "How a write flows"). Owns the librdkafka
 * producer (idempotent, acks=all), the range map it routes with, the
 * delivery-report thread and the set of writes in flight (writeops, whose
 * completion and count live in writeop.c).
 *
 * Invariant: every accepted write is counted in `outstanding` from before
 * it is produced until just after its callback returned, so flush() and
 * destroy() cannot return while a callback is still pending. The range map
 * is loaded once in objlog_producer_new and never changes afterwards, so
 * the write path reads it without a lock.
 */
#define _GNU_SOURCE
#include "attrs.h"
#include "producer_int.h"
#include "producer_event.h"
#include "producer_time.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "keycodec.h"
#include "objlog.pb-c.h"
#include "rangemap.h"
#include "keptsends.h"
#include "route.h"
#include "token.h"

#define PRODUCER_METADATA_TIMEOUT_MS 10000
/* WrongRange resends of one write, and how long one waits for the map
 * that moved its range to be published. */
#define PRODUCER_REROUTES 8
#define PRODUCER_REROUTE_WAIT_MS 10000

struct objlog_producer {
    objlog_producer_conf *conf;
    rd_kafka_t *rk;
    proute *route;               /* the range map, and a handoff's hold */
    fetcher *fetch;              /* NULL with ack=logged */
    keptsends *kept;             /* ack=logged writes' bytes (producer_keep_logged), or NULL */
    quota *quota;                /* tenant pre-check (quota.c), or NULL */
    padmit *admit;               /* admission=on (admit.c), or NULL */
    pthread_t dr_thread;
    int dr_started;
    atomic_int stop;
    writeops ops;                /* every accepted write until its callback */
};

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *objlog_status_name(objlog_status s) {
    switch (s) {
    case OBJLOG_STATUS_OK: return "OK";
    case OBJLOG_STATUS_LOGGED: return "LOGGED";
    case OBJLOG_STATUS_REJECTED: return "REJECTED";
    case OBJLOG_STATUS_UNKNOWN: return "UNKNOWN";
    case OBJLOG_STATUS_FAILED: return "FAILED";
    case OBJLOG_STATUS_SLOW_DOWN: return "SLOW_DOWN";
    }
    return "INVALID";
}

const char *objlog_producer_version(void) { return OBJLOG_VERSION_STR; }

void objlog_producer_stats_get(objlog_producer *p,
                               objlog_producer_stats *stats) {
    memset(stats, 0, sizeof(*stats));
    if (!p)
        return;
    stats->writes_completed = atomic_load(&p->ops.completed);
    stats->outcome_requests = p->fetch ? fetcher_requests(p->fetch) : 0;
    stats->unknown_retries = atomic_load(&p->ops.resends);
    stats->wrong_range_resends = atomic_load(&p->ops.rerouted);
    int q = p->rk ? rd_kafka_outq_len(p->rk) : 0;
    stats->kafka_queue = q > 0 ? (uint64_t)q : 0;
}

/* Delivery report, on the delivery-report thread. The write is in the log
 * (or never will be); either finish it here or hand it to the fetcher. */
static void producer_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
                           void *opaque) {
    objlog_producer *p = opaque;
    write_op *op = m->_private;
    (void)rk;
    writeops_reported(&p->ops, op);
    if (m->err) {
        /* A failed re-produce leaves the earlier, logged attempt's outcome
         * unknown: that write may still apply, so it is not FAILED; nor is
         * one that timed out or was purged in flight (possibly persisted). */
        int logged_before = op->res.offset >= 0 ||
                            rd_kafka_message_status(m) != RD_KAFKA_MSG_STATUS_NOT_PERSISTED;
        op->res.status = logged_before ? OBJLOG_STATUS_UNKNOWN
                                       : OBJLOG_STATUS_FAILED;
        snprintf(op->res.error_message, sizeof(op->res.error_message),
                 "kafka: %s%s%.32s", rd_kafka_err2str(m->err),
                 logged_before ? "; retry with request id " : "",
                 logged_before ? op->res.request_id_hex : "");
        writeop_complete(op);
        return;
    }
    op->res.partition = m->partition;
    op->res.offset = m->offset;
    token_part tp = {.partition = m->partition, .offset = m->offset};
    token_format(&tp, 1, op->res.token, sizeof(op->res.token));
    if (!p->fetch) {
        op->res.status = OBJLOG_STATUS_LOGGED;
        if (p->kept)
            keptsends_put(p->kept, op);
        writeop_complete(op);
        return;
    }
    op->deadline_ms = ptime_mono_ms() + p->conf->outcome_timeout_ms;
    fetcher_submit(p->fetch, op);
}

static void *producer_dr_main(void *arg) {
    objlog_producer *p = arg;
    while (!atomic_load(&p->stop))
        rd_kafka_poll(p->rk, 100);
    return NULL;
}

static void producer_kafka_log(const rd_kafka_t *rk, int level, const char *fac,
                              const char *buf) {
    objlog_producer *p = rd_kafka_opaque(rk);
    p->conf->log_cb(p->conf->log_opaque, level, fac, buf);
}

static void producer_log(objlog_producer *p, int level, const char *msg) {
    if (p->conf->log_cb)
        p->conf->log_cb(p->conf->log_opaque, level, "OBJLOG", msg);
    else
        fprintf(stderr, "objlog_producer: %s\n", msg);
}

static int producer_kafka_new(objlog_producer *p, char *errstr,
                              size_t errstr_size) {
    objlog_producer_conf *c = p->conf;
    char kerr[256];
    if (c->log_cb)
        rd_kafka_conf_set_log_cb(c->kconf, producer_kafka_log);
    rd_kafka_conf_set_dr_msg_cb(c->kconf, producer_dr_cb);
    rd_kafka_conf_set_opaque(c->kconf, p);
    /* Forced last so no kafka.* property can weaken the log's guarantees:
     * no duplicates, no reordering, no loss on leader change. */
    if ((c->bootstrap && rd_kafka_conf_set(c->kconf, "bootstrap.servers",
                                           c->bootstrap, kerr, sizeof(kerr))) ||
        rd_kafka_conf_set(c->kconf, "enable.idempotence", "true", kerr,
                          sizeof(kerr)) ||
        rd_kafka_conf_set(c->kconf, "acks", "all", kerr, sizeof(kerr))) {
        snprintf(errstr, errstr_size, "kafka config: %s", kerr);
        return -1;
    }
    size_t bsl = 0;
    if (rd_kafka_conf_get(c->kconf, "bootstrap.servers", NULL, &bsl) !=
            RD_KAFKA_CONF_OK || bsl <= 1) {
        snprintf(errstr, errstr_size, "bootstrap.servers is required");
        return -1;
    }
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c->kconf, kerr, sizeof(kerr));
    if (!p->rk) {
        snprintf(errstr, errstr_size, "kafka producer: %s", kerr);
        return -1;
    }
    c->kconf = NULL; /* now owned by rk */
    return 0;
}

static int producer_reroute(void *arg, write_op *op);

objlog_producer *objlog_producer_new(objlog_producer_conf *conf, char *errstr,
                                     size_t errstr_size) {
    if (!conf) {
        snprintf(errstr, errstr_size, "conf is required");
        return NULL;
    }
    if (conf->ack_applied && !conf->query_url) {
        snprintf(errstr, errstr_size, "query.url is required with ack=applied");
        objlog_producer_conf_destroy(conf);
        return NULL;
    }
    objlog_producer *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(errstr, errstr_size, "out of memory");
        objlog_producer_conf_destroy(conf);
        return NULL;
    }
    p->conf = conf;
    writeops_init(&p->ops);
    if (producer_kafka_new(p, errstr, errstr_size) < 0)
        goto fail;
    p->ops.rk = p->rk;
    p->ops.topic = conf->topic;
    rangemap *rm = control_load_rangemap(p->rk, conf->control_topic, conf->topic,
                                         PRODUCER_METADATA_TIMEOUT_MS, errstr, errstr_size);
    p->route = rm ? proute_new(rm) : NULL;
    if (!p->route) {
        if (rm)
            snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    if (conf->ack_applied) {
        p->fetch = fetcher_new(conf->query_url, conf->query_token, producer_reroute, p, errstr,
                               errstr_size);
        if (!p->fetch)
            goto fail;
    }
    if (quota_new(conf, &p->quota, errstr, errstr_size) < 0 ||
        padmit_new(conf, &p->admit, errstr, errstr_size) < 0)
        goto fail;
    if (pthread_create(&p->dr_thread, NULL, producer_dr_main, p) != 0) {
        snprintf(errstr, errstr_size, "delivery thread: %s", strerror(errno));
        goto fail;
    }
    p->dr_started = 1;
    return p;
fail:
    objlog_producer_destroy(p);
    return NULL;
}

int objlog_producer_flush(objlog_producer *p, int timeout_ms) {
    if (writeop_in_callback_refused("objlog_producer_flush", NULL, 0))
        return -1;
    return writeops_wait_idle(&p->ops, timeout_ms);
}

void objlog_producer_destroy(objlog_producer *p) {
    if (!p)
        return;
    /* The callback's own thread would have to be joined by itself. */
    char why[256];
    if (writeop_in_callback_refused("objlog_producer_destroy", why, sizeof(why))) {
        char msg[320];
        snprintf(msg, sizeof(msg), "%s; the producer was not destroyed", why);
        producer_log(p, 3, msg);
        return;
    }
    if (p->dr_started) {
        /* Writes the log has not taken within the outcome timeout never
         * will while we wait (brokers down: librdkafka would retry for
         * message.timeout.ms): purge them, so that their callbacks report
         * FAILED or UNKNOWN now and destroy returns in bounded time. */
        if (objlog_producer_flush(p, p->conf->outcome_timeout_ms) < 0)
            rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        objlog_producer_flush(p, -1);
        atomic_store(&p->stop, 1);
        pthread_join(p->dr_thread, NULL);
    }
    fetcher_destroy(p->fetch);
    keptsends_free(p->kept);
    quota_destroy(p->quota);
    padmit_destroy(p->admit);
    if (p->rk)
        rd_kafka_destroy(p->rk);
    proute_destroy(p->route);
    objlog_producer_conf_destroy(p->conf);
    writeops_destroy(&p->ops);
    free(p);
}

/* ---- the write path ---- */

static int request_id_fill(uint8_t out[OBJLOG_REQUEST_ID_LEN],
                           const objlog_write_opts *opts, char *errstr,
                           size_t errstr_size) {
    if (opts && opts->request_id) {
        memcpy(out, opts->request_id, OBJLOG_REQUEST_ID_LEN);
        return 0;
    }
    size_t got = 0;
    while (got < OBJLOG_REQUEST_ID_LEN) {
        ssize_t r = getrandom(out + got, OBJLOG_REQUEST_ID_LEN - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(errstr, errstr_size, "getrandom: %s", strerror(errno));
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

static void hex_encode(const uint8_t *in, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static write_op *op_new(objlog_producer *p, const objlog_write_opts *opts,
                        objlog_write_cb *cb, void *opaque, char *errstr,
                        size_t errstr_size) {
    write_op *op = calloc(1, sizeof(*op));
    if (!op) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    if (request_id_fill(op->res.request_id, opts, errstr, errstr_size) < 0) {
        free(op);
        return NULL;
    }
    hex_encode(op->res.request_id, OBJLOG_REQUEST_ID_LEN, op->res.request_id_hex);
    op->owner = &p->ops;
    op->cb = cb;
    op->opaque = opaque;
    op->res.status = OBJLOG_STATUS_UNKNOWN;
    op->res.partition = -1;
    op->res.offset = -1;
    return op;
}

/* Saves the exact bytes sent (same timestamp, same request id) on op, to
 * produce them again: for unknown.retries, or once a handoff's hold ends
 * (route.h). 0, or -1 out of memory. */
static int producer_save_bytes(write_op *op, const uint8_t *buf, size_t n, const keybuf *rk,
                               int32_t part) {
    op->payload = malloc(n ? n : 1);
    op->rkey = malloc(rk->len ? rk->len : 1);
    if (!op->payload || !op->rkey) {
        free(op->payload);
        free(op->rkey);
        op->payload = op->rkey = NULL;
        return -1;
    }
    memcpy(op->payload, buf, n);
    memcpy(op->rkey, rk->data, rk->len);
    op->payload_len = n;
    op->rkey_len = rk->len;
    op->send_partition = part;
    return 0;
}

/* ack=applied keeps the exact bytes: unknown.retries and a WrongRange
 * (the range moved) send them again; so does ack=logged when its bytes
 * are kept for the gateway (producer_keep_logged). */
static int producer_keep_bytes(objlog_producer *p, write_op *op,
                               const uint8_t *buf, size_t n, const keybuf *rk,
                               int32_t part) {
    if (!p->fetch && !p->kept)
        return 0;
    if (producer_save_bytes(op, buf, n, rk, part) < 0)
        return -1;
    op->retries_left = p->conf->unknown_retries;
    op->reroutes_left = PRODUCER_REROUTES;
    return 0;
}

/* Hands op's packed event (buf, n) to librdkafka for partition part; the
 * routing lock is held. 0, or -1 (errstr). */
static int producer_produce(objlog_producer *p, write_op *op, const uint8_t *buf, size_t n,
                            const keybuf *rk, int32_t part, char *errstr,
                            size_t errstr_size) {
    if (producer_keep_bytes(p, op, buf, n, rk, part) < 0) {
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    writeops_add(&p->ops, 1);
    writeops_sending(&p->ops, op);
    rd_kafka_resp_err_t err;
    for (;;) {
        err = rd_kafka_producev(
            p->rk, RD_KAFKA_V_TOPIC(p->conf->topic), RD_KAFKA_V_PARTITION(part),
            RD_KAFKA_V_KEY(rk->data, rk->len), RD_KAFKA_V_VALUE((void *)buf, n),
            RD_KAFKA_V_TIMESTAMP(op->msg_ts),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(op),
            RD_KAFKA_V_END);
        /* Backpressure: the delivery thread drains the queue, so waiting
         * here bounds memory instead of failing a valid write. */
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            break;
        usleep(1000);
    }
    if (!err)
        return 0;
    writeops_reported(&p->ops, op);
    free(op->payload);
    free(op->rkey);
    op->payload = op->rkey = NULL;
    writeops_add(&p->ops, -1);
    snprintf(errstr, errstr_size, "produce to %s [%d]: %s", p->conf->topic, (int)part,
             rd_kafka_err2str(err));
    return -1;
}

/* Routes op's packed event by the map rm (the routing lock held): parked
 * while a handoff holds its range, refused by admission, or produced. */
static int producer_route(objlog_producer *p, const rangemap *rm, Objlog__Event *ev,
                          write_op *op, const uint8_t *buf, size_t n, const keybuf *rk,
                          char *errstr, size_t errstr_size) {
    if (proute_is_held(p->route, rk->data, rk->len)) {
        if (producer_save_bytes(op, buf, n, rk, -1) < 0) {
            snprintf(errstr, errstr_size, "out of memory");
            return -1;
        }
        writeops_add(&p->ops, 1);
        proute_park(p->route, op);
        return 0;
    }
    int32_t part = rangemap_partition(rm, rk->data, rk->len);
    /* Admission (admit.c); a rate-limit change itself is never refused, so
     * a limit can always be lifted. */
    if (ev->op_case != OBJLOG__EVENT__OP_SET_RATE_LIMIT &&
        ev->op_case != OBJLOG__EVENT__OP_DELETE_RATE_LIMIT &&
        padmit_refuse(p->admit, ev->bucket, part, &op->res)) {
        writeops_add(&p->ops, 1);
        padmit_defer(p->admit, op);
        return 0;
    }
    return producer_produce(p, op, buf, n, rk, part, errstr, errstr_size);
}

/* Stamps ev with the op's identity, routes it and hands it to librdkafka.
 * On success op belongs to librdkafka until its delivery report (or to
 * the hold, or to admission). */
static int producer_send(objlog_producer *p, Objlog__Event *ev, write_op *op,
                         const objlog_write_opts *opts, char *errstr,
                         size_t errstr_size) {
    Objlog__Preconditions pre = OBJLOG__PRECONDITIONS__INIT;
    if (opts && (opts->if_match || opts->if_none_match)) {
        pre.if_match = (char *)(opts->if_match ? opts->if_match : "");
        pre.if_none_match = opts->if_none_match ? 1 : 0;
        ev->pre = &pre;
    }
    ev->request_id.data = op->res.request_id;
    ev->request_id.len = OBJLOG_REQUEST_ID_LEN;
    ev->timestamp_ms = wall_ms();

    keybuf rk;
    keybuf_init(&rk);
    if (keycodec_route_key(&rk, ev->bucket, strlen(ev->bucket), ev->key.data,
                           ev->key.len) < 0) {
        snprintf(errstr, errstr_size, "out of memory");
        keybuf_free(&rk);
        return -1;
    }
    const rangemap *rm = proute_begin(p->route);
    ev->range_epoch = rangemap_epoch(rm);
    size_t n = objlog__event__get_packed_size(ev);
    uint8_t *buf = malloc(n ? n : 1);
    int rc = -1;
    if (buf) {
        objlog__event__pack(ev, buf);
        rc = producer_route(p, rm, ev, op, buf, n, &rk, errstr, errstr_size);
    } else {
        snprintf(errstr, errstr_size, "out of memory");
    }
    proute_end(p->route);
    free(buf);
    keybuf_free(&rk);
    return rc;
}

/* ---- a handoff's events (producer_event.h) ---- */

int producer_write_to_partition(objlog_producer *p, Objlog__Event *ev, int32_t partition,
                                const uint8_t *kafka_key, size_t key_n,
                                const objlog_write_opts *opts, objlog_write_cb *cb,
                                void *opaque, char *errstr, size_t errstr_size) {
    write_op *op = op_new(p, opts, cb, opaque, errstr, errstr_size);
    if (!op)
        return -1;
    ev->request_id.data = op->res.request_id;
    ev->request_id.len = OBJLOG_REQUEST_ID_LEN;
    ev->timestamp_ms = wall_ms();
    ev->range_epoch = producer_map_epoch(p);
    size_t n = objlog__event__get_packed_size(ev);
    uint8_t *buf = malloc(n ? n : 1);
    keybuf rk;
    keybuf_init(&rk);
    int rc = -1;
    if (buf && keybuf_append(&rk, kafka_key, key_n) == 0) {
        objlog__event__pack(ev, buf);
        rc = producer_produce(p, op, buf, n, &rk, partition, errstr, errstr_size);
    } else {
        snprintf(errstr, errstr_size, "out of memory");
    }
    free(buf);
    keybuf_free(&rk);
    if (rc < 0)
        free(op);
    return rc;
}

/* ---- a handoff's hold (producer_event.h) ---- */

int producer_hold_range(objlog_producer *p, const uint8_t *start, size_t start_n,
                        const uint8_t *end, size_t end_n, int timeout_ms, char *errstr,
                        size_t errstr_size) {
    if (proute_hold(p->route, start, start_n, end, end_n) < 0) {
        snprintf(errstr, errstr_size, "a hold is already set (or out of memory)");
        return -1;
    }
    /* Everything routed before the hold reaches the log before the caller
     * appends its RangeOut: a barrier, not a flush, which under steady
     * writes to other ranges could wait for ever. */
    if (writeops_barrier(&p->ops, timeout_ms) == 0)
        return 0;
    producer_release_range(p, NULL);
    snprintf(errstr, errstr_size, "the writes sent before the handoff were not delivered "
                                  "within %d ms", timeout_ms);
    return -1;
}

void producer_release_range(objlog_producer *p, rangemap *rm) {
    proute_release_send(p->route, rm);
}

uint32_t producer_map_epoch(objlog_producer *p) { return proute_epoch(p->route); }

uint64_t producer_held_writes(objlog_producer *p) { return proute_parked_total(p->route); }

/* The fetcher's WrongRange hook (producer_int.h): a handoff moved the
 * write's range after it was routed. The write goes again, same bytes
 * but the epoch, by the newest map, read from the control topic when the
 * one in hand is not newer than the write's (the handoff publishes its
 * map once the target took the range: waited for, bounded). */
static int producer_reroute(void *arg, write_op *op) {
    objlog_producer *p = arg;
    char err[256];
    for (int waited = 0; waited <= PRODUCER_REROUTE_WAIT_MS; waited += 100) {
        int rc = proute_reroute(p->route, op);
        if (rc < 0)
            return -1;
        if (rc == 1) {
            if (writeop_produce(op) < 0)
                return -1;
            atomic_fetch_add(&p->ops.rerouted, 1);
            return 0;
        }
        rangemap *rm = control_load_rangemap(p->rk, p->conf->control_topic, p->conf->topic,
                                             PRODUCER_METADATA_TIMEOUT_MS, err, sizeof(err));
        if (rm && rangemap_epoch(rm) > proute_epoch(p->route)) {
            proute_set_map(p->route, rm);
            continue;
        }
        rangemap_destroy(rm);
        usleep(100 * 1000);
    }
    return -1;
}

int producer_keep_logged(objlog_producer *p, size_t n) {
    if (p->fetch || p->kept)
        return -1;
    p->kept = keptsends_new(n);
    return p->kept ? 0 : -1;
}

int producer_reroute_logged(objlog_producer *p, int32_t partition, int64_t offset,
                            const uint8_t rid[OBJLOG_REQUEST_ID_LEN], objlog_write_cb *cb,
                            void *opaque, char *errstr, size_t errstr_size) {
    objlog_write_opts opts = {.request_id = rid};
    write_op *op = p->kept ? op_new(p, &opts, cb, opaque, errstr, errstr_size) : NULL;
    if (!op)
        return -1;
    if (keptsends_get(p->kept, partition, offset, op) < 0) {
        snprintf(errstr, errstr_size, "the bytes of the write at %d.%lld are no longer kept",
                 partition, (long long)offset);
        free(op);
        return -1;
    }
    writeops_add(&p->ops, 1);
    if (producer_reroute(p, op) == 0)
        return 0;
    writeops_add(&p->ops, -1);
    snprintf(errstr, errstr_size, "no newer range map to send the write at %d.%lld by",
             partition, (long long)offset);
    free(op->payload);
    free(op->rkey);
    free(op);
    return -1;
}

void producer_set_rangemap(objlog_producer *p, rangemap *rm) { proute_set_map(p->route, rm); }

rangemap *producer_map_copy(objlog_producer *p) {
    const rangemap *rm = proute_begin(p->route);
    rangemap *c = rangemap_copy(rm);
    proute_end(p->route);
    return c;
}

static int producer_write(objlog_producer *p, Objlog__Event *ev,
                          const objlog_write_opts *opts, objlog_write_cb *cb,
                          void *opaque, char *errstr, size_t errstr_size) {
    write_op *op = op_new(p, opts, cb, opaque, errstr, errstr_size);
    if (!op)
        return -1;
    if (producer_send(p, ev, op, opts, errstr, errstr_size) < 0) {
        free(op);
        return -1;
    }
    return 0;
}

static int check_common(objlog_producer *p, const char *bucket,
                        const objlog_write_opts *opts, char *errstr,
                        size_t errstr_size);

int producer_write_event(objlog_producer *p, Objlog__Event *ev, int64_t msg_ts_ms,
                         const objlog_write_opts *opts, objlog_write_cb *cb,
                         void *opaque, char *errstr, size_t errstr_size) {
    if (check_common(p, ev->bucket, opts, errstr, errstr_size) < 0)
        return -1;
    if (ev->key.len && validate_key((const char *)ev->key.data, ev->key.len, errstr,
                                    errstr_size) < 0)
        return -1;
    write_op *op = op_new(p, opts, cb, opaque, errstr, errstr_size);
    if (!op)
        return -1;
    op->msg_ts = msg_ts_ms;
    if (producer_send(p, ev, op, opts, errstr, errstr_size) < 0) {
        free(op);
        return -1;
    }
    return 0;
}

static int check_common(objlog_producer *p, const char *bucket,
                        const objlog_write_opts *opts, char *errstr,
                        size_t errstr_size) {
    if (!p) {
        snprintf(errstr, errstr_size, "producer is NULL");
        return -1;
    }
    if (validate_bucket(bucket, errstr, errstr_size) < 0)
        return -1;
    if (opts && opts->if_match && !*opts->if_match) {
        snprintf(errstr, errstr_size, "invalid If-Match: empty etag");
        return -1;
    }
    if (opts && validate_etag("If-Match etag", opts->if_match, errstr, errstr_size) < 0)
        return -1;
    return 0;
}

/* A bucket event (no key: routed by route_key(bucket, "")); the caller
 * points the op_case's field at its message. */
static void event_bucket(Objlog__Event *ev, const char *bucket, Objlog__Event__OpCase op_case) {
    objlog__event__init(ev);
    ev->bucket = (char *)bucket;
    ev->op_case = op_case;
}

int objlog_producer_create_bucket_ex(objlog_producer *p, const char *bucket,
                                     const objlog_bucket_conf *conf,
                                     const objlog_write_opts *opts,
                                     objlog_write_cb *cb, void *opaque,
                                     char *errstr, size_t errstr_size) {
    if (check_common(p, bucket, opts, errstr, errstr_size) < 0)
        return -1;
    objlog_bucket_conf none = {0};
    if (!conf)
        conf = &none;
    if (conf->versioning < OBJLOG_VERSIONING_UNVERSIONED ||
        conf->versioning > OBJLOG_VERSIONING_SUSPENDED) {
        snprintf(errstr, errstr_size, "invalid versioning %d",
                 (int)conf->versioning);
        return -1;
    }
    Objlog__CreateBucket cb_op = OBJLOG__CREATE_BUCKET__INIT;
    Objlog__Quota quota = OBJLOG__QUOTA__INIT;
    cb_op.tenant = (char *)(conf->tenant ? conf->tenant : "");
    cb_op.versioning = (Objlog__Versioning)conf->versioning;
    cb_op.max_versions = conf->max_versions;
    if (attrs_acl_parse(conf->acl) < 0) {
        snprintf(errstr, errstr_size, "invalid ACL %.64s: not a canned ACL", conf->acl);
        return -1;
    }
    cb_op.acl = (char *)(conf->acl ? conf->acl : "");
    if (conf->quota_max_bytes || conf->quota_max_objects) {
        quota.max_bytes = conf->quota_max_bytes;
        quota.max_objects = conf->quota_max_objects;
        cb_op.quota = &quota;
    }
    Objlog__Event ev;
    event_bucket(&ev, bucket, OBJLOG__EVENT__OP_CREATE_BUCKET);
    ev.create_bucket = &cb_op;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

int objlog_producer_create_bucket(objlog_producer *p, const char *bucket,
                                  const char *tenant,
                                  objlog_versioning versioning,
                                  const objlog_write_opts *opts,
                                  objlog_write_cb *cb, void *opaque,
                                  char *errstr, size_t errstr_size) {
    objlog_bucket_conf conf = {.tenant = tenant, .versioning = versioning};
    return objlog_producer_create_bucket_ex(p, bucket, &conf, opts, cb, opaque,
                                            errstr, errstr_size);
}

int objlog_producer_set_versioning(objlog_producer *p, const char *bucket,
                                   objlog_versioning v,
                                   const objlog_write_opts *opts,
                                   objlog_write_cb *cb, void *opaque,
                                   char *errstr, size_t errstr_size) {
    if (check_common(p, bucket, opts, errstr, errstr_size) < 0)
        return -1;
    if (v != OBJLOG_VERSIONING_ENABLED && v != OBJLOG_VERSIONING_SUSPENDED) {
        snprintf(errstr, errstr_size,
                 "invalid versioning %d: only Enabled or Suspended (a bucket "
                 "never returns to unversioned)", (int)v);
        return -1;
    }
    Objlog__SetVersioning sv = OBJLOG__SET_VERSIONING__INIT;
    sv.status = (Objlog__Versioning)v;
    Objlog__Event ev;
    event_bucket(&ev, bucket, OBJLOG__EVENT__OP_SET_VERSIONING);
    ev.set_versioning = &sv;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

int objlog_producer_delete_bucket(objlog_producer *p, const char *bucket,
                                  const objlog_write_opts *opts,
                                  objlog_write_cb *cb, void *opaque,
                                  char *errstr, size_t errstr_size) {
    if (check_common(p, bucket, opts, errstr, errstr_size) < 0)
        return -1;
    Objlog__DeleteBucket db = OBJLOG__DELETE_BUCKET__INIT;
    Objlog__Event ev;
    event_bucket(&ev, bucket, OBJLOG__EVENT__OP_DELETE_BUCKET);
    ev.delete_bucket = &db;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

static const char *nz(const char *s) { return s ? s : ""; }

/* ObjectMeta view of meta: strings borrowed from the caller, the user
 * metadata and tag arrays owned by mb (freed by meta_build_free). The
 * tags sit after the user metadata in the same arrays. */
typedef struct meta_build {
    Objlog__ObjectMeta om;
    Objlog__UserMeta *um;
    Objlog__UserMeta **ump;
    Objlog__BlobPart *bp;
    Objlog__BlobPart **bpp;
} meta_build;

static void meta_build_pairs(Objlog__UserMeta *um, Objlog__UserMeta **ump,
                             const objlog_user_meta *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        objlog__user_meta__init(&um[i]);
        um[i].name = (char *)src[i].name;
        um[i].value = (char *)src[i].value;
        ump[i] = &um[i];
    }
}

/* meta's parts (objlog_blob_part) into mb->om.parts. */
static int meta_build_parts(meta_build *mb, const objlog_object_meta *meta, char *errstr,
                            size_t errstr_size) {
    size_t n = meta ? meta->n_parts : 0;
    mb->bp = NULL;
    mb->bpp = NULL;
    if (!n)
        return 0;
    mb->bp = calloc(n, sizeof(*mb->bp));
    mb->bpp = calloc(n, sizeof(*mb->bpp));
    if (!mb->bp || !mb->bpp) {
        free(mb->um);
        free(mb->ump);
        free(mb->bp);
        free(mb->bpp);
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        objlog__blob_part__init(&mb->bp[i]);
        mb->bp[i].blob_id = (char *)nz(meta->parts[i].blob_id);
        mb->bp[i].size = meta->parts[i].size;
        mb->bpp[i] = &mb->bp[i];
    }
    mb->om.n_parts = n;
    mb->om.parts = mb->bpp;
    return 0;
}

static int meta_build_init(meta_build *mb, const objlog_object_meta *meta,
                           char *errstr, size_t errstr_size) {
    objlog__object_meta__init(&mb->om);
    size_t nu = meta ? meta->n_user_meta : 0;
    size_t nt = meta ? meta->n_tags : 0;
    mb->um = calloc(nu + nt + 1, sizeof(*mb->um));
    mb->ump = calloc(nu + nt + 1, sizeof(*mb->ump));
    if (!mb->um || !mb->ump) {
        free(mb->um);
        free(mb->ump);
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    if (meta) {
        mb->om.size = meta->size;
        mb->om.etag = (char *)nz(meta->etag);
        mb->om.content_type = (char *)nz(meta->content_type);
        mb->om.blob_id = (char *)nz(meta->blob_id);
        mb->om.storage_class = (char *)nz(meta->storage_class);
        mb->om.checksum = (char *)nz(meta->checksum);
        mb->om.cache_control = (char *)nz(meta->cache_control);
        mb->om.content_disposition = (char *)nz(meta->content_disposition);
        mb->om.content_encoding = (char *)nz(meta->content_encoding);
        mb->om.content_language = (char *)nz(meta->content_language);
        mb->om.expires = (char *)nz(meta->expires);
        mb->om.acl = (char *)nz(meta->acl);
    }
    if (nu)
        meta_build_pairs(mb->um, mb->ump, meta->user_meta, nu);
    if (nt)
        meta_build_pairs(mb->um + nu, mb->ump + nu, meta->tags, nt);
    mb->om.n_user_metadata = nu;
    mb->om.user_metadata = nu ? mb->ump : NULL;
    mb->om.n_tags = nt;
    mb->om.tags = nt ? mb->ump + nu : NULL;
    return meta_build_parts(mb, meta, errstr, errstr_size);
}

static void meta_build_free(meta_build *mb) {
    free(mb->um);
    free(mb->ump);
    free(mb->bp);
    free(mb->bpp);
}

static int check_object(objlog_producer *p, const char *bucket,
                        const char *key, size_t key_len,
                        const objlog_write_opts *opts, char *errstr,
                        size_t errstr_size) {
    if (check_common(p, bucket, opts, errstr, errstr_size) < 0 ||
        validate_key(key, key_len, errstr, errstr_size) < 0)
        return -1;
    if (opts && opts->copy_source && strlen(opts->copy_source) > 2048) {
        snprintf(errstr, errstr_size, "copy_source is longer than 2048 bytes");
        return -1;
    }
    return 0;
}

static void event_object(Objlog__Event *ev, const char *bucket, const char *key,
                         size_t key_len, Objlog__Event__OpCase op_case) {
    event_bucket(ev, bucket, op_case);
    ev->key.data = (uint8_t *)key;
    ev->key.len = key_len;
}

/* PutObject and CreateUpload carry the same payload (one ObjectMeta) and
 * differ only in the op and whether the quota gate applies, so they share
 * one body to keep their validation and meta ownership from drifting. */
static int producer_write_meta(objlog_producer *p, const char *bucket,
                               const char *key, size_t key_len,
                               const objlog_object_meta *meta,
                               Objlog__Event__OpCase op_case,
                               const objlog_write_opts *opts,
                               objlog_write_cb *cb, void *opaque,
                               char *errstr, size_t errstr_size) {
    int put = op_case == OBJLOG__EVENT__OP_PUT_OBJECT;
    meta_build mb;
    if (check_object(p, bucket, key, key_len, opts, errstr, errstr_size) < 0 ||
        validate_meta(meta, errstr, errstr_size) < 0 ||
        (put && quota_check(p->quota, errstr, errstr_size) < 0) ||
        meta_build_init(&mb, meta, errstr, errstr_size) < 0)
        return -1;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    Objlog__CreateUpload cu = OBJLOG__CREATE_UPLOAD__INIT;
    Objlog__Event ev;
    event_object(&ev, bucket, key, key_len, op_case);
    if (put) {
        po.meta = &mb.om;
        po.copy_source = opts && opts->copy_source ? (char *)opts->copy_source : "";
        ev.put_object = &po;
    } else {
        cu.meta = &mb.om;
        ev.create_upload = &cu;
    }
    int rc = producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
    meta_build_free(&mb);
    return rc;
}

int objlog_producer_put_object(objlog_producer *p, const char *bucket,
                               const char *key, size_t key_len,
                               const objlog_object_meta *meta,
                               const objlog_write_opts *opts,
                               objlog_write_cb *cb, void *opaque,
                               char *errstr, size_t errstr_size) {
    return producer_write_meta(p, bucket, key, key_len, meta,
                               OBJLOG__EVENT__OP_PUT_OBJECT, opts, cb, opaque,
                               errstr, errstr_size);
}

int objlog_producer_delete_object(objlog_producer *p, const char *bucket,
                                  const char *key, size_t key_len,
                                  const char *version_id,
                                  const objlog_write_opts *opts,
                                  objlog_write_cb *cb, void *opaque,
                                  char *errstr, size_t errstr_size) {
    if (check_object(p, bucket, key, key_len, opts, errstr, errstr_size) < 0 ||
        validate_version_id(version_id, errstr, errstr_size) < 0)
        return -1;
    Objlog__DeleteObject del = OBJLOG__DELETE_OBJECT__INIT;
    del.version_id = (char *)nz(version_id);
    Objlog__Event ev;
    event_object(&ev, bucket, key, key_len, OBJLOG__EVENT__OP_DELETE_OBJECT);
    ev.delete_object = &del;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

int objlog_producer_create_upload(objlog_producer *p, const char *bucket,
                                  const char *key, size_t key_len,
                                  const objlog_object_meta *meta,
                                  const objlog_write_opts *opts,
                                  objlog_write_cb *cb, void *opaque,
                                  char *errstr, size_t errstr_size) {
    return producer_write_meta(p, bucket, key, key_len, meta,
                               OBJLOG__EVENT__OP_CREATE_UPLOAD, opts, cb,
                               opaque, errstr, errstr_size);
}

int objlog_producer_upload_part(objlog_producer *p, const char *bucket,
                                const char *key, size_t key_len,
                                const char *upload_id, uint32_t part_number,
                                uint64_t size, const char *etag,
                                const char *blob_id,
                                const objlog_write_opts *opts,
                                objlog_write_cb *cb, void *opaque,
                                char *errstr, size_t errstr_size) {
    if (check_object(p, bucket, key, key_len, opts, errstr, errstr_size) < 0 ||
        validate_upload_id(upload_id, errstr, errstr_size) < 0 ||
        validate_part_number(part_number, errstr, errstr_size) < 0 ||
        validate_part_etag(etag, errstr, errstr_size) < 0 ||
        validate_blob_id(blob_id, errstr, errstr_size) < 0)
        return -1;
    Objlog__UploadPart up = OBJLOG__UPLOAD_PART__INIT;
    up.upload_id = (char *)upload_id;
    up.part_number = part_number;
    up.size = size;
    up.etag = (char *)nz(etag);
    up.blob_id = (char *)nz(blob_id);
    Objlog__Event ev;
    event_object(&ev, bucket, key, key_len, OBJLOG__EVENT__OP_UPLOAD_PART);
    ev.upload_part = &up;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

int objlog_producer_complete_upload(objlog_producer *p, const char *bucket,
                                    const char *key, size_t key_len,
                                    const char *upload_id,
                                    const objlog_completed_part *parts,
                                    size_t n_parts,
                                    const objlog_write_opts *opts,
                                    objlog_write_cb *cb, void *opaque,
                                    char *errstr, size_t errstr_size) {
    if (check_object(p, bucket, key, key_len, opts, errstr, errstr_size) < 0 ||
        validate_upload_id(upload_id, errstr, errstr_size) < 0 ||
        validate_completed_parts(parts, n_parts, errstr, errstr_size) < 0 ||
        quota_check(p->quota, errstr, errstr_size) < 0)
        return -1;
    Objlog__CompletedPart *cp = calloc(n_parts, sizeof(*cp));
    Objlog__CompletedPart **cpp = calloc(n_parts, sizeof(*cpp));
    if (!cp || !cpp) {
        free(cp);
        free(cpp);
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n_parts; i++) {
        objlog__completed_part__init(&cp[i]);
        cp[i].part_number = parts[i].part_number;
        cp[i].etag = (char *)nz(parts[i].etag);
        cpp[i] = &cp[i];
    }
    Objlog__CompleteUpload cu = OBJLOG__COMPLETE_UPLOAD__INIT;
    cu.upload_id = (char *)upload_id;
    cu.n_parts = n_parts;
    cu.parts = cpp;
    Objlog__Event ev;
    event_object(&ev, bucket, key, key_len, OBJLOG__EVENT__OP_COMPLETE_UPLOAD);
    ev.complete_upload = &cu;
    int rc = producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
    free(cp);
    free(cpp);
    return rc;
}

int objlog_producer_abort_upload(objlog_producer *p, const char *bucket,
                                 const char *key, size_t key_len,
                                 const char *upload_id,
                                 const objlog_write_opts *opts,
                                 objlog_write_cb *cb, void *opaque,
                                 char *errstr, size_t errstr_size) {
    if (check_object(p, bucket, key, key_len, opts, errstr, errstr_size) < 0 ||
        validate_upload_id(upload_id, errstr, errstr_size) < 0)
        return -1;
    Objlog__AbortUpload au = OBJLOG__ABORT_UPLOAD__INIT;
    au.upload_id = (char *)upload_id;
    Objlog__Event ev;
    event_object(&ev, bucket, key, key_len, OBJLOG__EVENT__OP_ABORT_UPLOAD);
    ev.abort_upload = &au;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

int objlog_producer_set_quota(objlog_producer *p, const char *bucket,
                              uint64_t max_bytes, uint64_t max_objects,
                              const objlog_write_opts *opts,
                              objlog_write_cb *cb, void *opaque,
                              char *errstr, size_t errstr_size) {
    if (check_common(p, bucket, opts, errstr, errstr_size) < 0)
        return -1;
    Objlog__Quota q = OBJLOG__QUOTA__INIT;
    q.max_bytes = max_bytes;
    q.max_objects = max_objects;
    Objlog__SetQuota sq = OBJLOG__SET_QUOTA__INIT;
    sq.quota = &q;
    Objlog__Event ev;
    event_bucket(&ev, bucket, OBJLOG__EVENT__OP_SET_QUOTA);
    ev.set_quota = &sq;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}


/* ---- attribute indexes: bucket events, routed by route_key(b, "") */

static int index_name_given(const char *what, const char *v, char *errstr, size_t es) {
    if (v && *v)
        return 0;
    snprintf(errstr, es, "index %s is required", what);
    return -1;
}

int objlog_producer_put_index(objlog_producer *p, const char *bucket, const char *name,
                              const char *field, int with_last_modified,
                              const objlog_write_opts *opts, objlog_write_cb *cb,
                              void *opaque, char *errstr, size_t errstr_size) {
    if (check_common(p, bucket, opts, errstr, errstr_size) < 0 ||
        index_name_given("name", name, errstr, errstr_size) < 0 ||
        index_name_given("field", field, errstr, errstr_size) < 0)
        return -1;
    Objlog__PutIndex pi = OBJLOG__PUT_INDEX__INIT;
    pi.name = (char *)name;
    pi.field = (char *)field;
    pi.with_last_modified = with_last_modified != 0;
    Objlog__Event ev;
    event_bucket(&ev, bucket, OBJLOG__EVENT__OP_PUT_INDEX);
    ev.put_index = &pi;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

int objlog_producer_drop_index(objlog_producer *p, const char *bucket, const char *name,
                               const objlog_write_opts *opts, objlog_write_cb *cb,
                               void *opaque, char *errstr, size_t errstr_size) {
    if (check_common(p, bucket, opts, errstr, errstr_size) < 0 ||
        index_name_given("name", name, errstr, errstr_size) < 0)
        return -1;
    Objlog__DropIndex di = OBJLOG__DROP_INDEX__INIT;
    di.name = (char *)name;
    Objlog__Event ev;
    event_bucket(&ev, bucket, OBJLOG__EVENT__OP_DROP_INDEX);
    ev.drop_index = &di;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

int objlog_producer_build_index(objlog_producer *p, const char *bucket, const char *name,
                                uint32_t max_keys, const objlog_write_opts *opts,
                                objlog_write_cb *cb, void *opaque, char *errstr,
                                size_t errstr_size) {
    if (check_common(p, bucket, opts, errstr, errstr_size) < 0 ||
        index_name_given("name", name, errstr, errstr_size) < 0)
        return -1;
    Objlog__BuildIndex bi = OBJLOG__BUILD_INDEX__INIT;
    bi.name = (char *)name;
    bi.max_keys = max_keys;
    Objlog__Event ev;
    event_bucket(&ev, bucket, OBJLOG__EVENT__OP_BUILD_INDEX);
    ev.build_index = &bi;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

/* SetRateLimit / DeleteRateLimit: stored by the state
 * machine, enforced at the edge (objlogd, and this library's admission). */
int objlog_producer_set_rate_limit(objlog_producer *p, const char *bucket,
                                   const objlog_rate_limit *limit,
                                   const objlog_write_opts *opts,
                                   objlog_write_cb *cb, void *opaque,
                                   char *errstr, size_t errstr_size) {
    if (check_common(p, bucket, opts, errstr, errstr_size) < 0)
        return -1;
    Objlog__RateLimit rl = OBJLOG__RATE_LIMIT__INIT;
    Objlog__SetRateLimit set = OBJLOG__SET_RATE_LIMIT__INIT;
    Objlog__DeleteRateLimit del = OBJLOG__DELETE_RATE_LIMIT__INIT;
    Objlog__Event ev;
    if (!limit) {
        event_bucket(&ev, bucket, OBJLOG__EVENT__OP_DELETE_RATE_LIMIT);
        ev.delete_rate_limit = &del;
        return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
    }
    rl.rps = limit->rps;
    rl.burst = limit->burst;
    rl.write_rps = limit->write_rps;
    rl.write_burst = limit->write_burst;
    set.limit = &rl;
    event_bucket(&ev, bucket, OBJLOG__EVENT__OP_SET_RATE_LIMIT);
    ev.set_rate_limit = &set;
    return producer_write(p, &ev, opts, cb, opaque, errstr, errstr_size);
}

