/* secret.c: the store's token secret (meta "tokensecret"): 32 random bytes
 * made once, when a store first asks for it, and kept with the store. The
 * query service signs its continuation tokens with it (HMAC-SHA256,
 * query/read/listtoken.c), so a token edited by a client, or issued by another
 * store (another objlogd, or this one's view rebuilt into a new --data),
 * is refused. It is view-local by design: nothing in the log depends on
 * it, and a rebuilt view only invalidates tokens in flight. */
#define _GNU_SOURCE
#include "materializer.h"

#include "rows.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <rocksdb/c.h>

/* 1 loaded, 0 none, -1 unreadable or corrupt. */
static int secret_load(objlog_store *s, uint8_t out[OBJLOG_TOKEN_SECRET_LEN],
                       char *errstr, size_t es) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *err = NULL;
    size_t vn = 0;
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_META),
                             APPLY_META_TOKEN_SECRET, strlen(APPLY_META_TOKEN_SECRET), &vn, &err);
    rocksdb_readoptions_destroy(ro);
    if (err) {
        snprintf(errstr, es, "store: %s", err);
        rocksdb_free(err);
        return -1;
    }
    int rc = v ? 1 : 0;
    if (v && vn != OBJLOG_TOKEN_SECRET_LEN) {
        snprintf(errstr, es, "store: meta %s is corrupt (%zu bytes)", APPLY_META_TOKEN_SECRET, vn);
        rc = -1;
    } else if (v) {
        memcpy(out, v, OBJLOG_TOKEN_SECRET_LEN);
    }
    rocksdb_free(v);
    return rc;
}

int objlog_store_token_secret(objlog_store *s, uint8_t out[OBJLOG_TOKEN_SECRET_LEN],
                              char *errstr, size_t errstr_size) {
    int rc = secret_load(s, out, errstr, errstr_size);
    if (rc != 0)
        return rc > 0 ? 0 : -1;
    size_t got = 0;
    while (got < OBJLOG_TOKEN_SECRET_LEN) {
        ssize_t r = getrandom(out + got, OBJLOG_TOKEN_SECRET_LEN - got, 0);
        if (r < 0 && errno != EINTR) {
            snprintf(errstr, errstr_size, "getrandom: %s", strerror(errno));
            return -1;
        }
        got += r > 0 ? (size_t)r : 0;
    }
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(wo, 1);
    char *err = NULL;
    rocksdb_put_cf(objlog_store_db(s), wo, objlog_store_cf(s, OBJLOG_CF_META), APPLY_META_TOKEN_SECRET,
                   strlen(APPLY_META_TOKEN_SECRET), (const char *)out, OBJLOG_TOKEN_SECRET_LEN, &err);
    rocksdb_writeoptions_destroy(wo);
    if (err) {
        snprintf(errstr, errstr_size, "store: %s", err);
        rocksdb_free(err);
        return -1;
    }
    return 0;
}
