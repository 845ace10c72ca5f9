/* writeop.c: the life of an accepted write after produce (writeop.h): its
 * completion, its re-produce from saved bytes, the outstanding count that
 * flush and destroy wait on, the delivery barrier a handoff waits on, and
 * the in-callback guard.
 *
 * Invariant: `outstanding` changes only under lock and reaches zero only
 * after the last callback returned, so a flush that saw zero never races a
 * callback still running. */
#define _GNU_SOURCE
#include "writeop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "producer_time.h"

void writeops_init(writeops *w) {
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->idle, NULL);
    pthread_cond_init(&w->delivered, NULL);
}

void writeops_destroy(writeops *w) {
    pthread_cond_destroy(&w->delivered);
    pthread_cond_destroy(&w->idle);
    pthread_mutex_destroy(&w->lock);
}

void writeops_add(writeops *w, long d) {
    pthread_mutex_lock(&w->lock);
    w->outstanding += d;
    if (w->outstanding == 0)
        pthread_cond_broadcast(&w->idle);
    pthread_mutex_unlock(&w->lock);
}

void writeops_sending(writeops *w, write_op *op) {
    pthread_mutex_lock(&w->lock);
    op->msg_no = ++w->next_msg;
    w->in_lib++;
    pthread_mutex_unlock(&w->lock);
}

void writeops_reported(writeops *w, const write_op *op) {
    pthread_mutex_lock(&w->lock);
    w->in_lib--;
    if (w->mark && op->msg_no < w->mark && --w->before_mark == 0)
        pthread_cond_broadcast(&w->delivered);
    pthread_mutex_unlock(&w->lock);
}

int writeops_barrier(writeops *w, int timeout_ms) {
    struct timespec until;
    ptime_deadline(&until, timeout_ms > 0 ? timeout_ms : 0);
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    w->mark = w->next_msg + 1;
    w->before_mark = w->in_lib; /* every one numbered so far, not reported */
    while (w->before_mark > 0 && rc == 0)
        if (pthread_cond_timedwait(&w->delivered, &w->lock, &until) == ETIMEDOUT)
            rc = w->before_mark > 0 ? -1 : 0;
    w->mark = 0;
    pthread_mutex_unlock(&w->lock);
    return rc;
}

int writeops_wait_idle(writeops *w, int timeout_ms) {
    struct timespec until;
    ptime_deadline(&until, timeout_ms > 0 ? timeout_ms : 0);
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    while (w->outstanding > 0 && rc == 0) {
        if (timeout_ms < 0)
            pthread_cond_wait(&w->idle, &w->lock);
        else if (timeout_ms == 0 ||
                 pthread_cond_timedwait(&w->idle, &w->lock, &until) == ETIMEDOUT)
            rc = w->outstanding > 0 ? -1 : 0;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* Nonzero on a thread while it runs a completion callback. A *_sync call
 * or a flush made there would wait for a callback only this same thread
 * can run: they fail at once instead (writeop_in_callback_refused). */
static _Thread_local int writeop_cb_depth;

int writeop_in_callback_refused(const char *what, char *errstr, size_t errstr_size) {
    if (writeop_cb_depth == 0)
        return 0;
    if (errstr && errstr_size)
        snprintf(errstr, errstr_size,
                 "%s called from a completion callback would wait for itself "
                 "(deadlock): use the asynchronous call there", what);
    return 1;
}

void writeop_complete(write_op *op) {
    writeops *w = op->owner;
    /* Counted before the callback, so a caller woken by it sees it. */
    atomic_fetch_add(&w->completed, 1);
    if (op->cb) {
        writeop_cb_depth++;
        op->cb(&op->res, op->opaque);
        writeop_cb_depth--;
    }
    free(op->payload);
    free(op->rkey);
    free(op);
    writeops_add(w, -1);
}

int writeop_resend(write_op *op) {
    if (writeop_produce(op) < 0)
        return -1;
    atomic_fetch_add(&op->owner->resends, 1);
    return 0;
}

int writeop_produce(write_op *op) {
    writeops *w = op->owner;
    if (!op->payload) {
        snprintf(op->last_error, sizeof(op->last_error), "no saved bytes");
        return -1;
    }
    writeops_sending(w, op);
    rd_kafka_resp_err_t err = rd_kafka_producev(
        w->rk, RD_KAFKA_V_TOPIC(w->topic),
        RD_KAFKA_V_PARTITION(op->send_partition),
        RD_KAFKA_V_KEY(op->rkey, op->rkey_len),
        RD_KAFKA_V_VALUE(op->payload, op->payload_len),
        RD_KAFKA_V_TIMESTAMP(op->msg_ts),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(op),
        RD_KAFKA_V_END);
    if (err) {
        writeops_reported(w, op);
        snprintf(op->last_error, sizeof(op->last_error), "re-produce: %s",
                 rd_kafka_err2str(err));
        return -1;
    }
    return 0;
}
