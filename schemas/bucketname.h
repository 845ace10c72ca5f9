/* bucketname.h: S3's naming rules for general purpose buckets, in one place
 * for the producer library (a write to a name that breaks one never reaches
 * the log) and the query service (400 InvalidBucketName before a route runs),
 * so both APIs and every frontend agree on what a bucket name is.
 *
 * The rules, as S3 documents them: 3 to 63 characters of a-z, 0-9, '.' and
 * '-'; a letter or digit at both ends; no two adjacent periods and no period
 * next to a hyphen; not four groups of digits like an IP address; none of the
 * reserved prefixes (xn--, sthree-, amzn-s3-demo-) or suffixes (-s3alias,
 * --ol-s3, .mrap, --x-s3, --table-s3). */
#ifndef OBJLOG_BUCKETNAME_H
#define OBJLOG_BUCKETNAME_H

#include <stddef.h>

/* NULL when b[0..n) is a bucket name; else the rule it breaks, as a clause
 * ("must not contain two adjacent periods"). b may hold NUL bytes. */
const char *bucketname_error(const char *b, size_t n);

#endif
