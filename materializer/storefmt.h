/* storefmt.h: the store's format marker at open (storefmt.c; the upgrade
 * of an older store is public: objlog_store_upgrade, materializer.h). */
#ifndef OBJLOG_STOREFMT_H
#define OBJLOG_STOREFMT_H

#include <stddef.h>

#include "materializer.h"

/* At open: a new store gets the current format marker; a marker naming
 * another format is refused (errstr). 0 or -1. */
int storefmt_open(objlog_store *s, char *errstr, size_t errstr_size);

#endif
