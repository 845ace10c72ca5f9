/* test_janitor.c: mass deletes stop costing LIST time once the janitor has
 * run. RocksDB's perf context counts the tombstones an iterator steps over
 * (internal_delete_skipped_count): a scan of a range where 2,000 keys were
 * deleted skips 2,000 of them before the janitor, none after, and still
 * returns exactly the live keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "janitor.h"
#include "keycodec.h"
#include "proc.h"

#define N_DEAD 2000
#define N_LIVE 10

static void route(keybuf *kb, const char *key) {
    keybuf_reset(kb);
    keycodec_route_key(kb, "jan", 3, (const uint8_t *)key, strlen(key));
}

/* Scans the bucket's `objects` range; returns live rows, sets *skipped. */
static int scan(objlog_store *s, uint64_t *skipped) {
    keybuf lo, hi;
    keybuf_init(&lo);
    keybuf_init(&hi);
    keycodec_prefix_start(&lo, "jan", 3, NULL, 0);
    keybuf_append(&hi, lo.data, lo.len);
    keycodec_prefix_end(&hi);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi.data, hi.len);
    rocksdb_perfcontext_t *pc = rocksdb_perfcontext_create();
    rocksdb_set_perf_level(rocksdb_enable_count);
    rocksdb_perfcontext_reset(pc);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro,
                                                        objlog_store_cf(s, OBJLOG_CF_OBJECTS));
    int n = 0;
    for (rocksdb_iter_seek(it, (const char *)lo.data, lo.len); rocksdb_iter_valid(it);
         rocksdb_iter_next(it))
        n++;
    *skipped = rocksdb_perfcontext_metric(pc, rocksdb_internal_delete_skipped_count);
    rocksdb_iter_destroy(it);
    rocksdb_perfcontext_destroy(pc);
    rocksdb_readoptions_destroy(ro);
    keybuf_free(&lo);
    keybuf_free(&hi);
    return n;
}

static void mass_delete_tombstones_are_compacted_away(void **state) {
    (void)state;
    char dir[256], err[512], key[32];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    objlog_store *s = objlog_store_open(dir, err, sizeof(err));
    assert_non_null(s);
    rocksdb_column_family_handle_t *cf = objlog_store_cf(s, OBJLOG_CF_OBJECTS);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    keybuf k, lo, hi;
    keybuf_init(&k);
    keybuf_init(&lo);
    keybuf_init(&hi);
    for (int i = 0; i < N_DEAD + N_LIVE; i++) {
        snprintf(key, sizeof(key), "p/%05d", i);
        route(&k, key);
        rocksdb_writebatch_put_cf(wb, cf, (const char *)k.data, k.len, "v", 1);
    }
    char *werr = NULL;
    rocksdb_write(objlog_store_db(s), wo, wb, &werr);
    assert_null(werr);
    rocksdb_writebatch_clear(wb);
    for (int i = 0; i < N_DEAD; i++) {
        snprintf(key, sizeof(key), "p/%05d", i);
        route(&k, key);
        rocksdb_writebatch_delete_cf(wb, cf, (const char *)k.data, k.len);
        if (i == 0)
            keybuf_append(&lo, k.data, k.len);
        if (i == N_DEAD - 1)
            keybuf_append(&hi, k.data, k.len);
    }
    rocksdb_write(objlog_store_db(s), wo, wb, &werr);
    assert_null(werr);

    uint64_t skipped = 0;
    assert_int_equal(scan(s, &skipped), N_LIVE);
    assert_int_equal(skipped, N_DEAD);

    janitor *j = janitor_new(s, 1000);
    assert_non_null(j);
    janitor_note(j, N_DEAD / 4, &lo, &hi); /* below the threshold: nothing */
    usleep(200000);
    assert_int_equal(janitor_compactions(j), 0);
    janitor_note(j, N_DEAD - N_DEAD / 4, &lo, &hi);
    for (int i = 0; i < 500 && janitor_compactions(j) == 0; i++)
        usleep(10000);
    assert_int_equal(janitor_compactions(j), 1);
    assert_int_equal(scan(s, &skipped), N_LIVE);
    assert_int_equal(skipped, 0);

    janitor_destroy(j);
    rocksdb_writebatch_destroy(wb);
    rocksdb_writeoptions_destroy(wo);
    keybuf_free(&k);
    keybuf_free(&lo);
    keybuf_free(&hi);
    objlog_store_close(s);
    proc_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mass_delete_tombstones_are_compacted_away),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
