/* s3model.c: see s3model.h. */
#include "s3model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const s3model_keys[S3MODEL_N_KEYS] = {"a", "a/b", "a/c", "ab",
                                                  "b", "b/a/x", "\xc3\xa9", "c"};
const char *const s3model_prefixes[S3MODEL_N_PREFIXES] = {"", "a", "a/", "b", "b/a", "x",
                                                          "\xc3"};
const char *const s3model_delimiters[S3MODEL_N_DELIMITERS] = {"", "/", "a", "/a/"};

static void model_remove(mkey *k, int i) {
    memmove(&k->v[i], &k->v[i + 1], sizeof(mver) * (size_t)(k->n - i - 1));
    k->n--;
}

static void model_remove_null(mkey *k) {
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->v[i].vid, "null")) {
            model_remove(k, i);
            return;
        }
}

static int model_push(mkey *k, const char *vid, int marker, const char *etag) {
    if (k->n >= S3MODEL_MAX_VERSIONS)
        return -1;
    memmove(&k->v[1], &k->v[0], sizeof(mver) * (size_t)k->n);
    snprintf(k->v[0].vid, sizeof(k->v[0].vid), "%s", vid);
    k->v[0].marker = marker;
    snprintf(k->v[0].etag, sizeof(k->v[0].etag), "%s", etag);
    k->n++;
    return 0;
}

/* S3: Unversioned and Suspended write the "null" version (replacing the
 * old one wherever it is); Enabled adds a new version id. */
int model_put(model *m, int key, const char *vid, const char *etag) {
    mkey *k = &m->keys[key];
    if (m->versioning == 1)
        return model_push(k, vid, 0, etag);
    model_remove_null(k);
    return model_push(k, "null", 0, etag);
}

int model_delete(model *m, int key, const char *vid) {
    mkey *k = &m->keys[key];
    if (m->versioning == 0) {
        model_remove_null(k); /* no marker in an unversioned bucket */
        return 0;
    }
    if (m->versioning == 1)
        return model_push(k, vid, 1, "");
    model_remove_null(k);
    return model_push(k, "null", 1, "");
}

void model_delete_version(model *m, int key, const char *vid) {
    mkey *k = &m->keys[key];
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->v[i].vid, vid)) {
            model_remove(k, i);
            return;
        }
}

/* Common prefix of key under prefix/delimiter, or 0 if none. */
static int common_prefix(const char *key, const char *prefix, const char *delim, char *out) {
    size_t pl = strlen(prefix);
    if (!*delim)
        return 0;
    const char *hit = strstr(key + pl, delim);
    if (!hit)
        return 0;
    size_t n = (size_t)(hit - key) + strlen(delim);
    memcpy(out, key, n);
    out[n] = '\0';
    return 1;
}

static int cmp_key_idx(const void *a, const void *b) {
    return strcmp(s3model_keys[*(const int *)a], s3model_keys[*(const int *)b]);
}

size_t model_items(const model *m, const char *prefix, const char *delim, int versions,
                   item *out) {
    int order[S3MODEL_N_KEYS];
    for (int i = 0; i < S3MODEL_N_KEYS; i++)
        order[i] = i;
    qsort(order, S3MODEL_N_KEYS, sizeof(int), cmp_key_idx);
    size_t n = 0;
    for (size_t i = 0; i < S3MODEL_N_KEYS; i++) {
        int ki = order[i];
        const char *key = s3model_keys[ki];
        const mkey *k = &m->keys[ki];
        if (strncmp(key, prefix, strlen(prefix)) || k->n == 0)
            continue;
        if (!versions && k->v[0].marker)
            continue;
        char cp[64];
        if (common_prefix(key, prefix, delim, cp)) {
            if (n == 0 || !out[n - 1].is_prefix || strcmp(out[n - 1].key, cp)) {
                memset(&out[n], 0, sizeof(item));
                snprintf(out[n].key, sizeof(out[n].key), "%s", cp);
                out[n++].is_prefix = 1;
            }
            continue;
        }
        for (int v = 0; v < (versions ? k->n : 1); v++) {
            memset(&out[n], 0, sizeof(item));
            snprintf(out[n].key, sizeof(out[n].key), "%s", key);
            snprintf(out[n].vid, sizeof(out[n].vid), "%s", k->v[v].vid);
            snprintf(out[n].etag, sizeof(out[n].etag), "%s", k->v[v].etag);
            out[n].marker = k->v[v].marker;
            out[n++].latest = v == 0;
        }
    }
    return n;
}

int model_expect(const char *what, const item *want, size_t nw, const item *got, size_t ng,
                 char *msg, size_t msg_size) {
    if (nw != ng) {
        snprintf(msg, msg_size, "%s: %zu items, model has %zu (first got %s)", what, ng, nw,
                 ng ? got[0].key : "-");
        return -1;
    }
    for (size_t i = 0; i < nw; i++) {
        const item *a = &want[i], *b = &got[i];
        if (strcmp(a->key, b->key) || a->is_prefix != b->is_prefix || strcmp(a->vid, b->vid) ||
            a->marker != b->marker || a->latest != b->latest || strcmp(a->etag, b->etag)) {
            snprintf(msg, msg_size,
                     "%s item %zu: got %s%s v=%s m=%d l=%d e=%s, model %s%s v=%s m=%d l=%d e=%s",
                     what, i, b->is_prefix ? "PRE " : "", b->key, b->vid, b->marker, b->latest,
                     b->etag, a->is_prefix ? "PRE " : "", a->key, a->vid, a->marker, a->latest,
                     a->etag);
            return -1;
        }
    }
    return 0;
}
