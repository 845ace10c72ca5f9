/* s3xmlr.h: S3's XML request bodies read with expat (s3xmlr.c), for the
 * handlers that take one (s3write.c, s3attr.c, s3notify.c). Internal to
 * query/s3. */
#ifndef OBJLOG_S3XMLR_H
#define OBJLOG_S3XMLR_H

#include <stddef.h>

#include <expat.h>

#include "s3.h"
#include "server.h"

#define S3X_TEXT_MAX 1024        /* the longest text an element may hold (a key) */
/* Elements deeper are not seen. The deepest body is a notification
 * configuration's NotificationConfiguration/TopicConfiguration/Filter/
 * S3Key/FilterRule/Name (6); one more so that a reader that refuses
 * unknown elements sees any below it (s3notify.c). */
#define S3X_DEPTH 7

/* The parse as a callback sees it: elements down to S3X_DEPTH by local
 * name (a namespace prefix dropped), each one's text, the callback at each
 * start (end 0) and end (end 1), with the element's attributes at a start. */
typedef struct s3x s3x;
typedef int s3x_elem_cb(s3x *x, int end);
struct s3x {
    XML_Parser p;
    int depth;
    char path[S3X_DEPTH + 1][64]; /* path[1] the root ... path[depth] */
    char text[S3X_TEXT_MAX + 1];
    size_t text_len;
    int text_long;               /* the element's text exceeded S3X_TEXT_MAX */
    const char **attrs;          /* at a start: name, value, ..., NULL */
    s3x_elem_cb *cb;
    void *arg;
    const char *error;           /* why the body does not validate */
};

/* Whether the element started or ended is at path ("Root/Child/Leaf"). */
int s3x_at(const s3x *x, const char *path);
/* A start whose root is not root: -1 (the parse stops, MalformedXML). */
int s3x_root(s3x *x, const char *root, int end);
/* The value of attribute name (its local name) at a start, else NULL. */
const char *s3x_attr(const s3x *x, const char *name);
/* Parses r's body with cb: 0, or -1 after replying MalformedXML. */
int s3x_parse(http_ctx *c, const s3_request *r, s3x_elem_cb *cb, void *arg);
void s3x_malformed(http_ctx *c, const char *why);

#endif
