/* s3creds.c: the S3 credentials file (s3auth.h). One
 *
 *     ACCESS_KEY_ID SECRET_KEY TENANT [admin]
 *
 * per line, fields separated by spaces or tabs; '#' starts a comment line,
 * blank lines are skipped. Access key ids are 1..128 of [A-Za-z0-9._-]
 * (they travel inside "Credential=AK/date/..."), secrets 1..128 printable
 * ASCII characters, tenants 1..256 bytes of UTF-8 without '/' (the rule of
 * the JSON API's tenant names). The optional fourth field is the key's
 * role: `admin` may act on every tenant's buckets.
 *
 * The file holds secrets: one that group or others may read is refused
 * unless the caller allows it (objlogd --insecure, which then warns).
 *
 * Invariant: a loaded s3creds holds every line of the file, key ids unique,
 * sorted by key id for s3creds_find; a file with any bad line loads
 * nothing. Secrets are wiped when freed. */
#include "s3auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "keycodec.h"
#include "secretfile.h"

struct s3creds {
    s3cred *v;
    size_t n;
    unsigned open_mode;          /* the file's group/other bits, when allowed */
};

typedef struct entry {
    s3cred c;
    int line;
} entry;

static void cred_clear(s3cred *c) {
    if (c->secret)
        OPENSSL_cleanse(c->secret, strlen(c->secret));
    free(c->access_key);
    free(c->secret);
    free(c->tenant);
    memset(c, 0, sizeof(*c));
}

static int key_chars_ok(const char *s) {
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

static int secret_chars_ok(const char *s) {
    for (; *s; s++)
        if (*s < 0x21 || *s > 0x7e)
            return 0;
    return 1;
}

static int tenant_ok(const char *s) {
    size_t n = strlen(s);
    return !strchr(s, '/') && keycodec_utf8_valid_len((const uint8_t *)s, n) == n;
}

/* The problem with one field, or NULL. */
static const char *field_problem(const char *what, const char *v, size_t max,
                                 int (*ok)(const char *), char *buf, size_t bn) {
    if (strlen(v) > max) {
        snprintf(buf, bn, "%s too long (at most %zu bytes)", what, max);
        return buf;
    }
    if (!ok(v)) {
        snprintf(buf, bn, "bad characters in %s", what);
        return buf;
    }
    return NULL;
}

static int entry_cmp(const void *a, const void *b) {
    const entry *x = a, *y = b;
    int c = strcmp(x->c.access_key, y->c.access_key);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static int cred_cmp(const void *key, const void *elem) {
    return strcmp(key, ((const s3cred *)elem)->access_key);
}

/* Parses one line into e; 0, 1 for a blank or comment line, -1 with why. */
static int parse_line(char *line, entry *e, char *why, size_t wn) {
    static const char *const names[] = {"access key id", "secret key", "tenant"};
    static const char usage[] = "expected ACCESS_KEY_ID SECRET_KEY TENANT [admin]";
    static const size_t max[] = {S3CREDS_MAX_KEY_LEN, S3CREDS_MAX_SECRET_LEN,
                                 S3CREDS_MAX_TENANT_LEN};
    int (*const ok[])(const char *) = {key_chars_ok, secret_chars_ok, tenant_ok};
    char *f[4], *save = NULL, *tok;
    int k = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (k == 0 && tok[0] == '#')
            return 1;
        if (k == 4) {
            snprintf(why, wn, "extra field '%.32s' (%s)", tok, usage);
            return -1;
        }
        f[k++] = tok;
    }
    if (k == 0)
        return 1;
    if (k < 3) {
        snprintf(why, wn, "missing %s (%s)", names[k], usage);
        return -1;
    }
    if (k == 4 && strcmp(f[3], "admin") != 0) {
        snprintf(why, wn, "unknown role '%.32s' (the only role is admin; %s)", f[3], usage);
        return -1;
    }
    e->c.admin = k == 4;
    for (int i = 0; i < 3; i++) {
        const char *p = field_problem(names[i], f[i], max[i], ok[i], why, wn);
        if (p)
            return -1;
    }
    e->c.access_key = strdup(f[0]);
    e->c.secret = strdup(f[1]);
    e->c.tenant = strdup(f[2]);
    OPENSSL_cleanse(f[1], strlen(f[1]));
    if (!e->c.access_key || !e->c.secret || !e->c.tenant) {
        cred_clear(&e->c);
        snprintf(why, wn, "out of memory");
        return -1;
    }
    return 0;
}

static void entries_free(entry *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        cred_clear(&v[i].c);
    free(v);
}

s3creds *s3creds_load(const char *path, int allow_open, char *errstr, size_t errstr_size) {
    char line[1024], why[160];
    entry *v = NULL;
    size_t n = 0;
    int lineno = 0;
    unsigned open_mode = 0;
    FILE *f = secretfile_open(path, allow_open, &open_mode, errstr, errstr_size);
    if (!f)
        return NULL;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(errstr, errstr_size, "%s:%d: line too long (at most %zu bytes)", path,
                     lineno, sizeof(line) - 2);
            goto bad;
        }
        entry e;
        memset(&e, 0, sizeof(e));
        e.line = lineno;
        int rc = parse_line(line, &e, why, sizeof(why));
        OPENSSL_cleanse(line, sizeof(line));
        if (rc < 0) {
            snprintf(errstr, errstr_size, "%s:%d: %s", path, lineno, why);
            goto bad;
        }
        if (rc > 0)
            continue;
        entry *nv = realloc(v, (n + 1) * sizeof(*v));
        if (!nv) {
            cred_clear(&e.c);
            snprintf(errstr, errstr_size, "%s:%d: out of memory", path, lineno);
            goto bad;
        }
        v = nv;
        v[n++] = e;
    }
    if (ferror(f)) {
        snprintf(errstr, errstr_size, "%s: read error", path);
        goto bad;
    }
    fclose(f);
    f = NULL;
    if (n)
        qsort(v, n, sizeof(*v), entry_cmp);
    for (size_t i = 1; i < n; i++)
        if (strcmp(v[i - 1].c.access_key, v[i].c.access_key) == 0) {
            snprintf(errstr, errstr_size, "%s:%d: duplicate access key id '%s' (first on line %d)",
                     path, v[i].line, v[i].c.access_key, v[i - 1].line);
            goto bad;
        }
    s3creds *c = calloc(1, sizeof(*c));
    if (!c || (n && !(c->v = calloc(n, sizeof(*c->v))))) {
        free(c);
        snprintf(errstr, errstr_size, "%s: out of memory", path);
        goto bad;
    }
    for (size_t i = 0; i < n; i++)
        c->v[i] = v[i].c;
    c->n = n;
    c->open_mode = open_mode;
    free(v);
    return c;
bad:
    if (f)
        fclose(f);
    entries_free(v, n);
    return NULL;
}

const s3cred *s3creds_find(const s3creds *c, const char *access_key) {
    if (!c || !access_key || !c->n)
        return NULL;
    return bsearch(access_key, c->v, c->n, sizeof(*c->v), cred_cmp);
}

size_t s3creds_count(const s3creds *c) { return c ? c->n : 0; }

unsigned s3creds_open_mode(const s3creds *c) { return c ? c->open_mode : 0; }

void s3creds_free(s3creds *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        cred_clear(&c->v[i]);
    free(c->v);
    free(c);
}
