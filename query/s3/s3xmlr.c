/* s3xmlr.c: S3's XML request bodies (PutBucketVersioning,
 * CompleteMultipartUpload, DeleteObjects, the tagging and ACL bodies,
 * PutBucketNotificationConfiguration) read with expat into callbacks
 * that see each element by its path.
 *
 * Invariant: a DTD stops the parse (S3's bodies have none, and without
 * one no entity can expand), and no element's text grows past
 * S3X_TEXT_MAX: a body cannot make the reader allocate by its size. */
#include "core.h"
#include "s3xmlr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void s3x_malformed(http_ctx *c, const char *why) {
    http_reply_error(c, 400, "MalformedXML",
                     "The XML you provided was not well-formed or did not validate "
                     "against our published schema: %s", why);
}

int s3x_at(const s3x *x, const char *path) {
    const char *p = path;
    for (int i = 1; i <= x->depth; i++) {
        size_t n = strcspn(p, "/");
        if (i > S3X_DEPTH || strlen(x->path[i]) != n || strncmp(x->path[i], p, n) != 0)
            return 0;
        p += n;
        if (i < x->depth && *p++ != '/')
            return 0;
    }
    return *p == '\0';
}

const char *s3x_attr(const s3x *x, const char *name) {
    for (int i = 0; x->attrs && x->attrs[i]; i += 2) {
        const char *local = strrchr(x->attrs[i], ':');
        if (strcmp(local ? local + 1 : x->attrs[i], name) == 0)
            return x->attrs[i + 1];
    }
    return NULL;
}

static void s3x_stop(s3x *x, const char *why) {
    if (!x->error)
        x->error = why;
    XML_StopParser(x->p, XML_FALSE);
}

static void XMLCALL s3x_start(void *ud, const XML_Char *name, const XML_Char **attrs) {
    s3x *x = ud;
    const char *local = strrchr(name, ':');
    local = local ? local + 1 : name;
    x->depth++;
    x->text_len = 0;
    x->text_long = 0;
    if (x->depth > S3X_DEPTH)
        return;
    snprintf(x->path[x->depth], sizeof(x->path[0]), "%s", local);
    x->attrs = attrs;
    int rc = x->cb(x, 0);
    x->attrs = NULL;
    if (rc < 0)
        XML_StopParser(x->p, XML_FALSE);
}

static void XMLCALL s3x_end(void *ud, const XML_Char *name) {
    (void)name;
    s3x *x = ud;
    x->text[x->text_len] = '\0';
    if (x->depth <= S3X_DEPTH && x->cb(x, 1) < 0)
        XML_StopParser(x->p, XML_FALSE);
    x->depth--;
    x->text_len = 0;
}

static void XMLCALL s3x_chars(void *ud, const XML_Char *s, int len) {
    s3x *x = ud;
    if (x->text_len + (size_t)len > S3X_TEXT_MAX) {
        x->text_long = 1;
        return;
    }
    memcpy(x->text + x->text_len, s, (size_t)len);
    x->text_len += (size_t)len;
}

static void XMLCALL s3x_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                                const XML_Char *pubid, int internal) {
    (void)name, (void)sysid, (void)pubid, (void)internal;
    s3x_stop(ud, "a DTD is not accepted");
}

int s3x_parse(http_ctx *c, const s3_request *r, s3x_elem_cb *cb, void *arg) {
    s3x *x = calloc(1, sizeof(*x));
    if (!x || !(x->p = XML_ParserCreate("UTF-8"))) {
        free(x);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    x->cb = cb;
    x->arg = arg;
    XML_SetUserData(x->p, x);
    XML_SetElementHandler(x->p, s3x_start, s3x_end);
    XML_SetCharacterDataHandler(x->p, s3x_chars);
    XML_SetStartDoctypeDeclHandler(x->p, s3x_doctype);
    int ok = r->body_len > 0 &&
             XML_Parse(x->p, (const char *)r->body, (int)r->body_len, XML_TRUE) ==
                 XML_STATUS_OK;
    if (!ok) {
        char why[160];
        if (x->error)
            snprintf(why, sizeof(why), "%s", x->error);
        else if (r->body_len == 0)
            snprintf(why, sizeof(why), "the body is empty");
        else
            snprintf(why, sizeof(why), "line %lu: %s",
                     (unsigned long)XML_GetCurrentLineNumber(x->p),
                     XML_ErrorString(XML_GetErrorCode(x->p)));
        s3x_malformed(c, why);
    }
    XML_ParserFree(x->p);
    free(x);
    return ok ? 0 : -1;
}

int s3x_root(s3x *x, const char *root, int end) {
    if (end || x->depth != 1 || strcmp(x->path[1], root) == 0)
        return 0;
    x->error = "unexpected root element";
    return -1;
}
