/* framing.c: see framing.h. One state per place in a request's grammar;
 * bodies and chunk data are skipped by count, the long runs of a head (the
 * request target, a field name, a field value) by tight loops, so that a
 * small request costs about a thousand instructions; the other states take
 * one byte at a time. A state that meets a byte the grammar does not allow
 * there sets the rule it breaks as f->error and stops. */
#include "framing.h"
#include "keycodec.h"

#include <string.h>
#include <strings.h>

enum {
    FS_START,                    /* before a request's first byte */
    FS_METHOD,
    FS_LINE,                     /* the request line after the method */
    FS_LINE_LF,
    FS_FIELD_START,              /* a header line, or the empty line */
    FS_NAME,
    FS_VALUE,
    FS_VALUE_LF,
    FS_HEAD_LF,
    FS_BODY,                     /* Content-Length bytes */
    FS_SIZE_FIRST,               /* a chunk size's first digit */
    FS_SIZE,
    FS_EXT,
    FS_SIZE_LF,
    FS_DATA,
    FS_DATA_CR,
    FS_DATA_LF,
    FS_LAST_CR,                  /* after the last chunk: the empty line */
    FS_LAST_LF,
    FS_FAILED
};

enum { FRAMING_F_LENGTH = 1, FRAMING_F_CHUNKED = 2, FRAMING_F_HTTP10 = 4 };

#define FRAMING_CL_DIGITS_MAX 18 /* below 2^63: evhttp reads it with strtoll */
#define FRAMING_SIZE_DIGITS_MAX 16

void framing_init(framing *f) {
    memset(f, 0, sizeof(*f));
    f->state = FS_START;
}

static int framing_fail(framing *f, const char *why) {
    f->error = why;
    f->state = FS_FAILED;
    return -1;
}

static int framing_ctl(uint8_t c) { return c < 0x20 || c == 0x7f; }

/* RFC 9110 tchar, the bytes of a field name: each as it is stored (lower
 * case), 0 for the others. */
static const uint8_t framing_tchars[256] = {
    ['!'] = '!', ['#'] = '#', ['$'] = '$', ['%'] = '%', ['&'] = '&', ['\''] = '\'',
    ['*'] = '*', ['+'] = '+', ['-'] = '-', ['.'] = '.', ['^'] = '^', ['_'] = '_',
    ['`'] = '`', ['|'] = '|', ['~'] = '~',
    ['0'] = '0', ['1'] = '1', ['2'] = '2', ['3'] = '3', ['4'] = '4',
    ['5'] = '5', ['6'] = '6', ['7'] = '7', ['8'] = '8', ['9'] = '9',
    ['a'] = 'a', ['b'] = 'b', ['c'] = 'c', ['d'] = 'd', ['e'] = 'e', ['f'] = 'f',
    ['g'] = 'g', ['h'] = 'h', ['i'] = 'i', ['j'] = 'j', ['k'] = 'k', ['l'] = 'l',
    ['m'] = 'm', ['n'] = 'n', ['o'] = 'o', ['p'] = 'p', ['q'] = 'q', ['r'] = 'r',
    ['s'] = 's', ['t'] = 't', ['u'] = 'u', ['v'] = 'v', ['w'] = 'w', ['x'] = 'x',
    ['y'] = 'y', ['z'] = 'z',
    ['A'] = 'a', ['B'] = 'b', ['C'] = 'c', ['D'] = 'd', ['E'] = 'e', ['F'] = 'f',
    ['G'] = 'g', ['H'] = 'h', ['I'] = 'i', ['J'] = 'j', ['K'] = 'k', ['L'] = 'l',
    ['M'] = 'm', ['N'] = 'n', ['O'] = 'o', ['P'] = 'p', ['Q'] = 'q', ['R'] = 'r',
    ['S'] = 's', ['T'] = 't', ['U'] = 'u', ['V'] = 'v', ['W'] = 'w', ['X'] = 'x',
    ['Y'] = 'y', ['Z'] = 'z'};

/* As evhttp_parse_request_line and evhttp_method_may_have_body read it:
 * only these upper-case methods have bodies; HEAD, TRACE and anything
 * unknown are read without one. */
static uint8_t framing_method(const framing *f) {
    static const char *const with_body[] = {"GET", "PUT", "POST", "PATCH", "DELETE",
                                            "OPTIONS", "CONNECT", NULL};
    if (f->verb_len == 4 && memcmp(f->verb, "HEAD", 4) == 0)
        return FRAMING_M_HEAD;
    for (int i = 0; with_body[i]; i++)
        if (f->verb_len == strlen(with_body[i]) && memcmp(f->verb, with_body[i], f->verb_len) == 0)
            return FRAMING_M_BODY;
    return FRAMING_M_NONE;
}

static void framing_start(framing *f, uint64_t at) {
    f->msg_start = at;
    f->remaining = 0;
    f->chunk_size = 0;
    f->method = FRAMING_M_NONE;
    f->flags = 0;
    f->digits = 0;
    f->verb_len = 0;
    memset(f->tail, 0, sizeof(f->tail));
    f->state = FS_METHOD;
}

/* The field value without the whitespace around it. */
static const char *framing_trim(framing *f, size_t *n) {
    const char *v = f->value;
    size_t len = f->value_len;
    while (len && (*v == ' ' || *v == '\t'))
        v++, len--;
    while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
        len--;
    *n = len;
    return v;
}

static int framing_content_length(framing *f) {
    size_t n;
    const char *v = framing_trim(f, &n);
    if (f->flags & (FRAMING_F_LENGTH | FRAMING_F_CHUNKED))
        return framing_fail(f, f->flags & FRAMING_F_LENGTH
                                   ? "Content-Length repeated"
                                   : "Content-Length with Transfer-Encoding");
    if (f->value_len == 255 || n == 0 || n > FRAMING_CL_DIGITS_MAX)
        return framing_fail(f, "Content-Length is not 1 to 18 digits");
    uint64_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return framing_fail(f, "Content-Length is not 1 to 18 digits");
        len = len * 10 + (uint64_t)(v[i] - '0');
    }
    f->remaining = len;
    f->flags |= FRAMING_F_LENGTH;
    return 0;
}

static int framing_transfer_encoding(framing *f) {
    size_t n;
    const char *v = framing_trim(f, &n);
    if (f->flags & (FRAMING_F_LENGTH | FRAMING_F_CHUNKED))
        return framing_fail(f, f->flags & FRAMING_F_CHUNKED
                                   ? "Transfer-Encoding repeated"
                                   : "Content-Length with Transfer-Encoding");
    if (f->value_len == 255 || n != 7 || strncasecmp(v, "chunked", 7) != 0)
        return framing_fail(f, "Transfer-Encoding other than chunked");
    f->flags |= FRAMING_F_CHUNKED;
    return 0;
}

/* A header line ended: the two fields that frame the body are judged. */
static int framing_field(framing *f) {
    if (f->name_len == 14 && memcmp(f->name, "content-length", 14) == 0)
        return framing_content_length(f);
    if (f->name_len == 17 && memcmp(f->name, "transfer-encoding", 17) == 0)
        return framing_transfer_encoding(f);
    return 0;
}

/* The empty line: where the body starts, and how long it is. */
static int framing_head(framing *f) {
    if ((f->flags & FRAMING_F_CHUNKED) && (f->flags & FRAMING_F_HTTP10))
        return framing_fail(f, "Transfer-Encoding in an HTTP/1.0 request");
    int body = (f->flags & FRAMING_F_CHUNKED) || f->remaining > 0;
    if (body && f->method != FRAMING_M_BODY)
        return framing_fail(f, "a body on a request whose method has none");
    if (f->flags & FRAMING_F_CHUNKED)
        f->state = FS_SIZE_FIRST;
    else
        f->state = f->remaining > 0 ? FS_BODY : FS_START;
    f->body_at = f->at + 1;
    f->body_len = f->flags & FRAMING_F_CHUNKED ? 0 : f->remaining;
    return 0;
}

static int framing_request_line(framing *f, uint8_t c) {
    if (f->state == FS_METHOD) {
        if (c == ' ') {
            f->method = framing_method(f);
            f->state = FS_LINE;
        } else if (framing_ctl(c)) {
            return framing_fail(f, f->verb_len ? "a control character in the request line"
                                               : "an empty line before a request");
        } else if (f->verb_len < sizeof(f->verb)) {
            f->verb[f->verb_len++] = (char)c;
        } else {
            f->verb_len = 255; /* no method evhttp knows */
        }
        return 0;
    }
    if (f->state == FS_LINE_LF) {
        if (c != '\n')
            return framing_fail(f, "a bare CR in the request line");
        if (memcmp(f->tail, "HTTP/1.0", 8) == 0)
            f->flags |= FRAMING_F_HTTP10;
        f->state = FS_FIELD_START;
        return 0;
    }
    /* FS_LINE stops here only at CR or a control character */
    if (c == '\r') {
        f->state = FS_LINE_LF;
        return 0;
    }
    return framing_fail(f, c == '\n' ? "the request line ends in a bare LF"
                                     : "a control character in the request line");
}

/* The request line from p[i] up to its CR (or a control character, which
 * framing_request_line judges): its last non-space bytes kept in f->tail,
 * where "HTTP/1.0" would be. The index of that byte, or n. */
static size_t framing_line_run(framing *f, const uint8_t *p, size_t i, size_t n) {
    size_t j = i;
    while (j < n && !framing_ctl(p[j]))
        j++;
    char tail[sizeof(f->tail)];
    size_t got = 0;
    for (size_t k = j; k > i && got < sizeof(tail); k--)
        if (p[k - 1] != ' ')
            tail[sizeof(tail) - 1 - got++] = (char)p[k - 1];
    if (got) {
        memmove(f->tail, f->tail + got, sizeof(f->tail) - got);
        memcpy(f->tail + sizeof(f->tail) - got, tail + sizeof(tail) - got, got);
    }
    return j;
}

/* A field name from p[i]: lower-cased into f->name while it fits. The
 * index of the first byte that is not a tchar, or n. */
static size_t framing_name_run(framing *f, const uint8_t *p, size_t i, size_t n) {
    uint8_t t;
    for (; i < n && (t = framing_tchars[p[i]]) != 0; i++) {
        if (f->name_len < sizeof(f->name))
            f->name[f->name_len++] = (char)t;
        else
            f->name_len = 255;
    }
    return i;
}

/* A field value from p[i] up to CR, LF or NUL; kept in f->value only for
 * the fields that frame the body. The index of that byte, or n. */
static size_t framing_value_run(framing *f, const uint8_t *p, size_t i, size_t n) {
    size_t j = i;
    while (j < n && p[j] != '\r' && p[j] != '\n' && p[j] != '\0')
        j++;
    if (f->track) {
        for (size_t k = i; k < j; k++) {
            if (f->value_len < sizeof(f->value))
                f->value[f->value_len++] = (char)p[k];
            else
                f->value_len = 255;
        }
    }
    return j;
}

static int framing_header(framing *f, uint8_t c) {
    switch (f->state) {
    case FS_FIELD_START:
        if (c == '\r') {
            f->state = FS_HEAD_LF;
        } else if (c == ' ' || c == '\t') {
            return framing_fail(f, "a folded header line");
        } else if (!framing_tchars[c]) {
            return framing_fail(f, "a header line that is not NAME: VALUE");
        } else {
            f->name[0] = (char)framing_tchars[c];
            f->name_len = 1;
            f->state = FS_NAME;
        }
        return 0;
    case FS_NAME: /* framing_name_run stopped at c */
        if (c != ':')
            return framing_fail(f, "a header line that is not NAME: VALUE");
        f->track = (f->name_len == 14 && memcmp(f->name, "content-length", 14) == 0) ||
                   (f->name_len == 17 && memcmp(f->name, "transfer-encoding", 17) == 0);
        f->value_len = 0;
        f->state = FS_VALUE;
        return 0;
    case FS_VALUE: /* framing_value_run stopped at c */
        if (c == '\r') {
            f->state = FS_VALUE_LF;
            return 0;
        }
        return framing_fail(f, c ? "a header line ends in a bare LF" : "a NUL in a header line");
    case FS_VALUE_LF:
        if (c != '\n')
            return framing_fail(f, "a bare CR in a header line");
        f->state = FS_FIELD_START;
        return framing_field(f);
    default: /* FS_HEAD_LF */
        if (c != '\n')
            return framing_fail(f, "a bare CR in a header line");
        return framing_head(f);
    }
}

static int framing_chunk_line(framing *f, uint8_t *p) {
    uint8_t c = *p;
    int v = keycodec_hex_digit(c);
    switch (f->state) {
    case FS_SIZE_FIRST:
        if (v < 0)
            return framing_fail(f, "a chunk size that is not 1*HEXDIG");
        f->chunk_size = (uint64_t)v;
        f->digits = 1;
        f->state = FS_SIZE;
        return 0;
    case FS_SIZE:
        if (v >= 0) {
            if (++f->digits > FRAMING_SIZE_DIGITS_MAX)
                return framing_fail(f, "a chunk size of more than 16 digits");
            f->chunk_size = f->chunk_size * 16 + (uint64_t)v;
        } else if (c == ';') {
            *p = ' '; /* evhttp reads the size up to a space (see framing.h) */
            f->state = FS_EXT;
        } else if (c == '\r') {
            f->state = FS_SIZE_LF;
        } else {
            return framing_fail(f, "a chunk size that is not 1*HEXDIG");
        }
        return 0;
    case FS_EXT:
        if (c == '\r')
            f->state = FS_SIZE_LF;
        else if (framing_ctl(c) && c != '\t')
            return framing_fail(f, "a control character in a chunk extension");
        return 0;
    default: /* FS_SIZE_LF */
        if (c != '\n')
            return framing_fail(f, "a chunk size line ends in a bare CR");
        f->remaining = f->chunk_size;
        f->state = f->chunk_size ? FS_DATA : FS_LAST_CR;
        return 0;
    }
}

static int framing_chunk_end(framing *f, uint8_t c) {
    switch (f->state) {
    case FS_DATA_CR:
        if (c != '\r')
            return framing_fail(f, "chunk data not followed by CRLF");
        f->state = FS_DATA_LF;
        return 0;
    case FS_DATA_LF:
        if (c != '\n')
            return framing_fail(f, "chunk data not followed by CRLF");
        f->state = FS_SIZE_FIRST;
        return 0;
    case FS_LAST_CR:
        if (c != '\r')
            return framing_fail(f, "a trailer field after the last chunk");
        f->state = FS_LAST_LF;
        return 0;
    default: /* FS_LAST_LF */
        if (c != '\n')
            return framing_fail(f, "the last chunk not followed by CRLF");
        f->state = FS_START;
        return 0;
    }
}

int framing_in_head(const framing *f) {
    return f->state >= FS_METHOD && f->state <= FS_HEAD_LF;
}

int framing_feed(framing *f, uint8_t *p, size_t n) {
    size_t i = 0;
    int rc = 0;
    while (i < n && rc == 0) {
        switch (f->state) {
        case FS_FAILED:
            return -1;
        case FS_BODY:
        case FS_DATA: {
            size_t take = f->remaining < n - i ? (size_t)f->remaining : n - i;
            f->remaining -= take;
            i += take;
            if (f->remaining == 0)
                f->state = f->state == FS_BODY ? FS_START : FS_DATA_CR;
            continue;
        }
        case FS_START: /* the byte is the method's first */
            framing_start(f, f->offset + i);
            rc = framing_request_line(f, p[i]);
            break;
        case FS_LINE:
            i = framing_line_run(f, p, i, n);
            if (i == n)
                continue;
            rc = framing_request_line(f, p[i]);
            break;
        case FS_NAME:
            i = framing_name_run(f, p, i, n);
            if (i == n)
                continue;
            rc = framing_header(f, p[i]);
            break;
        case FS_VALUE:
            i = framing_value_run(f, p, i, n);
            if (i == n)
                continue;
            rc = framing_header(f, p[i]);
            break;
        case FS_METHOD:
        case FS_LINE_LF:
            rc = framing_request_line(f, p[i]);
            break;
        case FS_FIELD_START:
        case FS_VALUE_LF:
            rc = framing_header(f, p[i]);
            break;
        case FS_HEAD_LF:
            f->at = f->offset + i;
            rc = framing_header(f, p[i]);
            break;
        case FS_SIZE_FIRST:
        case FS_SIZE:
        case FS_EXT:
        case FS_SIZE_LF:
            rc = framing_chunk_line(f, &p[i]);
            break;
        default:
            rc = framing_chunk_end(f, p[i]);
            break;
        }
        i++;
    }
    f->offset += i;
    return rc;
}
