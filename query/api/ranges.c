/* ranges.c: GET /v1/ranges, the range map this node routes writes and
 * fences reads by: its epoch, and each range's first route key (hex),
 * the bucket (and key) that key names when it lies at a bucket's start
 * (or inside a bucket) rather than at a bucket-hash boundary, the
 * partition that owns the range and the range's state: "moving" while a
 * handoff of this node moves it (ranges.h), else "serving".
 *
 * Invariant: one answer is one map (one epoch): the current one, which
 * stays valid for the answer even if a handoff replaces it meanwhile. */
#include "core.h"
#include "api.h"
#include "keycodec.h"
#include "rangemap.h"
#include "ranges.h"

#include <jansson.h>
#include <stdlib.h>

/* What a start names: a hash boundary (two bytes, or none) nothing; a
 * bucket's part its bucket; a route key its bucket and key. */
static void ranges_name_start(json_t *e, const uint8_t *s, size_t sl) {
    keybuf b, k;
    size_t used = 0;
    keybuf_init(&b);
    keybuf_init(&k);
    if (sl > 2 && keycodec_parse_route_key(s, sl, &b, &k, &used) == 0 && used == sl) {
        json_object_set_new(e, "bucket", json_stringn((const char *)b.data, b.len));
        json_object_set_new(e, "key", json_stringn((const char *)k.data, k.len));
    } else if (sl > 2) {
        keybuf_reset(&b);
        if (keycodec_decode_enc(s + 2, sl - 2, &b, &used) == 0 && used == sl - 2)
            json_object_set_new(e, "bucket", json_stringn((const char *)b.data, b.len));
    }
    keybuf_free(&b);
    keybuf_free(&k);
}

/* The range starting at s (sl bytes) as /v1/ranges shows it, or NULL. */
static json_t *ranges_entry_json(const uint8_t *s, size_t sl, int partition, int moving) {
    char *hex = malloc(2 * sl + 1);
    json_t *e = hex ? json_object() : NULL;
    if (!e) {
        free(hex);
        return NULL;
    }
    for (size_t i = 0; i < sl; i++)
        snprintf(hex + 2 * i, 3, "%02x", s[i]);
    hex[2 * sl] = '\0';
    json_object_set_new(e, "start", json_string(hex));
    free(hex);
    ranges_name_start(e, s, sl);
    json_object_set_new(e, "partition", json_integer(partition));
    json_object_set_new(e, "state", json_string(moving ? "moving" : "serving"));
    return e;
}

void ranges_get(http_ctx *c) {
    const rangemap *rm = objlog_materializer_rangemap(c->q->m);
    json_t *arr = json_array();
    for (int i = 0; arr && i < rangemap_count(rm); i++) {
        const uint8_t *s, *e;
        size_t sl, el;
        int p;
        rangemap_entry(rm, i, &s, &sl, &e, &el, &p);
        json_t *one = ranges_entry_json(s, sl, p, ranges_moving(c->q->ranges, s, sl, e, el));
        if (!one || json_array_append_new(arr, one) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    json_t *body = arr ? json_pack("{s:I, s:o}", "epoch", (json_int_t)rangemap_epoch(rm),
                                   "ranges", arr)
                       : NULL;
    if (!body) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    http_reply_json(c, 200, body);
}
