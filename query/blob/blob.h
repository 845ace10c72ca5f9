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
/* Removes the blob: 0 (also when it was not there), -1 error. */
int blob_delete(blobstore *bs, const char *id, char *errstr, size_t errstr_size);

#endif
