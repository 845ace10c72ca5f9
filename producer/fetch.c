/* fetch.c: the outcome fetcher for ack=applied (DESIGN §6). One thread
 * drives a curl multi handle: for each logged write it long-polls
 * GET {query.url}/v1/writes/{token}?timeout_ms=N until the query service
 * answers with the outcome, or until the write's deadline, when the write
 * completes as UNKNOWN (retrying with the same request id is then safe).
 * The delivery-report thread only enqueues, so a slow query service never
 * delays other writes' Kafka acks. Connections are reused through the multi
 * handle's connection cache.
 *
 * Invariant: an op is in exactly one of `incoming` (shared, locked),
 * `waiting` (fetcher-thread only) or in flight on the multi handle, until
 * producer_complete() frees it.
 */
#include "producer_int.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FETCH_MAX_INFLIGHT 64
#define FETCH_MAX_SERVER_WAIT_MS 5000
#define FETCH_RETRY_MS 50
#define FETCH_MAX_BODY (64 * 1024)

struct fetcher {
    char *url;
    CURLM *multi;
    pthread_t thread;
    pthread_mutex_t lock;
    write_op *incoming;          /* guarded by lock */
    int stop;                    /* guarded by lock */
    /* fetcher-thread only */
    write_op *waiting;
    int inflight;
};

static size_t fetch_body_cb(char *data, size_t size, size_t nmemb, void *arg) {
    write_op *op = arg;
    size_t n = size * nmemb;
    if (op->body_len + n > FETCH_MAX_BODY)
        return 0;
    char *b = realloc(op->body, op->body_len + n + 1);
    if (!b)
        return 0;
    memcpy(b + op->body_len, data, n);
    op->body = b;
    op->body_len += n;
    op->body[op->body_len] = '\0';
    return n;
}

static void fetch_unknown(write_op *op) {
    op->res.status = OBJLOG_STATUS_UNKNOWN;
    snprintf(op->res.error_message, sizeof(op->res.error_message),
             "no outcome in time (%.150s); retry with request id %.32s",
             op->last_error[0] ? op->last_error : "timed out",
             op->res.request_id_hex);
    producer_complete(op);
}

static int fetch_start(fetcher *f, write_op *op, int64_t now) {
    int64_t left = op->deadline_ms - now;
    long wait = (long)(left - 100);
    if (wait < 0)
        wait = 0;
    if (wait > FETCH_MAX_SERVER_WAIT_MS)
        wait = FETCH_MAX_SERVER_WAIT_MS;
    char url[1024];
    snprintf(url, sizeof(url), "%s/v1/writes/%s?timeout_ms=%ld", f->url,
             op->res.token, wait);
    CURL *e = curl_easy_init();
    if (!e) {
        snprintf(op->last_error, sizeof(op->last_error), "curl: out of memory");
        return -1;
    }
    free(op->body);
    op->body = NULL;
    op->body_len = 0;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, wait + 1000);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fetch_body_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, op);
    curl_easy_setopt(e, CURLOPT_PRIVATE, op);
    if (curl_multi_add_handle(f->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        snprintf(op->last_error, sizeof(op->last_error), "curl: cannot add handle");
        return -1;
    }
    op->easy = e;
    f->inflight++;
    return 0;
}

static void copy_str(char *dst, size_t n, json_t *obj, const char *name) {
    const char *s = json_string_value(json_object_get(obj, name));
    snprintf(dst, n, "%s", s ? s : "");
}

/* 0: op completed from the outcome JSON; -1: body unusable (last_error). */
static int fetch_parse(write_op *op) {
    json_error_t jerr;
    json_t *j = json_loadb(op->body ? op->body : "", op->body_len, 0, &jerr);
    if (!j || !json_is_object(j)) {
        snprintf(op->last_error, sizeof(op->last_error),
                 "outcome is not a JSON object: %.100s", j ? "" : jerr.text);
        json_decref(j);
        return -1;
    }
    const char *status = json_string_value(json_object_get(j, "status"));
    const char *rid = json_string_value(json_object_get(j, "request_id"));
    if (rid && strcmp(rid, op->res.request_id_hex) != 0) {
        snprintf(op->last_error, sizeof(op->last_error),
                 "outcome at %s belongs to request %.32s", op->res.token, rid);
        json_decref(j);
        return -1;
    }
    if (status && !strcmp(status, "ok")) {
        op->res.status = OBJLOG_STATUS_OK;
        copy_str(op->res.version_id, sizeof(op->res.version_id), j, "version_id");
        copy_str(op->res.etag, sizeof(op->res.etag), j, "etag");
        op->res.delete_marker = json_is_true(json_object_get(j, "delete_marker"));
        /* Only create_upload outcomes carry it; absent -> "". */
        copy_str(op->res.upload_id, sizeof(op->res.upload_id), j, "upload_id");
    } else if (status && !strcmp(status, "rejected")) {
        op->res.status = OBJLOG_STATUS_REJECTED;
        copy_str(op->res.error_code, sizeof(op->res.error_code), j, "code");
        copy_str(op->res.error_message, sizeof(op->res.error_message), j,
                 "message");
    } else {
        snprintf(op->last_error, sizeof(op->last_error),
                 "outcome has no valid status");
        json_decref(j);
        return -1;
    }
    json_decref(j);
    producer_complete(op);
    return 0;
}

/* One finished request: complete op, or put it back to wait for a retry. */
static void fetch_done(fetcher *f, CURL *e, CURLcode rc) {
    write_op *op = NULL;
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&op);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(f->multi, e);
    curl_easy_cleanup(e);
    op->easy = NULL;
    f->inflight--;
    if (rc != CURLE_OK)
        snprintf(op->last_error, sizeof(op->last_error), "%.80s: %.70s", f->url,
                 curl_easy_strerror(rc));
    else if (status == 200 && fetch_parse(op) == 0)
        return;
    else if (status != 200)
        snprintf(op->last_error, sizeof(op->last_error),
                 "query service answered HTTP %ld", status);
    /* 503 (not applied yet), refused connections and the like are worth
     * retrying until the deadline; a 4xx will not get better. */
    if (rc == CURLE_OK && status >= 400 && status < 500) {
        int64_t now = producer_now_ms();
        if (now < op->deadline_ms)
            op->deadline_ms = now;
    }
    op->retry_at_ms = producer_now_ms() + FETCH_RETRY_MS;
    if (op->retry_at_ms > op->deadline_ms)
        op->retry_at_ms = op->deadline_ms;
    op->next = f->waiting;
    f->waiting = op;
}

/* Starts every waiting op that is due; completes the expired ones.
 * Returns how long the loop may sleep before the next one is due. */
static long fetch_dispatch(fetcher *f) {
    int64_t now = producer_now_ms();
    long sleep_ms = 200;
    write_op **pp = &f->waiting;
    while (*pp) {
        write_op *op = *pp;
        if (op->retry_at_ms > now || f->inflight >= FETCH_MAX_INFLIGHT) {
            long d = op->retry_at_ms > now ? (long)(op->retry_at_ms - now) : 200;
            if (d < sleep_ms)
                sleep_ms = d;
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        op->next = NULL;
        if (now >= op->deadline_ms || fetch_start(f, op, now) < 0)
            fetch_unknown(op);
    }
    return sleep_ms;
}

static void *fetch_main(void *arg) {
    fetcher *f = arg;
    for (;;) {
        pthread_mutex_lock(&f->lock);
        while (f->incoming) {
            write_op *op = f->incoming;
            f->incoming = op->next;
            op->next = f->waiting;
            f->waiting = op;
        }
        int stop = f->stop;
        pthread_mutex_unlock(&f->lock);
        if (stop && !f->waiting && f->inflight == 0)
            break;
        long sleep_ms = fetch_dispatch(f);
        int running = 0;
        curl_multi_perform(f->multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(f->multi, &left)) != NULL)
            if (m->msg == CURLMSG_DONE)
                fetch_done(f, m->easy_handle, m->data.result);
        if (f->waiting && sleep_ms == 0)
            continue;
        curl_multi_poll(f->multi, NULL, 0, (int)(sleep_ms ? sleep_ms : 1), NULL);
    }
    return NULL;
}

fetcher *fetcher_new(const char *query_url, char *errstr, size_t errstr_size) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(errstr, errstr_size, "curl_global_init failed");
        return NULL;
    }
    fetcher *f = calloc(1, sizeof(*f));
    if (f)
        f->url = strdup(query_url);
    if (f)
        f->multi = curl_multi_init();
    if (!f || !f->url || !f->multi) {
        snprintf(errstr, errstr_size, "outcome fetcher: out of memory");
        goto fail;
    }
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
    if (f)
        free(f->url);
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

void fetcher_destroy(fetcher *f) {
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->stop = 1;
    pthread_mutex_unlock(&f->lock);
    curl_multi_wakeup(f->multi);
    pthread_join(f->thread, NULL);
    curl_multi_cleanup(f->multi);
    pthread_mutex_destroy(&f->lock);
    free(f->url);
    free(f);
    curl_global_cleanup();
}
