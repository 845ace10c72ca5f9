/* statrows.h: the `stats` rows (usage counters) one apply batch has
 * touched, decoded and kept in memory until the batch is written.
 *
 * Every event of a batch adds its delta to three rows (its bucket's, and
 * its partition's rows of its tenant and of the global sums); staging
 * each change into the WriteBatch would read, decode, encode and write
 * the same few rows once per event.
 * apply.c loads a row on first touch, changes it here, and stages every
 * dirty row once, just before the batch is written (apply_batch_wb).
 *
 * Invariant: while a row is in the table, its entry is the row's value as
 * the batch sees it (present 0: the batch deletes it or it never
 * existed), so apply.c reads stats rows only through the table. The table
 * does no I/O; apply.c owns loading and staging. Internal to the
 * materializer.
 */
#ifndef OBJLOG_MATERIALIZER_STATROWS_H
#define OBJLOG_MATERIALIZER_STATROWS_H

#include <stddef.h>
#include <stdint.h>

#include "objlog.pb-c.h"

typedef struct statrow {
    uint8_t *key;              /* owned */
    size_t key_len;
    Objlog__UsageStats u;      /* counters only (no unknown fields) */
    int present;               /* 0: absent after this batch */
    int dirty;                 /* changed since loaded or last staged */
} statrow;

typedef struct statrows {
    statrow *rows;             /* insertion order */
    size_t n, cap;
    uint32_t *slots;           /* open addressing: row index + 1, 0 empty */
    size_t nslots;             /* power of two, >= 2 * n */
} statrows;

void statrows_init(statrows *t);
void statrows_free(statrows *t);
/* Forgets every row (the batch was written or abandoned). */
void statrows_clear(statrows *t);
/* The row for key, or NULL when the batch has not touched it. */
statrow *statrows_find(statrows *t, const uint8_t *key, size_t key_len);
/* Adds a row for key (not in the table yet), all zero, present 0, clean.
 * NULL when out of memory. The pointer is valid until the next insert. */
statrow *statrows_insert(statrows *t, const uint8_t *key, size_t key_len);

#endif
