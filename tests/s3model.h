/* s3model.h: S3's object rules as a small reference model, for property
 * tests that drive objlog with random operation sequences and compare every
 * answer with it: test_s3_model (the state machine and the view, directly)
 * and test_s3_model_wire (the same through the JSON API and the S3
 * endpoint). The model is S3's rules stated as plainly as possible: a key
 * is a list of versions, newest first. */
#ifndef OBJLOG_TEST_S3MODEL_H
#define OBJLOG_TEST_S3MODEL_H

#include <stddef.h>

#define S3MODEL_MAX_VERSIONS 16
#define S3MODEL_VID_LEN 24       /* "null" or 16 hex digits, NUL; VIEW_ID_LEN */

extern const char *const s3model_keys[];
#define S3MODEL_N_KEYS 8
extern const char *const s3model_prefixes[];
#define S3MODEL_N_PREFIXES 7
extern const char *const s3model_delimiters[];
#define S3MODEL_N_DELIMITERS 4

typedef struct mver {
    char vid[S3MODEL_VID_LEN];
    int marker;
    char etag[40];
} mver;

typedef struct mkey {
    mver v[S3MODEL_MAX_VERSIONS]; /* v[0] is the newest */
    int n;
} mkey;

typedef struct model {
    char bucket[32];
    int versioning; /* 0 unversioned, 1 enabled, 2 suspended */
    mkey keys[S3MODEL_N_KEYS];
} model;

/* A PUT of key (its version id when the bucket is versioning), a DELETE
 * (vid: the marker's id when one is made) and a DELETE of one version.
 * -1 when the model cannot hold another version of key. */
int model_put(model *m, int key, const char *vid, const char *etag);
int model_delete(model *m, int key, const char *vid);
void model_delete_version(model *m, int key, const char *vid);

/* One entry of a listing: an object or version, or a common prefix. */
typedef struct item {
    char key[64];
    char vid[S3MODEL_VID_LEN]; /* "" for a common prefix */
    int is_prefix, marker, latest;
    char etag[40];
} item;

/* What a listing under prefix/delimiter holds, in key order: the latest
 * live version of each key (versions 0), or every version and marker
 * newest first (versions 1), common prefixes rolled up. */
size_t model_items(const model *m, const char *prefix, const char *delim, int versions,
                   item *out);
/* 0 when got equals want item by item; else -1 with the first difference
 * in msg (what names the listing). */
int model_expect(const char *what, const item *want, size_t nw, const item *got, size_t ng,
                 char *msg, size_t msg_size);

#endif
