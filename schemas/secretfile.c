/* secretfile.c: see secretfile.h. The mode is read from the open file
 * (fstat), not the path, so what is checked is what is read. */
#include "secretfile.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

int secretfile_open_warning(const char *path, unsigned open_mode, char *buf, size_t n) {
    if (!open_mode)
        return 0;
    snprintf(buf, n, "%s: group or others may read it (mode bits %03o) and it holds secrets; "
                     "loaded because of --insecure: chmod 600 it", path, open_mode);
    return 1;
}

FILE *secretfile_open(const char *path, int allow_open, unsigned *open_mode, char *errstr,
                      size_t errstr_size) {
    FILE *f = fopen(path, "r");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(errstr, errstr_size, "%s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return NULL;
    }
    *open_mode = (unsigned)(st.st_mode & 077);
    if (!*open_mode || allow_open)
        return f;
    snprintf(errstr, errstr_size,
             "%s: group or others may read it (mode %04o) and it holds secrets: "
             "chmod 600 it (or pass --insecure)",
             path, (unsigned)(st.st_mode & 07777));
    fclose(f);
    return NULL;
}

void *secretfile_keys_swap(secretfile_keys *k, void *fresh) {
    pthread_rwlock_wrlock(&k->lock);
    void *old = k->keys;
    k->keys = fresh;
    pthread_rwlock_unlock(&k->lock);
    return old;
}
