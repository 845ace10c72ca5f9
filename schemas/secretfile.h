/* secretfile.h: opening a file that holds secrets (the S3 credentials,
 * the JSON API's tokens, Kafka's SASL passwords). Such a file must be
 * readable by its owner only: one that group or others may read is refused
 * unless the caller allows it (objlogd --insecure), and then the caller
 * learns the open bits so it can warn. */
#ifndef OBJLOG_SCHEMAS_SECRETFILE_H
#define OBJLOG_SCHEMAS_SECRETFILE_H

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

/* path opened for reading, its mode checked: the FILE, with *open_mode its
 * group and other permission bits; or NULL with "PATH: problem" in errstr
 * (unreadable; readable by group or others and !allow_open). */
FILE *secretfile_open(const char *path, int allow_open, unsigned *open_mode, char *errstr,
                      size_t errstr_size);
/* The warning to log for a file loaded with open_mode bits under
 * allow_open, into buf[n]: 1, or 0 when there is nothing to say. */
int secretfile_open_warning(const char *path, unsigned open_mode, char *buf, size_t n);

/* The secrets loaded from such a file, swapped whole when it is read again
 * (SIGHUP): a reader holds lock's read lock only while it uses keys, so it
 * sees the old set or the new one, never one being freed. */
typedef struct secretfile_keys {
    void *keys;                  /* the loader's (s3creds, apicreds); NULL none */
    char *path;                  /* owned; NULL: no file configured */
    int allow_open;              /* loaded despite group/other bits (--insecure) */
    pthread_rwlock_t lock;
} secretfile_keys;
/* Puts fresh in force under the write lock and returns the set it
 * replaced, which no reader holds any more: the caller frees it. */
void *secretfile_keys_swap(secretfile_keys *k, void *fresh);

#endif
