/* feed.c: change-feed rows staged by the state machine (feed.h). Owns the
 * row layout ('n' rows of the outcomes CF), the sequencer and the trim.
 * Invariant: every row is written in the batch of the event it describes
 * and deleted only by feed_trim, a function of the outcome trim, so a
 * partition's feed rows are a function of its applied log prefix. */
#include "feed.h"

#include "notify.h"
#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void feed_key(uint8_t out[FEED_KEY_LEN], int32_t p, int64_t off, uint16_t i) {
    out[0] = 'n';
    apply_put_be32(out + 1, (uint32_t)p);
    apply_put_be64(out + 5, (uint64_t)off);
    out[13] = (uint8_t)(i >> 8);
    out[14] = (uint8_t)i;
}

void feed_sequencer(char *out, uint32_t epoch, int32_t p, int64_t off) {
    snprintf(out, FEED_SEQUENCER_LEN + 1, "%08X%08X%012llX", (unsigned)epoch, (unsigned)p,
             (unsigned long long)off & 0xFFFFFFFFFFFFULL);
}

void feed_bucket_keep(feed_bucket *fb, Objlog__BucketRecord **br,
                      const Objlog__BucketRecord *taken) {
    if (fb->br)
        return;
    if (*br && (*br)->n_notifications) {
        fb->owned = *br;
        fb->br = *br;
        *br = NULL;
    } else if (!*br && taken && taken->n_notifications) {
        fb->br = taken;
    }
}

void feed_bucket_done(feed_bucket *fb) {
    if (fb->owned)
        objlog__bucket_record__free_unpacked(fb->owned, NULL);
    fb->owned = NULL;
    fb->br = NULL;
}

int feed_stage_record(apply_batch *b, int32_t p, int64_t off, uint16_t i,
                      const Objlog__FeedRecord *r, char *errstr, size_t es) {
    size_t n = objlog__feed_record__get_packed_size(r);
    uint8_t *v = malloc(n ? n : 1);
    if (!v) {
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    objlog__feed_record__pack(r, v);
    uint8_t k[FEED_KEY_LEN];
    feed_key(k, p, off, i);
    apply_batch_put(b, OBJLOG_CF_OUTCOMES, k, sizeof(k), v, n);
    free(v);
    return 0;
}

int feed_stage(apply_batch *b, int32_t p, int64_t off, uint32_t epoch, const feed_bucket *fb,
               const feed_change *ch, uint16_t *next, char *errstr, size_t es) {
    if (!fb->br)
        return 0;
    char seqr[FEED_SEQUENCER_LEN + 1];
    feed_sequencer(seqr, epoch, p, off);
    Objlog__FeedRecord r = OBJLOG__FEED_RECORD__INIT;
    r.event_name = (char *)ch->event_name;
    r.bucket = (char *)ch->bucket;
    r.key.data = (uint8_t *)ch->key;
    r.key.len = ch->key_len;
    r.size = ch->size;
    r.etag = (char *)(ch->etag ? ch->etag : "");
    r.version_id = (char *)(ch->version_id ? ch->version_id : "");
    r.sequencer = seqr;
    r.log_time_ms = ch->log_time_ms;
    r.request_id = ch->request_id;
    r.owner = (char *)(ch->owner ? ch->owner : "");
    for (size_t i = 0; i < fb->br->n_notifications; i++) {
        const Objlog__NotifyConfig *c = fb->br->notifications[i];
        if (!notify_config_matches(c, ch->event_name, ch->key, ch->key_len))
            continue;
        if (*next == UINT16_MAX) {
            snprintf(errstr, es, "more than %u feed records for one event", UINT16_MAX);
            return -1;
        }
        r.config_id = c->id;
        r.arn = c->arn;
        if (feed_stage_record(b, p, off, (*next)++, &r, errstr, es) < 0)
            return -1;
    }
    return 0;
}

int64_t feed_trimmed_below(int64_t olow) { return olow & ~(int64_t)(FEED_TRIM_STEP - 1); }

int feed_trim(apply_batch *b, int32_t p, int64_t old_low, int64_t new_low, char *errstr,
              size_t es) {
    int64_t from = feed_trimmed_below(old_low), to = feed_trimmed_below(new_low);
    if (to <= from)
        return 0;
    uint8_t start[FEED_KEY_LEN], end[FEED_KEY_LEN];
    feed_key(start, p, from, 0);
    feed_key(end, p, to, 0);
    /* Keys first: the batch is not written while an iterator runs on it. */
    uint8_t (*keys)[FEED_KEY_LEN] = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_OUTCOMES);
    for (rocksdb_iter_seek(it, (const char *)start, sizeof(start)); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (kn != FEED_KEY_LEN || memcmp(k, end, FEED_KEY_LEN) >= 0)
            break;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            void *g = realloc(keys, nc * FEED_KEY_LEN);
            if (!g) {
                snprintf(errstr, es, "out of memory");
                rc = -1;
                break;
            }
            keys = g;
            cap = nc;
        }
        memcpy(keys[n++], k, FEED_KEY_LEN);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(errstr, es, "scan feed rows: %s", err);
        rocksdb_free(err);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        apply_batch_del(b, OBJLOG_CF_OUTCOMES, keys[i], FEED_KEY_LEN);
    free(keys);
    return rc;
}

/* ---- reading (the notifier) ---- */

int64_t objlog_store_feed_low(objlog_store *s, int32_t p) {
    return feed_trimmed_below(objlog_store_outcomes_low(s, p));
}

long objlog_store_feed_scan(objlog_store *s, int32_t p, int64_t from, size_t max,
                            objlog_feed_fn *fn, void *arg, char *errstr, size_t es) {
    uint8_t start[FEED_KEY_LEN];
    feed_key(start, p, from < 0 ? 0 : from, 0);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it =
        rocksdb_create_iterator_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_OUTCOMES));
    long n = 0;
    int64_t last = -1;
    int rc = 0;
    for (rocksdb_iter_seek(it, (const char *)start, sizeof(start)); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn != FEED_KEY_LEN || memcmp(k, start, 5) != 0)
            break;
        int64_t off = (int64_t)apply_get_be64(k + 5);
        /* an event's records are never split between two calls */
        if ((size_t)n >= max && off != last)
            break;
        const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
        Objlog__FeedRecord *r = objlog__feed_record__unpack(NULL, vn, v);
        if (!r) {
            snprintf(errstr, es, "feed record %d.%lld: corrupt", p, (long long)off);
            rc = -1;
            break;
        }
        rc = fn(arg, off, (uint16_t)((k[13] << 8) | k[14]), r);
        objlog__feed_record__free_unpacked(r, NULL);
        if (rc != 0)
            break;
        last = off;
        n++;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    if (err) {
        snprintf(errstr, es, "scan feed of partition %d: %s", p, err);
        rocksdb_free(err);
        return -1;
    }
    if (rc < 0 && !errstr[0])
        snprintf(errstr, es, "feed of partition %d: stopped by its reader", p);
    return rc < 0 ? -1 : n;
}
