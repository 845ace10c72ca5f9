/* autosplit.c: automatic splits (objlogd --auto-split), run by the ranges
 * thread once a second (coordinator.c's finisher).
 *
 * A partition this node applies whose applied rate stays at or above
 * --auto-split-rate events/s for --auto-split-seconds consecutive seconds
 * is split: its hottest range (the one its recent writes went to most, read
 * from the route keys of its outcomes since it became hot, the last
 * AUTOSPLIT_WINDOW at most) is cut at the
 * bucket that best halves those writes, and the upper part moves to the
 * least loaded partition. Hysteresis: after a split (or a range found
 * unsplittable) both partitions wait three times --auto-split-seconds
 * before another, and a partition must be hot for the whole stretch again,
 * so a range does not flap; one handoff at a time (ranges_run's lock).
 *
 * A range whose writes go mostly (over three quarters) to one bucket is
 * cut inside it instead, at the route key that halves the range's recent
 * writes (a bucket with attribute indexes cannot be cut: logged).
 *
 * Invariant: decisions use this node's view only to choose what to ask
 * for; the handoff itself is decided in log order like any other. */
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

/* The route keys of p's recent writes that fall in range `hot`. */
typedef struct as_keys {
    const rangemap *rm;
    int hot;
    keybuf *k;
    int n;
} as_keys;

static void as_keys_one(const uint8_t *rk, size_t n, void *arg) {
    as_keys *c = arg;
    if (c->n >= AUTOSPLIT_WINDOW || rangemap_index(c->rm, rk, n) != c->hot)
        return;
    keybuf_init(&c->k[c->n]);
    c->n += keybuf_append(&c->k[c->n], rk, n) == 0;
}

static int as_cmp_key(const void *x, const void *y) {
    const keybuf *a = x, *b = y;
    size_t m = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->data, b->data, m);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Sets req to the key that halves range hot's recent writes on p: the
 * median route key (past the range's own start), as bucket and key. 1
 * found, 0 not (why). */
static int as_cut_inside(objlog_query *q, int32_t p, const rangemap *rm, int hot,
                         int64_t from, ranges_req *req, char *why, size_t why_n) {
    as_keys c = {rm, hot, calloc(AUTOSPLIT_WINDOW, sizeof(keybuf)), 0};
    char err[256];
    int found = 0;
    if (!c.k || objlog_store_route_keys(q->store, p, from, as_keys_one, &c, err,
                                        sizeof(err)) < 0) {
        snprintf(why, why_n, "%s", c.k ? err : "out of memory");
        goto out;
    }
    qsort(c.k, (size_t)c.n, sizeof(*c.k), as_cmp_key);
    const uint8_t *rs, *re;
    size_t rsn, ren;
    int part;
    rangemap_entry(rm, hot, &rs, &rsn, &re, &ren, &part);
    /* The first key past the median that is not the range's own start. */
    int m = c.n / 2;
    while (m < c.n && c.k[m].len == rsn && !memcmp(c.k[m].data, rs, rsn))
        m++;
    keybuf b, k;
    size_t used = 0;
    keybuf_init(&b);
    keybuf_init(&k);
    if (m < c.n && m > 0 && keycodec_parse_route_key(c.k[m].data, c.k[m].len, &b, &k, &used) == 0 &&
        b.len < sizeof(req->bucket)) {
        memcpy(req->bucket, b.data, b.len);
        req->bucket[b.len] = '\0';
        keybuf_reset(&req->key);
        found = keybuf_append(&req->key, k.data, k.len) == 0;
    } else {
        snprintf(why, why_n, "its hottest range has no key to cut at among %d recent writes",
                 c.n);
    }
    keybuf_free(&b);
    keybuf_free(&k);
out:
    for (int i = 0; i < c.n; i++)
        keybuf_free(&c.k[i]);
    free(c.k);
    return found;
}

/* Where to split p's hottest range: req->bucket (and req->key, inside
 * the bucket), 1; or 0 with why. */
static int as_choose(objlog_query *q, int32_t p, ranges_req *req, char *why, size_t why_n) {
    as_count c = {calloc(AUTOSPLIT_BUCKETS, sizeof(as_bucket)), 0, 0};
    if (!c.b)
        return 0;
    /* The writes of the hot stretch, the last AUTOSPLIT_WINDOW at most. */
    int64_t from = objlog_materializer_applied(q->m, p) - AUTOSPLIT_WINDOW;
    if (from < q->ranges->as_hot_from[p])
        from = q->ranges->as_hot_from[p];
    char err[256];
    const rangemap *rm = objlog_materializer_rangemap(q->m);
    int found = 0;
    if (objlog_store_route_keys(q->store, p, from, as_count_one, &c, err, sizeof(err)) < 0) {
        snprintf(why, why_n, "%s", err);
        goto out;
    }
    /* The hottest range of p, then its buckets in key order. */
    long best = 0, busiest = 0;
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
            busiest = c.b[n - 1].writes > busiest ? c.b[n - 1].writes : busiest;
        }
    qsort(c.b, (size_t)n, sizeof(*c.b), as_cmp_part);
    if (hot < 0) {
        snprintf(why, why_n, "no recent writes");
        goto out;
    }
    if (n < 2 || busiest * 4 > best * 3) {
        found = as_cut_inside(q, p, rm, hot, from, req, why, why_n);
        goto out;
    }
    /* The cut whose lower side is closest to half the writes. */
    long below = c.b[0].writes, half = best / 2, gap = -1;
    for (int k = 1; k < n; k++) {
        long d = below > half ? below - half : half - below;
        if (gap < 0 || d < gap) {
            gap = d;
            snprintf(req->bucket, sizeof(req->bucket), "%s", c.b[k].name);
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
        if (rate >= r->auto_rate && r->as_hot[p] == 0)
            r->as_hot_from[p] = r->as_prev[p]; /* the hot stretch's writes start here */
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
    char url[256];
    if (!r->auto_rate || !r->as_prev || !ranges_coordinator(q, url, sizeof(url)))
        return; /* in a cluster, the coordinator splits what it applies */
    int p = as_hot_partition(q, now_ms);
    if (p < 0)
        return;
    int64_t quiet = now_ms + 3000LL * r->auto_seconds;
    r->as_hot[p] = 0;
    r->as_quiet_until[p] = quiet;
    ranges_req req = {.kind = RANGES_SPLIT, .to = -1};
    char why[256] = "";
    keybuf_init(&req.key);
    if (!as_choose(q, p, &req, why, sizeof(why))) {
        objlog_logf(OBJLOG_LEVEL_NOTICE, "ranges", "partition %d is hot but not split: %s", p,
                    why);
        keybuf_free(&req.key);
        return;
    }
    char at[160];
    snprintf(at, sizeof(at), "%s%s%.*s", req.bucket, req.key.len ? "/" : "",
             (int)(req.key.len < 80 ? req.key.len : 80), (const char *)req.key.data);
    ranges_result out;
    ranges_run(q, &req, &out);
    keybuf_free(&req.key);
    atomic_fetch_add(&r->auto_splits[out.status == 200 ? 0 : 1], 1);
    if (out.status == 200 && out.to >= 0 && out.to < r->as_nparts)
        r->as_quiet_until[out.to] = quiet;
    if (out.status == 200)
        objlog_logf(OBJLOG_LEVEL_INFO, "ranges",
                    "automatic split of partition %d at %s: moved to partition %d, "
                    "epoch %u, writes held %.3f s",
                    p, at, out.to, out.epoch, out.held_seconds);
    else
        objlog_logf(OBJLOG_LEVEL_WARNING, "ranges",
                    "automatic split of partition %d at %s failed: %s: %s", p, at,
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
    r->as_hot_from = calloc((size_t)r->as_nparts, sizeof(*r->as_hot_from));
    if (!r->as_prev || !r->as_hot || !r->as_quiet_until || !r->as_hot_from)
        return -1;
    for (int p = 0; p < r->as_nparts; p++)
        r->as_prev[p] = -1;
    return 0;
}
