/* keptsends.c: a ring of the last n ack=logged writes' bytes
 * (keptsends.h). One mutex: a put per logged write, a get per WrongRange,
 * both short. */
#include "keptsends.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct kept {
    int32_t partition;
    int64_t offset;
    uint8_t *payload, *rkey;
    size_t payload_len, rkey_len;
    int64_t msg_ts;
} kept;

struct keptsends {
    pthread_mutex_t mu;
    kept *ring;
    size_t n, next;
};

keptsends *keptsends_new(size_t n) {
    keptsends *k = calloc(1, sizeof(*k));
    if (k)
        k->ring = calloc(n ? n : 1, sizeof(*k->ring));
    if (!k || !k->ring) {
        free(k);
        return NULL;
    }
    k->n = n ? n : 1;
    pthread_mutex_init(&k->mu, NULL);
    return k;
}

void keptsends_free(keptsends *k) {
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++) {
        free(k->ring[i].payload);
        free(k->ring[i].rkey);
    }
    free(k->ring);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

void keptsends_put(keptsends *k, write_op *op) {
    if (!op->payload)
        return;
    pthread_mutex_lock(&k->mu);
    kept *e = &k->ring[k->next];
    k->next = (k->next + 1) % k->n;
    free(e->payload);
    free(e->rkey);
    *e = (kept){op->res.partition, op->res.offset, op->payload, op->rkey,
                op->payload_len,   op->rkey_len,   op->msg_ts};
    op->payload = op->rkey = NULL;
    pthread_mutex_unlock(&k->mu);
}

int keptsends_get(keptsends *k, int32_t partition, int64_t offset, write_op *op) {
    int rc = -1;
    pthread_mutex_lock(&k->mu);
    for (size_t i = 0; i < k->n && rc < 0; i++) {
        const kept *e = &k->ring[i];
        if (!e->payload || e->partition != partition || e->offset != offset)
            continue;
        op->payload = malloc(e->payload_len ? e->payload_len : 1);
        op->rkey = malloc(e->rkey_len ? e->rkey_len : 1);
        if (op->payload && op->rkey) {
            memcpy(op->payload, e->payload, e->payload_len);
            memcpy(op->rkey, e->rkey, e->rkey_len);
            op->payload_len = e->payload_len;
            op->rkey_len = e->rkey_len;
            op->msg_ts = e->msg_ts;
            rc = 0;
        } else {
            free(op->payload);
            free(op->rkey);
            op->payload = op->rkey = NULL;
            break;
        }
    }
    pthread_mutex_unlock(&k->mu);
    return rc;
}
