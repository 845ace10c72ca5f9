/* topics.c: creating and checking objlog's topics (topics.h) with
 * librdkafka's Admin API: CreateTopics for what is missing, DescribeConfigs
 * plus metadata (replica counts) for what exists. One short-lived producer
 * handle per call; nothing here runs on a hot path. */
#include "topics.h"

#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "control.h"

typedef struct topic_want {
    const char *name;
    int partitions;
    const char *const *configs; /* name, value, ..., NULL */
} topic_want;

static const char *const events_configs[] = {
    "cleanup.policy", "delete",
    "retention.ms", "-1",
    "retention.bytes", "-1",
    "message.timestamp.type", "LogAppendTime",
    "unclean.leader.election.enable", "false",
    NULL};
static const char *const control_configs[] = {
    "cleanup.policy", "compact",
    "unclean.leader.election.enable", "false",
    NULL};
static const char *const dlq_configs[] = {
    "cleanup.policy", "delete",
    "retention.ms", "-1",
    NULL};

/* All topics' metadata (naming one could auto-create it). */
static const struct rd_kafka_metadata *topics_metadata(rd_kafka_t *rk,
                                                       const char *brokers,
                                                       int timeout_ms,
                                                       char *errstr, size_t es) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
    if (err) {
        snprintf(errstr, es, "cannot reach Kafka at %s: %s", brokers,
                 rd_kafka_err2str(err));
        return NULL;
    }
    return md;
}

static const struct rd_kafka_metadata_topic *
topics_find(const struct rd_kafka_metadata *md, const char *name) {
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, name) == 0 && !md->topics[i].err &&
            md->topics[i].partition_cnt > 0)
            return &md->topics[i];
    return NULL;
}

static int topics_replication(const objlog_topics *t,
                              const struct rd_kafka_metadata *md) {
    if (t->replication > 0)
        return t->replication;
    return md->broker_cnt < 3 ? md->broker_cnt : 3;
}

static void want_list(const objlog_topics *t, int events_partitions,
                      topic_want out[3]) {
    out[0] = (topic_want){t->events, events_partitions, events_configs};
    out[1] = (topic_want){t->control, 1, control_configs};
    out[2] = (topic_want){t->dlq, 1, dlq_configs};
}

static rd_kafka_NewTopic_t *new_topic(const topic_want *w, int rf, char *errstr,
                                      size_t es) {
    char tmp[256];
    rd_kafka_NewTopic_t *nt =
        rd_kafka_NewTopic_new(w->name, w->partitions, rf, tmp, sizeof(tmp));
    if (!nt) {
        snprintf(errstr, es, "topic %s: %s", w->name, tmp);
        return NULL;
    }
    char isr[16];
    snprintf(isr, sizeof(isr), "%d", rf < 2 ? 1 : 2);
    rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", isr);
    for (int i = 0; w->configs[i]; i += 2)
        rd_kafka_NewTopic_set_config(nt, w->configs[i], w->configs[i + 1]);
    return nt;
}

/* Sends one CreateTopics request for nts and waits for its result. Topics
 * created by a concurrent objlogd in the meantime count as existing. Marks
 * created[i]. 0 or -1 (errstr). */
static int create_send(rd_kafka_t *rk, rd_kafka_NewTopic_t **nts,
                       const char *const *names, int n, int timeout_ms,
                       int *created, char *errstr, size_t es) {
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    char tmp[256];
    rd_kafka_AdminOptions_set_operation_timeout(o, timeout_ms, tmp, sizeof(tmp));
    rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, tmp, sizeof(tmp));
    rd_kafka_CreateTopics(rk, nts, (size_t)n, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
    int rc = 0;
    if (!ev) {
        snprintf(errstr, es, "create topics: no answer within %d ms", timeout_ms);
        rc = -1;
    } else if (rd_kafka_event_error(ev)) {
        snprintf(errstr, es, "create topics: %s", rd_kafka_event_error_string(ev));
        rc = -1;
    } else {
        size_t cnt = 0;
        const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(
            rd_kafka_event_CreateTopics_result(ev), &cnt);
        for (size_t i = 0; i < cnt && rc == 0; i++) {
            rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
            const char *name = rd_kafka_topic_result_name(res[i]);
            for (int j = 0; j < n; j++)
                if (strcmp(names[j], name) == 0)
                    created[j] = !e;
            if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                const char *msg = rd_kafka_topic_result_error_string(res[i]);
                snprintf(errstr, es, "create topic %s: %s", name,
                         msg ? msg : rd_kafka_err2str(e));
                rc = -1;
            }
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    return rc;
}

/* Metadata of new topics reaches every broker a moment after CreateTopics
 * answers; wait until the client sees all three with their partitions. */
static int create_wait_visible(rd_kafka_t *rk, const char *brokers,
                               const topic_want want[3], int timeout_ms,
                               char *errstr, size_t es) {
    for (int waited = 0;; waited += 100) {
        const struct rd_kafka_metadata *md =
            topics_metadata(rk, brokers, timeout_ms, errstr, es);
        if (!md)
            return -1;
        int seen = 0;
        for (int i = 0; i < 3; i++) {
            const struct rd_kafka_metadata_topic *mt = topics_find(md, want[i].name);
            seen += mt && mt->partition_cnt >= want[i].partitions;
        }
        rd_kafka_metadata_destroy(md);
        if (seen == 3)
            return 0;
        if (waited >= timeout_ms) {
            snprintf(errstr, es, "created topics not visible after %d ms", timeout_ms);
            return -1;
        }
        rd_kafka_poll(rk, 100);
    }
}

static int publish_default_rangemap(rd_kafka_t *rk, const char *control,
                                    int partitions, int timeout_ms,
                                    char *errstr, size_t es) {
    rangemap *rm = rangemap_new_default(partitions, CONTROL_DEFAULT_EPOCH);
    if (!rm) {
        snprintf(errstr, es, "range map: out of memory");
        return -1;
    }
    int rc = control_publish_rangemap(rk, control, rm, timeout_ms, errstr, es);
    rangemap_destroy(rm);
    return rc;
}

int objlog_topics_create(const char *brokers, const objlog_topics *t,
                         int timeout_ms, FILE *report, char *errstr,
                         size_t errstr_size) {
    rd_kafka_t *rk = control_client_new(brokers, errstr, errstr_size);
    if (!rk)
        return -1;
    const struct rd_kafka_metadata *md =
        topics_metadata(rk, brokers, timeout_ms, errstr, errstr_size);
    if (!md) {
        rd_kafka_destroy(rk);
        return -1;
    }
    const struct rd_kafka_metadata_topic *ev = topics_find(md, t->events);
    int events_parts = ev ? ev->partition_cnt : t->partitions;
    int rf = topics_replication(t, md);
    topic_want want[3];
    want_list(t, events_parts, want);
    rd_kafka_NewTopic_t *nts[3];
    const char *names[3];
    int idx[3], n = 0, rc = 0, created[3] = {0, 0, 0};
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (topics_find(md, want[i].name))
            continue;
        if (!(nts[n] = new_topic(&want[i], rf, errstr, errstr_size)))
            rc = -1;
        else
            names[n] = want[i].name, idx[n++] = i;
    }
    rd_kafka_metadata_destroy(md);
    if (rc == 0 && n > 0)
        rc = create_send(rk, nts, names, n, timeout_ms, created, errstr, errstr_size);
    if (rc == 0 && n > 0)
        rc = create_wait_visible(rk, brokers, want, timeout_ms, errstr, errstr_size);
    int made = 0;
    for (int j = 0; j < n; j++) {
        if (rc == 0 && created[j]) {
            made++;
            if (report)
                fprintf(report, "created topic %s: %d partition%s, replication %d\n",
                        want[idx[j]].name, want[idx[j]].partitions,
                        want[idx[j]].partitions == 1 ? "" : "s", rf);
            /* Only the creator of the control topic publishes the default
             * map, so concurrent starts never write two. */
            if (idx[j] == 1)
                rc = publish_default_rangemap(rk, t->control, events_parts,
                                              timeout_ms, errstr, errstr_size);
            control_logid id;
            if (idx[j] == 1 && rc == 0)
                rc = control_publish_logid(rk, t->control, 0, timeout_ms, &id,
                                           errstr, errstr_size);
        }
        rd_kafka_NewTopic_destroy(nts[j]);
    }
    rd_kafka_destroy(rk);
    return rc < 0 ? -1 : made;
}

/* ---- checking ---- */

typedef struct check_out {
    char *buf;
    size_t size, len;
    int unsafe;
} check_out;

static void check_add(check_out *o, int unsafe, const char *topic,
                      const char *what) {
    if (unsafe)
        o->unsafe++;
    if (o->len >= o->size)
        return;
    int n = snprintf(o->buf + o->len, o->size - o->len, "%s: topic %s: %s\n",
                     unsafe ? "unsafe" : "warning", topic, what);
    if (n > 0)
        o->len += (size_t)n < o->size - o->len ? (size_t)n : o->size - o->len - 1;
}

static const char *cfg_get(const rd_kafka_ConfigResource_t *r, const char *name) {
    size_t cnt = 0;
    const rd_kafka_ConfigEntry_t **e = rd_kafka_ConfigResource_configs(r, &cnt);
    for (size_t i = 0; i < cnt; i++)
        if (strcmp(rd_kafka_ConfigEntry_name(e[i]), name) == 0)
            return rd_kafka_ConfigEntry_value(e[i]);
    return NULL;
}

static int cfg_is(const rd_kafka_ConfigResource_t *r, const char *name,
                  const char *want) {
    const char *v = cfg_get(r, name);
    return v && strcmp(v, want) == 0;
}

/* role 0 events, 1 control, 2 dlq. */
static void check_topic(check_out *o, int role, const char *topic,
                        const rd_kafka_ConfigResource_t *r, int replicas,
                        int brokers) {
    char msg[512];
    const char *v;
    int want_rf = brokers < 3 ? brokers : 3;
    if (replicas < want_rf) {
        snprintf(msg, sizeof(msg),
                 "replication factor %d on a %d-broker cluster: losing one broker "
                 "can lose acknowledged writes; recreate it with replication %d",
                 replicas, brokers, want_rf);
        check_add(o, role != 2, topic, msg);
    }
    v = cfg_get(r, "min.insync.replicas");
    if (replicas >= 3 && v && atoi(v) < 2) {
        snprintf(msg, sizeof(msg),
                 "min.insync.replicas=%s with %d replicas: an ack may rest on one "
                 "broker; set min.insync.replicas=2", v, replicas);
        check_add(o, role != 2, topic, msg);
    }
    if (cfg_is(r, "unclean.leader.election.enable", "true"))
        check_add(o, role != 2, topic,
                  "unclean.leader.election.enable=true can truncate acknowledged "
                  "writes; set it to false");
    const char *policy = cfg_get(r, "cleanup.policy");
    int compact = policy && strstr(policy, "compact");
    const char *ret_ms = cfg_get(r, "retention.ms");
    const char *ret_bytes = cfg_get(r, "retention.bytes");
    if (role == 0 && compact)
        check_add(o, 1, topic,
                  "cleanup.policy includes compact: older versions of a key would "
                  "vanish from the log and replay would differ; use delete with "
                  "retention.ms=-1");
    if ((role == 0 || (role == 1 && !compact)) && ret_ms && strcmp(ret_ms, "-1")) {
        snprintf(msg, sizeof(msg),
                 "retention.ms=%s is finite: views are rebuilt by replaying the "
                 "whole log; set retention.ms=-1", ret_ms);
        check_add(o, 1, topic, msg);
    }
    if ((role == 0 || (role == 1 && !compact)) && ret_bytes && strcmp(ret_bytes, "-1")) {
        snprintf(msg, sizeof(msg),
                 "retention.bytes=%s is finite: views are rebuilt by replaying the "
                 "whole log; set retention.bytes=-1", ret_bytes);
        check_add(o, 1, topic, msg);
    }
    if (role == 0 && (v = cfg_get(r, "message.timestamp.type")) &&
        strcmp(v, "LogAppendTime")) {
        snprintf(msg, sizeof(msg),
                 "message.timestamp.type=%s: the dedup window follows producers' "
                 "clocks; LogAppendTime makes it the broker's", v);
        check_add(o, 0, topic, msg);
    }
    if (role == 2 && ret_ms && strcmp(ret_ms, "-1"))
        check_add(o, 0, topic, "finite retention drops dead-lettered events");
}

static int describe_send(rd_kafka_t *rk, const topic_want want[3],
                         int timeout_ms, rd_kafka_event_t **out, char *errstr,
                         size_t es) {
    rd_kafka_ConfigResource_t *res[3];
    for (int i = 0; i < 3; i++)
        res[i] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, want[i].name);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
    char tmp[256];
    rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, tmp, sizeof(tmp));
    rd_kafka_DescribeConfigs(rk, res, 3, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
    int rc = 0;
    if (!ev) {
        snprintf(errstr, es, "describe topic configs: no answer within %d ms",
                 timeout_ms);
        rc = -1;
    } else if (rd_kafka_event_error(ev)) {
        snprintf(errstr, es, "describe topic configs: %s",
                 rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
        ev = NULL;
        rc = -1;
    }
    *out = ev;
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    rd_kafka_ConfigResource_destroy_array(res, 3);
    return rc;
}

int objlog_topics_check(const char *brokers, const objlog_topics *t,
                        int timeout_ms, char *problems, size_t problems_size,
                        char *errstr, size_t errstr_size) {
    check_out o = {problems, problems_size, 0, 0};
    if (problems_size)
        problems[0] = '\0';
    rd_kafka_t *rk = control_client_new(brokers, errstr, errstr_size);
    if (!rk)
        return -1;
    const struct rd_kafka_metadata *md =
        topics_metadata(rk, brokers, timeout_ms, errstr, errstr_size);
    topic_want want[3];
    want_list(t, 0, want);
    int replicas[3] = {0, 0, 0}, rc = md ? 0 : -1;
    for (int i = 0; i < 3 && rc == 0; i++) {
        const struct rd_kafka_metadata_topic *mt = topics_find(md, want[i].name);
        if (!mt) {
            snprintf(errstr, errstr_size, "topic %s is missing on %s; create it "
                     "first (objlog topics create)", want[i].name, brokers);
            rc = -1;
        } else {
            replicas[i] = mt->partitions[0].replica_cnt;
        }
    }
    int brokers_n = md ? md->broker_cnt : 0;
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_event_t *ev = NULL;
    if (rc == 0)
        rc = describe_send(rk, want, timeout_ms, &ev, errstr, errstr_size);
    if (rc == 0) {
        size_t cnt = 0;
        const rd_kafka_ConfigResource_t **res = rd_kafka_DescribeConfigs_result_resources(
            rd_kafka_event_DescribeConfigs_result(ev), &cnt);
        for (size_t i = 0; i < cnt && rc == 0; i++) {
            const char *name = rd_kafka_ConfigResource_name(res[i]);
            if (rd_kafka_ConfigResource_error(res[i])) {
                snprintf(errstr, errstr_size, "describe %s: %s", name,
                         rd_kafka_ConfigResource_error_string(res[i]));
                rc = -1;
            }
            for (int role = 0; role < 3 && rc == 0; role++)
                if (strcmp(name, want[role].name) == 0)
                    check_topic(&o, role, name, res[i], replicas[role], brokers_n);
        }
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_destroy(rk);
    return rc < 0 ? -1 : o.unsafe;
}

/* ---- growing the events topic ---- */

static int create_partitions_send(rd_kafka_t *rk, const char *topic, int total,
                                  int timeout_ms, char *errstr, size_t es) {
    char tmp[256];
    rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, (size_t)total, tmp,
                                                              sizeof(tmp));
    if (!np) {
        snprintf(errstr, es, "add partitions to %s: %s", topic, tmp);
        return -1;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
    rd_kafka_AdminOptions_set_operation_timeout(o, timeout_ms, tmp, sizeof(tmp));
    rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, tmp, sizeof(tmp));
    rd_kafka_CreatePartitions(rk, &np, 1, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
    int rc = 0;
    if (!ev) {
        snprintf(errstr, es, "add partitions to %s: no answer within %d ms", topic,
                 timeout_ms);
        rc = -1;
    } else if (rd_kafka_event_error(ev)) {
        snprintf(errstr, es, "add partitions to %s: %s", topic, rd_kafka_event_error_string(ev));
        rc = -1;
    } else {
        size_t cnt = 0;
        const rd_kafka_topic_result_t **res = rd_kafka_CreatePartitions_result_topics(
            rd_kafka_event_CreatePartitions_result(ev), &cnt);
        rd_kafka_resp_err_t e = cnt ? rd_kafka_topic_result_error(res[0])
                                    : RD_KAFKA_RESP_ERR__FAIL;
        if (e) {
            const char *msg = cnt ? rd_kafka_topic_result_error_string(res[0]) : NULL;
            snprintf(errstr, es, "add partitions to %s: %s", topic,
                     msg ? msg : rd_kafka_err2str(e));
            rc = -1;
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewPartitions_destroy(np);
    return rc;
}

int objlog_topics_add_partitions(const char *brokers, const objlog_topics *t, int total,
                                 int timeout_ms, int *before, char *errstr,
                                 size_t errstr_size) {
    rd_kafka_t *rk = control_client_new(brokers, errstr, errstr_size);
    if (!rk)
        return -1;
    int rc = -1;
    int have = control_topic_partitions(rk, t->events, timeout_ms, errstr, errstr_size);
    *before = have;
    rangemap *genesis = NULL, *cur = NULL;
    if (have < 0)
        goto out;
    if (total <= have) {
        snprintf(errstr, errstr_size, "%s has %d partitions already (a topic cannot shrink)",
                 t->events, have);
        goto out;
    }
    /* The map every partition starts from must stay the one made for the
     * old count: it goes on the control topic first if it is not there. */
    cur = control_load_rangemaps(rk, t->control, t->events, timeout_ms, &genesis, errstr,
                                 errstr_size);
    if (!cur ||
        (rangemap_epoch(cur) == CONTROL_DEFAULT_EPOCH &&
         control_publish_rangemap(rk, t->control, cur, timeout_ms, errstr, errstr_size) < 0) ||
        create_partitions_send(rk, t->events, total, timeout_ms, errstr, errstr_size) < 0)
        goto out;
    for (int waited = 0; rc < 0; waited += 100) {
        int n = control_topic_partitions(rk, t->events, timeout_ms, errstr, errstr_size);
        if (n >= total)
            rc = 0;
        else if (waited >= timeout_ms) {
            snprintf(errstr, errstr_size, "%s: %d partitions after %d ms, not %d", t->events, n,
                     timeout_ms, total);
            break;
        } else {
            rd_kafka_poll(rk, 100);
        }
    }
out:
    rangemap_destroy(cur);
    rangemap_destroy(genesis);
    rd_kafka_destroy(rk);
    return rc;
}

static const char *const feed_configs[] = {
    "cleanup.policy", "delete",
    "unclean.leader.election.enable", "false",
    NULL};

int objlog_topics_create_like(rd_kafka_t *rk, const char *like, const char *name,
                              int timeout_ms, char *errstr, size_t es) {
    const struct rd_kafka_metadata *md = topics_metadata(rk, "the cluster", timeout_ms, errstr, es);
    if (!md)
        return -1;
    const struct rd_kafka_metadata_topic *lt = topics_find(md, like);
    int exists = topics_find(md, name) != NULL;
    int parts = lt ? lt->partition_cnt : 1;
    int rf = lt && lt->partitions[0].replica_cnt > 0 ? lt->partitions[0].replica_cnt : 1;
    rd_kafka_metadata_destroy(md);
    if (exists)
        return 0;
    topic_want w = {name, parts, feed_configs};
    rd_kafka_NewTopic_t *nt = new_topic(&w, rf, errstr, es);
    if (!nt)
        return -1;
    int created = 0;
    int rc = create_send(rk, &nt, &name, 1, timeout_ms, &created, errstr, es);
    rd_kafka_NewTopic_destroy(nt);
    for (int waited = 0; rc == 0; waited += 100) {
        if (!(md = topics_metadata(rk, "the cluster", timeout_ms, errstr, es)))
            return -1;
        const struct rd_kafka_metadata_topic *mt = topics_find(md, name);
        int seen = mt && mt->partition_cnt >= parts;
        rd_kafka_metadata_destroy(md);
        if (seen)
            return created;
        if (waited >= timeout_ms) {
            snprintf(errstr, es, "created topic %s not visible after %d ms", name, timeout_ms);
            return -1;
        }
        rd_kafka_poll(rk, 100);
    }
    return -1;
}
