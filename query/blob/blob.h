/* blob.h: where the S3 endpoint keeps object bytes (objlogd --blob-dir).
 * objlog owns metadata; a version names its bytes by blob id (ObjectMeta
 * blob_id, or the blobs of its parts), and this store keeps them: a blob is
 * immutable and named by the SHA-256 of its bytes, so two writes of the
 * same bytes share one file and a reader can check what it got.
 *
 * A write streams its bytes in (blob_put_*), and they are durable before
 * its event is produced; the blob becomes readable only once the write's
 * outcome is known to be applied, or unknown (blob_put_keep), and a write
 * that failed drops its own copy (blob_put_drop) without touching a blob
 * another write of the same bytes made readable.
 *
 * The local backend (blobdir.c) keeps DIR/ab/<id> (ab: the id's first two
 * hex digits), a write's bytes in DIR/.tmp/ while they arrive, then in
 * DIR/.pending/<id>.<nonce> (fsynced, renamed, the directory fsynced)
 * until kept (linked into place, fsynced) or dropped (unlinked). Opening
 * the store deletes what .tmp holds of writes never finished (files not
 * written for 10 minutes: a younger one may be another process's upload)
 * and makes every pending blob readable (a write whose outcome nobody
 * waited for may have been applied: its bytes must not be lost). Several
 * objlogd processes on one machine may share a directory.
 *
 * The remote backend (--blob-s3, blobs3.c) keeps the blobs in an
 * S3-compatible store under their ids, and this layout as its spool: a
 * finished write's pending file goes up to the store (its SHA-256 signed
 * as the payload hash) before blob_put_finish returns, and is removed
 * here; keep has nothing left to do, and drop leaves an uploaded blob in
 * the store (the same bytes may be another write's); a read comes down
 * into an unlinked file. Transfers block the calling thread, as the local
 * backend's fsync does.
 *
 * Collection (local backend only): a blob no version names any more is
 * deleted by a collection round (blob_collect, driven by blobgc.h), which
 * must never take bytes a write in flight is about to name. A write's keep
 * holds the store's lock shared while it links; a round holds it
 * exclusive, and its rule is:
 *   1. take the lock (keeps wait; a keep already done was produced before);
 *   2. fence: the view has applied every partition up to the log end
 *      offset read now, so every write produced before step 1 is seen;
 *   3. list DIR/.pending once: a candidate a write or a copy in flight
 *      names (.pending/<id>.*) is skipped;
 *   4. a candidate still referenced (the view, as of step 2) is skipped;
 *      the others are unlinked from DIR/ab/ (the directories fsynced);
 *   5. release the lock.
 * A write kept after the round started waits for it and links its own
 * pending bytes back; a copy pins its source's blobs (blob_pin: a hard
 * link into .pending) before its event is produced, so a round either
 * sees the pin (step 3) or unlinks a name whose bytes the pin still holds,
 * and the copy's keep links them back. The lock is this process's: the
 * nodes of a cluster that share a directory do not collect. The remote
 * backend's garbage is not collected yet (blob_collect refuses, blob_pin
 * has nothing to hold).
 *
 * Every call is thread-safe; a blob_put belongs to one thread at a time. */
#ifndef OBJLOG_QUERY_BLOB_H
#define OBJLOG_QUERY_BLOB_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;

#define BLOB_ID_LEN 64           /* hex SHA-256 */

typedef struct blobstore blobstore;
typedef struct blob_put blob_put;

/* The store in dir (created when missing), recovered as above. NULL with
 * errstr naming the path and the reason. */
blobstore *blobstore_open(const char *dir, char *errstr, size_t errstr_size);
/* The remote backend (--blob-s3): blobs kept in the S3-compatible store
 * at url (http(s)://HOST[:PORT]/BUCKET) with the key in creds (blobs3.h),
 * dir the local spool of writes in flight (recovered as above: a pending
 * blob goes up to the store). NULL with errstr. */
blobstore *blobstore_open_remote(const char *dir, const char *url, const char *creds,
                                 int allow_open, char *errstr, size_t errstr_size);
void blobstore_free(blobstore *bs);
const char *blobstore_dir(const blobstore *bs);
/* The remote store's URL, NULL for the local backend. */
const char *blobstore_remote(const blobstore *bs);

/* 1 when id is one this store could hold (64 lowercase hex digits): ids
 * from metadata are checked before they name a file. */
int blob_id_valid(const char *id);

/* A new blob: its bytes as they arrive. NULL with errstr. The writing
 * calls leave errno as the failing system call set it (ENOSPC: the disk
 * is full). */
blob_put *blob_put_begin(blobstore *bs, char *errstr, size_t errstr_size);
int blob_put_write(blob_put *p, const void *data, size_t n, char *errstr, size_t errstr_size);
/* Every byte written: fsynced and named; id (BLOB_ID_LEN + 1 bytes) and
 * *size set. Not readable until blob_put_keep. 0 or -1 (p must still be
 * dropped). */
int blob_put_finish(blob_put *p, char *id, uint64_t *size, char *errstr, size_t errstr_size);
/* The write carrying the blob was applied, or its outcome is unknown: the
 * blob becomes readable by id (durably). Frees p. 0, or -1 with errstr
 * (the bytes stay pending, readable after the next open). */
int blob_put_keep(blob_put *p, char *errstr, size_t errstr_size);
/* The write failed (or never finished): its bytes go. Frees p; NULL is a
 * no-op. */
void blob_put_drop(blob_put *p);

/* Appends bytes [off, off + len) of blob id to out as a file segment (the
 * bytes are read as out is written, never copied whole into memory). 0; 1
 * no such blob; -1 error (the blob is shorter than off + len, say). */
int blob_get(blobstore *bs, const char *id, uint64_t off, uint64_t len, struct evbuffer *out,
             char *errstr, size_t errstr_size);
/* The blob's size: 0, 1 no such blob, -1 error. */
int blob_stat(blobstore *bs, const char *id, uint64_t *size, char *errstr, size_t errstr_size);
/* Removes the blob: 0 (also when it was not there), -1 error. Local
 * backend: as a round does (under the lock), but with no check at all. */
int blob_delete(blobstore *bs, const char *id, char *errstr, size_t errstr_size);

/* ---- pins and collection (the rule above) ---- */

/* A write about to name blob id without bringing its bytes (CopyObject
 * names its source's): the blob is hard-linked into .pending, durably,
 * and *out is settled by the write's outcome exactly as a write's
 * blob_put is (blob_put_keep or blob_put_drop). 0 pinned; 1 no such blob
 * (*out NULL); -1 error (errstr, errno as the failing call set it). The
 * remote backend holds nothing: 0 with *out NULL. */
int blob_pin(blobstore *bs, const char *id, blob_put **out, char *errstr, size_t errstr_size);

/* What a round did with a candidate. */
typedef enum blob_gc_fate {
    BLOB_GC_DELETED = 0,         /* unlinked from DIR/ab/ */
    BLOB_GC_ABSENT,              /* not in the store: nothing to do */
    BLOB_GC_PENDING,             /* a write or copy in flight names it: kept */
    BLOB_GC_REFERENCED,          /* the view still names it: kept */
    BLOB_GC_ERROR                /* the check or the unlink failed: kept */
} blob_gc_fate;

/* The caller's side of a round, run under the lock (they must not call
 * back into the store's writes: a keep there would wait for the round). */
typedef struct blob_gc_check {
    /* Step 2: 0 once the view reflects every write produced before it was
     * called; -1 (errstr) not: the round deletes nothing. NULL: none. */
    int (*fence)(void *arg, char *errstr, size_t errstr_size);
    /* Step 4: 1 id is referenced, 0 not, -1 (errstr) unknown. */
    int (*referenced)(void *arg, const char *id, char *errstr, size_t errstr_size);
    void *arg;
} blob_gc_check;

/* One collection round over ids[0..n) (the rule above): fate[i] says what
 * became of ids[i], *freed the bytes unlinked. 0, with errstr naming the
 * first candidate that failed when one did (BLOB_GC_ERROR); -1 (errstr)
 * nothing deleted: the fence failed, the remote backend. */
int blob_collect(blobstore *bs, const char *const *ids, size_t n, const blob_gc_check *chk,
                 blob_gc_fate *fate, uint64_t *freed, char *errstr, size_t errstr_size);

#endif
