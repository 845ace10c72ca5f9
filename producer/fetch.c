/* fetch.c: the outcome fetcher for ack=applied (docs/ARCHITECTURE.md,
 * "How a write flows"). One thread drives a curl multi handle. Per
 * partition it keeps the logged
 * writes still awaiting an outcome, ordered by offset, and has at most one
 * long-poll in flight:
 *   GET {query.url}/v1/outcomes?partition=P&from=<lowest pending offset>
 *       &max=1000&timeout_ms=N
 * The answer lists every applied outcome from that offset on, so one
 * request completes all the writes it covers (their request ids checked);
 * the next poll starts at once from the new lowest pending offset. A write
 * whose outcome has not come by its deadline (outcome.timeout.ms) is
 * re-produced with the same bytes while unknown.retries allow, else it
 * completes as UNKNOWN with its request id (retrying it is then safe).
 * The delivery-report thread only enqueues, so a slow query service never
 * delays other writes' Kafka acks.
 *
 * Invariant: an op is in exactly one of `incoming` (shared, locked) or one
 * partition's pending list (fetcher-thread only, ascending offsets), until
 * writeop_complete() frees it or writeop_resend() gives it back to
 * librdkafka. In-flight requests hold no op, only their partition, so an op
 * can expire while a poll that covers it is still running.
 */
#include "producer_int.h"
#include "producer_time.h"
#include "qhttp.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FETCH_MAX_SERVER_WAIT_MS 5000
#define FETCH_RETRY_MS 50
#define FETCH_BATCH_MAX 1000
#define FETCH_MAX_BODY (16 * 1024 * 1024)
#define FETCH_IDLE_MS 1000

/* One partition's pending writes and its (single) poll. */
typedef struct fpart {
    int32_t partition;
    write_op *head;             /* ascending res.offset */
    write_op *tail;
    CURL *easy;                 /* the poll in flight, or NULL */
    int64_t polled_from;        /* its from= offset */
    bodybuf body;            /* its response body so far */
    int64_t retry_at_ms;        /* no new poll before (after an error) */
    char last_error[160];       /* why the previous poll did not answer */
} fpart;

struct fetcher {
    char *url;
    fetch_reroute_fn *reroute;   /* WrongRange resends (producer.c), or NULL */
    void *reroute_arg;
    struct curl_slist *auth;     /* query.token's header, NULL none */
    CURLM *multi;
    pthread_t thread;
    pthread_mutex_t lock;
    write_op *incoming;          /* guarded by lock */
    int stop;                    /* guarded by lock */
    atomic_uint_fast64_t requests;
    /* fetcher-thread only */
    fpart **parts;               /* indexed by partition; each one stays
                                    put (curl holds pointers to it) */
    int nparts;
    long pending;
    int64_t next_expiry_ms;      /* no deadline falls before this */
};

/* ------------------------------------------------------------- pending */

static fpart *fetch_part(fetcher *f, int32_t partition) {
    if (partition < 0)
        return NULL;
    if (partition >= f->nparts) {
        int n = partition + 1;
        fpart **np = realloc(f->parts, sizeof(*np) * (size_t)n);
        if (!np)
            return NULL;
        memset(np + f->nparts, 0, sizeof(*np) * (size_t)(n - f->nparts));
        f->parts = np;
        f->nparts = n;
    }
    if (!f->parts[partition]) {
        fpart *fp = calloc(1, sizeof(*fp));
        if (!fp)
            return NULL;
        fp->partition = partition;
        fp->body.max = FETCH_MAX_BODY;
        f->parts[partition] = fp;
    }
    return f->parts[partition];
}

static void fpart_fix_tail(fpart *fp) {
    fp->tail = fp->head;
    while (fp->tail && fp->tail->next)
        fp->tail = fp->tail->next;
}

/* Delivery reports of a partition arrive in offset order, so this is
 * almost always an append. */
static void fpart_insert(fpart *fp, write_op *op) {
    op->next = NULL;
    if (!fp->head || fp->tail->res.offset <= op->res.offset) {
        if (fp->tail)
            fp->tail->next = op;
        else
            fp->head = op;
        fp->tail = op;
        return;
    }
    write_op **pp = &fp->head;
    while (*pp && (*pp)->res.offset <= op->res.offset)
        pp = &(*pp)->next;
    op->next = *pp;
    *pp = op;
}

static void fetch_unknown(write_op *op, const char *why) {
    op->res.status = OBJLOG_STATUS_UNKNOWN;
    snprintf(op->res.error_message, sizeof(op->res.error_message),
             "no outcome (%.150s); retry with request id %.32s",
             why && *why ? why : "timed out", op->res.request_id_hex);
    writeop_complete(op);
}

/* op (already unlinked) has no outcome in time: re-produce it while
 * unknown.retries allow, else complete it as UNKNOWN. */
static void fetch_give_up(fetcher *f, write_op *op, const char *why) {
    f->pending--;
    if (why && *why)
        snprintf(op->last_error, sizeof(op->last_error), "%s", why);
    if (op->retries_left > 0) {
        op->retries_left--;
        if (writeop_resend(op) == 0)
            return;
    }
    fetch_unknown(op, op->last_error[0] ? op->last_error : "timed out");
}

/* Expires every pending op past its deadline. */
static void fetch_expire(fetcher *f, int64_t now) {
    if (now < f->next_expiry_ms)
        return;
    int64_t next = INT64_MAX;
    for (int i = 0; i < f->nparts; i++) {
        fpart *fp = f->parts[i];
        if (!fp)
            continue;
        write_op **pp = &fp->head;
        while (*pp) {
            write_op *op = *pp;
            if (op->deadline_ms > now) {
                if (op->deadline_ms < next)
                    next = op->deadline_ms;
                pp = &op->next;
                continue;
            }
            *pp = op->next;
            fetch_give_up(f, op, fp->last_error);
        }
        fpart_fix_tail(fp);
    }
    f->next_expiry_ms = next;
}

/* ------------------------------------------------------------ requests */

/* Server-side wait: until the earliest pending deadline, capped. */
static long fetch_wait_ms(const fpart *fp, int64_t now) {
    int64_t first = INT64_MAX;
    for (const write_op *op = fp->head; op; op = op->next)
        if (op->deadline_ms < first)
            first = op->deadline_ms;
    int64_t wait = first - now - 100;
    if (wait < 0)
        wait = 0;
    if (wait > FETCH_MAX_SERVER_WAIT_MS)
        wait = FETCH_MAX_SERVER_WAIT_MS;
    return (long)wait;
}

static int fetch_start(fetcher *f, fpart *fp, int64_t now) {
    long wait = fetch_wait_ms(fp, now);
    char url[1024];
    snprintf(url, sizeof(url),
             "%s/v1/outcomes?partition=%d&from=%lld&max=%d&timeout_ms=%ld",
             f->url, (int)fp->partition, (long long)fp->head->res.offset,
             FETCH_BATCH_MAX, wait);
    CURL *e = curl_easy_init();
    if (!e) {
        snprintf(fp->last_error, sizeof(fp->last_error), "curl: out of memory");
        return -1;
    }
    bodybuf_free(&fp->body);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, f->auth);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, wait + 2000);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, bodybuf_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &fp->body);
    curl_easy_setopt(e, CURLOPT_PRIVATE, fp);
    if (curl_multi_add_handle(f->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        snprintf(fp->last_error, sizeof(fp->last_error),
                 "curl: cannot add handle");
        return -1;
    }
    fp->easy = e;
    fp->polled_from = fp->head->res.offset;
    atomic_fetch_add(&f->requests, 1);
    return 0;
}

/* ------------------------------------------------------------ answers */

static void copy_str(char *dst, size_t n, json_t *obj, const char *name) {
    const char *s = json_string_value(json_object_get(obj, name));
    snprintf(dst, n, "%s", s ? s : "");
}

/* Completes op from one outcome entry: OK/REJECTED, or UNKNOWN when the
 * entry is not op's (request id) or unusable. */
static void fetch_complete_entry(fetcher *f, write_op *op, json_t *e) {
    const char *status = json_string_value(json_object_get(e, "status"));
    const char *rid = json_string_value(json_object_get(e, "request_id"));
    f->pending--;
    if (!rid || strcmp(rid, op->res.request_id_hex) != 0) {
        char why[160];
        snprintf(why, sizeof(why), "the outcome at %.40s belongs to request %.32s",
                 op->res.token, rid ? rid : "(none)");
        fetch_unknown(op, why);
        return;
    }
    if (status && !strcmp(status, "ok")) {
        op->res.status = OBJLOG_STATUS_OK;
        copy_str(op->res.version_id, sizeof(op->res.version_id), e, "version_id");
        copy_str(op->res.etag, sizeof(op->res.etag), e, "etag");
        op->res.delete_marker = json_is_true(json_object_get(e, "delete_marker"));
        /* Only create_upload outcomes carry one; absent or "" -> "". */
        copy_str(op->res.upload_id, sizeof(op->res.upload_id), e, "upload_id");
    } else if (status && !strcmp(status, "rejected")) {
        /* Its range moved after the producer routed it: sent again by the
         * newer map, same request id (bounded). */
        const char *code = json_string_value(json_object_get(e, "code"));
        if (code && !strcmp(code, "WrongRange") && f->reroute && op->reroutes_left > 0) {
            op->reroutes_left--;
            if (f->reroute(f->reroute_arg, op) == 0)
                return;
        }
        op->res.status = OBJLOG_STATUS_REJECTED;
        copy_str(op->res.error_code, sizeof(op->res.error_code), e, "code");
        copy_str(op->res.error_message, sizeof(op->res.error_message), e,
                 "message");
    } else {
        fetch_unknown(op, "the outcome has no valid status");
        return;
    }
    writeop_complete(op);
}

/* Matches the (ascending) entries against the pending list and completes
 * every covered op. An op below the covered limit without an entry has no
 * stored outcome (trimmed by the dedup window): UNKNOWN, never re-produced,
 * since its request id may no longer be remembered either. 0, or -1 when
 * the body is unusable (fp->last_error). */
static int fetch_apply(fetcher *f, fpart *fp) {
    json_error_t jerr;
    json_t *j = json_loadb(fp->body.data ? fp->body.data : "", fp->body.len, 0, &jerr);
    json_t *arr = json_object_get(j, "outcomes");
    json_t *applied = json_object_get(j, "applied");
    json_t *part = json_object_get(j, "partition");
    if (!json_is_array(arr) || !json_is_integer(applied) ||
        json_integer_value(part) != fp->partition) {
        snprintf(fp->last_error, sizeof(fp->last_error),
                 "outcomes answer is not the agreed JSON: %.100s",
                 j ? "missing fields" : jerr.text);
        json_decref(j);
        return -1;
    }
    size_t n = json_array_size(arr);
    int64_t limit = json_integer_value(applied);
    int64_t low = json_integer_value(json_object_get(j, "low")); /* 0 if absent */
    write_op **pp = &fp->head;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        int64_t off = json_integer_value(json_object_get(e, "offset"));
        while (*pp && (*pp)->res.offset < off)
            pp = &(*pp)->next;
        if (*pp && (*pp)->res.offset == off) {
            write_op *op = *pp;
            *pp = op->next;
            fetch_complete_entry(f, op, e);
        }
        if (n >= FETCH_BATCH_MAX && i == n - 1)
            limit = off; /* truncated: covered only up to the last entry */
    }
    json_decref(j);
    pp = &fp->head;
    while (*pp && (*pp)->res.offset < limit) {
        write_op *op = *pp;
        if (op->res.offset < fp->polled_from) { /* not asked about */
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        f->pending--;
        fetch_unknown(op, op->res.offset < low
                              ? "its outcome expired (OutcomeExpired)"
                              : "no outcome is stored for this write");
    }
    fpart_fix_tail(fp);
    fp->last_error[0] = '\0';
    return 0;
}

/* A poll finished: complete what it covers, or note why not. */
static void fetch_done(fetcher *f, CURL *e, CURLcode rc) {
    fpart *fp = NULL;
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&fp);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(f->multi, e);
    curl_easy_cleanup(e);
    fp->easy = NULL;
    if (rc == CURLE_OK && status == 200 && fetch_apply(f, fp) == 0) {
        fp->retry_at_ms = 0;
        return;
    }
    if (rc != CURLE_OK)
        snprintf(fp->last_error, sizeof(fp->last_error), "%.80s: %.70s",
                 f->url, curl_easy_strerror(rc));
    else if (status != 200)
        snprintf(fp->last_error, sizeof(fp->last_error),
                 "query service answered HTTP %ld", status);
    fp->retry_at_ms = ptime_mono_ms() + FETCH_RETRY_MS;
    /* 503, refused connections and the like may get better before the
     * deadlines; a 4xx will not: those writes are UNKNOWN now. */
    if (rc == CURLE_OK && status >= 400 && status < 500) {
        while (fp->head) {
            write_op *op = fp->head;
            fp->head = op->next;
            f->pending--;
            fetch_unknown(op, fp->last_error);
        }
        fp->tail = NULL;
    }
}

/* Starts a poll for every partition with pending writes and none in
 * flight. Returns how long the loop may sleep. */
static long fetch_dispatch(fetcher *f, int64_t now) {
    int64_t wake = now + FETCH_IDLE_MS;
    if (f->pending > 0 && f->next_expiry_ms < wake)
        wake = f->next_expiry_ms;
    for (int i = 0; i < f->nparts; i++) {
        fpart *fp = f->parts[i];
        if (!fp || !fp->head || fp->easy)
            continue;
        if (fp->retry_at_ms > now) {
            if (fp->retry_at_ms < wake)
                wake = fp->retry_at_ms;
            continue;
        }
        if (fetch_start(f, fp, now) < 0)
            fp->retry_at_ms = now + FETCH_RETRY_MS;
    }
    return wake > now ? (long)(wake - now) : 0;
}

static void fetch_take_incoming(fetcher *f, write_op *lifo) {
    write_op *list = NULL; /* oldest first, so inserts are appends */
    while (lifo) {
        write_op *op = lifo;
        lifo = op->next;
        op->next = list;
        list = op;
    }
    while (list) {
        write_op *op = list;
        list = op->next;
        fpart *fp = fetch_part(f, op->res.partition);
        f->pending++;
        if (op->deadline_ms < f->next_expiry_ms)
            f->next_expiry_ms = op->deadline_ms;
        if (!fp) {
            fetch_give_up(f, op, "out of memory");
            continue;
        }
        fpart_insert(fp, op);
    }
}

static void *fetch_main(void *arg) {
    fetcher *f = arg;
    for (;;) {
        pthread_mutex_lock(&f->lock);
        write_op *in = f->incoming;
        f->incoming = NULL;
        int stop = f->stop;
        pthread_mutex_unlock(&f->lock);
        fetch_take_incoming(f, in);
        if (stop && f->pending == 0)
            break;
        int64_t now = ptime_mono_ms();
        fetch_expire(f, now);
        long sleep_ms = fetch_dispatch(f, now);
        int running = 0;
        curl_multi_perform(f->multi, &running);
        CURLMsg *m;
        int left;
        int done = 0;
        while ((m = curl_multi_info_read(f->multi, &left)) != NULL) {
            if (m->msg == CURLMSG_DONE) {
                fetch_done(f, m->easy_handle, m->data.result);
                done = 1;
            }
        }
        if (done)
            continue; /* start the next polls at once */
        curl_multi_poll(f->multi, NULL, 0, (int)(sleep_ms ? sleep_ms : 1), NULL);
    }
    return NULL;
}

/* ------------------------------------------------------------ lifecycle */

fetcher *fetcher_new(const char *query_url, const char *token, fetch_reroute_fn *reroute,
                     void *reroute_arg, char *errstr, size_t errstr_size) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(errstr, errstr_size, "curl_global_init failed");
        return NULL;
    }
    fetcher *f = calloc(1, sizeof(*f));
    if (f) {
        f->reroute = reroute;
        f->reroute_arg = reroute_arg;
    }
    if (f)
        f->url = strdup(query_url);
    if (f)
        f->multi = curl_multi_init();
    if (f && token)
        f->auth = qhttp_auth_header(token, NULL);
    if (!f || !f->url || !f->multi || (token && !f->auth)) {
        snprintf(errstr, errstr_size, "outcome fetcher: out of memory");
        goto fail;
    }
    f->next_expiry_ms = INT64_MAX;
    pthread_mutex_init(&f->lock, NULL);
    if (pthread_create(&f->thread, NULL, fetch_main, f) != 0) {
        pthread_mutex_destroy(&f->lock);
        snprintf(errstr, errstr_size, "outcome fetcher: cannot start thread");
        goto fail;
    }
    return f;
fail:
    if (f && f->multi)
        curl_multi_cleanup(f->multi);
    if (f) {
        curl_slist_free_all(f->auth);
        free(f->url);
    }
    free(f);
    curl_global_cleanup();
    return NULL;
}

void fetcher_submit(fetcher *f, write_op *op) {
    pthread_mutex_lock(&f->lock);
    op->next = f->incoming;
    f->incoming = op;
    pthread_mutex_unlock(&f->lock);
    curl_multi_wakeup(f->multi);
}

uint64_t fetcher_requests(fetcher *f) { return atomic_load(&f->requests); }

void fetcher_destroy(fetcher *f) {
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->stop = 1;
    pthread_mutex_unlock(&f->lock);
    curl_multi_wakeup(f->multi);
    pthread_join(f->thread, NULL);
    /* Polls still in flight for partitions with nothing pending. */
    for (int i = 0; i < f->nparts; i++) {
        fpart *fp = f->parts[i];
        if (fp && fp->easy) {
            curl_multi_remove_handle(f->multi, fp->easy);
            curl_easy_cleanup(fp->easy);
        }
        if (fp)
            bodybuf_free(&fp->body);
        free(fp);
    }
    free(f->parts);
    curl_multi_cleanup(f->multi);
    pthread_mutex_destroy(&f->lock);
    curl_slist_free_all(f->auth);
    free(f->url);
    free(f);
    curl_global_cleanup();
}
