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

static void jsonw_string(jsonw *w, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    jsonw_raw(w, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        jsonw_raw(w, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', (char)ch, 0, 0, 0, 0};
        size_t en = 2;
        switch (ch) {
        case '"': case '\\': break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[ch >> 4];
            esc[5] = hex[ch & 15];
            en = 6;
        }
        jsonw_raw(w, esc, en);
    }
    jsonw_raw(w, s + run, n - run);
    jsonw_raw(w, "\"", 1);
}

/* A member's key, or (key NULL) the separator before an array element. */
static void jsonw_key(jsonw *w, const char *key) {
    jsonw_sep(w);
    if (!key)
        return;
    jsonw_string(w, key, strlen(key));
    jsonw_raw(w, ":", 1);
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
