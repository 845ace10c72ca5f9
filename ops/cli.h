/* cli.h: internals of the objlog command-line client. Not installed.
 *
 *   objlog.c      main, the command table, help, dispatch
 *   cli_args.c    option parsing, positionals, value parsers, usage errors
 *   cli_http.c    one HTTP request, request helpers, paged listings, and the
 *                 one way a failure is reported
 *   cli_print.c   readable output: tables, sizes, JSON helpers
 *   cmd_object.c  put get head rm ls versions
 *   cmd_bucket.c  mb rb bucket versioning, and `ls` without a bucket
 *   cmd_mpu.c     mpu create|part|complete|abort|ls|parts
 *   cmd_stats.c   stats usage
 *   cmd_lifecycle.c lifecycle set|get|delete|status
 *   cmd_notify.c  notify set|get|delete
 *   cmd_blobs.c   blobs ls
 *   lag.c topics.c bench*.c (bench_int.h, bench_cond.h)
 *
 * Exit codes, process-wide: 0 ok, 1 the request failed, 2 usage error.
 * Errors (cli_fail, cli_usage_error): one line on stderr,
 * "objlog: CMD TARGET: CODE: message"; with --json instead one JSON object
 * on stderr, {"error":{"code","message","command"[,"target","status",
 * "request_id"]}} (code "UsageError" for usage errors). stdout carries a
 * result only when the command succeeded. */
#ifndef OBJLOG_CLI_H
#define OBJLOG_CLI_H

#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
#include <stddef.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

#define CLI_DEFAULT_URL "http://127.0.0.1:8080"

/* One response. body is NUL-terminated and owned by the struct:
 * cli_resp_free releases it. Header fields are "" when absent. */
typedef struct cli_resp {
    long status;
    char *body;
    size_t body_len;
    char etag[128];
    char version_id[64];
    char size[32];
    char last_modified[64];      /* X-Objlog-Last-Modified (ISO 8601) */
    char token[128];
} cli_resp;

void cli_resp_free(cli_resp *r);

/* Performs method on url with an optional JSON body and NULL-ended extra
 * headers, reusing h's connection (keep-alive). 0 when a response arrived,
 * -1 with errstr on a transport error. */
int cli_http(CURL *h, const char *method, const char *url, const char *body,
             const char *const *headers, cli_resp *r, char *errstr,
             size_t errstr_size);
/* The same within timeout_ms instead of 60 s (a request that may run for
 * minutes: a handoff of a big range). */
int cli_http_timeout(CURL *h, const char *method, const char *url, const char *body,
                     const char *const *headers, long timeout_ms, cli_resp *r, char *errstr,
                     size_t errstr_size);

/* hdrs (NULL-ended, may be NULL) and, when c has a token, its
 * "Authorization: Bearer" header into out[n] (auth holds that line);
 * returns out, NULL-ended. */
struct cli;
const char *const *cli_auth_headers(const struct cli *c, const char *const *hdrs,
                                    const char **out, size_t n, char *auth,
                                    size_t auth_size);

/* Percent-encodes s (every byte but unreserved ones); caller frees. */
char *cli_escape(CURL *h, const char *s);

/* Fills code/message from an error JSON body, or from the status. */
void cli_error_of(const cli_resp *r, char *code, size_t code_size,
                  char *message, size_t message_size);

/* ---- the state of one run (objlog.c) ---- */

typedef struct cli {
    const char *url;             /* resolved: --url, $OBJLOG_URL or default */
    const char *url_flag;        /* --url only (bench: NULL = start objlogd) */
    const char *token;           /* --token or $OBJLOG_TOKEN: the JSON API's
                                    Bearer token; NULL none */
    int json;
    int bytes;                   /* --bytes: sizes as exact byte counts */
    CURL *h;
    const char *cmd;             /* "get", "mpu part": for messages */
    const char *usage;           /* that command's usage text */
    int parsing;                 /* cli_getopt: inside one command's loop */
    int help_shown;              /* cli_getopt printed --help: run nothing */
} cli;

/* A command: name, handler (argv[0] is the command's name), usage text
 * (first line the synopsis), or a group of subcommands (mpu). */
typedef struct cli_cmd {
    const char *name;
    const char *full;            /* "mpu part" */
    int (*fn)(cli *c, int argc, char **argv);
    const char *usage;
    const struct cli_cmd *subs;  /* NULL-name ended */
} cli_cmd;

extern const cli_cmd cli_object_cmds[];
extern const cli_cmd cli_bucket_cmds[];
extern const cli_cmd cli_mpu_cmds[];
extern const cli_cmd cli_index_cmds[];   /* index SUBCOMMAND, find (cmd_index.c) */
extern const cli_cmd cli_stats_cmds[];
extern const cli_cmd cli_lifecycle_cmds[]; /* cmd_lifecycle.c */
extern const cli_cmd cli_notify_cmds[];    /* cmd_notify.c */
extern const cli_cmd cli_ranges_cmds[];    /* ranges ls (cmd_ranges.c) */
extern const cli_cmd cli_blobs_cmds[];     /* blobs ls (cmd_blobs.c) */

/* Options every command takes; a command's table ends with these, then
 * {0}. Own options use values from CLI_OPT_OWN on (or a letter). */
enum {
    CLI_OPT_JSON = 0x1000,
    CLI_OPT_URL,
    CLI_OPT_BYTES,
    CLI_OPT_TOKEN,
    CLI_OPT_OWN = 0x1100
};
#define CLI_COMMON_OPTIONS                                   \
    {"json", no_argument, NULL, CLI_OPT_JSON},               \
    {"url", required_argument, NULL, CLI_OPT_URL},           \
    {"token", required_argument, NULL, CLI_OPT_TOKEN},       \
    {"help", no_argument, NULL, 'h'}
#define CLI_BYTES_OPTION {"bytes", no_argument, NULL, CLI_OPT_BYTES}
/* The tail of a read command's table (values are the command's own), kept
 * in one place because getopt takes the first exact "--token", so the
 * command's own must stay ahead of CLI_COMMON_OPTIONS' one. */
#define CLI_READ_OPTIONS(o_consistency, o_token)                        \
    {"consistency", required_argument, NULL, o_consistency},         \
    {"token", required_argument, NULL, o_token},                     \
    CLI_BYTES_OPTION, CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}

/* ---- arguments (cli_args.c) ---- */

#define CLI_STOP (-2)
/* getopt_long over argv (argv[0] the command), positionals permuted to the
 * end unless after "--". Returns the next own option's value (optarg set);
 * -1 when the options are done (positionals at argv[optind..argc)); or
 * CLI_STOP with *rc set: --help printed the usage (0), or a usage error was
 * reported (2): a missing value or an unknown option, named. Handles
 * --json, --url, --bytes and --help itself. */
int cli_getopt(cli *c, int argc, char **argv, const struct option *opts, int *rc);

/* The positionals after cli_getopt: at least min, at most max of them into
 * pos (names[i] names the i-th for "missing BUCKET"). Their count, or
 * -1 with *rc = 2 after the usage error (a missing one prints the usage). */
int cli_positionals(cli *c, int argc, char **argv, const char **pos, int min,
                    int max, const char *const *names, int *rc);

/* Reports a usage error of the current command; returns 2. */
int cli_usage_error(cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --consistency strong|eventual|token: 0, or a usage error (2). */
int cli_check_consistency(cli *c, const char *v);

/* Parses a decimal u64 without sign. 0, or -1. */
int cli_parse_u64(const char *s, unsigned long long *v);
/* A decimal count option: v NULL (not given) or lo..hi is 0; else the
 * usage error "NAME must be LO to HI, not \"V\"" (2). */
int cli_check_range(cli *c, const char *name, const char *v, unsigned long long lo,
                    unsigned long long hi);

/* A FILE argument holding a JSON request body (path "-": stdin), checked
 * to be JSON but sent as it is (the server judges it): the text
 * (caller frees), or NULL with *rc = 2 after the usage error naming what
 * ("the rules") or the file. */
char *cli_read_json_file(cli *c, const char *path, const char *what, int *rc);

/* A command with only the common options and exactly n positionals into
 * pos: 0, or -1 with *rc set (--help shown: 0; a usage error: 2). */
int cli_args_fixed(cli *c, int argc, char **argv, const char **pos, int n,
                   const char *const *names, int *rc);

/* ---- requests (cli_http.c) ---- */

/* Reports a failure of the current command on target; returns 1. status
 * and request_id: 0 / NULL when there was no HTTP answer. */
/* Prints {"error": e} as one line on stderr (the --json error rule); takes e. */
void cli_json_error(json_t *e);
int cli_fail(cli *c, const char *target, const char *code, const char *msg,
             long status, const char *request_id);

/* {url}/v1/buckets/{b}[/objects/{key}] (escaped); caller frees; NULL OOM. */
char *cli_path(cli *c, const char *bucket, const char *key);
/* {url}/v1/buckets/{bucket}{suffix} (suffix already escaped). */
char *cli_bucket_url(cli *c, const char *bucket, const char *suffix);
/* Appends "&name=escaped(value)" (or '?' first) to *url; value NULL: no-op. */
int cli_query_add(cli *c, char **url, const char *name, const char *value);

/* Sends the request; on any failure reports it (cli_fail). 0 with *r
 * filled (status 2xx), or an exit code. */
int cli_request(cli *c, const char *target, const char *method, const char *url,
                const char *body, const char *const *hdrs, cli_resp *r);
/* The 2xx body as a JSON object, or NULL with *rc after reporting. */
json_t *cli_parse_json(cli *c, const char *target, cli_resp *r, int *rc);
/* Sends method url (taken: freed here; NULL reports out of memory) with
 * body and hdrs; the 2xx answer's JSON object, or NULL with *rc set after
 * reporting. */
json_t *cli_send_json(cli *c, const char *target, const char *method, char *url,
                      const char *body, const char *const *hdrs, int *rc);
/* The same for a GET. */
json_t *cli_get_json(cli *c, const char *target, char *url, int *rc);
/* A write whose answer --json prints as it is and a person reads as line:
 * cli_send_json, then either. 0, or an exit code. */
int cli_write(cli *c, const char *target, const char *method, char *url, const char *body,
              const char *const *hdrs, const char *line);

/* Paged listings: the array a page returns, and which response fields
 * feed which request parameters for the next page (up to two markers). */
typedef struct cli_page_spec {
    const char *array;
    const char *next_field[2];
    const char *marker_param[2];
} cli_page_spec;

#define CLI_LIST_MAX_PARAMS 10

typedef struct cli_list_req {
    const char *target;          /* for error messages */
    const char *base;            /* URL without query */
    const char *name[CLI_LIST_MAX_PARAMS];
    const char *value[CLI_LIST_MAX_PARAMS];  /* NULL: parameter absent */
    int n;
    int all;
} cli_list_req;

void cli_list_param(cli_list_req *q, const char *name, const char *value);
/* The read-consistency params and the empty first continuation token that
 * every token-paged listing (buckets, objects, index queries) ends with, so
 * they are sent in one order everywhere. */
void cli_list_token_params(cli_list_req *q, const char *consistency, const char *token);
/* One page, or with q->all every page merged into the first (which then
 * says is_truncated false and carries no next_* field). */
json_t *cli_list_fetch(cli *c, cli_list_req *q, const cli_page_spec *sp, int *rc);
/* cli_list_fetch with q->base = base (taken: freed here; NULL reports out
 * of memory on q->target). */
json_t *cli_list_get(cli *c, cli_list_req *q, char *base, const cli_page_spec *sp, int *rc);
/* cli_list_get then cli_list_output: the whole tail of a listing that
 * prints its pages as they come, so such commands fail and print alike.
 * Returns the exit code (*rc when the fetch failed). */
int cli_list_run(cli *c, cli_list_req *q, char *base, const cli_page_spec *sp,
                 void (*print)(cli *, json_t *), int *rc);

/* ---- readable output (cli_print.c) ---- */

/* A table of text cells printed with each column as wide as its widest
 * cell under a header row; columns flagged right-aligned are numbers. */
#define CLI_TABLE_MAX_COLS 8
typedef struct cli_table {
    int ncols;
    const char *const *head;
    const int *right;
    char **cells;                /* row-major, owned */
    size_t nrows, cap;
} cli_table;
void cli_table_add(cli_table *t, const char *const *row);
/* Prints the header (only when there are rows) and the rows; frees. */
void cli_table_print_free(cli_table *t);

/* "0 B", "512 B", "1.5 KiB", "3.0 GiB"; with c->bytes the exact count. */
void cli_size(const cli *c, unsigned long long n, char *out, size_t size);
const char *cli_plural(size_t n, const char *one, const char *many);
const char *cli_jstr(json_t *o, const char *name);
long long cli_jint(json_t *o, const char *name);
unsigned long long cli_ju64(json_t *o, const char *name);
/* Prints j compactly on stdout, one line; takes j. */
void cli_print_json(json_t *j);
/* The same with json_dumps flags (the bench: JSON_REAL_PRECISION(6)). */
void cli_print_json_flags(json_t *j, size_t flags);
/* Copies the fields of src named in keep (NULL-ended), in that order, into
 * o. Empty strings are dropped: they mean nothing. */
void cli_pick(json_t *o, json_t *src, const char *const *keep);
/* "name: value" for each field of o named in names (NULL-ended) that is a
 * non-empty string: an absent field is no blank line. */
void cli_print_fields(json_t *o, const char *const *names);
/* 1 when s is a request id: 32 hex digits. */
int cli_request_id_ok(const char *s);
/* One "name: value" line per scalar (not for an empty string), nested
 * objects as "parent.name". */
void cli_print_flat(const char *prefix, json_t *o);
/* A command's one-object result: --json prints j, else cli_print_flat.
 * Takes j; returns 0 (the exit code). */
int cli_print_object(cli *c, json_t *j);
/* The result of a listing: --json prints j, else print(c, j). Takes j. */
int cli_list_output(cli *c, json_t *j, void (*print)(cli *, json_t *));
const char *cli_truncated_note(json_t *j);
void cli_print_prefixes(json_t *j);

/* ---- cmd_bucket.c ---- */
/* `objlog ls` without a bucket: GET /v1/buckets (every page with all). */
int cli_list_buckets(cli *c, const char *prefix, const char *tenant,
                     const char *max, const char *consistency, const char *token,
                     int all);

/* ---- the other commands (argv[0] is the command's name) ---- */
int lag_main(cli *c, int argc, char **argv);
int cluster_main(cli *c, int argc, char **argv);
extern const char cluster_usage_text[];
int topics_main(cli *c, int argc, char **argv);
int bench_main(cli *c, int argc, char **argv);
extern const char lag_usage_text[];
extern const char topics_usage_text[];
extern const char bench_usage_text[];

#endif
