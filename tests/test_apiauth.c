/* test_apiauth.c: query/api/apiauth.h without HTTP. The tokens file (one rule
 * per row of its errors; the admin role; constant lookups) and the nodes'
 * request signatures: a signature covers method, target, body, time and
 * subject, so changing any one of them is refused, and so is a signature
 * older or newer than the window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "apiauth.h"

static void temp_path(char *buf, size_t n, const char *tag) {
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/test_apiauth_%ld_%s", dir ? dir : "/tmp", (long)getpid(), tag);
}

static apicreds *load_text(const char *text, int mode, char *err, size_t en) {
    char path[256];
    temp_path(path, sizeof(path), "tokens");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, (mode_t)mode), 0);
    apicreds *c = apicreds_load(path, 0, err, en);
    unlink(path);
    return c;
}

static void tokens_file(void **state) {
    (void)state;
    char err[512] = "";
    apicreds *c = load_text("# ops\n\ntoken-of-tenant-a-01 tenant-a\n"
                            "token-of-the-admin-1 admin\n", 0600, err, sizeof(err));
    if (!c)
        fail_msg("%s", err);
    assert_int_equal(apicreds_count(c), 2);
    apisubject s;
    assert_int_equal(apicreds_find(c, "token-of-tenant-a-01", &s), 0);
    assert_string_equal(s.tenant, "tenant-a");
    assert_int_equal(s.admin, 0);
    assert_int_equal(apicreds_find(c, "token-of-the-admin-1", &s), 0);
    assert_int_equal(s.admin, 1);
    assert_string_equal(s.tenant, "");
    assert_int_equal(apicreds_find(c, "token-of-tenant-a-0", &s), -1);  /* a prefix */
    assert_int_equal(apicreds_find(c, "token-of-tenant-a-012", &s), -1); /* longer */
    assert_int_equal(apicreds_find(c, "", &s), -1);
    apicreds_free(c);
}

static void tokens_file_errors(void **state) {
    (void)state;
    static const struct {
        const char *text;
        const char *problem;
    } rows[] = {
        {"token-of-tenant-a-01\n", ":1: missing subject"},
        {"token-of-tenant-a-01 a b\n", ":1: extra field 'b'"},
        {"short tenant-a\n", ":1: a token is 16..256 characters"},
        {"token with spaces-0123 t\n", ":1: extra field"},
        {"token-of-tenant-a-0\"1 t\n", ":1: a token is 16..256 characters"},
        {"token-of-tenant-a-01 a/b\n", ":1: bad subject"},
        {"token-of-tenant-a-01 a\n# c\ntoken-of-tenant-a-01 b\n",
         ":3: duplicate token (first on line 1)"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char err[512] = "";
        apicreds *c = load_text(rows[i].text, 0600, err, sizeof(err));
        if (c || !strstr(err, rows[i].problem))
            fail_msg("row %zu: got %s, want ...%s", i, c ? "loaded" : err, rows[i].problem);
        assert_null(strstr(err, "token-of-tenant")); /* never the secret */
    }
    char err[512] = "";
    assert_null(load_text("token-of-tenant-a-01 a\n", 0604, err, sizeof(err)));
    assert_non_null(strstr(err, "group or others may read it (mode 0604)"));
}

static const uint8_t secret[] = "the cluster's shared secret, 32+";

static void signature_round_trip_and_each_part(void **state) {
    (void)state;
    uint8_t key[NODEAUTH_KEY_LEN], other[NODEAUTH_KEY_LEN];
    assert_int_equal(nodeauth_key(secret, sizeof(secret) - 1, key), 0);
    assert_int_equal(nodeauth_key(secret, sizeof(secret) - 2, other), 0);
    char v[NODEAUTH_VALUE_MAX], why[256];
    const int64_t t = 1800000000;
    assert_int_equal(nodeauth_sign(key, "PUT", "/v1/buckets/b/objects/k?ack=applied", "{}", 2,
                                   "t:tenant-a", t, v, sizeof(v)), 0);
    assert_int_equal(strncmp(v, "t=1800000000,sig=", 17), 0);
    assert_int_equal(strlen(v), 17 + 64);
    assert_int_equal(nodeauth_verify(key, "PUT", "/v1/buckets/b/objects/k?ack=applied", "{}", 2,
                                     "t:tenant-a", v, t + 5, why, sizeof(why)), 0);
    /* each part of the request, changed: refused */
    assert_int_equal(nodeauth_verify(key, "GET", "/v1/buckets/b/objects/k?ack=applied", "{}", 2,
                                     "t:tenant-a", v, t, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "does not match"));
    assert_int_equal(nodeauth_verify(key, "PUT", "/v1/buckets/c/objects/k?ack=applied", "{}", 2,
                                     "t:tenant-a", v, t, why, sizeof(why)), -1);
    assert_int_equal(nodeauth_verify(key, "PUT", "/v1/buckets/b/objects/k?ack=applied", "{ }", 3,
                                     "t:tenant-a", v, t, why, sizeof(why)), -1);
    assert_int_equal(nodeauth_verify(key, "PUT", "/v1/buckets/b/objects/k?ack=applied", "{}", 2,
                                     "admin", v, t, why, sizeof(why)), -1);
    assert_int_equal(nodeauth_verify(other, "PUT", "/v1/buckets/b/objects/k?ack=applied", "{}",
                                     2, "t:tenant-a", v, t, why, sizeof(why)), -1);
    /* the time is signed: a replay later than the window, or a clock far
     * ahead, is refused */
    assert_int_equal(nodeauth_verify(key, "PUT", "/v1/buckets/b/objects/k?ack=applied", "{}", 2,
                                     "t:tenant-a", v, t + NODEAUTH_WINDOW_S + 1, why,
                                     sizeof(why)), -1);
    assert_non_null(strstr(why, "outside 60 s"));
    assert_int_equal(nodeauth_verify(key, "PUT", "/v1/buckets/b/objects/k?ack=applied", "{}", 2,
                                     "t:tenant-a", v, t - NODEAUTH_WINDOW_S - 1, why,
                                     sizeof(why)), -1);
    char moved[NODEAUTH_VALUE_MAX];
    snprintf(moved, sizeof(moved), "t=1800000030,sig=%s", v + 17);
    assert_int_equal(nodeauth_verify(key, "PUT", "/v1/buckets/b/objects/k?ack=applied", "{}", 2,
                                     "t:tenant-a", moved, t + 30, why, sizeof(why)), -1);
    static const char *const malformed[] = {"", "t=1,sig=zz", "sig=00", "t=x,sig=00", NULL};
    for (int i = 0; malformed[i]; i++) {
        assert_int_equal(nodeauth_verify(key, "GET", "/", "", 0, "node", malformed[i], t, why,
                                         sizeof(why)), -1);
        assert_non_null(strstr(why, "malformed"));
    }
}

static void subjects(void **state) {
    (void)state;
    apisubject s = {.admin = 0}, back;
    snprintf(s.tenant, sizeof(s.tenant), "acme corp/ü");
    char v[800];
    assert_int_equal(nodeauth_subject_format(&s, v, sizeof(v)), 0);
    assert_string_equal(v, "t:acme%20corp%2F%C3%BC");
    /* '/' is no tenant's: the encoded form parses, the name does not */
    assert_int_equal(nodeauth_subject_parse(v, &back), -1);
    snprintf(s.tenant, sizeof(s.tenant), "acme corp ü");
    assert_int_equal(nodeauth_subject_format(&s, v, sizeof(v)), 0);
    assert_int_equal(nodeauth_subject_parse(v, &back), 0);
    assert_string_equal(back.tenant, "acme corp ü");
    assert_int_equal(back.admin, 0);
    apisubject a = {.admin = 1};
    assert_int_equal(nodeauth_subject_format(&a, v, sizeof(v)), 0);
    assert_string_equal(v, "admin");
    assert_int_equal(nodeauth_subject_parse("admin", &back), 0);
    assert_int_equal(back.admin, 1);
    assert_int_equal(nodeauth_subject_parse("node", &back), 0);
    assert_int_equal(back.admin, 1);
    assert_int_equal(nodeauth_subject_parse("open", &back), 1);
    assert_int_equal(nodeauth_subject_parse("root", &back), -1);
    assert_int_equal(nodeauth_subject_parse("t:", &back), -1);
    assert_int_equal(nodeauth_subject_parse("t:%zz", &back), -1);
    assert_int_equal(nodeauth_subject_format(&s, v, 8), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tokens_file),
        cmocka_unit_test(tokens_file_errors),
        cmocka_unit_test(signature_round_trip_and_each_part),
        cmocka_unit_test(subjects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
