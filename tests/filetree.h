/* filetree.h: files for the tests that move bytes through S3 clients
 * (test_s3_bytes, test_s3_cluster): random files, a directory tree to
 * sync (sizes from 0 to 3 MB, a subfolder, a name with a space), and the
 * comparison of two files (cmp) or trees (diff -r). */
#ifndef OBJLOG_TEST_FILETREE_H
#define OBJLOG_TEST_FILETREE_H

#include <stddef.h>

/* n random bytes into path: 0 or -1. */
int filetree_random_file(const char *path, size_t n);
/* The tree under root (created): 0 or -1. */
int filetree_make(const char *root);
/* 0 when a and b hold the same bytes (files) or files (directories);
 * else -1 with what differs in why. */
int filetree_same(const char *a, const char *b, char *why, size_t wn);

#endif
