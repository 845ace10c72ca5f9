/* ranges.c: GET /v1/ranges, the range map this node routes writes and
 * fences reads by: its epoch, and each range's first route key (hex),
 * the bucket and key that key names when it lies inside a bucket rather
 * than at a bucket-hash boundary, the partition that owns the range and
 * the range's state.
 *
 * Invariant: one answer is one map (one epoch): the materializer's, which
 * it holds for its life. Every range is "serving" until ranges can move. */
#include "core.h"
#include "api.h"
#include "keycodec.h"
#include "rangemap.h"

#include <jansson.h>
#include <stdlib.h>

/* The range starting at s (sl bytes) as /v1/ranges shows it, or NULL. */
static json_t *ranges_entry_json(const uint8_t *s, size_t sl, int partition) {
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
    keybuf b, k;
    size_t used = 0;
    keybuf_init(&b);
    keybuf_init(&k);
    /* A hash boundary (two bytes, or none) names no bucket; a route key
     * names its bucket and key (the key may be empty: the bucket's start). */
    if (sl > 2 && keycodec_parse_route_key(s, sl, &b, &k, &used) == 0 && used == sl) {
        json_object_set_new(e, "bucket", json_stringn((const char *)b.data, b.len));
        json_object_set_new(e, "key", json_stringn((const char *)k.data, k.len));
    }
    keybuf_free(&b);
    keybuf_free(&k);
    json_object_set_new(e, "partition", json_integer(partition));
    json_object_set_new(e, "state", json_string("serving"));
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
        json_t *one = ranges_entry_json(s, sl, p);
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
