/* s3lc.c: S3's bucket lifecycle subresource:
 *   PUT    /BUCKET?lifecycle  PutBucketLifecycleConfiguration -> SetLifecycle
 *   GET    /BUCKET?lifecycle  GetBucketLifecycleConfiguration
 *   DELETE /BUCKET?lifecycle  DeleteBucketLifecycle -> SetLifecycle without rules
 * S3's <LifecycleConfiguration> is read with expat into the LifecycleRule
 * protos the JSON API (lcapi.c) writes, and stored rules are written back
 * as S3's XML. Refusals are S3's, in S3's order: the document's shape
 * first (MalformedXML; Transition: 501 NotImplemented, objlog has no
 * storage tiers), then what the values mean (InvalidArgument,
 * InvalidRequest), then objlog_lc_validate (InvalidArgument).
 *
 * Invariants: a configuration reaches the log only after
 * objlog_lc_validate accepted it (the state machine checks it again on
 * apply); GET writes a stored filter only when S3's XML can say all of
 * it: a user-metadata condition (JSON API only) makes it answer 501
 * rather than a wider filter a client could put back. The filter's XML
 * shape rides in LifecycleRule.s3_filter_form, which no decision reads. */
#define _GNU_SOURCE /* strptime, timegm */
#include "core.h"
#include "read.h"
#include "s3.h"
#include "server.h"
#include "workers.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <expat.h>
#include <openssl/rand.h>

#include "lifecycle.h"

#define LCX_DEPTH 6          /* LifecycleConfiguration/Rule/Filter/And/Tag/Key */
#define LCX_TEXT_MAX 1024    /* a prefix: a key's length */
#define LCX_TAG_KEY_MAX 128  /* S3's tag limits */
#define LCX_TAG_VALUE_MAX 256

enum { /* LifecycleRule.s3_filter_form */
    LCX_FORM_DERIVED, LCX_FORM_RULE_PREFIX, LCX_FORM_EMPTY, LCX_FORM_AND_PREFIX,
    LCX_FORM_AND
};

/* The elements a Rule may hold, by path below the Rule. */
enum lcx_elem {
    LX_ID, LX_STATUS, LX_PREFIX, LX_FILTER, LX_EXP, LX_NC, LX_ABORT,
    LX_F_PREFIX, LX_F_TAG, LX_F_TAG_KEY, LX_F_TAG_VALUE, LX_F_GT, LX_F_LT,
    LX_AND, LX_A_PREFIX, LX_A_TAG, LX_A_TAG_KEY, LX_A_TAG_VALUE, LX_A_GT, LX_A_LT,
    LX_EXP_DAYS, LX_EXP_DATE, LX_EXP_EODM, LX_NC_DAYS, LX_NC_NEWER, LX_ABORT_DAYS,
    LX_TRANSITION, LX_NC_TRANSITION, LX_N
};

static const char *const lcx_paths[LX_N] = {
    "ID", "Status", "Prefix", "Filter", "Expiration", "NoncurrentVersionExpiration",
    "AbortIncompleteMultipartUpload",
    "Filter/Prefix", "Filter/Tag", "Filter/Tag/Key", "Filter/Tag/Value",
    "Filter/ObjectSizeGreaterThan", "Filter/ObjectSizeLessThan",
    "Filter/And", "Filter/And/Prefix", "Filter/And/Tag", "Filter/And/Tag/Key",
    "Filter/And/Tag/Value", "Filter/And/ObjectSizeGreaterThan",
    "Filter/And/ObjectSizeLessThan",
    "Expiration/Days", "Expiration/Date", "Expiration/ExpiredObjectDeleteMarker",
    "NoncurrentVersionExpiration/NoncurrentDays",
    "NoncurrentVersionExpiration/NewerNoncurrentVersions",
    "AbortIncompleteMultipartUpload/DaysAfterInitiation",
    "Transition", "NoncurrentVersionTransition"};

#define LX_BIT(e) (1ULL << (e))
#define LX_FILTER_KIDS (LX_BIT(LX_F_PREFIX) | LX_BIT(LX_F_TAG) | LX_BIT(LX_F_GT) | \
                        LX_BIT(LX_F_LT) | LX_BIT(LX_AND))
#define LX_AND_KIDS (LX_BIT(LX_A_PREFIX) | LX_BIT(LX_A_TAG) | LX_BIT(LX_A_GT) | \
                     LX_BIT(LX_A_LT))
#define LX_EXP_KIDS (LX_BIT(LX_EXP_DAYS) | LX_BIT(LX_EXP_DATE) | LX_BIT(LX_EXP_EODM))
#define LX_TAG_KIDS (LX_BIT(LX_F_TAG_KEY) | LX_BIT(LX_F_TAG_VALUE) | \
                     LX_BIT(LX_A_TAG_KEY) | LX_BIT(LX_A_TAG_VALUE))

/* A refusal: the first one of its kind wins. */
typedef struct lcx_err {
    int status;                  /* 0: none */
    const char *code;
    char msg[300];
    long rule;                   /* index of the rule it concerns, -1: none */
} lcx_err;

typedef struct lcx {
    XML_Parser p;
    int depth;
    char rel[LCX_DEPTH * 40];    /* the path below the Rule being read */
    size_t rel_at[LCX_DEPTH + 2]; /* rel's length when each depth opened */
    char text[LCX_TEXT_MAX + 1];
    size_t text_len;
    int text_long;
    lcx_err hard;                /* the document's shape: stops the parse */
    lcx_err soft;                /* a value S3 refuses: reported if the shape holds */
    Objlog__SetLifecycle *sl;
    Objlog__LifecycleRule *r;    /* the rule being read (the last of sl) */
    uint64_t seen;               /* LX_BIT of r's elements (Tag's kids: this Tag's) */
    int filter_kids, and_kids, exp_kids;
    char tag_key[LCX_TEXT_MAX + 1], tag_value[LCX_TEXT_MAX + 1];
} lcx;

/* ------------------------------------------------------------ refusals */

static void lcx_refuse(lcx *x, lcx_err *e, int status, const char *code,
                       const char *fmt, const char *arg) {
    if (e->status)
        return;
    e->status = status;
    e->code = code;
    e->rule = x->sl ? (long)x->sl->n_rules - 1 : -1;
    snprintf(e->msg, sizeof(e->msg), fmt, arg);
}

static void lcx_malformed(lcx *x, const char *fmt, const char *arg) {
    lcx_refuse(x, &x->hard, 400, "MalformedXML", fmt, arg);
    XML_StopParser(x->p, XML_FALSE);
}

static void lcx_invalid(lcx *x, const char *code, const char *fmt, const char *arg) {
    lcx_refuse(x, &x->soft, 400, code, fmt, arg);
}

/* ---------------------------------------------------------- the values */

/* The text without surrounding white space (numbers, names, dates). */
static const char *lcx_trimmed(lcx *x) {
    char *s = x->text, *e = x->text + x->text_len;
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    return s;
}

/* An integer element: 0 with *v, or -1 after a MalformedXML (S3's schema
 * types them as integers). */
static int lcx_int(lcx *x, long long *v) {
    const char *s = lcx_trimmed(x);
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    if (!*s || *end || errno) {
        lcx_malformed(x, "%s must be an integer", x->rel);
        return -1;
    }
    return 0;
}

/* A count of days, 1..OBJLOG_LC_MAX_DAYS: S3's "must be a positive integer". */
static uint32_t lcx_days(lcx *x, const char *what) {
    long long v;
    if (lcx_int(x, &v) < 0)
        return 0;
    if (v < 1 || v > OBJLOG_LC_MAX_DAYS) {
        lcx_invalid(x, "InvalidArgument",
                    "%s must be a positive integer (at most 36500 days here)", what);
        return 0;
    }
    return (uint32_t)v;
}

/* ISO 8601 (2030-01-01, 2030-01-01T00:00:00Z, .000Z, +00:00, none) -> ms;
 * -1 when it is not one. */
static int64_t lcx_date_ms(const char *s) {
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *rest = strptime(s, "%Y-%m-%d", &tm);
    if (!rest)
        return -1;
    if (*rest == 'T' && !(rest = strptime(rest + 1, "%H:%M:%S", &tm)))
        return -1;
    int64_t ms = (int64_t)timegm(&tm) * 1000;
    if (*rest == '.') {
        int digits = 0;
        int64_t frac = 0;
        for (rest++; isdigit((unsigned char)*rest); rest++, digits++)
            if (digits < 3)
                frac = frac * 10 + (*rest - '0');
        for (int d = digits; d < 3; d++)
            frac *= 10;
        if (!digits)
            return -1;
        ms += frac;
    }
    int sign = *rest == '+' ? 1 : *rest == '-' ? -1 : 0;
    int hh, mm;
    if (sign && sscanf(rest + 1, "%2d:%2d", &hh, &mm) == 2 && strlen(rest) == 6)
        return ms - sign * ((int64_t)hh * 3600 + mm * 60) * 1000;
    return strcmp(rest, "Z") == 0 || !*rest ? ms : -1;
}

static void lcx_date(lcx *x) {
    int64_t ms = lcx_date_ms(lcx_trimmed(x));
    if (ms < 0)
        lcx_invalid(x, "InvalidArgument", "%s", "Date must be in ISO 8601 format");
    else if (ms % OBJLOG_LC_DAY_MS != 0)
        lcx_invalid(x, "InvalidArgument", "%s", "'Date' must be at midnight GMT");
    else if (ms == 0) /* 0 is "no date" in the rule */
        lcx_invalid(x, "InvalidArgument", "%s", "'Date' must be after 1970-01-01");
    else
        x->r->expiration_date_ms = ms;
}

/* ObjectSizeGreaterThan / ObjectSizeLessThan. In the rule 0 means "no
 * bound", so S3's "greater than 0" (every non-empty object) cannot be
 * kept: refused rather than widened. */
static void lcx_size(lcx *x, uint64_t *out, int greater) {
    long long v;
    if (lcx_int(x, &v) < 0)
        return;
    if (v < 1)
        lcx_invalid(x, "InvalidArgument",
                    greater ? "%s must be a positive integer (objlog cannot keep "
                              "\"greater than 0\")"
                            : "%s must be a positive integer",
                    greater ? "ObjectSizeGreaterThan" : "ObjectSizeLessThan");
    else
        *out = (uint64_t)v;
}

static int lcx_set_bytes(ProtobufCBinaryData *b, const char *s, size_t n) {
    free(b->data);
    b->data = malloc(n ? n : 1);
    if (!b->data)
        return -1;
    memcpy(b->data, s, n);
    b->len = n;
    return 0;
}

static void lcx_prefix(lcx *x) {
    if (x->text_long) {
        lcx_invalid(x, "InvalidArgument", "%s", "a prefix is at most 1024 bytes");
        return;
    }
    if (lcx_set_bytes(&x->r->filter->prefix, x->text, x->text_len) < 0)
        lcx_malformed(x, "%s", "out of memory");
}

static void lcx_tag_end(lcx *x) {
    Objlog__LifecycleFilter *f = x->r->filter;
    if (!(x->seen & (LX_BIT(LX_F_TAG_KEY) | LX_BIT(LX_A_TAG_KEY))) ||
        !(x->seen & (LX_BIT(LX_F_TAG_VALUE) | LX_BIT(LX_A_TAG_VALUE)))) {
        lcx_malformed(x, "%s", "a Tag needs a Key and a Value");
        return;
    }
    size_t kn = strlen(x->tag_key), vn = strlen(x->tag_value);
    if (kn < 1 || kn > LCX_TAG_KEY_MAX || vn > LCX_TAG_VALUE_MAX) {
        lcx_invalid(x, "InvalidRequest", "%s", "a Tag's Key is 1 to 128 characters, "
                    "its Value at most 256");
        return;
    }
    for (size_t i = 0; i < f->n_tags; i++)
        if (strcmp(f->tags[i]->name, x->tag_key) == 0) {
            lcx_invalid(x, "InvalidRequest", "%s", "Duplicate Tag Keys are not allowed.");
            return;
        }
    Objlog__UserMeta **t = realloc(f->tags, (f->n_tags + 1) * sizeof(*t));
    Objlog__UserMeta *um = t ? malloc(sizeof(*um)) : NULL;
    if (t)
        f->tags = t;
    if (!um) {
        lcx_malformed(x, "%s", "out of memory");
        return;
    }
    objlog__user_meta__init(um);
    f->tags[f->n_tags++] = um;
    um->name = strdup(x->tag_key);
    um->value = strdup(x->tag_value);
    if (!um->name || !um->value)
        lcx_malformed(x, "%s", "out of memory");
}

/* Tag Key / Value text, whole (1024 bytes is well past S3's limits). */
static void lcx_tag_text(lcx *x, char *out) {
    size_t n = x->text_long ? LCX_TEXT_MAX : x->text_len;
    memcpy(out, x->text, n);
    out[n] = '\0';
    if (x->text_long || strlen(out) != n)
        lcx_invalid(x, "InvalidRequest", "%s", "a Tag's Key is 1 to 128 characters, "
                    "its Value at most 256");
}

/* ------------------------------------------------------------ the rule */

static void lcx_rule_start(lcx *x) {
    Objlog__SetLifecycle *sl = x->sl;
    if (sl->n_rules == OBJLOG_LC_MAX_RULES) {
        lcx_malformed(x, "%s", "a LifecycleConfiguration has at most 1000 rules");
        return;
    }
    Objlog__LifecycleRule **rs = realloc(sl->rules, (sl->n_rules + 1) * sizeof(*rs));
    Objlog__LifecycleRule *r = rs ? malloc(sizeof(*r)) : NULL;
    Objlog__LifecycleFilter *f = r ? malloc(sizeof(*f)) : NULL;
    if (rs)
        sl->rules = rs;
    if (!f) {
        free(r);
        lcx_malformed(x, "%s", "out of memory");
        return;
    }
    objlog__lifecycle_rule__init(r);
    objlog__lifecycle_filter__init(f);
    r->id = NULL; /* not the init's shared "": lcx_rule_end frees an empty one */
    r->filter = f;
    sl->rules[sl->n_rules++] = r;
    x->r = r;
    x->seen = 0;
    x->filter_kids = x->and_kids = x->exp_kids = 0;
}

/* A rule without an ID gets a random one, as S3 gives. */
static int lcx_rule_id(Objlog__LifecycleRule *r) {
    unsigned char b[16];
    if (RAND_bytes(b, sizeof(b)) != 1 || !(r->id = malloc(2 * sizeof(b) + 1)))
        return -1;
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(r->id + 2 * i, 3, "%02x", b[i]);
    return 0;
}

static void lcx_rule_end(lcx *x) {
    Objlog__LifecycleRule *r = x->r;
    if (!(x->seen & LX_BIT(LX_STATUS))) {
        lcx_malformed(x, "%s", "a Rule needs a Status");
        return;
    }
    int filter = !!(x->seen & LX_BIT(LX_FILTER)), prefix = !!(x->seen & LX_BIT(LX_PREFIX));
    if (filter == prefix) {
        lcx_malformed(x, "%s", filter ? "a Rule has a Filter or a Prefix, not both"
                                      : "a Rule needs a Filter (or the older Prefix)");
        return;
    }
    if (prefix)
        r->s3_filter_form = LCX_FORM_RULE_PREFIX;
    if (r->id && !*r->id) { /* <ID></ID>: as absent */
        free(r->id);
        r->id = NULL;
    }
    if (!r->id && lcx_rule_id(r) < 0) {
        lcx_malformed(x, "%s", "out of memory");
        return;
    }
    if (!r->expiration_days && !r->expiration_date_ms && !r->expired_object_delete_marker &&
        !r->noncurrent_days && !r->abort_incomplete_days)
        lcx_invalid(x, "InvalidRequest", "%s",
                    "At least one action needs to be specified in a rule");
    if (r->filter->n_tags && r->expired_object_delete_marker)
        lcx_invalid(x, "InvalidRequest", "%s",
                    "ExpiredObjectDeleteMarker cannot be specified with Tags");
    if (r->filter->n_tags && (x->seen & LX_BIT(LX_ABORT)))
        lcx_invalid(x, "InvalidRequest", "%s",
                    "AbortIncompleteMultipartUpload cannot be specified with Tags");
}

/* The end of an element below a Rule. */
static void lcx_elem_end(lcx *x, enum lcx_elem e) {
    Objlog__LifecycleRule *r = x->r;
    const char *s;
    switch (e) {
    case LX_ID:
        if (x->text_long || x->text_len > OBJLOG_LC_MAX_ID || strlen(x->text) != x->text_len)
            lcx_invalid(x, "InvalidArgument", "%s",
                        "ID length should not exceed allowed limit of 255");
        else if (!(r->id = strdup(x->text)))
            lcx_malformed(x, "%s", "out of memory");
        return;
    case LX_STATUS:
        s = lcx_trimmed(x);
        if (strcmp(s, "Enabled") != 0 && strcmp(s, "Disabled") != 0)
            lcx_malformed(x, "%s", "Status must be Enabled or Disabled");
        r->enabled = strcmp(s, "Enabled") == 0;
        return;
    case LX_PREFIX: case LX_F_PREFIX: case LX_A_PREFIX:
        lcx_prefix(x);
        return;
    case LX_FILTER:
        if (x->filter_kids > 1)
            lcx_malformed(x, "%s", "a Filter holds one of Prefix, Tag, "
                          "ObjectSizeGreaterThan, ObjectSizeLessThan or And");
        if (x->filter_kids == 0)
            r->s3_filter_form = LCX_FORM_EMPTY;
        return;
    case LX_AND:
        if (x->and_kids < 2)
            lcx_malformed(x, "%s", "And needs at least two conditions");
        r->s3_filter_form = x->seen & LX_BIT(LX_A_PREFIX) ? LCX_FORM_AND_PREFIX : LCX_FORM_AND;
        return;
    case LX_F_TAG: case LX_A_TAG:
        lcx_tag_end(x);
        return;
    case LX_F_TAG_KEY: case LX_A_TAG_KEY:
        lcx_tag_text(x, x->tag_key);
        return;
    case LX_F_TAG_VALUE: case LX_A_TAG_VALUE:
        lcx_tag_text(x, x->tag_value);
        return;
    case LX_F_GT: case LX_A_GT:
        lcx_size(x, &r->filter->size_greater_than, 1);
        return;
    case LX_F_LT: case LX_A_LT:
        lcx_size(x, &r->filter->size_less_than, 0);
        return;
    case LX_EXP:
        if (x->exp_kids != 1)
            lcx_malformed(x, "%s", "Expiration holds one of Days, Date or "
                          "ExpiredObjectDeleteMarker");
        return;
    case LX_EXP_DAYS:
        r->expiration_days = lcx_days(x, "'Days' for Expiration action");
        return;
    case LX_EXP_DATE:
        lcx_date(x);
        return;
    case LX_EXP_EODM:
        s = lcx_trimmed(x);
        if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0)
            lcx_malformed(x, "%s", "ExpiredObjectDeleteMarker must be true or false");
        r->expired_object_delete_marker = strcmp(s, "true") == 0;
        return;
    case LX_NC:
        if (!(x->seen & LX_BIT(LX_NC_DAYS)))
            lcx_malformed(x, "%s", "NoncurrentVersionExpiration needs NoncurrentDays");
        return;
    case LX_NC_DAYS:
        r->noncurrent_days = lcx_days(x, "'NoncurrentDays' for NoncurrentVersionExpiration action");
        return;
    case LX_NC_NEWER: {
        long long v;
        if (lcx_int(x, &v) < 0)
            return;
        if (v < 1 || v > OBJLOG_LC_MAX_NEWER_NONCURRENT)
            lcx_invalid(x, "InvalidArgument", "%s", "NewerNoncurrentVersions must be 1 to 100");
        else
            r->newer_noncurrent_versions = (uint32_t)v;
        return;
    }
    case LX_ABORT:
        if (!(x->seen & LX_BIT(LX_ABORT_DAYS)))
            lcx_malformed(x, "%s", "AbortIncompleteMultipartUpload needs DaysAfterInitiation");
        return;
    case LX_ABORT_DAYS:
        r->abort_incomplete_days = lcx_days(x, "'DaysAfterInitiation' for "
                                            "AbortIncompleteMultipartUpload action");
        return;
    default:
        return;
    }
}

/* ---------------------------------------------------------- the parser */

static int lcx_lookup(const char *rel) {
    for (int e = 0; e < LX_N; e++)
        if (strcmp(lcx_paths[e], rel) == 0)
            return e;
    return -1;
}

/* An element below a Rule opens: known, not repeated (but And's Tags),
 * and counted in its parent. */
static void lcx_elem_start(lcx *x, int e) {
    if (e < 0) {
        lcx_malformed(x, "unexpected element %s in a Rule", x->rel);
        return;
    }
    if (e == LX_TRANSITION || e == LX_NC_TRANSITION) {
        lcx_refuse(x, &x->hard, 501, "NotImplemented",
                   "%s is not implemented: objlog keeps no storage classes to move "
                   "objects between (Expiration, NoncurrentVersionExpiration and "
                   "AbortIncompleteMultipartUpload are)", lcx_paths[e]);
        XML_StopParser(x->p, XML_FALSE);
        return;
    }
    if (e == LX_F_TAG || e == LX_A_TAG)
        x->seen &= ~LX_TAG_KIDS;
    if ((x->seen & LX_BIT(e)) && e != LX_A_TAG) {
        lcx_malformed(x, "more than one %s in a Rule", x->rel);
        return;
    }
    x->seen |= LX_BIT(e);
    x->filter_kids += !!(LX_FILTER_KIDS & LX_BIT(e));
    x->and_kids += !!(LX_AND_KIDS & LX_BIT(e));
    x->exp_kids += !!(LX_EXP_KIDS & LX_BIT(e));
}

static void XMLCALL lcx_start(void *ud, const XML_Char *name, const XML_Char **attrs) {
    (void)attrs;
    lcx *x = ud;
    if (x->hard.status) /* stopped: expat may still report what it holds */
        return;
    const char *local = strrchr(name, ':');
    local = local ? local + 1 : name;
    x->depth++;
    x->text_len = 0;
    x->text_long = 0;
    if (x->depth > LCX_DEPTH) {
        lcx_malformed(x, "%s", "elements nested too deep");
        return;
    }
    if (x->depth == 1) {
        if (strcmp(local, "LifecycleConfiguration") != 0)
            lcx_malformed(x, "%s", "the root must be LifecycleConfiguration");
        return;
    }
    if (x->depth == 2) {
        if (strcmp(local, "Rule") != 0)
            lcx_malformed(x, "unexpected element %s in LifecycleConfiguration", local);
        else
            lcx_rule_start(x);
        x->rel[0] = '\0';
        return;
    }
    size_t at = strlen(x->rel);
    x->rel_at[x->depth] = at;
    snprintf(x->rel + at, sizeof(x->rel) - at, "%s%.39s", at ? "/" : "", local);
    lcx_elem_start(x, lcx_lookup(x->rel));
}

static void XMLCALL lcx_end(void *ud, const XML_Char *name) {
    (void)name;
    lcx *x = ud;
    if (x->hard.status)
        return;
    x->text[x->text_len] = '\0';
    if (x->depth == 2)
        lcx_rule_end(x);
    else if (x->depth == 1 && x->sl->n_rules == 0)
        lcx_malformed(x, "%s", "a LifecycleConfiguration needs at least one Rule");
    else if (x->depth > 2) {
        lcx_elem_end(x, (enum lcx_elem)lcx_lookup(x->rel));
        x->rel[x->rel_at[x->depth]] = '\0';
    }
    x->depth--;
    x->text_len = 0;
}

static void XMLCALL lcx_chars(void *ud, const XML_Char *s, int len) {
    lcx *x = ud;
    if (x->hard.status)
        return;
    if (x->text_len + (size_t)len > LCX_TEXT_MAX) {
        x->text_long = 1;
        return;
    }
    memcpy(x->text + x->text_len, s, (size_t)len);
    x->text_len += (size_t)len;
}

static void XMLCALL lcx_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                                const XML_Char *pubid, int internal) {
    (void)name, (void)sysid, (void)pubid, (void)internal;
    lcx_malformed(ud, "%s", "a DTD is not accepted");
}

/* Reads the body into x->sl; x->hard set when it does not parse. */
static void lcx_parse(lcx *x, const s3_request *r) {
    if (!(x->p = XML_ParserCreate("UTF-8"))) {
        lcx_refuse(x, &x->hard, 500, "InternalError", "%s", "out of memory");
        return;
    }
    XML_SetUserData(x->p, x);
    XML_SetElementHandler(x->p, lcx_start, lcx_end);
    XML_SetCharacterDataHandler(x->p, lcx_chars);
    XML_SetStartDoctypeDeclHandler(x->p, lcx_doctype);
    if (r->body_len == 0)
        lcx_refuse(x, &x->hard, 400, "MalformedXML", "%s", "the body is empty");
    else if (XML_Parse(x->p, (const char *)r->body, (int)r->body_len, XML_TRUE) !=
             XML_STATUS_OK && !x->hard.status) {
        char why[160];
        snprintf(why, sizeof(why), "line %lu: %s",
                 (unsigned long)XML_GetCurrentLineNumber(x->p),
                 XML_ErrorString(XML_GetErrorCode(x->p)));
        lcx_refuse(x, &x->hard, 400, "MalformedXML", "%s", why);
    }
    XML_ParserFree(x->p);
}

static void lcx_reply_refusal(http_ctx *c, const lcx *x, const lcx_err *e) {
    const char *id = e->rule >= 0 && (size_t)e->rule < x->sl->n_rules &&
                     x->sl->rules[e->rule]->id ? x->sl->rules[e->rule]->id : NULL;
    if (e->status == 400 && strcmp(e->code, "MalformedXML") == 0)
        http_reply_error(c, 400, e->code, "The XML you provided was not well-formed or did "
                         "not validate against our published schema: %s", e->msg);
    else if (id)
        http_reply_error(c, e->status, e->code, "%s (rule %s)", e->msg, id);
    else
        http_reply_error(c, e->status, e->code, "%s", e->msg);
}

/* Content-MD5 and x-amz-checksum-*, each checked when sent (S3 wants one
 * of them; objlog accepts neither, as for DeleteObjects); -1 after replying. */
static int lcx_digests(http_ctx *c, const s3_request *r) {
    unsigned char md5[16];
    char sum[128], header[64];
    const uint8_t *body = r->body_len ? r->body : (const uint8_t *)"";
    if (s3_body_md5(c, r, md5) < 0)
        return -1;
    return s3_checksum(c, NULL, body, r->body_len, sum, sizeof(sum), header,
                       sizeof(header)) < 0 ? -1 : 0;
}

void s3_put_lifecycle(http_ctx *c, const s3_request *r) {
    if (lcx_digests(c, r) < 0)
        return;
    lcx *x = calloc(1, sizeof(*x));
    Objlog__SetLifecycle *sl = x ? malloc(sizeof(*sl)) : NULL;
    if (!sl) {
        free(x);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    objlog__set_lifecycle__init(sl);
    x->sl = sl;
    lcx_parse(x, r);
    char err[300];
    if (x->hard.status) {
        lcx_reply_refusal(c, x, &x->hard);
    } else if (x->soft.status) {
        lcx_reply_refusal(c, x, &x->soft);
    } else if (objlog_lc_validate(sl->rules, sl->n_rules, err, sizeof(err)) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "%s", err);
    } else {
        lcconf_write(c, r->bucket, sl);
    }
    objlog__set_lifecycle__free_unpacked(sl, NULL);
    free(x);
}

void s3_delete_lifecycle(http_ctx *c, const s3_request *r) {
    c->op = S3_OP_DELETE_LIFECYCLE;
    lcconf_write(c, r->bucket, NULL);
}

/* ------------------------------------------------------------- the GET */

static void lcx_write_tag(xmlw *w, const Objlog__UserMeta *t) {
    xmlw_open(w, "Tag");
    xmlw_str(w, "Key", t->name);
    xmlw_str(w, "Value", t->value ? t->value : "");
    xmlw_close(w, "Tag");
}

/* The conditions of f, each as its own element (inside And or Filter). */
static void lcx_write_conditions(xmlw *w, const Objlog__LifecycleFilter *f, int prefix) {
    if (prefix)
        xmlw_bytes(w, "Prefix", f->prefix.data, f->prefix.len, 0);
    for (size_t i = 0; i < f->n_tags; i++)
        lcx_write_tag(w, f->tags[i]);
    if (f->size_greater_than)
        xmlw_u64(w, "ObjectSizeGreaterThan", f->size_greater_than);
    if (f->size_less_than)
        xmlw_u64(w, "ObjectSizeLessThan", f->size_less_than);
}

/* The filter in the shape it was put in (s3_filter_form), or for the JSON
 * API's rules: one condition alone, several in And, none as an empty
 * Prefix. */
static void lcx_write_filter(xmlw *w, const Objlog__LifecycleRule *r) {
    static const Objlog__LifecycleFilter none = OBJLOG__LIFECYCLE_FILTER__INIT;
    const Objlog__LifecycleFilter *f = r->filter ? r->filter : &none;
    if (r->s3_filter_form == LCX_FORM_RULE_PREFIX) {
        xmlw_bytes(w, "Prefix", f->prefix.data, f->prefix.len, 0);
        return;
    }
    size_t conds = (f->prefix.len > 0) + f->n_tags + (f->size_greater_than > 0) +
                   (f->size_less_than > 0);
    int and = r->s3_filter_form == LCX_FORM_AND_PREFIX || r->s3_filter_form == LCX_FORM_AND ||
              (r->s3_filter_form == LCX_FORM_DERIVED && conds > 1);
    xmlw_open(w, "Filter");
    if (and) {
        xmlw_open(w, "And");
        lcx_write_conditions(w, f, f->prefix.len > 0 ||
                                   r->s3_filter_form == LCX_FORM_AND_PREFIX);
        xmlw_close(w, "And");
    } else if (r->s3_filter_form != LCX_FORM_EMPTY || conds > 0) {
        lcx_write_conditions(w, f, f->prefix.len > 0 || conds == 0);
    }
    xmlw_close(w, "Filter");
}

static void lcx_write_rule(xmlw *w, const Objlog__LifecycleRule *r) {
    xmlw_open(w, "Rule");
    xmlw_str(w, "ID", r->id);
    lcx_write_filter(w, r);
    xmlw_str(w, "Status", r->enabled ? "Enabled" : "Disabled");
    if (r->expiration_days || r->expiration_date_ms || r->expired_object_delete_marker) {
        xmlw_open(w, "Expiration");
        if (r->expiration_days)
            xmlw_u64(w, "Days", r->expiration_days);
        if (r->expiration_date_ms)
            xmlw_time(w, "Date", r->expiration_date_ms);
        if (r->expired_object_delete_marker)
            xmlw_bool(w, "ExpiredObjectDeleteMarker", 1);
        xmlw_close(w, "Expiration");
    }
    if (r->noncurrent_days) {
        xmlw_open(w, "NoncurrentVersionExpiration");
        xmlw_u64(w, "NoncurrentDays", r->noncurrent_days);
        if (r->newer_noncurrent_versions)
            xmlw_u64(w, "NewerNoncurrentVersions", r->newer_noncurrent_versions);
        xmlw_close(w, "NoncurrentVersionExpiration");
    }
    if (r->abort_incomplete_days) {
        xmlw_open(w, "AbortIncompleteMultipartUpload");
        xmlw_u64(w, "DaysAfterInitiation", r->abort_incomplete_days);
        xmlw_close(w, "AbortIncompleteMultipartUpload");
    }
    xmlw_close(w, "Rule");
}

void s3_get_lifecycle(http_ctx *c, const s3_request *r) {
    const char *bucket = r->bucket;
    view_bucket b;
    if (!lcconf_read(c, bucket, &b))
        return;
    const Objlog__BucketRecord *br = b.record;
    for (size_t i = 0; i < br->n_lifecycle; i++)
        if (br->lifecycle[i]->filter && br->lifecycle[i]->filter->n_user_metadata) {
            http_reply_error(c, 501, "NotImplemented",
                             "rule %s filters on user metadata, which S3's XML cannot say: "
                             "read the rules with GET /v1/buckets/%s/lifecycle",
                             br->lifecycle[i]->id, bucket);
            view_bucket_free(&b);
            return;
        }
    xmlw w;
    if (xmlw_begin(&w, "LifecycleConfiguration") < 0) {
        view_bucket_free(&b);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    for (size_t i = 0; i < br->n_lifecycle; i++)
        lcx_write_rule(&w, br->lifecycle[i]);
    view_bucket_free(&b);
    s3_reply_xml(c, 200, &w, "LifecycleConfiguration");
}
