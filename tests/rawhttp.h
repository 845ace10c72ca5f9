/* rawhttp.h: HTTP/1.1 over a plain loopback socket, for tests that must
 * send bytes no HTTP client library would (broken framing, control
 * characters in headers) and see exactly what comes back: every answer's
 * status, in order, and whether the server closed the connection.
 *
 * Answers are split by their Content-Length (objlogd frames every answer
 * with a body so); an answer without one has no body (HEAD). No cmocka
 * here: callers assert on what they get. */
#ifndef OBJLOG_TEST_RAWHTTP_H
#define OBJLOG_TEST_RAWHTTP_H

#include <stddef.h>

#define RAW_MAX_ANSWERS 8

typedef struct raw_reply {
    int codes[RAW_MAX_ANSWERS];  /* status of each whole answer, in order */
    size_t body[RAW_MAX_ANSWERS]; /* offset of each answer's body in text */
    int n;                       /* whole answers read */
    int closed;                  /* the server closed the connection */
    long long ms;                /* how long the reading took */
    char text[1 << 16];          /* everything read, NUL-terminated */
    size_t len;
} raw_reply;

/* A blocking socket connected to 127.0.0.1:port; -1 on failure. */
int raw_connect(int port);
/* All n bytes; 0, or -1 when the peer is gone. */
int raw_send(int fd, const void *p, size_t n);
/* Reads into r until `answers` whole answers came and, with wait_close,
 * the server closed; or until max_ms passed. r is reset first. */
void raw_collect(int fd, raw_reply *r, int answers, int wait_close, int max_ms);
/* Connects, sends n bytes of req, collects as raw_collect and closes.
 * -1 when the connection failed. */
int raw_exchange(int port, const void *req, size_t n, raw_reply *r, int answers,
                 int wait_close, int max_ms);
/* 1 when the server has closed fd (a read sees EOF or a reset) within
 * wait_ms; 0 if it is still open (bytes it sends are discarded). */
int raw_closed_within(int fd, int wait_ms);
/* Monotonic milliseconds. */
long long raw_now_ms(void);

#endif
