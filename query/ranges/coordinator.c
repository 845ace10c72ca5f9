/* coordinator.c: one range handoff from request to published map
 * (docs/ARCHITECTURE.md, "Ranges move").
 *
 * In order: the new map is computed from the current one (schemas/
 * rangemap.c); this node's producer holds writes into the moving range
 * and flushes what it routed before; the RangeOut is appended to the
 * source partition and awaited as applied; the RangeIn naming its offset
 * is appended to the target and awaited as applied (the target's state
 * machine takes the range's state there, once the source applied its
 * RangeOut); then the map is published on the control topic, installed
 * for this node's readers, and the producer releases the held writes,
 * routed by it.
 *
 * In a cluster one node runs them all, the active node of partition 0
 * (ranges_coordinator; the others forward requests there), so that maps
 * are made one after another; a step whose partition another node
 * applies waits for the outcome there. The finisher of a handoff its
 * coordinator left runs where the RangeOut's marker is, the source's
 * node, after a grace (finish_due).
 *
 * Invariant: the map is published only after the RangeIn applied OK. A
 * failure before the RangeOut applied changes nothing (the hold is
 * released, the old map stays); a failure after it leaves the handoff to
 * be finished from the log (the RangeOut's marker row stays until a
 * RangeIn takes it). The RangeIn's request id is a function of the
 * RangeOut's position, so sending it twice applies it once. */
#include "core.h"
#include "ranges.h"

#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"
#include "control.h"
#include "objlog.pb-c.h"
#include "objlog_logger.h"
#include "producer_event.h"
#include "rangemap.h"
#include "watermark.h"

#define RANGES_STEP_TIMEOUT_MS 60000

static uint32_t installed_epoch(objlog_query *q) {
    return rangemap_epoch(objlog_materializer_rangemap(q->m));
}

const char *ranges_kind_name(ranges_kind k) {
    static const char *const names[] = {"split", "move", "merge"};
    return k >= 0 && k < RANGES_KINDS ? names[k] : "?";
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(ranges_result *out, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(ranges_result *out, int status, const char *code, const char *fmt, ...) {
    out->status = status;
    snprintf(out->code, sizeof(out->code), "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
}

/* ---- the plan: which range moves where ---- */

typedef struct plan {
    rangemap *next;              /* the map after the handoff */
    keybuf start, end;           /* the moving range; end empty: no end */
    int from, to;
} plan;

static void plan_free(plan *pl) {
    rangemap_destroy(pl->next);
    keybuf_free(&pl->start);
    keybuf_free(&pl->end);
}

/* The partition with the fewest ranges of rm but `not`, ties to the one
 * with the fewest applied events here. */
static int least_loaded(objlog_query *q, const rangemap *rm, int nparts, int not) {
    int best = -1, best_ranges = 0;
    int64_t best_applied = 0;
    for (int p = 0; p < nparts; p++) {
        if (p == not)
            continue;
        int ranges = 0;
        for (int i = 0; i < rangemap_count(rm); i++) {
            const uint8_t *s, *e;
            size_t sn, en;
            int part;
            rangemap_entry(rm, i, &s, &sn, &e, &en, &part);
            ranges += part == p;
        }
        int64_t applied = objlog_materializer_applied(q->m, p);
        if (best < 0 || ranges < best_ranges ||
            (ranges == best_ranges && applied < best_applied)) {
            best = p;
            best_ranges = ranges;
            best_applied = applied;
        }
    }
    return best;
}

/* A split inside a bucket whose rows cannot be cut (see stake.c: the
 * state machine refuses it too): 0 fine, -1 with out filled. */
static int split_refused(objlog_query *q, const ranges_req *req, ranges_result *out,
                         const rangemap *cur) {
    Objlog__BucketRecord *r = NULL;
    char err[256];
    keybuf first;
    keybuf_init(&first);
    int home = keycodec_route_key(&first, req->bucket, strlen(req->bucket),
                                  (const uint8_t *)"", 0) == 0
                   ? rangemap_partition(cur, first.data, first.len) : -1;
    keybuf_free(&first);
    if (q->cluster && (home < 0 || !objlog_materializer_applies(q->m, home)))
        return 0; /* another node's record: its state machine refuses such a cut */
    int rc = objlog_store_get_bucket(q->store, req->bucket, &r, err, sizeof(err));
    if (rc < 0) {
        fail(out, 500, "InternalError", "%s", err);
        return -1;
    }
    if (rc == 0) {
        fail(out, 404, "NoSuchBucket", "bucket %s does not exist", req->bucket);
        return -1;
    }
    int indexed = r->n_indexes > 0;
    objlog__bucket_record__free_unpacked(r, NULL);
    if (!indexed)
        return 0;
    fail(out, 409, "SplitInsideBucket",
         "bucket %s has attribute indexes, whose rows are kept per bucket: drop them to "
         "split inside it, or split between buckets", req->bucket);
    return -1;
}

/* Sets pl from the request against cur. 0, or -1 with out filled. */
static int plan_make(objlog_query *q, const ranges_req *req, const rangemap *cur,
                     plan *pl, ranges_result *out) {
    int nparts = objlog_materializer_partitions(q->m);
    keybuf at;
    keybuf_init(&at);
    int rc = req->key.len
                 ? keycodec_route_key(&at, req->bucket, strlen(req->bucket), req->key.data,
                                      req->key.len)
                 : keycodec_bucket_part(&at, req->bucket, strlen(req->bucket));
    if (rc < 0) {
        keybuf_free(&at);
        fail(out, 500, "InternalError", "out of memory");
        return -1;
    }
    if (req->key.len && req->kind == RANGES_SPLIT &&
        split_refused(q, req, out, cur) < 0) {
        keybuf_free(&at);
        return -1;
    }
    if (req->to >= nparts) {
        keybuf_free(&at);
        fail(out, 409, "NoSuchPartition", "partition %d does not exist (the topic has %d)",
             req->to, nparts);
        return -1;
    }
    int i = rangemap_index(cur, at.data, at.len);
    const uint8_t *s, *e;
    size_t sn, en;
    int part;
    rangemap_entry(cur, i, &s, &sn, &e, &en, &part);
    char why[256] = "";
    pl->from = part;
    if (req->kind == RANGES_SPLIT) {
        pl->to = req->to >= 0 ? req->to : least_loaded(q, cur, nparts, part);
        pl->next = rangemap_split(cur, at.data, at.len, pl->to, nparts, why, sizeof(why));
        s = at.data;
        sn = at.len;
    } else if (req->kind == RANGES_MOVE) {
        pl->to = req->to >= 0 ? req->to : least_loaded(q, cur, nparts, part);
        pl->next = rangemap_move(cur, s, sn, pl->to, nparts, why, sizeof(why));
    } else {
        if (i == 0) {
            snprintf(why, sizeof(why), "the first range has no range before it to merge into");
        } else {
            const uint8_t *ps, *pe;
            size_t psn, pen;
            rangemap_entry(cur, i - 1, &ps, &psn, &pe, &pen, &pl->to);
            pl->next = rangemap_merge(cur, s, sn, why, sizeof(why));
        }
    }
    if (pl->next && (keybuf_append(&pl->start, s, sn) < 0 ||
                     (en && keybuf_append(&pl->end, e, en) < 0))) {
        snprintf(why, sizeof(why), "out of memory");
        rangemap_destroy(pl->next);
        pl->next = NULL;
    }
    keybuf_free(&at);
    if (!pl->next) {
        fail(out, 409, "InvalidRange", "%s of the range holding bucket %s: %s",
             ranges_kind_name(req->kind), req->bucket, why);
        return -1;
    }
    return 0;
}

/* ---- one event, awaited as applied ---- */

typedef struct delivery {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    objlog_write_result res;
} delivery;

static void delivered(const objlog_write_result *res, void *opaque) {
    delivery *d = opaque;
    pthread_mutex_lock(&d->mu);
    d->res = *res;
    d->done = 1;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* The outcome of p.off from the node that applies p, when that is not
 * this one (a handoff between nodes): 0 (*o), 1 not in time, -1 error,
 * CLUSTER_OUTCOME_LOCAL wait here. */
static int remote_outcome(objlog_query *q, int32_t p, int64_t off, Objlog__Outcome **o,
                          char *err, size_t en) {
    if (!q->cluster || objlog_materializer_applies(q->m, p))
        return CLUSTER_OUTCOME_LOCAL;
    return cluster_remote_outcome(q->cluster, q->m, p, off, RANGES_STEP_TIMEOUT_MS, o, err, en);
}

/* Appends ev to partition p with request id rid, waits until it is
 * applied and returns its outcome code (*off its offset), or -1 with out
 * filled. */
static int step(objlog_query *q, Objlog__Event *ev, int32_t p, const keybuf *kkey,
                const uint8_t rid[OBJLOG_REQUEST_ID_LEN], int64_t *off, char *msg,
                size_t msg_n, ranges_result *out) {
    delivery d = {.done = 0};
    pthread_mutex_init(&d.mu, NULL);
    pthread_cond_init(&d.cv, NULL);
    objlog_write_opts opts = {.request_id = rid};
    char err[256];
    int rc = producer_write_to_partition(q->producer, ev, p, kkey->data, kkey->len, &opts,
                                         delivered, &d, err, sizeof(err));
    if (rc == 0) {
        pthread_mutex_lock(&d.mu);
        while (!d.done)
            pthread_cond_wait(&d.cv, &d.mu);
        pthread_mutex_unlock(&d.mu);
    }
    pthread_mutex_destroy(&d.mu);
    pthread_cond_destroy(&d.cv);
    if (rc < 0 || d.res.status != OBJLOG_STATUS_LOGGED) {
        fail(out, 503, "SlowDown", "append to partition %d: %s", p,
             rc < 0 ? err : d.res.error_message);
        return -1;
    }
    *off = d.res.offset;
    Objlog__Outcome *o = NULL;
    int w = remote_outcome(q, p, d.res.offset, &o, err, sizeof(err));
    if (w == CLUSTER_OUTCOME_LOCAL)
        w = objlog_materializer_wait_applied(q->m, p, d.res.offset, RANGES_STEP_TIMEOUT_MS);
    if (w != 0 || (!o && objlog_store_get_outcome(q->store, p, d.res.offset, &o, err,
                                                  sizeof(err)) != 1)) {
        fail(out, 503, "SlowDown", "partition %d offset %lld: %s", p,
             (long long)d.res.offset,
             w > 0 ? "not applied in time" : w < 0 ? "the partition stopped" : err);
        return -1;
    }
    int code = o->code;
    snprintf(msg, msg_n, "%s", o->message);
    out->imported = o->imported;
    objlog__outcome__free_unpacked(o, NULL);
    return code;
}

/* The RangeIn's request id: a function of the RangeOut's position, so a
 * RangeIn sent again (a retry, a finisher) is deduplicated. */
static void range_in_id(int32_t p, int64_t off, uint8_t rid[OBJLOG_REQUEST_ID_LEN]) {
    char in[64];
    uint8_t md[SHA256_DIGEST_LENGTH];
    int n = snprintf(in, sizeof(in), "objlog RangeIn %d %lld", p, (long long)off);
    SHA256((const unsigned char *)in, (size_t)n, md);
    memcpy(rid, md, OBJLOG_REQUEST_ID_LEN);
}

static Objlog__RangeMap *map_msg(const rangemap *rm) {
    uint8_t *buf = NULL;
    size_t n = 0;
    if (rangemap_encode(rm, &buf, &n) < 0)
        return NULL;
    Objlog__RangeMap *m = objlog__range_map__unpack(NULL, n, buf);
    free(buf);
    return m;
}

/* The RangeOut of pl, applied on its source: 0 (out->out_offset), or -1
 * with out filled. */
static int send_range_out(objlog_query *q, const plan *pl, Objlog__RangeMap *mm,
                          ranges_result *out) {
    char msg[256];
    uint8_t rid[OBJLOG_REQUEST_ID_LEN];
    Objlog__RangeOut ro = OBJLOG__RANGE_OUT__INIT;
    ro.map = mm;
    ro.start = (ProtobufCBinaryData){pl->start.len, pl->start.data};
    ro.end = (ProtobufCBinaryData){pl->end.len, pl->end.data};
    ro.to_partition = pl->to;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = "";
    ev.op_case = OBJLOG__EVENT__OP_RANGE_OUT;
    ev.range_out = &ro;
    if (RAND_bytes(rid, sizeof(rid)) != 1) {
        fail(out, 500, "InternalError", "no randomness");
        return -1;
    }
    int code = step(q, &ev, pl->from, &pl->start, rid, &out->out_offset, msg, sizeof(msg), out);
    if (code > 0)
        fail(out, 409, "HandoffRefused", "RangeOut on partition %d: %s", pl->from, msg);
    return code == 0 ? 0 : -1;
}

/* The RangeIn naming the RangeOut at (pl->from, from_off), applied on the
 * target: 0 (out->in_offset), or -1 with out filled. */
static int send_range_in(objlog_query *q, const plan *pl, Objlog__RangeMap *mm,
                         int64_t from_off, ranges_result *out) {
    char msg[256];
    uint8_t rid[OBJLOG_REQUEST_ID_LEN];
    Objlog__RangeIn ri = OBJLOG__RANGE_IN__INIT;
    ri.map = mm;
    ri.start = (ProtobufCBinaryData){pl->start.len, pl->start.data};
    ri.end = (ProtobufCBinaryData){pl->end.len, pl->end.data};
    ri.from_partition = pl->from;
    ri.from_offset = from_off;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = "";
    ev.op_case = OBJLOG__EVENT__OP_RANGE_IN;
    ev.range_in = &ri;
    range_in_id(pl->from, from_off, rid);
    int code = step(q, &ev, pl->to, &pl->start, rid, &out->in_offset, msg, sizeof(msg), out);
    if (code > 0)
        fail(out, 500, "InternalError",
             "RangeIn on partition %d refused after the RangeOut at %d.%lld: %s", pl->to,
             pl->from, (long long)from_off, msg);
    return code == 0 ? 0 : -1;
}

/* Tests only (objlogd --test-handoff-pause-ms): a window to kill the
 * node in the middle of a handoff. */
static void test_pause(objlog_query *q) {
    int ms = q->ranges->test_pause_ms;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    if (ms > 0)
        nanosleep(&ts, NULL);
}

/* RangeOut then RangeIn (from_off >= 0: the RangeOut is applied there
 * already, only the RangeIn is sent). 0, or -1 with out filled. */
static int handoff_events(objlog_query *q, const plan *pl, int64_t from_off,
                          ranges_result *out) {
    Objlog__RangeMap *mm = map_msg(pl->next);
    if (!mm) {
        fail(out, 500, "InternalError", "out of memory");
        return -1;
    }
    out->out_offset = from_off;
    int rc = from_off >= 0 ? 0 : send_range_out(q, pl, mm, out);
    if (rc == 0 && from_off < 0)
        test_pause(q); /* a test kills the node here: after the RangeOut */
    if (rc == 0)
        rc = send_range_in(q, pl, mm, out->out_offset, out);
    if (rc == 0 && from_off < 0)
        test_pause(q); /* ... and here: after the RangeIn, before the map is out */
    objlog__range_map__free_unpacked(mm, NULL);
    return rc;
}

/* ---- what GET /v1/ranges shows ---- */

static void set_active(ranges_state *r, const keybuf *start) {
    pthread_mutex_lock(&r->active_mu);
    keybuf_reset(&r->active_start);
    r->active = start && keybuf_append(&r->active_start, start->data, start->len) == 0;
    pthread_mutex_unlock(&r->active_mu);
}

static int bytes_cmp(const uint8_t *x, size_t xn, const uint8_t *y, size_t yn) {
    size_t m = xn < yn ? xn : yn;
    int c = m ? memcmp(x, y, m) : 0;
    return c ? c : (xn < yn ? -1 : xn > yn);
}

int ranges_moving(ranges_state *r, const uint8_t *s, size_t sn, const uint8_t *e, size_t en) {
    pthread_mutex_lock(&r->active_mu);
    const keybuf *a = &r->active_start;
    int m = r->active && bytes_cmp(a->data, a->len, s, sn) >= 0 &&
            (!en || bytes_cmp(a->data, a->len, e, en) < 0);
    pthread_mutex_unlock(&r->active_mu);
    return m;
}

/* ---- publishing ---- */

/* rm on the control topic. 0, or -1 with out filled. */
static int publish(objlog_query *q, const rangemap *rm, ranges_result *out) {
    char err[256];
    rd_kafka_t *rk = control_client_new_logged(q->brokers, objlog_logger_rdkafka,
                                               "kafka client", err, sizeof(err));
    int rc = rk ? control_publish_rangemap(rk, q->control_topic, rm, RANGES_STEP_TIMEOUT_MS,
                                           err, sizeof(err))
                : -1;
    if (rk)
        rd_kafka_destroy(rk);
    if (rc < 0)
        fail(out, 503, "SlowDown", "publish the range map: %s", err);
    return rc;
}

/* The new map for this node's readers and writers (copies: each owns its
 * own). The writes held go out, routed by it. */
static void install(objlog_query *q, const rangemap *rm) {
    rangemap *readers = rangemap_copy(rm);
    if (readers)
        objlog_materializer_set_rangemap(q->m, readers);
    producer_release_range(q->producer, rangemap_copy(rm));
}

static void note(objlog_query *q, const ranges_req *req, const ranges_result *out) {
    ranges_state *r = q->ranges;
    atomic_fetch_add(&r->done[req->kind][out->status == 200 ? 0 : 1], 1);
    if (out->status != 200)
        return;
    uint64_t held = (uint64_t)(out->held_seconds * 1e6);
    atomic_fetch_add(&r->imported, out->imported);
    atomic_fetch_add(&r->seconds_us, (uint64_t)(out->seconds * 1e6));
    atomic_fetch_add(&r->held_us, held);
    uint64_t max = atomic_load(&r->held_max_us);
    while (held > max && !atomic_compare_exchange_weak(&r->held_max_us, &max, held))
        ;
}

/* With the run lock held. */
static void run_locked(objlog_query *q, const ranges_req *req, ranges_result *out) {
    double t0 = mono_s();
    const rangemap *cur = objlog_materializer_rangemap(q->m);
    plan pl;
    memset(&pl, 0, sizeof(pl));
    keybuf_init(&pl.start);
    keybuf_init(&pl.end);
    if (plan_make(q, req, cur, &pl, out) < 0) {
        plan_free(&pl);
        return;
    }
    out->from = pl.from;
    out->to = pl.to;
    out->epoch = rangemap_epoch(pl.next);
    if (pl.from != pl.to && !q->cluster &&
        (!objlog_materializer_applies(q->m, pl.from) || !objlog_materializer_applies(q->m, pl.to))) {
        fail(out, 409, "PartitionNotApplied",
             "partitions %d and %d are not both applied by this objlogd", pl.from, pl.to);
        plan_free(&pl);
        return;
    }
    /* The genesis map goes on the control topic before the first handoff
     * of a log from before handoffs (publishing epoch 1 writes it). */
    if (rangemap_epoch(cur) == CONTROL_DEFAULT_EPOCH && publish(q, cur, out) < 0) {
        plan_free(&pl);
        return;
    }
    char err[256];
    if (pl.from == pl.to) {
        /* A split or merge within one partition moves nothing. */
        if (publish(q, pl.next, out) == 0) {
            install(q, pl.next);
            out->status = 200;
        }
        plan_free(&pl);
        out->seconds = mono_s() - t0;
        return;
    }
    if (producer_hold_range(q->producer, pl.start.data, pl.start.len, pl.end.data,
                            pl.end.len, RANGES_STEP_TIMEOUT_MS, err, sizeof(err)) < 0) {
        fail(out, 503, "SlowDown", "%s", err);
        plan_free(&pl);
        return;
    }
    double held_from = mono_s();
    set_active(q->ranges, &pl.start);
    int rc = handoff_events(q, &pl, -1, out);
    if (rc == 0)
        rc = publish(q, pl.next, out);
    if (rc == 0) {
        install(q, pl.next);
        out->status = 200;
    } else {
        /* Before the RangeOut applied nothing changed; after it, the held
         * writes meet WrongRange where they go, until the handoff is
         * finished from the log. */
        producer_release_range(q->producer, NULL);
    }
    set_active(q->ranges, NULL);
    out->held_seconds = mono_s() - held_from;
    out->seconds = mono_s() - t0;
    plan_free(&pl);
}

int ranges_caught_up(objlog_query *q, int32_t p) {
    int64_t end = -1;
    if (objlog_materializer_role(q->m, p) != OBJLOG_ROLE_ACTIVE ||
        wm_end_offset(q->wm, p, 1, 2000, &end) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return 0;
    return objlog_materializer_applied(q->m, p) >= end;
}

/* The run lock is busy: when no handoff holds it (the ranges thread's
 * finisher does, for a moment each second), waits for it. 1 taken, 0 a
 * handoff runs (or the lock stayed busy for 10 s). */
static int run_lock_wait(ranges_state *r) {
    pthread_mutex_lock(&r->active_mu);
    int busy = r->active;
    pthread_mutex_unlock(&r->active_mu);
    if (busy)
        return 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    return pthread_mutex_timedlock(&r->run_mu, &until) == 0;
}

int ranges_coordinator(objlog_query *q, char *url, size_t n) {
    if (!q->cluster) {
        url[0] = '\0';
        return 1;
    }
    return cluster_active(q->cluster, RANGES_COORDINATOR_PARTITION, url, n) ==
           CLUSTER_OWNER_SELF;
}

void ranges_run(objlog_query *q, const ranges_req *req, ranges_result *out) {
    memset(out, 0, sizeof(*out));
    out->from = out->to = -1;
    out->out_offset = out->in_offset = -1;
    char url[256];
    if (!ranges_coordinator(q, url, sizeof(url))) {
        fail(out, 503, "SlowDown", "handoffs are run by the node that applies partition %d "
             "(%s); retry there", RANGES_COORDINATOR_PARTITION, url[0] ? url : "none now");
        note(q, req, out);
        return;
    }
    if (pthread_mutex_trylock(&q->ranges->run_mu) != 0 && !run_lock_wait(q->ranges)) {
        fail(out, 409, "HandoffInProgress", "a handoff is in progress on this node; retry");
        note(q, req, out);
        return;
    }
    run_locked(q, req, out);
    pthread_mutex_unlock(&q->ranges->run_mu);
    note(q, req, out);
}

/* ---- finishing a handoff from the log ---- */

/* The RangeOut at (p, off) whose RangeIn never came (a crash, a failed
 * step): the RangeIn is sent now, with the id the coordinator would have
 * used, and the map published. Writes to the range wait meanwhile. */
static void finish_one(objlog_query *q, int32_t p, int64_t off, const Objlog__RangeOut *ro) {
    ranges_result out;
    memset(&out, 0, sizeof(out));
    plan pl;
    memset(&pl, 0, sizeof(pl));
    keybuf_init(&pl.start);
    keybuf_init(&pl.end);
    char why[160];
    uint8_t *buf = NULL;
    size_t n = ro->map ? objlog__range_map__get_packed_size(ro->map) : 0;
    buf = n ? malloc(n) : NULL;
    if (buf) {
        objlog__range_map__pack(ro->map, buf);
        pl.next = rangemap_decode(buf, n, why, sizeof(why));
    }
    free(buf);
    pl.from = p;
    pl.to = ro->to_partition;
    /* Only once this node applied all the target's log holds: a RangeIn
     * there not applied yet (a view replaying, a lane behind) is not
     * missing, and sending one more would grow the log for nothing. */
    int local = objlog_materializer_applies(q->m, pl.to);
    if (!pl.next || keybuf_append(&pl.start, ro->start.data, ro->start.len) < 0 ||
        keybuf_append(&pl.end, ro->end.data, ro->end.len) < 0 ||
        (local && !ranges_caught_up(q, pl.to)) || (!local && !q->cluster)) {
        plan_free(&pl);
        return; /* not this node's to finish (or not now) */
    }
    char err[256];
    if (!q->ranges->held_at_start &&
        producer_hold_range(q->producer, pl.start.data, pl.start.len, pl.end.data,
                            pl.end.len, RANGES_STEP_TIMEOUT_MS, err, sizeof(err)) < 0) {
        plan_free(&pl);
        return;
    }
    q->ranges->held_at_start = 0;
    set_active(q->ranges, &pl.start);
    int rc = handoff_events(q, &pl, off, &out);
    if (rc == 0 && rangemap_epoch(pl.next) > rangemap_epoch(objlog_materializer_rangemap(q->m)))
        rc = publish(q, pl.next, &out);
    if (rc == 0)
        install(q, pl.next);
    else
        producer_release_range(q->producer, NULL);
    set_active(q->ranges, NULL);
    if (rc == 0)
        objlog_logf(OBJLOG_LEVEL_INFO, "ranges",
                    "handoff of partition %d's RangeOut at offset %lld to partition %d "
                    "finished from the log",
                    p, (long long)off, pl.to);
    else /* tried again every second: said once in a while */
        objlog_logf_limited(&q->ranges->finish_log, OBJLOG_LEVEL_WARNING, "ranges",
                            "handoff of partition %d's RangeOut at offset %lld to partition %d "
                            "not finished: %s: %s",
                            p, (long long)off, pl.to, out.code, out.message);
    plan_free(&pl);
}

/* A map the partitions applied here reached (their RangeIns applied) but
 * the control topic never got: published now. */
static void publish_newest(objlog_query *q) {
    rangemap *best = NULL;
    char err[256];
    for (int p = 0; p < objlog_materializer_partitions(q->m); p++) {
        if (!objlog_materializer_applies(q->m, p))
            continue;
        rangemap *rm = objlog_store_partition_map(q->store, p, err, sizeof(err));
        if (rm && (!best || rangemap_epoch(rm) > rangemap_epoch(best))) {
            rangemap_destroy(best);
            best = rm;
        } else {
            rangemap_destroy(rm);
        }
    }
    ranges_result out;
    if (best && rangemap_epoch(best) > rangemap_epoch(objlog_materializer_rangemap(q->m)) &&
        publish(q, best, &out) == 0) {
        objlog_logf(OBJLOG_LEVEL_INFO, "ranges", "range map epoch %u published from the log",
                    rangemap_epoch(best));
        install(q, best);
    }
    rangemap_destroy(best);
}

/* In a cluster the coordinator runs handoffs on another node than the
 * source's, where their markers are: one pending here is finished only
 * once it has been pending for this long (its coordinator died or gave
 * up after the RangeOut), not while its handoff is under way. */
#define RANGES_FINISH_GRACE_S 5.0

static int finish_due(objlog_query *q, int32_t p, int64_t off) {
    ranges_state *r = q->ranges;
    if (!q->cluster)
        return 1; /* the run lock orders the finisher after this node's handoffs */
    double now = mono_s();
    for (int i = 0; i < r->npending; i++)
        if (r->pending[i].p == p && r->pending[i].off == off)
            return now - r->pending[i].since >= RANGES_FINISH_GRACE_S;
    int at = 0;
    if (r->npending < 16)
        at = r->npending++;
    else /* full: the oldest goes */
        for (int i = 1; i < 16; i++)
            at = r->pending[i].since < r->pending[at].since ? i : at;
    r->pending[at].p = p;
    r->pending[at].off = off;
    r->pending[at].since = now;
    return 0;
}

void ranges_finish(objlog_query *q) {
    if (pthread_mutex_trylock(&q->ranges->run_mu) != 0)
        return; /* a handoff runs: it finishes its own */
    char err[256];
    int pending = 0;
    for (int p = 0; p < objlog_materializer_partitions(q->m); p++) {
        int64_t off;
        Objlog__RangeOut *ro = NULL;
        if (!objlog_materializer_applies(q->m, p) ||
            objlog_store_pending_handoff(q->store, p, installed_epoch(q), &off, &ro, err,
                                         sizeof(err)) != 1)
            continue;
        pending = 1;
        if (finish_due(q, p, off))
            finish_one(q, p, off, ro);
        objlog__range_out__free_unpacked(ro, NULL);
    }
    if (!pending)
        publish_newest(q);
    pthread_mutex_unlock(&q->ranges->run_mu);
}

/* Before the node takes requests: a map its partitions reached but the
 * control topic did not is published, and the range of a RangeOut still
 * waiting for its RangeIn is held, so this node's writes to it wait for
 * the finisher rather than meet WrongRange. */
void ranges_finish_prepare(objlog_query *q) {
    char err[256];
    for (int p = 0; p < objlog_materializer_partitions(q->m); p++) {
        int64_t off;
        Objlog__RangeOut *ro = NULL;
        if (!objlog_materializer_applies(q->m, p) ||
            objlog_store_pending_handoff(q->store, p, installed_epoch(q), &off, &ro, err,
                                         sizeof(err)) != 1)
            continue;
        int held = producer_hold_range(q->producer, ro->start.data, ro->start.len,
                                       ro->end.data, ro->end.len, RANGES_STEP_TIMEOUT_MS, err,
                                       sizeof(err)) == 0;
        objlog__range_out__free_unpacked(ro, NULL);
        if (held) {
            q->ranges->held_at_start = 1;
            return;
        }
    }
    publish_newest(q);
}

