/* s3daemon.c: see s3daemon.h. */
#include "s3daemon.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int s3daemon_start(s3daemon *d, const char *creds, char *const extra[]) {
    char objlogd[512], data[300], addr[64], path[300], ready[8];
    memset(d, 0, sizeof(*d));
    if (proc_tmpdir(d->dir, sizeof(d->dir)) < 0)
        return -1;
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    snprintf(data, sizeof(data), "%s/data", d->dir);
    snprintf(path, sizeof(path), "%s/s3-credentials", d->dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs(creds, f) < 0 || fclose(f) != 0 || chmod(path, 0600) != 0)
        return -1;
    char *argv[32] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                      "--s3-listen", "127.0.0.1:0", "--s3-credentials", path};
    int n = 10, redirect = 0, anonymous = 1;
    for (int i = 0; extra && extra[i] && n < 28; i++) {
        if (strcmp(extra[i], S3DAEMON_SIGNED_ONLY) == 0) {
            anonymous = 0;
            continue;
        }
        redirect |= strcmp(extra[i], "--s3-blob-url") == 0 || strcmp(extra[i], "--blob-s3") == 0;
        argv[n++] = extra[i];
    }
    if (anonymous)
        argv[n++] = "--s3-anonymous";
    if (!redirect) {
        snprintf(d->blobs, sizeof(d->blobs), "%s/blobs", d->dir);
        argv[n++] = "--blob-dir";
        argv[n++] = d->blobs;
    }
    argv[n] = NULL;
    d->p = proc_spawn(argv, NULL);
    if (!d->p || proc_wait_line(d->p, "OBJLOG_LISTEN=", addr, sizeof(addr), 60000) < 0)
        return -1;
    snprintf(d->json, sizeof(d->json), "http://%s", addr);
    if (proc_wait_line(d->p, "OBJLOG_S3_LISTEN=", addr, sizeof(addr), 10000) < 0 ||
        proc_wait_line(d->p, "OBJLOG_READY", ready, sizeof(ready), 10000) < 0)
        return -1;
    snprintf(d->s3, sizeof(d->s3), "http://%s", addr);
    d->h = httpc_new(d->json);
    return 0;
}

int s3daemon_stop(s3daemon *d) {
    int rc = d->p && proc_stop(d->p, 15000) == 0 ? 0 : -1;
    if (d->h)
        httpc_destroy(d->h);
    if (d->dir[0])
        proc_rmtree(d->dir);
    return rc;
}
