/* token.c: see token.h. */
#include "token.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int token_format(const token_part *parts, int n, char *out, size_t out_size) {
    size_t len = 0;
    if (out_size)
        out[0] = '\0';
    for (int i = 0; i < n; i++) {
        int w = snprintf(out + len, out_size - len, "%s%d.%lld", i ? "_" : "",
                         (int)parts[i].partition, (long long)parts[i].offset);
        if (w < 0 || (size_t)w >= out_size - len)
            return -1;
        len += (size_t)w;
    }
    return (int)len;
}

static int parse_num(const char **p, long long max, long long *v) {
    const char *s = *p;
    long long x = 0;
    if (*s < '0' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9') {
        x = x * 10 + (*s - '0');
        if (x > max)
            return -1;
        s++;
    }
    *v = x;
    *p = s;
    return 0;
}

int token_parse(const char *text, token_part *parts, int max_parts) {
    const char *p = text;
    int n = 0;
    if (!text || !*text)
        return -1;
    for (;;) {
        long long part, off;
        if (n >= max_parts)
            return -1;
        if (parse_num(&p, 65535, &part) < 0 || *p++ != '.')
            return -1;
        if (parse_num(&p, (1LL << 48) - 1, &off) < 0)
            return -1;
        parts[n].partition = (int32_t)part;
        parts[n].offset = off;
        n++;
        if (*p == '\0')
            return n;
        if (*p++ != '_')
            return -1;
    }
}
