/* test_blobgc.c: the blob directory's collection round (blob.h's rule,
 * blob_collect) and CopyObject's pins (blob_pin) on a real blob directory
 * in a temp dir, with the round's fence and reference check faked: that
 * callback is the boundary to the view, so no Kafka and no store here.
 * One rule per test: a pending write or copy keeps its blob, a referenced
 * blob stays, an unreferenced one goes, a fence not met deletes nothing, a
 * keep racing a round never loses its bytes (and would, were the keep not
 * under the lock), a pin of a missing blob says so, a pinned blob unlinked
 * by a round comes back with the keep, and the remote backend neither pins
 * nor collects. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "blob.h"
#include "proc.h"

typedef struct env {
    char dir[256];
    blobstore *bs;
} env;

static int env_setup(void **state) {
    env *e = calloc(1, sizeof(*e));
    char err[512];
    assert_int_equal(proc_tmpdir(e->dir, sizeof(e->dir)), 0);
    e->bs = blobstore_open(e->dir, err, sizeof(err));
    assert_non_null(e->bs);
    *state = e;
    return 0;
}

static int env_teardown(void **state) {
    env *e = *state;
    blobstore_free(e->bs);
    proc_rmtree(e->dir);
    free(e);
    return 0;
}

/* A blob of text, written and finished (pending): id set. */
static blob_put *put_pending(blobstore *bs, const char *text, char *id) {
    char err[512];
    uint64_t size;
    blob_put *p = blob_put_begin(bs, err, sizeof(err));
    assert_non_null(p);
    assert_int_equal(blob_put_write(p, text, strlen(text), err, sizeof(err)), 0);
    assert_int_equal(blob_put_finish(p, id, &size, err, sizeof(err)), 0);
    assert_int_equal(size, strlen(text));
    return p;
}

/* A readable blob of text: id set. */
static void put_kept(blobstore *bs, const char *text, char *id) {
    char err[512];
    assert_int_equal(blob_put_keep(put_pending(bs, text, id), err, sizeof(err)), 0);
}

/* 0 readable with these bytes, 1 absent. */
static int blob_is(env *e, const char *id, const char *text) {
    char path[512], got[256] = "";
    snprintf(path, sizeof(path), "%s/%.2s/%s", e->dir, id, id);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(got, 1, sizeof(got) - 1, f);
    fclose(f);
    got[n] = '\0';
    assert_string_equal(got, text);
    return 0;
}

static int pending_files(env *e) {
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "ls -A '%s/.pending' | wc -l", e->dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    assert_int_equal(fscanf(f, "%d", &n), 1);
    pclose(f);
    return n;
}

/* ------------------------------------------------------- the fake view */

typedef struct fake {
    int refs;                    /* what referenced() answers */
    int fence_rc;
    int fences, checks;
    blobstore *pin_in_check;     /* pin the id while the round checks it */
    blob_put *pin;
} fake;

static int fake_fence(void *arg, char *errstr, size_t es) {
    fake *f = arg;
    f->fences++;
    if (f->fence_rc < 0)
        snprintf(errstr, es, "fence not met (fake)");
    return f->fence_rc;
}

static int fake_referenced(void *arg, const char *id, char *errstr, size_t es) {
    fake *f = arg;
    f->checks++;
    if (f->pin_in_check) /* a copy pins after the round listed .pending */
        assert_int_equal(blob_pin(f->pin_in_check, id, &f->pin, errstr, es), 0);
    if (f->refs < 0)
        snprintf(errstr, es, "check failed (fake)");
    return f->refs;
}

static int collect1(blobstore *bs, const char *id, fake *f, blob_gc_fate *fate,
                    uint64_t *freed) {
    char err[512];
    const char *ids[1] = {id};
    blob_gc_check chk = {.fence = fake_fence, .referenced = fake_referenced, .arg = f};
    return blob_collect(bs, ids, 1, &chk, fate, freed, err, sizeof(err));
}

/* ----------------------------------------------------------- the rules */

static void test_pending_write_keeps_blob(void **state) {
    env *e = *state;
    char id[BLOB_ID_LEN + 1], id2[BLOB_ID_LEN + 1];
    put_kept(e->bs, "pending write", id);
    blob_put *w = put_pending(e->bs, "pending write", id2); /* the same bytes again */
    assert_string_equal(id, id2);
    fake f = {.refs = 0};
    blob_gc_fate fate;
    uint64_t freed;
    assert_int_equal(collect1(e->bs, id, &f, &fate, &freed), 0);
    assert_int_equal(fate, BLOB_GC_PENDING);
    assert_int_equal(f.checks, 0); /* never asked: in flight */
    assert_int_equal(blob_is(e, id, "pending write"), 0);
    blob_put_drop(w); /* refused: the name goes on the next round */
    assert_int_equal(collect1(e->bs, id, &f, &fate, &freed), 0);
    assert_int_equal(fate, BLOB_GC_DELETED);
    assert_int_equal(blob_is(e, id, ""), 1);
}

static void test_pinned_copy_keeps_blob(void **state) {
    env *e = *state;
    char id[BLOB_ID_LEN + 1], err[512];
    put_kept(e->bs, "copied", id);
    blob_put *pin = NULL;
    assert_int_equal(blob_pin(e->bs, id, &pin, err, sizeof(err)), 0);
    assert_non_null(pin);
    fake f = {.refs = 0};
    blob_gc_fate fate;
    uint64_t freed;
    assert_int_equal(collect1(e->bs, id, &f, &fate, &freed), 0);
    assert_int_equal(fate, BLOB_GC_PENDING);
    assert_int_equal(blob_put_keep(pin, err, sizeof(err)), 0);
    assert_int_equal(blob_is(e, id, "copied"), 0);
    assert_int_equal(pending_files(e), 0);
}

static void test_referenced_blob_stays(void **state) {
    env *e = *state;
    char id[BLOB_ID_LEN + 1];
    put_kept(e->bs, "still named", id);
    fake f = {.refs = 1};
    blob_gc_fate fate;
    uint64_t freed = 7;
    assert_int_equal(collect1(e->bs, id, &f, &fate, &freed), 0);
    assert_int_equal(fate, BLOB_GC_REFERENCED);
    assert_int_equal(freed, 0);
    assert_int_equal(f.fences, 1);
    assert_int_equal(blob_is(e, id, "still named"), 0);
}

static void test_unreferenced_blob_goes(void **state) {
    env *e = *state;
    char id[BLOB_ID_LEN + 1], other[BLOB_ID_LEN + 1], err[512];
    put_kept(e->bs, "garbage", id);
    put_kept(e->bs, "not a candidate", other);
    fake f = {.refs = 0};
    blob_gc_fate fate;
    uint64_t freed;
    assert_int_equal(collect1(e->bs, id, &f, &fate, &freed), 0);
    assert_int_equal(fate, BLOB_GC_DELETED);
    assert_int_equal(freed, strlen("garbage"));
    assert_int_equal(blob_is(e, id, ""), 1);
    assert_int_equal(blob_is(e, other, "not a candidate"), 0);
    uint64_t size;
    assert_int_equal(blob_stat(e->bs, id, &size, err, sizeof(err)), 1);
    /* A second release of the same id: nothing to do, nothing asked. */
    f.checks = 0;
    assert_int_equal(collect1(e->bs, id, &f, &fate, &freed), 0);
    assert_int_equal(fate, BLOB_GC_ABSENT);
    assert_int_equal(f.checks, 0);
}

static void test_fence_not_met_deletes_nothing(void **state) {
    env *e = *state;
    char id[BLOB_ID_LEN + 1];
    put_kept(e->bs, "fence first", id);
    fake f = {.refs = 0, .fence_rc = -1};
    blob_gc_fate fate = BLOB_GC_ERROR;
    uint64_t freed;
    assert_int_equal(collect1(e->bs, id, &f, &fate, &freed), -1);
    assert_int_equal(f.checks, 0);
    assert_int_equal(blob_is(e, id, "fence first"), 0);
}

static void test_failed_check_deletes_nothing(void **state) {
    env *e = *state;
    char id[BLOB_ID_LEN + 1], err[512];
    put_kept(e->bs, "check fails", id);
    fake f = {.refs = -1};
    uint64_t freed;
    const char *ids[2] = {id, "not-an-id"};
    blob_gc_fate fates[2];
    blob_gc_check chk = {.fence = fake_fence, .referenced = fake_referenced, .arg = &f};
    assert_int_equal(blob_collect(e->bs, ids, 2, &chk, fates, &freed, err, sizeof(err)), 0);
    assert_int_equal(fates[0], BLOB_GC_ERROR);
    assert_int_equal(fates[1], BLOB_GC_ERROR);
    assert_non_null(strstr(err, "check failed"));
    assert_int_equal(blob_is(e, id, "check fails"), 0);
}

/* A pin of a blob the store does not hold: 1, nothing pending; a bad id
 * is an error. */
static void test_pin_missing_blob(void **state) {
    env *e = *state;
    char err[512];
    blob_put *pin = (blob_put *)1;
    const char *missing = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    assert_int_equal(blob_pin(e->bs, missing, &pin, err, sizeof(err)), 1);
    assert_null(pin);
    assert_int_equal(pending_files(e), 0);
    assert_int_equal(blob_pin(e->bs, "nope", &pin, err, sizeof(err)), -1);
    assert_null(pin);
}

/* The copy pinned its source's blob after the round listed .pending; the
 * round (the source deleted, the copy's event not yet seen) unlinks the
 * name; the copy's keep links the pinned bytes back. A copy refused (4xx)
 * drops its pin and the blob stays gone. */
static void test_pin_then_keep_restores_unlinked_blob(void **state) {
    env *e = *state;
    char id[BLOB_ID_LEN + 1], err[512];
    put_kept(e->bs, "source bytes", id);
    fake f = {.refs = 0, .pin_in_check = e->bs};
    blob_gc_fate fate;
    uint64_t freed;
    assert_int_equal(collect1(e->bs, id, &f, &fate, &freed), 0);
    assert_int_equal(fate, BLOB_GC_DELETED);
    assert_non_null(f.pin);
    assert_int_equal(blob_is(e, id, ""), 1);
    assert_int_equal(blob_put_keep(f.pin, err, sizeof(err)), 0);
    assert_int_equal(blob_is(e, id, "source bytes"), 0);
    assert_int_equal(pending_files(e), 0);

    f.pin = NULL;
    assert_int_equal(collect1(e->bs, id, &f, &fate, &freed), 0);
    assert_int_equal(fate, BLOB_GC_DELETED);
    blob_put_drop(f.pin);
    assert_int_equal(blob_is(e, id, ""), 1);
    assert_int_equal(pending_files(e), 0);
}

/* --blob-s3: the remote store holds the blobs; a pin holds nothing and
 * no round runs (its garbage is not collected yet). No transfer happens:
 * the spool is empty and nothing is read. */
static void test_remote_neither_pins_nor_collects(void **state) {
    env *e = *state;
    char creds[512], spool[512], err[512];
    snprintf(creds, sizeof(creds), "%s/creds", e->dir);
    snprintf(spool, sizeof(spool), "%s/spool", e->dir);
    FILE *f = fopen(creds, "w");
    assert_non_null(f);
    fputs("AKIDEXAMPLE SECRETEXAMPLE\n", f);
    fclose(f);
    assert_int_equal(chmod(creds, 0600), 0);
    blobstore *rs = blobstore_open_remote(spool, "http://127.0.0.1:9/blobs", creds, 0, err,
                                          sizeof(err));
    assert_non_null(rs);
    const char *id = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    blob_put *pin = (blob_put *)1;
    assert_int_equal(blob_pin(rs, id, &pin, err, sizeof(err)), 0);
    assert_null(pin);
    fake fk = {.refs = 0};
    blob_gc_fate fate;
    uint64_t freed;
    assert_int_equal(collect1(rs, id, &fk, &fate, &freed), -1);
    assert_int_equal(fk.fences, 0);
    blobstore_free(rs);
}

/* ------------------------------------------------ a keep racing a round */

/* The writer's side of a PutObject of bytes the store already holds (and
 * a release record made a candidate): finish (pending), produce the event
 * (`produced`), keep. The fake view sees the event when it was produced
 * before the round's fence: the rule's premise. */
typedef struct race {
    env *e;
    const char *text;
    atomic_int produced;
    int seen;                    /* produced, as the fence found it */
    int delay_us, check_us;
    int rc;                      /* the writer's: checked on the test's thread */
} race;

static int race_fence(void *arg, char *errstr, size_t es) {
    (void)errstr;
    (void)es;
    race *r = arg;
    r->seen = atomic_load(&r->produced);
    return 0;
}

/* As long as a store lookup may take: an unlocked keep would slip in. */
static int race_referenced(void *arg, const char *id, char *errstr, size_t es) {
    (void)id;
    (void)errstr;
    (void)es;
    race *r = arg;
    usleep((useconds_t)r->check_us);
    return r->seen;
}

static void *race_writer(void *arg) {
    race *r = arg;
    char id[BLOB_ID_LEN + 1], err[512];
    usleep((useconds_t)r->delay_us);
    uint64_t size;
    blob_put *p = blob_put_begin(r->e->bs, err, sizeof(err));
    r->rc = !p || blob_put_write(p, r->text, strlen(r->text), err, sizeof(err)) < 0 ||
                    blob_put_finish(p, id, &size, err, sizeof(err)) < 0
                ? -1
                : 0;
    if (r->rc < 0) {
        blob_put_drop(p);
        return NULL;
    }
    atomic_store(&r->produced, 1);
    r->rc = blob_put_keep(p, err, sizeof(err));
    return NULL;
}

static void test_keep_racing_round_never_loses_blob(void **state) {
    env *e = *state;
    int fates[5] = {0};
    srand(42);
    for (int i = 0; i < 400; i++) {
        char text[64], id[BLOB_ID_LEN + 1], err[512];
        snprintf(text, sizeof(text), "racing bytes %d", i);
        put_kept(e->bs, text, id);
        race r = {.e = e, .text = text, .delay_us = rand() % 1500,
                  .check_us = rand() % 2000};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, race_writer, &r), 0);
        usleep((useconds_t)(rand() % 1500));
        const char *ids[1] = {id};
        blob_gc_fate fate;
        uint64_t freed;
        blob_gc_check chk = {.fence = race_fence, .referenced = race_referenced, .arg = &r};
        assert_int_equal(blob_collect(e->bs, ids, 1, &chk, &fate, &freed, err, sizeof(err)), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_int_equal(r.rc, 0);
        fates[fate]++;
        assert_int_equal(blob_is(e, id, text), 0); /* whatever the order */
    }
    assert_int_equal(pending_files(e), 0);
    fprintf(stderr, "racing rounds: %d deleted and linked back, %d pending, %d referenced\n",
            fates[BLOB_GC_DELETED], fates[BLOB_GC_PENDING], fates[BLOB_GC_REFERENCED]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pending_write_keeps_blob, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_pinned_copy_keeps_blob, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_referenced_blob_stays, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_unreferenced_blob_goes, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_fence_not_met_deletes_nothing, env_setup,
                                        env_teardown),
        cmocka_unit_test_setup_teardown(test_failed_check_deletes_nothing, env_setup,
                                        env_teardown),
        cmocka_unit_test_setup_teardown(test_pin_missing_blob, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_pin_then_keep_restores_unlinked_blob, env_setup,
                                        env_teardown),
        cmocka_unit_test_setup_teardown(test_remote_neither_pins_nor_collects, env_setup,
                                        env_teardown),
        cmocka_unit_test_setup_teardown(test_keep_racing_round_never_loses_blob, env_setup,
                                        env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
