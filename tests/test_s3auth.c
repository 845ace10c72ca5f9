/* test_s3auth.c: query/s3/s3auth.h, AWS Signature Version 4 for the S3
 * endpoint, without HTTP. First AWS's published values, byte for byte:
 * the S3 API Reference's header-signed examples, its presigned URL, its
 * chunked upload (signed, and with a signed trailer), and the generic SigV4
 * test suite (service "service"). Then one rule per case: what a change of
 * each signed byte does, what may change freely, and each refusal with
 * S3's own code. Then the credentials file, line by line. Last, if
 * python3 has botocore (Debian: python3-botocore), requests botocore's
 * S3SigV4Auth / S3SigV4QueryAuth signed (tests/s3auth_botocore.py) are
 * checked; without it that case is skipped with a message. */
#define _GNU_SOURCE
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
#include <jansson.h>

#include "s3auth.h"

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
/* The S3 documentation's credentials and time (2013-05-24T00:00:00Z). */
#define DOC_AK "AKIAIOSFODNN7EXAMPLE"
#define DOC_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T2013 1369353600
/* The generic test suite's (2015-08-30T12:36:00Z). */
#define SUITE_AK "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define T2015 1440938160

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- fixtures ---- */

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0600), 0); /* secrets: a wider mode is refused */
}

static void temp_path(char *buf, size_t n, const char *tag) {
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/test_s3auth_%ld_%s", dir ? dir : "/tmp", (long)getpid(), tag);
}

static s3creds *load_text(const char *text, char *err, size_t en) {
    char path[256];
    temp_path(path, sizeof(path), "creds");
    write_file(path, text);
    s3creds *c = s3creds_load(path, 0, err, en);
    unlink(path);
    return c;
}

static s3creds *doc_creds(void) {
    char err[256] = "";
    s3creds *c = load_text(DOC_AK " " DOC_SECRET " tenant-doc\n"
                           SUITE_AK " " SUITE_SECRET " tenant-suite\n"
                           "AKIDRT secret-rt tenant-rt\n", err, sizeof(err));
    if (!c)
        fail_msg("creds: %s", err);
    return c;
}

static s3auth_req req_of(const char *method, const char *path, const char *query,
                         const s3_kv *h, size_t nh, int64_t now) {
    s3auth_req r = {method, path, query, h, nh, now};
    return r;
}

static void expect_ok(const s3creds *c, const s3auth_req *r, s3auth *a) {
    s3auth_check(c, "us-east-1", 0, r, a);
    if (a->status)
        fail_msg("%d %s: %s\n--- canonical request\n%s\n--- string to sign\n%s", a->status,
                 a->code, a->message, a->canonical_request, a->string_to_sign);
}

static void expect_refused(const s3creds *c, const s3auth_req *r, int status,
                           const char *code) {
    s3auth a;
    s3auth_check(c, "us-east-1", 0, r, &a);
    if (a.status != status || !a.code || strcmp(a.code, code) != 0)
        fail_msg("wanted %d %s, got %d %s: %s", status, code, a.status,
                 a.code ? a.code : "(ok)", a.message);
    assert_null(a.cred);
}

/* The "Signature=" part of an Authorization value. */
static const char *sig_of(const char *authz) {
    const char *s = strstr(authz, "Signature=");
    assert_non_null(s);
    return s + 10;
}

/* ---- AWS's published S3 examples ---- */

/* Amazon S3 API Reference, "Signature Calculations for the Authorization
 * Header: Transferring Payload in a Single Chunk (AWS Signature Version 4)"
 * (docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html),
 * examples GET Object, PUT Object, GET Bucket Lifecycle, Get Bucket (List
 * Objects). The requests and signatures as published; the Authorization
 * values are the documentation's (comma-separated, no spaces). */
typedef struct doc_case {
    const char *name, *method, *path, *query;
    s3_kv h[6];
    size_t nh;
    const char *signed_headers, *signature;
} doc_case;

static const doc_case doc_cases[] = {
    {"GET Object", "GET", "/test.txt", NULL,
     {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"},
      {"x-amz-date", "20130524T000000Z"}, {"x-amz-content-sha256", EMPTY_SHA}}, 4,
     "host;range;x-amz-content-sha256;x-amz-date",
     "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
    {"PUT Object", "PUT", "/test$file.text", NULL,
     {{"Host", "examplebucket.s3.amazonaws.com"}, {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
      {"x-amz-date", "20130524T000000Z"}, {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
      {"x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"}},
     5, "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
     "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
    {"PUT Object, path as a client encodes it", "PUT", "/test%24file.text", NULL,
     {{"Host", "examplebucket.s3.amazonaws.com"}, {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
      {"x-amz-date", "20130524T000000Z"}, {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
      {"x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"}},
     5, "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
     "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
    {"GET Bucket Lifecycle", "GET", "/", "lifecycle",
     {{"Host", "examplebucket.s3.amazonaws.com"}, {"x-amz-date", "20130524T000000Z"},
      {"x-amz-content-sha256", EMPTY_SHA}}, 3,
     "host;x-amz-content-sha256;x-amz-date",
     "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
    {"Get Bucket (List Objects)", "GET", "/", "max-keys=2&prefix=J",
     {{"Host", "examplebucket.s3.amazonaws.com"}, {"x-amz-date", "20130524T000000Z"},
      {"x-amz-content-sha256", EMPTY_SHA}}, 3,
     "host;x-amz-content-sha256;x-amz-date",
     "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
};

static void s3_documented_examples_sign_and_verify(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    for (size_t i = 0; i < NELEM(doc_cases); i++) {
        const doc_case *d = &doc_cases[i];
        char authz[512], want[512], hdr[512];
        s3_kv h[8];
        memcpy(h, d->h, d->nh * sizeof(*h));
        s3auth_req r = req_of(d->method, d->path, d->query, h, d->nh, T2013 + 60);
        if (s3auth_sign(DOC_AK, DOC_SECRET, "us-east-1", &r, h[d->nh - 1].value, authz,
                        sizeof(authz)) < 0)
            fail_msg("%s: not signed", d->name);
        /* Each example puts x-amz-content-sha256 last in the table above:
         * its value is the payload hash. */
        snprintf(want, sizeof(want),
                 "AWS4-HMAC-SHA256 Credential=" DOC_AK "/20130524/us-east-1/s3/aws4_request, "
                 "SignedHeaders=%s, Signature=%s", d->signed_headers, d->signature);
        if (strcmp(authz, want) != 0)
            fail_msg("%s:\n got %s\nwant %s", d->name, authz, want);
        /* The documentation's own header verifies. */
        snprintf(hdr, sizeof(hdr),
                 "AWS4-HMAC-SHA256 Credential=" DOC_AK "/20130524/us-east-1/s3/aws4_request,"
                 "SignedHeaders=%s,Signature=%s", d->signed_headers, d->signature);
        h[d->nh] = (s3_kv){"Authorization", hdr};
        r.nheaders = d->nh + 1;
        s3auth a;
        expect_ok(c, &r, &a);
        assert_string_equal(a.cred->tenant, "tenant-doc");
        assert_int_equal(a.payload, S3AUTH_PAYLOAD_SIGNED);
        assert_string_equal(a.payload_sha256, h[d->nh - 1].value);
    }
    /* The PUT example's payload is "Welcome to Amazon S3.". */
    s3auth a;
    s3_kv h[6];
    char hdr[512];
    memcpy(h, doc_cases[1].h, 5 * sizeof(*h));
    snprintf(hdr, sizeof(hdr), "AWS4-HMAC-SHA256 Credential=" DOC_AK "/20130524/us-east-1/s3/"
             "aws4_request,SignedHeaders=%s,Signature=%s", doc_cases[1].signed_headers,
             doc_cases[1].signature);
    h[5] = (s3_kv){"Authorization", hdr};
    s3auth_req r = req_of("PUT", "/test$file.text", NULL, h, 6, T2013);
    expect_ok(c, &r, &a);
    assert_int_equal(s3auth_check_payload(&a, "Welcome to Amazon S3.", 21), 0);
    assert_int_equal(s3auth_check_payload(&a, "Welcome to Amazon S3!", 21), -1);
    assert_int_equal(a.status, 400);
    assert_string_equal(a.code, "XAmzContentSHA256Mismatch");
    s3creds_free(c);
}

/* Amazon S3 API Reference, "Authenticating Requests: Using Query Parameters
 * (AWS Signature Version 4)" (sigv4-query-string-auth.html): GET
 * examplebucket.s3.amazonaws.com/test.txt, 86400 s, at 20130524T000000Z. */
#define DOC_PRESIGNED                                                          \
    "X-Amz-Algorithm=AWS4-HMAC-SHA256"                                         \
    "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request" \
    "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"    \
    "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

static void s3_documented_presigned_url(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    s3_kv h[] = {{"Host", "examplebucket.s3.amazonaws.com"}};
    s3auth_req r = req_of("GET", "/test.txt", NULL, h, 1, T2013);
    char q[1024];
    assert_int_equal(s3auth_presign(DOC_AK, DOC_SECRET, "us-east-1", &r, 86400, q, sizeof(q)), 0);
    assert_string_equal(q, DOC_PRESIGNED);

    s3auth a;
    r.query = DOC_PRESIGNED;
    r.now_s = T2013 + 86400;
    expect_ok(c, &r, &a);
    assert_int_equal(a.presigned, 1);
    assert_int_equal(a.payload, S3AUTH_PAYLOAD_UNSIGNED);
    assert_string_equal(a.cred->access_key, DOC_AK);
    r.now_s = T2013 + 86401;
    expect_refused(c, &r, 403, "AccessDenied");
    s3auth_check(c, "us-east-1", 0, &r, &a);
    assert_string_equal(a.message, "Request has expired");
    /* Not yet valid: more than 15 minutes before X-Amz-Date. */
    r.now_s = T2013 - 901;
    expect_refused(c, &r, 403, "AccessDenied");
    s3creds_free(c);
}

/* Amazon S3 API Reference, "Signature Calculations for the Authorization
 * Header: Transferring Payload in Multiple Chunks (Chunked Upload) (AWS
 * Signature Version 4)" (sigv4-streaming.html), Example: PUT Object: 65536
 * + 1024 bytes of 'a' in two chunks and the final empty one. */
static const char *const doc_chunk_sigs[3] = {
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
};
#define DOC_SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"

/* "size;chunk-signature=SIG\r\n data \r\n" for each size (the last 0). */
static size_t frame(uint8_t *out, const size_t *sizes, const char *const *sigs, size_t k,
                    const char *after_last) {
    size_t o = 0;
    for (size_t i = 0; i < k; i++) {
        if (sigs)
            o += (size_t)sprintf((char *)out + o, "%zx;chunk-signature=%s\r\n", sizes[i], sigs[i]);
        else
            o += (size_t)sprintf((char *)out + o, "%zx\r\n", sizes[i]);
        memset(out + o, 'a', sizes[i]);
        o += sizes[i];
        if (sizes[i])
            o += (size_t)sprintf((char *)out + o, "\r\n");
    }
    o += (size_t)sprintf((char *)out + o, "%s", after_last);
    return o;
}

static void s3_documented_chunked_upload(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    s3_kv h[] = {
        {"Host", "s3.amazonaws.com"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "66560"},
        {"Content-Length", "66824"},
        {"Authorization", "AWS4-HMAC-SHA256 Credential=" DOC_AK "/20130524/us-east-1/s3/"
                          "aws4_request,SignedHeaders=content-encoding;content-length;host;"
                          "x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;"
                          "x-amz-storage-class,Signature=" DOC_SEED},
    };
    s3auth_req r = req_of("PUT", "/examplebucket/chunkObject.txt", NULL, h, 7, T2013);
    char authz[512];
    assert_int_equal(s3auth_sign(DOC_AK, DOC_SECRET, "us-east-1", &r,
                                 "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", authz, sizeof(authz)), 0);
    assert_string_equal(sig_of(authz), DOC_SEED);

    r.nheaders = 8;
    s3auth a;
    expect_ok(c, &r, &a);
    assert_int_equal(a.payload, S3AUTH_PAYLOAD_STREAMING);
    assert_string_equal(a.seed_signature, DOC_SEED);
    assert_string_equal(a.scope, "20130524/us-east-1/s3/aws4_request");
    assert_int_equal(a.decoded_length, 66560);

    static uint8_t body[70000];
    size_t sizes[] = {65536, 1024, 0};
    size_t n = frame(body, sizes, doc_chunk_sigs, 3, "\r\n");
    assert_int_equal(n, 66824); /* the documented Content-Length */
    uint8_t *out;
    size_t out_len;
    assert_int_equal(s3auth_decode_chunked(&a, body, n, &out, &out_len), 0);
    assert_int_equal(out_len, 66560);
    for (size_t i = 0; i < out_len; i++)
        if (out[i] != 'a')
            fail_msg("byte %zu", i);
    free(out);

    /* Each documented chunk signature is needed: change any one. */
    for (int k = 0; k < 3; k++) {
        char bad[65];
        const char *sigs[3] = {doc_chunk_sigs[0], doc_chunk_sigs[1], doc_chunk_sigs[2]};
        snprintf(bad, sizeof(bad), "%s", sigs[k]);
        bad[63] = bad[63] == '0' ? '1' : '0';
        sigs[k] = bad;
        n = frame(body, sizes, sigs, 3, "\r\n");
        s3auth b = a;
        assert_int_equal(s3auth_decode_chunked(&b, body, n, &out, &out_len), -1);
        assert_int_equal(b.status, 403);
        assert_string_equal(b.code, "SignatureDoesNotMatch");
        assert_null(out);
    }
    s3auth_wipe(&a);
    s3creds_free(c);
}

/* Amazon S3 API Reference, "Signature Calculations for Trailing Headers
 * (Chunked Uploads)" (sigv4-streaming-trailers.html): the same 66560
 * bytes with a signed x-amz-checksum-crc32c trailer. The documented seed
 * is taken as given (the request it signs is not rebuilt here); the chunk
 * signatures, the trailer's canonical form and its signature are checked. */
static void s3_documented_signed_trailer(void **state) {
    (void)state;
    static const char *const sigs[3] = {
        "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
        "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
        "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
    };
    s3auth a;
    memset(&a, 0, sizeof(a));
    a.payload = S3AUTH_PAYLOAD_STREAMING_TRAILER;
    a.decoded_length = 66560;
    snprintf(a.seed_signature, sizeof(a.seed_signature), "%s",
             "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
    snprintf(a.amz_date, sizeof(a.amz_date), "20130524T000000Z");
    snprintf(a.scope, sizeof(a.scope), "20130524/us-east-1/s3/aws4_request");
    snprintf(a.trailer_names, sizeof(a.trailer_names), "x-amz-checksum-crc32c");
    assert_int_equal(s3auth_signing_key(DOC_SECRET, "20130524", "us-east-1", "s3",
                                        a.signing_key), 0);
    static uint8_t body[70000];
    size_t sizes[] = {65536, 1024, 0};
    const char *tail =
        "x-amz-checksum-crc32c:sOO8/Q==\r\n"
        "x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n"
        "\r\n";
    size_t n = frame(body, sizes, sigs, 3, tail);
    uint8_t *out;
    size_t out_len;
    s3auth b = a;
    assert_int_equal(s3auth_decode_chunked(&b, body, n, &out, &out_len), 0);
    assert_int_equal(out_len, 66560);
    assert_int_equal(b.ntrailers, 1);
    assert_string_equal(b.trailers[0].name, "x-amz-checksum-crc32c");
    assert_string_equal(b.trailers[0].value, "sOO8/Q==");
    free(out);
    /* Another checksum under the same trailer signature. */
    char *p = memmem(body, n, "sOO8/Q==", 8);
    p[7 - 2] = 'A';
    b = a;
    assert_int_equal(s3auth_decode_chunked(&b, body, n, &out, &out_len), -1);
    assert_string_equal(b.code, "SignatureDoesNotMatch");
}

/* ---- AWS's generic SigV4 test suite ---- */

/* The cases of AWS's Signature Version 4 test suite (aws-sig-v4-test-suite,
 * 2015-08-30, as kept in botocore's tests/unit/auth/aws4_testsuite): their
 * requests and .authz values, credentials AKIDEXAMPLE, region us-east-1,
 * service "service". The normalize-path cases are left out: S3 does not
 * normalize paths (get-relative, get-slash, ... sign "/example/.." as
 * sent). get-header-value-multiline's folded value is given unfolded, as
 * an HTTP server hands it over; post-sts-header-before is left out. */
typedef struct suite_case {
    const char *name, *method, *path, *query;
    s3_kv h[5];
    size_t nh;
    const char *payload, *authz_tail;
} suite_case;

#define SUITE_HOST {"Host", "example.amazonaws.com"}
#define SUITE_DATE {"X-Amz-Date", "20150830T123600Z"}
#define FORM_SHA "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"

static const suite_case suite_cases[] = {
    {"get-vanilla", "GET", "/", NULL, {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
    {"get-vanilla-empty-query-key", "GET", "/", "Param1=value1", {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"},
    {"get-vanilla-query-order-key-case", "GET", "/", "Param2=value2&Param1=value1", {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
    {"get-vanilla-query-order-key", "GET", "/", "Param1=value2&Param1=Value1", {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1"},
    {"get-vanilla-query-order-value", "GET", "/", "Param1=value2&Param1=value1", {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"},
    {"get-vanilla-query-order-encoded", "GET", "/", "Param-3=Value3&Param=Value2&%E1%88%B4=Value1", {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac"},
    {"get-vanilla-query-unreserved", "GET", "/",
     "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
     {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"},
    {"get-vanilla-utf8-query", "GET", "/", "\xe1\x88\xb4=bar", {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
    {"get-vanilla-with-session-token", "GET", "/", NULL,
     {SUITE_HOST, SUITE_DATE, {"X-Amz-Security-Token", "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"}}, 3, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"},
    {"get-unreserved", "GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", NULL,
     {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
    {"get-utf8", "GET", "/\xe1\x88\xb4", NULL, {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"},
    {"get-space", "GET", "/example space/", NULL, {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"},
    {"get-special-character", "GET", "/example/$delete", NULL, {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=a853c9b21b528b19643d00910d35b83a10c366a10833ceefb45edd6c80e40f27"},
    {"get-header-key-duplicate", "GET", "/", NULL,
     {SUITE_HOST, {"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}, SUITE_DATE}, 5, EMPTY_SHA,
     "SignedHeaders=host;my-header1;x-amz-date, Signature=c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
    {"get-header-value-multiline", "GET", "/", NULL,
     {SUITE_HOST, {"My-Header1", "value1   value2      value3"}, SUITE_DATE}, 3, EMPTY_SHA,
     "SignedHeaders=host;my-header1;x-amz-date, Signature=cfd34249e4b1c8d6b91ef74165d41a32e5fab3306300901bb65a51a73575eefd"},
    {"get-header-value-order", "GET", "/", NULL,
     {SUITE_HOST, {"My-Header1", "value4"}, {"My-Header1", "value1"}, {"My-Header1", "value3"}, {"My-Header1", "value2"}}, 5, EMPTY_SHA,
     NULL /* six headers: filled in below */},
    {"get-header-value-trim", "GET", "/", NULL,
     {SUITE_HOST, {"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}, SUITE_DATE}, 4, EMPTY_SHA,
     "SignedHeaders=host;my-header1;my-header2;x-amz-date, Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
    {"post-vanilla", "POST", "/", NULL, {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
    {"post-vanilla-query", "POST", "/", "Param1=value1", {SUITE_HOST, SUITE_DATE}, 2, EMPTY_SHA,
     "SignedHeaders=host;x-amz-date, Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"},
    {"post-header-key-sort", "POST", "/", NULL, {SUITE_HOST, {"My-Header1", "value1"}, SUITE_DATE}, 3, EMPTY_SHA,
     "SignedHeaders=host;my-header1;x-amz-date, Signature=c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"},
    {"post-header-value-case", "POST", "/", NULL, {SUITE_HOST, {"My-Header1", "VALUE1"}, SUITE_DATE}, 3, EMPTY_SHA,
     "SignedHeaders=host;my-header1;x-amz-date, Signature=cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"},
    {"post-x-www-form-urlencoded", "POST", "/", NULL,
     {{"Content-Type", "application/x-www-form-urlencoded"}, SUITE_HOST, SUITE_DATE}, 3, FORM_SHA,
     "SignedHeaders=content-type;host;x-amz-date, Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
    {"post-x-www-form-urlencoded-parameters", "POST", "/", NULL,
     {{"Content-Type", "application/x-www-form-urlencoded; charset=utf8"}, SUITE_HOST, SUITE_DATE}, 3, FORM_SHA,
     "SignedHeaders=content-type;host;x-amz-date, Signature=1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe"},
};

static void sigv4_test_suite_vectors(void **state) {
    (void)state;
    for (size_t i = 0; i < NELEM(suite_cases); i++) {
        const suite_case *t = &suite_cases[i];
        s3_kv h[6];
        size_t nh = t->nh;
        const char *tail = t->authz_tail;
        memcpy(h, t->h, nh * sizeof(*h));
        if (!tail) { /* get-header-value-order */
            h[nh++] = (s3_kv)SUITE_DATE;
            tail = "SignedHeaders=host;my-header1;x-amz-date, Signature="
                   "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01";
        }
        s3auth_req r = req_of(t->method, t->path, t->query, h, nh, T2015);
        char authz[512], want[512];
        snprintf(want, sizeof(want),
                 "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                 "aws4_request, %s", tail);
        assert_int_equal(s3auth_sign_service(SUITE_AK, SUITE_SECRET, "us-east-1", "service",
                                             &r, t->payload, authz, sizeof(authz)), 0);
        if (strcmp(authz, want) != 0)
            fail_msg("%s:\n got %s\nwant %s", t->name, authz, want);
    }
    /* The FORM_SHA above is sha256("Param1=value1"), the suite's body. */
    s3auth a;
    memset(&a, 0, sizeof(a));
    a.payload = S3AUTH_PAYLOAD_SIGNED;
    snprintf(a.payload_sha256, sizeof(a.payload_sha256), "%s", FORM_SHA);
    assert_int_equal(s3auth_check_payload(&a, "Param1=value1", 13), 0);
}

/* ---- round trips and single rules ---- */

#define RT_AK "AKIDRT"
#define RT_SECRET "secret-rt"
#define RT_T 1700000000 /* 2023-11-14T22:13:20Z */
#define RT_DATE "20231114T221320Z"
#define RT_BODY "hello, world"
#define RT_BODY_SHA "09ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b"

typedef struct rt {
    char method[16], path[128], query[128];
    char hv[8][160];
    s3_kv h[10];
    size_t nh;
    char authz[512];
} rt;

/* PUT /bucket/key%20one.txt?partNumber=2&uploadId=u-1 with five signed
 * headers; then Authorization, signed with rt's key unless ak is given. */
static void rt_init(rt *t, const char *ak, const char *region, int64_t when) {
    static const char *const names[] = {"Host", "x-amz-date", "x-amz-content-sha256",
                                        "Content-Type", "x-amz-meta-color"};
    char date[32];
    memset(t, 0, sizeof(*t));
    snprintf(t->method, sizeof(t->method), "PUT");
    snprintf(t->path, sizeof(t->path), "/bucket/key%%20one.txt");
    snprintf(t->query, sizeof(t->query), "partNumber=2&uploadId=u-1");
    if (when == RT_T)
        snprintf(date, sizeof(date), RT_DATE);
    else
        snprintf(date, sizeof(date), "20231114T%02d%02d%02dZ", (int)(when - 1699920000) / 3600,
                 (int)((when - 1699920000) / 60 % 60), (int)((when - 1699920000) % 60));
    const char *vals[] = {"objlog.example:9000", date, RT_BODY_SHA, "text/plain", "blue"};
    for (size_t i = 0; i < NELEM(names); i++) {
        snprintf(t->hv[i], sizeof(t->hv[i]), "%s", vals[i]);
        t->h[i] = (s3_kv){names[i], t->hv[i]};
    }
    t->nh = NELEM(names);
    s3auth_req r = req_of(t->method, t->path, t->query, t->h, t->nh, when);
    assert_int_equal(s3auth_sign(ak ? ak : RT_AK, RT_SECRET, region ? region : "us-east-1", &r,
                                 RT_BODY_SHA, t->authz, sizeof(t->authz)), 0);
    t->h[t->nh++] = (s3_kv){"Authorization", t->authz};
}

static s3auth_req rt_req(rt *t, int64_t now) {
    return req_of(t->method, t->path, t->query, t->h, t->nh, now);
}

static void round_trip_accepts_and_names_the_signer(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    rt t;
    rt_init(&t, NULL, NULL, RT_T);
    s3auth_req r = rt_req(&t, RT_T);
    s3auth a;
    expect_ok(c, &r, &a);
    assert_string_equal(a.cred->tenant, "tenant-rt");
    assert_int_equal(a.anonymous, 0);
    assert_int_equal(a.presigned, 0);
    assert_int_equal(a.payload, S3AUTH_PAYLOAD_SIGNED);
    assert_int_equal(s3auth_check_payload(&a, RT_BODY, strlen(RT_BODY)), 0);
    assert_int_equal(s3auth_check_payload(&a, "hello, World", 12), -1);
    assert_int_equal(a.status, 400);
    assert_string_equal(a.code, "XAmzContentSHA256Mismatch");
    /* Header names in any case, the query in any order. */
    t.h[1].name = "X-AMZ-DATE";
    snprintf(t.query, sizeof(t.query), "uploadId=u-1&partNumber=2");
    expect_ok(c, &r, &a);
    /* '+' and %20 in a query value are the same space. */
    rt_init(&t, NULL, NULL, RT_T);
    snprintf(t.query, sizeof(t.query), "prefix=a%%20b");
    s3auth_req s = req_of(t.method, t.path, t.query, t.h, t.nh - 1, RT_T);
    assert_int_equal(s3auth_sign(RT_AK, RT_SECRET, "us-east-1", &s, RT_BODY_SHA, t.authz,
                                 sizeof(t.authz)), 0);
    snprintf(t.query, sizeof(t.query), "prefix=a+b");
    expect_ok(c, &r, &a);
    s3creds_free(c);
}

/* Changes byte i of s to another byte; the string keeps its length. */
static void flip(char *s, size_t i) { s[i] = s[i] == 'x' ? 'y' : 'x'; }

static void every_signed_byte_changed_is_refused(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    rt t;
    rt_init(&t, NULL, NULL, RT_T);
    s3auth_req r = rt_req(&t, RT_T);
    char *fields[] = {t.method, t.path, t.query, t.hv[0], t.hv[3], t.hv[4]};
    const char *what[] = {"method", "path", "query", "host", "content-type", "x-amz-meta"};
    for (size_t f = 0; f < NELEM(fields); f++) {
        size_t n = strlen(fields[f]);
        for (size_t i = 0; i < n; i++) {
            char keep = fields[f][i];
            flip(fields[f], i);
            s3auth a;
            s3auth_check(c, "us-east-1", 0, &r, &a);
            if (a.status != 403 || strcmp(a.code, "SignatureDoesNotMatch") != 0)
                fail_msg("%s byte %zu: %d %s", what[f], i, a.status, a.code ? a.code : "ok");
            fields[f][i] = keep;
        }
    }
    /* The date: any byte, refused (skewed, invalid, or not the signed one). */
    for (size_t i = 0; i < 16; i++) {
        char keep = t.hv[1][i];
        t.hv[1][i] = keep == '1' ? '2' : '1';
        s3auth a;
        s3auth_check(c, "us-east-1", 0, &r, &a);
        if (a.status == 0)
            fail_msg("date byte %zu accepted", i);
        t.hv[1][i] = keep;
    }
    /* The payload hash (a header the client must sign). */
    for (size_t i = 0; i < 64; i++) {
        char keep = t.hv[2][i];
        t.hv[2][i] = keep == '0' ? '1' : '0';
        expect_refused(c, &r, 403, "SignatureDoesNotMatch");
        t.hv[2][i] = keep;
    }
    /* The signature itself. */
    char *sig = strstr(t.authz, "Signature=") + 10;
    for (size_t i = 0; i < 64; i++) {
        char keep = sig[i];
        sig[i] = keep == '0' ? '1' : '0';
        expect_refused(c, &r, 403, "SignatureDoesNotMatch");
        sig[i] = keep;
    }
    s3auth a;
    expect_ok(c, &r, &a);
    s3creds_free(c);
}

static void unsigned_headers_may_change_but_x_amz_must_be_signed(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    rt t;
    rt_init(&t, NULL, NULL, RT_T);
    char ua[32] = "curl/8.0";
    t.h[t.nh++] = (s3_kv){"User-Agent", ua};
    s3auth_req r = rt_req(&t, RT_T);
    s3auth a;
    expect_ok(c, &r, &a);
    ua[0] = 'C';
    expect_ok(c, &r, &a);
    t.h[t.nh++] = (s3_kv){"x-amz-acl", "public-read"};
    r = rt_req(&t, RT_T);
    expect_refused(c, &r, 403, "AccessDenied");
    s3auth_check(c, "us-east-1", 0, &r, &a);
    assert_non_null(strstr(a.message, "x-amz-acl"));
    /* objlog's own headers too: x-objlog-blob-id chooses the bytes */
    rt_init(&t, NULL, NULL, RT_T);
    t.h[t.nh++] = (s3_kv){"X-Objlog-Blob-Id", "someone-elses"};
    r = rt_req(&t, RT_T);
    expect_refused(c, &r, 403, "AccessDenied");
    s3auth_check(c, "us-east-1", 0, &r, &a);
    assert_non_null(strstr(a.message, "X-Objlog-Blob-Id"));
    /* A signed header dropped from the request no longer matches. */
    rt_init(&t, NULL, NULL, RT_T);
    t.h[3] = t.h[5]; /* Content-Type replaced by Authorization */
    r = req_of(t.method, t.path, t.query, t.h, 5, RT_T);
    expect_refused(c, &r, 403, "SignatureDoesNotMatch");
    s3creds_free(c);
}

static void refusals_carry_s3_codes(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    rt t;
    s3auth a;
    s3auth_req r;

    rt_init(&t, "AKIDUNKNOWN", NULL, RT_T);
    r = rt_req(&t, RT_T);
    expect_refused(c, &r, 403, "InvalidAccessKeyId");

    rt_init(&t, NULL, NULL, RT_T);
    r = rt_req(&t, RT_T + 16 * 60);
    expect_refused(c, &r, 403, "RequestTimeTooSkewed");
    r = rt_req(&t, RT_T - 16 * 60);
    expect_refused(c, &r, 403, "RequestTimeTooSkewed");
    r = rt_req(&t, RT_T + 14 * 60);
    expect_ok(c, &r, &a);
    r = rt_req(&t, RT_T - 14 * 60);
    expect_ok(c, &r, &a);

    rt_init(&t, NULL, "eu-west-1", RT_T);
    r = rt_req(&t, RT_T);
    expect_refused(c, &r, 400, "AuthorizationHeaderMalformed");
    s3auth_check(c, "us-east-1", 0, &r, &a);
    assert_string_equal(a.message, "The authorization header is malformed; the region "
                                   "'eu-west-1' is wrong; expecting 'us-east-1'");

    /* Anonymous: accepted only when allowed. */
    s3_kv h[] = {{"Host", "objlog.example"}};
    r = req_of("GET", "/bucket/k", "versionId=1", h, 1, RT_T);
    s3auth_check(c, "us-east-1", 1, &r, &a);
    assert_int_equal(a.status, 0);
    assert_int_equal(a.anonymous, 1);
    assert_null(a.cred);
    expect_refused(c, &r, 403, "AccessDenied");
    /* A Signature V2 query string is not anonymous, even where that is
     * allowed: objlog does not check V2, so it refuses it. */
    r = req_of("PUT", "/bucket/k", "AWSAccessKeyId=AKIDRT&Signature=abc%3D&Expires=1", h, 1, RT_T);
    s3auth_check(c, "us-east-1", 1, &r, &a);
    assert_int_equal(a.status, 400);
    assert_string_equal(a.code, "InvalidRequest");
    assert_int_equal(a.anonymous, 0);

    /* x-amz-content-sha256 missing, then malformed. */
    rt_init(&t, NULL, NULL, RT_T);
    t.h[2] = t.h[--t.nh];
    r = rt_req(&t, RT_T);
    expect_refused(c, &r, 400, "MissingSecurityHeader");
    rt_init(&t, NULL, NULL, RT_T);
    snprintf(t.hv[2], sizeof(t.hv[2]), "SIGNED-PAYLOAD");
    r = rt_req(&t, RT_T);
    expect_refused(c, &r, 400, "InvalidArgument");

    /* Header and query authentication together. */
    rt_init(&t, NULL, NULL, RT_T);
    snprintf(t.query, sizeof(t.query), "X-Amz-Signature=00");
    r = rt_req(&t, RT_T);
    expect_refused(c, &r, 400, "InvalidArgument");

    /* Malformed headers and other algorithms. */
    const char *bad[][2] = {
        {"AWS AKIDRT:frJIUN8DYpKDtOLCwo//yllqDzg=", "InvalidRequest"},
        {"AWS4-HMAC-SHA256 Credential=AKIDRT/20231114/us-east-1/s3/aws4_request, "
         "SignedHeaders=host", "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 Credential=AKIDRT/20231114/us-east-1/s3, SignedHeaders=host, "
         "Signature=0000000000000000000000000000000000000000000000000000000000000000",
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 Credential=AKIDRT/20231114/us-east-1/sqs/aws4_request, "
         "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
         "Signature=0000000000000000000000000000000000000000000000000000000000000000",
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 Credential=AKIDRT/20231113/us-east-1/s3/aws4_request, "
         "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
         "Signature=0000000000000000000000000000000000000000000000000000000000000000",
         "AuthorizationHeaderMalformed"},
        {"AWS4-HMAC-SHA256 Credential=AKIDRT/20231114/us-east-1/s3/aws4_request, "
         "SignedHeaders=x-amz-content-sha256;x-amz-date, "
         "Signature=0000000000000000000000000000000000000000000000000000000000000000",
         "AuthorizationHeaderMalformed"},
    };
    for (size_t i = 0; i < NELEM(bad); i++) {
        rt_init(&t, NULL, NULL, RT_T);
        snprintf(t.authz, sizeof(t.authz), "%s", bad[i][0]);
        r = rt_req(&t, RT_T);
        s3auth_check(c, "us-east-1", 0, &r, &a);
        if (!a.code || strcmp(a.code, bad[i][1]) != 0)
            fail_msg("%s: got %s (%s)", bad[i][0], a.code ? a.code : "ok", a.message);
    }

    /* No usable date: 403 AccessDenied; the Date header serves instead. */
    rt_init(&t, NULL, NULL, RT_T);
    snprintf(t.hv[1], sizeof(t.hv[1]), "yesterday");
    r = rt_req(&t, RT_T);
    expect_refused(c, &r, 403, "AccessDenied");
    s3creds_free(c);
}

static void presigned_round_trip_and_expiry(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    s3_kv h[] = {{"Host", "objlog.example:9000"}};
    char q[1024];
    s3auth_req r = req_of("GET", "/bucket/a%20b.txt", "versionId=v1&response-content-type=text%2Fplain",
                          h, 1, RT_T);
    assert_int_equal(s3auth_presign(RT_AK, RT_SECRET, "us-east-1", &r, 60, q, sizeof(q)), 0);
    r.query = q;
    s3auth a;
    r.now_s = RT_T + 60;
    expect_ok(c, &r, &a);
    assert_int_equal(a.presigned, 1);
    r.now_s = RT_T + 61;
    expect_refused(c, &r, 403, "AccessDenied");
    r.now_s = RT_T;
    /* Every byte of the query but X-Amz-Signature's value is signed. */
    char *sig = strstr(q, "X-Amz-Signature=");
    for (size_t i = 0; q + i < sig; i++) {
        char keep = q[i];
        if (keep == '&' || keep == '=' || keep == '%')
            continue; /* they change the parse, tested below */
        flip(q, i);
        s3auth_check(c, "us-east-1", 0, &r, &a);
        if (a.status == 0)
            fail_msg("query byte %zu of %s accepted", i, q);
        q[i] = keep;
    }
    expect_ok(c, &r, &a);
    /* An added parameter, the wrong region, a bad X-Amz-Expires. */
    char q2[1100];
    snprintf(q2, sizeof(q2), "%s&extra=1", q);
    r.query = q2;
    expect_refused(c, &r, 403, "SignatureDoesNotMatch");
    s3auth_req e = req_of("GET", "/bucket/a%20b.txt", NULL, h, 1, RT_T);
    assert_int_equal(s3auth_presign(RT_AK, RT_SECRET, "eu-west-1", &e, 60, q2, sizeof(q2)), 0);
    e.query = q2;
    expect_refused(c, &e, 400, "AuthorizationQueryParametersError");
    assert_int_equal(s3auth_presign(RT_AK, RT_SECRET, "us-east-1", &e, 604801, q2, sizeof(q2)), -1);
    e.query = NULL;
    assert_int_equal(s3auth_presign(RT_AK, RT_SECRET, "us-east-1", &e, 604800, q2, sizeof(q2)), 0);
    char *x = strstr(q2, "X-Amz-Expires=604800");
    assert_non_null(x);
    memcpy(x + 14, "604801", 6);
    e.query = q2;
    expect_refused(c, &e, 400, "AuthorizationQueryParametersError");
    snprintf(q2, sizeof(q2), "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00");
    expect_refused(c, &e, 400, "AuthorizationQueryParametersError");
    s3creds_free(c);
}

/* A 3-chunk stream signed here: 8192 + 8192 + 100 bytes, then 0. */
static void self_signed_chunked_stream(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    s3_kv h[] = {
        {"Host", "objlog.example"},
        {"x-amz-date", RT_DATE},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "16484"},
        {"Authorization", NULL},
    };
    char authz[512];
    s3auth_req r = req_of("PUT", "/bucket/big", NULL, h, 5, RT_T);
    assert_int_equal(s3auth_sign(RT_AK, RT_SECRET, "us-east-1", &r,
                                 "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", authz, sizeof(authz)), 0);
    h[5].value = authz;
    r.nheaders = 6;
    s3auth a;
    expect_ok(c, &r, &a);

    static uint8_t data[16484], body[20000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + 1);
    size_t sizes[] = {8192, 8192, 100, 0}, off = 0, n = 0;
    char prev[65], sig[65];
    memcpy(prev, a.seed_signature, 65);
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(s3auth_chunk_signature(&a, prev, data + off, sizes[k], sig), 0);
        n += (size_t)sprintf((char *)body + n, "%zx;chunk-signature=%s\r\n", sizes[k], sig);
        memcpy(body + n, data + off, sizes[k]);
        n += sizes[k];
        n += (size_t)sprintf((char *)body + n, "\r\n");
        off += sizes[k];
        memcpy(prev, sig, 65);
    }
    uint8_t *out;
    size_t out_len;
    s3auth b = a;
    assert_int_equal(s3auth_decode_chunked(&b, body, n, &out, &out_len), 0);
    assert_int_equal(out_len, sizeof(data));
    assert_memory_equal(out, data, sizeof(data));
    free(out);

    /* A flipped byte in each chunk's data. */
    size_t at[] = {100, 8192 + 90 + 5000, n - 60};
    for (size_t i = 0; i < NELEM(at); i++) {
        body[at[i]] ^= 1;
        b = a;
        assert_int_equal(s3auth_decode_chunked(&b, body, n, &out, &out_len), -1);
        assert_int_equal(b.status, 403);
        assert_string_equal(b.code, "SignatureDoesNotMatch");
        body[at[i]] ^= 1;
    }
    /* Cut anywhere: refused (mostly IncompleteBody). */
    for (size_t cut = 0; cut < n; cut += (cut < 200 || n - cut < 200) ? 1 : 997) {
        b = a;
        assert_int_equal(s3auth_decode_chunked(&b, body, cut, &out, &out_len), -1);
        assert_int_equal(b.status >= 400, 1);
    }
    b = a;
    assert_int_equal(s3auth_decode_chunked(&b, body, n - 1, &out, &out_len), -1);
    assert_string_equal(b.code, "IncompleteBody");
    /* Extra bytes after the end; a decoded length that does not match. */
    body[n] = 'x';
    b = a;
    assert_int_equal(s3auth_decode_chunked(&b, body, n + 1, &out, &out_len), -1);
    assert_string_equal(b.code, "InvalidRequest");
    b = a;
    b.decoded_length = 16483;
    assert_int_equal(s3auth_decode_chunked(&b, body, n, &out, &out_len), -1);
    assert_string_equal(b.code, "IncompleteBody");
    /* Two chunks swapped: each signature is valid, the chain is not. The
     * first two frames are the same length (8192 bytes each). */
    size_t fl = strlen("2000;chunk-signature=") + 64 + 2 + 8192 + 2;
    assert_memory_equal(body + fl, "2000;chunk-signature=", 21);
    static uint8_t swapped[20000];
    memcpy(swapped, body + fl, fl);
    memcpy(swapped + fl, body, fl);
    memcpy(swapped + 2 * fl, body + 2 * fl, n - 2 * fl);
    b = a;
    assert_int_equal(s3auth_decode_chunked(&b, swapped, n, &out, &out_len), -1);
    assert_string_equal(b.code, "SignatureDoesNotMatch");
    s3auth_wipe(&a);
    s3creds_free(c);
}

static void unsigned_payload_with_trailer(void **state) {
    (void)state;
    s3creds *c = doc_creds();
    s3_kv h[] = {
        {"Host", "objlog.example"},
        {"x-amz-date", RT_DATE},
        {"x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "20"},
        {"x-amz-trailer", "x-amz-checksum-crc32"},
        {"Authorization", NULL},
    };
    char authz[512];
    s3auth_req r = req_of("PUT", "/bucket/t", NULL, h, 6, RT_T);
    assert_int_equal(s3auth_sign(RT_AK, RT_SECRET, "us-east-1", &r,
                                 "STREAMING-UNSIGNED-PAYLOAD-TRAILER", authz, sizeof(authz)), 0);
    h[6].value = authz;
    r.nheaders = 7;
    s3auth a;
    expect_ok(c, &r, &a);
    assert_int_equal(a.payload, S3AUTH_PAYLOAD_UNSIGNED_TRAILER);
    const char *body = "10\r\naaaaaaaaaaaaaaaa\r\n4\r\naaaa\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n";
    uint8_t *out;
    size_t out_len;
    s3auth b = a;
    assert_int_equal(s3auth_decode_chunked(&b, (const uint8_t *)body, strlen(body), &out, &out_len), 0);
    assert_int_equal(out_len, 20);
    assert_int_equal(b.ntrailers, 1);
    assert_string_equal(b.trailers[0].name, "x-amz-checksum-crc32");
    assert_string_equal(b.trailers[0].value, "AAAAAA==");
    free(out);
    const char *other = "14\r\naaaaaaaaaaaaaaaaaaaa\r\n0\r\nx-amz-checksum-sha1:AAAA\r\n\r\n";
    b = a;
    assert_int_equal(s3auth_decode_chunked(&b, (const uint8_t *)other, strlen(other), &out, &out_len), -1);
    assert_string_equal(b.code, "InvalidRequest");
    const char *none = "14\r\naaaaaaaaaaaaaaaaaaaa\r\n0\r\n\r\n";
    b = a;
    assert_int_equal(s3auth_decode_chunked(&b, (const uint8_t *)none, strlen(none), &out, &out_len), -1);
    assert_string_equal(b.code, "InvalidRequest");
    s3creds_free(c);
}

/* ---- the credentials file ---- */

static void creds_file_good(void **state) {
    (void)state;
    char err[256] = "";
    s3creds *c = load_text("# objlog S3 credentials\n"
                           "\n"
                           "AKIA1 s3cr3t/+= tenant-one\n"
                           "   # indented comment\n"
                           "\tAKIA2\tother-secret\tt\xc3\xa9nant   \n"
                           "   \n"
                           "AKIA0 x tenant-zero",  /* no final newline */
                           err, sizeof(err));
    if (!c)
        fail_msg("%s", err);
    assert_int_equal(s3creds_count(c), 3);
    const s3cred *k = s3creds_find(c, "AKIA2");
    assert_non_null(k);
    assert_string_equal(k->secret, "other-secret");
    assert_string_equal(k->tenant, "t\xc3\xa9nant");
    assert_string_equal(s3creds_find(c, "AKIA1")->secret, "s3cr3t/+=");
    assert_string_equal(s3creds_find(c, "AKIA0")->tenant, "tenant-zero");
    assert_null(s3creds_find(c, "AKIA3"));
    assert_null(s3creds_find(c, "akia1"));
    s3creds_free(c);
    c = load_text("# nobody\n", err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(s3creds_count(c), 0);
    assert_null(s3creds_find(c, "AKIA1"));
    s3creds_free(c);
}

static void creds_file_errors_name_file_and_line(void **state) {
    (void)state;
    char long_key[200], long_line[1200];
    memset(long_key, 'K', 129);
    long_key[129] = '\0';
    memset(long_line, 'L', 1100);
    long_line[1100] = '\0';
    struct {
        char text[1400];
        int line;
        const char *problem;
    } cases[] = {
        {"# c\nAKIA1 secret\n", 2, "missing tenant"},
        {"AKIA1\n", 1, "missing secret key"},
        {"\n\nAKIA1 s t admin extra\n", 3, "extra field"},
        {"AKIA1 s t root\n", 1, "unknown role 'root' (the only role is admin"},
        {"AKIA1 s t\nAKIA2 s t\nAKIA1 s2 t2\n", 3, "duplicate access key id 'AKIA1' (first on line 1)"},
        {"AKIA/1 s t\n", 1, "bad characters in access key id"},
        {"AKIA1 s\x01x t\n", 1, "bad characters in secret key"},
        {"AKIA1 s a/b\n", 1, "bad characters in tenant"},
        {"AKIA1 s \xff\xfe\n", 1, "bad characters in tenant"},
        {"", 1, "access key id too long"},
        {"", 2, "line too long"},
    };
    snprintf(cases[9].text, sizeof(cases[9].text), "%s s t\n", long_key);
    snprintf(cases[10].text, sizeof(cases[10].text), "# ok\n%s s t\n", long_line);
    for (size_t i = 0; i < NELEM(cases); i++) {
        char path[256], want[400], err[512] = "";
        temp_path(path, sizeof(path), "badcreds");
        write_file(path, cases[i].text);
        s3creds *c = s3creds_load(path, 0, err, sizeof(err));
        unlink(path);
        if (c)
            fail_msg("case %zu loaded", i);
        snprintf(want, sizeof(want), "%s:%d: %s", path, cases[i].line, cases[i].problem);
        if (strncmp(err, want, strlen(want)) != 0)
            fail_msg("case %zu:\n got %s\nwant %s...", i, err, want);
    }
    char err[256];
    assert_null(s3creds_load("/nonexistent/objlog-creds", 0, err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent/objlog-creds: "));
}

/* The fourth field is the role: admin, or nothing. */
static void creds_admin_role(void **state) {
    (void)state;
    char err[256] = "";
    s3creds *c = load_text("AKADMIN s1 ops admin\nAKUSER s2 tenant-u\n", err, sizeof(err));
    if (!c)
        fail_msg("creds: %s", err);
    assert_int_equal(s3creds_find(c, "AKADMIN")->admin, 1);
    assert_string_equal(s3creds_find(c, "AKADMIN")->tenant, "ops");
    assert_int_equal(s3creds_find(c, "AKUSER")->admin, 0);
    s3creds_free(c);
}

/* A credentials file group or others may read holds secrets in the open:
 * refused, naming the mode and the fix; loaded when the caller allows it
 * (--insecure), which then knows the mode to warn about. */
static void creds_open_mode_refused(void **state) {
    (void)state;
    char path[256], err[512] = "", want[400];
    temp_path(path, sizeof(path), "opencreds");
    write_file(path, "AK1 s1 t1\n");
    assert_int_equal(chmod(path, 0644), 0);
    assert_null(s3creds_load(path, 0, err, sizeof(err)));
    snprintf(want, sizeof(want),
             "%s: group or others may read it (mode 0644) and it holds secrets: chmod 600 it "
             "(or pass --insecure)", path);
    assert_string_equal(err, want);
    s3creds *c = s3creds_load(path, 1, err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(s3creds_open_mode(c), 044);
    s3creds_free(c);
    assert_int_equal(chmod(path, 0600), 0);
    c = s3creds_load(path, 0, err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(s3creds_open_mode(c), 0);
    s3creds_free(c);
    unlink(path);
}

/* ---- botocore, when python3 has it ---- */

static void botocore_signed_requests_verify(void **state) {
    (void)state;
    const char *src = getenv("OBJLOG_SRC_DIR");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "python3 '%s/tests/s3auth_botocore.py' 2>/dev/null",
             src ? src : "..");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t je;
    json_t *all = json_loadf(p, 0, &je);
    int rc = pclose(p);
    if (rc != 0 || !all) {
        json_decref(all);
        fprintf(stderr, "SKIP botocore_signed_requests_verify: python3 with botocore not found "
                        "(apt-get install python3-botocore); exit %d\n", rc);
        skip();
    }
    s3creds *c = doc_creds();
    size_t i;
    json_t *v;
    assert_true(json_array_size(all) >= 5);
    json_array_foreach(all, i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *query = json_string_value(json_object_get(v, "query"));
        const char *body = json_string_value(json_object_get(v, "body"));
        json_t *hs = json_object_get(v, "headers");
        s3_kv h[16];
        size_t nh = 0, j;
        json_t *kv;
        json_array_foreach(hs, j, kv) {
            assert_true(nh < NELEM(h));
            h[nh++] = (s3_kv){json_string_value(json_array_get(kv, 0)),
                              json_string_value(json_array_get(kv, 1))};
        }
        s3auth_req r = req_of(json_string_value(json_object_get(v, "method")),
                              json_string_value(json_object_get(v, "path")),
                              query && *query ? query : NULL, h, nh, RT_T + 5);
        s3auth a;
        s3auth_check(c, "us-east-1", 0, &r, &a);
        if (a.status)
            fail_msg("botocore '%s': %d %s: %s\n%s", name, a.status, a.code, a.message,
                     a.canonical_request);
        assert_int_equal(s3auth_check_payload(&a, body, strlen(body)), 0);
        /* And one changed byte of the path is refused. */
        char path[512];
        snprintf(path, sizeof(path), "%sx", r.path);
        r.path = path;
        s3auth_check(c, "us-east-1", 0, &r, &a);
        assert_string_equal(a.code, "SignatureDoesNotMatch");
    }
    json_decref(all);
    s3creds_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(s3_documented_examples_sign_and_verify),
        cmocka_unit_test(s3_documented_presigned_url),
        cmocka_unit_test(s3_documented_chunked_upload),
        cmocka_unit_test(s3_documented_signed_trailer),
        cmocka_unit_test(sigv4_test_suite_vectors),
        cmocka_unit_test(round_trip_accepts_and_names_the_signer),
        cmocka_unit_test(every_signed_byte_changed_is_refused),
        cmocka_unit_test(unsigned_headers_may_change_but_x_amz_must_be_signed),
        cmocka_unit_test(refusals_carry_s3_codes),
        cmocka_unit_test(presigned_round_trip_and_expiry),
        cmocka_unit_test(self_signed_chunked_stream),
        cmocka_unit_test(unsigned_payload_with_trailer),
        cmocka_unit_test(creds_file_good),
        cmocka_unit_test(creds_file_errors_name_file_and_line),
        cmocka_unit_test(creds_admin_role),
        cmocka_unit_test(creds_open_mode_refused),
        cmocka_unit_test(botocore_signed_requests_verify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
