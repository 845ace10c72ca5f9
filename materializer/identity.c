/* identity.c: which log a view was built from (docs/ARCHITECTURE.md,
 * "Processes"). A view is a function of one log's prefix; served against
 * another log its rows, applied offsets and stored outcomes would answer
 * for events that log never held (a write acknowledged with another
 * request's outcome).
 *
 * A log is named by the Kafka cluster id and the log id in objlog.control
 * (control.h), drawn when the topics were created. The store keeps the pair
 * in meta "logident" as text "v1 <kind> <log id> <cluster id>", written once
 * into an empty store and compared at every start after that.
 *
 * Invariant: a store that holds an applied event and no identity, or
 * another log's identity, is never served; the only way out is an empty
 * --data (rebuild by replay). The one exception is objlogd --embedded,
 * whose own log is new at every start: a view of an earlier embedded log
 * is then discarded, because that log is gone for good. */
#include "materializer.h"

#include "rows.h"
#include "control.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDENT_KEY "logident"

int objlog_log_identity_fetch(const char *brokers, const char *control_topic,
                              int publish_if_missing, int timeout_ms,
                              objlog_log_identity *out, char *errstr,
                              size_t errstr_size) {
    memset(out, 0, sizeof(*out));
    rd_kafka_t *rk = control_client_new(brokers, errstr, errstr_size);
    if (!rk)
        return -1;
    int rc = -1;
    char *cid = rd_kafka_clusterid(rk, timeout_ms);
    control_logid id;
    if (!cid) {
        snprintf(errstr, errstr_size, "Kafka at %s gave no cluster id within %d ms",
                 brokers, timeout_ms);
        goto out;
    }
    snprintf(out->cluster_id, sizeof(out->cluster_id), "%s", cid);
    rd_kafka_mem_free(rk, cid);
    rc = control_load_logid(rk, control_topic, timeout_ms, &id, errstr, errstr_size);
    if (rc == 0 && publish_if_missing) {
        /* Read back rather than trust our own: if two starts publish at
         * once, the newest message is the id for everyone. */
        rc = control_publish_logid(rk, control_topic, 0, timeout_ms, &id, errstr,
                                   errstr_size);
        if (rc == 0)
            rc = control_load_logid(rk, control_topic, timeout_ms, &id, errstr,
                                    errstr_size);
    }
    if (rc == 1) {
        memcpy(out->log_id, id.id, sizeof(out->log_id));
        out->embedded = id.embedded;
    } else if (rc == 0) {
        snprintf(errstr, errstr_size, "%s holds no log id", control_topic);
    }
out:
    rd_kafka_destroy(rk);
    return rc;
}

/* 1 found, 0 none, -1 unreadable. */
static int ident_load(objlog_store *s, objlog_log_identity *out, char *errstr,
                      size_t es) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *err = NULL;
    size_t vn = 0;
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_META),
                             IDENT_KEY, strlen(IDENT_KEY), &vn, &err);
    rocksdb_readoptions_destroy(ro);
    int rc = 0;
    char text[256], kind[16];
    memset(out, 0, sizeof(*out));
    if (err) {
        snprintf(errstr, es, "store: %s", err);
        rocksdb_free(err);
        return -1;
    }
    if (v && vn < sizeof(text)) {
        memcpy(text, v, vn);
        text[vn] = '\0';
        out->cluster_id[0] = '\0';
        int n = sscanf(text, "v1 %15s %32s %127s", kind, out->log_id, out->cluster_id);
        rc = n >= 2 ? 1 : -1;
        out->embedded = strcmp(kind, "embedded") == 0;
    } else if (v) {
        rc = -1;
    }
    if (rc < 0)
        snprintf(errstr, es, "store: meta %s is corrupt", IDENT_KEY);
    rocksdb_free(v);
    return rc;
}

static int ident_save(objlog_store *s, const objlog_log_identity *id,
                      char *errstr, size_t es) {
    char text[256];
    int n = snprintf(text, sizeof(text), "v1 %s %s %s",
                     id->embedded ? "embedded" : "kafka", id->log_id, id->cluster_id);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(wo, 1);
    char *err = NULL;
    rocksdb_put_cf(objlog_store_db(s), wo, objlog_store_cf(s, OBJLOG_CF_META),
                   IDENT_KEY, strlen(IDENT_KEY), text, (size_t)n, &err);
    rocksdb_writeoptions_destroy(wo);
    if (err) {
        snprintf(errstr, es, "store: %s", err);
        rocksdb_free(err);
        return -1;
    }
    return 0;
}

/* Any applied offset row in meta: the store holds a view of some log. */
static int ident_store_used(objlog_store *s) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_META));
    size_t pn = strlen(APPLY_META_APPLIED);
    rocksdb_iter_seek(it, APPLY_META_APPLIED, pn);
    int used = 0;
    if (rocksdb_iter_valid(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        used = kn >= pn && memcmp(k, APPLY_META_APPLIED, pn) == 0;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return used;
}

int objlog_store_log_identity(objlog_store *s, objlog_log_identity *out) {
    char err[256];
    return ident_load(s, out, err, sizeof(err));
}

objlog_bind objlog_store_bind_log(objlog_store *s, const objlog_log_identity *log,
                                  int discard_embedded, char *errstr,
                                  size_t errstr_size) {
    objlog_log_identity have;
    int rc = ident_load(s, &have, errstr, errstr_size);
    if (rc < 0)
        return OBJLOG_BIND_REFUSED;
    if (rc == 1 && !strcmp(have.log_id, log->log_id) &&
        !strcmp(have.cluster_id, log->cluster_id))
        return OBJLOG_BIND_SAME;
    if (rc == 1 && have.embedded && discard_embedded)
        return OBJLOG_BIND_DISCARD;
    if (rc == 1) {
        snprintf(errstr, errstr_size,
                 "this view was built from log %s (%s, Kafka cluster %s) but the "
                 "brokers serve log %s (%s, Kafka cluster %s): its objects, applied "
                 "offsets and stored outcomes belong to the other log, so it will "
                 "not serve this one. Point it at the log it was built from, or "
                 "start with an empty --data to rebuild the view by replaying this "
                 "log", have.log_id, have.embedded ? "embedded" : "kafka",
                 have.cluster_id[0] ? have.cluster_id : "?", log->log_id,
                 log->embedded ? "embedded" : "kafka", log->cluster_id);
        return OBJLOG_BIND_REFUSED;
    }
    if (ident_store_used(s)) {
        snprintf(errstr, errstr_size,
                 "this view holds applied events but records no log identity (it "
                 "was built before objlog recorded one), so nothing shows it was "
                 "built from log %s (Kafka cluster %s). Start with an empty --data "
                 "to rebuild it by replay", log->log_id, log->cluster_id);
        return OBJLOG_BIND_REFUSED;
    }
    return ident_save(s, log, errstr, errstr_size) < 0 ? OBJLOG_BIND_REFUSED
                                                       : OBJLOG_BIND_RECORDED;
}

int objlog_store_destroy_files(const char *dir, char *errstr, size_t errstr_size) {
    rocksdb_options_t *o = rocksdb_options_create();
    char *err = NULL;
    rocksdb_destroy_db(o, dir, &err);
    rocksdb_options_destroy(o);
    if (err) {
        snprintf(errstr, errstr_size, "remove store %s: %s", dir, err);
        rocksdb_free(err);
        return -1;
    }
    return 0;
}
