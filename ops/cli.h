/* cli.h: internals of the objlog command-line client (ops/objlog.c,
 * ops/cli_http.c, ops/bench.c, ops/lag.c). Not installed. Owns the one HTTP helper the
 * commands share and the process-wide exit codes: 0 ok, 1 the request
 * failed (message on stderr), 2 usage error. */
#ifndef OBJLOG_CLI_H
#define OBJLOG_CLI_H

#include <curl/curl.h>
#include <stddef.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/* One response. body is NUL-terminated and owned by the struct:
 * cli_resp_free releases it. Header fields are "" when absent. */
typedef struct cli_resp {
    long status;
    char *body;
    size_t body_len;
    char etag[128];
    char version_id[64];
    char size[32];
    char last_modified[64];
    char token[128];
} cli_resp;

void cli_resp_free(cli_resp *r);

/* Performs method on url with an optional JSON body and NULL-ended extra
 * headers, reusing h's connection (keep-alive). 0 when a response arrived,
 * -1 with errstr on a transport error. */
int cli_http(CURL *h, const char *method, const char *url, const char *body,
             const char *const *headers, cli_resp *r, char *errstr,
             size_t errstr_size);

/* Percent-encodes s (every byte but unreserved ones); caller frees. */
char *cli_escape(CURL *h, const char *s);

/* Fills code/message from an error JSON body, or from the status. */
void cli_error_of(const cli_resp *r, char *code, size_t code_size,
                  char *message, size_t message_size);

/* `objlog bench` (and `objlog bench --list`, the LIST latency scenario):
 * argv starts after "bench". url NULL unless --url given before the
 * command. */
int bench_main(int argc, char **argv, const char *url, int json);

/* `objlog lag [--json] [--watch [--interval S]]` (ops/lag.c): argv starts
 * after "lag"; url is the resolved base URL. */
int lag_main(int argc, char **argv, const char *url, int json);

/* `objlog topics create|check` (ops/topics.c): argv starts after "topics".
 * Talks to Kafka, not to objlogd. */
int topics_main(int argc, char **argv);

#endif
