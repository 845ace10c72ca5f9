/* cli_args.c: how every objlog command reads its arguments: getopt_long
 * over the command's option table (--opt=value, "--" ends options,
 * positionals permuted to the end), the positional count check, the
 * shared value parsers, a FILE argument's JSON, and cli_usage_error, the
 * one way a usage error is reported. Commands call these; none of them
 * calls a command.
 *
 * Invariant: a usage error is reported before any request is sent, names
 * the option or argument at fault and exits 2 (one JSON object on stderr
 * with --json); `objlog CMD --help` prints the usage on stdout and exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- errors ---- */

int cli_usage_error(cli *c, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->json) {
        json_t *e = json_pack("{s:s, s:s}", "code", "UsageError", "message", msg);
        if (c->cmd)
            json_object_set_new(e, "command", json_string(c->cmd));
        cli_json_error(e);
        return CLI_EXIT_USAGE;
    }
    if (c->cmd)
        fprintf(stderr, "objlog: %s: %s\n(objlog help %s shows the usage)\n", c->cmd, msg,
                c->cmd);
    else
        fprintf(stderr, "objlog: %s\n(objlog help lists the commands)\n", msg);
    return CLI_EXIT_USAGE;
}

int cli_parse_u64(const char *s, unsigned long long *v) {
    char *end = NULL;
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    *v = strtoull(s, &end, 10);
    return *end ? -1 : 0;
}

int cli_check_consistency(cli *c, const char *v) {
    if (!v || !strcmp(v, "strong") || !strcmp(v, "eventual") || !strcmp(v, "token"))
        return 0;
    return cli_usage_error(c, "--consistency must be strong, eventual or token, not \"%s\"",
                           v);
}

/* ---- option parsing ---- */

/* "--name" of an argument like "--name=value", for messages. */
static void opt_name(const char *arg, char *out, size_t n) {
    size_t l = strcspn(arg, "=");
    snprintf(out, n, "%.*s", (int)(l < 200 ? l : 200), arg);
}

int cli_getopt(cli *c, int argc, char **argv, const struct option *opts, int *rc) {
    if (!c->parsing) {
        optind = 0; /* glibc: start over, including its permutation state */
        opterr = 0;
        c->parsing = 1;
    }
    for (;;) {
        int o = getopt_long(argc, argv, ":h", opts, NULL);
        char name[256];
        switch (o) {
        case -1:
            c->parsing = 0;
            return -1;
        case CLI_OPT_JSON:
            c->json = 1;
            continue;
        case CLI_OPT_BYTES:
            c->bytes = 1;
            continue;
        case CLI_OPT_URL:
            c->url = c->url_flag = optarg;
            continue;
        case CLI_OPT_TOKEN:
            c->token = optarg;
            continue;
        case 'h':
            c->parsing = 0;
            c->help_shown = 1;
            fputs(c->usage, stdout);
            *rc = CLI_EXIT_OK;
            return CLI_STOP;
        case ':':
            c->parsing = 0;
            opt_name(argv[optind - 1], name, sizeof(name));
            *rc = cli_usage_error(c, "option '%s' needs a value", name);
            return CLI_STOP;
        case '?':
            c->parsing = 0;
            if (optopt > 0 && optopt < 128)
                snprintf(name, sizeof(name), "-%c", optopt);
            else
                opt_name(argv[optind - 1], name, sizeof(name));
            *rc = cli_usage_error(c, "unknown option '%s'", name);
            return CLI_STOP;
        default:
            return o;
        }
    }
}

int cli_positionals(cli *c, int argc, char **argv, const char **pos, int min, int max,
                    const char *const *names, int *rc) {
    int n = argc - optind;
    if (n < min) {
        if (c->json) {
            *rc = cli_usage_error(c, "missing %s", names[n]);
        } else {
            fprintf(stderr, "objlog: %s: missing %s\n", c->cmd, names[n]);
            fputs(c->usage, stderr);
            *rc = CLI_EXIT_USAGE;
        }
        return -1;
    }
    if (n > max) {
        *rc = cli_usage_error(c, "unexpected argument \"%s\"", argv[optind + max]);
        return -1;
    }
    for (int i = 0; i < n; i++)
        pos[i] = argv[optind + i];
    return n;
}

int cli_args_fixed(cli *c, int argc, char **argv, const char **pos, int n,
                   const char *const *names, int *rc) {
    static const struct option opts[] = {CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int o;
    while ((o = cli_getopt(c, argc, argv, opts, rc)) >= 0)
        ;
    if (o == CLI_STOP || cli_positionals(c, argc, argv, pos, n, n, names, rc) < 0)
        return -1;
    return 0;
}

int cli_check_range(cli *c, const char *name, const char *v, unsigned long long lo,
                    unsigned long long hi) {
    unsigned long long n;
    if (v && (cli_parse_u64(v, &n) < 0 || n < lo || n > hi))
        return cli_usage_error(c, "%s must be %llu to %llu, not \"%s\"", name, lo, hi, v);
    return 0;
}

/* ---- file arguments ---- */

/* The whole file (or stdin for "-"), NUL-terminated; NULL with why. */
static char *read_file(const char *path, char *why, size_t wn) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(why, wn, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (f != stdin)
        fclose(f);
    if (!buf) {
        snprintf(why, wn, "out of memory");
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

char *cli_read_json_file(cli *c, const char *path, const char *what, int *rc) {
    char why[512];
    char *body = read_file(path, why, sizeof(why));
    if (!body) {
        *rc = cli_usage_error(c, "cannot read %s: %s", what, why);
        return NULL;
    }
    json_error_t jerr;
    json_t *j = json_loads(body, 0, &jerr);
    if (!j) {
        free(body);
        *rc = cli_usage_error(c, "%s is not JSON: line %d: %s", path, jerr.line, jerr.text);
        return NULL;
    }
    json_decref(j);
    return body;
}
