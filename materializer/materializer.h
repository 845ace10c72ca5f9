/* materializer.h: the views (RocksDB) and the consumer that keeps them equal
 * to a pure function of the applied log prefix (docs/ARCHITECTURE.md, "The
 * state machine's rules").
 *
 * Two objects:
 *  - objlog_store: one RocksDB instance with the column families below. The
 *    query service reads it concurrently (RocksDB is thread-safe); only the
 *    materializer thread writes it, one WriteBatch per consumed batch that
 *    carries every effect plus the new applied offset of each partition.
 *  - objlog_materializer: consumes objlog.events (assign, never subscribe;
 *    auto.offset.reset=error), runs materializer/apply.c over each batch,
 *    sends undecodable messages to objlog.dlq, and publishes applied
 *    offsets to waiters (the gateway and read fences).
 *
 * Key layout per column family (all keys big-endian; see schemas/keycodec.h):
 *   versions  version_row(b,k,seq)        -> VersionRecord (newest first)
 *             route_key(b,k)              -> key header (18 bytes, below):
 *               sorts just before the key's version rows; exists iff the key
 *               has at least one version or delete marker and its bucket
 *               is not Unversioned (a key without one has at most its null
 *               version, which `objects` shows). Scanners of
 *               `versions` skip it: objlog_versions_row_is_header().
 *               Layout: u8 format (1) | u8 has_null | be64 null_seq |
 *               be64 version count (delete markers included). Lets the state
 *               machine find the "null" version without a scan.
 *   objects   route_key(b,k)              -> VersionRecord (live only)
 *   buckets   bucket_part(b)              -> BucketRecord
 *   uploads   route_key(b,k) ‖ enc(upload_id)               -> UploadRecord
 *             route_key(b,k) ‖ enc(upload_id) ‖ be32(part)  -> PartRecord
 *               upload_id = 16 lowercase hex digits (the CreateUpload
 *               event's seq), so a key's uploads sort by initiation and
 *               each upload row is followed at once by its parts in number
 *               order. Row kind by length: objlog_uploads_row_kind().
 *               List uploads: scan route keys under the bucket/prefix and
 *               take the upload rows; list parts: seek
 *               objlog_uploads_part_key(b,k,id,marker+1) and read while the
 *               row still starts with objlog_uploads_upload_key(b,k,id).
 *   stats     'b' bucket_part(b)            -> UsageStats of bucket b
 *             't' enc(tenant) be32(p)       -> UsageStats summed over the
 *               tenant's buckets of partition p, .buckets = how many
 *             'g' be32(p)                   -> UsageStats of partition p,
 *               .buckets = its buckets
 *               Every row belongs to exactly one partition, named by its
 *               key alone (objlog_stats_row_partition): p for 't'/'g', the
 *               range map's owner of route_key(b, "") for 'b' (all of a
 *               bucket's keys route there). Apply adds an event's delta to
 *               its bucket's row and to ITS partition's 't'/'g' rows, so a
 *               partition's rows are a function of that partition's log
 *               and can be copied between stores with it. A tenant's rows
 *               are contiguous (prefix 't' enc(tenant)). Readers sum the
 *               partitions they answer for.
 *               Kept by apply.c in the same WriteBatch as the rows they
 *               count, so they are exact as of the applied offsets:
 *               objects/bytes = `objects` rows (live current versions);
 *               versions/version_bytes = version rows that are not delete
 *               markers; noncurrent = those that are not their key's newest
 *               row (= versions - objects); delete_markers; uploads = upload
 *               rows, upload_part_bytes = sum of their PartRecord sizes.
 *               A bucket's row exists (all zero at first) from CreateBucket
 *               to DeleteBucket (which only removes it: the bucket is
 *               empty); a 't' or 'g' row exists while its partition holds
 *               a bucket of its tenant / any bucket (all counters are 0
 *               when the last goes, since only empty buckets are deleted).
 *               Counters only change with OK outcomes. Bucket quotas
 *               (BucketRecord.quota) are checked against the 'b' row by
 *               PutObject and CompleteUpload.
 *               Format 1 (stores made before OBJLOG_STORE_FORMAT 2) kept
 *               one 't' enc(tenant) and one 'g' row summed over every
 *               partition; objlog_store_upgrade rewrites them.
 *   outcomes  'o' be32(partition) be64(offset) -> Outcome
 *               A request's first outcome carries its request id and its
 *               own offset (a retry's row is a copy naming the first's), so
 *               it is the request id's record too: found through the
 *               partition's in-memory index of first outcomes (dedup.c;
 *               formats 1 to 3 kept an 'r' row per request id). Kept for a
 *               window of log time and a bound per partition (below): the
 *               oldest rows of a partition are trimmed first. Trimmed offsets are
 *               told apart from unapplied ones by objlog_store_get_outcome
 *               (OBJLOG_OUTCOME_TRIMMED) / objlog_store_outcomes_low.
 *               A first outcome names its event's route key
 *               (Outcome.route_key), so a handoff knows which records
 *               travel with a range (handoff.c, dedup.c):
 *             'x' be32(p) be64(off)       -> RangeOut: the handoff of p at
 *               off awaits its RangeIn (the marker; the RangeIn deletes it)
 *             'x' be32(p) be64(off) rid   -> Outcome: a request record that
 *               RangeOut set aside for its target (moved by the RangeIn)
 *             'i' be32(q) be64(off) rid   -> Outcome: a request record the
 *               RangeIn at (q, off) took; q's request-id index holds it at
 *               off; it goes when that RangeIn's 'o' row is trimmed
 *   meta      "applied" be32(partition)   -> be64(next offset to apply)
 *             "dlq" be32(partition)       -> be64(events sent to the DLQ)
 *             "olow" be32(partition)      -> be64(offset of the oldest kept
 *               'o' row) be64(its Outcome.log_time_ms)
 *             "rmap" be32(partition)      -> RangeMap: the map the
 *               partition's last RangeOut or RangeIn carried; it decides
 *               which keys the partition holds (absent: the genesis map)
 *             "nostats"                   -> "" : the store was applied
 *               without the stats view (bench only, test_no_stats below)
 *             "logident"                  -> "v1 <kind> <log id> <cluster id>":
 *               the log this view was built from (identity.c)
 *             "tokensecret"               -> 32 random bytes: the key that
 *               signs continuation tokens (secret.c)
 *             "importing" be32(partition) -> be32(1) RangeMap: a checkpoint
 *               import of the partition is under way (checkpoint.h)
 *             "format"                    -> decimal text, "4": the layout
 *               of this store (OBJLOG_STORE_FORMAT; storefmt.c). Written
 *               into a new store at open; a store that holds rows and no
 *               "format" is format 1. Not local: a replay writes the same.
 *   indexes   attribute indexes of a bucket (materializer/indexes.c),
 *             all under base = route_key(b, "") (so a row routes, and is
 *             checkpointed, with its bucket's record):
 *             base 'e' enc(name) enc(value) [be64(lm ^ 2^63)] enc(key)
 *               -> the key's `objects` row, byte for byte (a query is a
 *               covering scan, as fast as LIST); lm = that version's
 *               log_time_ms, present iff the index is composite
 *               (IndexDef.with_last_modified). Sparse: a row exists iff the
 *               key's current live version has the field.
 *             base 'c' enc(name) enc(value) -> be64 count ‖ be64 bytes of
 *               the 'e' rows of that value (absent at 0).
 *             Kept by apply in the same WriteBatch as the `objects` row;
 *             an index that is building (IndexDef.building) holds exactly
 *             the keys <= IndexDef.cursor.
 *
 * Dedup window and space bound (docs/ARCHITECTURE.md, "The state machine's
 * rules"; decided in apply, from the log only, so every replica and replay
 * agrees):
 *   - the event at offset X with Kafka timestamp T is a retry of request id
 *     R iff R's first outcome sits at an offset in [X - OBJLOG_DEDUP_MAX_IDS,
 *     X) of the same partition and T - its log_time_ms <=
 *     OBJLOG_DEDUP_WINDOW_MS; otherwise it is a new request;
 *   - after each event, the partition's 'o' rows at offsets <= X -
 *     OBJLOG_DEDUP_MAX_IDS or with T - log_time_ms > window are removed,
 *     oldest offset first, stopping at the first row that is neither (at
 *     most 64 per event; a backlog drains over the next events). A retry's
 *     'o' row is a verbatim copy, log_time_ms included, so it expires with
 *     the request it answers. At most OBJLOG_DEDUP_MAX_IDS 'o' rows, hence
 *     request ids, are kept per partition.
 */
#ifndef OBJLOG_MATERIALIZER_H
#define OBJLOG_MATERIALIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rocksdb/c.h>

#include "keycodec.h"
#include "objlog.pb-c.h"
#include "rangemap.h"

typedef enum objlog_cf {
    OBJLOG_CF_VERSIONS = 0,
    OBJLOG_CF_OBJECTS,
    OBJLOG_CF_BUCKETS,
    OBJLOG_CF_UPLOADS,
    OBJLOG_CF_STATS,
    OBJLOG_CF_OUTCOMES,
    OBJLOG_CF_META,
    OBJLOG_CF_INDEXES,
    OBJLOG_CF_BLOBS,     /* last: checkpoint streams carry CF numbers */
    OBJLOG_CF_COUNT
} objlog_cf;

/* ---- attribute indexes (layout above; indexes.c) ---- */
#define OBJLOG_INDEX_NAME_MAX 64
#define OBJLOG_INDEX_FIELD_KEY_MAX 128
#define OBJLOG_INDEXES_MAX 16         /* per bucket */
#define OBJLOG_INDEX_ENTRY 'e'
#define OBJLOG_INDEX_COUNT 'c'

/* 1 valid, else 0 with why. Names: 1-64 of A-Z a-z 0-9 - _ . ; fields:
 * "content_type", "storage_class", "user_metadata.KEY", "tag.KEY" (KEY
 * 1-128 bytes). */
int objlog_index_name_valid(const char *name, char *why, size_t why_size);
int objlog_index_field_valid(const char *field, char *why, size_t why_size);
/* base ‖ kind ‖ enc(name) into kb (reset first). 0 or -1 (out of memory). */
int objlog_index_prefix(keybuf *kb, const char *bucket, char kind, const char *name);
/* The value of field in version r: 1 (*v, *vn point into r), 0 the
 * version has no such field. storage_class "" reads as "STANDARD" (as
 * every view shows it); an empty content type is no value. */
int objlog_index_value(const char *field, const Objlog__VersionRecord *r,
                       const char **v, size_t *vn);
/* be64 of a last-modified time that sorts signed values. */
void objlog_index_lm_put(uint8_t out[8], int64_t ms);

/* ---- log lines ---- */

/* Where the lines of the store and the materializer go (a checkpoint
 * import's recovery or failure, the janitor's, the consumer's, and
 * librdkafka's lines of the handles the materializer makes, as component
 * "kafka"): level is syslog's (3 error .. 7 debug), component names the
 * part that wrote it, line is one line without its newline. Called from
 * the materializer's, the janitor's and librdkafka's threads: it must be
 * thread-safe and must not call back into the store or the materializer.
 * Not set (NULL): lines go to stderr as "<component>: <line>". A host with
 * a process logger passes one that writes through it (objlogd does). */
typedef void objlog_materializer_log_cb(void *opaque, int level, const char *component,
                                        const char *line);

/* ---- store ---- */
typedef struct objlog_store objlog_store;

/* Memory the store may take: one LRU block cache shared by
 * every column family, and one memtable budget across all of them (RocksDB
 * flushes the largest memtable when the total passes it). Without these
 * each of the eight column families kept up to 2 x 64 MB of memtables and
 * its own 8 MB cache: RSS grew ~0.47 KB per PUT with no cap in sight. */
typedef struct objlog_store_conf {
    size_t block_cache_bytes;    /* 0: OBJLOG_STORE_BLOCK_CACHE_DEFAULT */
    size_t memtable_bytes;       /* 0: OBJLOG_STORE_MEMTABLE_DEFAULT */
    objlog_materializer_log_cb *log_cb; /* the store's lines; NULL: stderr */
    void *log_opaque;
    /* The views are caches of the log (docs/ARCHITECTURE.md, "Views are
     * caches of the log"): with wal 0 (OBJLOG_STORE_WAL_OFF, the default)
     * view batches skip RocksDB's WAL and every flush is atomic across
     * the column families, so a batch's effects and its applied offsets
     * reach disk together; after a crash the view resumes from its last
     * flushed offsets and applies the rest again from the log.
     * OBJLOG_STORE_WAL_ON writes view batches through the WAL. Rows that
     * are not the log's (token secret, log identity, format markers,
     * checkpoint imports) always go through the WAL, synced. */
    int wal;
    /* With the WAL off: at most this long (ms) between a view write and
     * the flush that makes it durable, so a quiet store does not keep its
     * offsets in memory only. 0: OBJLOG_STORE_FLUSH_INTERVAL_DEFAULT_MS;
     * -1: never on a timer (memtables full, objlog_store_flush and close
     * still flush; tests model a machine crash with it). */
    int flush_interval_ms;
} objlog_store_conf;
#define OBJLOG_STORE_BLOCK_CACHE_DEFAULT ((size_t)32 << 20)
#define OBJLOG_STORE_MEMTABLE_DEFAULT ((size_t)32 << 20)
#define OBJLOG_STORE_WAL_OFF 0
#define OBJLOG_STORE_WAL_ON 1
#define OBJLOG_STORE_FLUSH_INTERVAL_DEFAULT_MS 10000

/* conf NULL: the defaults. */
objlog_store *objlog_store_open_conf(const char *dir, const objlog_store_conf *conf,
                                     char *errstr, size_t errstr_size);
objlog_store *objlog_store_open(const char *dir, char *errstr,
                                size_t errstr_size);
void objlog_store_close(objlog_store *s);
/* The directory the store was opened in. */
const char *objlog_store_dir(const objlog_store *s);
rocksdb_t *objlog_store_db(objlog_store *s);
/* The block cache every column family shares: bytes in use, capacity. */
void objlog_store_block_cache(objlog_store *s, size_t *usage, size_t *capacity);
rocksdb_column_family_handle_t *objlog_store_cf(objlog_store *s, objlog_cf cf);
const char *objlog_cf_name(objlog_cf cf);
/* Writes one view batch (a state machine batch, its effects and applied
 * offsets) with the store's WAL mode. 0, or -1 (errstr). Any thread. */
int objlog_store_write_view(objlog_store *s, rocksdb_writebatch_t *wb, char *errstr,
                            size_t errstr_size);
/* Flushes every column family's memtables in one atomic flush and waits
 * for it: what was written before is on disk, offsets with their effects.
 * 0, or -1 (errstr). Any thread. With the WAL off a failed flush refuses
 * view writes (objlog_store_write_view, objlog_store_probe) until a flush
 * succeeds: the flusher retries every second. */
int objlog_store_flush(objlog_store *s, char *errstr, size_t errstr_size);
/* 0 when a view write would be taken now; -1 (errstr) while RocksDB
 * stops writes or, WAL off, since a failed flush. Writes nothing. */
int objlog_store_probe(objlog_store *s, char *errstr, size_t errstr_size);
/* The store's durability as configured and observed: wal 1 when view
 * batches go through the WAL; flushes done by objlog_store_flush and the
 * timer; unflushed 1 while a view write is only in memory (WAL off). */
typedef struct objlog_store_durability {
    int wal;
    int flush_interval_ms;     /* -1: no timer */
    uint64_t flushes;
    uint64_t flush_errors;
    int unflushed;
} objlog_store_durability;
void objlog_store_durability_get(objlog_store *s, objlog_store_durability *d);
/* A counter that moves whenever `outcomes` rows change other than through
 * an apply batch (a checkpoint import or purge calls
 * objlog_store_outcomes_changed): what the batches keep in memory of
 * those rows is reloaded then. */
uint64_t objlog_store_outcomes_gen(objlog_store *s);
void objlog_store_outcomes_changed(objlog_store *s);

/* Next offset to apply for partition (0 if none applied yet). */
int64_t objlog_store_applied(objlog_store *s, int32_t partition);
/* Events of partition sent to the DLQ (meta "dlq"). */
uint64_t objlog_store_dlq_count(objlog_store *s, int32_t partition);
/* Dedup window in log time and bound per partition (layout above). */
#define OBJLOG_DEDUP_WINDOW_MS (24LL * 60 * 60 * 1000)
#define OBJLOG_DEDUP_MAX_IDS 1000000LL

/* Results of objlog_store_get_outcome besides -1 (error). */
#define OBJLOG_OUTCOME_NOT_FOUND 0 /* not applied yet (or no event there) */
#define OBJLOG_OUTCOME_FOUND 1
#define OBJLOG_OUTCOME_TRIMMED 2   /* applied, outcome expired: 410 Gone */

/* Stored outcome of the event at (partition, offset). OBJLOG_OUTCOME_FOUND
 * (caller frees *out with objlog__outcome__free_unpacked),
 * OBJLOG_OUTCOME_TRIMMED when offset is below the partition's oldest kept
 * outcome (objlog_store_outcomes_low), OBJLOG_OUTCOME_NOT_FOUND otherwise,
 * -1 error. The row is read before the low mark, so a concurrent trim can
 * only turn "found" into "trimmed", never into "not found". */
int objlog_store_get_outcome(objlog_store *s, int32_t partition,
                             int64_t offset, Objlog__Outcome **out,
                             char *errstr, size_t errstr_size);
/* The bucket's record as the store holds it now (its home row): 1 (*out
 * the caller's: objlog__bucket_record__free_unpacked), 0 no such bucket,
 * -1 error. */
int objlog_store_get_bucket(objlog_store *s, const char *bucket, Objlog__BucketRecord **out,
                            char *errstr, size_t errstr_size);
/* Likewise, partition's copy of the record of the bucket of bucket part
 * bpart, kept with its stake when the bucket's home is elsewhere. */
int objlog_store_get_bucket_stake(objlog_store *s, const uint8_t *bpart, size_t bn,
                                  int32_t partition, Objlog__BucketRecord **out, char *errstr,
                                  size_t errstr_size);
/* A RangeOut of partition applied here whose RangeIn has not taken it
 * here and whose map is newer than after_epoch (a handoff to finish: the
 * map is published only once its RangeIn applied; a marker whose RangeIn
 * applied on another node stays, for the range's imports): 1 (*offset,
 * *out: the caller frees it), 0 none, -1 error. */
int objlog_store_pending_handoff(objlog_store *s, int32_t partition, uint32_t after_epoch,
                                 int64_t *offset, Objlog__RangeOut **out, char *errstr,
                                 size_t errstr_size);
/* Calls fn for the route key of every kept outcome of partition at
 * offsets >= from that names one (a request's first outcome): which keys
 * the partition's recent writes went to (automatic splits). 0, or -1. */
int objlog_store_route_keys(objlog_store *s, int32_t partition, int64_t from,
                            void (*fn)(const uint8_t *rk, size_t n, void *arg), void *arg,
                            char *errstr, size_t errstr_size);
/* The map partition's last handoff carried (meta "rmap"), or NULL: none
 * (errstr "") or an error (errstr says it). */
rangemap *objlog_store_partition_map(objlog_store *s, int32_t partition, char *errstr,
                                     size_t errstr_size);
/* Offset of the oldest outcome kept for partition (every applied offset
 * below it is trimmed); 0 when nothing was trimmed or applied yet. */
int64_t objlog_store_outcomes_low(objlog_store *s, int32_t partition);

/* The change feed (materializer/feed.h): fn gets partition's records
 * from offset `from` on, in (offset, index) order, at most max of them
 * but never part of an event's; fn returning non-zero stops the scan
 * (negative: an error, the scan returns -1). Returns how many fn took. */
typedef int objlog_feed_fn(void *arg, int64_t offset, uint16_t index,
                           const Objlog__FeedRecord *r);
long objlog_store_feed_scan(objlog_store *s, int32_t partition, int64_t from, size_t max,
                            objlog_feed_fn *fn, void *arg, char *errstr, size_t errstr_size);
/* The offset below which partition's feed records are trimmed (with the
 * outcomes: the dedup window and bound), which a notifier behind it can
 * no longer deliver. */
int64_t objlog_store_feed_low(objlog_store *s, int32_t partition);

/* Blob references (materializer/blobrefs.h): every blob id a version or
 * an upload's part names, by id. A row counts for the partition that
 * holds its key under rm (the map a reader routes by); keep says which
 * partitions the reader answers for (those applied here, say): 1 keep. */
typedef int objlog_blob_keep_fn(void *arg, int32_t partition);
/* fn gets each distinct blob id referenced in a kept partition, in byte
 * order, from the first id after `after` on (NULL or "": from the
 * first), at most max of them, all read from one snapshot; fn returning
 * non-zero stops. Returns how many fn took, or -1 (errstr). */
typedef int objlog_blob_fn(void *arg, const char *blob_id, size_t n);
long objlog_store_blobs_scan(objlog_store *s, const rangemap *rm, objlog_blob_keep_fn *keep,
                             void *karg, const char *after, size_t max, objlog_blob_fn *fn,
                             void *arg, char *errstr, size_t errstr_size);
/* 1 when blob id is referenced in a kept partition, 0 when not, -1
 * (errstr). */
int objlog_store_blob_referenced(objlog_store *s, const rangemap *rm,
                                 objlog_blob_keep_fn *keep, void *karg, const char *id,
                                 char *errstr, size_t errstr_size);

/* Logical dump for replay-determinism checks: every row of every column
 * family (in objlog_cf order, then key order), one line per row,
 * "<cf name> <key hex> <value hex>\n", lowercase hex, read from one
 * snapshot. Equal views give byte-identical dumps (compare with cmp).
 * Rows local to this copy of the view (objlog_store_meta_is_local) are
 * left out: they are not the log's, and the token secret stays secret.
 * 0, or -1 (errstr) on a read or write error. */
int objlog_store_dump(objlog_store *s, FILE *out, char *errstr,
                      size_t errstr_size);

/* ---- log identity (identity.c) ---- */
typedef struct objlog_log_identity {
    char cluster_id[128];  /* Kafka's cluster id */
    char log_id[33];       /* objlog.control "logid" (control.h) */
    int embedded;          /* the log is an embedded (in-memory) cluster */
} objlog_log_identity;

/* The identity of the log at brokers. When the control topic holds no log
 * id and publish_if_missing is set, draws and publishes one first (topics
 * made by hand). 1 found, 0 none, -1 error (errstr). */
int objlog_log_identity_fetch(const char *brokers, const char *control_topic,
                              int publish_if_missing, int timeout_ms,
                              objlog_log_identity *out, char *errstr,
                              size_t errstr_size);

typedef enum objlog_bind {
    OBJLOG_BIND_REFUSED = -1, /* another log's view, or unknown: errstr says
                                 what to do */
    OBJLOG_BIND_SAME = 0,     /* built from this log */
    OBJLOG_BIND_RECORDED = 1, /* empty store: now bound to this log */
    OBJLOG_BIND_DISCARD = 2   /* a view of an earlier embedded log, which is
                                 gone: destroy the store and start empty */
} objlog_bind;

/* Binds the store to log (meta "logident"): compares, or records into an
 * empty store. DISCARD only with discard_embedded (objlogd --embedded). */
objlog_bind objlog_store_bind_log(objlog_store *s, const objlog_log_identity *log,
                                  int discard_embedded, char *errstr,
                                  size_t errstr_size);
/* The identity a store recorded: 1, 0 none, -1 corrupt. */
int objlog_store_log_identity(objlog_store *s, objlog_log_identity *out);
/* The store's token secret (meta "tokensecret", secret.c): read, or made
 * from getrandom and kept on first use. 0, or -1 with errstr. */
#define OBJLOG_TOKEN_SECRET_LEN 32
int objlog_store_token_secret(objlog_store *s, uint8_t out[OBJLOG_TOKEN_SECRET_LEN],
                              char *errstr, size_t errstr_size);
/* 1 for a meta row that belongs to this copy of the view, not to the log
 * (the token secret): a replica or a replay differs in it by design, so
 * comparisons of views skip it. */
int objlog_store_meta_is_local(const void *key, size_t key_len);
/* Removes the RocksDB files of a closed store in dir (only RocksDB's). */
int objlog_store_destroy_files(const char *dir, char *errstr, size_t errstr_size);

/* The per-key header row of the `versions` CF (see layout above). */
typedef struct objlog_key_header {
    int has_null;       /* a version with version id "null" exists */
    uint64_t null_seq;  /* its seq (row = version_row(b,k,null_seq)) */
    uint64_t versions;  /* versions + delete markers of the key */
} objlog_key_header;
/* 0 or -1 if val is not a header row value. */
int objlog_key_header_decode(const void *val, size_t n, objlog_key_header *h);
/* 1 if a `versions` CF key is a per-key header row (a bare route key),
 * 0 if it is a version row (route key + be64). */
int objlog_versions_row_is_header(const void *row, size_t n);

/* Versions per key when BucketRecord.max_versions is 0. */
#define OBJLOG_MAX_VERSIONS_DEFAULT 100000ULL

/* Kinds of `uploads` CF rows. */
typedef enum objlog_uploads_row {
    OBJLOG_UPLOADS_ROW_INVALID = -1, /* not an uploads row */
    OBJLOG_UPLOADS_ROW_UPLOAD = 1,   /* value: UploadRecord */
    OBJLOG_UPLOADS_ROW_PART = 2      /* value: PartRecord */
} objlog_uploads_row;

/* Classifies an `uploads` CF key. On success *rk_len = length of its
 * route_key(b,k) prefix (parse it with keycodec_parse_route_key),
 * *upload_id and *upload_id_len = the upload id bytes inside row (not
 * NUL-terminated), *part_number = the part number (0 for an upload row).
 * Any out pointer may be NULL. */
objlog_uploads_row objlog_uploads_row_kind(const void *row, size_t n,
                                           size_t *rk_len,
                                           const uint8_t **upload_id,
                                           size_t *upload_id_len,
                                           uint32_t *part_number);
/* Builds the upload row key / part row key into kb (reset first).
 * 0, or -1 out of memory. */
int objlog_uploads_upload_key(keybuf *kb, const char *bucket, size_t bn,
                              const uint8_t *key, size_t kn,
                              const char *upload_id);
int objlog_uploads_part_key(keybuf *kb, const char *bucket, size_t bn,
                            const uint8_t *key, size_t kn,
                            const char *upload_id, uint32_t part_number);

/* Keys of `stats` rows (layout above), built into kb (reset first).
 * 0, or -1 out of memory. The tenant prefix is 't' enc(tenant): every row
 * of the tenant, one per partition, starts with it. */
int objlog_stats_bucket_key(keybuf *kb, const char *bucket, size_t bn);
int objlog_stats_tenant_key(keybuf *kb, const char *tenant, int32_t partition);
int objlog_stats_tenant_prefix(keybuf *kb, const char *tenant);
int objlog_stats_global_key(keybuf *kb, int32_t partition);
/* 'b' stake: the usage row of a partition's stake in a bucket (stake: the
 * bucket's `buckets` row key, objlog_bucket_stake_key). */
int objlog_stats_stake_key(keybuf *kb, const uint8_t *stake, size_t n);
/* bucket_part(b) be32(p): the `buckets` row of partition p's stake in a
 * bucket whose home is another partition (kb reset first). 0 or -1. */
int objlog_bucket_stake_key(keybuf *kb, const uint8_t *bpart, size_t bn, int32_t p);
/* What a `buckets` row key is: 0 a bucket's home record (bucket_part(b)),
 * 1 a stake of partition *p (bucket_part(b) be32(p)), -1 malformed.
 * *bn: the length of its bucket part. */
int objlog_bucket_row_kind(const void *key, size_t n, size_t *bn, int32_t *p);
/* The partition a `stats` row belongs to, from its key alone ('b' rows
 * through rm: the owner of their bucket's route keys); -1 if key is not a
 * well-formed stats row of the current format. Selects one partition's
 * rows, e.g. for a checkpoint of that partition. */
int objlog_stats_row_partition(const rangemap *rm, const void *key, size_t n);
/* 1 when key is a bucket's home usage row ('b' bucket_part(b)); *rk then
 * holds route_key(b, ""), where its owner is decided. 0 any other row. */
int objlog_stats_home_route(const void *key, size_t n, keybuf *rk);

/* ---- store format (storefmt.c) ---- */
#define OBJLOG_STORE_FORMAT 5
/* The format the store is in: OBJLOG_STORE_FORMAT, or 1 (a store made
 * before the stats rows were kept per partition) until it is upgraded. */
int objlog_store_format(objlog_store *s);
/* Upgrades a store of an older format in place, in one WriteBatch: a
 * format-1 store's 't' and 'g' rows are recomputed per partition from the
 * 'b' rows (exact: a tenant's and the global counters are the sums of
 * their buckets' rows) and checked against the old sums; the 'r' request
 * id rows and the header rows of Unversioned buckets' keys are deleted
 * (what they said is in the rows that stay); the `blobs` rows are built
 * from the version and part rows; meta "format" is set. rm: the range map the
 * store was applied with. 1 upgraded, 0 already current, -1 (errstr: an
 * old store whose rows disagree is refused with how to rebuild it). */
int objlog_store_upgrade(objlog_store *s, const rangemap *rm, char *errstr,
                         size_t errstr_size);

/* ---- materializer ---- */
typedef struct objlog_materializer objlog_materializer;

typedef struct objlog_materializer_conf {
    const char *brokers;         /* bootstrap.servers */
    const char *topic;           /* objlog.events */
    const char *control_topic;   /* objlog.control */
    const char *dlq_topic;       /* objlog.dlq */
    const char *group_id;        /* consumer group for committed offsets */
    int batch_max;               /* events per WriteBatch (default 1000) */
    int apply_delay_ms;          /* test-only: sleep per batch (default 0) */
    int fetch_wait_max_ms;       /* consumer fetch.wait.max.ms (default 100) */
    int compact_after_deletes;   /* compact `objects`/`versions` over the
                                    deleted range after this many deletes
                                    (default 10000; janitor.h) */
    int test_no_stats;           /* bench only: apply without the stats view
                                    (apply_batch_set_stats). Needs a fresh
                                    store, which is then marked (meta
                                    "nostats") and refused with stats on. */
    int idle_pause_ms;           /* 0 (default): always fetching. N: after N
                                    ms without an event the consumer stops
                                    fetching (an idle view costs no CPU)
                                    until objlog_materializer_kick: whoever
                                    sets this must kick when events may have
                                    arrived (objlogd's query service does,
                                    at least once a second when the log's
                                    end passes what was applied) */
    int cluster;                 /* 0 (default): apply every partition
                                    (assign). 1: subscribe in group_id with
                                    cooperative rebalancing and apply only
                                    the partitions the group assigns here
                                    (objlog_materializer_owns) */
    const char *client_id;       /* librdkafka client.id (cluster: names the
                                    node's URL for its peers) */
    int hold_new;                /* cluster only: a partition given to this
                                    view (group or standby) that its store
                                    never applied starts held
                                    (objlog_materializer_hold): whoever set
                                    this bootstraps it from a peer's
                                    checkpoint or releases it */
    int standbys;                /* cluster only: > 0 makes a second
                                    consumer (assign, not a group member)
                                    that applies the partitions given to
                                    objlog_materializer_set_standbys */
    int apply_threads;           /* threads applying a batch's partitions,
                                    each owning partitions p with p % N its
                                    own (lanes.h): 0 (default) one per
                                    online core, at most
                                    OBJLOG_APPLY_THREADS_MAX and never more
                                    than there are partitions */
    objlog_materializer_log_cb *log_cb; /* the materializer's lines and
                                    librdkafka's; NULL: stderr */
    void *log_opaque;
} objlog_materializer_conf;
#define OBJLOG_APPLY_THREADS_MAX 64

objlog_materializer *objlog_materializer_new(const objlog_materializer_conf *conf,
                                             objlog_store *store, char *errstr,
                                             size_t errstr_size);
/* The apply threads it runs (conf apply_threads as resolved). */
int objlog_materializer_apply_threads(const objlog_materializer *m);
/* How far behind the log it is: events in the log past the applied
 * offsets of the partitions it runs (from the consumers' last fetches),
 * its apply rate over the last seconds, and the seconds left at that rate
 * (0 caught up, -1 unknown). A view that far behind applies in larger
 * batches and says so on its log. */
void objlog_materializer_catchup(objlog_materializer *m, int64_t *backlog,
                                 double *events_per_s, double *eta_s);
/* Starts the consumer thread. */
int objlog_materializer_start(objlog_materializer *m, char *errstr,
                              size_t errstr_size);
/* Stops the thread (finishing the batch in hand) and frees. */
void objlog_materializer_destroy(objlog_materializer *m);
/* 1 while this view applies partition (always, outside cluster mode). */
int objlog_materializer_owns(objlog_materializer *m, int32_t partition);
int objlog_materializer_cluster(const objlog_materializer *m);

/* What this view does with a partition: OBJLOG_ROLE_ACTIVE (the group
 * assigned it here), OBJLOG_ROLE_STANDBY (applied from the log by the
 * standby consumer although another node is active), or NONE. Either way
 * the store holds the partition up to objlog_materializer_applied. */
enum { OBJLOG_ROLE_NONE = 0, OBJLOG_ROLE_ACTIVE = 1, OBJLOG_ROLE_STANDBY = 2 };
int objlog_materializer_role(objlog_materializer *m, int32_t partition);
/* 1 while partition is applied here, as active or standby. */
int objlog_materializer_applies(objlog_materializer *m, int32_t partition);
/* Standbys (conf standbys > 0): want[p] != 0 for each partition this view
 * should also apply (want has objlog_materializer_partitions entries).
 * Taken by the materializer thread between batches; a partition the group
 * assigns here is applied as active, never twice. -1 without a standby
 * consumer. */
int objlog_materializer_set_standbys(objlog_materializer *m, const uint8_t *want);
/* 1 while the group or the standby placement has partition here, held or
 * not (objlog_materializer_role says whether it is applied now). */
int objlog_materializer_fetches(objlog_materializer *m, int32_t partition);

/* Stops applying partition until objlog_materializer_release, so another
 * thread may replace its rows (a checkpoint import, checkpoint.h). Blocks
 * until the materializer thread took the hold (no batch in hand has
 * partition) or timeout_ms: 0 held, -1 not (the ask is withdrawn).
 * Meanwhile the partition's role is NONE: reads go to other replicas. */
int objlog_materializer_hold(objlog_materializer *m, int32_t partition, int timeout_ms);
/* Applies partition again, from the applied offset its store holds now
 * (the imported checkpoint's, or 0 after a failed import). */
void objlog_materializer_release(objlog_materializer *m, int32_t partition);
int objlog_materializer_held(objlog_materializer *m, int32_t partition);

/* A RangeIn of `partition` at `offset` waits for the range its source
 * gave away at (from, from_offset) while no partition applied here will
 * bring it (its source and every other holder of the range are applied
 * elsewhere): the range must be imported from a node that applied the
 * source past its RangeOut (objlog_ckpt_import_handoff_new). The bytes
 * are copies: objlog_range_wait_free. */
typedef struct objlog_range_wait {
    int32_t partition;
    int64_t offset;
    int32_t from;
    int64_t from_offset;
    uint32_t epoch;              /* the RangeIn's map */
    uint8_t *start, *end;        /* the range; en 0: no end */
    size_t sn, en;
} objlog_range_wait;
/* 1 with *w filled when partition's RangeIn waits for an import, 0 not. */
int objlog_materializer_range_wait(objlog_materializer *m, int32_t partition,
                                   objlog_range_wait *w);
void objlog_range_wait_free(objlog_range_wait *w);

int objlog_materializer_partitions(const objlog_materializer *m);
/* 1 when the stats view is kept (always, but in benches: test_no_stats). */
int objlog_materializer_stats_view(const objlog_materializer *m);
/* The current range map (what readers route by): valid until the
 * materializer goes, even once replaced. */
const rangemap *objlog_materializer_rangemap(const objlog_materializer *m);
/* Makes rm (taken) the current map, after a handoff published it. 0, or
 * -1 out of memory (rm destroyed). */
int objlog_materializer_set_rangemap(objlog_materializer *m, rangemap *rm);
/* Next offset to apply for partition, as durable in the store. */
int64_t objlog_materializer_applied(objlog_materializer *m, int32_t partition);
/* Blocks until partition's applied offset > offset (the event at offset is
 * applied) or timeout. 0 applied, 1 timeout, -1 partition stopped. */
int objlog_materializer_wait_applied(objlog_materializer *m, int32_t partition,
                                     int64_t offset, int timeout_ms);
/* Somebody expects events (a write was sent, a reader waits): if the
 * consumer is paused for idleness (conf idle_pause_ms), it fetches again
 * within a poll. Cheap when it is not paused; any thread. */
void objlog_materializer_kick(objlog_materializer *m);
/* Round-trip times of the brokers the consumer talks to, from
 * librdkafka's statistics (refreshed every 5 s; microseconds). Fills up to
 * max, returns how many (0 before the first statistics). */
#define OBJLOG_MAX_BROKER_RTTS 16
typedef struct objlog_broker_rtt {
    int32_t broker;
    int64_t avg_us;
    int64_t p99_us;
} objlog_broker_rtt;
int objlog_materializer_broker_rtts(objlog_materializer *m, objlog_broker_rtt *out,
                                    int max);
/* 1 while paused for idleness (metrics, tests). */
int objlog_materializer_idle(objlog_materializer *m);
/* Every wait_applied, now and later, returns -1 at once (shutdown). */
void objlog_materializer_cancel_waits(objlog_materializer *m);
/* fn(opaque) runs whenever what wait_applied waits on changes (a batch
 * applied, a partition stopped, waits cancelled), on the materializer's
 * thread with its lock held: it may only wake someone (e.g. event_active)
 * and must not call back into the materializer. For event loops that
 * cannot block in wait_applied. NULL clears; after this returns the old fn
 * runs no more. */
void objlog_materializer_set_progress_cb(objlog_materializer *m,
                                         void (*fn)(void *opaque), void *opaque);
/* Error text of a stopped partition (e.g. the log start moved past the
 * applied offset), or NULL if it runs. Copies into buf. */
const char *objlog_materializer_partition_error(objlog_materializer *m,
                                                int32_t partition, char *buf,
                                                size_t buf_size);
/* 1 while applying is paused on every partition because the store cannot
 * write (a full disk, an I/O error): the last batch or retry failed; why,
 * when given, gets RocksDB's error. The materializer retries with a capped
 * exponential backoff and resumes by itself, from the stored offsets, once
 * a write goes through (stall.h). Any thread, cheap when not stalled. */
int objlog_materializer_store_stalled(objlog_materializer *m, char *why, size_t why_size);
/* Store writes that failed since start (batches and retries). */
uint64_t objlog_materializer_store_write_errors(objlog_materializer *m);
/* Events sent to the DLQ, all partitions. */
uint64_t objlog_materializer_dlq_count(objlog_materializer *m);
uint64_t objlog_materializer_events_applied(objlog_materializer *m);
/* Events applied by this process with outcome code (all partitions; an
 * undecodable event counts as InvalidEvent). */
uint64_t objlog_materializer_events_by_outcome(objlog_materializer *m,
                                               Objlog__OutcomeCode code);

/* Log times (Kafka message timestamps, ms; -1 unknown) of one partition:
 * applied_ms of its newest applied event (read from the stored outcome
 * at start), fetched_ms of the newest event the consumer has taken from
 * the log (>= applied_ms), pending_ms of the oldest taken but not yet
 * applied (-1 when nothing is pending). For lag in seconds. */
typedef struct objlog_log_times {
    int64_t applied_ms;
    int64_t fetched_ms;
    int64_t pending_ms;
} objlog_log_times;
/* 0, or -1 for a partition out of range. */
int objlog_materializer_log_times(objlog_materializer *m, int32_t partition,
                                  objlog_log_times *out);

#endif
