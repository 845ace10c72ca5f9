/* bodybuf.c: see bodybuf.h. */
#include "bodybuf.h"

#include <stdlib.h>
#include <string.h>

size_t bodybuf_write(char *data, size_t size, size_t nmemb, void *arg) {
    bodybuf *b = arg;
    size_t n = size * nmemb;
    if (b->max && b->len + n > b->max)
        return 0;
    char *nb = realloc(b->data, b->len + n + 1);
    if (!nb)
        return 0;
    memcpy(nb + b->len, data, n);
    b->data = nb;
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

void bodybuf_free(bodybuf *b) {
    free(b->data);
    b->data = NULL;
    b->len = 0;
}
