/* storeopen.c: opening a store, in the order that makes it readable: the
 * RocksDB instance (store.c), then the crash rule of checkpoint imports
 * (checkpoint.h), then the format marker (storefmt.c).
 *
 * Invariant: objlog_store_open returns a store only once both hold, so no
 * reader or applier ever sees a half-imported partition or a format this
 * objlog does not know. Kept apart from store.c so that the store's reads
 * do not depend on the modules that write it. */
#include "materializer.h"

#include "checkpoint.h"
#include "store.h"
#include "storefmt.h"

#include <stdio.h>

objlog_store *objlog_store_open(const char *dir, char *errstr, size_t errstr_size) {
    return objlog_store_open_conf(dir, NULL, errstr, errstr_size);
}

objlog_store *objlog_store_open_conf(const char *dir, const objlog_store_conf *conf,
                                     char *errstr, size_t errstr_size) {
    objlog_store *s = store_open_db(dir, conf, errstr, errstr_size);
    if (!s)
        return NULL;
    /* A partition whose checkpoint import did not finish is purged before
     * anyone can read or apply it (checkpoint.h, crash rule). */
    char why[256];
    if (objlog_ckpt_recover(s, why, sizeof(why)) < 0) {
        snprintf(errstr, errstr_size, "open store %s: %s", dir, why);
        objlog_store_close(s);
        return NULL;
    }
    if (storefmt_open(s, errstr, errstr_size) < 0) {
        objlog_store_close(s);
        return NULL;
    }
    return s;
}
