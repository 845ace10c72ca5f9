/* autosplit.c: automatic splits (objlogd --auto-split), run by the ranges
 * thread once a second (coordinator.c's finisher).
 *
 * A partition this node applies whose applied rate stays at or above
 * --auto-split-rate events/s for --auto-split-seconds consecutive seconds
 * is split: its hottest range (the one its recent writes went to most, read
 * from the route keys of its last AUTOSPLIT_WINDOW outcomes) is cut at the
 * bucket that best halves those writes, and the upper part moves to the
 * least loaded partition. Hysteresis: after a split (or a range found
 * unsplittable) both partitions wait three times --auto-split-seconds
 * before another, and a partition must be hot for the whole stretch again,
 * so a range does not flap; one handoff at a time (ranges_run's lock).
 *
 * Invariant: decisions use this node's view only to choose what to ask
 * for; the handoff itself is decided in log order like any other. A range
 * with a single busy bucket is not split (a bucket does not span
 * partitions yet): it is logged, not retried every second. */
#include "core.h"
#include "ranges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objlog_logger.h"
#include "rangemap.h"

#define AUTOSPLIT_WINDOW 20000   /* recent outcomes read per decision */
#define AUTOSPLIT_BUCKETS 4096   /* distinct buckets counted at most */

/* Writes per bucket among a partition's recent outcomes. */
typedef struct as_bucket {
    keybuf part;                 /* bucket_part(b) */
    char name[64];
    long writes;
    int range;                   /* index in the current map */
} as_bucket;

typedef struct as_count {
    as_bucket *b;
    int n;
    int full;
} as_count;

static void as_count_one(const uint8_t *rk, size_t n, void *arg) {
    as_count *c = arg;
    keybuf bucket, key;
    size_t used = 0;
    keybuf_init(&bucket);
    keybuf_init(&key);
    if (keycodec_parse_route_key(rk, n, &bucket, &key, &used) == 0 && bucket.len < 64) {
        int i = 0;
        while (i < c->n && (strlen(c->b[i].name) != bucket.len ||
                            memcmp(c->b[i].name, bucket.data, bucket.len) != 0))
            i++;
        if (i == c->n && c->n < AUTOSPLIT_BUCKETS) {
            memcpy(c->b[i].name, bucket.data, bucket.len);
            c->b[i].name[bucket.len] = '\0';
            keybuf_init(&c->b[i].part);
            c->n += keycodec_bucket_part(&c->b[i].part, c->b[i].name, bucket.len) == 0;
        }
        c->full |= i == AUTOSPLIT_BUCKETS;
        if (i < c->n)
            c->b[i].writes++;
    }
    keybuf_free(&bucket);
    keybuf_free(&key);
}

static int as_cmp_part(const void *x, const void *y) {
    const as_bucket *a = x, *b = y;
    size_t m = a->part.len < b->part.len ? a->part.len : b->part.len;
    int c = memcmp(a->part.data, b->part.data, m);
    return c ? c : (a->part.len > b->part.len) - (a->part.len < b->part.len);
}

/* The bucket to split p's hottest range at (out), or 0 when its hottest
 * range has a single busy bucket (why says so). */
static int as_choose(objlog_query *q, int32_t p, char out[64], char *why, size_t why_n) {
    as_count c = {calloc(AUTOSPLIT_BUCKETS, sizeof(as_bucket)), 0, 0};
    if (!c.b)
        return 0;
    int64_t applied = objlog_materializer_applied(q->m, p);
    char err[256];
    const rangemap *rm = objlog_materializer_rangemap(q->m);
    int found = 0;
    if (objlog_store_route_keys(q->store, p, applied - AUTOSPLIT_WINDOW, as_count_one, &c, err,
                                sizeof(err)) < 0) {
        snprintf(why, why_n, "%s", err);
        goto out;
    }
    /* The hottest range of p, then its buckets in key order. */
    long best = 0;
    int hot = -1;
    for (int i = 0; i < c.n; i++)
        c.b[i].range = rangemap_index(rm, c.b[i].part.data, c.b[i].part.len);
    for (int r = 0; r < rangemap_count(rm); r++) {
        long w = 0;
        for (int i = 0; i < c.n; i++)
            w += c.b[i].range == r ? c.b[i].writes : 0;
        if (w > best) {
            best = w;
            hot = r;
        }
    }
    int n = 0;
    for (int i = 0; i < c.n; i++)
        if (c.b[i].range == hot) {
            as_bucket t = c.b[n];
            c.b[n++] = c.b[i];
            c.b[i] = t;
        }
    qsort(c.b, (size_t)n, sizeof(*c.b), as_cmp_part);
    if (n < 2) {
        snprintf(why, why_n, "its hottest range has one busy bucket (%s): a bucket does not "
                             "span partitions yet",
                 n ? c.b[0].name : "none");
        goto out;
    }
    /* The cut whose lower side is closest to half the writes. */
    long below = c.b[0].writes, half = best / 2, gap = -1;
    for (int k = 1; k < n; k++) {
        long d = below > half ? below - half : half - below;
        if (gap < 0 || d < gap) {
            gap = d;
            snprintf(out, 64, "%s", c.b[k].name);
            found = 1;
        }
        below += c.b[k].writes;
    }
out:
    for (int i = 0; i < AUTOSPLIT_BUCKETS && c.b; i++)
        if (c.b[i].name[0])
            keybuf_free(&c.b[i].part);
    free(c.b);
    return found;
}

/* A partition hot long enough and out of its cooldown, the hottest such;
 * -1 none. Updates the per-partition rates. */
static int as_hot_partition(objlog_query *q, int64_t now_ms) {
    ranges_state *r = q->ranges;
    int hot = -1;
    double hot_rate = 0;
    for (int p = 0; p < r->as_nparts; p++) {
        int64_t applied = objlog_materializer_role(q->m, p) == OBJLOG_ROLE_ACTIVE
                              ? objlog_materializer_applied(q->m, p)
                              : -1;
        double rate = 0;
        if (applied >= 0 && r->as_prev[p] >= 0 && now_ms > r->as_prev_ms)
            rate = (double)(applied - r->as_prev[p]) * 1000.0 / (double)(now_ms - r->as_prev_ms);
        r->as_prev[p] = applied;
        r->as_hot[p] = rate >= r->auto_rate ? r->as_hot[p] + 1 : 0;
        if (r->as_hot[p] >= r->auto_seconds && now_ms >= r->as_quiet_until[p] &&
            rate > hot_rate) {
            hot = p;
            hot_rate = rate;
        }
    }
    r->as_prev_ms = now_ms;
    return hot;
}

void ranges_autosplit_tick(objlog_query *q, int64_t now_ms) {
    ranges_state *r = q->ranges;
    if (!r->auto_rate || !r->as_prev)
        return;
    int p = as_hot_partition(q, now_ms);
    if (p < 0)
        return;
    int64_t quiet = now_ms + 3000LL * r->auto_seconds;
    r->as_hot[p] = 0;
    r->as_quiet_until[p] = quiet;
    ranges_req req = {.kind = RANGES_SPLIT, .to = -1};
    char why[256] = "";
    keybuf_init(&req.key);
    if (!as_choose(q, p, req.bucket, why, sizeof(why))) {
        objlog_logf(OBJLOG_LEVEL_NOTICE, "ranges", "partition %d is hot but not split: %s", p,
                    why);
        return;
    }
    ranges_result out;
    ranges_run(q, &req, &out);
    atomic_fetch_add(&r->auto_splits[out.status == 200 ? 0 : 1], 1);
    if (out.status == 200 && out.to >= 0 && out.to < r->as_nparts)
        r->as_quiet_until[out.to] = quiet;
    if (out.status == 200)
        objlog_logf(OBJLOG_LEVEL_INFO, "ranges",
                    "automatic split of partition %d at bucket %s: moved to partition %d, "
                    "epoch %u, writes held %.3f s",
                    p, req.bucket, out.to, out.epoch, out.held_seconds);
    else
        objlog_logf(OBJLOG_LEVEL_WARNING, "ranges",
                    "automatic split of partition %d at bucket %s failed: %s: %s", p, req.bucket,
                    out.code, out.message);
}

int ranges_autosplit_conf(objlog_query *q, unsigned rate, int seconds) {
    ranges_state *r = q->ranges;
    r->auto_rate = rate;
    r->auto_seconds = seconds > 0 ? seconds : 1;
    if (!rate)
        return 0;
    r->as_nparts = objlog_materializer_partitions(q->m);
    r->as_prev = malloc((size_t)r->as_nparts * sizeof(*r->as_prev));
    r->as_hot = calloc((size_t)r->as_nparts, sizeof(*r->as_hot));
    r->as_quiet_until = calloc((size_t)r->as_nparts, sizeof(*r->as_quiet_until));
    if (!r->as_prev || !r->as_hot || !r->as_quiet_until)
        return -1;
    for (int p = 0; p < r->as_nparts; p++)
        r->as_prev[p] = -1;
    return 0;
}
