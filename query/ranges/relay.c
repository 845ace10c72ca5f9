/* relay.c: a bucket's settings follow it onto every partition holding
 * one of its ranges (docs/ARCHITECTURE.md, "A bucket across ranges").
 *
 * The state machine keeps a copy of the bucket's record with each stake
 * on a partition other than its home (materializer/stake.c); a change of
 * versioning, quota, lifecycle rules or rate limit is decided on the home
 * partition alone. Each tick of the ranges thread, for every range that
 * starts inside a bucket on another partition than the bucket's home,
 * this node compares the home record it holds with that partition's copy
 * (settings_seq) and, when the copy is older, appends a BucketRelay with
 * the home record to that partition, keyed by the range's first key. The
 * partition applies it in its log order, if still newer.
 *
 * Only a node that applies the home partition and has caught up with its
 * log (and with the target's, when it applies that too) relays: a view
 * still replaying sees its copies behind its home records, and must not
 * append for that.
 *
 * Invariant: a relay changes nothing but a copy's settings, and only
 * forward (settings_seq), so a relay sent twice, late, or by two nodes is
 * harmless; its request id is a function of (bucket, partition, key,
 * settings_seq), so a resend is deduplicated as well. */
#include "core.h"
#include "ranges.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "keycodec.h"
#include "objlog_logger.h"
#include "producer_event.h"
#include "rangemap.h"

/* A relay is sent again after this long if the copy is still older. */
#define RELAY_RESEND_MS 3000

static void relay_sent(const objlog_write_result *res, void *opaque) {
    (void)res;
    (void)opaque;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* settings_seq of partition p's copy of the bucket here: 1, 0 none here
 * (another node applies p, or the copy is not made yet), -1 error. */
static int copy_seq(objlog_query *q, const keybuf *bpart, int32_t p, uint64_t *seq) {
    Objlog__BucketRecord *r = NULL;
    char err[256];
    int rc = objlog_store_get_bucket_stake(q->store, bpart->data, bpart->len, p, &r, err,
                                           sizeof(err));
    if (rc == 1) {
        *seq = r->settings_seq;
        objlog__bucket_record__free_unpacked(r, NULL);
    }
    return rc;
}

/* 0, or -1 out of memory. */
static int relay_id(const char *bucket, int32_t p, const keybuf *key, uint64_t seq,
                    uint8_t rid[OBJLOG_REQUEST_ID_LEN]) {
    char head[96];
    uint8_t md[SHA256_DIGEST_LENGTH];
    int n = snprintf(head, sizeof(head), "objlog BucketRelay %d %llu ", p,
                     (unsigned long long)seq);
    keybuf in;
    keybuf_init(&in);
    int rc = keybuf_append(&in, head, (size_t)n) < 0 ||
                     keybuf_append(&in, bucket, strlen(bucket) + 1) < 0 ||
                     keybuf_append(&in, key->data, key->len) < 0
                 ? -1 : 0;
    if (rc == 0) {
        SHA256(in.data, in.len, md);
        memcpy(rid, md, OBJLOG_REQUEST_ID_LEN);
    }
    keybuf_free(&in);
    return rc;
}

/* The range starting at route key rs (inside bucket b at key k) on p. */
static void relay_range(objlog_query *q, const rangemap *rm, const keybuf *b, const keybuf *k,
                        const uint8_t *rs, size_t rsn, int32_t p) {
    char bucket[256];
    if (b->len >= sizeof(bucket))
        return;
    memcpy(bucket, b->data, b->len);
    bucket[b->len] = '\0';
    keybuf bpart, home_key;
    keybuf_init(&bpart);
    keybuf_init(&home_key);
    Objlog__BucketRecord *home = NULL;
    char err[256];
    uint64_t seq = 0;
    if (keycodec_bucket_part(&bpart, bucket, b->len) < 0 ||
        keycodec_route_key(&home_key, bucket, b->len, (const uint8_t *)"", 0) < 0 ||
        rangemap_partition(rm, home_key.data, home_key.len) == p ||
        objlog_store_get_bucket(q->store, bucket, &home, err, sizeof(err)) != 1 ||
        copy_seq(q, &bpart, p, &seq) < 0 || home->settings_seq <= seq)
        goto out;
    /* Both sides as of their logs' ends: the home here, the copy here too
     * when this node applies it (else the relay goes; it is harmless). */
    int32_t hp = rangemap_partition(rm, home_key.data, home_key.len);
    int local = objlog_materializer_role(q->m, p) == OBJLOG_ROLE_ACTIVE;
    if (!ranges_caught_up(q, hp) || (local && !ranges_caught_up(q, p)))
        goto out;
    /* Sent lately: again only while the copy here is still older; a copy
     * this node cannot see gets each change once. */
    ranges_state *r = q->ranges;
    int64_t t = now_ms();
    for (int i = 0; i < r->relay_n; i++)
        if (r->relay[i].p == p && r->relay[i].seq == home->settings_seq &&
            r->relay[i].len == rsn && !memcmp(r->relay[i].start, rs, rsn) &&
            (!local || t - r->relay[i].at_ms < RELAY_RESEND_MS))
            goto out;
    uint8_t rid[OBJLOG_REQUEST_ID_LEN];
    if (relay_id(bucket, p, k, home->settings_seq, rid) < 0)
        goto out;
    Objlog__BucketRelay rl = OBJLOG__BUCKET_RELAY__INIT;
    rl.record = home;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = bucket;
    ev.key = (ProtobufCBinaryData){k->len, k->data};
    ev.op_case = OBJLOG__EVENT__OP_BUCKET_RELAY;
    ev.bucket_relay = &rl;
    objlog_write_opts opts = {.request_id = rid};
    if (producer_write_to_partition(q->producer, &ev, p, rs, rsn, &opts, relay_sent, NULL, err,
                                    sizeof(err)) < 0) {
        objlog_logf(OBJLOG_LEVEL_WARNING, "ranges", "relay of bucket %s's settings to "
                                                    "partition %d: %s", bucket, p, err);
        goto out;
    }
    int slot = r->relay_n < RANGES_RELAY_SLOTS ? r->relay_n++ : (int)(t % RANGES_RELAY_SLOTS);
    r->relay[slot].p = p;
    r->relay[slot].seq = home->settings_seq;
    r->relay[slot].at_ms = t;
    r->relay[slot].len = rsn < sizeof(r->relay[slot].start) ? rsn : 0;
    memcpy(r->relay[slot].start, rs, r->relay[slot].len);
    atomic_fetch_add(&r->relays, 1);
    objlog_logf(OBJLOG_LEVEL_INFO, "ranges", "bucket %s's settings (seq %llu) relayed to "
                                             "partition %d", bucket,
                (unsigned long long)home->settings_seq, p);
out:
    if (home)
        objlog__bucket_record__free_unpacked(home, NULL);
    keybuf_free(&bpart);
    keybuf_free(&home_key);
}

void ranges_relay_tick(objlog_query *q) {
    const rangemap *rm = objlog_materializer_rangemap(q->m);
    keybuf b, k;
    keybuf_init(&b);
    keybuf_init(&k);
    for (int i = 0; i < rangemap_count(rm); i++) {
        const uint8_t *s, *e;
        size_t sn, en;
        int p;
        size_t used = 0;
        rangemap_entry(rm, i, &s, &sn, &e, &en, &p);
        keybuf_reset(&b);
        keybuf_reset(&k);
        if (sn > 2 && keycodec_parse_route_key(s, sn, &b, &k, &used) == 0 && used == sn &&
            k.len > 0)
            relay_range(q, rm, &b, &k, s, sn, p);
    }
    keybuf_free(&b);
    keybuf_free(&k);
}
