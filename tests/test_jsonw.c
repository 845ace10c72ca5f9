/* test_jsonw.c: query/server/jsonw.c writes what jansson's
 * json_dumps(JSON_COMPACT) writes for the same members: 20,000 random
 * objects whose keys and values hold every byte below 0x80 (control
 * characters, '"' and '\\' included) and multi-byte UTF-8, nested objects
 * and arrays of strings and numbers among them. A key that needs escaping
 * (user metadata names reach jsonw as keys) must be escaped like a
 * value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A random NUL-free string of valid UTF-8, up to max bytes. */
static void rand_str(char *out, size_t max) {
    static const char *const multi[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    size_t n = next_rand() % max, i = 0;
    while (i < n) {
        uint64_t r = next_rand();
        if (r % 8 == 0) {
            const char *m = multi[(r >> 8) % 3];
            size_t ml = strlen(m);
            if (i + ml > n)
                break;
            memcpy(out + i, m, ml);
            i += ml;
        } else {
            out[i++] = (char)(1 + (r >> 8) % 127);
        }
    }
    out[i] = '\0';
}

static void one_object(void) {
    jsonw w;
    jsonw_begin(&w);
    json_t *want = json_object();
    int members = (int)(next_rand() % 8);
    for (int m = 0; m < members; m++) {
        char key[40], val[64];
        rand_str(key, sizeof(key));
        if (json_object_get(want, key))
            continue; /* jansson keeps one member per key */
        switch (next_rand() % 4) {
        case 0: {
            rand_str(val, sizeof(val));
            jsonw_str(&w, key, val);
            json_object_set_new(want, key, json_string(val));
            break;
        }
        case 1: {
            uint64_t v = next_rand() >> (next_rand() % 64);
            v &= 0x7fffffffffffffffULL; /* jansson's integers are signed */
            jsonw_u64(&w, key, v);
            json_object_set_new(want, key, json_integer((json_int_t)v));
            break;
        }
        case 2: {
            jsonw_object_begin(&w, key);
            json_t *o = json_object();
            char k2[16];
            rand_str(k2, sizeof(k2));
            rand_str(val, sizeof(val));
            jsonw_str(&w, k2, val);
            json_object_set_new(o, k2, json_string(val));
            jsonw_object_end(&w);
            json_object_set_new(want, key, o);
            break;
        }
        default: {
            jsonw_array_begin(&w, key);
            json_t *a = json_array();
            for (int e = 0; e < 3; e++) {
                rand_str(val, sizeof(val));
                jsonw_str(&w, NULL, val);
                json_array_append_new(a, json_string(val));
            }
            jsonw_array_end(&w);
            json_object_set_new(want, key, a);
        }
        }
    }
    assert_int_equal(jsonw_finish(&w), 0);
    char *text = json_dumps(want, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_non_null(text);
    size_t tn = strlen(text);
    /* jsonw ends its text with a newline */
    if (w.buf.len != tn + 1 || memcmp(w.buf.data, text, tn) != 0 || w.buf.data[tn] != '\n')
        fail_msg("jsonw wrote\n%.*s\njansson\n%s", (int)w.buf.len, (const char *)w.buf.data,
                 text);
    free(text);
    json_decref(want);
    keybuf_free(&w.buf);
}

static void jsonw_equals_jansson(void **state) {
    (void)state;
    for (int i = 0; i < 20000; i++)
        one_object();
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(jsonw_equals_jansson)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
