/* janitor.h: keeps listings fast after mass deletes (internal).
 *
 * A deleted key leaves a tombstone in `objects`/`versions` until compaction
 * drops it, and a LIST must step over every tombstone in its range: 100,000
 * deleted keys under a prefix with 10 live ones made that LIST ~4x slower
 * than one over 1,000 live keys. The materializer reports each written
 * batch's deletes here; once `threshold` have piled up, a background thread
 * flushes both column families and compacts the key range they span, which
 * drops the tombstones. It never changes what a read returns. */
#ifndef OBJLOG_JANITOR_H
#define OBJLOG_JANITOR_H

#include <stdint.h>

#include "keycodec.h"
#include "materializer.h"

typedef struct janitor janitor;

/* NULL on allocation or thread failure (the caller may run without one). */
janitor *janitor_new(objlog_store *store, uint64_t threshold);
/* Stops the thread (finishing a compaction in progress) and frees. */
void janitor_destroy(janitor *j);
/* Adds deletes spanning [lo, hi] from a batch that is now durable. */
void janitor_note(janitor *j, uint64_t deletes, const keybuf *lo,
                  const keybuf *hi);
/* Compactions done so far. */
uint64_t janitor_compactions(janitor *j);

#endif
