/* test_admit.c: admission control.
 *
 * Without processes: the token bucket's arithmetic and query/admit/admit.c's
 * decision on a fake clock (exact refill and burst, Retry-After rounding,
 * refunds, tenant and hot-partition reasons, the counters); the state
 * machine's SetRateLimit / DeleteRateLimit outcomes and a store dump that
 * is the same whatever the batch boundaries.
 *
 * With `objlogd` processes: the JSON API and the S3 endpoint answer 503
 * SlowDown with Retry-After past a tiny limit and count each refusal in
 * /metrics exactly; bad settings are 400s; a limit set through the log is
 * rebuilt by a second objlogd replaying the log into an empty store; the
 * per-tenant flag; the hot-partition guard under --test-apply-delay-ms
 * (writes 503, reads 200); the producer's OBJLOG_STATUS_SLOW_DOWN.
 *
 * No timing assertions: a real clock refills tokens, so the HTTP cases
 * send requests until the first refusal (bounded) and then compare what
 * they saw with the counters, which are exact whatever the timing. */
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
#include <rocksdb/c.h>

#include "apply.h"
#include "httpc.h"
#include "admit.h"
#include "view.h"
#include "keycodec.h"
#include "objlog_producer.h"
#include "proc.h"
#include "rangemap.h"
#include "tokenbucket.h"

/* ------------------------------------------------------ token bucket */

static void test_tokenbucket_refill_and_burst_exact(void **state) {
    (void)state;
    tokenbucket b = {0};
    int64_t retry = -1;
    /* rps 2, burst 3: full at the first take */
    for (int i = 0; i < 3; i++)
        assert_int_equal(tokenbucket_take(&b, 2, 3, 0, &retry), 1);
    assert_int_equal(tokenbucket_take(&b, 2, 3, 0, &retry), 0);
    assert_int_equal(retry, 500000); /* one token at 2/s: 0.5 s */
    assert_int_equal(tokenbucket_take(&b, 2, 3, 499999, &retry), 0);
    assert_int_equal(retry, 1); /* 999,998 micro-tokens: 1 us short */
    assert_int_equal(tokenbucket_take(&b, 2, 3, 500000, &retry), 1);
    assert_int_equal(b.micro, 0);
    /* a long pause refills to the burst, never past it */
    assert_int_equal(tokenbucket_take(&b, 2, 3, 100000000, &retry), 1);
    assert_int_equal(b.micro, 2 * TOKENBUCKET_UNIT);
    /* the clock going back refills nothing */
    assert_int_equal(tokenbucket_take(&b, 2, 3, 5, &retry), 1);
    assert_int_equal(tokenbucket_take(&b, 2, 3, 5, &retry), 1);
    assert_int_equal(tokenbucket_take(&b, 2, 3, 5, &retry), 0);
    /* burst 0 means max(rps, 1); rps 0 means no limit */
    assert_int_equal(tokenbucket_depth(5, 0), 5);
    assert_int_equal(tokenbucket_depth(0, 0), 1);
    tokenbucket free_b = {0};
    for (int i = 0; i < 1000; i++)
        assert_int_equal(tokenbucket_take(&free_b, 0, 0, 0, &retry), 1);
    /* Retry-After: whole seconds, rounded up, at least 1 */
    assert_int_equal(tokenbucket_retry_seconds(1), 1);
    assert_int_equal(tokenbucket_retry_seconds(1000000), 1);
    assert_int_equal(tokenbucket_retry_seconds(1000001), 2);
    assert_int_equal(tokenbucket_retry_seconds(0), 1);
    /* a shrunken setting shrinks the bucket */
    tokenbucket s = {0};
    assert_int_equal(tokenbucket_take(&s, 10, 10, 0, &retry), 1);
    assert_int_equal(tokenbucket_take(&s, 1, 1, 0, &retry), 1);
    assert_int_equal(tokenbucket_take(&s, 1, 1, 0, &retry), 0);
    assert_int_equal(retry, 1000000);
}

static void test_admit_decide_on_a_fake_clock(void **state) {
    (void)state;
    admit_conf conf = {.bucket_rps = 1, .bucket_burst = 2, .tenant_rps = 3,
                       .tenant_burst = 3, .slowdown_lag = 10};
    admit *a = admit_new(&conf);
    assert_non_null(a);
    int64_t retry = 0;
    /* the default: 2 requests, then SlowDown for 1 s */
    admit_target d = {.bucket = "dflt", .tenant = "", .write = 0};
    assert_int_equal(admit_decide(a, &d, 0, &retry), ADMIT_OK);
    assert_int_equal(admit_decide(a, &d, 0, &retry), ADMIT_OK);
    assert_int_equal(admit_decide(a, &d, 0, &retry), ADMIT_BUCKET);
    assert_int_equal(retry, 1);
    assert_int_equal(admit_decide(a, &d, 1000000, &retry), ADMIT_OK);
    /* the bucket's own limit replaces the default; write_rps is on top */
    Objlog__RateLimit own = OBJLOG__RATE_LIMIT__INIT;
    own.rps = 0; /* reads unlimited even though the default says 1/s */
    own.write_rps = 1;
    own.write_burst = 1;
    admit_target r = {.bucket = "own", .tenant = "", .limit = &own, .write = 0};
    for (int i = 0; i < 50; i++)
        assert_int_equal(admit_decide(a, &r, 0, &retry), ADMIT_OK);
    admit_target w = r;
    w.write = 1;
    assert_int_equal(admit_decide(a, &w, 0, &retry), ADMIT_OK);
    assert_int_equal(admit_decide(a, &w, 0, &retry), ADMIT_BUCKET);
    /* refund: a write refused by write_rps costs no token of rps */
    Objlog__RateLimit both = OBJLOG__RATE_LIMIT__INIT;
    both.rps = 5;
    both.burst = 5;
    both.write_rps = 1;
    both.write_burst = 1;
    admit_target rw = {.bucket = "refund", .tenant = "", .limit = &both, .write = 1};
    assert_int_equal(admit_decide(a, &rw, 0, &retry), ADMIT_OK);     /* 4 left */
    assert_int_equal(admit_decide(a, &rw, 0, &retry), ADMIT_BUCKET); /* write */
    rw.write = 0;
    for (int i = 0; i < 4; i++) /* still 4: the refused write gave its back */
        assert_int_equal(admit_decide(a, &rw, 0, &retry), ADMIT_OK);
    assert_int_equal(admit_decide(a, &rw, 0, &retry), ADMIT_BUCKET);
    /* tenant: 3 over all its buckets; another tenant is not affected */
    Objlog__RateLimit none = OBJLOG__RATE_LIMIT__INIT; /* explicit: no limit */
    admit_target t1 = {.bucket = "ta", .tenant = "acme", .limit = &none};
    admit_target t2 = {.bucket = "tb", .tenant = "acme", .limit = &none};
    admit_target t3 = {.bucket = "tc", .tenant = "other", .limit = &none};
    assert_int_equal(admit_decide(a, &t1, 0, &retry), ADMIT_OK);
    assert_int_equal(admit_decide(a, &t2, 0, &retry), ADMIT_OK);
    assert_int_equal(admit_decide(a, &t1, 0, &retry), ADMIT_OK);
    assert_int_equal(admit_decide(a, &t2, 0, &retry), ADMIT_TENANT);
    assert_int_equal(retry, 1); /* 3/s: a third of a second, rounded up */
    assert_int_equal(admit_decide(a, &t3, 0, &retry), ADMIT_OK);
    assert_int_equal(admit_decide(a, &t2, 333333, &retry), ADMIT_TENANT);
    assert_int_equal(admit_decide(a, &t2, 333334, &retry), ADMIT_OK);
    /* hot partition: writes only, over the bound (not at it) */
    admit_target hw = {.bucket = "hot", .tenant = "", .limit = &none, .write = 1,
                       .lag = 11};
    admit_target hr = hw;
    hr.write = 0;
    assert_int_equal(admit_decide(a, &hw, 0, &retry), ADMIT_HOT_PARTITION);
    assert_int_equal(retry, 1);
    assert_int_equal(admit_decide(a, &hr, 0, &retry), ADMIT_OK);
    hw.lag = 10;
    assert_int_equal(admit_decide(a, &hw, 0, &retry), ADMIT_OK);
    /* the counters: one per refused request, under its reason */
    assert_int_equal(admit_rejected(a, "dflt", ADMIT_BUCKET), 1);
    assert_int_equal(admit_rejected(a, "own", ADMIT_BUCKET), 1);
    assert_int_equal(admit_rejected(a, "refund", ADMIT_BUCKET), 2);
    assert_int_equal(admit_rejected(a, "tb", ADMIT_TENANT), 2);
    assert_int_equal(admit_rejected(a, "ta", ADMIT_TENANT), 0);
    assert_int_equal(admit_rejected(a, "hot", ADMIT_HOT_PARTITION), 1);
    assert_int_equal(admit_rejected(a, "nobody", ADMIT_BUCKET), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    admit_metrics(f, a);
    fclose(f);
    assert_non_null(strstr(text, "objlog_admission_rejected_total{bucket=\"tb\",reason=\"tenant\"} 2\n"));
    assert_non_null(strstr(text, "objlog_admission_rejected_total{bucket=\"hot\",reason=\"hot_partition\"} 1\n"));
    assert_null(strstr(text, "bucket=\"ta\""));
    free(text);
    admit_destroy(a);
}

/* ------------------------------------------------------ state machine */

#define NPARTS 4
#define T0 1700000000000LL

typedef struct rl_step {
    char op;                     /* B create, S set, D delete */
    const char *bucket;
    uint32_t rps, burst, wrps, wburst;
    int no_limit;                /* S without a limit */
    Objlog__OutcomeCode want;
} rl_step;

static Objlog__Event *rl_event(const rl_step *s, int idx, Objlog__RateLimit *rl,
                               Objlog__SetRateLimit *set, Objlog__DeleteRateLimit *del,
                               Objlog__CreateBucket *cb, uint8_t rid[16]) {
    static Objlog__Event ev;
    objlog__event__init(&ev);
    memset(rid, 0, 16);
    rid[0] = (uint8_t)idx;
    rid[1] = 0xad;
    ev.request_id.data = rid;
    ev.request_id.len = 16;
    ev.range_epoch = 1;
    ev.bucket = (char *)s->bucket;
    if (s->op == 'B') {
        objlog__create_bucket__init(cb);
        cb->tenant = "acme";
        ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
        ev.create_bucket = cb;
    } else if (s->op == 'S') {
        objlog__rate_limit__init(rl);
        objlog__set_rate_limit__init(set);
        rl->rps = s->rps;
        rl->burst = s->burst;
        rl->write_rps = s->wrps;
        rl->write_burst = s->wburst;
        set->limit = s->no_limit ? NULL : rl;
        ev.op_case = OBJLOG__EVENT__OP_SET_RATE_LIMIT;
        ev.set_rate_limit = set;
    } else {
        objlog__delete_rate_limit__init(del);
        ev.op_case = OBJLOG__EVENT__OP_DELETE_RATE_LIMIT;
        ev.delete_rate_limit = del;
    }
    return &ev;
}

static const rl_step rl_steps[] = {
    {'S', "rlb", 5, 5, 0, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET},
    {'D', "rlb", 0, 0, 0, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET},
    {'B', "rlb", 0, 0, 0, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_OK},
    {'S', "rlb", 0, 0, 0, 0, 1, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT},
    {'S', "rlb", 1000001, 0, 0, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT},
    {'S', "rlb", 0, 4, 0, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT},
    {'S', "rlb", 1, 1, 0, 3, 0, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT},
    {'S', "rlb", 7, 9, 2, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_OK},
    {'B', "rlc", 0, 0, 0, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_OK},
    {'S', "rlc", 3, 0, 0, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_OK},
    {'D', "rlc", 0, 0, 0, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_OK},
    {'D', "rlc", 0, 0, 0, 0, 0, OBJLOG__OUTCOME_CODE__OUTCOME_OK},
};
#define RL_NSTEPS (sizeof(rl_steps) / sizeof(rl_steps[0]))

/* Applies every step (one batch per event, or one for all) into a fresh
 * store in dir; returns objlog_store_dump's text (caller frees). */
static char *rl_apply_all(const char *dir, int per_event, Objlog__BucketRecord **rlb) {
    char err[256];
    objlog_store *st = objlog_store_open(dir, err, sizeof(err));
    assert_non_null(st);
    rangemap *rm = rangemap_new_default(NPARTS, 1);
    apply_batch *b = apply_batch_new(st, rm);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    int64_t next[NPARTS] = {0};
    for (size_t i = 0; i < RL_NSTEPS; i++) {
        Objlog__RateLimit rl;
        Objlog__SetRateLimit set;
        Objlog__DeleteRateLimit del;
        Objlog__CreateBucket cb;
        uint8_t rid[16];
        Objlog__Event *ev = rl_event(&rl_steps[i], (int)i, &rl, &set, &del, &cb, rid);
        keybuf k;
        keybuf_init(&k);
        assert_int_equal(keycodec_route_key(&k, ev->bucket, strlen(ev->bucket),
                                            (const uint8_t *)"", 0), 0);
        int32_t p = rangemap_partition(rm, k.data, k.len);
        keybuf_free(&k);
        Objlog__OutcomeCode code = -1;
        assert_int_equal(apply_event(b, p, next[p], T0 + (int64_t)i * 1000, ev, &code, err,
                                     sizeof(err)), 0);
        if (code != rl_steps[i].want)
            fail_msg("step %zu: outcome %d, want %d", i, code, rl_steps[i].want);
        next[p]++;
        apply_set_applied(b, p, next[p]);
        if (per_event || i + 1 == RL_NSTEPS) {
            char *e = NULL;
            rocksdb_write(objlog_store_db(st), wo, apply_batch_wb(b), &e);
            assert_null(e);
            apply_batch_written(b);
            apply_batch_clear(b);
        }
    }
    rocksdb_writeoptions_destroy(wo);
    apply_batch_destroy(b);
    char *text = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&text, &n);
    assert_int_equal(objlog_store_dump(st, out, err, sizeof(err)), 0);
    fclose(out);
    if (rlb) {
        view *v = view_open(st);
        view_bucket vb;
        assert_int_equal(view_get_bucket(v, "rlb", &vb, err, sizeof(err)), VIEW_OK);
        *rlb = vb.record;
        view_bucket c;
        assert_int_equal(view_get_bucket(v, "rlc", &c, err, sizeof(err)), VIEW_OK);
        assert_null(c.record->rate_limit); /* deleted, twice */
        view_bucket_free(&c);
        view_close(v);
    }
    rangemap_destroy(rm);
    objlog_store_close(st);
    return text;
}

static void test_apply_rate_limit_outcomes_and_replay(void **state) {
    (void)state;
    char d1[256], d2[256];
    assert_int_equal(proc_tmpdir(d1, sizeof(d1)), 0);
    assert_int_equal(proc_tmpdir(d2, sizeof(d2)), 0);
    Objlog__BucketRecord *r = NULL;
    char *a = rl_apply_all(d1, 1, &r);
    char *b = rl_apply_all(d2, 0, NULL);
    assert_string_equal(a, b); /* the same store whatever the batches */
    assert_non_null(r->rate_limit);
    assert_int_equal(r->rate_limit->rps, 7);
    assert_int_equal(r->rate_limit->burst, 9);
    assert_int_equal(r->rate_limit->write_rps, 2);
    assert_int_equal(r->rate_limit->write_burst, 0);
    assert_string_equal(r->tenant, "acme");
    objlog__bucket_record__free_unpacked(r, NULL);
    free(a);
    free(b);
    proc_rmtree(d1);
    proc_rmtree(d2);
}

/* ------------------------------------------------------ objlogd */

static char g_objlogd[1024];

typedef struct objlogd_run {
    proc *p;
    char url[600];
    char s3url[600];
    char boot[512];
    char dir[256];
} objlogd_run;

/* objlogd with args after argv[0] (NULL-ended); waits for READY. */
static void daemon_start(objlogd_run *d, char *const *args, int embedded, int s3) {
    char *argv[40] = {g_objlogd};
    int n = 1;
    for (int i = 0; args[i]; i++)
        argv[n++] = args[i];
    d->p = proc_spawn(argv, NULL);
    assert_non_null(d->p);
    char line[512];
    if (embedded) {
        assert_int_equal(proc_wait_line(d->p, "OBJLOG_BOOTSTRAP=", d->boot,
                                        sizeof(d->boot), 60000), 0);
    }
    assert_int_equal(proc_wait_line(d->p, "OBJLOG_LISTEN=", line, sizeof(line), 60000), 0);
    snprintf(d->url, sizeof(d->url), "http://%s", line);
    if (s3) {
        assert_int_equal(proc_wait_line(d->p, "OBJLOG_S3_LISTEN=", line, sizeof(line), 60000),
                         0);
        snprintf(d->s3url, sizeof(d->s3url), "http://%s", line);
    }
    assert_int_equal(proc_wait_line(d->p, "OBJLOG_READY", line, sizeof(line), 60000), 0);
}

static void daemon_stop(objlogd_run *d) {
    int st = proc_stop(d->p, 30000);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static long req(httpc *h, const char *method, const char *path, const char *body,
                httpc_resp *r) {
    assert_int_equal(httpc_do(h, method, path, body, NULL, r), 0);
    return r->status;
}

/* The value of a counter line in /metrics (0 when absent). */
static unsigned long long metric(httpc *h, const char *line_prefix) {
    httpc_resp r;
    assert_int_equal(req(h, "GET", "/metrics", NULL, &r), 200);
    const char *p = strstr(r.body, line_prefix);
    return p ? strtoull(p + strlen(line_prefix), NULL, 10) : 0;
}

/* Sends method path until a 503 (at most max requests); every other
 * answer must be want. Returns how many were refused (0 or 1); *last gets
 * the 503's body and headers. */
static int until_slowdown(httpc *h, const char *method, const char *path, const char *body,
                          long want, int max, httpc_resp *last) {
    for (int i = 0; i < max; i++) {
        long st = req(h, method, path, body, last);
        if (st == 503)
            return 1;
        if (st != want)
            fail_msg("%s %s: %ld %s", method, path, st, last->body);
    }
    return 0;
}

static void assert_retry_after(const httpc_resp *r, const char *value) {
    char want[64];
    snprintf(want, sizeof(want), "retry-after: %s", value);
    if (!strstr(r->headers, want))
        fail_msg("no '%s' in:\n%s", want, r->headers);
}

static void test_json_and_s3_slowdown_and_bad_input(void **state) {
    (void)state;
    objlogd_run d;
    assert_int_equal(proc_tmpdir(d.dir, sizeof(d.dir)), 0);
    char *args[] = {"--embedded", "--data", d.dir, "--listen", "127.0.0.1:0",
                    "--partitions", "2", "--s3-listen", "127.0.0.1:0", "--s3-anonymous",
                    NULL};
    daemon_start(&d, args, 1, 1);
    httpc *h = httpc_new(d.url);
    httpc_resp r;
    assert_int_equal(req(h, "PUT", "/v1/buckets/tiny", NULL, &r), 200);
    assert_int_equal(req(h, "PUT", "/v1/buckets/free", NULL, &r), 200);
    /* bad settings: 400 with the field named, nothing logged */
    const char *bad[][2] = {
        {"{\"rps\":-1}", "field rps must be an integer in 0..1000000"},
        {"{\"rps\":1000001}", "field rps must be an integer in 0..1000000"},
        {"{\"rps\":\"5\"}", "field rps must be an integer in 0..1000000"},
        {"{\"burst\":3}", "give rps and/or write_rps"},
        {"{\"rps\":0,\"burst\":3}", "a burst needs its rate"},
        {"{\"rps\":1,\"speed\":3}", "unknown field speed"},
        {"[1]", "the request body must be a JSON object"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(req(h, "PUT", "/v1/buckets/tiny/ratelimit", bad[i][0], &r), 400);
        if (!strstr(r.body, bad[i][1]))
            fail_msg("%s: %s", bad[i][0], r.body);
    }
    assert_int_equal(req(h, "PUT", "/v1/buckets/tiny/ratelimit", NULL, &r), 400);
    assert_non_null(strstr(r.body, "\"code\":\"MalformedJSON\""));
    assert_int_equal(req(h, "POST", "/v1/buckets/tiny/ratelimit", "{}", &r), 405);
    assert_int_equal(req(h, "PUT", "/v1/buckets/nobucket/ratelimit", "{\"rps\":1}", &r), 404);
    assert_non_null(strstr(r.body, "\"code\":\"NoSuchBucket\""));
    assert_int_equal(req(h, "GET", "/v1/buckets/nobucket/ratelimit", NULL, &r), 404);
    /* no limit yet */
    assert_int_equal(req(h, "GET", "/v1/buckets/tiny/ratelimit", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"source\":\"none\""));
    /* rps 1, burst 2: a few requests in, a 503 SlowDown */
    assert_int_equal(req(h, "PUT", "/v1/buckets/tiny/ratelimit", "{\"rps\":1,\"burst\":2}",
                         &r), 200);
    assert_int_equal(req(h, "GET", "/v1/buckets/tiny/ratelimit", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"source\":\"bucket\",\"all\":{\"rps\":1,\"burst\":2}"));
    int seen = until_slowdown(h, "PUT", "/v1/buckets/tiny/objects/k", "{\"size\":1}", 200, 50,
                              &r);
    assert_int_equal(seen, 1);
    assert_retry_after(&r, "1");
    assert_non_null(strstr(r.body, "\"code\":\"SlowDown\""));
    assert_non_null(strstr(r.body, "\"reason\":\"bucket\""));
    assert_non_null(strstr(r.body, "\"retry_after_s\":1"));
    /* reads count too, and another bucket is not affected */
    seen += until_slowdown(h, "GET", "/v1/buckets/tiny/objects?consistency=eventual", NULL,
                           200, 50, &r);
    assert_int_equal(seen, 2);
    for (int i = 0; i < 20; i++)
        assert_int_equal(req(h, "PUT", "/v1/buckets/free/objects/k", "{}", &r), 200);
    /* the S3 endpoint: same limit, XML error */
    httpc *s3 = httpc_new(d.s3url);
    seen += until_slowdown(s3, "PUT", "/tiny/s3key", "abc", 200, 50, &r);
    assert_int_equal(seen, 3);
    assert_retry_after(&r, "1");
    assert_non_null(strstr(r.body, "<Code>SlowDown</Code>"));
    assert_int_equal(metric(h, "objlog_admission_rejected_total{bucket=\"tiny\",reason=\"bucket\"} "),
                     3);
    assert_int_equal(req(h, "GET", "/metrics", NULL, &r), 200);
    assert_null(strstr(r.body, "bucket=\"free\""));
    /* the limit route itself is never refused: lift it */
    assert_int_equal(req(h, "DELETE", "/v1/buckets/tiny/ratelimit", NULL, &r), 200);
    for (int i = 0; i < 20; i++)
        assert_int_equal(req(h, "PUT", "/v1/buckets/tiny/objects/k", "{}", &r), 200);
    httpc_destroy(s3);
    httpc_destroy(h);
    daemon_stop(&d);
    proc_rmtree(d.dir);
}

static void test_flags_rejected(void **state) {
    (void)state;
    const char *cases[][3] = {
        {"--rate-limit-bucket", "x", "--rate-limit-bucket needs an integer in 0..1000000"},
        {"--rate-limit-bucket", "0:5", "a burst needs a rate"},
        {"--rate-limit-tenant", "5:2000000", "needs an integer in 0..1000000"},
        {"--slowdown-lag", "-3", "--slowdown-lag needs an integer"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *argv[] = {g_objlogd, "--embedded", (char *)cases[i][0], (char *)cases[i][1],
                        NULL};
        char out[4096], err[4096];
        int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 30000);
        assert_int_equal(rc, 2);
        if (!strstr(err, cases[i][2]))
            fail_msg("%s %s: %s", cases[i][0], cases[i][1], err);
    }
}

/* Set through the log on one objlogd; a second one with an empty store
 * replays the log and enforces the same limit. */
static void test_limit_survives_replay(void **state) {
    (void)state;
    objlogd_run k, a, b;
    char *kargs[] = {"--kafka-only", "--partitions", "2", NULL};
    k.p = proc_spawn((char *[]){g_objlogd, kargs[0], kargs[1], kargs[2], NULL}, NULL);
    assert_non_null(k.p);
    char line[64];
    assert_int_equal(proc_wait_line(k.p, "OBJLOG_BOOTSTRAP=", k.boot, sizeof(k.boot), 60000), 0);
    assert_int_equal(proc_wait_line(k.p, "OBJLOG_READY", line, sizeof(line), 60000), 0);
    assert_int_equal(proc_tmpdir(a.dir, sizeof(a.dir)), 0);
    assert_int_equal(proc_tmpdir(b.dir, sizeof(b.dir)), 0);
    char *aargs[] = {"--brokers", k.boot, "--data", a.dir, "--listen", "127.0.0.1:0", NULL};
    daemon_start(&a, aargs, 0, 0);
    httpc *h = httpc_new(a.url);
    httpc_resp r;
    assert_int_equal(req(h, "PUT", "/v1/buckets/replayed", NULL, &r), 200);
    assert_int_equal(req(h, "PUT", "/v1/buckets/replayed/ratelimit",
                         "{\"rps\":0,\"write_rps\":1,\"write_burst\":2}", &r), 200);
    httpc_destroy(h);
    daemon_stop(&a);
    char *bargs[] = {"--brokers", k.boot, "--data", b.dir, "--listen", "127.0.0.1:0", NULL};
    daemon_start(&b, bargs, 0, 0);
    h = httpc_new(b.url);
    /* strong read: after the replay reached the log's end */
    assert_int_equal(req(h, "GET", "/v1/buckets/replayed/ratelimit", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"source\":\"bucket\",\"all\":{\"rps\":0,\"burst\":0},"
                                   "\"write\":{\"rps\":1,\"burst\":2}"));
    /* reads unlimited (rps 0), writes 1/s burst 2 */
    for (int i = 0; i < 30; i++)
        assert_int_equal(req(h, "GET", "/v1/buckets/replayed", NULL, &r), 200);
    int seen = until_slowdown(h, "DELETE", "/v1/buckets/replayed/objects/x", NULL, 200, 50, &r);
    assert_int_equal(seen, 1);
    assert_non_null(strstr(r.body, "\"reason\":\"bucket\""));
    assert_int_equal(
        metric(h, "objlog_admission_rejected_total{bucket=\"replayed\",reason=\"bucket\"} "), 1);
    httpc_destroy(h);
    daemon_stop(&b);
    daemon_stop(&k);
    proc_rmtree(a.dir);
    proc_rmtree(b.dir);
}

static void test_tenant_limit_by_flag(void **state) {
    (void)state;
    objlogd_run d;
    assert_int_equal(proc_tmpdir(d.dir, sizeof(d.dir)), 0);
    char *args[] = {"--embedded", "--data", d.dir, "--listen", "127.0.0.1:0",
                    "--rate-limit-tenant", "2:3", NULL};
    daemon_start(&d, args, 1, 0);
    httpc *h = httpc_new(d.url);
    httpc_resp r;
    assert_int_equal(req(h, "PUT", "/v1/buckets/ten-a", "{\"tenant\":\"acme\"}", &r), 200);
    assert_int_equal(req(h, "PUT", "/v1/buckets/ten-b", "{\"tenant\":\"acme\"}", &r), 200);
    assert_int_equal(req(h, "PUT", "/v1/buckets/ten-c", "{\"tenant\":\"other\"}", &r), 200);
    assert_int_equal(req(h, "PUT", "/v1/buckets/ten-none", NULL, &r), 200);
    assert_int_equal(req(h, "GET", "/v1/buckets/ten-a/ratelimit", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"tenant\":\"acme\",\"tenant_limit\":{\"rps\":2,\"burst\":3}"));
    /* the two buckets of acme share one token bucket */
    int seen = 0;
    for (int i = 0; i < 50 && !seen; i++) {
        const char *path = i % 2 ? "/v1/buckets/ten-b" : "/v1/buckets/ten-a";
        long st = req(h, "GET", path, NULL, &r);
        if (st == 503)
            seen = 1;
        else
            assert_int_equal(st, 200);
    }
    assert_int_equal(seen, 1);
    assert_non_null(strstr(r.body, "\"reason\":\"tenant\""));
    assert_non_null(strstr(r.body, "the tenant of bucket ten-"));
    assert_retry_after(&r, "1");
    /* another tenant, and buckets without one, are not limited by acme's */
    for (int i = 0; i < 3; i++)
        assert_int_equal(req(h, "GET", "/v1/buckets/ten-c", NULL, &r), 200);
    for (int i = 0; i < 20; i++)
        assert_int_equal(req(h, "GET", "/v1/buckets/ten-none", NULL, &r), 200);
    /* the CLI: objlog ratelimit sets, shows and refuses nonsense */
    char objlog[1024], out[4096], err[4096];
    proc_bin("ops/objlog", objlog, sizeof(objlog));
    char *set[] = {objlog, "--url", d.url, "ratelimit", "ten-c", "--rps", "40", "--write-rps",
                   "4", NULL};
    assert_int_equal(proc_run(set, NULL, out, sizeof(out), err, sizeof(err), 30000), 0);
    assert_string_equal(out, "ratelimit: ten-c {\"rps\":40,\"write_rps\":4}\n");
    char *show[] = {objlog, "--url", d.url, "ratelimit", "ten-c", NULL};
    assert_int_equal(proc_run(show, NULL, out, sizeof(out), err, sizeof(err), 30000), 0);
    assert_non_null(strstr(out, "source: bucket\nall.rps: 40\nall.burst: 40\nwrite.rps: 4\n"));
    char *bad[] = {objlog, "--url", d.url, "ratelimit", "ten-c", "--burst", "3", NULL};
    assert_int_equal(proc_run(bad, NULL, out, sizeof(out), err, sizeof(err), 30000), 2);
    assert_non_null(strstr(err, "give --rps and/or --write-rps"));
    char *del[] = {objlog, "--url", d.url, "ratelimit", "ten-c", "--delete", NULL};
    assert_int_equal(proc_run(del, NULL, out, sizeof(out), err, sizeof(err), 30000), 0);
    unsigned long long n = metric(h, "objlog_admission_rejected_total{bucket=\"ten-a\",reason=\"tenant\"} ") +
                           metric(h, "objlog_admission_rejected_total{bucket=\"ten-b\",reason=\"tenant\"} ");
    assert_int_equal(n, 1);
    httpc_destroy(h);
    daemon_stop(&d);
    proc_rmtree(d.dir);
}

static objlog_producer *producer_for(const objlogd_run *d, const char *ack) {
    char err[512];
    objlog_producer_conf *c = objlog_producer_conf_new();
    assert_int_equal(objlog_producer_conf_set(c, "bootstrap.servers", d->boot, err, sizeof(err)),
                     OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(c, "query.url", d->url, err, sizeof(err)),
                     OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(c, "ack", ack, err, sizeof(err)), OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(c, "admission", "maybe", err, sizeof(err)),
                     OBJLOG_CONF_INVALID);
    assert_non_null(strstr(err, "expected on or off"));
    assert_int_equal(objlog_producer_conf_set(c, "admission", "on", err, sizeof(err)),
                     OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(c, "admission.refresh.ms", "20", err, sizeof(err)),
                     OBJLOG_CONF_OK);
    objlog_producer *p = objlog_producer_new(c, err, sizeof(err));
    if (!p)
        fail_msg("producer: %s", err);
    return p;
}

/* Puts until one completes SLOW_DOWN (bounded); checks that result. */
static void producer_until_slowdown(objlog_producer *p, const char *bucket,
                                    objlog_status ok_status, const char *why) {
    char err[512];
    objlog_write_result res;
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(objlog_producer_put_object_sync(p, bucket, "pk", 2, NULL, NULL, &res,
                                                         err, sizeof(err)), 0);
        if (res.status == OBJLOG_STATUS_SLOW_DOWN)
            break;
        if (res.status != ok_status)
            fail_msg("put: %s %s", objlog_status_name(res.status), res.error_message);
        usleep(2000);
    }
    assert_int_equal(res.status, OBJLOG_STATUS_SLOW_DOWN);
    assert_string_equal(objlog_status_name(res.status), "SLOW_DOWN");
    assert_string_equal(res.error_code, "SlowDown");
    if (!strstr(res.error_message, why) || !strstr(res.error_message, "retry after 1 s"))
        fail_msg("message: %s", res.error_message);
    assert_int_equal(res.partition, -1);
    assert_int_equal(res.offset, -1);
    assert_string_equal(res.token, "");
}

static void test_producer_slow_down_status(void **state) {
    (void)state;
    objlogd_run d;
    assert_int_equal(proc_tmpdir(d.dir, sizeof(d.dir)), 0);
    char *args[] = {"--embedded", "--data", d.dir, "--listen", "127.0.0.1:0", NULL};
    daemon_start(&d, args, 1, 0);
    objlog_producer *p = producer_for(&d, "applied");
    char err[512];
    objlog_write_result res;
    assert_int_equal(objlog_producer_create_bucket_sync(p, "prod", NULL,
                                                        OBJLOG_VERSIONING_UNVERSIONED, NULL,
                                                        &res, err, sizeof(err)), 0);
    assert_int_equal(res.status, OBJLOG_STATUS_OK);
    /* bad limits are refused by the state machine, as over HTTP */
    objlog_rate_limit bad = {.burst = 4};
    assert_int_equal(objlog_producer_set_rate_limit_sync(p, "prod", &bad, NULL, &res, err,
                                                         sizeof(err)), 0);
    assert_int_equal(res.status, OBJLOG_STATUS_REJECTED);
    assert_string_equal(res.error_code, "InvalidArgument");
    objlog_rate_limit l = {.write_rps = 1, .write_burst = 1};
    assert_int_equal(objlog_producer_set_rate_limit_sync(p, "prod", &l, NULL, &res, err,
                                                         sizeof(err)), 0);
    assert_int_equal(res.status, OBJLOG_STATUS_OK);
    producer_until_slowdown(p, "prod", OBJLOG_STATUS_OK, "over the bucket's write rate limit");
    /* lifting the limit is never refused, and writes pass again once the
     * next poll has read it */
    assert_int_equal(objlog_producer_set_rate_limit_sync(p, "prod", NULL, NULL, &res, err,
                                                         sizeof(err)), 0);
    assert_int_equal(res.status, OBJLOG_STATUS_OK);
    objlog_producer_destroy(p);
    daemon_stop(&d);
    proc_rmtree(d.dir);
}

/* --slowdown-lag 3 with the materializer slowed: once the partition lags,
 * writes to it are 503 SlowDown (and the producer's SLOW_DOWN); reads 200. */
static void test_hot_partition_guard(void **state) {
    (void)state;
    objlogd_run d;
    assert_int_equal(proc_tmpdir(d.dir, sizeof(d.dir)), 0);
    char *args[] = {"--embedded", "--data", d.dir, "--listen", "127.0.0.1:0",
                    "--partitions", "1", "--slowdown-lag", "3",
                    "--test-apply-delay-ms", "2000", "--max-timeout-ms", "30000", NULL};
    daemon_start(&d, args, 1, 0);
    httpc *h = httpc_new(d.url);
    httpc_resp r;
    assert_int_equal(req(h, "PUT", "/v1/buckets/hot?timeout_ms=30000", NULL, &r), 200);
    /* ack=logged writes pile up unapplied until the guard sees the lag */
    int seen = until_slowdown(h, "PUT", "/v1/buckets/hot/objects/k?ack=logged", "{}", 200,
                              10000, &r);
    assert_int_equal(seen, 1);
    assert_non_null(strstr(r.body, "\"reason\":\"hot_partition\""));
    assert_non_null(strstr(r.body, "more than --slowdown-lag 3"));
    assert_retry_after(&r, "1");
    /* reads are unaffected */
    assert_int_equal(req(h, "GET", "/v1/buckets/hot?consistency=eventual", NULL, &r), 200);
    assert_int_equal(req(h, "GET", "/v1/buckets/hot/objects?consistency=eventual", NULL, &r),
                     200);
    assert_int_equal(metric(h, "objlog_admission_rejected_total{bucket=\"hot\",reason=\"hot_partition\"} "),
                     1);
    /* the producer learns it from GET /v1/admission */
    objlog_producer *p = producer_for(&d, "logged");
    producer_until_slowdown(p, "hot", OBJLOG_STATUS_LOGGED, "--slowdown-lag");
    objlog_producer_destroy(p);
    httpc_destroy(h);
    daemon_stop(&d);
    proc_rmtree(d.dir);
}

int main(void) {
    proc_bin("query/objlogd", g_objlogd, sizeof(g_objlogd));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokenbucket_refill_and_burst_exact),
        cmocka_unit_test(test_admit_decide_on_a_fake_clock),
        cmocka_unit_test(test_apply_rate_limit_outcomes_and_replay),
        cmocka_unit_test(test_flags_rejected),
        cmocka_unit_test(test_json_and_s3_slowdown_and_bad_input),
        cmocka_unit_test(test_limit_survives_replay),
        cmocka_unit_test(test_tenant_limit_by_flag),
        cmocka_unit_test(test_producer_slow_down_status),
        cmocka_unit_test(test_hot_partition_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
