/* uiassets.h: the page's files as embed.cmake compiles them in (the
 * generated ui_assets.c), shared by ui.c and that file only.
 *
 * Invariant: data holds size bytes and one NUL after them; names are
 * unique, sorted, without '/'; etag is a quoted strong validator that
 * changes whenever the bytes do (a prefix of their SHA-256). */
#ifndef OBJLOG_QUERY_UIASSETS_H
#define OBJLOG_QUERY_UIASSETS_H

#include <stddef.h>

typedef struct ui_asset {
    const char *name;            /* "app.js": served at /ui/app.js */
    const char *content_type;
    const char *etag;            /* "\"0123abcd...\"" */
    const unsigned char *data;
    size_t size;
} ui_asset;

extern const ui_asset ui_assets[];
extern const size_t ui_nassets;

#endif
