/* embedded.c: the in-process Kafka of `objlogd --embedded` / --kafka-only
 * (docs/ARCHITECTURE.md, "Processes"): librdkafka's mock cluster with 3
 * brokers, the three objlog topics and the default range map. It lives in
 * memory and keeps about 5 MB per partition: for trying objlog and for
 * tests, never for data you keep.
 *
 * The mock cluster is owned by a dedicated producer handle (`host`); the
 * range map and a fresh log id (kind "embedded", control.h) are published
 * through a second handle that talks to the cluster over TCP like any
 * client. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "objlog_logger.h"
#include "control.h"
#include "query.h"

struct objlog_embedded_kafka {
    rd_kafka_t *host;
    rd_kafka_mock_cluster_t *mc;
    char *bootstrap;
};

static rd_kafka_t *embedded_producer(const char *brokers, char *errstr,
                                     size_t errstr_size) {
    /* --kafka-config's properties apply when this checks a real Kafka's
     * topics; objlogd refuses them with the embedded log */
    return control_client_new_logged(brokers, objlog_logger_rdkafka, /* our logger's lines */
                                     "embedded kafka", errstr, errstr_size);
}

static int embedded_topic(objlog_embedded_kafka *k, const char *topic, int parts,
                          char *errstr, size_t errstr_size) {
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(k->mc, topic, parts, 3);
    if (err) {
        snprintf(errstr, errstr_size, "embedded kafka: create topic %s: %s", topic,
                 rd_kafka_err2str(err));
        return -1;
    }
    return 0;
}

static int embedded_publish_rangemap(objlog_embedded_kafka *k,
                                     const char *control_topic, int partitions,
                                     char *errstr, size_t errstr_size) {
    rd_kafka_t *rk = embedded_producer(k->bootstrap, errstr, errstr_size);
    if (!rk)
        return -1;
    rangemap *rm = rangemap_new_default(partitions, CONTROL_DEFAULT_EPOCH);
    int rc = rm ? control_publish_rangemap(rk, control_topic, rm, 10000, errstr,
                                           errstr_size)
                : -1;
    if (!rm)
        snprintf(errstr, errstr_size, "range map: out of memory");
    /* A new log id at every start: a view built from an earlier run's
     * (lost) log must never be taken for a view of this one. */
    control_logid id;
    if (rc == 0)
        rc = control_publish_logid(rk, control_topic, 1, 10000, &id, errstr,
                                   errstr_size);
    rangemap_destroy(rm);
    rd_kafka_destroy(rk);
    return rc;
}

objlog_embedded_kafka *objlog_embedded_kafka_new(const char *topic,
                                                 int partitions,
                                                 const char *control_topic,
                                                 const char *dlq_topic,
                                                 char *errstr,
                                                 size_t errstr_size) {
    objlog_embedded_kafka *k = calloc(1, sizeof(*k));
    if (!k) {
        snprintf(errstr, errstr_size, "embedded kafka: out of memory");
        return NULL;
    }
    if (!(k->host = embedded_producer(NULL, errstr, errstr_size)))
        goto fail;
    if (!(k->mc = rd_kafka_mock_cluster_new(k->host, 3))) {
        snprintf(errstr, errstr_size, "embedded kafka: cannot start the mock cluster");
        goto fail;
    }
    k->bootstrap = strdup(rd_kafka_mock_cluster_bootstraps(k->mc));
    if (!k->bootstrap ||
        embedded_topic(k, topic, partitions, errstr, errstr_size) < 0 ||
        embedded_topic(k, control_topic, 1, errstr, errstr_size) < 0 ||
        embedded_topic(k, dlq_topic, 1, errstr, errstr_size) < 0 ||
        embedded_publish_rangemap(k, control_topic, partitions, errstr,
                                  errstr_size) < 0)
        goto fail;
    return k;
fail:
    objlog_embedded_kafka_destroy(k);
    return NULL;
}

const char *objlog_embedded_kafka_bootstrap(const objlog_embedded_kafka *k) {
    return k->bootstrap;
}

void objlog_embedded_kafka_destroy(objlog_embedded_kafka *k) {
    if (!k)
        return;
    if (k->mc)
        rd_kafka_mock_cluster_destroy(k->mc);
    if (k->host)
        rd_kafka_destroy(k->host);
    free(k->bootstrap);
    free(k);
}

/* Asks for ALL topics' metadata: naming a topic in a metadata request can
 * make a broker with auto.create.topics.enable create it with the wrong
 * partition count, which would silently break the range map. */
int objlog_kafka_check_topics(const char *brokers, const char *const *topics,
                              int timeout_ms, char *errstr,
                              size_t errstr_size) {
    rd_kafka_t *rk = embedded_producer(brokers, errstr, errstr_size);
    const struct rd_kafka_metadata *md = NULL;
    if (!rk)
        return -1;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
    int rc = 0;
    if (err) {
        snprintf(errstr, errstr_size, "cannot reach Kafka at %s: %s", brokers,
                 rd_kafka_err2str(err));
        rc = -1;
    }
    for (int i = 0; rc == 0 && topics[i]; i++) {
        int found = 0;
        for (int j = 0; j < md->topic_cnt && !found; j++)
            found = strcmp(md->topics[j].topic, topics[i]) == 0 &&
                    !md->topics[j].err && md->topics[j].partition_cnt > 0;
        if (!found) {
            snprintf(errstr, errstr_size, "topic %s is missing on %s; create it first",
                     topics[i], brokers);
            rc = -1;
        }
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_destroy(rk);
    return rc;
}
