/* jsonw.c: a JSON writer for the hottest answers (an object's GET, a
 * LIST page). With
 * jansson a GET built a json_t tree (a hash table, an allocation per
 * field) and dumped it through a callback per token: about 33,000
 * instructions of the 139,000 an eventual GET cost (callgrind,
 * ops/compare/icount.sh). This appends the same compact JSON to a keybuf
 * in one pass.
 *
 * Invariant: the text is what json_dumps(JSON_COMPACT) gives for the same
 * fields in the same order: '"', '\\' and bytes below 0x20 escaped, other
 * bytes (UTF-8 was checked at the edge) copied as they are; the caller
 * alternates keys and values inside an object, and gives values without
 * keys (key NULL) inside an array. An allocation
 * failure is sticky: jsonw_finish reports it once. */
#include "server.h"

#include <string.h>

static void jsonw_raw(jsonw *w, const void *p, size_t n) {
    if (!w->failed && keybuf_append(&w->buf, p, n) < 0)
        w->failed = 1;
}

static void jsonw_sep(jsonw *w) {
    if (w->need_comma)
        jsonw_raw(w, ",", 1);
    w->need_comma = 0;
}

void jsonw_begin(jsonw *w) {
    keybuf_init(&w->buf);
    w->failed = 0;
    w->need_comma = 0;
    jsonw_raw(w, "{", 1);
}

/* One escape (at most 6 bytes) at out; returns its length. */
static size_t jsonw_escape(unsigned char ch, char *out) {
    static const char hex[] = "0123456789ABCDEF"; /* as jansson writes it */
    out[0] = '\\';
    switch (ch) {
    case '"': case '\\': out[1] = (char)ch; return 2;
    case '\n': out[1] = 'n'; return 2;
    case '\r': out[1] = 'r'; return 2;
    case '\t': out[1] = 't'; return 2;
    case '\b': out[1] = 'b'; return 2;
    case '\f': out[1] = 'f'; return 2;
    default:
        memcpy(out + 1, "u00", 3);
        out[4] = hex[ch >> 4];
        out[5] = hex[ch & 15];
        return 6;
    }
}

/* Room for the worst case (every byte escaped) first, then the bytes
 * straight into the buffer: one reserve a string, not one append a run
 * (a LIST entry has six strings). */
static void jsonw_string(jsonw *w, const char *s, size_t n) {
    if (w->failed || n > (SIZE_MAX - 2) / 6 || keybuf_reserve(&w->buf, 2 + 6 * n) < 0) {
        w->failed = 1;
        return;
    }
    char *out = (char *)w->buf.data + w->buf.len, *p = out;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            *p++ = (char)ch;
        else
            p += jsonw_escape(ch, p);
    }
    *p++ = '"';
    w->buf.len += (size_t)(p - out);
}

/* 1 when s[0..n) needs no escape in a JSON string. */
static int jsonw_plain(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == '"' || ch == '\\')
            return 0;
    }
    return 1;
}

/* A member's key, or (key NULL) the separator before an array element.
 * A key that needs no escape (the API's own member names always) goes
 * out with its separator in place after one reserve; user metadata names
 * and tag keys are keys too, so anything else takes the escaping path. */
static void jsonw_key(jsonw *w, const char *key) {
    if (!key) {
        jsonw_sep(w);
        return;
    }
    size_t kn = strlen(key);
    if (!jsonw_plain(key, kn)) {
        jsonw_sep(w);
        jsonw_string(w, key, kn);
        jsonw_raw(w, ":", 1);
        return;
    }
    if (w->failed || keybuf_reserve(&w->buf, kn + 4) < 0) {
        w->failed = 1;
        return;
    }
    char *p = (char *)w->buf.data + w->buf.len, *start = p;
    if (w->need_comma)
        *p++ = ',';
    w->need_comma = 0;
    *p++ = '"';
    memcpy(p, key, kn);
    p += kn;
    *p++ = '"';
    *p++ = ':';
    w->buf.len += (size_t)(p - start);
}

void jsonw_strn(jsonw *w, const char *key, const char *s, size_t n) {
    if (!s) { /* an absent parameter: "" as jansson showed it */
        s = "";
        n = 0;
    }
    jsonw_key(w, key);
    jsonw_string(w, s, n);
    w->need_comma = 1;
}

void jsonw_str(jsonw *w, const char *key, const char *s) {
    jsonw_strn(w, key, s, s ? strlen(s) : 0);
}

void jsonw_u64(jsonw *w, const char *key, uint64_t v) {
    char digits[24];
    size_t i = sizeof(digits);
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    jsonw_key(w, key);
    jsonw_raw(w, digits + i, sizeof(digits) - i);
    w->need_comma = 1;
}

void jsonw_bool(jsonw *w, const char *key, int v) {
    jsonw_key(w, key);
    jsonw_raw(w, v ? "true" : "false", v ? 4 : 5);
    w->need_comma = 1;
}

/* Objects and arrays open and close alike but for the bracket; one pair,
 * so their comma rule cannot drift apart. */
static void jsonw_open(jsonw *w, const char *key, const char *bracket) {
    jsonw_key(w, key);
    jsonw_raw(w, bracket, 1);
}

static void jsonw_close(jsonw *w, const char *bracket) {
    jsonw_raw(w, bracket, 1);
    w->need_comma = 1;
}

void jsonw_object_begin(jsonw *w, const char *key) { jsonw_open(w, key, "{"); }
void jsonw_object_end(jsonw *w) { jsonw_close(w, "}"); }
void jsonw_array_begin(jsonw *w, const char *key) { jsonw_open(w, key, "["); }
void jsonw_array_end(jsonw *w) { jsonw_close(w, "]"); }

int jsonw_finish(jsonw *w) {
    jsonw_raw(w, "}\n", 2);
    return w->failed ? -1 : 0;
}
