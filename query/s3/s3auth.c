/* s3auth.c: AWS Signature Version 4 for the S3 endpoint (s3auth.h): the
 * canonical request, the string to sign and the signing key; checking a
 * request signed in its Authorization header or in its query (presigned);
 * what x-amz-content-sha256 says of the body (a hash to check here, or
 * aws-chunked framing, which s3chunked.c decodes); and the signing side
 * the tests and objlog's own clients use. The credentials file lives in
 * s3creds.c.
 *
 * One function builds the canonical request (canonical_request) and one
 * signs a string (s3auth_sign_string); the checker and the signers both
 * go through them, so what is checked is byte for byte what is signed.
 *
 *   CanonicalRequest = Method \n CanonicalURI \n CanonicalQuery \n
 *                      (name:value \n)* \n SignedHeaders \n PayloadHash
 *   StringToSign     = AWS4-HMAC-SHA256 \n AmzDate \n Scope \n hex(sha256(CR))
 *   Scope            = YYYYMMDD/region/service/aws4_request
 *   SigningKey       = HMAC(HMAC(HMAC(HMAC("AWS4"+secret, YYYYMMDD), region),
 *                           service), "aws4_request") */
#include "s3authint.h"
#include "keycodec.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define MAX_SKEW_S 900
#define MAX_EXPIRES_S 604800
#define UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

/* ---- hashing ---- */

static void hex_encode(const uint8_t *in, size_t n, char *out) {
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[in[i] >> 4];
        out[2 * i + 1] = hx[in[i] & 15];
    }
    out[2 * n] = '\0';
}

int s3auth_sha256_hex(const void *p, size_t n, char out[65]) {
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) || len != 32)
        return -1;
    hex_encode(md, 32, out);
    return 0;
}

static int hmac256(const uint8_t *key, size_t kn, const void *d, size_t n,
                   uint8_t out[32]) {
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), key, (int)kn, d, n, out, &len) || len != 32)
        return -1;
    return 0;
}

int s3auth_signing_key(const char *secret, const char *date8, const char *region,
                       const char *service, uint8_t out[32]) {
    size_t sn = strlen(secret);
    uint8_t *k0 = malloc(sn + 4), k1[32], k2[32], k3[32];
    int rc = -1;
    if (!k0)
        return -1;
    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, secret, sn);
    if (hmac256(k0, sn + 4, date8, strlen(date8), k1) == 0 &&
        hmac256(k1, 32, region, strlen(region), k2) == 0 &&
        hmac256(k2, 32, service, strlen(service), k3) == 0 &&
        hmac256(k3, 32, "aws4_request", 12, out) == 0)
        rc = 0;
    OPENSSL_cleanse(k0, sn + 4);
    OPENSSL_cleanse(k1, 32);
    OPENSSL_cleanse(k2, 32);
    OPENSSL_cleanse(k3, 32);
    free(k0);
    return rc;
}

int s3auth_sign_string(const uint8_t key[32], const char *s, size_t n, char sig[65]) {
    uint8_t mac[32];
    if (hmac256(key, 32, s, n, mac) < 0)
        return -1;
    hex_encode(mac, 32, sig);
    return 0;
}

/* ---- dates ---- */

static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int64_t epoch_of(int y, int mo, int d, int h, int mi, int s) {
    return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

static int digits(const char *s, int n, int *v) {
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        *v = *v * 10 + (s[i] - '0');
    }
    return 0;
}

static int fields_ok(int y, int mo, int d, int h, int mi, int s) {
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return y >= 1970 && mo >= 1 && mo <= 12 && d >= 1 && d <= mdays[mo - 1] &&
           h <= 23 && mi <= 59 && s <= 60;
}

/* "20130524T000000Z" -> unix seconds; -1 when malformed. */
static int parse_amz_date(const char *s, int64_t *t) {
    int y, mo, d, h, mi, sec;
    if (!s || strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z' ||
        digits(s, 4, &y) || digits(s + 4, 2, &mo) || digits(s + 6, 2, &d) ||
        digits(s + 9, 2, &h) || digits(s + 11, 2, &mi) || digits(s + 13, 2, &sec) ||
        !fields_ok(y, mo, d, h, mi, sec))
        return -1;
    *t = epoch_of(y, mo, d, h, mi, sec);
    return 0;
}

/* RFC 7231 IMF-fixdate, "Fri, 24 May 2013 00:00:00 GMT". */
static int parse_http_date(const char *s, int64_t *t) {
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    int y, d, h, mi, sec, mo = 0;
    if (!s || strlen(s) != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' ||
        s[11] != ' ' || s[16] != ' ' || s[19] != ':' || s[22] != ':' ||
        strcmp(s + 25, " GMT") != 0)
        return -1;
    for (int i = 0; i < 12; i++)
        if (memcmp(s + 8, months + 3 * i, 3) == 0)
            mo = i + 1;
    if (!mo || digits(s + 5, 2, &d) || digits(s + 12, 4, &y) ||
        digits(s + 17, 2, &h) || digits(s + 20, 2, &mi) || digits(s + 23, 2, &sec) ||
        !fields_ok(y, mo, d, h, mi, sec))
        return -1;
    *t = epoch_of(y, mo, d, h, mi, sec);
    return 0;
}

static void put_digits(char *p, int v, int n) {
    for (int i = n - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
}

static void format_amz_date(int64_t t, char out[17]) {
    int y, mo, d;
    int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400, rem = t - days * 86400;
    civil_from_days(days, &y, &mo, &d);
    put_digits(out, y < 0 ? 0 : y % 10000, 4);
    put_digits(out + 4, mo, 2);
    put_digits(out + 6, d, 2);
    out[8] = 'T';
    put_digits(out + 9, (int)(rem / 3600), 2);
    put_digits(out + 11, (int)(rem / 60 % 60), 2);
    put_digits(out + 13, (int)(rem % 60), 2);
    out[15] = 'Z';
    out[16] = '\0';
}

/* ---- URI encoding ---- */

static int unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
}

static void pct(sbuf *b, unsigned char c) {
    static const char hx[] = "0123456789ABCDEF";
    char e[3] = {'%', hx[c >> 4], hx[c & 15]};
    sb_putn(b, e, 3);
}

/* AWS UriEncode of s[0..n): every byte outside the unreserved set as %XX. */
static void uri_encode(sbuf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c))
            sb_putc(b, (char)c);
        else
            pct(b, c);
    }
}

/* The S3 canonical URI: the path as sent, %XX kept, '/' kept, any other
 * byte outside the unreserved set encoded; "" is "/". */
static void canonical_uri(sbuf *b, const char *path) {
    size_t n = path ? strlen(path) : 0;
    if (n == 0) {
        sb_putc(b, '/');
        return;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c == '%' && i + 2 < n && keycodec_hex_digit((unsigned char)path[i + 1]) >= 0 &&
            keycodec_hex_digit((unsigned char)path[i + 2]) >= 0) {
            sb_putn(b, path + i, 3);
            i += 2;
        } else if (unreserved(c) || c == '/') {
            sb_putc(b, (char)c);
        } else {
            pct(b, c);
        }
    }
}

/* Percent-decodes s[0..n) ('+' is a space) into a malloc'd string of
 * *len bytes (NUL-terminated; it may hold NULs). */
static char *pct_decode(const char *s, size_t n, size_t *len) {
    char *out = malloc(n + 1);
    size_t o = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = keycodec_hex_digit((unsigned char)s[i + 1])) >= 0 &&
            (lo = keycodec_hex_digit((unsigned char)s[i + 2])) >= 0) {
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[o++] = s[i] == '+' ? ' ' : s[i];
        }
    }
    out[o] = '\0';
    *len = o;
    return out;
}

/* ---- query parameters ---- */

typedef struct qparam {
    char *name, *value;        /* decoded */
    size_t name_len, value_len;
    char *enc;                 /* "EncName=EncValue" */
    size_t enc_name_len;
} qparam;

typedef struct qlist {
    qparam *v;
    size_t n;
} qlist;

static void qlist_free(qlist *q) {
    for (size_t i = 0; i < q->n; i++) {
        free(q->v[i].name);
        free(q->v[i].value);
        free(q->v[i].enc);
    }
    free(q->v);
    q->v = NULL;
    q->n = 0;
}

static int qlist_add(qlist *q, const char *name, size_t nn, const char *value,
                     size_t vn, int decode) {
    qparam *v = realloc(q->v, (q->n + 1) * sizeof(*v));
    if (!v)
        return -1;
    q->v = v;
    qparam *p = &v[q->n];
    memset(p, 0, sizeof(*p));
    if (decode) {
        p->name = pct_decode(name, nn, &p->name_len);
        p->value = pct_decode(value, vn, &p->value_len);
    } else {
        p->name = strndup(name, nn);
        p->value = strndup(value, vn);
        p->name_len = nn;
        p->value_len = vn;
    }
    sbuf b = {0};
    if (p->name && p->value) {
        uri_encode(&b, p->name, p->name_len);
        p->enc_name_len = b.len;
        sb_putc(&b, '=');
        uri_encode(&b, p->value, p->value_len);
    }
    p->enc = b.p;
    q->n++;
    if (!p->name || !p->value || b.oom || !b.p)
        return -1;
    return 0;
}

/* Splits a raw query on '&' ("a" is "a="; empty parts are skipped). */
static int qlist_parse(qlist *q, const char *query) {
    const char *s = query;
    while (s && *s) {
        const char *amp = strchr(s, '&');
        size_t n = amp ? (size_t)(amp - s) : strlen(s);
        if (n) {
            const char *eq = memchr(s, '=', n);
            size_t nn = eq ? (size_t)(eq - s) : n;
            const char *v = eq ? eq + 1 : s + n;
            if (qlist_add(q, s, nn, v, eq ? n - nn - 1 : 0, 1) < 0)
                return -1;
        }
        s = amp ? amp + 1 : NULL;
    }
    return 0;
}

/* The decoded value of the first parameter named name, or NULL. */
static const char *qlist_get(const qlist *q, const char *name) {
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->v[i].name, name) == 0)
            return q->v[i].value;
    return NULL;
}

static int qparam_cmp(const void *a, const void *b) {
    const qparam *x = *(const qparam *const *)a, *y = *(const qparam *const *)b;
    size_t n = x->enc_name_len < y->enc_name_len ? x->enc_name_len : y->enc_name_len;
    int c = memcmp(x->enc, y->enc, n);
    if (c)
        return c;
    if (x->enc_name_len != y->enc_name_len)
        return x->enc_name_len < y->enc_name_len ? -1 : 1;
    return strcmp(x->enc + x->enc_name_len, y->enc + y->enc_name_len);
}

/* Sorted "n=v&n=v", without X-Amz-Signature when skip_signature. */
static int canonical_query(sbuf *b, const qlist *q, int skip_signature) {
    const qparam **sorted = malloc((q->n + 1) * sizeof(*sorted));
    size_t n = 0;
    if (!sorted)
        return -1;
    for (size_t i = 0; i < q->n; i++)
        if (!skip_signature || strcmp(q->v[i].name, "X-Amz-Signature") != 0)
            sorted[n++] = &q->v[i];
    qsort(sorted, n, sizeof(*sorted), qparam_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_putc(b, '&');
        sb_puts(b, sorted[i]->enc);
    }
    free(sorted);
    return 0;
}

/* ---- headers ---- */

static const char *header_get(const s3auth_req *r, const char *lname) {
    for (size_t i = 0; i < r->nheaders; i++)
        if (r->headers[i].name && strcasecmp(r->headers[i].name, lname) == 0)
            return r->headers[i].value ? r->headers[i].value : "";
    return NULL;
}

/* Appends the trimmed value, inner runs of spaces as one. */
static void trimall(sbuf *b, const char *v) {
    while (s3auth_is_space(*v))
        v++;
    while (*v) {
        if (s3auth_is_space(*v)) {
            while (s3auth_is_space(*v))
                v++;
            if (*v)
                sb_putc(b, ' ');
            continue;
        }
        sb_putc(b, *v++);
    }
}

/* "lname:v1,v2\n" for every header named lname; how many there were. */
static size_t canonical_header(sbuf *b, const s3auth_req *r, const char *lname) {
    size_t found = 0;
    sb_puts(b, lname);
    sb_putc(b, ':');
    for (size_t i = 0; i < r->nheaders; i++) {
        if (!r->headers[i].name || strcasecmp(r->headers[i].name, lname) != 0)
            continue;
        if (found++)
            sb_putc(b, ',');
        trimall(b, r->headers[i].value ? r->headers[i].value : "");
    }
    sb_putc(b, '\n');
    return found;
}

/* ---- the canonical request ---- */

/* signed_headers: "a;b;c" as the client listed them (lowercase). Returns
 * 0, or -1 out of memory. *missing: a signed header not in the request. */
static int canonical_request(sbuf *b, const s3auth_req *r, const qlist *q,
                             int skip_signature, const char *signed_headers,
                             const char *payload_hash, int *missing) {
    sb_puts(b, r->method ? r->method : "");
    sb_putc(b, '\n');
    canonical_uri(b, r->path);
    sb_putc(b, '\n');
    if (canonical_query(b, q, skip_signature) < 0)
        return -1;
    sb_putc(b, '\n');
    const char *s = signed_headers;
    char name[128];
    while (*s) {
        size_t n = strcspn(s, ";");
        if (n && n < sizeof(name)) {
            for (size_t i = 0; i < n; i++)
                name[i] = (char)tolower((unsigned char)s[i]);
            name[n] = '\0';
            if (canonical_header(b, r, name) == 0 && missing)
                *missing = 1;
        }
        s += n;
        if (*s == ';')
            s++;
    }
    sb_putc(b, '\n');
    sb_puts(b, signed_headers);
    sb_putc(b, '\n');
    sb_puts(b, payload_hash);
    return b->oom ? -1 : 0;
}

/* The string to sign for a canonical request. */
static int string_to_sign(sbuf *out, const char *amz_date, const char *scope,
                          const sbuf *creq) {
    char h[65];
    if (s3auth_sha256_hex(creq->p ? creq->p : "", creq->len, h) < 0)
        return -1;
    sb_puts(out, ALGORITHM "\n");
    sb_puts(out, amz_date);
    sb_putc(out, '\n');
    sb_puts(out, scope);
    sb_putc(out, '\n');
    sb_puts(out, h);
    return out->oom ? -1 : 0;
}

/* ---- errors ---- */

void s3auth_fail(s3auth *a, int status, const char *code, const char *fmt, ...) {
    va_list ap;
    a->status = status;
    a->code = code;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof(a->message), fmt, ap);
    va_end(ap);
    a->cred = NULL;
    OPENSSL_cleanse(a->signing_key, sizeof(a->signing_key));
}

void s3auth_fail_oom(s3auth *a) {
    s3auth_fail(a, 500, "InternalError", "We encountered an internal error. Please try again.");
}

/* ---- checking ---- */

/* What the Authorization header or the presigned query carried. */
typedef struct sigparts {
    char access_key[S3CREDS_MAX_KEY_LEN + 1];
    char date8[9], region[64], service[32], terminal[32];
    char signed_headers[16384]; /* every header a request may have (s3.c takes 200) */
    char signature[65];
} sigparts;

static int copy_part(char *dst, size_t cap, const char *s, size_t n) {
    if (n == 0 || n >= cap)
        return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

/* "AK/YYYYMMDD/region/service/aws4_request" */
static int parse_credential(sigparts *sp, const char *cred, size_t n) {
    const char *part[5];
    size_t len[5], k = 0;
    const char *s = cred, *end = cred + n;
    while (k < 5) {
        const char *slash = memchr(s, '/', (size_t)(end - s));
        part[k] = s;
        len[k] = slash ? (size_t)(slash - s) : (size_t)(end - s);
        k++;
        if (!slash)
            break;
        s = slash + 1;
    }
    if (k != 5 || part[4] + len[4] != end)
        return -1;
    return copy_part(sp->access_key, sizeof(sp->access_key), part[0], len[0]) ||
                   len[1] != 8 ||
                   copy_part(sp->date8, sizeof(sp->date8), part[1], len[1]) ||
                   copy_part(sp->region, sizeof(sp->region), part[2], len[2]) ||
                   copy_part(sp->service, sizeof(sp->service), part[3], len[3]) ||
                   copy_part(sp->terminal, sizeof(sp->terminal), part[4], len[4])
               ? -1
               : 0;
}

int s3auth_signature_ok(const char *s) {
    if (strlen(s) != 64)
        return 0;
    for (int i = 0; i < 64; i++)
        if (keycodec_hex_digit((unsigned char)s[i]) < 0)
            return 0;
    return 1;
}

static int signed_headers_ok(const char *s) {
    if (!*s)
        return 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!(isalnum(c) || c == '-' || c == '_' || c == '.' || c == ';'))
            return 0;
    }
    return 1;
}

#define MSG_AUTH_MALFORMED "The authorization header is malformed; "

/* Parses "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...". */
static int parse_authorization(s3auth *a, const char *h, sigparts *sp) {
    size_t al = strlen(ALGORITHM);
    if (strncmp(h, ALGORITHM, al) != 0 || !s3auth_is_space(h[al])) {
        s3auth_fail(a, 400, "InvalidRequest",
             "The authorization mechanism you have provided is not supported. "
             "Please use " ALGORITHM ".");
        return -1;
    }
    int have_cred = 0, have_sh = 0, have_sig = 0;
    const char *s = h + al;
    while (*s) {
        while (s3auth_is_space(*s) || *s == ',')
            s++;
        if (!*s)
            break;
        size_t n = strcspn(s, ",");
        size_t vn = n;
        while (vn && s3auth_is_space(s[vn - 1]))
            vn--;
        int bad = 0;
        if (strncmp(s, "Credential=", 11) == 0 && !have_cred) {
            have_cred = 1;
            if (parse_credential(sp, s + 11, vn - 11) < 0) {
                s3auth_fail(a, 400, "AuthorizationHeaderMalformed", MSG_AUTH_MALFORMED
                     "the Credential is mal-formed; expecting "
                     "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".");
                return -1;
            }
        } else if (strncmp(s, "SignedHeaders=", 14) == 0 && !have_sh) {
            have_sh = 1;
            bad = copy_part(sp->signed_headers, sizeof(sp->signed_headers), s + 14,
                            vn - 14) < 0 || !signed_headers_ok(sp->signed_headers);
        } else if (strncmp(s, "Signature=", 10) == 0 && !have_sig) {
            have_sig = 1;
            bad = copy_part(sp->signature, sizeof(sp->signature), s + 10, vn - 10) < 0 ||
                  !s3auth_signature_ok(sp->signature);
        } else {
            bad = 1;
        }
        if (bad) {
            s3auth_fail(a, 400, "AuthorizationHeaderMalformed",
                 MSG_AUTH_MALFORMED "the component '%.*s' is malformed.",
                 (int)(vn > 64 ? 64 : vn), s);
            return -1;
        }
        s += n;
    }
    if (!have_cred || !have_sh || !have_sig) {
        s3auth_fail(a, 400, "AuthorizationHeaderMalformed", MSG_AUTH_MALFORMED
             "the authorization header requires three components: Credential, "
             "SignedHeaders, and Signature.");
        return -1;
    }
    return 0;
}

#define MSG_QUERY_REQUIRED                                                    \
    "Query-string authentication version 4 requires the X-Amz-Algorithm, "    \
    "X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and " \
    "X-Amz-Expires parameters."

static int parse_presigned(s3auth *a, const qlist *q, sigparts *sp,
                           int64_t *date, int64_t *expires) {
    const char *alg = qlist_get(q, "X-Amz-Algorithm");
    const char *cred = qlist_get(q, "X-Amz-Credential");
    const char *dt = qlist_get(q, "X-Amz-Date");
    const char *exp = qlist_get(q, "X-Amz-Expires");
    const char *sh = qlist_get(q, "X-Amz-SignedHeaders");
    const char *sig = qlist_get(q, "X-Amz-Signature");
    const char *e = "AuthorizationQueryParametersError";
    if (!alg || !cred || !dt || !exp || !sh || !sig) {
        s3auth_fail(a, 400, e, MSG_QUERY_REQUIRED);
        return -1;
    }
    if (strcmp(alg, ALGORITHM) != 0) {
        s3auth_fail(a, 400, e, "X-Amz-Algorithm only supports \"" ALGORITHM "\"");
        return -1;
    }
    if (parse_credential(sp, cred, strlen(cred)) < 0) {
        s3auth_fail(a, 400, e, "Error parsing the X-Amz-Credential parameter; the Credential "
             "is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".");
        return -1;
    }
    if (parse_amz_date(dt, date) < 0) {
        s3auth_fail(a, 400, e, "X-Amz-Date must be in the ISO8601 Long Format "
             "\"yyyyMMdd'T'HHmmss'Z'\"");
        return -1;
    }
    char *end;
    long long x = strtoll(exp, &end, 10);
    if (!*exp || *end || !isdigit((unsigned char)exp[0]) || strlen(exp) > 12) {
        s3auth_fail(a, 400, e, "X-Amz-Expires should be a number");
        return -1;
    }
    if (x < 1) {
        s3auth_fail(a, 400, e, "X-Amz-Expires must be non-negative and non-zero");
        return -1;
    }
    if (x > MAX_EXPIRES_S) {
        s3auth_fail(a, 400, e,
                    "X-Amz-Expires must be less than a week (in seconds) that is; 604800");
        return -1;
    }
    *expires = x;
    if (copy_part(sp->signed_headers, sizeof(sp->signed_headers), sh, strlen(sh)) < 0 ||
        !signed_headers_ok(sh) ||
        copy_part(sp->signature, sizeof(sp->signature), sig, strlen(sig)) < 0 ||
        !s3auth_signature_ok(sig)) {
        s3auth_fail(a, 400, e, "X-Amz-SignedHeaders or X-Amz-Signature is malformed");
        return -1;
    }
    return 0;
}

int s3auth_list_has(const char *list, char sep, const char *name) {
    size_t nl = strlen(name);
    for (const char *s = list; *s;) {
        size_t n = strcspn(s, (char[]){sep, '\0'});
        if (n == nl && strncasecmp(s, name, n) == 0)
            return 1;
        s += n;
        if (*s)
            s++;
    }
    return 0;
}

/* Host must be signed, and every x-amz-* header present (S3's rule); so
 * must every x-objlog-* header, objlog's own (x-objlog-blob-id names the
 * bytes an object points at: whoever holds a presigned URL must not be
 * able to choose them). */
static int signed_set_ok(s3auth *a, const s3auth_req *r, const char *sh, int presigned) {
    if (!s3auth_list_has(sh, ';', "host")) {
        if (presigned)
            s3auth_fail(a, 400, "AuthorizationQueryParametersError",
                 "X-Amz-SignedHeaders must include host");
        else
            s3auth_fail(a, 400, "AuthorizationHeaderMalformed",
                 MSG_AUTH_MALFORMED "SignedHeaders must include host.");
        return -1;
    }
    for (size_t i = 0; i < r->nheaders; i++) {
        const char *n = r->headers[i].name;
        int must = n && (strncasecmp(n, "x-amz-", 6) == 0 || strncasecmp(n, "x-objlog-", 9) == 0);
        if (must && !s3auth_list_has(sh, ';', n)) {
            s3auth_fail(a, 403, "AccessDenied",
                 "There were headers present in the request which were not signed: %s", n);
            return -1;
        }
    }
    return 0;
}

/* x-amz-content-sha256 -> a->payload. */
static int payload_kind(s3auth *a, const char *v) {
    if (strcmp(v, UNSIGNED_PAYLOAD) == 0) {
        a->payload = S3AUTH_PAYLOAD_UNSIGNED;
    } else if (strcmp(v, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") == 0) {
        a->payload = S3AUTH_PAYLOAD_STREAMING;
    } else if (strcmp(v, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER") == 0) {
        a->payload = S3AUTH_PAYLOAD_STREAMING_TRAILER;
    } else if (strcmp(v, "STREAMING-UNSIGNED-PAYLOAD-TRAILER") == 0) {
        a->payload = S3AUTH_PAYLOAD_UNSIGNED_TRAILER;
    } else if (strncmp(v, "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", 40) == 0) {
        s3auth_fail(a, 501, "NotImplemented",
             "A header you provided implies functionality that is not implemented: "
             "x-amz-content-sha256 %s", v);
        return -1;
    } else {
        size_t i = 0;
        for (; i < 64 && v[i] && keycodec_hex_digit((unsigned char)v[i]) >= 0; i++)
            ;
        if (i != 64 || v[64]) {
            s3auth_fail(a, 400, "InvalidArgument",
                 "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
                 "STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, "
                 "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.");
            return -1;
        }
        a->payload = S3AUTH_PAYLOAD_SIGNED;
        for (i = 0; i < 64; i++)
            a->payload_sha256[i] = (char)tolower((unsigned char)v[i]);
        a->payload_sha256[64] = '\0';
    }
    return 0;
}

int s3auth_streaming(s3auth_payload p) {
    return p == S3AUTH_PAYLOAD_STREAMING || p == S3AUTH_PAYLOAD_STREAMING_TRAILER ||
           p == S3AUTH_PAYLOAD_UNSIGNED_TRAILER;
}

static int decoded_length(s3auth *a, const s3auth_req *r) {
    const char *v = header_get(r, "x-amz-decoded-content-length");
    char *end;
    if (!v || !*v) {
        s3auth_fail(a, 411, "MissingContentLength",
                    "You must provide the Content-Length HTTP header.");
        return -1;
    }
    long long x = strtoll(v, &end, 10);
    if (*end || !isdigit((unsigned char)v[0]) || strlen(v) > 18) {
        s3auth_fail(a, 400, "InvalidArgument",
                    "x-amz-decoded-content-length is not a valid length");
        return -1;
    }
    a->decoded_length = x;
    const char *t = header_get(r, "x-amz-trailer");
    size_t o = 0;
    for (; t && *t && o + 1 < sizeof(a->trailer_names); t++)
        if (!s3auth_is_space(*t))
            a->trailer_names[o++] = (char)tolower((unsigned char)*t);
    a->trailer_names[o] = '\0';
    return 0;
}

static void keep_canonical(s3auth *a, const sbuf *creq, const sbuf *sts) {
    size_t cap = sizeof(a->canonical_request);
    if (creq->len < cap) {
        memcpy(a->canonical_request, creq->p, creq->len + 1);
    } else {
        memcpy(a->canonical_request, creq->p, cap - 4);
        memcpy(a->canonical_request + cap - 4, "...", 4);
        a->canonical_request_truncated = 1;
    }
    snprintf(a->string_to_sign, sizeof(a->string_to_sign), "%s", sts->p ? sts->p : "");
}

/* Everything after the mechanism was parsed: scope, dates, key, payload,
 * signature. */
static void check_signed(const s3creds *creds, const char *region, const s3auth_req *r,
                         const qlist *q, sigparts *sp, const char *amz_date,
                         const char *payload_hash, s3auth *a) {
    int p = a->presigned;
    const char *mal = p ? "AuthorizationQueryParametersError" : "AuthorizationHeaderMalformed";
    const char *pre = p ? "Error parsing the X-Amz-Credential parameter; "
                        : MSG_AUTH_MALFORMED;
    snprintf(a->access_key, sizeof(a->access_key), "%s", sp->access_key);
    if (strcmp(sp->region, region) != 0) {
        s3auth_fail(a, 400, mal, "%sthe region '%s' is wrong; expecting '%s'", pre, sp->region,
                    region);
        return;
    }
    if (strcmp(sp->service, "s3") != 0) {
        s3auth_fail(a, 400, mal, "%sincorrect service '%s'. This endpoint belongs to 's3'.", pre,
             sp->service);
        return;
    }
    if (strcmp(sp->terminal, "aws4_request") != 0) {
        s3auth_fail(a, 400, mal, "%sincorrect terminal '%s'. This endpoint uses 'aws4_request'.",
             pre, sp->terminal);
        return;
    }
    if (strncmp(sp->date8, amz_date, 8) != 0) {
        s3auth_fail(a, 400, mal, "%sInvalid credential date. Date is not the same as X-Amz-Date.",
             pre);
        return;
    }
    if (signed_set_ok(a, r, sp->signed_headers, p) < 0)
        return;
    const s3cred *cred = creds ? s3creds_find(creds, sp->access_key) : NULL;
    if (!cred) {
        s3auth_fail(a, 403, "InvalidAccessKeyId",
             "The AWS Access Key Id you provided does not exist in our records.");
        return;
    }
    snprintf(a->amz_date, sizeof(a->amz_date), "%s", amz_date);
    snprintf(a->scope, sizeof(a->scope), "%s/%s/s3/aws4_request", sp->date8, region);

    sbuf creq = {0}, sts = {0};
    int missing = 0;
    char sig[65];
    if (canonical_request(&creq, r, q, p, sp->signed_headers, payload_hash, &missing) < 0 ||
        string_to_sign(&sts, amz_date, a->scope, &creq) < 0 ||
        s3auth_signing_key(cred->secret, sp->date8, region, "s3", a->signing_key) < 0 ||
        s3auth_sign_string(a->signing_key, sts.p, sts.len, sig) < 0) {
        sb_free(&creq);
        sb_free(&sts);
        s3auth_fail_oom(a);
        return;
    }
    keep_canonical(a, &creq, &sts);
    sb_free(&creq);
    sb_free(&sts);
    if (CRYPTO_memcmp(sig, sp->signature, 64) != 0) {
        s3auth_fail(a, 403, "SignatureDoesNotMatch", MSG_MISMATCH);
        return;
    }
    memcpy(a->seed_signature, sig, 65);
    if (a->payload != S3AUTH_PAYLOAD_STREAMING &&
        a->payload != S3AUTH_PAYLOAD_STREAMING_TRAILER)
        OPENSSL_cleanse(a->signing_key, sizeof(a->signing_key));
    a->cred = cred;
}

static void check_header_auth(const s3creds *creds, const char *region,
                              const s3auth_req *r, const char *authz, s3auth *a) {
    sigparts sp;
    memset(&sp, 0, sizeof(sp));
    if (parse_authorization(a, authz, &sp) < 0)
        return;
    const char *xd = header_get(r, "x-amz-date"), *hd = header_get(r, "date");
    int64_t t;
    char amz_date[17];
    if (xd && parse_amz_date(xd, &t) == 0) {
        snprintf(amz_date, sizeof(amz_date), "%s", xd);
    } else if (!xd && hd && parse_http_date(hd, &t) == 0) {
        format_amz_date(t, amz_date);
    } else {
        s3auth_fail(a, 403, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header");
        return;
    }
    if (t > r->now_s + MAX_SKEW_S || t < r->now_s - MAX_SKEW_S) {
        s3auth_fail(a, 403, "RequestTimeTooSkewed",
             "The difference between the request time and the current time is too large.");
        return;
    }
    const char *ph = header_get(r, "x-amz-content-sha256");
    if (!ph) {
        s3auth_fail(a, 400, "MissingSecurityHeader",
             "Your request was missing a required header: x-amz-content-sha256");
        return;
    }
    if (payload_kind(a, ph) < 0 || (s3auth_streaming(a->payload) && decoded_length(a, r) < 0))
        return;
    qlist q = {0};
    if (qlist_parse(&q, r->query) < 0) {
        qlist_free(&q);
        s3auth_fail_oom(a);
        return;
    }
    check_signed(creds, region, r, &q, &sp, amz_date, ph, a);
    qlist_free(&q);
}

static void check_presigned(const s3creds *creds, const char *region,
                            const s3auth_req *r, const qlist *q, s3auth *a) {
    sigparts sp;
    int64_t date, expires;
    memset(&sp, 0, sizeof(sp));
    a->presigned = 1;
    if (parse_presigned(a, q, &sp, &date, &expires) < 0)
        return;
    if (date > r->now_s + MAX_SKEW_S) {
        s3auth_fail(a, 403, "AccessDenied", "Request is not valid yet");
        return;
    }
    if (r->now_s > date + expires) {
        s3auth_fail(a, 403, "AccessDenied", "Request has expired");
        return;
    }
    const char *ph = header_get(r, "x-amz-content-sha256");
    if (!ph)
        ph = UNSIGNED_PAYLOAD;
    if (payload_kind(a, ph) < 0 || (s3auth_streaming(a->payload) && decoded_length(a, r) < 0))
        return;
    check_signed(creds, region, r, q, &sp, qlist_get(q, "X-Amz-Date"), ph, a);
}

void s3auth_check(const s3creds *creds, const char *region, int anonymous_ok,
                  const s3auth_req *req, s3auth *out) {
    memset(out, 0, sizeof(*out));
    out->decoded_length = -1;
    const char *authz = header_get(req, "authorization");
    qlist q = {0};
    if (qlist_parse(&q, req->query) < 0) {
        qlist_free(&q);
        s3auth_fail_oom(out);
        return;
    }
    int query_auth = qlist_get(&q, "X-Amz-Signature") || qlist_get(&q, "X-Amz-Algorithm") ||
                     qlist_get(&q, "X-Amz-Credential");
    if (authz && query_auth) {
        s3auth_fail(out, 400, "InvalidArgument",
             "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, "
             "Signature query string parameter or the Authorization header should be specified");
    } else if (authz) {
        check_header_auth(creds, region, req, authz, out);
    } else if (query_auth) {
        check_presigned(creds, region, req, &q, out);
    } else if (qlist_get(&q, "Signature") || qlist_get(&q, "AWSAccessKeyId")) {
        /* Signature V2, which objlog does not check: never anonymous. */
        s3auth_fail(out, 400, "InvalidRequest",
             "The authorization mechanism you have provided is not supported. Please use "
             "AWS4-HMAC-SHA256.");
    } else if (anonymous_ok) {
        out->anonymous = 1;
        out->payload = S3AUTH_PAYLOAD_UNSIGNED;
    } else {
        s3auth_fail(out, 403, "AccessDenied", "Access Denied");
    }
    qlist_free(&q);
}

void s3auth_wipe(s3auth *a) {
    OPENSSL_cleanse(a->signing_key, sizeof(a->signing_key));
}

int s3auth_check_payload(s3auth *a, const void *body, size_t n) {
    char h[65];
    if (a->payload != S3AUTH_PAYLOAD_SIGNED)
        return 0;
    if (s3auth_sha256_hex(body, n, h) < 0) {
        s3auth_fail_oom(a);
        return -1;
    }
    if (CRYPTO_memcmp(h, a->payload_sha256, 64) != 0) {
        s3auth_fail(a, 400, "XAmzContentSHA256Mismatch",
             "The provided 'x-amz-content-sha256' header does not match what was computed.");
        return -1;
    }
    return 0;
}

/* ---- signing ---- */

/* Lowercased, sorted, de-duplicated names of every header of r. */
static int signed_list(const s3auth_req *r, sbuf *out) {
    char **names = calloc(r->nheaders + 1, sizeof(*names));
    size_t k = 0;
    if (!names)
        return -1;
    for (size_t i = 0; i < r->nheaders; i++) {
        char *s = strdup(r->headers[i].name);
        if (!s)
            goto oom;
        for (char *p = s; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        size_t j = 0;
        while (j < k && strcmp(names[j], s) != 0)
            j++;
        if (j < k)
            free(s);
        else
            names[k++] = s;
    }
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (size_t i = 0; i < k; i++) {
        if (i)
            sb_putc(out, ';');
        sb_puts(out, names[i]);
    }
    for (size_t i = 0; i < k; i++)
        free(names[i]);
    free(names);
    return out->oom ? -1 : 0;
oom:
    for (size_t i = 0; i < k; i++)
        free(names[i]);
    free(names);
    return -1;
}

/* Signs r over q at amz_date; sig[65] and the signed header list. */
static int sign_request(const char *secret, const char *region, const char *service,
                        const s3auth_req *r, const qlist *q, int presigned,
                        const char *amz_date, const char *payload_hash,
                        const char *signed_headers, char sig[65]) {
    char scope[128], date8[9];
    uint8_t key[32];
    sbuf creq = {0}, sts = {0};
    int rc = -1;
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    snprintf(scope, sizeof(scope), "%s/%s/%s/aws4_request", date8, region, service);
    if (canonical_request(&creq, r, q, presigned, signed_headers, payload_hash, NULL) == 0 &&
        string_to_sign(&sts, amz_date, scope, &creq) == 0 &&
        s3auth_signing_key(secret, date8, region, service, key) == 0 &&
        s3auth_sign_string(key, sts.p, sts.len, sig) == 0)
        rc = 0;
    OPENSSL_cleanse(key, sizeof(key));
    sb_free(&creq);
    sb_free(&sts);
    return rc;
}

int s3auth_sign_service(const char *access_key, const char *secret,
                        const char *region, const char *service,
                        const s3auth_req *req, const char *payload_sha256,
                        char *authorization, size_t n) {
    const char *d = header_get(req, "x-amz-date");
    int64_t t;
    qlist q = {0};
    sbuf sh = {0};
    char sig[65];
    int rc = -1;
    if (!d || parse_amz_date(d, &t) < 0 || !header_get(req, "host"))
        return -1;
    if (qlist_parse(&q, req->query) == 0 && signed_list(req, &sh) == 0 &&
        sign_request(secret, region, service, req, &q, 0, d, payload_sha256, sh.p, sig) == 0) {
        int w = snprintf(authorization, n,
                         ALGORITHM " Credential=%s/%.8s/%s/%s/aws4_request, "
                                   "SignedHeaders=%s, Signature=%s",
                         access_key, d, region, service, sh.p, sig);
        rc = w > 0 && (size_t)w < n ? 0 : -1;
    }
    qlist_free(&q);
    sb_free(&sh);
    return rc;
}

int s3auth_sign(const char *access_key, const char *secret, const char *region,
                const s3auth_req *req, const char *payload_sha256,
                char *authorization, size_t n) {
    return s3auth_sign_service(access_key, secret, region, "s3", req, payload_sha256,
                               authorization, n);
}

int s3auth_presign(const char *access_key, const char *secret, const char *region,
                   const s3auth_req *req, int expires_s, char *query_out, size_t n) {
    char amz_date[17], cred[256], exp[16], sig[65];
    qlist q = {0};
    sbuf sh = {0}, out = {0};
    int rc = -1;
    if (!header_get(req, "host") || expires_s < 1 || expires_s > MAX_EXPIRES_S)
        return -1;
    format_amz_date(req->now_s, amz_date);
    snprintf(cred, sizeof(cred), "%s/%.8s/%s/s3/aws4_request", access_key, amz_date, region);
    snprintf(exp, sizeof(exp), "%d", expires_s);
    if (qlist_parse(&q, req->query) < 0 || signed_list(req, &sh) < 0)
        goto done;
    if (qlist_add(&q, "X-Amz-Algorithm", 15, ALGORITHM, strlen(ALGORITHM), 0) < 0 ||
        qlist_add(&q, "X-Amz-Credential", 16, cred, strlen(cred), 0) < 0 ||
        qlist_add(&q, "X-Amz-Date", 10, amz_date, 16, 0) < 0 ||
        qlist_add(&q, "X-Amz-Expires", 13, exp, strlen(exp), 0) < 0 ||
        qlist_add(&q, "X-Amz-SignedHeaders", 19, sh.p, sh.len, 0) < 0)
        goto done;
    if (sign_request(secret, region, "s3", req, &q, 1, amz_date, UNSIGNED_PAYLOAD, sh.p,
                     sig) < 0 ||
        canonical_query(&out, &q, 1) < 0)
        goto done;
    sb_puts(&out, "&X-Amz-Signature=");
    sb_puts(&out, sig);
    if (!out.oom && out.len < n) {
        memcpy(query_out, out.p, out.len + 1);
        rc = 0;
    }
done:
    qlist_free(&q);
    sb_free(&sh);
    sb_free(&out);
    return rc;
}
