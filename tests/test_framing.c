/* test_framing.c: HTTP/1.1 message framing on both of objlogd's ports.
 *
 * Where a request's body ends must not be open to two readings: a proxy in
 * front that reads it one way and objlogd another is a request-smuggling
 * vector (RFC 9112 section 11.2). So every request whose framing is not
 * exact (a repeated Content-Length, Content-Length with Transfer-Encoding,
 * a coding other than chunked, a chunk size that is not 1*HEXDIG with an
 * optional ";ext", chunk data not followed by CRLF, a folded or malformed
 * header line, a bare CR or LF, a trailer field) is answered 400 and its
 * connection closed, and nothing after it on that connection is answered.
 * Well-formed requests, chunked or not, pipelined, or dripped one byte at
 * a time, are answered as before and keep their connection.
 *
 * One rule per row; every row runs against the JSON port (GET /healthz)
 * and the S3 port (GET /, ListBuckets), which both answer 200 to the
 * request when its framing is right. One `objlogd --embedded --s3-listen`
 * serves the whole file; proc.h kills it if the test dies. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "framing.h"
#include "proc.h"
#include "rawhttp.h"

typedef struct daemon_ {
    proc *p;
    char dir[256];
    int port;                    /* the JSON API */
    int s3port;
} daemon_;

static daemon_ g;

static int port_of(const char *addr) {
    const char *colon = strrchr(addr, ':');
    return colon ? atoi(colon + 1) : -1;
}

static int group_setup(void **state) {
    (void)state;
    char objlogd[512], data[300], addr[64], ready[8];
    if (proc_tmpdir(g.dir, sizeof(g.dir)) < 0)
        return -1;
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    snprintf(data, sizeof(data), "%s/data", g.dir);
    char blobs[300];
    snprintf(blobs, sizeof(blobs), "%s/blobs", g.dir);
    char *argv[] = {objlogd, "--embedded", "--partitions", "2", "--data", data,
                    "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0",
                    "--s3-anonymous", "--threads", "2", "--blob-dir", blobs, NULL};
    g.p = proc_spawn(argv, NULL);
    if (!g.p || proc_wait_line(g.p, "OBJLOG_LISTEN=", addr, sizeof(addr), 60000) < 0)
        return -1;
    g.port = port_of(addr);
    if (proc_wait_line(g.p, "OBJLOG_S3_LISTEN=", addr, sizeof(addr), 10000) < 0)
        return -1;
    g.s3port = port_of(addr);
    return proc_wait_line(g.p, "OBJLOG_READY", ready, sizeof(ready), 60000);
}

static int group_teardown(void **state) {
    (void)state;
    int status = g.p ? proc_stop(g.p, 20000) : -1;
    proc_rmtree(g.dir);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- rows */

typedef struct frow {
    const char *rule;
    const char *text;            /* the request; {P} is the port's path */
    size_t len;                  /* 0: strlen (rows holding NUL give it) */
    int ok;                      /* 1: 200, connection kept; 0: 400, closed */
} frow;

#define GET_HEAD "GET {P} HTTP/1.1\r\nHost: t\r\n"
#define CHUNKED GET_HEAD "Transfer-Encoding: chunked\r\n\r\n"
#define WITH_NUL(s) s, sizeof(s) - 1

static const frow rows[] = {
    /* Content-Length */
    {"Content-Length repeated with another value",
     GET_HEAD "Content-Length: 2\r\nContent-Length: 7\r\n\r\nabcdefg", 0, 0},
    {"Content-Length repeated with the same value",
     GET_HEAD "Content-Length: 2\r\nContent-Length: 2\r\n\r\nab", 0, 0},
    {"Content-Length as a list", GET_HEAD "Content-Length: 2, 2\r\n\r\nab", 0, 0},
    {"Content-Length with a sign", GET_HEAD "Content-Length: +2\r\n\r\nab", 0, 0},
    {"Content-Length in hex", GET_HEAD "Content-Length: 0x2\r\n\r\nab", 0, 0},
    {"Content-Length empty", GET_HEAD "Content-Length:\r\n\r\n", 0, 0},
    {"Content-Length with Transfer-Encoding",
     GET_HEAD "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, 0},
    {"Transfer-Encoding with Content-Length",
     GET_HEAD "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", 0, 0},
    /* Transfer-Encoding */
    {"Transfer-Encoding other than chunked",
     GET_HEAD "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 0, 0},
    {"Transfer-Encoding chunked twice in one field",
     GET_HEAD "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 0, 0},
    {"Transfer-Encoding repeated",
     GET_HEAD "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0,
     0},
    {"Transfer-Encoding in HTTP/1.0",
     "GET {P} HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, 0},
    {"HEAD with a body", "HEAD {P} HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nab", 0, 0},
    /* chunk sizes: 1*HEXDIG [ ";" ext ] CRLF */
    {"chunk size 0x2", CHUNKED "0x2\r\nab\r\n0\r\n\r\n", 0, 0},
    {"chunk size with a sign", CHUNKED "+2\r\nab\r\n0\r\n\r\n", 0, 0},
    {"chunk size after a space", CHUNKED " 2\r\nab\r\n0\r\n\r\n", 0, 0},
    {"chunk size before a space", CHUNKED "2 \r\nab\r\n0\r\n\r\n", 0, 0},
    {"chunk size not hex", CHUNKED "g\r\nab\r\n0\r\n\r\n", 0, 0},
    {"chunk size missing", CHUNKED "\r\n2\r\nab\r\n0\r\n\r\n", 0, 0},
    {"chunk size of 17 digits", CHUNKED "00000000000000002\r\nab\r\n0\r\n\r\n", 0, 0},
    {"chunk size line ended by LF", CHUNKED "2\nab\r\n0\r\n\r\n", 0, 0},
    {"chunk extension with a control character",
     CHUNKED "2;a=\x01\r\nab\r\n0\r\n\r\n", 0, 0},
    /* chunk data */
    {"chunk data not followed by CRLF", CHUNKED "2\r\nab0\r\n\r\n", 0, 0},
    {"chunk data followed by LF", CHUNKED "2\r\nab\n0\r\n\r\n", 0, 0},
    {"chunk data followed by two CRLF", CHUNKED "2\r\nab\r\n\r\n0\r\n\r\n", 0, 0},
    {"chunk data longer than its size", CHUNKED "2\r\nabc\r\n0\r\n\r\n", 0, 0},
    {"trailer field", CHUNKED "2\r\nab\r\n0\r\nX-Trailer: 1\r\n\r\n", 0, 0},
    /* header lines */
    {"header line folded", GET_HEAD "X-A: 1\r\n 2\r\n\r\n", 0, 0},
    {"space before a header's colon", GET_HEAD "Content-Length : 2\r\n\r\nab", 0, 0},
    {"header line without a colon", GET_HEAD "X-A\r\n\r\n", 0, 0},
    {"header line ended by LF", GET_HEAD "X-A: 1\nX-B: 2\r\n\r\n", 0, 0},
    {"bare CR in a header value", GET_HEAD "X-A: 1\r2\r\n\r\n", 0, 0},
    {"NUL in a header value", WITH_NUL(GET_HEAD "X-A: 1\0002\r\n\r\n"), 0},
    {"request line ended by LF", "GET {P} HTTP/1.1\nHost: t\r\n\r\n", 0, 0},
    /* well-formed: answered, connection kept */
    {"no body", GET_HEAD "\r\n", 0, 1},
    {"Content-Length 0", GET_HEAD "Content-Length: 0\r\n\r\n", 0, 1},
    {"Content-Length with spaces around it", GET_HEAD "Content-Length:  2 \r\n\r\nab", 0, 1},
    {"chunked", CHUNKED "2\r\nab\r\n0\r\n\r\n", 0, 1},
    {"chunked in upper-case hex with leading zeros",
     CHUNKED "00A\r\n0123456789\r\n0\r\n\r\n", 0, 1},
    {"Transfer-Encoding: Chunked", GET_HEAD "Transfer-Encoding: Chunked\r\n\r\n0\r\n\r\n", 0,
     1},
    {"chunk extension", CHUNKED "2;name=value\r\nab\r\n1;a;b=\"c d\"\r\nc\r\n0;x\r\n\r\n", 0,
     1},
    {"HEAD without a body", "HEAD {P} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n", 0,
     1},
};

/* text with {P} replaced by path, into out; its length. */
static size_t expand(const frow *row, const char *path, char *out, size_t size) {
    size_t n = row->len ? row->len : strlen(row->text), o = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 3 <= n && memcmp(row->text + i, "{P}", 3) == 0) {
            size_t pl = strlen(path);
            assert_true(o + pl < size);
            memcpy(out + o, path, pl);
            o += pl;
            i += 2;
            continue;
        }
        assert_true(o + 1 < size);
        out[o++] = row->text[i];
    }
    out[o] = '\0';
    return o;
}

typedef struct port_ {
    const char *name;
    int port;
    const char *path;
} port_;

static void ports(port_ out[2]) {
    out[0] = (port_){"JSON", g.port, "/healthz"};
    out[1] = (port_){"S3", g.s3port, "/"};
}

/* A refused row: one answer, 400, then the connection closed (and
 * nothing more answered). A first answer other than 400 fails at once. */
static int check_refused(const frow *row, const port_ *p, const char *req, size_t n,
                         raw_reply *r) {
    int fd = raw_connect(p->port);
    assert_true(fd >= 0);
    if (raw_send(fd, req, n) < 0) {
        /* closed while sending: read what it answered */
    }
    raw_collect(fd, r, 1, 0, 5000);
    int answered = r->n, code = r->codes[0], closed = r->closed;
    if (answered == 1 && code == 400 && !closed) {
        static raw_reply rest;
        raw_collect(fd, &rest, 1, 1, 3000);
        answered += rest.n;
        closed = rest.closed;
    }
    close(fd);
    if (answered == 1 && code == 400 && closed)
        return 0;
    print_error("%s port, \"%s\": %d answers (first %d), %s:\n%.400s\n", p->name, row->rule,
                answered, code, closed ? "closed" : "left open", r->text);
    return 1;
}

/* A well-formed row, then GET on the same connection: 200 twice, open. */
static int check_served(const frow *row, const port_ *p, const char *req, size_t n,
                        raw_reply *r) {
    assert_int_equal(raw_exchange(p->port, req, n, r, 2, 0, 5000), 0);
    if (r->n == 2 && r->codes[0] == 200 && r->codes[1] == 200 && !r->closed)
        return 0;
    print_error("%s port, \"%s\": %d answers (%d, %d), %s:\n%.400s\n", p->name, row->rule,
                r->n, r->codes[0], r->codes[1], r->closed ? "closed" : "open", r->text);
    return 1;
}

static void test_framing_rows(void **state) {
    (void)state;
    port_ ps[2];
    ports(ps);
    static char req[8192];
    static raw_reply r;
    int failed = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        for (int k = 0; k < 2; k++) {
            size_t n = expand(&rows[i], ps[k].path, req, sizeof(req));
            if (rows[i].ok) {
                char next[128];
                int m = snprintf(next, sizeof(next), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n",
                                 ps[k].path);
                memcpy(req + n, next, (size_t)m + 1);
                n += (size_t)m;
            }
            failed += rows[i].ok ? check_served(&rows[i], &ps[k], req, n, &r)
                                 : check_refused(&rows[i], &ps[k], req, n, &r);
        }
    }
    if (failed)
        fail_msg("%d of %zu cases failed", failed, 2 * sizeof(rows) / sizeof(rows[0]));
}

/* Answers to requests that came before a refused one on the same
 * connection (in the same packet) are written whole, in order; the
 * refused one and what follows it are not served. */
static void test_pipelined_then_refused(void **state) {
    (void)state;
    port_ ps[2];
    ports(ps);
    static raw_reply r;
    for (int k = 0; k < 2; k++) {
        char req[1024];
        const char *P = ps[k].path;
        int n = snprintf(req, sizeof(req),
                         "GET %s HTTP/1.1\r\nHost: t\r\n\r\n"
                         "GET %s HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "3\r\nabc\r\n0\r\n\r\n"
                         "GET %s HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n"
                         "Content-Length: 30\r\n\r\nx"
                         "GET %s HTTP/1.1\r\nHost: t\r\n\r\n",
                         P, P, P, P);
        assert_int_equal(raw_exchange(ps[k].port, req, (size_t)n, &r, 3, 1, 5000), 0);
        if (r.n != 3 || r.codes[0] != 200 || r.codes[1] != 200 || r.codes[2] != 400 ||
            !r.closed)
            fail_msg("%s port: %d answers (%d %d %d), %s:\n%.900s", ps[k].name, r.n,
                     r.codes[0], r.codes[1], r.codes[2], r.closed ? "closed" : "open",
                     r.text);
    }
}

/* One byte per send: the checks hold across reads (the refusal comes
 * once evhttp has the request's head and part of its body). */
static void test_dripped(void **state) {
    (void)state;
    port_ ps[2];
    ports(ps);
    static raw_reply r;
    for (int k = 0; k < 2; k++) {
        for (int bad = 0; bad < 2; bad++) {
            char req[512];
            int n = snprintf(req, sizeof(req),
                             "GET %s HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "4;e=1\r\nabcd\r\n%s0\r\n\r\n",
                             ps[k].path, bad ? "2\r\nxyz" : "2\r\nxy\r\n");
            int fd = raw_connect(ps[k].port);
            assert_true(fd >= 0);
            for (int i = 0; i < n; i++) {
                if (raw_send(fd, req + i, 1) < 0)
                    break; /* refused and closed under us */
                usleep(1000);
            }
            raw_collect(fd, &r, 1, bad, 5000);
            close(fd);
            int want = bad ? 400 : 200;
            if (r.n != 1 || r.codes[0] != want || r.closed != bad)
                fail_msg("%s port, dripped %s request: %d answers (first %d), %s:\n%.600s",
                         ps[k].name, bad ? "bad" : "good", r.n, r.codes[0],
                         r.closed ? "closed" : "open", r.text);
        }
    }
}

/* Chunked bodies reach the handlers whole: a JSON PUT's metadata and an
 * S3 PutObject's bytes (its ETag is their MD5). */
static void test_chunked_bodies_work(void **state) {
    (void)state;
    static raw_reply r;
    static const char mk[] = "PUT /v1/buckets/chunky HTTP/1.1\r\nHost: t\r\n"
                             "Content-Length: 0\r\n\r\n";
    assert_int_equal(raw_exchange(g.port, mk, sizeof(mk) - 1, &r, 1, 0, 10000), 0);
    assert_int_equal(r.codes[0], 200);
    static const char put[] = "PUT /v1/buckets/chunky/objects/k HTTP/1.1\r\nHost: t\r\n"
                              "Transfer-Encoding: chunked\r\n\r\n"
                              "A\r\n{\"size\":3,\r\n"
                              "C;part=2\r\n\"etag\":\"e1\"}\r\n0\r\n\r\n"
                              "GET /v1/buckets/chunky/objects/k HTTP/1.1\r\nHost: t\r\n\r\n";
    assert_int_equal(raw_exchange(g.port, put, sizeof(put) - 1, &r, 2, 0, 10000), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.codes[0], 200);
    assert_int_equal(r.codes[1], 200);
    assert_non_null(strstr(r.text + r.body[1], "\"etag\":\"e1\""));
    static const char s3[] = "PUT /chunky/s3key HTTP/1.1\r\nHost: t\r\n"
                              "Transfer-Encoding: chunked\r\n\r\n"
                              "2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n";
    assert_int_equal(raw_exchange(g.s3port, s3, sizeof(s3) - 1, &r, 1, 0, 10000), 0);
    assert_int_equal(r.codes[0], 200);
    /* md5("hello") */
    assert_non_null(strcasestr(r.text, "ETag: \"5d41402abc4b2a76b9719d911017c592\""));
}

/* The checker alone (query/server/framing.c): every row gives the same verdict
 * however its bytes are split across reads (each split point, and one
 * byte at a time), and a refused row's error and start are the same. */
static int framing_verdict(const uint8_t *req, size_t n, const size_t *cuts, int ncuts,
                           framing *f) {
    uint8_t copy[8192];
    memcpy(copy, req, n);
    framing_init(f);
    size_t at = 0;
    for (int i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        if (framing_feed(f, copy + at, end - at) < 0)
            return -1;
        at = end;
    }
    return 0;
}

static void test_split_anywhere(void **state) {
    (void)state;
    static char req[8192];
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        size_t n = expand(&rows[i], "/p", req, sizeof(req));
        framing whole, part;
        int want = framing_verdict((const uint8_t *)req, n, NULL, 0, &whole);
        if (want != (rows[i].ok ? 0 : -1))
            fail_msg("\"%s\": the checker says %d", rows[i].rule, want);
        for (size_t cut = 1; cut < n; cut++) {
            if (framing_verdict((const uint8_t *)req, n, &cut, 1, &part) != want ||
                (want < 0 && (part.error != whole.error || part.msg_start != whole.msg_start)))
                fail_msg("\"%s\": split at %zu: %s", rows[i].rule, cut,
                         part.error ? part.error : "accepted");
        }
        size_t bytes[8192];
        for (size_t k = 0; k + 1 < n; k++)
            bytes[k] = k + 1;
        if (framing_verdict((const uint8_t *)req, n, bytes, (int)n - 1, &part) != want)
            fail_msg("\"%s\": a byte at a time: %s", rows[i].rule,
                     part.error ? part.error : "accepted");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_anywhere),
        cmocka_unit_test(test_framing_rows),
        cmocka_unit_test(test_pipelined_then_refused),
        cmocka_unit_test(test_dripped),
        cmocka_unit_test(test_chunked_bodies_work),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
