/* nrecord.h: a change-feed record in S3's event message format (one
 * record per message, {"Records":[...]}), as the notifier sends it to a
 * Kafka topic or a webhook. Not public outside query/notify. */
#ifndef OBJLOG_NRECORD_H
#define OBJLOG_NRECORD_H

#include <stddef.h>

#include "objlog.pb-c.h"

/* The record as S3's JSON (malloc'd, NUL-terminated; *n its length), or
 * NULL out of memory. region: S3's awsRegion. */
char *nrecord_json(const Objlog__FeedRecord *r, const char *region, size_t *n);

/* A BlobReleased record (objlog's own, no S3 equivalent):
 * {"eventName":"objlog:BlobReleased","blobId","bucket","key","versionId",
 * "uploadId","sequencer","eventTime"}, the key as it is (JSON-escaped).
 * malloc'd, *n its length; NULL out of memory. */
char *nrecord_release_json(const Objlog__FeedRecord *r, size_t *n);

/* The key as S3 writes it in a record: URL-encoded (a space as '+', '/'
 * and unreserved characters as they are, every other byte %XX). out holds
 * 3 * n + 1 bytes. */
void nrecord_key_encode(const uint8_t *key, size_t n, char *out);

/* The Kafka message key of a record: "bucket/key" (malloc'd, *kn), so
 * every record of a key goes to one partition of the target topic. */
char *nrecord_kafka_key(const Objlog__FeedRecord *r, size_t *kn);

#endif
