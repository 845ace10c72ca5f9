/* secretfile.h: opening a file that holds secrets (the S3 credentials,
 * the JSON API's tokens, Kafka's SASL passwords). Such a file must be
 * readable by its owner only: one that group or others may read is refused
 * unless the caller allows it (objlogd --insecure), and then the caller
 * learns the open bits so it can warn. */
#ifndef OBJLOG_SCHEMAS_SECRETFILE_H
#define OBJLOG_SCHEMAS_SECRETFILE_H

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

#endif
