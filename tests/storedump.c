/* storedump.c: see storedump.h. The dumps are held in memory: the fault
 * tests write tens of thousands of small events, a few MB of dump. */
#define _GNU_SOURCE
#include "storedump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The dump of the store under dir (malloc'd, *len bytes) with its rows
 * counted per CF; NULL with why. */
static char *storedump_read(const char *dir, size_t *len, size_t rows[OBJLOG_CF_COUNT],
                            char *why, size_t why_size) {
    char err[512], *buf = NULL;
    objlog_store *s = objlog_store_open(dir, err, sizeof(err));
    if (!s) {
        snprintf(why, why_size, "open %s: %s", dir, err);
        return NULL;
    }
    FILE *f = open_memstream(&buf, len);
    int rc = f ? objlog_store_dump(s, f, err, sizeof(err)) : -1;
    if (f)
        fclose(f);
    objlog_store_close(s);
    if (rc != 0) {
        snprintf(why, why_size, "dump %s: %s", dir, f ? err : "open_memstream failed");
        free(buf);
        return NULL;
    }
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++)
        rows[cf] = 0;
    for (char *line = buf; line < buf + *len;) {
        char *nl = memchr(line, '\n', (size_t)(buf + *len - line));
        if (!nl)
            break;
        for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++) {
            size_t n = strlen(objlog_cf_name((objlog_cf)cf));
            if (!strncmp(line, objlog_cf_name((objlog_cf)cf), n) && line[n] == ' ')
                rows[cf]++;
        }
        line = nl + 1;
    }
    return buf;
}

int storedump_compare(const char *a, const char *b, size_t rows[OBJLOG_CF_COUNT],
                      char *why, size_t why_size) {
    size_t la = 0, lb = 0, rows_b[OBJLOG_CF_COUNT];
    char *da = storedump_read(a, &la, rows, why, why_size);
    if (!da)
        return -1;
    char *db = storedump_read(b, &lb, rows_b, why, why_size);
    if (!db) {
        free(da);
        return -1;
    }
    int rc = 0;
    for (int cf = 0; cf < OBJLOG_CF_COUNT && rc == 0; cf++)
        if (rows[cf] != rows_b[cf]) {
            snprintf(why, why_size, "cf %s: %zu rows vs %zu", objlog_cf_name((objlog_cf)cf),
                     rows[cf], rows_b[cf]);
            rc = -1;
        }
    if (rc == 0) {
        size_t i = 0;
        while (i < la && i < lb && da[i] == db[i])
            i++;
        if (la != lb || i < la) {
            /* Show the differing line of each dump from its start. */
            size_t s = i;
            while (s > 0 && da[s - 1] != '\n')
                s--;
            snprintf(why, why_size, "dumps differ at byte %zu (of %zu and %zu): %.160s | %.160s",
                     i, la, lb, da + (s < la ? s : la), db + (s < lb ? s : lb));
            rc = -1;
        }
    }
    free(da);
    free(db);
    return rc;
}

int storedump_applied(const char *dir, int partitions, int64_t *applied, char *why,
                      size_t why_size) {
    char err[512];
    objlog_store *s = objlog_store_open(dir, err, sizeof(err));
    if (!s) {
        snprintf(why, why_size, "open %s: %s", dir, err);
        return -1;
    }
    for (int p = 0; p < partitions; p++)
        applied[p] = objlog_store_applied(s, p);
    objlog_store_close(s);
    return 0;
}
