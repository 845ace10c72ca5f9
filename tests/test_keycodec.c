/* test_keycodec.c: the ordering and prefix properties of schemas/keycodec.h,
 * the range map and tokens. The property test draws 100,000 random
 * (bucket, key) pairs whose keys mix 0x00, 0xFF, ASCII and multi-byte UTF-8
 * and checks, against plain byte comparison, that encoding keeps order and
 * that prefix ranges select exactly the keys with the prefix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "keycodec.h"
#include "objlog.pb-c.h"
#include "rangemap.h"
#include "token.h"

#define N_PAIRS 100000
#define MAX_KEY 12

typedef struct pair {
    char bucket[8];
    size_t bn;
    uint8_t key[MAX_KEY * 3];
    size_t kn;
    keybuf rk;
} pair;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Keys from a small alphabet so that shared prefixes and equal keys are
 * common; includes the bytes that stress the escape (0x00, 0xFF, 0x01). */
static size_t random_key(uint8_t *out) {
    static const char *const atoms[] = {"\x00", "\xff", "\x01", "a", "b", "/",
                                        "\xc3\xa9" /* é */, "\xe2\x82\xac" /* € */,
                                        "\xf0\x9f\x98\x80" /* 😀 */, "z"};
    static const size_t atom_len[] = {1, 1, 1, 1, 1, 1, 2, 3, 4, 1};
    size_t n = rng() % 6, len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t a = rng() % 10;
        memcpy(out + len, atoms[a], atom_len[a]);
        len += atom_len[a];
    }
    return len;
}

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

static int sign(int x) { return x < 0 ? -1 : x > 0 ? 1 : 0; }

/* The order route keys must have: (hash16(b), b, k), all as bytes. */
static int expected_cmp(const pair *x, const pair *y) {
    uint16_t hx = keycodec_bucket_hash(x->bucket, x->bn);
    uint16_t hy = keycodec_bucket_hash(y->bucket, y->bn);
    if (hx != hy)
        return hx < hy ? -1 : 1;
    int c = bytes_cmp((const uint8_t *)x->bucket, x->bn, (const uint8_t *)y->bucket, y->bn);
    if (c)
        return c;
    return bytes_cmp(x->key, x->kn, y->key, y->kn);
}

static pair *make_pairs(void) {
    static const char *const buckets[] = {"photos", "logs", "a", "b0"};
    pair *ps = calloc(N_PAIRS, sizeof(*ps));
    assert_non_null(ps);
    for (size_t i = 0; i < N_PAIRS; i++) {
        const char *b = buckets[rng() % 4];
        ps[i].bn = strlen(b);
        memcpy(ps[i].bucket, b, ps[i].bn);
        ps[i].kn = random_key(ps[i].key);
        keybuf_init(&ps[i].rk);
        assert_int_equal(keycodec_route_key(&ps[i].rk, ps[i].bucket, ps[i].bn,
                                            ps[i].key, ps[i].kn), 0);
    }
    return ps;
}

static void free_pairs(pair *ps) {
    for (size_t i = 0; i < N_PAIRS; i++)
        keybuf_free(&ps[i].rk);
    free(ps);
}

static void route_key_order_equals_byte_order(void **state) {
    (void)state;
    pair *ps = make_pairs();
    for (size_t i = 0; i + 1 < N_PAIRS; i++) {
        pair *x = &ps[i], *y = &ps[i + 1 + rng() % (N_PAIRS - i - 1)];
        int want = expected_cmp(x, y);
        int got = sign(bytes_cmp(x->rk.data, x->rk.len, y->rk.data, y->rk.len));
        if (want != got)
            fail_msg("pair %zu: route key order %d, byte order %d", i, got, want);
        /* Round trip: the route key decodes to exactly its bucket and key. */
        keybuf b, k;
        size_t used = 0;
        keybuf_init(&b);
        keybuf_init(&k);
        assert_int_equal(keycodec_parse_route_key(x->rk.data, x->rk.len, &b, &k, &used), 0);
        assert_int_equal(used, x->rk.len);
        assert_int_equal(bytes_cmp(k.data, k.len, x->key, x->kn), 0);
        assert_int_equal(bytes_cmp(b.data, b.len, (uint8_t *)x->bucket, x->bn), 0);
        keybuf_free(&b);
        keybuf_free(&k);
    }
    free_pairs(ps);
}

static void prefix_range_selects_exactly_prefixed_keys(void **state) {
    (void)state;
    pair *ps = make_pairs();
    for (int round = 0; round < 200; round++) {
        const pair *src = &ps[rng() % N_PAIRS];
        size_t pn = src->kn ? rng() % (src->kn + 1) : 0;
        keybuf lo, hi;
        keybuf_init(&lo);
        keybuf_init(&hi);
        assert_int_equal(keycodec_prefix_start(&lo, src->bucket, src->bn, src->key, pn), 0);
        assert_int_equal(keybuf_append(&hi, lo.data, lo.len), 0);
        assert_int_equal(keycodec_prefix_end(&hi), 0);
        size_t in_range = 0, with_prefix = 0;
        for (size_t i = 0; i < N_PAIRS; i++) {
            const pair *p = &ps[i];
            int has = p->bn == src->bn && !memcmp(p->bucket, src->bucket, p->bn) &&
                      p->kn >= pn && !memcmp(p->key, src->key, pn);
            int in = bytes_cmp(p->rk.data, p->rk.len, lo.data, lo.len) >= 0 &&
                     bytes_cmp(p->rk.data, p->rk.len, hi.data, hi.len) < 0;
            if (has != in)
                fail_msg("round %d pair %zu: has prefix %d, in range %d", round, i, has, in);
            in_range += (size_t)in;
            with_prefix += (size_t)has;
        }
        assert_int_equal(in_range, with_prefix);
        assert_true(with_prefix >= 1); /* src itself */
        keybuf_free(&lo);
        keybuf_free(&hi);
    }
    free_pairs(ps);
}

static void enc_examples_from_design(void **state) {
    (void)state;
    keybuf a, b, c;
    keybuf_init(&a);
    keybuf_init(&b);
    keybuf_init(&c);
    keycodec_append_enc(&a, (const uint8_t *)"a", 1);
    keycodec_append_enc(&b, (const uint8_t *)"a\0", 2);
    keycodec_append_enc(&c, (const uint8_t *)"ab", 2);
    /* "a" < "a\0" < "ab" */
    assert_true(bytes_cmp(a.data, a.len, b.data, b.len) < 0);
    assert_true(bytes_cmp(b.data, b.len, c.data, c.len) < 0);
    const uint8_t want_b[] = {'a', 0x00, 0xFF, 0x00, 0x01};
    assert_int_equal(b.len, sizeof(want_b));
    assert_memory_equal(b.data, want_b, sizeof(want_b));
    keybuf_free(&a);
    keybuf_free(&b);
    keybuf_free(&c);
}

static void decode_rejects_malformed(void **state) {
    (void)state;
    keybuf out;
    size_t used;
    keybuf_init(&out);
    const uint8_t no_term[] = {'a', 'b'};
    const uint8_t bad_escape[] = {'a', 0x00, 0x02};
    const uint8_t dangling[] = {'a', 0x00};
    assert_int_equal(keycodec_decode_enc(no_term, sizeof(no_term), &out, &used), -1);
    assert_int_equal(keycodec_decode_enc(bad_escape, sizeof(bad_escape), &out, &used), -1);
    assert_int_equal(keycodec_decode_enc(dangling, sizeof(dangling), &out, &used), -1);
    keybuf_free(&out);
}

static void version_rows_sort_newest_first_inside_their_key(void **state) {
    (void)state;
    keybuf rk, v_old, v_new, next;
    keybuf_init(&rk);
    keybuf_init(&v_old);
    keybuf_init(&v_new);
    keybuf_init(&next);
    keycodec_route_key(&rk, "b", 1, (const uint8_t *)"k", 1);
    keycodec_version_row(&v_old, "b", 1, (const uint8_t *)"k", 1, keycodec_seq(1, 5));
    keycodec_version_row(&v_new, "b", 1, (const uint8_t *)"k", 1, keycodec_seq(1, 9));
    keycodec_route_key(&next, "b", 1, (const uint8_t *)"k\0", 2);
    assert_true(bytes_cmp(rk.data, rk.len, v_new.data, v_new.len) < 0);
    assert_true(bytes_cmp(v_new.data, v_new.len, v_old.data, v_old.len) < 0);
    assert_true(bytes_cmp(v_old.data, v_old.len, next.data, next.len) < 0);
    assert_int_equal(keycodec_row_seq(v_new.data, v_new.len), keycodec_seq(1, 9));
    char vid[KEYCODEC_VERSION_ID_LEN];
    uint64_t seq = 0;
    keycodec_version_id(keycodec_seq(1, 9), vid);
    assert_string_equal(vid, "0001000000000009");
    assert_int_equal(keycodec_parse_version_id(vid, &seq), 0);
    assert_int_equal(seq, keycodec_seq(1, 9));
    assert_int_equal(keycodec_parse_version_id("null", &seq), -1);
    assert_int_equal(keycodec_parse_version_id("000100000000000G", &seq), -1);
    keybuf_free(&rk);
    keybuf_free(&v_old);
    keybuf_free(&v_new);
    keybuf_free(&next);
}

static void default_rangemap_splits_hash_space_evenly(void **state) {
    (void)state;
    rangemap *rm = rangemap_new_default(8, 1);
    assert_non_null(rm);
    int count[8] = {0};
    for (uint32_t h = 0; h < 65536; h++) {
        uint8_t k[3] = {(uint8_t)(h >> 8), (uint8_t)h, 'x'};
        int p = rangemap_partition(rm, k, sizeof(k));
        assert_true(p >= 0 && p < 8);
        count[p]++;
    }
    for (int i = 0; i < 8; i++)
        assert_int_equal(count[i], 8192);
    /* A bucket's route keys all land in the partition of its bucket part. */
    keybuf a, b;
    keybuf_init(&a);
    keybuf_init(&b);
    keycodec_route_key(&a, "photos", 6, (const uint8_t *)"", 0);
    keycodec_route_key(&b, "photos", 6, (const uint8_t *)"\xff\xff\xff", 3);
    assert_int_equal(rangemap_partition(rm, a.data, a.len), rangemap_partition(rm, b.data, b.len));
    keybuf_free(&a);
    keybuf_free(&b);

    uint8_t *buf;
    size_t n;
    char err[256];
    assert_int_equal(rangemap_encode(rm, &buf, &n), 0);
    rangemap *rt = rangemap_decode(buf, n, err, sizeof(err));
    assert_non_null(rt);
    assert_int_equal(rangemap_epoch(rt), 1);
    assert_int_equal(rangemap_count(rt), 8);
    for (uint32_t h = 0; h < 65536; h += 7) {
        uint8_t k[2] = {(uint8_t)(h >> 8), (uint8_t)h};
        assert_int_equal(rangemap_partition(rm, k, 2), rangemap_partition(rt, k, 2));
    }
    free(buf);
    rangemap_destroy(rt);
    rangemap_destroy(rm);
}

/* "start>partition" per range, starts in hex ("-" for the empty one). */
static void map_text(const rangemap *rm, char *out, size_t n) {
    out[0] = '\0';
    for (int i = 0; i < rangemap_count(rm); i++) {
        const uint8_t *s, *e;
        size_t sl, el;
        int p;
        assert_int_equal(rangemap_entry(rm, i, &s, &sl, &e, &el, &p), 0);
        size_t at = strlen(out);
        snprintf(out + at, n - at, "%s", i ? " " : "");
        at = strlen(out);
        if (sl == 0)
            snprintf(out + at, n - at, "-");
        for (size_t k = 0; k < sl && k < 8; k++) {
            at = strlen(out);
            snprintf(out + at, n - at, "%02x", s[k]);
        }
        at = strlen(out);
        snprintf(out + at, n - at, ">%d", p);
    }
}

/* Split, move and merge as map operations: each a new map one epoch on,
 * the old one untouched, and every bad request refused by name. */
static void rangemap_split_move_merge(void **state) {
    (void)state;
    char err[256], txt[512];
    rangemap *m0 = rangemap_new_default(4, 5);
    assert_non_null(m0);
    const uint8_t at[3] = {0x50, 0x00, 'k'}; /* inside range 1 (0x4000..0x8000) */
    rangemap *m1 = rangemap_split(m0, at, 3, 3, 4, err, sizeof(err));
    assert_non_null(m1);
    assert_int_equal(rangemap_epoch(m1), 6);
    map_text(m1, txt, sizeof(txt));
    assert_string_equal(txt, "->0 4000>1 50006b>3 8000>2 c000>3");
    map_text(m0, txt, sizeof(txt));
    assert_string_equal(txt, "->0 4000>1 8000>2 c000>3");
    /* keys below the split stay, keys at and above it move */
    const uint8_t below[3] = {0x50, 0x00, 'j'}, above[4] = {0x50, 0x00, 'k', 0};
    assert_int_equal(rangemap_partition(m1, below, 3), 1);
    assert_int_equal(rangemap_partition(m1, at, 3), 3);
    assert_int_equal(rangemap_partition(m1, above, 4), 3);
    /* a split at the end of the map appends */
    const uint8_t last[2] = {0xf0, 0x00};
    rangemap *m2 = rangemap_split(m1, last, 2, 0, 4, err, sizeof(err));
    assert_non_null(m2);
    map_text(m2, txt, sizeof(txt));
    assert_string_equal(txt, "->0 4000>1 50006b>3 8000>2 c000>3 f000>0");
    /* move, merge (into the range before), round trip */
    rangemap *m3 = rangemap_move(m2, at, 3, 2, 4, err, sizeof(err));
    assert_non_null(m3);
    map_text(m3, txt, sizeof(txt));
    assert_string_equal(txt, "->0 4000>1 50006b>2 8000>2 c000>3 f000>0");
    rangemap *m4 = rangemap_merge(m3, at, 3, err, sizeof(err));
    assert_non_null(m4);
    assert_int_equal(rangemap_epoch(m4), 9);
    map_text(m4, txt, sizeof(txt));
    assert_string_equal(txt, "->0 4000>1 8000>2 c000>3 f000>0");
    assert_int_equal(rangemap_partition(m4, at, 3), 1);
    uint8_t *buf;
    size_t n;
    assert_int_equal(rangemap_encode(m2, &buf, &n), 0);
    rangemap *rt = rangemap_decode(buf, n, err, sizeof(err));
    free(buf);
    assert_non_null(rt);
    map_text(rt, txt, sizeof(txt));
    assert_string_equal(txt, "->0 4000>1 50006b>3 8000>2 c000>3 f000>0");
    rangemap_destroy(rt);
    /* long starts: a route key of a long key is a range start */
    uint8_t big[3000];
    memset(big, 'x', sizeof(big));
    big[0] = 0x60;
    rt = rangemap_split(m0, big, sizeof(big), 2, 4, err, sizeof(err));
    assert_non_null(rt);
    assert_int_equal(rangemap_partition(rt, big, sizeof(big)), 2);
    assert_int_equal(rangemap_encode(rt, &buf, &n), 0);
    rangemap_destroy(rt);
    rt = rangemap_decode(buf, n, err, sizeof(err));
    free(buf);
    assert_non_null(rt);
    assert_int_equal(rangemap_partition(rt, big, sizeof(big)), 2);
    rangemap_destroy(rt);
    /* refusals */
    const struct {
        int op; /* 0 split, 1 move, 2 merge */
        const uint8_t *k;
        size_t n;
        int to;
        const char *why;
    } bad[] = {
        {0, at, 3, 4, "unknown partition 4: the topic has partitions 0 to 3"},
        {0, at, 3, -1, "unknown partition -1"},
        {0, (const uint8_t *)"\x40\x00", 2, 0, "a range already starts at that key"},
        {0, (const uint8_t *)"", 0, 0, "a split key must be 1 to 4096 bytes, not 0"},
        {1, below, 3, 0, "no range starts at that key"},
        {1, at, 3, 3, "the range is on partition 3 already"},
        {2, (const uint8_t *)"", 0, 0, "the first range has no range before it"},
        {2, below, 3, 0, "no range starts at that key"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        rangemap *r = bad[i].op == 0 ? rangemap_split(m1, bad[i].k, bad[i].n, bad[i].to, 4,
                                                      err, sizeof(err))
                      : bad[i].op == 1 ? rangemap_move(m1, bad[i].k, bad[i].n, bad[i].to, 4,
                                                       err, sizeof(err))
                                       : rangemap_merge(m1, bad[i].k, bad[i].n, err,
                                                        sizeof(err));
        assert_null(r);
        if (!strstr(err, bad[i].why))
            fail_msg("case %zu: \"%s\", want \"%s\"", i, err, bad[i].why);
    }
    rangemap_destroy(m4);
    rangemap_destroy(m3);
    rangemap_destroy(m2);
    rangemap_destroy(m1);
    rangemap_destroy(m0);
}

static void rangemap_decode_rejects_unordered_ranges(void **state) {
    (void)state;
    Objlog__RangeMap m = OBJLOG__RANGE_MAP__INIT;
    Objlog__RangeEntry e0 = OBJLOG__RANGE_ENTRY__INIT, e1 = OBJLOG__RANGE_ENTRY__INIT,
                       e2 = OBJLOG__RANGE_ENTRY__INIT;
    Objlog__RangeEntry *es[3] = {&e0, &e1, &e2};
    uint8_t s1[2] = {0x80, 0}, s2[2] = {0x40, 0};
    e1.start.data = s1;
    e1.start.len = 2;
    e2.start.data = s2;
    e2.start.len = 2;
    m.n_ranges = 3;
    m.ranges = es;
    uint8_t buf[128];
    size_t n = objlog__range_map__pack(&m, buf);
    char err[256];
    assert_null(rangemap_decode(buf, n, err, sizeof(err)));
    assert_non_null(strstr(err, "out of order"));
    e0.start.data = s2;
    e0.start.len = 2;
    n = objlog__range_map__pack(&m, buf);
    assert_null(rangemap_decode(buf, n, err, sizeof(err)));
    assert_non_null(strstr(err, "empty key"));
}

static void tokens_round_trip_and_reject_forgeries(void **state) {
    (void)state;
    token_part in[2] = {{3, 1234}, {0, 7}}, out[4];
    char text[64];
    assert_int_equal(token_format(in, 2, text, sizeof(text)), 10);
    assert_string_equal(text, "3.1234_0.7");
    assert_int_equal(token_parse(text, out, 4), 2);
    assert_int_equal(out[0].partition, 3);
    assert_int_equal(out[0].offset, 1234);
    assert_int_equal(out[1].partition, 0);
    assert_int_equal(out[1].offset, 7);
    static const char *const bad[] = {"", "3", "3.", ".5", "3.5_", "3.5__1.2", "a.1",
                                      "3.-1", "70000.1", "1.99999999999999999999",
                                      "1.2 ", "1.2_3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (token_parse(bad[i], out, 4) != -1)
            fail_msg("token \"%s\" was accepted", bad[i]);
    assert_int_equal(token_format(in, 2, text, 5), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(enc_examples_from_design),
        cmocka_unit_test(decode_rejects_malformed),
        cmocka_unit_test(route_key_order_equals_byte_order),
        cmocka_unit_test(prefix_range_selects_exactly_prefixed_keys),
        cmocka_unit_test(version_rows_sort_newest_first_inside_their_key),
        cmocka_unit_test(default_rangemap_splits_hash_space_evenly),
        cmocka_unit_test(rangemap_decode_rejects_unordered_ranges),
        cmocka_unit_test(rangemap_split_move_merge),
        cmocka_unit_test(tokens_round_trip_and_reject_forgeries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
