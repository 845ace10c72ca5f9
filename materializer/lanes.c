/* lanes.c: a fork-join pool of apply threads (lanes.h). The consumer
 * thread hands each lane its share of a batch and waits for all of them;
 * a lane's thread sleeps between batches.
 *
 * Invariant: a lane's state (its share, batch and results) is touched by
 * its own thread only between the start of a round and its end, and by
 * the consumer thread only outside rounds; the round's mutex orders the
 * two, so lanes need no lock of their own. */
#include "lanes.h"

#include "materializer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct lanes {
    int n;
    mat_lane *lane;
    pthread_t *thread;     /* [1..n-1] */
    int started;           /* threads started */
    lanes_fn *fn;
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t round;        /* bumped to start a round */
    int pending;           /* lanes of this round still working */
    int stop;
};

typedef struct lane_start {
    lanes *ls;
    int i;
} lane_start;

static void lane_work(lanes *ls, mat_lane *l) {
    if (l->n > 0)
        ls->fn(ls->arg, l);
}

static void *lane_main(void *arg) {
    lanes *ls = ((lane_start *)arg)->ls;
    int i = ((lane_start *)arg)->i;
    free(arg);
    uint64_t seen = 0;
    pthread_mutex_lock(&ls->mu);
    for (;;) {
        while (!ls->stop && ls->round == seen)
            pthread_cond_wait(&ls->go, &ls->mu);
        if (ls->stop)
            break;
        seen = ls->round;
        pthread_mutex_unlock(&ls->mu);
        lane_work(ls, &ls->lane[i]);
        pthread_mutex_lock(&ls->mu);
        if (--ls->pending == 0)
            pthread_cond_signal(&ls->done);
    }
    pthread_mutex_unlock(&ls->mu);
    return NULL;
}

static int lanes_start_threads(lanes *ls) {
    for (int i = 1; i < ls->n; i++) {
        lane_start *st = malloc(sizeof(*st));
        if (!st)
            return -1;
        *st = (lane_start){ls, i};
        if (pthread_create(&ls->thread[i], NULL, lane_main, st) != 0) {
            free(st);
            return -1;
        }
        ls->started = i;
    }
    return 0;
}

lanes *lanes_new(int n, int batch_max, objlog_store *store, const rangemap *rm, lanes_fn *fn,
                 void *arg) {
    lanes *ls = calloc(1, sizeof(*ls));
    if (!ls)
        return NULL;
    ls->n = n;
    ls->fn = fn;
    ls->arg = arg;
    pthread_mutex_init(&ls->mu, NULL);
    pthread_cond_init(&ls->go, NULL);
    pthread_cond_init(&ls->done, NULL);
    ls->lane = calloc((size_t)n, sizeof(*ls->lane));
    ls->thread = calloc((size_t)n, sizeof(*ls->thread));
    if (!ls->lane || !ls->thread) {
        lanes_destroy(ls);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        mat_lane *l = &ls->lane[i];
        l->index = i;
        l->cap = batch_max;
        l->batch = apply_batch_new(store, rm);
        l->msgs = calloc((size_t)batch_max, sizeof(*l->msgs));
        if (!l->batch || !l->msgs) {
            lanes_destroy(ls);
            return NULL;
        }
    }
    if (lanes_start_threads(ls) < 0) {
        lanes_destroy(ls);
        return NULL;
    }
    return ls;
}

void lanes_destroy(lanes *ls) {
    if (!ls)
        return;
    pthread_mutex_lock(&ls->mu);
    ls->stop = 1;
    pthread_cond_broadcast(&ls->go);
    pthread_mutex_unlock(&ls->mu);
    for (int i = 1; i <= ls->started; i++)
        pthread_join(ls->thread[i], NULL);
    for (int i = 0; ls->lane && i < ls->n; i++) {
        apply_batch_destroy(ls->lane[i].batch);
        free(ls->lane[i].msgs);
    }
    free(ls->lane);
    free(ls->thread);
    pthread_cond_destroy(&ls->go);
    pthread_cond_destroy(&ls->done);
    pthread_mutex_destroy(&ls->mu);
    free(ls);
}

int lanes_count(const lanes *ls) { return ls->n; }

mat_lane *lanes_get(lanes *ls, int i) { return &ls->lane[i]; }

void lanes_reset(lanes *ls) {
    for (int i = 0; i < ls->n; i++) {
        mat_lane *l = &ls->lane[i];
        l->n = 0;
        l->dlq_n = 0;
        l->rc = 0;
        l->store_failed = 0;
        l->errstr[0] = '\0';
        memset(l->outcomes, 0, sizeof(l->outcomes));
    }
}

void lanes_run(lanes *ls) {
    int busy = 0;
    for (int i = 1; i < ls->n; i++)
        busy += ls->lane[i].n > 0;
    if (busy) {
        pthread_mutex_lock(&ls->mu);
        ls->pending = ls->n - 1;
        ls->round++;
        pthread_cond_broadcast(&ls->go);
        pthread_mutex_unlock(&ls->mu);
    }
    lane_work(ls, &ls->lane[0]);
    if (!busy)
        return;
    pthread_mutex_lock(&ls->mu);
    while (ls->pending > 0)
        pthread_cond_wait(&ls->done, &ls->mu);
    pthread_mutex_unlock(&ls->mu);
}

int lanes_pick(int want, long ncpu, int nparts) {
    int n = want > 0 ? want : ncpu > 0 ? (int)ncpu : 1;
    if (n > OBJLOG_APPLY_THREADS_MAX)
        n = OBJLOG_APPLY_THREADS_MAX;
    if (nparts > 0 && n > nparts)
        n = nparts;
    return n < 1 ? 1 : n;
}
