/* janitor.c: see janitor.h. The pending range is state shared between the
 * materializer thread (janitor_note) and the janitor thread, under mu; the
 * janitor copies it out and works without the lock, so applying never waits
 * for a compaction. */
#include "janitor.h"

#include "matlog.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct janitor {
    objlog_store *store;
    uint64_t threshold;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    uint64_t pending;        /* deletes since the last compaction */
    keybuf lo, hi;           /* their key range */
    uint64_t compactions;
};

static int janitor_cmp(const keybuf *a, const keybuf *b) {
    size_t m = a->len < b->len ? a->len : b->len;
    int c = m ? memcmp(a->data, b->data, m) : 0;
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static void janitor_set(keybuf *dst, const keybuf *src) {
    keybuf_reset(dst);
    (void)keybuf_append(dst, src->data, src->len);
}

static void janitor_compact(janitor *j, const keybuf *lo, const keybuf *hi) {
    static const objlog_cf cfs[] = {OBJLOG_CF_OBJECTS, OBJLOG_CF_VERSIONS};
    rocksdb_t *db = objlog_store_db(j->store);
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_compactoptions_t *co = rocksdb_compactoptions_create();
    rocksdb_compactoptions_set_exclusive_manual_compaction(co, 0);
    rocksdb_compactoptions_set_bottommost_level_compaction(co, 2 /* kForce */);
    for (size_t i = 0; i < sizeof(cfs) / sizeof(cfs[0]); i++) {
        rocksdb_column_family_handle_t *cf = objlog_store_cf(j->store, cfs[i]);
        char *err = NULL;
        /* Tombstones still in the memtable are not reached by compaction. */
        rocksdb_flush_cf(db, fo, cf, &err);
        if (err) {
            matlog_printf(store_log(j->store), MATLOG_ERR, "janitor", "flush %s: %s",
                          objlog_cf_name(cfs[i]), err);
            rocksdb_free(err);
            continue;
        }
        /* Force the bottommost rewrite: a lone flushed file would
         * otherwise be trivially moved down, tombstones and all. */
        rocksdb_compact_range_cf_opt(db, cf, co, (const char *)lo->data, lo->len,
                                     (const char *)hi->data, hi->len);
    }
    rocksdb_compactoptions_destroy(co);
    rocksdb_flushoptions_destroy(fo);
}

static void *janitor_main(void *arg) {
    janitor *j = arg;
    keybuf lo, hi;
    keybuf_init(&lo);
    keybuf_init(&hi);
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->stopping && j->pending < j->threshold)
            pthread_cond_wait(&j->cv, &j->mu);
        if (j->stopping)
            break;
        janitor_set(&lo, &j->lo);
        janitor_set(&hi, &j->hi);
        j->pending = 0;
        pthread_mutex_unlock(&j->mu);
        janitor_compact(j, &lo, &hi);
        pthread_mutex_lock(&j->mu);
        j->compactions++;
    }
    pthread_mutex_unlock(&j->mu);
    keybuf_free(&lo);
    keybuf_free(&hi);
    return NULL;
}

janitor *janitor_new(objlog_store *store, uint64_t threshold) {
    janitor *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->store = store;
    j->threshold = threshold ? threshold : 1;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    if (pthread_create(&j->thread, NULL, janitor_main, j) != 0) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        free(j);
        return NULL;
    }
    return j;
}

void janitor_destroy(janitor *j) {
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    j->stopping = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->thread, NULL);
    keybuf_free(&j->lo);
    keybuf_free(&j->hi);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

void janitor_note(janitor *j, uint64_t deletes, const keybuf *lo,
                  const keybuf *hi) {
    if (!j || deletes == 0)
        return;
    pthread_mutex_lock(&j->mu);
    if (j->pending == 0 || janitor_cmp(lo, &j->lo) < 0)
        janitor_set(&j->lo, lo);
    if (j->pending == 0 || janitor_cmp(hi, &j->hi) > 0)
        janitor_set(&j->hi, hi);
    j->pending += deletes;
    if (j->pending >= j->threshold)
        pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

uint64_t janitor_compactions(janitor *j) {
    if (!j)
        return 0;
    pthread_mutex_lock(&j->mu);
    uint64_t n = j->compactions;
    pthread_mutex_unlock(&j->mu);
    return n;
}
