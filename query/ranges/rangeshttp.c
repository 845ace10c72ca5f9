/* rangeshttp.c: POST /v1/ranges/{split,move,merge} (ranges.h), and the
 * merges a DeleteBucket of a bucket split over partitions waits for.
 *
 * A handoff takes seconds (two events appended and applied, the map
 * published): it never runs on a worker's event loop. The handler checks
 * the body, starts a thread that runs the handoff, and that thread wakes
 * the worker (an event of the request's own), which answers; or, for a
 * DeleteBucket, runs the request's route again once the bucket's ranges
 * are merged (http_rerun), so the bucket's home decides it whole.
 *
 * Invariant: a job belongs to the worker that took its request; only that
 * worker's thread touches the request, joins the thread and frees the
 * job. A stopping worker waits for its jobs (a handoff is bounded by its
 * steps' timeouts) and answers them. */
#include "core.h"
#include "ranges.h"
#include "server.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "bucketname.h"
#include "cluster.h"
#include "keycodec.h"
#include "rangemap.h"
#include "view.h"

typedef struct ranges_job ranges_job;
struct ranges_job {
    http_worker *w;
    struct evhttp_request *req;
    char request_id[33];
    struct timespec start;
    ranges_req rq;
    ranges_result res;
    pthread_t thread;
    struct event *done_ev;
    int answered;
    const http_face *face;       /* rerun: the request's face */
    int rerun;                   /* a DeleteBucket's merges: run its route again */
    ranges_job *next;            /* its worker's list */
};

typedef struct ranges_worker {
    ranges_job *jobs;
} ranges_worker;

static ranges_worker *rw_of(const http_worker *w) {
    return server_slot(w, w->q->ranges->slot);
}

/* The key of the last range that starts inside bucket under rm into key;
 * 1, or 0 none. */
static int last_inside(const rangemap *rm, const char *bucket, keybuf *key) {
    keybuf b, k;
    keybuf_init(&b);
    keybuf_init(&k);
    int found = 0;
    for (int i = 0; i < rangemap_count(rm); i++) {
        const uint8_t *s, *e;
        size_t sn, en, used = 0;
        int p;
        rangemap_entry(rm, i, &s, &sn, &e, &en, &p);
        keybuf_reset(&b);
        keybuf_reset(&k);
        if (sn > 2 && keycodec_parse_route_key(s, sn, &b, &k, &used) == 0 && used == sn &&
            k.len && b.len == strlen(bucket) && !memcmp(b.data, bucket, b.len)) {
            keybuf_reset(key);
            found = keybuf_append(key, k.data, k.len) == 0;
        }
    }
    keybuf_free(&b);
    keybuf_free(&k);
    return found;
}

static void *ranges_job_main(void *arg) {
    ranges_job *j = arg;
    if (!j->rerun) {
        ranges_run(j->w->q, &j->rq, &j->res);
        event_active(j->done_ev, 0, 0);
        return NULL;
    }
    /* Merge the bucket's ranges from the last down, until none starts
     * inside it (at most as many as the map has) or one fails. */
    for (int n = 0; n < 1024; n++) {
        if (!last_inside(objlog_materializer_rangemap(j->w->q->m), j->rq.bucket, &j->rq.key))
            break;
        ranges_run(j->w->q, &j->rq, &j->res);
        if (j->res.status != 200)
            break;
    }
    event_active(j->done_ev, 0, 0);
    return NULL;
}

/* A DeleteBucket's merges ended: its route runs again, whatever they did
 * (a bucket still spread is answered BucketSpansRanges by its home). */
static void job_rerun(ranges_job *j) {
    fence_result met = {.rc = FENCE_MET};
    http_rerun(j->w, j->req, j->request_id, &j->start, &met, j->face);
}

static void job_free(ranges_job *j) {
    if (j->done_ev)
        event_free(j->done_ev);
    keybuf_free(&j->rq.key);
    free(j);
}

static void job_unlink(ranges_job *j) {
    for (ranges_job **pp = &rw_of(j->w)->jobs; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            return;
        }
}

static void job_answer(ranges_job *j) {
    http_ctx c = {.req = j->req, .w = j->w, .q = j->w->q, .endpoint = HTTP_EP_OTHER,
                  .start = j->start};
    memcpy(c.request_id, j->request_id, sizeof(c.request_id));
    const ranges_result *r = &j->res;
    if (r->status != 200) {
        http_reply_error(&c, r->status, r->code, "%s", r->message);
        return;
    }
    json_t *body = json_pack(
        "{s:s, s:I, s:i, s:i, s:I, s:I, s:I, s:f, s:f}", "kind", ranges_kind_name(j->rq.kind),
        "epoch", (json_int_t)r->epoch, "from_partition", r->from, "to_partition", r->to,
        "range_out_offset", (json_int_t)r->out_offset, "range_in_offset",
        (json_int_t)r->in_offset, "imported_requests", (json_int_t)r->imported, "seconds",
        r->seconds, "writes_held_seconds", r->held_seconds);
    if (!body)
        http_reply_error(&c, 500, "InternalError", "out of memory");
    else
        http_reply_json(&c, 200, body);
}

static void job_done_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    ranges_job *j = arg;
    pthread_join(j->thread, NULL);
    job_unlink(j);
    if (j->rerun)
        job_rerun(j);
    else
        job_answer(j);
    job_free(j);
}

/* The body's fields into rq; 0, or -1 after answering 400. */
static int parse_body(http_ctx *c, ranges_req *rq) {
    struct evbuffer *b = evhttp_request_get_input_buffer(c->req);
    size_t n = evbuffer_get_length(b);
    json_error_t jerr;
    json_t *j = n ? json_loadb((const char *)evbuffer_pullup(b, -1), n, 0, &jerr) : NULL;
    const char *usage = "the body must be a JSON object "
                        "{\"bucket\":B,\"key\":K (optional),\"to_partition\":P (optional)}";
    json_t *bucket = json_object_get(j, "bucket"), *key = json_object_get(j, "key"),
           *to = json_object_get(j, "to_partition");
    const char *why = NULL;
    char name_why[160];
    if (!j || !json_is_object(j))
        why = usage;
    else if (!json_is_string(bucket))
        why = "\"bucket\" (a string) is required";
    else if (bucketname_error(json_string_value(bucket), json_string_length(bucket))) {
        snprintf(name_why, sizeof(name_why), "invalid bucket name: %s",
                 bucketname_error(json_string_value(bucket), json_string_length(bucket)));
        why = name_why;
    }
    else if (key && !json_is_string(key))
        why = "\"key\" must be a string";
    else if (to && (!json_is_integer(to) || json_integer_value(to) < 0 ||
                    json_integer_value(to) > 1000000))
        why = "\"to_partition\" must be a partition number";
    if (why) {
        http_reply_error(c, 400, j && json_is_object(j) ? "InvalidArgument" : "MalformedJSON",
                         "%s", why);
        json_decref(j);
        return -1;
    }
    snprintf(rq->bucket, sizeof(rq->bucket), "%s", json_string_value(bucket));
    keybuf_init(&rq->key);
    rq->to = to ? (int)json_integer_value(to) : -1;
    int rc = key ? keybuf_append(&rq->key, json_string_value(key), json_string_length(key)) : 0;
    json_decref(j);
    if (rc < 0) {
        keybuf_free(&rq->key);
        http_reply_error(c, 500, "InternalError", "out of memory");
    }
    return rc;
}

/* In a cluster a handoff runs on the coordinator (ranges.h): a request
 * that came elsewhere goes there (one hop). 1 when c is answered or will
 * be by the coordinator, 0 run it here. */
static int ranges_forward(http_ctx *c) {
    char url[CLUSTER_URL_MAX];
    if (ranges_coordinator(c->q, url, sizeof(url)))
        return 0;
    if (url[0] && !http_hop(c))
        return forward_request(c, url, -1);
    http_reply_error(c, 503, "SlowDown",
                     "handoffs are run by the node that applies partition %d, %s; retry",
                     RANGES_COORDINATOR_PARTITION, url[0] ? url : "which has none now");
    return 1;
}

void ranges_post(http_ctx *c, ranges_kind kind) {
    if (evhttp_request_get_command(c->req) != EVHTTP_REQ_POST) {
        http_add_header(c, "Allow", "POST");
        http_reply_error(c, 405, "MethodNotAllowed",
                         "method not allowed on this resource (allowed: POST)");
        return;
    }
    if (c->w->stopping) {
        http_reply_error(c, 503, "SlowDown", "the server is stopping");
        return;
    }
    if (ranges_forward(c))
        return;
    ranges_job *j = calloc(1, sizeof(*j));
    if (!j) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    j->rq.kind = kind;
    if (parse_body(c, &j->rq) < 0) {
        free(j);
        return;
    }
    j->w = c->w;
    j->req = c->req;
    j->start = c->start;
    memcpy(j->request_id, c->request_id, sizeof(j->request_id));
    j->done_ev = event_new(c->w->base, -1, 0, job_done_cb, j);
    if (!j->done_ev || pthread_create(&j->thread, NULL, ranges_job_main, j) != 0) {
        http_reply_error(c, 500, "InternalError", "cannot start the handoff");
        job_free(j);
        return;
    }
    j->next = rw_of(c->w)->jobs;
    rw_of(c->w)->jobs = j;
}

/* 1 if bucket has a range starting inside it (keys on several
 * partitions) under this node's map. */
static int bucket_spread(objlog_query *q, const char *bucket) {
    keybuf k;
    keybuf_init(&k);
    int spread = last_inside(objlog_materializer_rangemap(q->m), bucket, &k);
    keybuf_free(&k);
    return spread;
}

/* 1 if the view shows nothing under bucket (no version, marker or
 * upload, summed over its stakes), 0 if something, -1 unknown. */
static int bucket_looks_empty(objlog_query *q, const char *bucket) {
    view *v = view_open(q->store);
    view_usage u;
    char err[256];
    view_rc rc = v ? view_bucket_usage(v, bucket, &u, err, sizeof(err)) : VIEW_ERROR;
    if (v)
        view_close(v);
    if (rc != VIEW_OK)
        return -1;
    return u.versions + u.delete_markers + u.uploads == 0;
}

int ranges_delete_spread(http_ctx *c, const char *bucket) {
    if (c->fenced || !bucket_spread(c->q, bucket))
        return 0;
    char url[CLUSTER_URL_MAX];
    if (!ranges_coordinator(c->q, url, sizeof(url))) {
        /* The merges run on the coordinator: the request (bodiless) goes
         * there. */
        if (url[0] && !http_hop(c))
            return forward_request(c, url, -1);
        return 0;
    }
    /* Not empty as far as this view knows: S3's answer at once, and the
     * ranges stay as they are (a merge would only undo a split). */
    if (bucket_looks_empty(c->q, bucket) == 0) {
        http_reply_error(c, 409, "BucketNotEmpty",
                         "bucket %s is not empty (versions, delete markers or uploads remain)",
                         bucket);
        return 1;
    }
    ranges_job *j = calloc(1, sizeof(*j));
    if (!j || c->w->stopping) {
        free(j);
        return 0; /* its home answers BucketSpansRanges */
    }
    j->rerun = 1;
    j->rq.kind = RANGES_MERGE;
    j->rq.to = -1;
    snprintf(j->rq.bucket, sizeof(j->rq.bucket), "%s", bucket);
    keybuf_init(&j->rq.key);
    j->w = c->w;
    j->req = c->req;
    j->start = c->start;
    j->face = c->face;
    memcpy(j->request_id, c->request_id, sizeof(j->request_id));
    j->done_ev = event_new(c->w->base, -1, 0, job_done_cb, j);
    if (!j->done_ev || pthread_create(&j->thread, NULL, ranges_job_main, j) != 0) {
        job_free(j);
        return 0;
    }
    j->next = rw_of(c->w)->jobs;
    rw_of(c->w)->jobs = j;
    return 1;
}

/* As the worker stops: its handoffs end (bounded by their steps'
 * timeouts) and are answered, so the in-flight count reaches zero. */
static void rw_stop(void *arg, http_worker *w, void *state) {
    (void)arg;
    (void)w;
    ranges_worker *rw = state;
    while (rw->jobs) {
        ranges_job *j = rw->jobs;
        rw->jobs = j->next;
        pthread_join(j->thread, NULL);
        if (j->rerun)
            job_rerun(j);
        else
            job_answer(j);
        job_free(j);
    }
}

static int rw_init(void *arg, http_worker *w, void **state, char *errstr, size_t es) {
    (void)arg;
    (void)w;
    *state = calloc(1, sizeof(ranges_worker));
    if (!*state)
        snprintf(errstr, es, "ranges: out of memory");
    return *state ? 0 : -1;
}

static void rw_dispose(void *arg, http_worker *w, void *state) {
    (void)arg;
    (void)w;
    free(state);
}

ranges_state *ranges_new(server *s, char *errstr, size_t errstr_size) {
    ranges_state *r = calloc(1, sizeof(*r));
    server_hooks h = {.init = rw_init, .stop = rw_stop, .dispose = rw_dispose};
    if (!r || (r->slot = server_hooks_add(s, &h)) < 0) {
        snprintf(errstr, errstr_size, "ranges: %s", r ? "too many server hooks" : "out of memory");
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->run_mu, NULL);
    pthread_mutex_init(&r->active_mu, NULL);
    keybuf_init(&r->active_start);
    return r;
}

void ranges_free(ranges_state *r) {
    if (!r)
        return;
    free(r->as_prev);
    free(r->as_hot);
    free(r->as_quiet_until);
    free(r->as_hot_from);
    pthread_mutex_destroy(&r->run_mu);
    pthread_mutex_destroy(&r->active_mu);
    keybuf_free(&r->active_start);
    free(r);
}
