/* partdump.c: see partdump.h. */
#define _GNU_SOURCE
#include "partdump.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARTDUMP_OWN (-100)

static int hexval(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

static uint8_t *unhex(const char *h, size_t hn, size_t *n) {
    uint8_t *out = malloc(hn / 2 + 1);
    for (size_t i = 0; out && i + 1 < hn; i += 2)
        out[i / 2] = (uint8_t)(hexval(h[i]) << 4 | hexval(h[i + 1]));
    *n = hn / 2;
    return out;
}

static int be32(const uint8_t *p) {
    return (int)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static int row_of(const rangemap *rm, const char *cf, size_t cn, const uint8_t *k, size_t kn,
                  const uint8_t *v, size_t vn) {
    if (!strncmp(cf, "versions", cn) || !strncmp(cf, "objects", cn) ||
        !strncmp(cf, "buckets", cn) || !strncmp(cf, "uploads", cn) ||
        !strncmp(cf, "indexes", cn))
        return rangemap_partition(rm, k, kn);
    if (!strncmp(cf, "stats", cn)) /* each row names its partition */
        return objlog_stats_row_partition(rm, k, kn);
    if (!strncmp(cf, "outcomes", cn))
        return kn == 13 && k[0] == 'o' ? be32(k + 1)
               : kn > 1 && k[0] == 'r' && vn == 12 ? be32(v) : -1;
    /* How this store came by its rows (the last checkpoint imported, a
     * range imported for a RangeIn): its own, in no partition's state. */
    if ((kn == 10 && !memcmp(k, "ckbase", 6)) || (kn == 21 && !memcmp(k, "rimported", 9)))
        return PARTDUMP_OWN;
    static const char *const names[] = {"applied", "dlq", "olow"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(names[i]);
        if (kn == n + 4 && !memcmp(k, names[i], n))
            return be32(k + n);
    }
    return -1;
}

int partdump_row(const rangemap *rm, const char *line) {
    const char *sp1 = strchr(line, ' '), *sp2 = strchr(sp1 + 1, ' '), *nl = strchr(sp2, '\n');
    size_t kn, vn;
    uint8_t *k = unhex(sp1 + 1, (size_t)(sp2 - sp1 - 1), &kn);
    uint8_t *v = unhex(sp2 + 1, (size_t)(nl - sp2 - 1), &vn);
    int p = k && v ? row_of(rm, line, (size_t)(sp1 - line), k, kn, v, vn) : -1;
    free(k);
    free(v);
    return p;
}

char *partdump(objlog_store *s, const rangemap *rm, int p, int mine, size_t *nrows) {
    char *all = NULL, *out = NULL, err[512];
    size_t alen = 0, olen = 0, n = 0;
    FILE *f = open_memstream(&all, &alen);
    if (!f)
        return NULL;
    int rc = objlog_store_dump(s, f, err, sizeof(err));
    fclose(f);
    FILE *o = rc == 0 ? open_memstream(&out, &olen) : NULL;
    for (char *line = all; o && line < all + alen;) {
        char *nl = strchr(line, '\n');
        int rp = partdump_row(rm, line);
        if (rp != PARTDUMP_OWN && (rp == p) == mine) {
            fwrite(line, 1, (size_t)(nl - line + 1), o);
            n++;
        }
        line = nl + 1;
    }
    if (o)
        fclose(o);
    free(all);
    if (nrows)
        *nrows = n;
    return out;
}
