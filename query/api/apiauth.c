/* apiauth.c: the JSON API's token file and the nodes' request signatures
 * (apiauth.h). */
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

static int tenant_ok(const char *s) {
    size_t n = strlen(s);
    return n >= 1 && n <= APICREDS_MAX_TENANT_LEN && !strchr(s, '/') &&
           keycodec_utf8_valid_len((const uint8_t *)s, n) == n;
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
    if (!tenant_ok(f[1])) {
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

/* ------------------------------------------------------------ node auth */

static void hex(const uint8_t *b, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

int nodeauth_key(const uint8_t *secret, size_t n, uint8_t key[NODEAUTH_KEY_LEN]) {
    static const char label[] = "objlog node authentication v1";
    unsigned int len = 0;
    return HMAC(EVP_sha256(), secret, (int)n, (const uint8_t *)label, sizeof(label) - 1, key,
                &len) && len == NODEAUTH_KEY_LEN ? 0 : -1;
}

/* The hex signature of the request at t into sig[65]. 0 or -1. */
static int nodeauth_mac(const uint8_t key[NODEAUTH_KEY_LEN], const char *method,
                        const char *target, const void *body, size_t body_len,
                        const char *subject, int64_t t, char sig[65]) {
    uint8_t h[32], mac[32];
    char bh[65], ts[24];
    unsigned int len = 0;
    if (!EVP_Digest(body_len ? body : "", body_len, h, &len, EVP_sha256(), NULL))
        return -1;
    hex(h, 32, bh);
    snprintf(ts, sizeof(ts), "%" PRId64, t);
    const char *parts[] = {"objlog-node-v1", method, target, bh, ts, subject};
    size_t total = 0, np = sizeof(parts) / sizeof(parts[0]);
    for (size_t i = 0; i < np; i++)
        total += strlen(parts[i]) + 1;
    char *msg = malloc(total);
    if (!msg)
        return -1;
    size_t w = 0;
    for (size_t i = 0; i < np; i++) {
        size_t l = strlen(parts[i]);
        memcpy(msg + w, parts[i], l);
        w += l;
        msg[w++] = '\n';
    }
    /* the last part is not followed by a newline */
    int ok = HMAC(EVP_sha256(), key, NODEAUTH_KEY_LEN, (const uint8_t *)msg, w - 1, mac, &len) &&
             len == 32;
    free(msg);
    if (!ok)
        return -1;
    hex(mac, 32, sig);
    return 0;
}

int nodeauth_sign(const uint8_t key[NODEAUTH_KEY_LEN], const char *method, const char *target,
                  const void *body, size_t body_len, const char *subject, int64_t now_s,
                  char *out, size_t n) {
    char sig[65];
    if (nodeauth_mac(key, method, target, body, body_len, subject, now_s, sig) < 0)
        return -1;
    int w = snprintf(out, n, "t=%" PRId64 ",sig=%s", now_s, sig);
    return w > 0 && (size_t)w < n ? 0 : -1;
}

int nodeauth_verify(const uint8_t key[NODEAUTH_KEY_LEN], const char *method,
                    const char *target, const void *body, size_t body_len,
                    const char *subject, const char *value, int64_t now_s, char *why,
                    size_t why_size) {
    long long t;
    char got[65], want[65];
    int used = 0;
    if (!value || sscanf(value, "t=%lld,sig=%64[0-9a-f]%n", &t, got, &used) != 2 ||
        value[used] || strlen(got) != 64) {
        snprintf(why, why_size, "malformed %s (t=UNIX-SECONDS,sig=HEX)", NODEAUTH_HEADER);
        return -1;
    }
    if (t < now_s - NODEAUTH_WINDOW_S || t > now_s + NODEAUTH_WINDOW_S) {
        snprintf(why, why_size, "node signature made at %lld, outside %d s of this node's "
                                "clock (%lld)", t, NODEAUTH_WINDOW_S, (long long)now_s);
        return -1;
    }
    if (nodeauth_mac(key, method, target, body, body_len, subject, t, want) < 0 ||
        CRYPTO_memcmp(got, want, 64) != 0) {
        snprintf(why, why_size, "node signature does not match (is the cluster's secret the "
                                "same on every node?)");
        return -1;
    }
    return 0;
}

int nodeauth_subject_format(const apisubject *s, char *out, size_t n) {
    if (s->admin)
        return snprintf(out, n, "admin") < (int)n ? 0 : -1;
    static const char digits[] = "0123456789ABCDEF";
    size_t w = 0;
    if (n < 3)
        return -1;
    out[w++] = 't';
    out[w++] = ':';
    for (const unsigned char *p = (const unsigned char *)s->tenant; *p; p++) {
        int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || strchr("-._~", *p);
        if (w + (plain ? 1 : 3) >= n)
            return -1;
        if (plain) {
            out[w++] = (char)*p;
        } else {
            out[w++] = '%';
            out[w++] = digits[*p >> 4];
            out[w++] = digits[*p & 15];
        }
    }
    out[w] = '\0';
    return 0;
}

int nodeauth_subject_parse(const char *v, apisubject *out) {
    memset(out, 0, sizeof(*out));
    if (!v)
        return -1;
    if (strcmp(v, "admin") == 0 || strcmp(v, "node") == 0) {
        out->admin = 1;
        return 0;
    }
    if (strcmp(v, "open") == 0)
        return 1;
    if (strncmp(v, "t:", 2) != 0)
        return -1;
    size_t w = 0;
    for (const char *p = v + 2; *p; p++) {
        int c = (unsigned char)*p;
        if (*p == '%') {
            int hi = keycodec_hex_digit((unsigned char)p[1]),
                lo = hi < 0 ? -1 : keycodec_hex_digit((unsigned char)p[2]);
            if (lo < 0)
                return -1;
            c = hi * 16 + lo;
            p += 2;
        }
        if (w == APICREDS_MAX_TENANT_LEN)
            return -1;
        out->tenant[w++] = (char)c;
    }
    out->tenant[w] = '\0';
    return tenant_ok(out->tenant) ? 0 : -1;
}
