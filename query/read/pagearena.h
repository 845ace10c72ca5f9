/* pagearena.h: the memory of one listing page (pagearena.c): every entry's
 * decoded record and key come from one bump allocator that the page frees
 * at once, instead of a malloc per protobuf field and a free_unpacked per
 * entry (about 4,000 of the 17,700 instructions a LIST entry cost). Used
 * by the listings of viewlist.c. */
#ifndef OBJLOG_PAGEARENA_H
#define OBJLOG_PAGEARENA_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

typedef struct page_arena page_arena;

page_arena *page_arena_new(void);
/* Frees everything allocated from a (NULL: nothing). */
void page_arena_free(page_arena *a);
/* n bytes, 16-aligned, valid until page_arena_free; NULL out of memory. */
void *page_arena_alloc(page_arena *a, size_t n);
/* A NUL-terminated copy of src[0..n) in a (n bytes plus the NUL), or NULL
 * out of memory. */
uint8_t *page_arena_strndup(page_arena *a, const void *src, size_t n);
/* protobuf-c's allocator over a: unpack into the page; free is a no-op
 * (never call free_unpacked on what it made). */
ProtobufCAllocator *page_arena_pb(page_arena *a);

#endif
