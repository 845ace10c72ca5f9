/* xmlw.c: the XML of the S3 endpoint's answers (s3.c), appended to one
 * growable buffer in one pass (as jsonw.c does for JSON: a LIST of 1,000
 * keys is some 25,000 small pieces) and handed to evhttp without a copy.
 * Only what S3's answers need: one namespace on the root, elements,
 * escaped text.
 *
 * Invariant: every byte of text is escaped (& < > " ' and the control
 * characters XML 1.0 cannot carry literally, as S3 writes them: &#xN;),
 * so a key with any bytes never breaks the document; with url set the
 * text is percent-encoded the way S3 answers EncodingType=url and
 * botocore decodes it (unquote_plus: a space is '+'). */
#include "core.h"
#include "s3.h"
#include "server.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#define XMLW_NS "http://s3.amazonaws.com/doc/2006-03-01/"

static void xmlw_add(xmlw *x, const char *s, size_t n) {
    if (!x->failed && keybuf_append(&x->buf, s, n) < 0)
        x->failed = 1;
}

static void xmlw_tag(xmlw *x, const char *open, const char *tag) {
    xmlw_add(x, open, strlen(open));
    xmlw_add(x, tag, strlen(tag));
}

static int xmlw_start(xmlw *x) {
    keybuf_init(&x->buf);
    x->failed = 0;
    xmlw_add(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 39);
    return x->failed ? -1 : 0;
}

int xmlw_begin(xmlw *x, const char *root) {
    if (xmlw_start(x) < 0)
        return -1;
    xmlw_tag(x, "<", root);
    xmlw_add(x, " xmlns=\"" XMLW_NS "\">", strlen(" xmlns=\"" XMLW_NS "\">"));
    return x->failed ? -1 : 0;
}

int xmlw_begin_bare(xmlw *x, const char *root) {
    if (xmlw_start(x) < 0)
        return -1;
    xmlw_tag(x, "<", root);
    xmlw_add(x, ">", 1);
    return x->failed ? -1 : 0;
}

void xmlw_open(xmlw *x, const char *tag) {
    xmlw_tag(x, "<", tag);
    xmlw_add(x, ">", 1);
}

void xmlw_open_attrs(xmlw *x, const char *tag, const char *attrs) {
    xmlw_tag(x, "<", tag);
    xmlw_add(x, " ", 1);
    xmlw_add(x, attrs, strlen(attrs));
    xmlw_add(x, ">", 1);
}

void xmlw_close(xmlw *x, const char *tag) {
    xmlw_tag(x, "</", tag);
    xmlw_add(x, ">", 1);
}

static void xmlw_free_cb(const void *data, size_t len, void *arg) {
    (void)len, (void)arg;
    free((void *)data);
}

struct evbuffer *xmlw_take(xmlw *x) {
    struct evbuffer *b = x->failed ? NULL : evbuffer_new();
    if (b && x->buf.len &&
        evbuffer_add_reference(b, x->buf.data, x->buf.len, xmlw_free_cb, NULL) == 0) {
        keybuf_init(&x->buf); /* the evbuffer owns the bytes now */
        return b;
    }
    if (b)
        evbuffer_free(b);
    keybuf_free(&x->buf);
    return NULL;
}

void xmlw_discard(xmlw *x) { keybuf_free(&x->buf); }

static void xmlw_escape(xmlw *x, const unsigned char *s, size_t n) {
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = NULL;
        char num[8];
        switch (s[i]) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&apos;"; break;
        default:
            if (s[i] < 0x20 || s[i] == 0x7f) {
                snprintf(num, sizeof(num), "&#x%X;", s[i]);
                rep = num;
            }
        }
        if (!rep)
            continue;
        xmlw_add(x, (const char *)s + run, i - run);
        xmlw_add(x, rep, strlen(rep));
        run = i + 1;
    }
    xmlw_add(x, (const char *)s + run, n - run);
}

static void xmlw_urlencode(xmlw *x, const unsigned char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = s[i];
        int keep = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                   (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
                   ch == '~' || ch == '/';
        char out[3] = {'%', hex[ch >> 4], hex[ch & 15]};
        if (keep)
            xmlw_add(x, (const char *)&ch, 1);
        else /* a space too: %20, as S3 writes it (botocore decodes both) */
            xmlw_add(x, out, 3);
    }
}

void xmlw_bytes(xmlw *x, const char *tag, const void *s, size_t n, int url) {
    xmlw_open(x, tag);
    if (url)
        xmlw_urlencode(x, s, n);
    else
        xmlw_escape(x, s, n);
    xmlw_close(x, tag);
}

void xmlw_raw_text(xmlw *x, const char *s) { xmlw_escape(x, (const unsigned char *)s, strlen(s)); }

void xmlw_str(xmlw *x, const char *tag, const char *s) {
    xmlw_bytes(x, tag, s ? s : "", s ? strlen(s) : 0, 0);
}

void xmlw_u64(xmlw *x, const char *tag, uint64_t v) {
    char num[24];
    snprintf(num, sizeof(num), "%" PRIu64, v);
    xmlw_bytes(x, tag, num, strlen(num), 0);
}

void xmlw_bool(xmlw *x, const char *tag, int v) { xmlw_str(x, tag, v ? "true" : "false"); }

void xmlw_time(xmlw *x, const char *tag, int64_t ms) {
    char buf[40];
    http_format_time(ms, buf, sizeof(buf)); /* the JSON API's ISO 8601, ms, Z */
    xmlw_open(x, tag);
    xmlw_add(x, buf, strlen(buf));
    xmlw_close(x, tag);
}
