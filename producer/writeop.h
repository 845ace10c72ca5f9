/* writeop.h: one accepted write (write_op) from produce to its single
 * callback, and the set of them a producer has in flight (writeops):
 * completing an op, re-producing its saved bytes, counting what is
 * outstanding, and refusing calls that would wait from inside a callback.
 * The core (producer.c), the outcome fetcher (fetch.c) and admission
 * (admit.c) all finish ops through here, so none of them calls back into
 * the producer's core.
 *
 * Invariant: a write_op is owned by exactly one place at a time: librdkafka
 * (as msg_opaque) until its delivery report, then the fetcher (ack=applied)
 * or admission until its outcome (or back to librdkafka when
 * unknown.retries re-produce it), and it is freed right after its callback
 * runs; it is counted in `outstanding` from before it is produced until
 * just after that callback returned. */
#ifndef OBJLOG_WRITEOP_H
#define OBJLOG_WRITEOP_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "objlog_producer.h"

/* A producer's writes in flight. rk and topic are the producer's (set once
 * rk exists), for re-produces; the counters feed objlog_producer_stats. */
typedef struct writeops {
    rd_kafka_t *rk;
    const char *topic;
    pthread_mutex_t lock;
    pthread_cond_t idle;
    long outstanding;            /* guarded by lock */
    atomic_uint_fast64_t completed;   /* callbacks run */
    atomic_uint_fast64_t resends;     /* unknown.retries re-produces */
    atomic_uint_fast64_t rerouted;    /* WrongRange re-produces */
    /* The delivery barrier (writeops_barrier), guarded by lock: every
     * message handed to librdkafka gets the next number; a barrier waits
     * for the messages numbered below its mark. */
    pthread_cond_t delivered;
    uint64_t next_msg;
    uint64_t mark;               /* 0: no barrier */
    long before_mark;            /* messages below mark not yet reported */
    long in_lib;                 /* numbered, not yet reported */
} writeops;

typedef struct write_op write_op;
struct write_op {
    writeops *owner;
    objlog_write_cb *cb;
    void *opaque;
    objlog_write_result res;
    /* fetcher state (ack=applied) */
    int64_t deadline_ms;        /* monotonic; UNKNOWN after this */
    char last_error[160];       /* why no outcome came (for UNKNOWN) */
    write_op *next;             /* fetcher / admission list link */
    /* unknown.retries: the exact bytes sent, to re-produce them */
    int retries_left;
    int reroutes_left;          /* WrongRange resends still allowed */
    uint8_t *payload;
    size_t payload_len;
    uint8_t *rkey;
    size_t rkey_len;
    int32_t send_partition;
    int64_t msg_ts;             /* Kafka timestamp; 0 = now (producer_event.h) */
    uint64_t msg_no;            /* its number for the delivery barrier */
};

void writeops_init(writeops *w);
void writeops_destroy(writeops *w);
/* d more (or fewer) ops outstanding; wakes writeops_wait_idle at zero. */
void writeops_add(writeops *w, long d);
/* Waits until nothing is outstanding: timeout_ms < 0 forever, 0 just
 * looks. 0 when idle, -1 on timeout. */
int writeops_wait_idle(writeops *w, int timeout_ms);

/* Around each rd_kafka_producev of op: writeops_sending numbers the
 * message (before the call, as its report may come first); a failed call
 * takes it back (writeops_reported), as does its delivery report. */
void writeops_sending(writeops *w, write_op *op);
void writeops_reported(writeops *w, const write_op *op);
/* Waits until every message handed to librdkafka before the call has had
 * its delivery report, however many are sent meanwhile (a flush would
 * wait for those too, and under steady writes might never end). One
 * caller at a time. 0, or -1 on timeout. */
int writeops_barrier(writeops *w, int timeout_ms);

/* Completes op: runs its callback, frees it, and lets flush() see one
 * fewer outstanding write. Called from library threads only. */
void writeop_complete(write_op *op);
/* Re-produces op's saved bytes (unknown.retries); op goes back to
 * librdkafka and its delivery report hands it to the fetcher again.
 * 0, or -1 with op->last_error set (op still the caller's). */
int writeop_resend(write_op *op);
/* As writeop_resend, not counted as a retry: a write that waited out a
 * handoff (route.h) going out for the first time. */
int writeop_produce(write_op *op);
/* 1 with errstr ("<what> called from a completion callback ...") when the
 * calling thread is running a completion callback, else 0. */
int writeop_in_callback_refused(const char *what, char *errstr, size_t errstr_size);

#endif
