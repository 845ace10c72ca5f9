/* bucketname.c: see bucketname.h. Each rule is one check, in the order S3
 * lists them, so the clause returned is the first rule a name breaks. */
#include "bucketname.h"

#include <string.h>

static const char *const bucketname_prefixes[] = {"xn--", "sthree-", "amzn-s3-demo-", NULL};
static const char *const bucketname_suffixes[] = {"-s3alias", "--ol-s3", ".mrap", "--x-s3",
                                                  "--table-s3", NULL};

static int bucketname_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Four groups of digits joined by periods, like 192.168.5.4 (the groups
 * are not empty: the adjacency and end rules were checked first). */
static int bucketname_is_ip(const char *b, size_t n) {
    int dots = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i] == '.')
            dots++;
        else if (b[i] < '0' || b[i] > '9')
            return 0;
    }
    return dots == 3;
}

/* The clause of the reserved prefix or suffix b[0..n) has, or NULL. */
static const char *bucketname_reserved(const char *b, size_t n) {
    static const char *const prefix_why[] = {
        "must not begin with the reserved prefix xn--",
        "must not begin with the reserved prefix sthree-",
        "must not begin with the reserved prefix amzn-s3-demo-"};
    static const char *const suffix_why[] = {
        "must not end with the reserved suffix -s3alias",
        "must not end with the reserved suffix --ol-s3",
        "must not end with the reserved suffix .mrap",
        "must not end with the reserved suffix --x-s3",
        "must not end with the reserved suffix --table-s3"};
    for (int i = 0; bucketname_prefixes[i]; i++) {
        size_t pl = strlen(bucketname_prefixes[i]);
        if (n >= pl && memcmp(b, bucketname_prefixes[i], pl) == 0)
            return prefix_why[i];
    }
    for (int i = 0; bucketname_suffixes[i]; i++) {
        size_t sl = strlen(bucketname_suffixes[i]);
        if (n >= sl && memcmp(b + n - sl, bucketname_suffixes[i], sl) == 0)
            return suffix_why[i];
    }
    return NULL;
}

const char *bucketname_error(const char *b, size_t n) {
    if (!b || n < 3 || n > 63)
        return "must be 3 to 63 characters";
    for (size_t i = 0; i < n; i++)
        if (!bucketname_alnum(b[i]) && b[i] != '.' && b[i] != '-')
            return "may hold only a-z, 0-9, '.' and '-'";
    if (!bucketname_alnum(b[0]) || !bucketname_alnum(b[n - 1]))
        return "must begin and end with a letter or digit";
    for (size_t i = 0; i + 1 < n; i++) {
        if (b[i] == '.' && b[i + 1] == '.')
            return "must not contain two adjacent periods";
        if ((b[i] == '.' && b[i + 1] == '-') || (b[i] == '-' && b[i + 1] == '.'))
            return "must not have a period next to a hyphen";
    }
    if (bucketname_is_ip(b, n))
        return "must not be formatted as an IP address";
    return bucketname_reserved(b, n);
}
