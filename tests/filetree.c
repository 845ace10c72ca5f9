/* filetree.c: see filetree.h. */
#include "filetree.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "proc.h"

int filetree_random_file(const char *path, size_t n) {
    FILE *in = fopen("/dev/urandom", "rb"), *out = fopen(path, "wb");
    char buf[65536];
    int rc = in && out ? 0 : -1;
    while (rc == 0 && n) {
        size_t k = n < sizeof(buf) ? n : sizeof(buf);
        rc = fread(buf, 1, k, in) == k && fwrite(buf, 1, k, out) == k ? 0 : -1;
        n -= k;
    }
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        rc = -1;
    return rc;
}

int filetree_make(const char *root) {
    static const size_t sizes[] = {0, 1, 4096, 100000, 3 << 20};
    char p[512];
    snprintf(p, sizeof(p), "%s/sub dir", root);
    if (mkdir(root, 0700) != 0 || mkdir(p, 0700) != 0)
        return -1;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        snprintf(p, sizeof(p), "%s/%sf%zu.bin", root, i % 2 ? "sub dir/" : "", i);
        if (filetree_random_file(p, sizes[i]) < 0)
            return -1;
    }
    return 0;
}

int filetree_same(const char *a, const char *b, char *why, size_t wn) {
    struct stat st;
    int dir = stat(a, &st) == 0 && S_ISDIR(st.st_mode);
    char out[4096], err[512];
    char *argv[] = {dir ? "/usr/bin/diff" : "/usr/bin/cmp", dir ? "-r" : "--", (char *)a,
                    (char *)b, NULL};
    if (proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 60000) == 0)
        return 0;
    snprintf(why, wn, "%s and %s differ: %s%s", a, b, out, err);
    return -1;
}
