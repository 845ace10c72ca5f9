/* listentry.h: a listing's entry decoded from its stored VersionRecord
 * with only the fields a listing shows (listentry.c): a LIST entry cost
 * 10,100 instructions, 2,400 of them protobuf-c's unpack of every field.
 * Internal to the read component's listings. */
#ifndef OBJLOG_LISTENTRY_H
#define OBJLOG_LISTENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "pagearena.h"
#include "view.h"

/* Fills out (record NULL, in_page 1; key, etag and storage class in
 * page) from the value val of a `versions` or `objects` row of key. 0, or
 * -1 when the value does not decode or out of memory. */
int list_entry_fill(view_version *out, const uint8_t *key, size_t kn, const char *val,
                    size_t vlen, page_arena *page);

#endif
