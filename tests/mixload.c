/* mixload.c: see mixload.h. One writer thread owns its records (one per
 * logical write) until mixload_stop joins it; only then does the check
 * read them. Live totals are atomics. */
#define _GNU_SOURCE
#include "mixload.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"
#include "keycodec.h"
#include "objlog_producer.h"
#include "token.h"

#define MIX_TIMEOUT_MS_READ 5000
#define MIX_BACKOFF_MS_MAX 1000
/* A write still unresolved after this long is given up even while the
 * writers run (counted unresolved: a failure), so one lost cause cannot
 * hang the test. */
#define MIX_WRITE_MAX_MS 300000

static const char *const mix_bucket[MIX_KINDS] = {"mx-plain", "mx-create", "mx-delete",
                                                  "mx-cas"};

enum { MIX_OUT_NONE = 0, MIX_OUT_OK, MIX_OUT_412, MIX_OUT_ERR }; /* definite except NONE */
enum { MIX_RES_FIRST = 0, MIX_RES_ORIGINAL, MIX_RES_RETRY_APPLIED, MIX_RES_RETRY_REJECTED };
enum { MIX_OP_PUT = 0, MIX_OP_DELETE };

/* One logical write: one request id, every attempt of it. */
typedef struct mix_write {
    char key[40];
    char etag[48];               /* unique per logical write; "" for a delete */
    char version_id[24];         /* of the definite OK outcome */
    uint8_t rid[OBJLOG_REQUEST_ID_LEN];
    uint8_t kind, channel, op, outcome, resolution, phase, delete_marker, setup;
    uint8_t may_412;             /* a 412 is a legal answer (CAS, create loser) */
    int32_t partition;           /* of the answering event, -1 unknown */
    uint16_t attempts, unknowns;
    uint64_t size;               /* CAS: the counter value this write sets */
    int64_t t_start, t_first, t_done; /* ms; t_first: end of the 1st attempt */
} mix_write;

typedef struct mix_writer mix_writer;

/* An async write in flight (the lib plain writer). */
typedef struct mix_slot {
    mix_writer *wr;
    int state;                   /* SLOT_* */
    int rec;                     /* index into wr->w */
    int64_t retry_at, call_start;
    objlog_write_result res;
} mix_slot;

enum { SLOT_FREE = 0, SLOT_INFLIGHT, SLOT_DONE, SLOT_WAIT };

struct mix_writer {
    mixload *m;
    int no;
    mix_kind kind;
    mix_channel channel;
    int counter;                 /* CAS */
    pthread_t th;
    int started;
    httpc *hc;
    mix_write *w;
    int n, cap;
    long max_call_ms;
    long gw_transport, gw_503, gw_5xx;
    char token[64];              /* of this writer's newest answered attempt */
    char first_error[256];
    pthread_mutex_t mu;          /* async slots */
    pthread_cond_t cv;
};

struct mixload {
    mixload_conf conf;
    char boot[1024], url[128];
    objlog_producer *p;
    mix_writer *wr;
    int nwriters;
    mix_writer setup;            /* buckets and counter creation */
    int counter_partition[MIX_MAX_COUNTERS];
    char counter_token[MIX_MAX_COUNTERS][64];
    atomic_int phase;
    char phase_name[MIX_MAX_PHASES][48];
    atomic_int stopping;
    atomic_llong give_up_at;
    atomic_long attempted, acked, unknown_events;
    atomic_int kind_partition[MIX_KINDS]; /* of the newest acked write, -1 none */
    atomic_long read_503;        /* reads answered 503 (then retried) */
    pthread_mutex_t note_mu;
    char read_503_first[256];
    pthread_t reader;            /* conf.strong_reader */
    int reader_started;
    httpc *reader_hc;
    long strong_ok, strong_503, strong_other, strong_streak_ms;
    char strong_first[256], strong_last[256];
};

/* A read answered 503: counted, the first one kept for the report. */
static void mix_note_503(mixload *m, const char *body) {
    if (atomic_fetch_add(&m->read_503, 1) == 0) {
        pthread_mutex_lock(&m->note_mu);
        snprintf(m->read_503_first, sizeof(m->read_503_first), "%.250s", body ? body : "");
        pthread_mutex_unlock(&m->note_mu);
    }
}

const char *mix_kind_name(mix_kind k) {
    static const char *const n[] = {"plain PUT", "If-None-Match create", "PUT+DELETE",
                                    "If-Match CAS"};
    return k < MIX_KINDS ? n[k] : "?";
}

const char *mix_channel_name(mix_channel c) { return c == MIX_LIB ? "lib" : "gateway"; }

static int64_t mix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void mix_sleep_ms(int ms) { usleep((useconds_t)ms * 1000); }

static int mix_give_up(mixload *m) {
    return atomic_load(&m->stopping) && mix_ms() > atomic_load(&m->give_up_at);
}

static int mix_give_up_write(mixload *m, const mix_write *r) {
    return mix_give_up(m) || mix_ms() - r->t_start > MIX_WRITE_MAX_MS;
}

__attribute__((format(printf, 2, 3)))
static void mix_note_error(mix_writer *wr, const char *fmt, ...) {
    if (wr->first_error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(wr->first_error, sizeof(wr->first_error), fmt, ap);
    va_end(ap);
}

static mix_write *mix_new_write(mix_writer *wr, const char *key, const char *etag, int op) {
    if (wr->n == wr->cap) {
        int cap = wr->cap ? 2 * wr->cap : 256;
        mix_write *nw = realloc(wr->w, (size_t)cap * sizeof(*nw));
        if (!nw)
            abort();
        wr->w = nw;
        wr->cap = cap;
    }
    mix_write *r = &wr->w[wr->n++];
    memset(r, 0, sizeof(*r));
    snprintf(r->key, sizeof(r->key), "%s", key);
    snprintf(r->etag, sizeof(r->etag), "%s", etag);
    r->kind = (uint8_t)wr->kind;
    r->channel = (uint8_t)wr->channel;
    r->op = (uint8_t)op;
    r->setup = wr == &wr->m->setup;
    r->partition = -1;
    if (getrandom(r->rid, sizeof(r->rid), 0) != (ssize_t)sizeof(r->rid))
        abort();
    r->t_start = mix_ms();
    if (!r->setup)
        atomic_fetch_add(&wr->m->attempted, 1);
    return r;
}

/* After a definite outcome: how the write was resolved. event_offset is
 * the offset of the attempt that answered (-1 if unknown). */
static void mix_finish(mix_writer *wr, mix_write *r, int outcome, int64_t event_offset) {
    r->outcome = (uint8_t)outcome;
    r->t_done = mix_ms();
    r->phase = (uint8_t)atomic_load(&wr->m->phase);
    if (outcome == MIX_OUT_OK && !r->setup) {
        atomic_fetch_add(&wr->m->acked, 1);
        if (r->partition >= 0)
            atomic_store(&wr->m->kind_partition[r->kind], r->partition);
    }
    if (r->unknowns == 0) {
        r->resolution = MIX_RES_FIRST;
    } else if (outcome == MIX_OUT_OK) {
        uint64_t seq = 0;
        int64_t applied_at = keycodec_parse_version_id(r->version_id, &seq) == 0
                                 ? (int64_t)(seq & ((1ULL << 48) - 1)) : -1;
        r->resolution = applied_at >= 0 && applied_at != event_offset ? MIX_RES_ORIGINAL
                                                                     : MIX_RES_RETRY_APPLIED;
    } else {
        r->resolution = MIX_RES_RETRY_REJECTED;
    }
}

static void mix_unknown(mix_writer *wr, mix_write *r) {
    r->unknowns++;
    atomic_fetch_add(&wr->m->unknown_events, 1);
}

/* ------------------------------------------------------------ lib channel */

/* One attempt through the library. Returns MIX_OUT_* or -1 (unknown). */
static int mix_lib_attempt(mix_writer *wr, mix_write *r, const char *if_match, int inm,
                           int64_t *event_offset) {
    char err[256], val[24];
    snprintf(val, sizeof(val), "%llu", (unsigned long long)r->size);
    objlog_user_meta um = {"n", val};
    objlog_object_meta meta = {.size = r->size, .etag = r->etag, .content_type = "text/plain",
                               .user_meta = &um, .n_user_meta = 1};
    objlog_write_opts o = {.if_match = if_match, .if_none_match = inm, .request_id = r->rid};
    objlog_write_result res;
    int64_t t0 = mix_ms();
    int rc = r->op == MIX_OP_PUT
                 ? objlog_producer_put_object_sync(wr->m->p, mix_bucket[r->kind], r->key,
                                                   strlen(r->key), &meta, &o, &res, err,
                                                   sizeof(err))
                 : objlog_producer_delete_object_sync(wr->m->p, mix_bucket[r->kind], r->key,
                                                      strlen(r->key), NULL, &o, &res, err,
                                                      sizeof(err));
    long took = (long)(mix_ms() - t0);
    if (took > wr->max_call_ms)
        wr->max_call_ms = took;
    if (rc != 0) {
        mix_note_error(wr, "rejected up front: %s", err);
        return MIX_OUT_ERR;
    }
    *event_offset = res.offset;
    if (res.partition >= 0)
        r->partition = res.partition;
    if (res.token[0])
        snprintf(wr->token, sizeof(wr->token), "%s", res.token);
    switch (res.status) {
    case OBJLOG_STATUS_OK:
        snprintf(r->version_id, sizeof(r->version_id), "%s", res.version_id);
        r->delete_marker = (uint8_t)res.delete_marker;
        return MIX_OUT_OK;
    case OBJLOG_STATUS_REJECTED:
        if (!strcmp(res.error_code, "PreconditionFailed"))
            return MIX_OUT_412;
        mix_note_error(wr, "lib write rejected: %s %s", res.error_code, res.error_message);
        return MIX_OUT_ERR;
    case OBJLOG_STATUS_UNKNOWN:
    case OBJLOG_STATUS_FAILED:
        return -1;
    default:
        mix_note_error(wr, "lib write: unexpected status %s", objlog_status_name(res.status));
        return MIX_OUT_ERR;
    }
}

/* ------------------------------------------------------------- gw channel */

static int mix_gw_attempt(mix_writer *wr, mix_write *r, const char *if_match, int inm,
                          int64_t *event_offset) {
    char path[256], rid_h[80], im_h[96], hex[2 * OBJLOG_REQUEST_ID_LEN + 1], val[24];
    char *ekey = httpc_escape(wr->hc, r->key, strlen(r->key));
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?timeout_ms=%d",
             mix_bucket[r->kind], ekey, wr->m->conf.gw_timeout_ms);
    free(ekey);
    for (int i = 0; i < OBJLOG_REQUEST_ID_LEN; i++)
        sprintf(hex + 2 * i, "%02x", r->rid[i]);
    snprintf(rid_h, sizeof(rid_h), "X-Objlog-Request-Id: %s", hex);
    const char *headers[4] = {rid_h, NULL, NULL, NULL};
    if (if_match) {
        snprintf(im_h, sizeof(im_h), "If-Match: %s", if_match);
        headers[1] = im_h;
    } else if (inm) {
        headers[1] = "If-None-Match: *";
    }
    char *body = NULL;
    if (r->op == MIX_OP_PUT) {
        snprintf(val, sizeof(val), "%llu", (unsigned long long)r->size);
        json_t *j = json_pack("{s:I, s:s, s:s, s:{s:s}}", "size", (json_int_t)r->size, "etag",
                              r->etag, "content_type", "text/plain", "user_metadata", "n", val);
        body = json_dumps(j, JSON_COMPACT);
        json_decref(j);
    }
    httpc_resp resp;
    int64_t t0 = mix_ms();
    int t = httpc_do(wr->hc, r->op == MIX_OP_PUT ? "PUT" : "DELETE", path, body, headers, &resp);
    long took = (long)(mix_ms() - t0);
    free(body);
    if (took > wr->max_call_ms)
        wr->max_call_ms = took;
    if (t != 0) {
        wr->gw_transport++;
        return -1;
    }
    if (resp.token[0])
        snprintf(wr->token, sizeof(wr->token), "%.63s", resp.token);
    if (resp.status == 200) {
        json_t *j = json_loads(resp.body, 0, NULL);
        const char *vid = json_string_value(json_object_get(j, "version_id"));
        const char *tok = json_string_value(json_object_get(j, "token"));
        token_part tp;
        if (!vid || !tok || token_parse(tok, &tp, 1) != 1) {
            mix_note_error(wr, "gateway 200 without version_id/token: %.200s", resp.body);
            json_decref(j);
            return MIX_OUT_ERR;
        }
        snprintf(r->version_id, sizeof(r->version_id), "%s", vid);
        r->delete_marker = json_is_true(json_object_get(j, "delete_marker"));
        *event_offset = tp.offset;
        r->partition = tp.partition;
        json_decref(j);
        return MIX_OUT_OK;
    }
    if (resp.status == 412)
        return MIX_OUT_412;
    if (resp.status == 503) {
        wr->gw_503++;
        return -1;
    }
    if (resp.status >= 500) {
        wr->gw_5xx++;
        mix_note_error(wr, "gateway 5xx (retried): %.200s", resp.body ? resp.body : "");
        return -1;
    }
    mix_note_error(wr, "gateway %ld: %.200s", resp.status, resp.body ? resp.body : "");
    return MIX_OUT_ERR;
}

/* One logical write to a definite outcome (or the give-up deadline):
 * every retry repeats the arguments and the request id. */
static int mix_exec(mix_writer *wr, mix_write *r, const char *if_match, int inm) {
    int backoff = 100;
    for (;;) {
        int64_t off = -1;
        r->attempts++;
        int out = wr->channel == MIX_LIB ? mix_lib_attempt(wr, r, if_match, inm, &off)
                                         : mix_gw_attempt(wr, r, if_match, inm, &off);
        if (r->attempts == 1)
            r->t_first = mix_ms();
        if (out >= 0) {
            mix_finish(wr, r, out, off);
            return out;
        }
        mix_unknown(wr, r);
        if (mix_give_up_write(wr->m, r)) {
            r->t_done = mix_ms();
            r->outcome = MIX_OUT_NONE;
            return MIX_OUT_NONE;
        }
        mix_sleep_ms(backoff);
        backoff = backoff * 2 > MIX_BACKOFF_MS_MAX ? MIX_BACKOFF_MS_MAX : backoff * 2;
    }
}

/* --------------------------------------------------------------- writers */

static void mix_pace(mix_writer *wr) {
    if (wr->m->conf.pace_ms > 0)
        mix_sleep_ms(wr->m->conf.pace_ms);
}

static void mix_plain_sync(mix_writer *wr) {
    char key[40], etag[48];
    for (int i = 0; !atomic_load(&wr->m->stopping); i++) {
        snprintf(key, sizeof(key), "p/w%d-%06d", wr->no, i);
        snprintf(etag, sizeof(etag), "p-w%d-%d", wr->no, i);
        mix_write *r = mix_new_write(wr, key, etag, MIX_OP_PUT);
        r->size = (uint64_t)i;
        mix_exec(wr, r, NULL, 0);
        mix_pace(wr);
    }
}

static void mix_slot_cb(const objlog_write_result *res, void *opaque) {
    mix_slot *s = opaque;
    pthread_mutex_lock(&s->wr->mu);
    s->res = *res;
    s->state = SLOT_DONE;
    pthread_cond_signal(&s->wr->cv);
    pthread_mutex_unlock(&s->wr->mu);
}

/* Submits slot s's write (state already INFLIGHT); called unlocked. */
static int mix_slot_submit(mix_writer *wr, mix_slot *s) {
    mix_write *r = &wr->w[s->rec];
    char err[256], val[24];
    snprintf(val, sizeof(val), "%llu", (unsigned long long)r->size);
    objlog_user_meta um = {"n", val};
    objlog_object_meta meta = {.size = r->size, .etag = r->etag, .content_type = "text/plain",
                               .user_meta = &um, .n_user_meta = 1};
    objlog_write_opts o = {.request_id = r->rid};
    r->attempts++;
    s->call_start = mix_ms();
    if (objlog_producer_put_object(wr->m->p, mix_bucket[r->kind], r->key, strlen(r->key), &meta,
                                   &o, mix_slot_cb, s, err, sizeof(err)) != 0) {
        mix_note_error(wr, "async put rejected up front: %s", err);
        mix_finish(wr, r, MIX_OUT_ERR, -1);
        return -1;
    }
    return 0;
}

/* A completed async attempt: finish it or schedule its retry. Unlocked. */
static void mix_slot_done(mix_writer *wr, mix_slot *s) {
    mix_write *r = &wr->w[s->rec];
    long took = (long)(mix_ms() - s->call_start);
    if (took > wr->max_call_ms)
        wr->max_call_ms = took;
    if (r->attempts == 1)
        r->t_first = mix_ms();
    switch (s->res.status) {
    case OBJLOG_STATUS_OK:
        snprintf(r->version_id, sizeof(r->version_id), "%s", s->res.version_id);
        r->partition = s->res.partition;
        mix_finish(wr, r, MIX_OUT_OK, s->res.offset);
        s->state = SLOT_FREE;
        return;
    case OBJLOG_STATUS_UNKNOWN:
    case OBJLOG_STATUS_FAILED:
        mix_unknown(wr, r);
        if (mix_give_up_write(wr->m, r)) {
            r->t_done = mix_ms();
            s->state = SLOT_FREE;
            return;
        }
        s->retry_at = mix_ms() + 200;
        s->state = SLOT_WAIT;
        return;
    default:
        mix_note_error(wr, "async put: %s %s", s->res.error_code, s->res.error_message);
        mix_finish(wr, r, MIX_OUT_ERR, s->res.offset);
        s->state = SLOT_FREE;
        return;
    }
}

static void mix_plain_async(mix_writer *wr) {
    int nslots = wr->m->conf.plain_window > 0 ? wr->m->conf.plain_window : 8;
    mix_slot *slots = calloc((size_t)nslots, sizeof(*slots));
    char key[40], etag[48];
    int next = 0;
    pthread_mutex_lock(&wr->mu);
    for (;;) {
        int busy = 0;
        for (int i = 0; i < nslots; i++) {
            mix_slot *s = &slots[i];
            s->wr = wr;
            if (s->state == SLOT_DONE) {
                pthread_mutex_unlock(&wr->mu);
                mix_slot_done(wr, s);
                pthread_mutex_lock(&wr->mu);
            }
            int submit = 0;
            if (s->state == SLOT_WAIT && mix_give_up_write(wr->m, &wr->w[s->rec])) {
                wr->w[s->rec].t_done = mix_ms(); /* unresolved */
                s->state = SLOT_FREE;
            } else if (s->state == SLOT_WAIT && mix_ms() >= s->retry_at) {
                submit = 1;
            } else if (s->state == SLOT_FREE && !atomic_load(&wr->m->stopping)) {
                pthread_mutex_unlock(&wr->mu);
                snprintf(key, sizeof(key), "p/w%d-%06d", wr->no, next);
                snprintf(etag, sizeof(etag), "p-w%d-%d", wr->no, next);
                mix_write *r = mix_new_write(wr, key, etag, MIX_OP_PUT);
                r->size = (uint64_t)next++;
                s->rec = wr->n - 1;
                pthread_mutex_lock(&wr->mu);
                submit = 1;
            }
            if (submit) {
                s->state = SLOT_INFLIGHT;
                pthread_mutex_unlock(&wr->mu);
                int rc = mix_slot_submit(wr, s);
                pthread_mutex_lock(&wr->mu);
                if (rc < 0)
                    s->state = SLOT_FREE;
            }
            busy += s->state != SLOT_FREE;
        }
        if (atomic_load(&wr->m->stopping) && busy == 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        int any_done = 0;
        for (int i = 0; i < nslots; i++)
            any_done |= slots[i].state == SLOT_DONE;
        if (!any_done)
            pthread_cond_timedwait(&wr->cv, &wr->mu, &ts);
    }
    pthread_mutex_unlock(&wr->mu);
    free(slots);
}

static void mix_create(mix_writer *wr) {
    char key[40], etag[48];
    for (int i = 0; !atomic_load(&wr->m->stopping); i++) {
        snprintf(key, sizeof(key), "c/w%d-%06d", wr->no, i);
        snprintf(etag, sizeof(etag), "c-w%d-%d", wr->no, i);
        mix_write *a = mix_new_write(wr, key, etag, MIX_OP_PUT);
        a->size = 1;
        if (mix_exec(wr, a, NULL, 1) == MIX_OUT_NONE)
            continue;
        snprintf(etag, sizeof(etag), "c-w%d-%d-again", wr->no, i);
        mix_write *b = mix_new_write(wr, key, etag, MIX_OP_PUT);
        b->size = 2;
        b->may_412 = 1;
        mix_exec(wr, b, NULL, 1);
        mix_pace(wr);
    }
}

static void mix_delete(mix_writer *wr) {
    char key[40], etag[48];
    for (int i = 0; !atomic_load(&wr->m->stopping); i++) {
        snprintf(key, sizeof(key), "d/w%d-%06d", wr->no, i);
        snprintf(etag, sizeof(etag), "d-w%d-%d", wr->no, i);
        mix_write *a = mix_new_write(wr, key, etag, MIX_OP_PUT);
        a->size = 3;
        if (mix_exec(wr, a, NULL, 0) != MIX_OUT_OK)
            continue;
        mix_write *b = mix_new_write(wr, key, "", MIX_OP_DELETE);
        mix_exec(wr, b, NULL, 0);
        mix_pace(wr);
    }
}

/* The counter's etag and value as of the writer's newest answered write
 * (a token read, as test_conditional does): at least as new as whatever
 * made that write lose, so the next If-Match has a chance. Before any
 * answer, the token of the counter's creation. -1 on give-up. */
static int mix_cas_read(mix_writer *wr, const char *key, char *etag, size_t es, uint64_t *n) {
    char path[256];
    char *ekey = httpc_escape(wr->hc, key, strlen(key));
    if (!wr->token[0])
        snprintf(wr->token, sizeof(wr->token), "%s", wr->m->counter_token[wr->counter]);
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s?consistency=token&token=%s&timeout_ms=%d",
             mix_bucket[MIX_CAS], ekey, wr->token, MIX_TIMEOUT_MS_READ);
    free(ekey);
    for (;;) {
        httpc_resp resp;
        int t = httpc_do(wr->hc, "GET", path, NULL, NULL, &resp);
        if (t == 0 && resp.status == 503)
            mix_note_503(wr->m, resp.body);
        if (t == 0 && resp.status == 200) {
            json_t *j = json_loads(resp.body, 0, NULL);
            const char *e = json_string_value(json_object_get(j, "etag"));
            json_t *size = json_object_get(j, "size");
            int ok = e && json_is_integer(size);
            if (ok) {
                snprintf(etag, es, "%s", e);
                *n = (uint64_t)json_integer_value(size);
            }
            json_decref(j);
            if (ok)
                return 0;
        }
        if (mix_give_up(wr->m) || atomic_load(&wr->m->stopping))
            return -1;
        mix_sleep_ms(200);
    }
}

static void mix_cas(mix_writer *wr) {
    char key[40], etag[48] = "", next[48];
    uint64_t n = 0;
    int known = 0;
    snprintf(key, sizeof(key), "ctr/%d", wr->counter);
    for (int i = 0; !atomic_load(&wr->m->stopping); i++) {
        if (!known && mix_cas_read(wr, key, etag, sizeof(etag), &n) < 0)
            break;
        snprintf(next, sizeof(next), "k%d-w%d-a%d", wr->counter, wr->no, i);
        mix_write *r = mix_new_write(wr, key, next, MIX_OP_PUT);
        r->size = n + 1;
        r->may_412 = 1;
        int out = mix_exec(wr, r, etag, 0);
        if (out == MIX_OUT_OK) {
            snprintf(etag, sizeof(etag), "%s", next);
            n++;
            known = 1;
        } else {
            known = 0;
        }
        mix_pace(wr);
    }
}

/* The strong reader: GET a LIST of one key of every bucket in turn with
 * the default consistency (strong). Tracks, per bucket, how long 503s last. */
static void *mix_reader_main(void *arg) {
    mixload *m = arg;
    int64_t streak_start[MIX_KINDS] = {0};
    while (!atomic_load(&m->stopping)) {
        for (int k = 0; k < MIX_KINDS; k++) {
            char path[160];
            httpc_resp resp;
            snprintf(path, sizeof(path), "/v1/buckets/%s/objects?max_keys=1&timeout_ms=%d",
                     mix_bucket[k], MIX_TIMEOUT_MS_READ);
            int t = httpc_do(m->reader_hc, "GET", path, NULL, NULL, &resp);
            int64_t now = mix_ms();
            if (t == 0 && resp.status == 200) {
                m->strong_ok++;
                streak_start[k] = 0;
                continue;
            }
            if (t != 0 || resp.status != 503) {
                m->strong_other++;
                continue;
            }
            if (m->strong_503++ == 0)
                snprintf(m->strong_first, sizeof(m->strong_first), "%.250s", resp.body);
            snprintf(m->strong_last, sizeof(m->strong_last), "%.250s", resp.body);
            if (!streak_start[k])
                streak_start[k] = now;
            if (now - streak_start[k] > m->strong_streak_ms)
                m->strong_streak_ms = (long)(now - streak_start[k]);
        }
        mix_sleep_ms(100);
    }
    return NULL;
}

static void *mix_writer_main(void *arg) {
    mix_writer *wr = arg;
    switch (wr->kind) {
    case MIX_PLAIN:
        if (wr->channel == MIX_LIB)
            mix_plain_async(wr);
        else
            mix_plain_sync(wr);
        break;
    case MIX_CREATE:
        mix_create(wr);
        break;
    case MIX_DELETE:
        mix_delete(wr);
        break;
    case MIX_CAS:
        mix_cas(wr);
        break;
    default:
        break;
    }
    return NULL;
}

/* ------------------------------------------------------------ lifecycle */

static objlog_producer *mix_producer(const mixload_conf *c, char *why, size_t ws) {
    char err[512], tmo[16];
    snprintf(tmo, sizeof(tmo), "%d", c->lib_outcome_timeout_ms > 0 ? c->lib_outcome_timeout_ms
                                                                  : 10000);
    objlog_producer_conf *pc = objlog_producer_conf_new();
    if (objlog_producer_conf_set(pc, "bootstrap.servers", c->boot, err, sizeof(err)) ||
        objlog_producer_conf_set(pc, "query.url", c->url, err, sizeof(err)) ||
        objlog_producer_conf_set(pc, "ack", "applied", err, sizeof(err)) ||
        objlog_producer_conf_set(pc, "outcome.timeout.ms", tmo, err, sizeof(err))) {
        objlog_producer_conf_destroy(pc);
        snprintf(why, ws, "producer conf: %s", err);
        return NULL;
    }
    objlog_producer *p = objlog_producer_new(pc, err, sizeof(err));
    if (!p)
        snprintf(why, ws, "producer: %s", err);
    return p;
}

static void mix_writer_init(mix_writer *wr, mixload *m, int no, mix_kind k, mix_channel ch) {
    memset(wr, 0, sizeof(*wr));
    wr->m = m;
    wr->no = no;
    wr->kind = k;
    wr->channel = ch;
    wr->hc = httpc_new(m->url);
    pthread_mutex_init(&wr->mu, NULL);
    pthread_cond_init(&wr->cv, NULL);
}

/* A setup write through the library, resolved with its request id. */
static int mix_setup_bucket(mixload *m, const char *bucket, char *why, size_t ws) {
    char err[256];
    uint8_t rid[OBJLOG_REQUEST_ID_LEN];
    if (getrandom(rid, sizeof(rid), 0) != (ssize_t)sizeof(rid))
        return -1;
    objlog_write_opts o = {.request_id = rid};
    for (int attempt = 0; attempt < 30; attempt++) {
        objlog_write_result res;
        if (objlog_producer_create_bucket_sync(m->p, bucket, "acme", OBJLOG_VERSIONING_ENABLED,
                                               &o, &res, err, sizeof(err)) != 0) {
            snprintf(why, ws, "create bucket %s: %s", bucket, err);
            return -1;
        }
        if (res.status == OBJLOG_STATUS_OK)
            return 0;
        if (res.status == OBJLOG_STATUS_REJECTED) {
            snprintf(why, ws, "create bucket %s: %s %s", bucket, res.error_code,
                     res.error_message);
            return -1;
        }
        mix_sleep_ms(500);
    }
    snprintf(why, ws, "create bucket %s: no outcome after 30 attempts", bucket);
    return -1;
}

mixload *mixload_new(const mixload_conf *conf, char *why, size_t why_size) {
    mixload *m = calloc(1, sizeof(*m));
    m->conf = *conf;
    snprintf(m->boot, sizeof(m->boot), "%s", conf->boot);
    snprintf(m->url, sizeof(m->url), "%s", conf->url);
    m->conf.boot = m->boot;
    m->conf.url = m->url;
    if (m->conf.counters < 1)
        m->conf.counters = 1;
    if (m->conf.counters > MIX_MAX_COUNTERS)
        m->conf.counters = MIX_MAX_COUNTERS;
    if (m->conf.gw_timeout_ms <= 0)
        m->conf.gw_timeout_ms = 10000;
    snprintf(m->phase_name[0], sizeof(m->phase_name[0]), "start");
    pthread_mutex_init(&m->note_mu, NULL);
    for (int k = 0; k < MIX_KINDS; k++)
        atomic_store(&m->kind_partition[k], -1);
    if (!(m->p = mix_producer(&m->conf, why, why_size))) {
        free(m);
        return NULL;
    }
    mix_writer_init(&m->setup, m, 99, MIX_CAS, MIX_LIB);
    for (int k = 0; k < MIX_KINDS; k++)
        if (mix_setup_bucket(m, mix_bucket[k], why, why_size) < 0) {
            mixload_destroy(m);
            return NULL;
        }
    /* The counters start at 0, created like any other write. */
    for (int c = 0; c < m->conf.counters; c++) {
        char key[40], etag[48];
        snprintf(key, sizeof(key), "ctr/%d", c);
        snprintf(etag, sizeof(etag), "k%d-init", c);
        mix_write *r = mix_new_write(&m->setup, key, etag, MIX_OP_PUT);
        r->size = 0;
        int64_t off = -1;
        int out = -1;
        for (int attempt = 0; attempt < 30 && out < 0; attempt++) {
            r->attempts++;
            out = mix_lib_attempt(&m->setup, r, NULL, 1, &off);
            if (out < 0)
                mix_sleep_ms(500);
        }
        if (out != MIX_OUT_OK) {
            snprintf(why, why_size, "counter %d: not created (%s)", c, m->setup.first_error);
            mixload_destroy(m);
            return NULL;
        }
        mix_finish(&m->setup, r, out, off);
        m->counter_partition[c] = r->partition;
        snprintf(m->counter_token[c], sizeof(m->counter_token[c]), "%s", m->setup.token);
    }
    return m;
}

int mixload_counter_partition(const mixload *m, int k) {
    return k >= 0 && k < m->conf.counters ? m->counter_partition[k] : -1;
}

int mixload_kind_partition(mixload *m, mix_kind k) {
    return k < MIX_KINDS ? atomic_load(&m->kind_partition[k]) : -1;
}

long mixload_read_503(mixload *m, char *first, size_t first_size) {
    pthread_mutex_lock(&m->note_mu);
    snprintf(first, first_size, "%s", m->read_503_first);
    pthread_mutex_unlock(&m->note_mu);
    return atomic_load(&m->read_503);
}

int mixload_start(mixload *m) {
    /* plain, create, delete: one lib and one gateway writer each; cas: one
     * lib and one gateway writer per counter. */
    m->nwriters = 2 * 3 + 2 * m->conf.counters;
    m->wr = calloc((size_t)m->nwriters, sizeof(*m->wr));
    int no = 0;
    for (int k = MIX_PLAIN; k <= MIX_DELETE; k++)
        for (int ch = 0; ch < MIX_CHANNELS; ch++, no++)
            mix_writer_init(&m->wr[no], m, no, (mix_kind)k, (mix_channel)ch);
    for (int c = 0; c < m->conf.counters; c++)
        for (int ch = 0; ch < MIX_CHANNELS; ch++, no++) {
            mix_writer_init(&m->wr[no], m, no, MIX_CAS, (mix_channel)ch);
            m->wr[no].counter = c;
        }
    for (int i = 0; i < m->nwriters; i++) {
        if (pthread_create(&m->wr[i].th, NULL, mix_writer_main, &m->wr[i]) != 0)
            return -1;
        m->wr[i].started = 1;
    }
    if (m->conf.strong_reader) {
        m->reader_hc = httpc_new(m->url);
        if (pthread_create(&m->reader, NULL, mix_reader_main, m) != 0)
            return -1;
        m->reader_started = 1;
    }
    return 0;
}

void mixload_phase(mixload *m, int phase, const char *name) {
    if (phase < 0 || phase >= MIX_MAX_PHASES)
        return;
    snprintf(m->phase_name[phase], sizeof(m->phase_name[phase]), "%s", name);
    atomic_store(&m->phase, phase);
}

void mixload_totals(mixload *m, long *attempted, long *acked, long *unknown_events) {
    *attempted = atomic_load(&m->attempted);
    *acked = atomic_load(&m->acked);
    *unknown_events = atomic_load(&m->unknown_events);
}

void mixload_stop(mixload *m, int resolve_ms) {
    atomic_store(&m->give_up_at, (long long)(mix_ms() + resolve_ms));
    atomic_store(&m->stopping, 1);
    for (int i = 0; i < m->nwriters; i++)
        if (m->wr[i].started) {
            pthread_join(m->wr[i].th, NULL);
            m->wr[i].started = 0;
        }
    if (m->reader_started) {
        pthread_join(m->reader, NULL);
        m->reader_started = 0;
    }
}

void mixload_destroy(mixload *m) {
    if (!m)
        return;
    if (!atomic_load(&m->stopping))
        mixload_stop(m, 0);
    if (m->p)
        objlog_producer_destroy(m->p);
    for (int i = 0; i <= m->nwriters; i++) {
        mix_writer *wr = i < m->nwriters ? &m->wr[i] : &m->setup;
        httpc_destroy(wr->hc);
        free(wr->w);
        pthread_mutex_destroy(&wr->mu);
        pthread_cond_destroy(&wr->cv);
    }
    free(m->wr);
    httpc_destroy(m->reader_hc);
    pthread_mutex_destroy(&m->note_mu);
    free(m);
}

/* ----------------------------------------------------------------- check */

/* GET for the end check: a 503 is retried for up to 60 s and counted.
 * (The check reads with consistency=eventual, after the caller made sure
 * the view applied the log end, so no fence is involved.) 0 on 200. */
static int mix_get_retrying(mixload *m, httpc *c, const char *path, httpc_resp *resp) {
    int64_t deadline = mix_ms() + 60000;
    for (;;) {
        int t = httpc_do(c, "GET", path, NULL, NULL, resp);
        if (t == 0 && resp->status == 200)
            return 0;
        if (t == 0 && resp->status != 503)
            return -1;
        if (t == 0)
            mix_note_503(m, resp->body);
        if (mix_ms() > deadline)
            return -1;
        mix_sleep_ms(500);
    }
}

typedef struct mix_version {
    char key[40];
    char version_id[24];
    char etag[48];
    long size;
    int marker;
} mix_version;

/* Every version and marker of bucket, in listing order (key, newest first). */
static int mix_list_versions(mixload *m, httpc *c, const char *bucket, mix_version **out,
                             long *n, char *why, size_t ws) {
    char path[1024], km[256] = "", vm[64] = "";
    long cap = 1024;
    *n = 0;
    *out = malloc((size_t)cap * sizeof(**out));
    for (int page = 0; page < 100000; page++) {
        char *ekm = httpc_escape(c, km, strlen(km));
        snprintf(path, sizeof(path), "/v1/buckets/%s/versions?max_keys=1000&consistency=eventual%s%s%s%s",
                 bucket, km[0] ? "&key_marker=" : "", km[0] ? ekm : "",
                 vm[0] ? "&version_id_marker=" : "", vm);
        free(ekm);
        httpc_resp resp;
        if (mix_get_retrying(m, c, path, &resp) < 0) {
            snprintf(why, ws, "GET %.200s: %ld %.200s", path, resp.status, resp.body ? resp.body : "");
            return -1;
        }
        json_t *j = json_loads(resp.body, 0, NULL);
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(j, "versions"), i, v) {
            if (*n == cap) {
                cap *= 2;
                *out = realloc(*out, (size_t)cap * sizeof(**out));
            }
            mix_version *mv = &(*out)[(*n)++];
            memset(mv, 0, sizeof(*mv));
            const char *s;
            if ((s = json_string_value(json_object_get(v, "key"))))
                snprintf(mv->key, sizeof(mv->key), "%s", s);
            if ((s = json_string_value(json_object_get(v, "version_id"))))
                snprintf(mv->version_id, sizeof(mv->version_id), "%s", s);
            if ((s = json_string_value(json_object_get(v, "etag"))))
                snprintf(mv->etag, sizeof(mv->etag), "%s", s);
            mv->size = (long)json_integer_value(json_object_get(v, "size"));
            mv->marker = json_is_true(json_object_get(v, "delete_marker"));
        }
        int more = json_is_true(json_object_get(j, "is_truncated"));
        if (more) {
            snprintf(km, sizeof(km), "%s",
                     json_string_value(json_object_get(j, "next_key_marker")) ?: "");
            snprintf(vm, sizeof(vm), "%s",
                     json_string_value(json_object_get(j, "next_version_id_marker")) ?: "");
        }
        json_decref(j);
        if (!more)
            return 0;
    }
    snprintf(why, ws, "listing %s never ended", bucket);
    return -1;
}

static int mix_cmp_rec(const void *a, const void *b) {
    const mix_write *x = *(mix_write *const *)a, *y = *(mix_write *const *)b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->etag, y->etag);
}

__attribute__((format(printf, 2, 3)))
static void mix_problem(mixload_report *r, const char *fmt, ...) {
    if (r->first_problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->first_problem, sizeof(r->first_problem), fmt, ap);
    va_end(ap);
}

/* Matches one key's versions to its writes (records sorted by etag). */
static void mix_check_key(mixload_report *r, mix_kind kind, mix_write **recs, int nrec,
                          mix_version *vs, int nv, int *matched) {
    for (int i = 0; i < nrec; i++)
        matched[i] = 0;
    for (int v = 0; v < nv; v++) {
        int hit = -1;
        /* A put by its etag; a marker by the key's (only) delete. */
        for (int i = 0; i < nrec && hit < 0; i++)
            if (vs[v].marker ? recs[i]->op == MIX_OP_DELETE
                             : recs[i]->op == MIX_OP_PUT && !strcmp(recs[i]->etag, vs[v].etag))
                hit = i;
        if (hit < 0) {
            r->phantom++;
            mix_problem(r, "version %s of %s (etag '%s') was made by no write", vs[v].version_id,
                        vs[v].key, vs[v].etag);
            continue;
        }
        mix_write *w = recs[hit];
        if (matched[hit]) {
            r->duplicated++;
            mix_problem(r, "%s: write '%s' applied more than once (version %s)", w->key, w->etag,
                        vs[v].version_id);
        } else if (w->outcome == MIX_OUT_OK) {
            if (strcmp(w->version_id, vs[v].version_id)) {
                r->wrong++;
                mix_problem(r, "%s: acked version %s, the view has %s", w->key, w->version_id,
                            vs[v].version_id);
            }
        } else if (w->outcome == MIX_OUT_412) {
            if (kind == MIX_CREATE) {
                r->duplicated++;
                mix_problem(r, "%s: If-None-Match loser '%s' is a version (%s)", w->key, w->etag,
                            vs[v].version_id);
            } else {
                r->phantom++;
                mix_problem(r, "%s: write '%s' was told 412 but applied (%s)", w->key, w->etag,
                            vs[v].version_id);
            }
        } else if (w->outcome == MIX_OUT_NONE) {
            /* Unresolved: counted there; its presence proves nothing. */
        }
        matched[hit] = 1;
    }
    for (int i = 0; i < nrec; i++)
        if (recs[i]->outcome == MIX_OUT_OK && !matched[i]) {
            r->lost++;
            mix_problem(r, "%s: acknowledged write '%s' (version %s) is missing", recs[i]->key,
                        recs[i]->etag, recs[i]->version_id);
        }
    if (kind == MIX_CAS) {
        /* Newest first: n, n-1, ..., 0, every step +1. */
        for (int v = 0; v + 1 < nv; v++)
            if (vs[v].size != vs[v + 1].size + 1) {
                r->cas_chain_breaks++;
                mix_problem(r, "counter %s: value %ld followed by %ld", vs[v].key,
                            vs[v + 1].size, vs[v].size);
            }
    }
}

static void mix_count(mixload_report *r, const mix_write *w, long max_call_ms) {
    mix_counts *c = &r->c[w->kind][w->channel];
    if (max_call_ms > c->max_call_ms)
        c->max_call_ms = max_call_ms;
    c->attempted++;
    c->unknown_events += w->unknowns;
    c->unknown_writes += w->unknowns > 0;
    switch (w->outcome) {
    case MIX_OUT_OK: c->acked++; break;
    case MIX_OUT_412:
        if (w->may_412)
            c->rejected++;
        else
            c->errors++; /* e.g. If-None-Match lost on a fresh key */
        break;
    case MIX_OUT_ERR: c->errors++; break;
    default: c->unresolved++; break;
    }
    if (w->unknowns && w->outcome != MIX_OUT_NONE) {
        if (w->resolution == MIX_RES_ORIGINAL)
            c->res_original++;
        else if (w->resolution == MIX_RES_RETRY_APPLIED)
            c->res_retry_applied++;
        else if (w->resolution == MIX_RES_RETRY_REJECTED)
            c->res_retry_rejected++;
    }
    if (w->outcome == MIX_OUT_NONE)
        return;
    mix_phase_stats *ph = &r->phase[w->phase];
    ph->completed++;
    ph->unknown_events += w->unknowns;
    if (w->outcome == MIX_OUT_OK) {
        ph->acked++;
        long total = (long)(w->t_done - w->t_start), first = (long)(w->t_first - w->t_start);
        if (total > ph->max_total_ms)
            ph->max_total_ms = total;
        if (w->unknowns == 0 && first > ph->max_first_ms)
            ph->max_first_ms = first;
    }
}

int mixload_check(mixload *m, const char *url, mixload_report *r) {
    memset(r, 0, sizeof(*r));
    r->phases = atomic_load(&m->phase) + 1;
    for (int p = 0; p < r->phases; p++)
        snprintf(r->phase[p].name, sizeof(r->phase[p].name), "%s", m->phase_name[p]);
    /* Every record, setup ones in the match but not in the counts. */
    long total = m->setup.n;
    for (int i = 0; i < m->nwriters; i++) {
        mix_writer *wr = &m->wr[i];
        total += wr->n;
        r->gw_transport_errors += wr->gw_transport;
        r->gw_503 += wr->gw_503;
        r->gw_other_5xx += wr->gw_5xx;
        for (int k = 0; k < wr->n; k++)
            mix_count(r, &wr->w[k], wr->max_call_ms);
        if (wr->first_error[0])
            mix_problem(r, "writer %s %s: %s", mix_kind_name(wr->kind),
                        mix_channel_name(wr->channel), wr->first_error);
    }
    mix_write **all = malloc((size_t)total * sizeof(*all));
    long n = 0;
    for (int i = 0; i <= m->nwriters; i++) {
        mix_writer *wr = i < m->nwriters ? &m->wr[i] : &m->setup;
        for (int k = 0; k < wr->n; k++)
            all[n++] = &wr->w[k];
    }
    httpc *c = httpc_new(url);
    int rc = 0;
    for (int kind = 0; kind < MIX_KINDS && rc == 0; kind++) {
        mix_write **recs = malloc((size_t)(n ? n : 1) * sizeof(*recs));
        int nr = 0;
        for (long i = 0; i < n; i++)
            if (all[i]->kind == kind)
                recs[nr++] = all[i];
        qsort(recs, (size_t)nr, sizeof(*recs), mix_cmp_rec);
        mix_version *vs = NULL;
        long nv = 0;
        char why[512];
        if (mix_list_versions(m, c, mix_bucket[kind], &vs, &nv, why, sizeof(why)) < 0) {
            mix_problem(r, "%s", why);
            free(recs);
            free(vs);
            rc = -1;
            break;
        }
        r->versions_seen += nv;
        int *matched = malloc((size_t)(nr ? nr : 1) * sizeof(int));
        /* Walk keys in byte order: the listing's order and the records'. */
        long v = 0;
        int ri = 0;
        while (v < nv || ri < nr) {
            const char *key = v < nv && (ri >= nr || strcmp(vs[v].key, recs[ri]->key) <= 0)
                                  ? vs[v].key : recs[ri]->key;
            long v0 = v;
            int r0 = ri;
            while (v < nv && !strcmp(vs[v].key, key))
                v++;
            while (ri < nr && !strcmp(recs[ri]->key, key))
                ri++;
            mix_check_key(r, (mix_kind)kind, recs + r0, ri - r0, vs + v0, (int)(v - v0),
                          matched);
            if (kind == MIX_CAS && v > v0) {
                int ctr = atoi(key + 4);
                if (ctr >= 0 && ctr < MIX_MAX_COUNTERS) {
                    r->cas_value[ctr] = vs[v0].size;
                    for (int i = r0; i < ri; i++)
                        r->cas_acked[ctr] += recs[i]->outcome == MIX_OUT_OK && !recs[i]->setup;
                }
            }
        }
        free(matched);
        free(recs);
        free(vs);
    }
    /* The counter as a reader sees it: GET latest equals the acked count. */
    for (int k = 0; k < m->conf.counters && rc == 0; k++) {
        char path[128];
        httpc_resp resp;
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/ctr%%2F%d?consistency=eventual",
                 mix_bucket[MIX_CAS], k);
        if (mix_get_retrying(m, c, path, &resp) < 0) {
            mix_problem(r, "GET counter %s: %.200s", path, resp.body ? resp.body : "");
            rc = -1;
            break;
        }
        json_t *j = json_loads(resp.body, 0, NULL);
        const char *nv = json_string_value(json_object_get(json_object_get(j, "user_metadata"), "n"));
        long got = nv ? strtol(nv, NULL, 10) : -1;
        json_decref(j);
        if (got != r->cas_acked[k] || r->cas_value[k] != r->cas_acked[k]) {
            mix_problem(r, "counter %d is %ld (newest version %ld), acked increments %ld", k, got,
                        r->cas_value[k], r->cas_acked[k]);
            rc = -1;
        }
    }
    httpc_destroy(c);
    free(all);
    r->read_503 = mixload_read_503(m, r->read_503_first, sizeof(r->read_503_first));
    r->strong_ok = m->strong_ok;
    r->strong_503 = m->strong_503;
    r->strong_other = m->strong_other;
    r->strong_503_streak_ms = m->strong_streak_ms;
    snprintf(r->strong_503_first, sizeof(r->strong_503_first), "%s", m->strong_first);
    snprintf(r->strong_503_last, sizeof(r->strong_503_last), "%s", m->strong_last);
    mix_counts t;
    mixload_sum(r, &t);
    if (r->lost || r->duplicated || r->phantom || r->wrong || r->cas_chain_breaks || t.errors ||
        t.unresolved)
        rc = -1;
    if (rc < 0 && !r->first_problem[0])
        snprintf(r->first_problem, sizeof(r->first_problem), "%ld errors, %ld unresolved",
                 t.errors, t.unresolved);
    return rc;
}

void mixload_sum(const mixload_report *r, mix_counts *t) {
    memset(t, 0, sizeof(*t));
    for (int k = 0; k < MIX_KINDS; k++)
        for (int ch = 0; ch < MIX_CHANNELS; ch++) {
            const mix_counts *c = &r->c[k][ch];
            t->attempted += c->attempted;
            t->acked += c->acked;
            t->rejected += c->rejected;
            t->errors += c->errors;
            t->unknown_events += c->unknown_events;
            t->unknown_writes += c->unknown_writes;
            t->res_original += c->res_original;
            t->res_retry_applied += c->res_retry_applied;
            t->res_retry_rejected += c->res_retry_rejected;
            t->unresolved += c->unresolved;
            if (c->max_call_ms > t->max_call_ms)
                t->max_call_ms = c->max_call_ms;
        }
}

void mixload_print(const mixload_report *r, FILE *f) {
    fprintf(f, "%-22s %-7s %8s %8s %6s %4s %7s %7s %8s %7s %7s %6s %8s\n", "kind", "channel",
            "attempt", "acked", "412", "err", "unk.ev", "unk.wr", "=>orig", "=>appl", "=>412",
            "unres", "maxcall");
    for (int k = 0; k < MIX_KINDS; k++)
        for (int ch = 0; ch < MIX_CHANNELS; ch++) {
            const mix_counts *c = &r->c[k][ch];
            fprintf(f, "%-22s %-7s %8ld %8ld %6ld %4ld %7ld %7ld %8ld %7ld %7ld %6ld %6ldms\n",
                    mix_kind_name((mix_kind)k), mix_channel_name((mix_channel)ch), c->attempted,
                    c->acked, c->rejected, c->errors, c->unknown_events, c->unknown_writes,
                    c->res_original, c->res_retry_applied, c->res_retry_rejected, c->unresolved,
                    c->max_call_ms);
        }
    mix_counts t;
    mixload_sum(r, &t);
    fprintf(f, "%-22s %-7s %8ld %8ld %6ld %4ld %7ld %7ld %8ld %7ld %7ld %6ld %6ldms\n", "total",
            "", t.attempted, t.acked, t.rejected, t.errors, t.unknown_events, t.unknown_writes,
            t.res_original, t.res_retry_applied, t.res_retry_rejected, t.unresolved,
            t.max_call_ms);
    fprintf(f, "gateway retries: %ld no answer, %ld 503, %ld other 5xx\n", r->gw_transport_errors,
            r->gw_503, r->gw_other_5xx);
    fprintf(f, "reads answered 503 (retried): %ld%s%s\n", r->read_503,
            r->read_503 ? "; first: " : "", r->read_503_first);
    if (r->strong_ok || r->strong_503 || r->strong_other)
        fprintf(f, "strong reader: %ld ok, %ld 503, %ld other; longest 503 run on one bucket "
                   "%ld ms%s%s%s%s\n", r->strong_ok, r->strong_503, r->strong_other,
                r->strong_503_streak_ms, r->strong_503 ? "; first: " : "", r->strong_503_first,
                r->strong_503 ? "; last: " : "", r->strong_503_last);
    fprintf(f, "%-34s %8s %8s %7s %14s %14s\n", "phase (writes completing in it)", "done",
            "acked", "unk.ev", "max 1st-try", "max w/retries");
    for (int p = 0; p < r->phases; p++)
        fprintf(f, "%-34s %8ld %8ld %7ld %12ldms %12ldms\n", r->phase[p].name,
                r->phase[p].completed, r->phase[p].acked, r->phase[p].unknown_events,
                r->phase[p].max_first_ms, r->phase[p].max_total_ms);
    fprintf(f, "versions listed %ld: lost %ld, duplicated %ld, phantom %ld, wrong version %ld, "
               "counter chain breaks %ld\n",
            r->versions_seen, r->lost, r->duplicated, r->phantom, r->wrong, r->cas_chain_breaks);
    for (int k = 0; k < MIX_MAX_COUNTERS; k++)
        if (r->cas_acked[k] || r->cas_value[k])
            fprintf(f, "counter %d: value %ld, acknowledged increments %ld\n", k, r->cas_value[k],
                    r->cas_acked[k]);
    if (r->first_problem[0])
        fprintf(f, "first problem: %s\n", r->first_problem);
}
