/* storedump.h: the replay-determinism check shared by the process-level
 * fault tests (test_faults, test_soak). It owns
 * one question: do two STOPPED views hold the same state? It answers it
 * with the materializer's logical dump (objlog_store_dump: every row of
 * every column family, outcomes and applied offsets included), compared
 * byte for byte, and reports rows per column family. */
#ifndef OBJLOG_TEST_STOREDUMP_H
#define OBJLOG_TEST_STOREDUMP_H

#include <stddef.h>
#include <stdint.h>

#include "materializer.h"

/* 0: the stores under dirs a and b dump identically (rows[] = rows per CF
 * of a). -1: they differ or one cannot be read; why says where. */
int storedump_compare(const char *a, const char *b, size_t rows[OBJLOG_CF_COUNT],
                      char *why, size_t why_size);

/* Next offset to apply per partition of a stopped view's store, into
 * applied[0..partitions). 0, or -1 (why). */
int storedump_applied(const char *dir, int partitions, int64_t *applied, char *why,
                      size_t why_size);

#endif
