/* store.h: what the store's own modules need of store.c beyond
 * materializer.h. Not public. */
#ifndef OBJLOG_STORE_H
#define OBJLOG_STORE_H

#include <stddef.h>

#include "materializer.h"
#include "matlog.h"

/* Opens (or creates) the RocksDB instance in dir with every column family
 * and nothing else: objlog_store_open_conf (storeopen.c) is what callers
 * use. NULL with errstr. */
objlog_store *store_open_db(const char *dir, const objlog_store_conf *conf, char *errstr,
                            size_t errstr_size);
/* Where the store's lines go (objlog_store_conf log_cb). */
const matlog *store_log(const objlog_store *s);

#endif
