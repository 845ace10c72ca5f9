/* route.c: a producer's range map and the range a handoff holds
 * (route.h). */
#include "route.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keycodec.h"
#include "objlog.pb-c.h"

struct proute {
    pthread_rwlock_t lock;
    rangemap *rm;                /* the current map (write side swaps it) */
    rangemap **old;              /* maps replaced, freed with the producer */
    size_t nold;
    int holding;
    keybuf start, end;           /* the held range; end empty: no end */
    pthread_mutex_t park_mu;     /* parking happens under the read side */
    write_op *parked, *parked_tail;
    atomic_uint_fast64_t parked_total;
};

proute *proute_new(rangemap *rm) {
    proute *r = calloc(1, sizeof(*r));
    if (!r) {
        rangemap_destroy(rm);
        return NULL;
    }
    pthread_rwlock_init(&r->lock, NULL);
    pthread_mutex_init(&r->park_mu, NULL);
    r->rm = rm;
    keybuf_init(&r->start);
    keybuf_init(&r->end);
    return r;
}

void proute_destroy(proute *r) {
    if (!r)
        return;
    rangemap_destroy(r->rm);
    for (size_t i = 0; i < r->nold; i++)
        rangemap_destroy(r->old[i]);
    free(r->old);
    keybuf_free(&r->start);
    keybuf_free(&r->end);
    pthread_rwlock_destroy(&r->lock);
    pthread_mutex_destroy(&r->park_mu);
    free(r);
}

const rangemap *proute_begin(proute *r) {
    pthread_rwlock_rdlock(&r->lock);
    return r->rm;
}

void proute_end(proute *r) { pthread_rwlock_unlock(&r->lock); }

static int cmp(const uint8_t *x, size_t xn, const uint8_t *y, size_t yn) {
    size_t m = xn < yn ? xn : yn;
    int c = m ? memcmp(x, y, m) : 0;
    return c ? c : (xn < yn ? -1 : xn > yn);
}

int proute_is_held(proute *r, const uint8_t *rk, size_t n) {
    if (!r->holding || cmp(rk, n, r->start.data, r->start.len) < 0)
        return 0;
    return r->end.len == 0 || cmp(rk, n, r->end.data, r->end.len) < 0;
}

void proute_park(proute *r, write_op *op) {
    op->next = NULL;
    atomic_fetch_add(&r->parked_total, 1);
    pthread_mutex_lock(&r->park_mu);
    if (r->parked_tail)
        r->parked_tail->next = op;
    else
        r->parked = op;
    r->parked_tail = op;
    pthread_mutex_unlock(&r->park_mu);
}

int proute_hold(proute *r, const uint8_t *start, size_t start_n, const uint8_t *end,
                size_t end_n) {
    pthread_rwlock_wrlock(&r->lock);
    int rc = -1;
    keybuf_reset(&r->start);
    keybuf_reset(&r->end);
    if (!r->holding && keybuf_append(&r->start, start, start_n) == 0 &&
        keybuf_append(&r->end, end, end_n) == 0) {
        r->holding = 1;
        rc = 0;
    }
    pthread_rwlock_unlock(&r->lock);
    return rc;
}

write_op *proute_release(proute *r, rangemap *rm) {
    pthread_rwlock_wrlock(&r->lock);
    if (rm) {
        rangemap **o = realloc(r->old, (r->nold + 1) * sizeof(*o));
        if (o) {
            r->old = o;
            o[r->nold++] = r->rm;
            r->rm = rm;
        } else {
            rangemap_destroy(rm); /* keeps the old map: WrongRange resends cover it */
        }
    }
    r->holding = 0;
    pthread_mutex_lock(&r->park_mu);
    write_op *list = r->parked;
    r->parked = r->parked_tail = NULL;
    pthread_mutex_unlock(&r->park_mu);
    pthread_rwlock_unlock(&r->lock);
    return list;
}

/* A parked op's bytes stamped with the epoch of rm and routed by it. */
static int restamp(write_op *op, const rangemap *rm) {
    Objlog__Event *ev = objlog__event__unpack(NULL, op->payload_len, op->payload);
    if (!ev)
        return -1;
    ev->range_epoch = rangemap_epoch(rm);
    size_t n = objlog__event__get_packed_size(ev);
    uint8_t *buf = malloc(n ? n : 1);
    if (buf)
        objlog__event__pack(ev, buf);
    objlog__event__free_unpacked(ev, NULL);
    if (!buf)
        return -1;
    free(op->payload);
    op->payload = buf;
    op->payload_len = n;
    op->send_partition = rangemap_partition(rm, op->rkey, op->rkey_len);
    return 0;
}

void proute_release_send(proute *r, rangemap *rm) {
    write_op *list = proute_release(r, rm);
    const rangemap *cur = proute_begin(r);
    while (list) {
        write_op *op = list;
        list = op->next;
        op->next = NULL;
        if (restamp(op, cur) == 0 && writeop_produce(op) == 0)
            continue;
        op->res.status = OBJLOG_STATUS_FAILED;
        snprintf(op->res.error_message, sizeof(op->res.error_message),
                 "the write waited out a range handoff but could not be produced: %s",
                 op->last_error[0] ? op->last_error : "out of memory");
        writeop_complete(op);
    }
    proute_end(r);
}

int proute_reroute(proute *r, write_op *op) {
    const rangemap *cur = proute_begin(r);
    Objlog__Event *ev = objlog__event__unpack(NULL, op->payload_len, op->payload);
    int rc = !ev ? -1 : ev->range_epoch < rangemap_epoch(cur) ? 1 : 0;
    if (ev)
        objlog__event__free_unpacked(ev, NULL);
    if (rc == 1 && restamp(op, cur) < 0)
        rc = -1;
    proute_end(r);
    return rc;
}

void proute_set_map(proute *r, rangemap *rm) {
    pthread_rwlock_wrlock(&r->lock);
    rangemap **o = realloc(r->old, (r->nold + 1) * sizeof(*o));
    if (o && rangemap_epoch(rm) > rangemap_epoch(r->rm)) {
        r->old = o;
        o[r->nold++] = r->rm;
        r->rm = rm;
        rm = NULL;
    } else if (o) {
        r->old = o;
    }
    pthread_rwlock_unlock(&r->lock);
    rangemap_destroy(rm);
}

uint32_t proute_epoch(proute *r) {
    pthread_rwlock_rdlock(&r->lock);
    uint32_t e = rangemap_epoch(r->rm);
    pthread_rwlock_unlock(&r->lock);
    return e;
}

uint64_t proute_parked_total(proute *r) { return atomic_load(&r->parked_total); }
