/* syncwrite.c: the synchronous wrappers of libobjlog_producer's writes
 * (objlog_producer.h, the *_sync calls): each issues the asynchronous
 * call with a callback that signals a condition variable of its own, and
 * waits for it.
 *
 * Invariant: a wrapper returns only after its callback ran, so the result
 * it fills is complete and nothing of the call is left behind. */
#include "objlog_producer.h"
#include "writeop.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- synchronous wrappers: one condvar per call ---- */

typedef struct sync_wait {
    pthread_mutex_t m;
    pthread_cond_t c;
    int done;
    objlog_write_result *res;
} sync_wait;

static void sync_cb(const objlog_write_result *r, void *opaque) {
    sync_wait *w = opaque;
    pthread_mutex_lock(&w->m);
    *w->res = *r;
    w->done = 1;
    pthread_cond_signal(&w->c);
    pthread_mutex_unlock(&w->m);
}

/* -1 (errstr filled, nothing sent) on a completion callback's thread. */
static int sync_init(sync_wait *w, objlog_write_result *res, char *errstr,
                     size_t errstr_size) {
    if (writeop_in_callback_refused("a *_sync write", errstr, errstr_size))
        return -1;
    pthread_mutex_init(&w->m, NULL);
    pthread_cond_init(&w->c, NULL);
    w->done = 0;
    w->res = res;
    return 0;
}

/* rc is the async call's result: wait only if it was accepted. */
static int sync_finish(sync_wait *w, int rc) {
    pthread_mutex_lock(&w->m);
    while (rc == 0 && !w->done)
        pthread_cond_wait(&w->c, &w->m);
    pthread_mutex_unlock(&w->m);
    pthread_cond_destroy(&w->c);
    pthread_mutex_destroy(&w->m);
    return rc;
}

int objlog_producer_create_bucket_sync(objlog_producer *p, const char *bucket,
                                       const char *tenant,
                                       objlog_versioning versioning,
                                       const objlog_write_opts *opts,
                                       objlog_write_result *res, char *errstr,
                                       size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_create_bucket(
                               p, bucket, tenant, versioning, opts, sync_cb,
                               &w, errstr, errstr_size));
}

int objlog_producer_put_object_sync(objlog_producer *p, const char *bucket,
                                    const char *key, size_t key_len,
                                    const objlog_object_meta *meta,
                                    const objlog_write_opts *opts,
                                    objlog_write_result *res, char *errstr,
                                    size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_put_object(p, bucket, key, key_len,
                                                      meta, opts, sync_cb, &w,
                                                      errstr, errstr_size));
}

int objlog_producer_delete_object_sync(objlog_producer *p, const char *bucket,
                                       const char *key, size_t key_len,
                                       const char *version_id,
                                       const objlog_write_opts *opts,
                                       objlog_write_result *res, char *errstr,
                                       size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_delete_object(
                               p, bucket, key, key_len, version_id, opts,
                               sync_cb, &w, errstr, errstr_size));
}

int objlog_producer_create_bucket_ex_sync(objlog_producer *p,
                                          const char *bucket,
                                          const objlog_bucket_conf *conf,
                                          const objlog_write_opts *opts,
                                          objlog_write_result *res,
                                          char *errstr, size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_create_bucket_ex(
                               p, bucket, conf, opts, sync_cb, &w, errstr,
                               errstr_size));
}

int objlog_producer_set_versioning_sync(objlog_producer *p, const char *bucket,
                                        objlog_versioning v,
                                        const objlog_write_opts *opts,
                                        objlog_write_result *res, char *errstr,
                                        size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_set_versioning(
                               p, bucket, v, opts, sync_cb, &w, errstr,
                               errstr_size));
}

int objlog_producer_delete_bucket_sync(objlog_producer *p, const char *bucket,
                                       const objlog_write_opts *opts,
                                       objlog_write_result *res, char *errstr,
                                       size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_delete_bucket(
                               p, bucket, opts, sync_cb, &w, errstr,
                               errstr_size));
}

int objlog_producer_create_upload_sync(objlog_producer *p, const char *bucket,
                                       const char *key, size_t key_len,
                                       const objlog_object_meta *meta,
                                       const objlog_write_opts *opts,
                                       objlog_write_result *res, char *errstr,
                                       size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_create_upload(
                               p, bucket, key, key_len, meta, opts, sync_cb,
                               &w, errstr, errstr_size));
}

int objlog_producer_upload_part_sync(objlog_producer *p, const char *bucket,
                                     const char *key, size_t key_len,
                                     const char *upload_id,
                                     uint32_t part_number, uint64_t size,
                                     const char *etag, const char *blob_id,
                                     const objlog_write_opts *opts,
                                     objlog_write_result *res, char *errstr,
                                     size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_upload_part(
                               p, bucket, key, key_len, upload_id,
                               part_number, size, etag, blob_id, opts,
                               sync_cb, &w, errstr, errstr_size));
}

int objlog_producer_complete_upload_sync(objlog_producer *p,
                                         const char *bucket, const char *key,
                                         size_t key_len, const char *upload_id,
                                         const objlog_completed_part *parts,
                                         size_t n_parts,
                                         const objlog_write_opts *opts,
                                         objlog_write_result *res,
                                         char *errstr, size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_complete_upload(
                               p, bucket, key, key_len, upload_id, parts,
                               n_parts, opts, sync_cb, &w, errstr,
                               errstr_size));
}

int objlog_producer_abort_upload_sync(objlog_producer *p, const char *bucket,
                                      const char *key, size_t key_len,
                                      const char *upload_id,
                                      const objlog_write_opts *opts,
                                      objlog_write_result *res, char *errstr,
                                      size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_abort_upload(
                               p, bucket, key, key_len, upload_id, opts,
                               sync_cb, &w, errstr, errstr_size));
}

/* SetQuota: the bucket's quota; 0 = no limit. Enforced by the
 * state machine on later PUTs and CompleteUploads (QuotaExceeded). */
int objlog_producer_set_quota_sync(objlog_producer *p, const char *bucket,
                                   uint64_t max_bytes, uint64_t max_objects,
                                   const objlog_write_opts *opts,
                                   objlog_write_result *res, char *errstr,
                                   size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_set_quota(
                               p, bucket, max_bytes, max_objects, opts,
                               sync_cb, &w, errstr, errstr_size));
}

int objlog_producer_set_rate_limit_sync(objlog_producer *p, const char *bucket,
                                        const objlog_rate_limit *limit,
                                        const objlog_write_opts *opts,
                                        objlog_write_result *res, char *errstr,
                                        size_t errstr_size) {
    sync_wait w;
    if (sync_init(&w, res, errstr, errstr_size) < 0)
        return -1;
    return sync_finish(&w, objlog_producer_set_rate_limit(
                               p, bucket, limit, opts, sync_cb, &w, errstr,
                               errstr_size));
}
