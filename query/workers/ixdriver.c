/* ixdriver.c: drives the backfill of attribute indexes.
 *
 * The backfill itself is decided in the log (materializer/indexes.c): each
 * BuildIndex event indexes the next keys after the index's cursor. This
 * thread only appends those events: it reads the `buckets` rows, and for
 * each index still building in a partition this node applies as ACTIVE
 * (one node per partition, so steps are not doubled across a cluster) it
 * produces one BuildIndex. It issues the next round
 * only once every step of the last one is applied here, so it never runs
 * ahead of the view. Correctness never depends on it: a lost, late or
 * duplicated step changes nothing (a step on a ready index is a no-op, and
 * each step starts from the cursor the log holds at its position), and
 * after a restart the scan finds the building index again, so due work is
 * never lost.
 *
 * Reading every bucket record is not free on a node with many buckets, so
 * an idle node does not repeat it: every IXDRIVER_IDLE_MS the thread
 * compares each partition's applied offset and role with what they were
 * when it last scanned, and scans again only if one moved (or the last
 * round issued or lost a step, or the thread just started). That loses
 * nothing: an index becomes building, or a partition holding one becomes
 * ours, only through an applied event (the offset moves) or a role change,
 * and a fresh thread (a restart) always scans once. */
#include "core.h"
#include "workers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keycodec.h"

#define IXDRIVER_IDLE_MS 100
#define IXDRIVER_POLL_MS 2
#define IXDRIVER_MAX_STEPS 64     /* per round */
#define IXDRIVER_FAIL_MS 1000     /* after a step the log refused */

typedef struct ix_step {
    int32_t partition;
    int64_t offset;               /* -1 until logged */
    int done, failed;
} ix_step;

struct ixdriver {
    objlog_query *q;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    ix_step steps[IXDRIVER_MAX_STEPS];
    int nsteps, outstanding;      /* callbacks not run yet */
    /* Driver thread only: each partition's applied offset and role at the
     * last scan, and whether the next check must scan whatever they say. */
    int nparts;
    int64_t *seen_applied;
    uint8_t *seen_active;
    int must_scan;
};

typedef struct ix_cb {
    ixdriver *d;
    int i;
} ix_cb;

static void ixd_cb(const objlog_write_result *res, void *opaque) {
    ix_cb *cb = opaque;
    ixdriver *d = cb->d;
    pthread_mutex_lock(&d->mu);
    ix_step *s = &d->steps[cb->i];
    s->done = 1;
    s->failed = res->offset < 0;
    s->partition = res->partition;
    s->offset = res->offset;
    d->outstanding--;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    free(cb);
}

/* Waits up to ms (or until stop); 1 when stopping. Called with mu held. */
static int ixd_sleep(ixdriver *d, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    if (!d->stop)
        pthread_cond_timedwait(&d->cv, &d->mu, &ts);
    return d->stop;
}

/* 1 while the last round has steps not yet logged and applied here; 2 if a
 * step was refused. Called with mu held. */
static int ixd_round_pending(ixdriver *d) {
    int failed = 0;
    for (int i = 0; i < d->nsteps; i++) {
        ix_step *s = &d->steps[i];
        if (!s->done)
            return 1;
        if (s->failed) {
            failed = 1;
            continue;
        }
        if (s->offset >= 0 &&
            objlog_materializer_applied(d->q->m, s->partition) <= s->offset)
            return 1;
    }
    return failed ? 2 : 0;
}

/* Produces one BuildIndex; 0, or -1 if the producer refused at once. */
static int ixd_step(ixdriver *d, const char *bucket, const char *name) {
    ix_cb *cb = malloc(sizeof(*cb));
    if (!cb)
        return -1;
    cb->d = d;
    pthread_mutex_lock(&d->mu);
    cb->i = d->nsteps;
    memset(&d->steps[cb->i], 0, sizeof(d->steps[cb->i]));
    d->steps[cb->i].offset = -1;
    d->nsteps++;
    d->outstanding++;
    pthread_mutex_unlock(&d->mu);
    char err[256];
    if (objlog_producer_build_index(d->q->producer, bucket, name, 0, NULL, ixd_cb, cb, err,
                                    sizeof(err)) == 0)
        return 0;
    pthread_mutex_lock(&d->mu);
    d->nsteps--;
    d->outstanding--;
    pthread_mutex_unlock(&d->mu);
    free(cb);
    return -1;
}

/* 1 if this node applies bucket's partition as active. */
static int ixd_mine(ixdriver *d, const char *bucket) {
    keybuf rk;
    keybuf_init(&rk);
    int p = -1;
    if (keycodec_route_key(&rk, bucket, strlen(bucket), (const uint8_t *)"", 0) == 0)
        p = rangemap_partition(objlog_materializer_rangemap(d->q->m), rk.data, rk.len);
    keybuf_free(&rk);
    return p >= 0 && objlog_materializer_role(d->q->m, p) == OBJLOG_ROLE_ACTIVE;
}

/* 1 if a scan is due: forced, or some partition's applied offset or role
 * moved since the last one. Records the current ones (taken before the
 * scan reads, so whatever is applied during it shows as a move next time). */
static int ixd_scan_due(ixdriver *d) {
    int due = d->must_scan;
    d->must_scan = 0;
    for (int p = 0; p < d->nparts; p++) {
        int64_t a = objlog_materializer_applied(d->q->m, p);
        uint8_t act = objlog_materializer_role(d->q->m, p) == OBJLOG_ROLE_ACTIVE;
        if (a != d->seen_applied[p] || act != d->seen_active[p])
            due = 1;
        d->seen_applied[p] = a;
        d->seen_active[p] = act;
    }
    return due;
}

/* One pass over the `buckets` rows: a step for each building index. */
static int ixd_scan(ixdriver *d) {
    objlog_store *st = d->q->store;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(st), ro,
                                                        objlog_store_cf(st, OBJLOG_CF_BUCKETS));
    int issued = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it) && issued < IXDRIVER_MAX_STEPS;
         rocksdb_iter_next(it)) {
        size_t kn, vn, bn;
        int32_t stake;
        const char *key = rocksdb_iter_key(it, &kn);
        if (objlog_bucket_row_kind(key, kn, &bn, &stake) != 0)
            continue; /* a stake's copy: the home record has the indexes */
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__BucketRecord *r = objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v);
        if (!r)
            continue;
        for (size_t i = 0; i < r->n_indexes && issued < IXDRIVER_MAX_STEPS; i++) {
            if (!r->indexes[i]->building || !ixd_mine(d, r->name))
                continue;
            if (ixd_step(d, r->name, r->indexes[i]->name) == 0)
                issued++;
            else
                d->must_scan = 1; /* refused at once: try again next time */
        }
        objlog__bucket_record__free_unpacked(r, NULL);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return issued;
}

static void *ixd_main(void *arg) {
    ixdriver *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        int pending = ixd_round_pending(d);
        if (pending == 1) {
            ixd_sleep(d, IXDRIVER_POLL_MS);
            continue;
        }
        d->nsteps = 0;
        if (pending == 2) {
            d->must_scan = 1; /* the refused step's index is still building */
            if (ixd_sleep(d, IXDRIVER_FAIL_MS))
                break;
        }
        pthread_mutex_unlock(&d->mu);
        int issued = ixd_scan_due(d) ? ixd_scan(d) : 0;
        pthread_mutex_lock(&d->mu);
        if (!issued)
            ixd_sleep(d, IXDRIVER_IDLE_MS);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

ixdriver *ixdriver_new(objlog_query *q, char *errstr, size_t errstr_size) {
    ixdriver *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    d->q = q;
    d->nparts = objlog_materializer_partitions(q->m);
    d->must_scan = 1; /* a restart finds the indexes still building */
    size_t np = (size_t)(d->nparts > 0 ? d->nparts : 1);
    d->seen_applied = calloc(np, sizeof(*d->seen_applied));
    d->seen_active = calloc(np, sizeof(*d->seen_active));
    if (!d->seen_applied || !d->seen_active) {
        free(d->seen_applied);
        free(d->seen_active);
        free(d);
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (pthread_create(&d->thread, NULL, ixd_main, d) != 0) {
        snprintf(errstr, errstr_size, "index driver: pthread_create failed");
        ixdriver_destroy(d);
        return NULL;
    }
    d->started = 1;
    return d;
}

void ixdriver_stop(ixdriver *d) {
    if (!d || !d->started)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    d->started = 0;
}

/* After the producer is gone: its callbacks (which touch d) have all run. */
void ixdriver_destroy(ixdriver *d) {
    if (!d)
        return;
    ixdriver_stop(d);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d->seen_applied);
    free(d->seen_active);
    free(d);
}
