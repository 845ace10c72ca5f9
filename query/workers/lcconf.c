/* lcconf.c: a bucket's lifecycle configuration between the HTTP front ends
 * and the store: read from the bucket record through a fenced view of its
 * partition, written as one SetLifecycle event through the gateway. The
 * JSON API (lcapi.c) and the S3 endpoint (s3lc.c) share it so that
 * neither front end calls the other; the worker (lifecycle.c) reads the
 * same rules from the store.
 *
 * Invariant: a configuration is replaced whole, never merged: a write
 * carries every rule the bucket will have, and one without rules removes
 * the configuration. Its callers validate the rules first
 * (objlog_lc_validate); the state machine checks them again on apply. */
#include "core.h"
#include "read.h"
#include "server.h"
#include "workers.h"
#include "write.h"

#include <stdint.h>

int lcconf_read(http_ctx *c, const char *bucket, view_bucket *b) {
    if (read_bucket_record(c, bucket, b) < 0)
        return 0;
    if (b->record->n_lifecycle == 0) {
        view_bucket_free(b);
        http_reply_error(c, 404, "NoSuchLifecycleConfiguration",
                         "bucket %s has no lifecycle configuration", bucket);
        return 0;
    }
    return 1;
}

void lcconf_write(http_ctx *c, const char *bucket, Objlog__SetLifecycle *sl) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__SetLifecycle none = OBJLOG__SET_LIFECYCLE__INIT;
    ev.bucket = (char *)bucket;
    ev.op_case = OBJLOG__EVENT__OP_SET_LIFECYCLE;
    ev.set_lifecycle = sl ? sl : &none;
    gateway_write_event(c, &ev);
}
