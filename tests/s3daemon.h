/* s3daemon.h: an `objlogd --embedded` serving both the JSON API and the S3
 * endpoint (anonymous allowed, plus the keys of a credentials file) on
 * 127.0.0.1, for the tests that drive real S3 clients against it. The
 * daemon is a child of the test (proc.h): stopped by s3daemon_stop, and
 * killed with the test if it fails first. */
#ifndef OBJLOG_TEST_S3DAEMON_H
#define OBJLOG_TEST_S3DAEMON_H

#include "httpc.h"
#include "proc.h"

typedef struct s3daemon {
    char dir[256];
    proc *p;
    char blobs[300]; /* its --blob-dir ("" with --s3-blob-url among the flags) */
    char s3[128];    /* http://127.0.0.1:PORT of the S3 listener */
    char json[128];  /* the JSON API's */
    httpc *h;        /* a client of the JSON API */
} s3daemon;

/* Starts it in a new temp dir with creds (the credentials file's text)
 * and the extra flags (NULL-ended, may be NULL), keeping object bytes in
 * DIR/blobs unless the flags put them elsewhere (--s3-blob-url,
 * --blob-s3); waits until
 * it is ready.
 * 0, or -1 (s3daemon_stop still cleans up). */
int s3daemon_start(s3daemon *d, const char *creds, char *const extra[]);
/* Among the extra flags: no --s3-anonymous (an unsigned request owns
 * nothing, and gets what ACLs grant everyone). */
#define S3DAEMON_SIGNED_ONLY "(signed only)"
/* Stops it (SIGTERM; 0 when it exits cleanly) and removes its dir. */
int s3daemon_stop(s3daemon *d);

#endif
