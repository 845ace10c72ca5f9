/* partdump.h: one partition's rows of a store, for the checkpoint tests
 * (test_checkpoint, test_http_checkpoint). It reads objlog_store_dump and
 * decides each row's partition from the layout in materializer.h, written
 * here again rather than taken from materializer/checkpoint.c, so that the
 * tests check the code against the documented layout, not against itself. */
#ifndef OBJLOG_TEST_PARTDUMP_H
#define OBJLOG_TEST_PARTDUMP_H

#include <stddef.h>

#include "materializer.h"
#include "rangemap.h"

/* The partition of one dump line ("<cf> <key hex> <value hex>\n"), -1
 * for none: the store's own meta rows, tenant and global stats. */
int partdump_row(const rangemap *rm, const char *line);
/* The dump lines of s whose partition is p (mine = 1), or all the others
 * (mine = 0), in dump order; *nrows (may be NULL) counts them. Neither
 * holds the meta rows that say how this store came by its rows (a
 * checkpoint's base, a range imported). Malloc'd text; NULL when the dump
 * failed. */
char *partdump(objlog_store *s, const rangemap *rm, int p, int mine, size_t *nrows);

#endif
