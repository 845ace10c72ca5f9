/* applympu.c: the state machine's multipart uploads: CreateUpload,
 * UploadPart, CompleteUpload and AbortUpload (apply.c dispatches them).
 *
 * Invariant: an upload's rows (its record, then its parts) live in the
 * `uploads` CF until Complete or Abort removes them in the same batch as
 * the outcome; a completed object's version carries its parts' blobs in
 * part order (ObjectMeta.parts), so its bytes are found without the upload.
 *
 * A circle with apply.c, on purpose: apply.c dispatches each event here by
 * its kind, and these rules use its gates (the bucket, the preconditions,
 * a new version under the versioning and the cap), which every key
 * operation shares. */
#include "applyint.h"

#include "keycodec.h"
#include "rows.h"

#include <openssl/evp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PART_NUMBER_MAX 10000
#define PART_MIN_SIZE (5ULL * 1024 * 1024) /* every part but the last */

/* A part ETag (optionally quoted) as the 16 bytes of its MD5. 0 or -1 if
 * it is not exactly 32 hex digits. */
static int etag_md5(const char *etag, uint8_t out[MD5_LEN]) {
    size_t n = etag ? strlen(etag) : 0;
    if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"')
        etag++, n -= 2;
    if (n != 2 * MD5_LEN)
        return -1;
    for (int i = 0; i < MD5_LEN; i++) {
        int hi = keycodec_hex_digit(etag[2 * i]), lo = keycodec_hex_digit(etag[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int apply_op_create_upload(apply_ev *a) {
    bucket_state bs;
    int rc = apply_key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    const Objlog__ObjectMeta *m = a->ev->create_upload->meta;
    if (m && !apply_acl_ok(a, m->acl))
        return 0;
    keycodec_version_id(a->seq, a->res.upload_id);
    Objlog__UploadRecord r = OBJLOG__UPLOAD_RECORD__INIT;
    r.upload_id = a->res.upload_id;
    r.key = a->ev->key;
    r.meta = a->ev->create_upload->meta;
    r.initiated_seq = a->seq;
    r.initiated_ms = a->log_time_ms;
    keybuf row;
    if (stage_upload_row(a, r.upload_id, &row) < 0)
        return -1;
    rc = apply_batch_put_msg(a->b, OBJLOG_CF_UPLOADS, row.data, row.len, &r.base,
                             a->errstr, a->es);
    keybuf_free(&row);
    a->d.uploads++;
    return rc;
}

int apply_op_upload_part(apply_ev *a) {
    bucket_state bs;
    int rc = apply_key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    const Objlog__UploadPart *up = a->ev->upload_part;
    if (up->part_number < 1 || up->part_number > PART_NUMBER_MAX) {
        char n[16];
        snprintf(n, sizeof(n), "%u", up->part_number);
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
               "part number %s is not between 1 and 10000", n);
        return 0;
    }
    Objlog__UploadRecord *ur;
    rc = apply_require_upload(a, up->upload_id, &ur);
    if (rc <= 0)
        return rc;
    objlog__upload_record__free_unpacked(ur, NULL);
    keybuf row;
    if (stage_part_row(a, up->upload_id, up->part_number, &row) < 0)
        return -1;
    Objlog__PartRecord *old;
    rc = stage_load_part(a, up->upload_id, up->part_number, &old);
    if (rc == 1) {
        /* A part sent again replaces the first one's bytes. */
        a->d.upload_part_bytes -= (int64_t)old->size;
        blobrefs_from f = {.key = a->ev->key.data, .kn = a->ev->key.len,
                           .upload_id = up->upload_id};
        rc = blobrefs_remove(a->b, &a->blobs, old->blob_id, BLOBREFS_PART, row.data, row.len,
                             &f, a->errstr, a->es);
        objlog__part_record__free_unpacked(old, NULL);
    }
    if (rc < 0) {
        keybuf_free(&row);
        return -1;
    }
    a->d.upload_part_bytes += (int64_t)up->size;
    Objlog__PartRecord p = OBJLOG__PART_RECORD__INIT;
    p.part_number = up->part_number;
    p.size = up->size;
    p.etag = up->etag;
    p.blob_id = up->blob_id;
    p.last_modified_ms = a->log_time_ms;
    rc = apply_batch_put_msg(a->b, OBJLOG_CF_UPLOADS, row.data, row.len, &p.base,
                             a->errstr, a->es);
    if (rc == 0)
        rc = blobrefs_add(a->b, up->blob_id, BLOBREFS_PART, row.data, row.len, a->errstr,
                          a->es);
    keybuf_free(&row);
    a->res.etag = up->etag;
    return rc;
}

/* The blobs of a completed object's parts, in order (ObjectMeta.parts):
 * the ids are copies, freed by blob_parts_free. */
typedef struct blob_parts {
    Objlog__BlobPart *items;
    Objlog__BlobPart **ptrs;
    size_t n;
} blob_parts;

static void blob_parts_free(blob_parts *bp) {
    for (size_t i = 0; i < bp->n; i++)
        free(bp->items[i].blob_id);
    free(bp->items);
    free(bp->ptrs);
    memset(bp, 0, sizeof(*bp));
}

static int blob_parts_add(blob_parts *bp, const Objlog__PartRecord *p) {
    Objlog__BlobPart *it = &bp->items[bp->n];
    objlog__blob_part__init(it);
    if (!(it->blob_id = strdup(p->blob_id ? p->blob_id : "")))
        return -1;
    it->size = p->size;
    bp->ptrs[bp->n++] = it;
    return 0;
}

/* Checks Complete's part list against the recorded parts and computes the
 * object's size and S3 multipart ETag into a->res.etag_buf, and its parts'
 * blobs into bp (bp->items and ptrs sized for every part). 1 valid, 0
 * rejected (outcome set), -1 error. */
static int check_parts(apply_ev *a, const Objlog__CompleteUpload *cu,
                       uint64_t *size, blob_parts *bp) {
    char num[16];
    if (cu->n_parts == 0) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT, "%s",
               "complete needs at least one part");
        return 0;
    }
    for (size_t i = 1; i < cu->n_parts; i++) {
        if (cu->parts[i]->part_number > cu->parts[i - 1]->part_number)
            continue;
        snprintf(num, sizeof(num), "%u", cu->parts[i]->part_number);
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART_ORDER,
               "part %s is not in ascending order", num);
        return 0;
    }
    uint8_t *md5s = malloc(cu->n_parts * MD5_LEN);
    if (!md5s) {
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    int rc = 1;
    *size = 0;
    for (size_t i = 0; i < cu->n_parts && rc == 1; i++) {
        const Objlog__CompletedPart *want = cu->parts[i];
        Objlog__PartRecord *got;
        uint8_t given[MD5_LEN];
        snprintf(num, sizeof(num), "%u", want->part_number);
        rc = stage_load_part(a, cu->upload_id, want->part_number, &got);
        if (rc < 0)
            break;
        if (rc == 0) {
            apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART,
                   "part %s was not uploaded", num);
            break;
        }
        if (etag_md5(got->etag, md5s + i * MD5_LEN) < 0 ||
            etag_md5(want->etag, given) < 0 ||
            memcmp(given, md5s + i * MD5_LEN, MD5_LEN) != 0) {
            apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART,
                   "part %s: the etag does not match the uploaded part", num);
            rc = 0;
        } else if (i + 1 < cu->n_parts && got->size < PART_MIN_SIZE) {
            apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_ENTITY_TOO_SMALL,
                   "part %s is smaller than 5 MiB and not the last", num);
            rc = 0;
        }
        *size += got->size;
        if (rc == 1 && blob_parts_add(bp, got) < 0) {
            snprintf(a->errstr, a->es, "out of memory");
            rc = -1;
        }
        objlog__part_record__free_unpacked(got, NULL);
    }
    if (rc == 1) {
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned mdn = 0;
        if (!EVP_Digest(md5s, cu->n_parts * MD5_LEN, md, &mdn, EVP_md5(), NULL)) {
            snprintf(a->errstr, a->es, "md5 failed");
            rc = -1;
        } else {
            char *p = a->res.etag_buf;
            for (unsigned i = 0; i < mdn; i++, p += 2)
                snprintf(p, 3, "%02x", md[i]);
            snprintf(p, sizeof(a->res.etag_buf) - (size_t)(p - a->res.etag_buf),
                     "-%u", (unsigned)(cu->n_parts % 100000));
        }
    }
    free(md5s);
    return rc;
}

int apply_op_complete_upload(apply_ev *a) {
    bucket_state bs;
    int rc = apply_key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    const Objlog__CompleteUpload *cu = a->ev->complete_upload;
    Objlog__UploadRecord *ur;
    rc = apply_require_upload(a, cu->upload_id, &ur);
    if (rc <= 0)
        return rc;
    uint64_t size;
    blob_parts bp = {.items = calloc(cu->n_parts + 1, sizeof(*bp.items)),
                     .ptrs = calloc(cu->n_parts + 1, sizeof(*bp.ptrs))};
    if (!bp.items || !bp.ptrs) {
        snprintf(a->errstr, a->es, "out of memory");
        rc = -1;
    } else {
        rc = check_parts(a, cu, &size, &bp);
    }
    if (rc == 1)
        rc = apply_check_preconditions(a);
    if (rc == 1 && stage_key_begin(a) < 0)
        rc = -1;
    if (rc == 1) {
        /* A shallow copy: the strings stay owned by ur. */
        Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
        if (ur->meta)
            meta = *ur->meta;
        meta.size = size;
        meta.etag = a->res.etag_buf;
        meta.blob_id = "";
        meta.n_parts = bp.n;
        meta.parts = bp.ptrs;
        rc = apply_put_version(a, &bs, &meta);
    }
    blob_parts_free(&bp);
    objlog__upload_record__free_unpacked(ur, NULL);
    if (rc <= 0)
        return rc;
    a->res.etag = a->res.etag_buf;
    a->feed_event = "ObjectCreated:CompleteMultipartUpload";
    a->feed_size = size;
    a->feed_etag = a->res.etag;
    rc = stage_remove_upload(a, cu->upload_id);
    return rc < 0 ? -1 : stage_key_end(a);
}

int apply_op_abort_upload(apply_ev *a) {
    bucket_state bs;
    int rc = apply_key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    const char *uid = a->ev->abort_upload->upload_id;
    Objlog__UploadRecord *ur;
    rc = apply_require_upload(a, uid, &ur);
    if (rc <= 0)
        return rc;
    objlog__upload_record__free_unpacked(ur, NULL);
    return stage_remove_upload(a, uid);
}

