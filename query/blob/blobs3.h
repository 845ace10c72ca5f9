/* blobs3.h: the blob store's remote backend, an S3-compatible store
 * (objlogd --blob-s3 URL) reached with libcurl and its SigV4 (blobs3.c).
 * Internal to query/blob: blobdir.c spools a write's bytes locally and
 * hands the finished file here. */
#ifndef OBJLOG_QUERY_BLOBS3_H
#define OBJLOG_QUERY_BLOBS3_H

#include <stddef.h>
#include <stdint.h>

typedef struct blobs3 blobs3;

/* url: http(s)://HOST[:PORT]/BUCKET (path style), creds: a file of one
 * line "ACCESS_KEY_ID SECRET [REGION]" that group and others may not read
 * (unless allow_open). NULL with errstr. */
blobs3 *blobs3_new(const char *url, const char *creds, int allow_open, char *errstr,
                   size_t errstr_size);
void blobs3_free(blobs3 *s);
const char *blobs3_url(const blobs3 *s);
/* The file at path as blob id (its SHA-256, sent as the signed payload
 * hash, so the store checks the bytes too): 0, or -1 with errstr. */
int blobs3_put_file(blobs3 *s, const char *id, const char *path, char *errstr, size_t n);
/* Bytes [off, off + len) of blob id written to fd: 0; 1 no such blob; -1. */
int blobs3_get(blobs3 *s, const char *id, uint64_t off, uint64_t len, int fd, char *errstr,
               size_t n);
/* The blob's size: 0, 1 no such blob, -1. */
int blobs3_stat(blobs3 *s, const char *id, uint64_t *size, char *errstr, size_t n);
/* Removes it: 0 (also when it was not there), -1. */
int blobs3_delete(blobs3 *s, const char *id, char *errstr, size_t n);

#endif
