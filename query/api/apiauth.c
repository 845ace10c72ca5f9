/* apiauth.c: the JSON API's token file (apiauth.h). */
#include "apiauth.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "keycodec.h"
#include "secretfile.h"

typedef struct apicred {
    char *token;
    apisubject subject;
    int line;
} apicred;

struct apicreds {
    apicred *v;
    size_t n;
    unsigned open_mode;
};

static const char apicreds_usage[] = "expected TOKEN SUBJECT (a tenant, or admin)";

static int token_chars_ok(const char *s) {
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              strchr("-._~+/=", *s)))
            return 0;
    return 1;
}


/* One line into e: 0, 1 blank or comment, -1 with why. */
static int apicreds_parse_line(char *line, apicred *e, char *why, size_t wn) {
    char *f[2], *save = NULL, *tok;
    int k = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (k == 0 && tok[0] == '#')
            return 1;
        if (k == 2) {
            snprintf(why, wn, "extra field '%.32s' (%s)", tok, apicreds_usage);
            return -1;
        }
        f[k++] = tok;
    }
    if (k == 0)
        return 1;
    if (k < 2) {
        snprintf(why, wn, "missing subject (%s)", apicreds_usage);
        return -1;
    }
    size_t tl = strlen(f[0]);
    if (tl < APICREDS_MIN_TOKEN_LEN || tl > APICREDS_MAX_TOKEN_LEN || !token_chars_ok(f[0])) {
        snprintf(why, wn, "a token is %d..%d characters of A-Z a-z 0-9 - . _ ~ + / =",
                 APICREDS_MIN_TOKEN_LEN, APICREDS_MAX_TOKEN_LEN);
        return -1;
    }
    if (!nodeauth_tenant_ok(f[1])) {
        snprintf(why, wn, "bad subject: a tenant is 1..%d bytes of UTF-8 without '/'",
                 APICREDS_MAX_TENANT_LEN);
        return -1;
    }
    e->subject.admin = strcmp(f[1], "admin") == 0;
    if (!e->subject.admin)
        snprintf(e->subject.tenant, sizeof(e->subject.tenant), "%s", f[1]);
    e->token = strdup(f[0]);
    OPENSSL_cleanse(f[0], tl);
    if (!e->token) {
        snprintf(why, wn, "out of memory");
        return -1;
    }
    return 0;
}

static void apicreds_clear(apicred *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        OPENSSL_cleanse(v[i].token, strlen(v[i].token));
        free(v[i].token);
    }
    free(v);
}

/* A duplicate token, named by its lines (never by the token itself). */
static int apicreds_duplicate(const apicred *v, size_t n, const char *path, char *errstr,
                              size_t errstr_size) {
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(v[i].token, v[j].token) == 0) {
                snprintf(errstr, errstr_size, "%s:%d: duplicate token (first on line %d)",
                         path, v[j].line, v[i].line);
                return 1;
            }
    return 0;
}

apicreds *apicreds_load(const char *path, int allow_open, char *errstr, size_t errstr_size) {
    unsigned open_mode = 0;
    FILE *f = secretfile_open(path, allow_open, &open_mode, errstr, errstr_size);
    if (!f)
        return NULL;
    char line[1024], why[160];
    apicred *v = NULL;
    size_t n = 0;
    int lineno = 0, bad = 0;
    while (!bad && fgets(line, sizeof(line), f)) {
        apicred e = {.line = ++lineno};
        int rc = strchr(line, '\n') || feof(f) ? apicreds_parse_line(line, &e, why, sizeof(why))
                                               : (snprintf(why, sizeof(why), "line too long"), -1);
        OPENSSL_cleanse(line, sizeof(line));
        apicred *nv = rc == 0 ? realloc(v, (n + 1) * sizeof(*v)) : v;
        if (rc == 0 && !nv) {
            free(e.token);
            rc = -1;
            snprintf(why, sizeof(why), "out of memory");
        }
        if (rc < 0) {
            snprintf(errstr, errstr_size, "%s:%d: %s", path, lineno, why);
            bad = 1;
        } else if (rc == 0) {
            v = nv;
            v[n++] = e;
        }
    }
    if (!bad && ferror(f)) {
        snprintf(errstr, errstr_size, "%s: read error", path);
        bad = 1;
    }
    fclose(f);
    if (!bad)
        bad = apicreds_duplicate(v, n, path, errstr, errstr_size);
    apicreds *c = bad ? NULL : calloc(1, sizeof(*c));
    if (!c) {
        if (!bad)
            snprintf(errstr, errstr_size, "%s: out of memory", path);
        apicreds_clear(v, n);
        return NULL;
    }
    c->v = v;
    c->n = n;
    c->open_mode = open_mode;
    return c;
}

int apicreds_find(const apicreds *c, const char *token, apisubject *out) {
    if (!c || !token)
        return -1;
    size_t tl = strlen(token);
    int found = -1;
    /* every token compared, whatever matched: the time says nothing */
    for (size_t i = 0; i < c->n; i++) {
        size_t l = strlen(c->v[i].token);
        int eq = l == tl && CRYPTO_memcmp(c->v[i].token, token, tl) == 0;
        if (eq && found < 0)
            found = (int)i;
    }
    if (found < 0)
        return -1;
    *out = c->v[found].subject;
    return 0;
}

size_t apicreds_count(const apicreds *c) { return c ? c->n : 0; }

unsigned apicreds_open_mode(const apicreds *c) { return c ? c->open_mode : 0; }

void apicreds_free(apicreds *c) {
    if (!c)
        return;
    apicreds_clear(c->v, c->n);
    free(c);
}
