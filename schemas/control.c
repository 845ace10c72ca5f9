/* control.c: loading and publishing the range map (control.h). The control
 * topic is compacted and has one partition, so "newest" is simply the last
 * message with the rangemap key below the high watermark. */
#include "control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "kafkaconf.h"

/* A control message's delivery, told to the status its opaque points to
 * (control_produce_sync). */
static void control_delivered(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    (void)opaque;
    if (m->_private)
        *(rd_kafka_resp_err_t *)m->_private = m->err;
}

/* The embedded log's producer is this client plus the daemon's logger:
 * one place for the settings a short-lived handle needs. */
rd_kafka_t *control_client_new_logged(const char *brokers,
                                      void (*log_cb)(const rd_kafka_t *, int,
                                                     const char *, const char *),
                                      const char *what, char *errstr,
                                      size_t errstr_size) {
    char tmp[256];
    rd_kafka_conf_t *conf = objlog_kafka_conf_new(brokers, errstr, errstr_size);
    if (!conf)
        return NULL;
    if (log_cb)
        rd_kafka_conf_set_log_cb(conf, log_cb);
    rd_kafka_conf_set_dr_msg_cb(conf, control_delivered);
    if (rd_kafka_conf_set(conf, "log_level", "3", tmp, sizeof(tmp)) ||
        rd_kafka_conf_set(conf, "allow.auto.create.topics", "false", tmp,
                          sizeof(tmp))) {
        snprintf(errstr, errstr_size, "%s: %s", what, tmp);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, tmp, sizeof(tmp));
    if (!rk) {
        snprintf(errstr, errstr_size, "%s: %s", what, tmp);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

rd_kafka_t *control_client_new(const char *brokers, char *errstr,
                               size_t errstr_size) {
    return control_client_new_logged(brokers, NULL, "kafka client", errstr, errstr_size);
}

int control_topic_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms,
                             char *errstr, size_t errstr_size) {
    /* Ask for all topics rather than naming this one: a metadata request
     * that names a topic can make a broker auto-create it. */
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
    if (err) {
        snprintf(errstr, errstr_size, "metadata for %s: %s", topic,
                 rd_kafka_err2str(err));
        return -1;
    }
    int n = -1;
    for (int i = 0; i < md->topic_cnt; i++) {
        const struct rd_kafka_metadata_topic *t = &md->topics[i];
        if (strcmp(t->topic, topic) != 0)
            continue;
        if (!t->err && t->partition_cnt > 0)
            n = t->partition_cnt;
        break;
    }
    if (n < 0)
        snprintf(errstr, errstr_size, "topic %s does not exist", topic);
    rd_kafka_metadata_destroy(md);
    return n;
}

/* Called for each message of the control topic, oldest first. */
typedef void (*control_visit)(const rd_kafka_message_t *m, void *arg);

/* Errors a topic has for a moment after it was made, or while its leader
 * moves: the next try, a little later, answers. */
static int control_transient(rd_kafka_resp_err_t err) {
    return err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
           err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
           err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
           err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
           err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
}

/* Partition 0's watermarks, retried while the error is transient: nodes
 * that start together find the topics one of them has just made. */
static rd_kafka_resp_err_t control_watermarks(rd_kafka_t *c, const char *topic,
                                              int timeout_ms, int64_t *lo, int64_t *hi) {
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(c, topic, 0, lo, hi,
                                                                   timeout_ms);
        clock_gettime(CLOCK_MONOTONIC, &now);
        long used = (long)(now.tv_sec - t0.tv_sec) * 1000 +
                    (now.tv_nsec - t0.tv_nsec) / 1000000L;
        if (!control_transient(err) || used + 200 >= timeout_ms)
            return err;
        struct timespec pause = {0, 200 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* Reads partition 0 of control_topic from the start to the high watermark
 * with a temporary consumer, handing every message to visit. 0 or -1. */
static int control_scan(const char *brokers, const char *topic, int timeout_ms,
                        control_visit visit, void *arg, char *errstr,
                        size_t errstr_size) {
    char tmp[512];
    rd_kafka_conf_t *conf = objlog_kafka_conf_new(brokers, errstr, errstr_size);
    if (!conf)
        return -1;
    if (rd_kafka_conf_set(conf, "group.id", "objlog-control-reader", tmp, sizeof(tmp)) ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", tmp, sizeof(tmp))) {
        snprintf(errstr, errstr_size, "control reader config: %s", tmp);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, tmp, sizeof(tmp));
    if (!c) {
        snprintf(errstr, errstr_size, "control reader: %s", tmp);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    int64_t lo = 0, hi = 0;
    int rc = 0;
    rd_kafka_resp_err_t err = control_watermarks(c, topic, timeout_ms, &lo, &hi);
    if (err) {
        snprintf(errstr, errstr_size, "control topic %s: %s", topic,
                 rd_kafka_err2str(err));
        rc = -1;
    } else if (hi > lo) {
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(tp, topic, 0)->offset = lo;
        rd_kafka_assign(c, tp);
        rd_kafka_topic_partition_list_destroy(tp);
    }
    for (int64_t next = lo; rc == 0 && next < hi;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, timeout_ms);
        if (!m) {
            snprintf(errstr, errstr_size, "control topic %s: timed out at offset %lld of %lld",
                     topic, (long long)next, (long long)hi);
            rc = -1;
        } else if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            snprintf(errstr, errstr_size, "control topic %s: %s", topic,
                     rd_kafka_message_errstr(m));
            rc = -1;
        } else if (!m->err) {
            next = m->offset + 1;
            visit(m, arg);
        }
        if (m)
            rd_kafka_message_destroy(m);
    }
    /* Assigned, never subscribed, nothing committed: no close to wait for
     * (it would wait on a group coordinator that may not answer). */
    rd_kafka_destroy_flags(c, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    return rc;
}

static int control_key_is(const rd_kafka_message_t *m, const char *key) {
    return m->key_len == strlen(key) && !memcmp(m->key, key, m->key_len) &&
           m->len > 0;
}

/* The newest map under each key: the current one and the genesis. */
typedef struct control_maps {
    rangemap *current, *genesis;
} control_maps;

static void visit_rangemap(const rd_kafka_message_t *m, void *arg) {
    control_maps *cm = arg;
    char tmp[256];
    rangemap **slot = control_key_is(m, CONTROL_RANGEMAP_KEY)  ? &cm->current
                      : control_key_is(m, CONTROL_GENESIS_KEY) ? &cm->genesis
                                                               : NULL;
    if (!slot)
        return;
    rangemap *n = rangemap_decode(m->payload, m->len, tmp, sizeof(tmp));
    if (n) {
        rangemap_destroy(*slot);
        *slot = n;
    }
}

static int control_brokers(rd_kafka_t *rk, char *out, size_t size,
                           char *errstr, size_t errstr_size) {
    rd_kafka_conf_t *c = (rd_kafka_conf_t *)rd_kafka_conf(rk);
    if (rd_kafka_conf_get(c, "bootstrap.servers", out, &size) != RD_KAFKA_CONF_OK) {
        snprintf(errstr, errstr_size, "no bootstrap.servers");
        return -1;
    }
    return 0;
}

/* 0 if every range of rm names a partition below parts, else -1. */
static int control_check_parts(const rangemap *rm, int parts, const char *events_topic,
                               char *errstr, size_t errstr_size) {
    for (int i = 0; i < rangemap_count(rm); i++) {
        const uint8_t *s, *e;
        size_t sl, el;
        int p;
        rangemap_entry(rm, i, &s, &sl, &e, &el, &p);
        if (p < 0 || p >= parts) {
            snprintf(errstr, errstr_size, "range map epoch %u names partition %d but %s has %d",
                     rangemap_epoch(rm), p, events_topic, parts);
            return -1;
        }
    }
    return 0;
}

rangemap *control_load_rangemaps(rd_kafka_t *rk, const char *control_topic,
                                 const char *events_topic, int timeout_ms,
                                 rangemap **genesis, char *errstr, size_t errstr_size) {
    char brokers[1024];
    if (genesis)
        *genesis = NULL;
    if (control_brokers(rk, brokers, sizeof(brokers), errstr, errstr_size) < 0)
        return NULL;
    int parts = control_topic_partitions(rk, events_topic, timeout_ms, errstr,
                                         errstr_size);
    if (parts < 0)
        return NULL;
    control_maps cm = {NULL, NULL};
    if (control_scan(brokers, control_topic, timeout_ms, visit_rangemap, &cm,
                     errstr, errstr_size) < 0)
        goto fail;
    if (!cm.current)
        cm.current = rangemap_new_default(parts, CONTROL_DEFAULT_EPOCH);
    /* A log from before handoffs has no genesis key: its one map is it. */
    if (!cm.genesis && cm.current && rangemap_epoch(cm.current) == CONTROL_DEFAULT_EPOCH)
        cm.genesis = rangemap_copy(cm.current);
    if (!cm.current || (genesis && !cm.genesis)) {
        snprintf(errstr, errstr_size, cm.current ? "control topic %s: range map epoch %u "
                                                   "but no genesis map"
                                                 : "range map: out of memory",
                 control_topic, cm.current ? rangemap_epoch(cm.current) : 0);
        goto fail;
    }
    if (control_check_parts(cm.current, parts, events_topic, errstr, errstr_size) < 0 ||
        (cm.genesis &&
         control_check_parts(cm.genesis, parts, events_topic, errstr, errstr_size) < 0))
        goto fail;
    if (genesis)
        *genesis = cm.genesis;
    else
        rangemap_destroy(cm.genesis);
    return cm.current;
fail:
    rangemap_destroy(cm.current);
    rangemap_destroy(cm.genesis);
    return NULL;
}

rangemap *control_load_rangemap(rd_kafka_t *rk, const char *control_topic,
                                const char *events_topic, int timeout_ms,
                                char *errstr, size_t errstr_size) {
    return control_load_rangemaps(rk, control_topic, events_topic, timeout_ms, NULL, errstr,
                                  errstr_size);
}

static long control_ms_since(const struct timespec *t0) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* One message to partition 0 of topic, delivered (its report read, not
 * only sent) within timeout_ms, on a handle of control_client_new*.
 * Right after a topic is made, a broker that has not heard of it yet can
 * make the client take it for missing ("Unknown topic", before or after
 * sending): such errors are retried every 200 ms. The status the report
 * writes lives here, so a message still queued at the timeout is purged
 * (and its report served) before returning. */
static rd_kafka_resp_err_t control_produce_sync(rd_kafka_t *rk, const char *topic,
                                                const char *key, const void *buf, size_t n,
                                                int timeout_ms) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        rd_kafka_resp_err_t status = RD_KAFKA_RESP_ERR__IN_PROGRESS;
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
            RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE((void *)buf, n),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(&status),
            RD_KAFKA_V_END);
        if (!err) {
            long left = timeout_ms - control_ms_since(&t0);
            err = rd_kafka_flush(rk, left > 0 ? (int)left : 0);
            if (err) {
                rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_flush(rk, 1000);
            }
            if (!err)
                err = status == RD_KAFKA_RESP_ERR__IN_PROGRESS ? RD_KAFKA_RESP_ERR__FAIL
                                                               : status;
        }
        if (!control_transient(err) || control_ms_since(&t0) + 200 >= timeout_ms)
            return err;
        rd_kafka_poll(rk, 200);
    }
}

int control_publish_rangemap(rd_kafka_t *rk, const char *control_topic,
                             const rangemap *rm, int timeout_ms, char *errstr,
                             size_t errstr_size) {
    uint8_t *buf = NULL;
    size_t n = 0;
    if (rangemap_encode(rm, &buf, &n) < 0) {
        snprintf(errstr, errstr_size, "range map: out of memory");
        return -1;
    }
    /* The first map is also the genesis: every partition's ranges before
     * its first handoff, kept under a key of its own. */
    rd_kafka_resp_err_t err =
        rangemap_epoch(rm) == CONTROL_DEFAULT_EPOCH
            ? control_produce_sync(rk, control_topic, CONTROL_GENESIS_KEY, buf, n, timeout_ms)
            : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (!err)
        err = control_produce_sync(rk, control_topic, CONTROL_RANGEMAP_KEY, buf, n,
                                   timeout_ms);
    free(buf);
    if (err) {
        snprintf(errstr, errstr_size, "publish range map: %s", rd_kafka_err2str(err));
        return -1;
    }
    return 0;
}

/* ---- watching the map ---- */

struct control_watch {
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
};

control_watch *control_watch_new(const char *brokers, const char *control_topic,
                                 void (*log_cb)(const rd_kafka_t *, int, const char *,
                                                const char *),
                                 char *errstr, size_t errstr_size) {
    char tmp[512];
    control_watch *w = calloc(1, sizeof(*w));
    rd_kafka_conf_t *conf = w ? objlog_kafka_conf_new(brokers, errstr, errstr_size) : NULL;
    if (!conf) {
        if (!w)
            snprintf(errstr, errstr_size, "control watch: out of memory");
        free(w);
        return NULL;
    }
    if (log_cb)
        rd_kafka_conf_set_log_cb(conf, log_cb);
    if (rd_kafka_conf_set(conf, "log_level", "3", tmp, sizeof(tmp))) {
        snprintf(errstr, errstr_size, "control watch config: %s", tmp);
        rd_kafka_conf_destroy(conf);
        free(w);
        return NULL;
    }
    w->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, tmp, sizeof(tmp));
    if (!w->rk) {
        snprintf(errstr, errstr_size, "control watch: %s", tmp);
        rd_kafka_conf_destroy(conf);
        free(w);
        return NULL;
    }
    w->rkt = rd_kafka_topic_new(w->rk, control_topic, NULL);
    if (!w->rkt || rd_kafka_consume_start(w->rkt, 0, RD_KAFKA_OFFSET_BEGINNING) < 0) {
        snprintf(errstr, errstr_size, "control watch on %s: %s", control_topic,
                 rd_kafka_err2str(rd_kafka_last_error()));
        control_watch_free(w);
        return NULL;
    }
    return w;
}

void control_watch_free(control_watch *w) {
    if (!w)
        return;
    if (w->rkt) {
        rd_kafka_consume_stop(w->rkt, 0);
        rd_kafka_topic_destroy(w->rkt);
    }
    rd_kafka_destroy(w->rk);
    free(w);
}

rangemap *control_watch_poll(control_watch *w) {
    rangemap *newest = NULL;
    char tmp[256];
    rd_kafka_message_t *m;
    while ((m = rd_kafka_consume(w->rkt, 0, 0)) != NULL) {
        rangemap *rm = !m->err && control_key_is(m, CONTROL_RANGEMAP_KEY)
                           ? rangemap_decode(m->payload, m->len, tmp, sizeof(tmp))
                           : NULL;
        if (rm && (!newest || rangemap_epoch(rm) > rangemap_epoch(newest))) {
            rangemap_destroy(newest);
            newest = rm;
        } else {
            rangemap_destroy(rm);
        }
        rd_kafka_message_destroy(m);
    }
    return newest;
}

/* ---- log id ---- */

static void visit_logid(const rd_kafka_message_t *m, void *arg) {
    control_logid *id = arg;
    char v[96];
    if (!control_key_is(m, CONTROL_LOGID_KEY) || m->len >= sizeof(v))
        return;
    memcpy(v, m->payload, m->len);
    v[m->len] = '\0';
    char hex[40], kind[16];
    if (sscanf(v, "v1 %39s %15s", hex, kind) != 2 || strlen(hex) != 32)
        return;
    memcpy(id->id, hex, 33);
    id->embedded = strcmp(kind, "embedded") == 0;
}

int control_load_logid(rd_kafka_t *rk, const char *control_topic,
                       int timeout_ms, control_logid *out, char *errstr,
                       size_t errstr_size) {
    char brokers[1024];
    memset(out, 0, sizeof(*out));
    if (control_brokers(rk, brokers, sizeof(brokers), errstr, errstr_size) < 0 ||
        control_scan(brokers, control_topic, timeout_ms, visit_logid, out, errstr,
                     errstr_size) < 0)
        return -1;
    return out->id[0] ? 1 : 0;
}

int control_publish_logid(rd_kafka_t *rk, const char *control_topic,
                          int embedded, int timeout_ms, control_logid *out,
                          char *errstr, size_t errstr_size) {
    uint8_t raw[16];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        snprintf(errstr, errstr_size, "getrandom: %s", strerror(errno));
        return -1;
    }
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < 16; i++)
        snprintf(out->id + 2 * i, 3, "%02x", raw[i]);
    out->embedded = embedded;
    char v[96];
    int n = snprintf(v, sizeof(v), "v1 %s %s", out->id, embedded ? "embedded" : "kafka");
    rd_kafka_resp_err_t err =
        control_produce_sync(rk, control_topic, CONTROL_LOGID_KEY, v, (size_t)n, timeout_ms);
    if (err) {
        snprintf(errstr, errstr_size, "publish log id: %s", rd_kafka_err2str(err));
        return -1;
    }
    return 0;
}
