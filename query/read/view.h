/* view.h: the read side of objlog without HTTP (docs/ARCHITECTURE.md,
 * "Reads"): GET, LIST, ListObjectVersions, ListMultipartUploads,
 * ListParts, the usage counters and prefix usage over one RocksDB snapshot
 * of the materialized views, returning plain C structs.
 *
 * read.h's read path fences and opens it for the APIs; tests call it
 * directly (apply events into a store, compare with a reference model). It has no fence:
 * a caller that needs read-your-writes waits for the materializer first,
 * then opens a view.
 *
 * Invariants:
 *   - every function of one view reads the same snapshot (taken by
 *     view_open), so one answer never mixes two states of the store;
 *   - results own all their memory (free with the matching _free); the
 *     view may be closed before the results are freed;
 *   - orders are S3's: keys by their UTF-8 bytes (memcmp), versions of a key
 *     newest first, uploads of a key oldest first (upload ids are hex of the
 *     CreateUpload seq), parts by number;
 *   - listings never scan under a common prefix: they skip it with one seek
 *     (prefix usage is the exception: it must count every row, so it is
 *     bounded by rows read instead);
 *   - pagination positions are exclusive and need not exist any more: a
 *     position names a place in the order, not a row.
 *
 * Return codes: VIEW_OK (0) and the VIEW_NO_SUCH_* / VIEW_INVALID_ARGUMENT
 * answers are normal results; VIEW_ERROR (-1) is a store read failure or
 * out of memory, with errstr filled.
 */
#ifndef OBJLOG_QUERY_VIEW_H
#define OBJLOG_QUERY_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "materializer.h"
#include "objlog.pb-c.h"

#define VIEW_MAX_KEYS 1000       /* max_keys / max_uploads / max_parts cap */
#define VIEW_ID_LEN 24           /* room for a version or upload id + NUL */

typedef enum view_rc {
    VIEW_ERROR = -1,
    VIEW_OK = 0,
    VIEW_NO_SUCH_BUCKET,
    VIEW_NO_SUCH_KEY,            /* no live latest version, no marker either */
    VIEW_NO_SUCH_VERSION,        /* version id unknown for this key */
    VIEW_NO_SUCH_UPLOAD,
    VIEW_INVALID_ARGUMENT,       /* malformed version id, marker without key */
    VIEW_TOO_MANY                /* more results than the caller's bound */
} view_rc;

typedef struct view view;

/* Takes a snapshot of store (borrowed; it must outlive the view). NULL only
 * when out of memory. */
view *view_open(objlog_store *store);
void view_close(view *v);

/* Bytes owned by a result (a key or a common prefix; may hold NUL). */
typedef struct view_bytes {
    uint8_t *data;
    size_t len;
} view_bytes;

/* ---------------------------------------------------------------- buckets */

typedef struct view_bucket {
    Objlog__BucketRecord *record; /* owned: name, tenant, versioning, quota,
                                     created_seq, created_ms, max_versions */
} view_bucket;

/* VIEW_OK (out filled), VIEW_NO_SUCH_BUCKET or VIEW_ERROR. */
view_rc view_get_bucket(view *v, const char *bucket, view_bucket *out,
                        char *errstr, size_t errstr_size);
void view_bucket_free(view_bucket *b);

/* ----------------------------------------------------------------- object */

/* One version or delete marker of a key. */
typedef struct view_version {
    view_bytes key;
    char version_id[VIEW_ID_LEN]; /* "null" or 16 hex digits */
    uint64_t seq;                /* the row's seq (its place in the log) */
    int is_latest;               /* the newest row of its key (marker or not) */
    int delete_marker;
    const char *etag;            /* into record; "" when none */
    uint64_t size;
    const char *storage_class;   /* into record; "STANDARD" when unset */
    int64_t last_modified_ms;    /* Kafka timestamp of the event */
    Objlog__VersionRecord *record; /* owned: meta, user metadata ... */
    int in_page;                 /* key and record belong to a listing
                                    page's arena (freed with the page) */
} view_version;

/* GET/HEAD. version_id NULL: the latest version of the key:
 *   VIEW_OK with out->delete_marker 0  -> the live object;
 *   VIEW_OK with out->delete_marker 1  -> the newest row is a delete marker
 *                                         (S3: 404 NoSuchKey + header);
 *   VIEW_NO_SUCH_KEY                   -> the key has no versions at all.
 * version_id "null" or 16 hex digits: that version, VIEW_OK (a delete
 * marker has delete_marker 1; S3: 405), VIEW_NO_SUCH_VERSION, or
 * VIEW_INVALID_ARGUMENT for a malformed id. A null version is addressed
 * only as "null". Bucket missing: VIEW_NO_SUCH_BUCKET. */
view_rc view_get_object(view *v, const char *bucket, const uint8_t *key,
                        size_t key_len, const char *version_id,
                        view_version *out, char *errstr, size_t errstr_size);
void view_version_free(view_version *ver);

/* ------------------------------------------------------------------- LIST */

typedef enum view_pos_kind {
    VIEW_POS_NONE = -1,
    VIEW_POS_KEY = 0,            /* continue after this key */
    VIEW_POS_PREFIX = 1          /* continue after everything under it */
} view_pos_kind;

/* ListObjectsV2. Lists live latest versions only. */
typedef struct view_list_req {
    const uint8_t *prefix;
    size_t prefix_len;
    const uint8_t *delimiter;    /* any bytes; len 0 = none */
    size_t delimiter_len;
    const uint8_t *start_after;  /* exclusive; len 0 = none */
    size_t start_after_len;
    view_pos_kind after_kind;    /* a previous page's next position, or NONE */
    const uint8_t *after;
    size_t after_len;
    int max_keys;                /* 0..VIEW_MAX_KEYS; prefixes count too */
} view_list_req;

typedef struct view_list {
    view_version *objects;       /* is_latest 1, delete_marker 0 */
    size_t n_objects;
    view_bytes *prefixes;        /* common prefixes, in order */
    size_t n_prefixes;
    int is_truncated;
    view_pos_kind next_kind;     /* when truncated: the last item returned */
    view_bytes next;
    struct page_arena *arena;    /* the objects' keys and records */
} view_list;

/* VIEW_OK, VIEW_NO_SUCH_BUCKET, VIEW_INVALID_ARGUMENT (max_keys out of
 * range) or VIEW_ERROR. Objects and prefixes interleave in key order; the
 * page holds at most max_keys of them together. */
view_rc view_list_objects(view *v, const char *bucket, const view_list_req *req,
                          view_list *out, char *errstr, size_t errstr_size);
void view_list_free(view_list *l);

/* ------------------------------------------------------ ListObjectVersions */

typedef struct view_versions_req {
    const uint8_t *prefix;
    size_t prefix_len;
    const uint8_t *delimiter;
    size_t delimiter_len;
    /* S3: key_marker alone -> start after every version of that key (and
     * after a common prefix equal to it); key_marker + version_id_marker ->
     * start after that version of that key (its older versions follow).
     * version_id_marker without key_marker -> VIEW_INVALID_ARGUMENT. A
     * version_id_marker of a version that no longer exists still names its
     * place (versions are ordered by seq); "null" needs the key's null
     * version to exist, else VIEW_INVALID_ARGUMENT. */
    const uint8_t *key_marker;   /* NULL = none (an empty marker is none) */
    size_t key_marker_len;
    const char *version_id_marker; /* NULL or "" = none */
    int max_keys;                /* 0..VIEW_MAX_KEYS; prefixes count too */
} view_versions_req;

typedef struct view_versions {
    view_version *versions;      /* delete markers included, is_latest set */
    size_t n_versions;
    view_bytes *prefixes;
    size_t n_prefixes;
    int is_truncated;
    /* When truncated: the last item returned. A version gives its key and
     * id; a common prefix gives the prefix and "" (pass it back as
     * key_marker alone). */
    view_bytes next_key_marker;
    char next_version_id_marker[VIEW_ID_LEN];
    struct page_arena *arena;    /* the versions' keys and records */
} view_versions;

view_rc view_list_versions(view *v, const char *bucket,
                           const view_versions_req *req, view_versions *out,
                           char *errstr, size_t errstr_size);
void view_versions_free(view_versions *l);

/* ---------------------------------------------------------------- uploads */

typedef struct view_upload {
    view_bytes key;
    char upload_id[VIEW_ID_LEN];
    int64_t initiated_ms;
    Objlog__UploadRecord *record; /* owned: meta from CreateUpload */
} view_upload;

/* ListMultipartUploads: in-progress uploads by key, then by upload id
 * (initiation order). S3 markers: key_marker alone -> keys after it;
 * key_marker + upload_id_marker -> that key's uploads with a greater id,
 * then the keys after it; upload_id_marker alone is ignored (as in S3). */
typedef struct view_uploads_req {
    const uint8_t *prefix;
    size_t prefix_len;
    const uint8_t *delimiter;
    size_t delimiter_len;
    const uint8_t *key_marker;
    size_t key_marker_len;
    const char *upload_id_marker;
    int max_uploads;             /* 0..VIEW_MAX_KEYS; prefixes count too */
} view_uploads_req;

typedef struct view_uploads {
    view_upload *uploads;
    size_t n_uploads;
    view_bytes *prefixes;
    size_t n_prefixes;
    int is_truncated;
    view_bytes next_key_marker;  /* when truncated; as for versions */
    char next_upload_id_marker[VIEW_ID_LEN];
} view_uploads;

view_rc view_list_uploads(view *v, const char *bucket,
                          const view_uploads_req *req, view_uploads *out,
                          char *errstr, size_t errstr_size);
void view_uploads_free(view_uploads *l);

typedef struct view_part {
    uint32_t part_number;
    uint64_t size;
    const char *etag;            /* into record */
    int64_t last_modified_ms;
    Objlog__PartRecord *record;  /* owned */
} view_part;

typedef struct view_parts {
    view_upload upload;          /* the upload the parts belong to */
    view_part *parts;
    size_t n_parts;
    int is_truncated;
    uint32_t next_part_number_marker; /* last part listed (0 if none) */
} view_parts;

/* ListParts: parts with number > part_number_marker, at most max_parts.
 * VIEW_NO_SUCH_UPLOAD if the upload is not in progress. */
view_rc view_list_parts(view *v, const char *bucket, const uint8_t *key,
                        size_t key_len, const char *upload_id,
                        uint32_t part_number_marker, int max_parts,
                        view_parts *out, char *errstr, size_t errstr_size);
void view_parts_free(view_parts *l);

/* ------------------------------------------------------------------ stats */

/* Usage counters (the `stats` CF, materializer.h), exact as of the
 * snapshot. buckets: of a tenant / of everything; 0 for one bucket. */
typedef struct view_usage {
    uint64_t objects, bytes, versions, version_bytes, noncurrent_versions,
        noncurrent_bytes, delete_markers, uploads, upload_part_bytes, buckets;
} view_usage;

/* The partitions a tenant, global or top read sums: in[p] != 0 for each
 * wanted p < n, rm the range map that places a bucket's row (top). A
 * standalone objlogd passes all its partitions, a cluster node those it
 * answers for: the stats rows are kept per partition, so the sums of
 * disjoint sets add up to the sum of their union. */
typedef struct view_partset {
    const unsigned char *in;
    int n;
    const rangemap *rm;
} view_partset;

/* One bucket: VIEW_OK, VIEW_NO_SUCH_BUCKET or VIEW_ERROR. Its one row is
 * its partition's; callers fence that partition. */
view_rc view_bucket_usage(view *v, const char *bucket, view_usage *out,
                          char *errstr, size_t errstr_size);
/* One tenant over the partitions of ps (all zero when it has no bucket
 * there): VIEW_OK or VIEW_ERROR. */
view_rc view_tenant_usage(view *v, const char *tenant, const view_partset *ps,
                          view_usage *out, char *errstr, size_t errstr_size);
/* Everything in the partitions of ps; *tenants = distinct tenants that
 * have at least one bucket there. With names non-NULL, also those tenants'
 * names, sorted (*names and each name owned by the caller:
 * view_names_free), but at most max_names: VIEW_TOO_MANY when there are
 * more (nothing returned). */
view_rc view_global_usage(view *v, const view_partset *ps, view_usage *out,
                          uint64_t *tenants, char ***names, size_t max_names,
                          char *errstr, size_t errstr_size);
void view_names_free(char **names, size_t n);

typedef enum view_top_by {
    VIEW_TOP_BYTES = 0,
    VIEW_TOP_OBJECTS,
    VIEW_TOP_VERSIONS
} view_top_by;

typedef struct view_top_entry {
    char *bucket; /* owned */
    char *tenant; /* owned */
    view_usage usage;
} view_top_entry;

typedef struct view_top {
    view_top_entry *e;
    size_t n;
} view_top;

/* The limit largest buckets of the partitions of ps by the counter `by`
 * (ties: bucket name ascending), largest first. One pass over the
 * buckets' stats rows (one row per bucket), then a point read per listed
 * bucket for its tenant. VIEW_OK or VIEW_ERROR. */
view_rc view_top_buckets(view *v, const view_partset *ps, view_top_by by, size_t limit,
                         view_top *out, char *errstr, size_t errstr_size);
void view_top_free(view_top *t);

/* ----------------------------------------------------------- prefix usage */

/* "Which directory is big": objects and bytes of the live current versions
 * (the `objects` CF, the same meaning as view_usage's objects/bytes) under
 * prefix, grouped one level down by the delimiter exactly as LIST groups
 * CommonPrefixes (view_rollup): a key with the delimiter somewhere after the
 * prefix counts toward key[0 .. end of that first occurrence); any other
 * key counts as "direct" (at this level). Delete markers and noncurrent
 * versions never count: they are not in `objects`.
 *
 * Bounded: one call reads at most max_rows rows and returns at most
 * max_prefixes groups, and every group it returns is complete (the scan saw
 * a row past it, or the end of the range). A page that ends inside a group
 * hands that partial group back as resume state with the last row read and
 * the running counters; the next call takes it in (req->resume) and goes on,
 * so over all pages every common prefix appears exactly once with its exact
 * totals. A page that fills max_prefixes stops before reading the first row
 * after the last group. Every row is read (no seek past a group: the
 * bytes under it are the answer). Each page is one snapshot: over a bucket that does not change
 * during the walk the figures are exact; under concurrent writes each key
 * counts as of the page that read it (as LIST pages do), never twice, since
 * the position only moves forward. */
#define VIEW_USAGE_MAX_ROWS 100000
#define VIEW_USAGE_DEFAULT_ROWS 10000
#define VIEW_USAGE_MAX_PREFIXES 1000
#define VIEW_USAGE_DEFAULT_PREFIXES 1000

/* Where a previous page stopped; all pointers borrowed. */
typedef struct view_usage_resume {
    const uint8_t *after;        /* the last key read (exclusive) */
    size_t after_len;
    /* The open partial group: after[0 .. open_len) (a group's prefix
     * always starts the last key read into it); 0 = none. */
    size_t open_len;
    uint64_t open_objects, open_bytes;
    uint64_t direct_objects, direct_bytes;  /* running, from the first page */
    uint64_t total_objects, total_bytes;    /* direct + every group so far,
                                               incl. the open one */
} view_usage_resume;

typedef struct view_usage_req {
    const uint8_t *prefix;
    size_t prefix_len;
    const uint8_t *delimiter;    /* any bytes; len 0 = none (all direct) */
    size_t delimiter_len;
    int max_rows;                /* 1..VIEW_USAGE_MAX_ROWS */
    int max_prefixes;            /* 1..VIEW_USAGE_MAX_PREFIXES */
    const view_usage_resume *resume; /* NULL: the first page */
} view_usage_req;

typedef struct view_usage_group {
    view_bytes prefix;           /* ends with the delimiter */
    uint64_t objects, bytes;
} view_usage_group;

typedef struct view_usage_page {
    view_usage_group *groups;    /* complete groups, in key order */
    size_t n_groups;
    uint64_t direct_objects, direct_bytes;  /* cumulative through this page */
    uint64_t total_objects, total_bytes;    /* final when not truncated */
    uint64_t rows_scanned;       /* rows this page read */
    int is_truncated;
    /* When truncated: the resume state (view_usage_page_resume). */
    view_bytes after;
    size_t open_len;             /* open group = after[0 .. open_len) */
    uint64_t open_objects, open_bytes;
} view_usage_page;

/* VIEW_OK, VIEW_NO_SUCH_BUCKET, VIEW_INVALID_ARGUMENT (a limit out of
 * range, or a resume state that cannot come from this prefix and
 * delimiter: its key outside the prefix, its open group not a common
 * prefix of that key) or VIEW_ERROR (store, corrupt row, memory). */
view_rc view_prefix_usage(view *v, const char *bucket, const view_usage_req *req,
                          view_usage_page *out, char *errstr, size_t errstr_size);
/* The resume state of a truncated page (pointers into page). */
void view_usage_page_resume(const view_usage_page *page, view_usage_resume *r);
void view_usage_page_free(view_usage_page *page);

/* ---------------------------------------------- for viewix.c (indexes) */

/* The snapshot every read of v uses, and its store. */
const rocksdb_snapshot_t *view_snapshot(const view *v);
objlog_store *view_store(const view *v);
/* Fills out from a stored VersionRecord value (key: the object key);
 * -1 if corrupt or out of memory. page: NULL, or a listing page's arena
 * the key and record are made in (out->in_page). */
int view_version_fill(view_version *out, const uint8_t *key, size_t kn,
                      const char *val, size_t vlen);
int view_version_fill_in(view_version *out, const uint8_t *key, size_t kn, const char *val,
                         size_t vlen, struct page_arena *page);

/* ------------------------------------------ attribute indexes (viewix.c)
 *
 * Queries over a ready index (IndexDef, from the bucket record). Value
 * filters: eq, or a half-open range [from, to) (either end optional);
 * last-modified filter [lm_from, lm_to) in ms (a seek for a composite
 * index with eq, a filter otherwise). Order: value, then (composite)
 * last-modified, then key. Positions (after) are the row's bytes after
 * the index's prefix, exclusive, as in LIST. */
typedef struct view_index_req {
    int has_eq, has_from, has_to, has_lm_from, has_lm_to;
    const uint8_t *eq, *from, *to;
    size_t eq_len, from_len, to_len;
    int64_t lm_from, lm_to;
    int max;                     /* 1..VIEW_MAX_KEYS */
    const uint8_t *after;        /* NULL: from the start */
    size_t after_len;
} view_index_req;

typedef struct view_index_page {
    view_version *objects;       /* index_objects */
    size_t n_objects;
    view_bytes *values;          /* index_values: value, count, bytes */
    uint64_t *counts, *bytes;
    size_t n_values;
    int is_truncated;
    view_bytes next;             /* when truncated: the position to resume after */
} view_index_page;

view_rc view_index_objects(view *v, const char *bucket, const Objlog__IndexDef *d,
                           const view_index_req *r, view_index_page *out,
                           char *errstr, size_t errstr_size);
view_rc view_index_values(view *v, const char *bucket, const Objlog__IndexDef *d,
                          const view_index_req *r, view_index_page *out,
                          char *errstr, size_t errstr_size);
void view_index_page_free(view_index_page *p);

#endif
