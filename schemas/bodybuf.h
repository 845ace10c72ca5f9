/* bodybuf.h: an HTTP answer's body as it arrives in pieces (libcurl's
 * CURLOPT_WRITEFUNCTION), for every component that asks objlogd or a
 * peer over HTTP: the producer library, the cluster's polls, the bench.
 * No libcurl here: the callback's shape is plain C.
 *
 * Invariant: a bodybuf owns its data, which is NUL-terminated once
 * anything arrived, and never holds more than max bytes (0: no bound); a
 * piece past the bound is refused whole (libcurl then fails the
 * transfer), so a body is either whole or reported as failed. */
#ifndef OBJLOG_BODYBUF_H
#define OBJLOG_BODYBUF_H

#include <stddef.h>

typedef struct bodybuf {
    char *data;                  /* NULL until the first byte */
    size_t len;
    size_t max;                  /* 0: unbounded */
} bodybuf;

/* Appends size * nmemb bytes of data to the bodybuf arg: that count, or 0
 * (out of memory, or past max). */
size_t bodybuf_write(char *data, size_t size, size_t nmemb, void *arg);
void bodybuf_free(bodybuf *b);

#endif
