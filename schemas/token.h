/* token.h: read-after-write tokens (docs/ARCHITECTURE.md,
 * "How a write flows"). A token is opaque text that
 * names, for each partition a write touched, the offset the reader must see
 * applied: "<partition>.<offset>" items joined by '_' (URL-safe, so it can
 * sit in a path or header). Parsing is strict: anything else is rejected, so
 * a forged token gets a 400, never a wrong wait. */
#ifndef OBJLOG_TOKEN_H
#define OBJLOG_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define TOKEN_MAX_PARTS 64

typedef struct token_part {
    int32_t partition;
    int64_t offset;
} token_part;

/* Writes the token into out; returns its length or -1 if it does not fit. */
int token_format(const token_part *parts, int n, char *out, size_t out_size);
/* Parses text; returns the number of parts (>= 1) or -1 if invalid. */
int token_parse(const char *text, token_part *parts, int max_parts);

#endif
