/* pagearena.c: a listing page's bump allocator (pagearena.h). Chunks of
 * PAGE_ARENA_CHUNK bytes (or one of an oversized request's size) in a
 * list; nothing is freed before the page. Invariant: every pointer it
 * returned stays valid until page_arena_free. */
#include "pagearena.h"

#include <string.h>

#include <stdint.h>
#include <stdlib.h>

#define PAGE_ARENA_CHUNK (64 * 1024)

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} chunk;

struct page_arena {
    chunk *head;
    ProtobufCAllocator pb;
};

static void *arena_pb_alloc(void *data, size_t n) { return page_arena_alloc(data, n); }

static void arena_pb_free(void *data, void *p) {
    (void)data;
    (void)p;
}

page_arena *page_arena_new(void) {
    page_arena *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->pb = (ProtobufCAllocator){.alloc = arena_pb_alloc, .free = arena_pb_free,
                                 .allocator_data = a};
    return a;
}

void page_arena_free(page_arena *a) {
    if (!a)
        return;
    for (chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

void *page_arena_alloc(page_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!n)
        n = 16;
    chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > PAGE_ARENA_CHUNK ? n : PAGE_ARENA_CHUNK;
        c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

ProtobufCAllocator *page_arena_pb(page_arena *a) { return &a->pb; }

uint8_t *page_arena_strndup(page_arena *a, const void *src, size_t n) {
    uint8_t *d = page_arena_alloc(a, n + 1);
    if (!d)
        return NULL;
    memcpy(d, src, n);
    d[n] = 0;
    return d;
}
