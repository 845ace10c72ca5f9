/* rows.h: the row layouts several modules share (rows.c), beyond the
 * public ones in materializer.h: meta row names and keys, outcome keys,
 * the per-key header's encoding and big-endian integers. The names keep
 * the apply_ prefix they had in apply.c, where tests and benches first
 * used them. */
#ifndef OBJLOG_ROWS_H
#define OBJLOG_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "materializer.h"

/* ---- meta rows (materializer.h): name ‖ be32(partition), or a name ---- */
#define APPLY_META_APPLIED "applied"
#define APPLY_META_DLQ "dlq"
#define APPLY_META_OUTCOMES_LOW "olow"
#define APPLY_META_RANGEMAP "rmap" /* the partition's ranges (handoff.c) */
#define APPLY_META_NO_STATS "nostats" /* bench only: see apply_batch_set_stats */
/* Local to this copy of the view (objlog_store_meta_is_local; secret.c). */
#define APPLY_META_TOKEN_SECRET "tokensecret"
#define APPLY_META_KEY_MAX 16
#define APPLY_OUTCOME_KEY_LEN 13 /* 'o' be32 be64 */
#define APPLY_HEADER_LEN 18

uint64_t apply_get_be64(const uint8_t *p);
uint32_t apply_get_be32(const uint8_t *p);
void apply_put_be64(uint8_t *p, uint64_t v);
void apply_put_be32(uint8_t *p, uint32_t v);

/* name ‖ be32(partition) into out; returns the length. */
size_t apply_meta_key(uint8_t out[APPLY_META_KEY_MAX], const char *name,
                      int32_t partition);
void apply_outcome_key(uint8_t out[APPLY_OUTCOME_KEY_LEN], int32_t partition,
                       int64_t offset);
/* The header row's value (objlog_key_header_decode reads it back). */
void apply_header_encode(const objlog_key_header *h, uint8_t out[APPLY_HEADER_LEN]);

#endif
