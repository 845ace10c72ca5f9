/* service.c: objlogd's query service assembled: the server, the APIs it
 * serves (the JSON API, the S3 endpoint) and the modules they share (the
 * watermarks, the fences, the gateway and its producer, the cluster, the
 * lifecycle and index workers, admission, the ring of recent warnings),
 * built in dependency order and torn down in the reverse.
 *
 * Invariant: nothing is freed while a worker could still reach it: the
 * workers stop (every request answered) before the notifications into
 * them are cleared, and those before the modules they call go. */
#define _GNU_SOURCE
#include "core.h"
#include "query.h"
#include "admit.h"
#include "api.h"
#include "blobgc.h"
#include "cluster.h"
#include "logring.h"
#include "notifier.h"
#include "ranges.h"
#include "read.h"
#include "s3.h"
#include "server.h"
#include "ui.h"
#include "watermark.h"
#include "workers.h"
#include "write.h"

#include "kafkaconf.h"
#include "producer_event.h"

/* Recent writes whose bytes the gateway's producer keeps: a WrongRange
 * comes back within the outcome's latency; at 50k writes/s this covers
 * more than half a second, in about 7 MB. */
#define SERVICE_KEPT_WRITES 32768

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How often the end offsets are fetched for /readyz and lag (watermark.c). */
#define SERVICE_WM_REFRESH_MS 1000

static void service_producer_log(void *opaque, int level, const char *facility,
                                 const char *message) {
    (void)opaque;
    objlog_logf(level, "kafka", "gateway producer: %s: %s", facility, message);
}

/* --kafka-config's properties, handed to the gateway's producer as its
 * kafka.* settings (the library takes no process configuration). */
typedef struct service_kafka_props {
    objlog_producer_conf *pc;
    int failed;
    char err[300];
} service_kafka_props;

static void service_kafka_prop(const char *key, const char *value, void *arg) {
    service_kafka_props *hp = arg;
    char name[300];
    snprintf(name, sizeof(name), "kafka.%s", key);
    if (!hp->failed &&
        objlog_producer_conf_set(hp->pc, name, value, hp->err, sizeof(hp->err)) != OBJLOG_CONF_OK)
        hp->failed = 1;
}

static objlog_producer *service_producer(objlog_query *q, char *errstr,
                                         size_t errstr_size) {
    objlog_producer_conf *pc = objlog_producer_conf_new();
    if (!pc) {
        snprintf(errstr, errstr_size, "producer conf: out of memory");
        return NULL;
    }
    /* ack=logged: the gateway waits for the outcome on the materializer in
     * this process rather than asking itself over HTTP (docs/ARCHITECTURE.md,
     * "How a write flows"). */
    if (objlog_producer_conf_set(pc, "bootstrap.servers", q->brokers, errstr, errstr_size) ||
        objlog_producer_conf_set(pc, "topic", q->topic, errstr, errstr_size) ||
        objlog_producer_conf_set(pc, "control.topic", q->control_topic, errstr, errstr_size) ||
        objlog_producer_conf_set(pc, "ack", "logged", errstr, errstr_size) ||
        /* No outcome waits here (ack=logged): this bounds only how long a
         * shutdown waits for writes the log has not taken (destroy). */
        objlog_producer_conf_set(pc, "outcome.timeout.ms", "1000", errstr, errstr_size) ||
        /* After an outage librdkafka's reconnect backoff grows to 10 s:
         * writes would keep timing out for seconds after the brokers are
         * back and /readyz says ready. Retry a lost broker every second. */
        objlog_producer_conf_set(pc, "kafka.reconnect.backoff.max.ms", "1000", errstr,
                                 errstr_size) ||
        /* The library's 5 ms linger made every gateway write wait for it:
         * 32 writers already fill batches. wrk -c32, ack=logged: 4.8k/s
         * p50 6.5 ms at 5 ms, 9.5k/s p50 3.0 ms at 1 ms; 0 ms sends a
         * request per write and falls to 1.5k/s. */
        objlog_producer_conf_set(pc, "kafka.linger.ms", "1", errstr, errstr_size)) {
        objlog_producer_conf_destroy(pc);
        return NULL;
    }
    service_kafka_props hp = {.pc = pc};
    objlog_kafka_config_each(service_kafka_prop, &hp);
    if (hp.failed) {
        snprintf(errstr, errstr_size, "%s", hp.err);
        objlog_producer_conf_destroy(pc);
        return NULL;
    }
    objlog_producer_conf_set_log_cb(pc, service_producer_log, NULL);
    objlog_producer *p = objlog_producer_new(pc, errstr, errstr_size);
    /* The gateway resends a write that met WrongRange from these bytes. */
    if (p && producer_keep_logged(p, SERVICE_KEPT_WRITES) < 0) {
        snprintf(errstr, errstr_size, "producer: out of memory");
        objlog_producer_destroy(p);
        return NULL;
    }
    return p;
}

/* The node's recent warnings and errors: the ring takes the logger's
 * lines from here until destroy. A second service in one process (tests
 * run several) keeps an empty ring: the sink is the first one's. */
static int service_logring_new(objlog_query *q, char *errstr, size_t errstr_size) {
    if (!(q->logring = logring_new(LOGRING_CAPACITY))) {
        snprintf(errstr, errstr_size, "query: out of memory");
        return -1;
    }
    q->logring_sink = objlog_logger_set_sink(logring_add, q->logring) == 0;
    return 0;
}

static char *service_strdup_or(const char *s, const char *def) {
    return strdup(s && *s ? s : def);
}

/* The gateway keeps no per-worker state of its own, but a stopping
 * worker's writes must answer now (503, retry with the same request id). */
static void service_gateway_stop(void *arg, http_worker *w, void *state) {
    (void)state;
    objlog_query *q = arg;
    gateway_expire_worker(q->gw, w);
}

static int service_server_new(objlog_query *q, const objlog_query_conf *conf, char *errstr,
                              size_t errstr_size) {
    server_conf sc = {
        .threads = conf->threads,
        .max_connections = conf->max_connections > 0 ? conf->max_connections
                                                     : QUERY_MAX_CONNECTIONS_DEFAULT,
        .request_timeout_ms = conf->request_timeout_ms > 0 ? conf->request_timeout_ms
                                                           : QUERY_REQUEST_TIMEOUT_MS_DEFAULT,
        .idle_timeout_ms = conf->idle_timeout_ms > 0 ? conf->idle_timeout_ms
                                                     : QUERY_IDLE_TIMEOUT_MS_DEFAULT,
        .max_timeout_ms = conf->max_timeout_ms > 0 ? conf->max_timeout_ms
                                                   : HTTP_MAX_TIMEOUT_MS,
        .q = q};
    if (!(q->srv = server_new(&sc, errstr, errstr_size)))
        return -1;
    /* In the order a stopping worker answers what waits: writes, parked
     * reads, checkpoint exports (and a cluster node's forwards). */
    server_hooks gw = {.stop = service_gateway_stop, .arg = q};
    if (server_hooks_add(q->srv, &gw) < 0) {
        snprintf(errstr, errstr_size, "query: too many server hooks");
        return -1;
    }
    if (!(q->fence = fence_new(q->srv, errstr, errstr_size)) ||
        !(q->ckpt = ckpt_server_new(q->srv, errstr, errstr_size)) ||
        !(q->ranges = ranges_new(q->srv, errstr, errstr_size)) ||
        ui_register(q->srv, &api_face, errstr, errstr_size) < 0) /* the status page */
        return -1;
    return 0;
}

/* The JSON API's listener, and the S3 endpoint's with --s3-listen. */
static int service_listen(objlog_query *q, const objlog_query_conf *conf, char *errstr,
                          size_t errstr_size) {
    if (server_listen(q->srv, &api_face, conf->host && *conf->host ? conf->host : "127.0.0.1",
                      conf->port, conf->listen_fd_set ? conf->listen_fd : -1, errstr,
                      errstr_size) < 0)
        return -1;
    if (!q->s3)
        return 0;
    return server_listen(q->srv, &s3_face, q->s3->host, q->s3->port,
                         conf->s3_listen_fd_set ? conf->s3_listen_fd : -1, errstr,
                         errstr_size);
}

/* The blob directory's collector: a local --blob-dir with release
 * records to read, on a node that answers for every partition. The nodes
 * of a machine share one directory, and a check there would need every
 * node's view: not collected in a cluster (yet). 0 or -1. */
static int service_blobgc_start(objlog_query *q, const objlog_query_conf *conf, char *errstr,
                                size_t errstr_size) {
    if (!conf->blob_release_topic || !*conf->blob_release_topic || !q->s3 || !q->s3->blobs ||
        blobstore_remote(q->s3->blobs))
        return 0;
    if (conf->cluster) {
        objlog_logf(OBJLOG_LEVEL_INFO, "blobgc", "%s is not collected: the nodes of a cluster "
                    "share it and no node sees every reference", blobstore_dir(q->s3->blobs));
        return 0;
    }
    blobgc_conf gc = {.brokers = q->brokers, .topic = conf->blob_release_topic,
                      .bs = q->s3->blobs, .store = q->store, .m = q->m, .wm = q->wm};
    return (q->blobgc = blobgc_new(&gc, errstr, errstr_size)) ? 0 : -1;
}

objlog_query *objlog_query_new(const objlog_query_conf *conf, char *errstr,
                               size_t errstr_size) {
    if (!conf->brokers || !conf->store || !conf->materializer) {
        snprintf(errstr, errstr_size, "query: brokers, store and materializer are required");
        return NULL;
    }
    objlog_query *q = calloc(1, sizeof(*q));
    if (!q) {
        snprintf(errstr, errstr_size, "query: out of memory");
        return NULL;
    }
    /* First, so that what the modules below warn of as they start is on
     * the status page too. */
    if (service_logring_new(q, errstr, errstr_size) < 0) {
        objlog_query_destroy(q);
        return NULL;
    }
    q->brokers = strdup(conf->brokers);
    q->topic = service_strdup_or(conf->topic, "objlog.events");
    q->control_topic = service_strdup_or(conf->control_topic, "objlog.control");
    q->store = conf->store;
    q->m = conf->materializer;
    q->ready_max_lag = conf->ready_max_lag > 0 ? conf->ready_max_lag
                                               : QUERY_READY_MAX_LAG_DEFAULT;
    if (!q->brokers || !q->topic || !q->control_topic) {
        snprintf(errstr, errstr_size, "query: out of memory");
        objlog_query_destroy(q);
        return NULL;
    }
    if (service_server_new(q, conf, errstr, errstr_size) < 0) {
        objlog_query_destroy(q);
        return NULL;
    }
    if (conf->token_key)
        memcpy(q->token_key, conf->token_key, OBJLOG_TOKEN_SECRET_LEN);
    /* Always on: a bucket's own limit (a log event) needs no flag. */
    admit_conf ac = {.bucket_rps = conf->rate_limit_bucket_rps,
                     .bucket_burst = conf->rate_limit_bucket_burst,
                     .tenant_rps = conf->rate_limit_tenant_rps,
                     .tenant_burst = conf->rate_limit_tenant_burst,
                     .slowdown_lag = conf->slowdown_lag > 0 ? conf->slowdown_lag : 0};
    if (!(q->admit = admit_new(&ac))) {
        snprintf(errstr, errstr_size, "query: out of memory");
        objlog_query_destroy(q);
        return NULL;
    }
    if ((!conf->token_key &&
         objlog_store_token_secret(q->store, q->token_key, errstr, errstr_size) < 0) ||
        !(q->wm = wm_new(q->brokers, q->topic, objlog_materializer_partitions(q->m),
                         errstr, errstr_size)) ||
        wm_start_refresh(q->wm, SERVICE_WM_REFRESH_MS, errstr, errstr_size) < 0 ||
        !(q->producer = service_producer(q, errstr, errstr_size)) ||
        !(q->gw = gateway_new(q, q->srv->nworkers, errstr, errstr_size)) ||
        (!conf->no_index_driver && !(q->ixd = ixdriver_new(q, errstr, errstr_size)))) {
        objlog_query_destroy(q);
        return NULL;
    }
    /* Parked reads wake on either: an end offset fetched, a batch applied
     * (fence.c). Before the first request: fence_notify only touches
     * workers with parked reads. */
    wm_set_notify(q->wm, fence_notify_end, q);
    objlog_materializer_set_progress_cb(q->m, fence_notify, q);
    cluster_conf cc = {.name = conf->cluster,
                       .self_url = conf->advertise_url ? conf->advertise_url : "",
                       .standbys = conf->standbys,
                       .eventual_max_lag = conf->eventual_max_lag,
                       .token_key = conf->token_key};
    if (conf->cluster && !(q->cluster = cluster_new(q, &cc, errstr, errstr_size))) {
        objlog_query_destroy(q);
        return NULL;
    }
    if ((conf->tls_cert || conf->tls_ca) &&
        !(q->tls = tls_conf_new(conf->tls_cert, conf->tls_key, conf->tls_ca, errstr,
                                errstr_size))) {
        objlog_query_destroy(q);
        return NULL;
    }
    q->srv->conf.tls = q->tls;
    api_settings as = {.credentials = conf->api_credentials,
                       .insecure = conf->insecure,
                       .cluster_unsigned = conf->cluster && !conf->token_key};
    s3_settings ss = {.host = conf->s3_host, .port = conf->s3_port,
                      .region = conf->s3_region, .domain = conf->s3_domain,
                      .credentials = conf->s3_credentials, .blob_url = conf->s3_blob_url,
                      .blob_dir = conf->blob_dir, .blob_s3 = conf->blob_s3,
                      .blob_s3_credentials = conf->blob_s3_credentials,
                      .anonymous = conf->s3_anonymous, .insecure = conf->insecure};
    if (api_conf_new(q, &as, errstr, errstr_size) < 0 ||
        (conf->s3_host && s3_conf_new(q, &ss, errstr, errstr_size) < 0)) {
        objlog_query_destroy(q);
        return NULL;
    }
    notifier_conf nc = {.brokers = q->brokers, .topic = q->topic, .region = conf->s3_region,
                        .release_topic = conf->blob_release_topic};
    if (!(q->lc = lc_worker_new(q, conf->lifecycle_interval_ms,
                                conf->lifecycle_clock_offset_ms, conf->lifecycle_max_rate,
                                errstr, errstr_size)) ||
        !(q->notify = notifier_new(q->store, q->m, &nc, errstr, errstr_size)) ||
        service_blobgc_start(q, conf, errstr, errstr_size) < 0 ||
        service_listen(q, conf, errstr, errstr_size) < 0) {
        objlog_query_destroy(q);
        return NULL;
    }
    /* Before the first request: what a handoff left unfinished is held or
     * published (ranges.h). */
    q->ranges->test_pause_ms = conf->test_handoff_pause_ms;
    if (ranges_autosplit_conf(q, conf->auto_split_rate, conf->auto_split_seconds) < 0) {
        snprintf(errstr, errstr_size, "ranges: out of memory");
        objlog_query_destroy(q);
        return NULL;
    }
    if (ranges_finisher_start(q) < 0) {
        snprintf(errstr, errstr_size, "ranges: pthread_create failed");
        objlog_query_destroy(q);
        return NULL;
    }
    if (server_start(q->srv, errstr, errstr_size) < 0) {
        objlog_query_destroy(q);
        return NULL;
    }
    return q;
}

int objlog_query_listen(const char *host, int port, int *bound_port, char *errstr,
                        size_t errstr_size) {
    return server_listen_socket(host, port, bound_port, errstr, errstr_size);
}

int objlog_query_port(const objlog_query *q) { return server_port(q->srv, &api_face); }

int objlog_query_s3_port(const objlog_query *q) {
    return q->s3 ? server_port(q->srv, &s3_face) : -1;
}

int objlog_query_reload(objlog_query *q, char *errstr, size_t errstr_size) {
    char s3[256] = "", api[256] = "";
    if (s3_conf_reload(q, s3, sizeof(s3)) < 0) {
        snprintf(errstr, errstr_size, "%s", s3);
        return -1;
    }
    if (api_conf_reload(q, api, sizeof(api)) < 0) {
        snprintf(errstr, errstr_size, "%s", api);
        return -1;
    }
    snprintf(errstr, errstr_size, "%s%s%s", s3, *s3 && *api ? "; " : "",
             *s3 || *api ? api : "no credentials files");
    return 0;
}

void objlog_query_destroy(objlog_query *q) {
    if (!q)
        return;
    /* Order: no new requests; in-flight ones answered (gateway waits are
     * bounded); then nothing can call back into the workers or the gateway
     * and the producer can be flushed and freed. */
    server_stop(q->srv);
    /* Nothing may wake a worker that is about to be freed. */
    if (q->wm)
        wm_set_notify(q->wm, NULL, NULL);
    objlog_materializer_set_progress_cb(q->m, NULL, NULL);
    /* Every request is answered; waiters blocked on the view return now,
     * and the producer's callbacks (which free expired requests) end
     * before the gateway does. */
    lc_worker_destroy(q->lc); /* its waits are short: it sees stopping soon */
    q->lc = NULL;
    notifier_destroy(q->notify);
    q->notify = NULL;
    blobgc_destroy(q->blobgc); /* its fence gives up within a poll */
    q->blobgc = NULL;
    objlog_materializer_cancel_waits(q->m);
    ranges_finisher_stop(q);
    cluster_destroy(q->cluster);
    q->cluster = NULL;
    ixdriver_stop(q->ixd);
    if (q->producer)
        objlog_producer_destroy(q->producer);
    q->producer = NULL;
    ixdriver_destroy(q->ixd);
    q->ixd = NULL;
    gateway_destroy(q->gw);
    server_free(q->srv);
    fence_free(q->fence);
    ckpt_server_free(q->ckpt);
    ranges_free(q->ranges);
    wm_destroy(q->wm);
    s3_conf_free(q);
    api_conf_free(q);
    tls_conf_free(q->tls);
    admit_destroy(q->admit);
    free(q->brokers);
    free(q->topic);
    free(q->control_topic);
    /* Last: the workers that read it are gone; clearing the sink waits
     * out a line being taken. */
    if (q->logring_sink)
        objlog_logger_set_sink(NULL, NULL);
    logring_destroy(q->logring);
    free(q);
}
