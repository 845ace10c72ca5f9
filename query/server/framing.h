/* framing.h: the exact framing of HTTP/1.1 requests (RFC 9112), checked on
 * a connection's bytes as they arrive, before evhttp parses them (conn.c).
 *
 * evhttp 2.1 frames leniently: the first of two Content-Length fields
 * wins, Transfer-Encoding other than exactly "chunked" falls back to
 * Content-Length or no body, a chunk size goes through strtoll (so "0x2",
 * " 2", "+2" and "2 junk" are sizes), empty lines between chunks are
 * skipped and chunk data need not end in CRLF, a bare LF ends any line,
 * folded header lines are joined, trailer fields join the headers. A
 * proxy that frames the same bytes strictly sees other requests than
 * objlogd: request smuggling. This checker accepts only what frames one
 * way, and for those evhttp's reading is the same as its own; anything
 * else is a violation, and conn.c answers 400 and closes the connection
 * before evhttp acts on the request.
 *
 * Accepted: a request line and header lines ending in CRLF, with no NUL,
 * bare CR or bare LF in them, field names of token characters, no folded
 * lines; at most one Content-Length (1*DIGIT, optional whitespace around
 * it) or one Transfer-Encoding (exactly "chunked", any case), not both,
 * no Transfer-Encoding in HTTP/1.0, no body on a method evhttp reads none
 * for (HEAD, TRACE, unknown); chunks as 1*HEXDIG (at most 16 digits)
 * [";" ext] CRLF data CRLF, ext free of control characters but HTAB; the
 * last chunk followed by CRLF alone (trailer fields are refused: evhttp
 * would add them to the request's headers).
 *
 * evhttp 2.1 refuses chunk extensions (strtoll stops at ';'), yet ignores
 * what follows a space after the size: the checker turns the ';' of an
 * extension into a space in place, so valid extensions are served. */
#ifndef OBJLOG_QUERY_FRAMING_H
#define OBJLOG_QUERY_FRAMING_H

#include <stddef.h>
#include <stdint.h>

typedef struct framing {
    uint64_t offset;             /* bytes checked so far on the connection */
    uint64_t msg_start;          /* where the request now read began */
    uint64_t remaining;          /* body or chunk bytes still to come */
    uint64_t chunk_size;
    uint64_t at;                 /* the offset of the byte now judged */
    uint64_t body_at;            /* where the body of the last head read begins */
    uint64_t body_len;           /* its Content-Length (0: none, or chunked) */
    const char *error;           /* the rule broken; sticky once set */
    uint8_t state;
    uint8_t method;              /* FRAMING_M_* of the request now read */
    uint8_t flags;               /* FRAMING_F_* of the request now read */
    uint8_t digits;              /* of the chunk size so far */
    uint8_t name_len;            /* of name, 255 once longer than it */
    uint8_t value_len;           /* of value, 255 once longer than it */
    uint8_t track;               /* the field now read frames the body */
    uint8_t verb_len;
    char verb[8];                /* the method's first bytes */
    char tail[8];                /* the request line's last non-space bytes */
    char name[20];               /* the header field name, lower-cased */
    char value[40];              /* Content-Length's or Transfer-Encoding's */
} framing;

/* What a request's method means to evhttp's reading of its body. */
enum { FRAMING_M_BODY = 0, FRAMING_M_HEAD, FRAMING_M_NONE };

void framing_init(framing *f);
/* Checks the next n bytes of the connection, p[0..n): 0, or -1 once a
 * request breaks a rule (f->error names it, f->msg_start is where that
 * request began, f->method is its method). Bytes past a violation are not
 * looked at; later calls return -1 at once. May turn a chunk extension's
 * ';' into a space (see the top). */
int framing_feed(framing *f, uint8_t *p, size_t n);
/* 1 while the request now read is in its head (request line, header
 * lines), 0 once its body, or nothing, follows. */
int framing_in_head(const framing *f);

#endif
