/* rawhttp.c: see rawhttp.h. */
#define _GNU_SOURCE
#include "rawhttp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

long long raw_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int raw_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int raw_send(int fd, const void *p, size_t n) {
    const char *s = p;
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The whole answers in r->text from r->n on: their codes and bodies. */
static void raw_split(raw_reply *r, size_t *done) {
    while (r->n < RAW_MAX_ANSWERS && *done < r->len) {
        const char *start = r->text + *done;
        const char *end = strstr(start, "\r\n\r\n");
        if (!end || strncmp(start, "HTTP/1.", 7) != 0)
            return;
        const char *cl = strcasestr(start, "\r\nContent-Length:");
        size_t body = (size_t)(end + 4 - r->text);
        size_t want = cl && cl < end ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
        if (r->len < body + want)
            return;
        r->codes[r->n] = atoi(start + 9);
        r->body[r->n] = body;
        r->n++;
        *done = body + want;
    }
}

void raw_collect(int fd, raw_reply *r, int answers, int wait_close, int max_ms) {
    memset(r->codes, 0, sizeof(r->codes));
    r->n = 0;
    r->closed = 0;
    r->len = 0;
    r->text[0] = '\0';
    long long t0 = raw_now_ms(), end = t0 + max_ms;
    size_t done = 0;
    while (!r->closed && (r->n < answers || wait_close)) {
        int left = (int)(end - raw_now_ms());
        if (left <= 0)
            break;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, left) <= 0)
            break;
        ssize_t got = recv(fd, r->text + r->len, sizeof(r->text) - 1 - r->len, 0);
        if (got <= 0) {
            r->closed = 1;
            break;
        }
        r->len += (size_t)got;
        r->text[r->len] = '\0';
        raw_split(r, &done);
        if (r->len + 1 >= sizeof(r->text))
            break;
    }
    r->ms = raw_now_ms() - t0;
}

int raw_exchange(int port, const void *req, size_t n, raw_reply *r, int answers,
                 int wait_close, int max_ms) {
    int fd = raw_connect(port);
    if (fd < 0)
        return -1;
    if (raw_send(fd, req, n) < 0) {
        /* closed while sending: what it answered is still worth reading */
    }
    raw_collect(fd, r, answers, wait_close, max_ms);
    close(fd);
    return 0;
}

int raw_closed_within(int fd, int wait_ms) {
    long long end = raw_now_ms() + wait_ms;
    char buf[4096];
    for (;;) {
        int left = (int)(end - raw_now_ms());
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, left) <= 0)
            return 0;
        if (recv(fd, buf, sizeof(buf), 0) <= 0)
            return 1;
    }
}
