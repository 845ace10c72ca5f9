/* objlog.c: main of the `objlog` command-line client of the objlogd HTTP
 * API (docs/ARCHITECTURE.md, "HTTP routes as built"): the global
 * options, the command table, `help` and the dispatch to a command or a
 * group's subcommand. The commands live in cmd_*.c, lag.c, topics.c,
 * cluster.c and bench.c (cli.h lists them); the argument parsing they
 * share is cli_args.c, so no command calls back into this file.
 *
 * Invariant: a usage error is reported before any request is sent, names
 * the option or argument at fault and exits 2; `objlog help [CMD [SUB]]`
 * and `objlog CMD --help` print usage on stdout and exit 0. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "cli.h"
#include "objlog_producer.h"

static const char general_usage[] =
    "usage: objlog [--url URL] [--json] [--bytes] COMMAND [OPTIONS] [ARGS]\n"
    "       objlog help [COMMAND [SUBCOMMAND]]   objlog COMMAND --help\n"
    "       objlog --version\n"
    "commands:\n"
    "  mb BUCKET                  create a bucket\n"
    "  rb BUCKET                  remove an empty bucket\n"
    "  bucket BUCKET              a bucket's settings\n"
    "  versioning BUCKET STATUS   Enabled or Suspended\n"
    "  ratelimit BUCKET           a bucket's request-rate limit (show, set, --delete)\n"
    "  put BUCKET KEY             write an object's metadata\n"
    "  get BUCKET KEY             an object's metadata\n"
    "  head BUCKET KEY            an object's headers\n"
    "  rm BUCKET KEY              delete an object or a version\n"
    "  ls [BUCKET]                objects of a bucket; without one, the buckets\n"
    "  versions BUCKET            every version and delete marker\n"
    "  mpu SUBCOMMAND             multipart uploads (create part complete abort ls parts)\n"
    "  stats [BUCKET]             usage counters\n"
    "  usage BUCKET               objects and bytes per common prefix\n"
    "  index SUBCOMMAND           attribute indexes (put get delete ls values)\n"
    "  find BUCKET INDEX          objects by an indexed attribute (--eq V)\n"
    "  lag                        how far each partition's view trails the log\n"
    "  cluster                    a cluster's nodes and who applies each partition\n"
    "  topics create|check        objlog's Kafka topics\n"
    "  ranges ls                  the range map (which partition holds which keys)\n"
    "  ranges split|move|merge BUCKET [--to P]  move a range to another partition\n"
    "  bench                      benchmarks\n"
    "  lifecycle set|get|delete|status  a bucket's lifecycle rules\n"
    "  notify set|get|delete|status  a bucket's event notifications\n"
    "  blobs ls                   the blob ids the node's partitions reference\n"
    "Every command takes --url URL (default $OBJLOG_URL or " CLI_DEFAULT_URL "),\n"
    "--token TOKEN (default $OBJLOG_TOKEN: objlogd --api-credentials' Bearer token),\n"
    "--json and --help. Options may follow arguments; \"--\" ends the options\n"
    "(objlog get b -- -key). Times are ISO 8601 UTC; sizes have units unless\n"
    "--bytes. With --json results are JSON on stdout and every error is one\n"
    "JSON object {\"error\":{\"code\",\"message\",\"command\",...}} on stderr.\n"
    "Exit status: 0 ok, 1 the request failed, 2 usage error.\n";

static const cli_cmd mpu_group[] = {
    {"mpu", "mpu", NULL,
     "usage: objlog mpu SUBCOMMAND ...\n"
     "  create BUCKET KEY           start an upload\n"
     "  part BUCKET KEY UPLOAD_ID N record part N\n"
     "  complete BUCKET KEY UPLOAD_ID N:ETAG...\n"
     "  abort BUCKET KEY UPLOAD_ID\n"
     "  ls BUCKET                   uploads in progress\n"
     "  parts BUCKET KEY UPLOAD_ID  recorded parts\n"
     "objlog help mpu SUBCOMMAND (or objlog mpu SUBCOMMAND --help) shows one.\n",
     cli_mpu_cmds},
    {NULL, NULL, NULL, NULL, NULL}};

static const cli_cmd lifecycle_group[] = {
    {"lifecycle", "lifecycle", NULL,
     "usage: objlog lifecycle SUBCOMMAND ...\n"
     "  set BUCKET FILE.json        replace the bucket's lifecycle rules\n"
     "  get BUCKET                  the rules, as JSON\n"
     "  delete BUCKET               remove them\n"
     "  status BUCKET               the expiration backlog\n"
     "objlog help lifecycle SUBCOMMAND shows one.\n",
     cli_lifecycle_cmds},
    {NULL, NULL, NULL, NULL, NULL}};

static const cli_cmd notify_group[] = {
    {"notify", "notify", NULL,
     "usage: objlog notify SUBCOMMAND ...\n"
     "  set BUCKET FILE.json        replace the bucket's notification configurations\n"
     "  get BUCKET                  the configurations\n"
     "  delete BUCKET               remove them\n"
     "  status BUCKET               the change feed's delivery on the node asked\n"
     "objlog help notify SUBCOMMAND shows one.\n",
     cli_notify_cmds},
    {NULL, NULL, NULL, NULL, NULL}};

static const cli_cmd ranges_group[] = {
    {"ranges", "ranges", NULL,
     "usage: objlog ranges SUBCOMMAND ...\n"
     "  ls                          the range map: which partition holds which keys\n"
     "objlog help ranges SUBCOMMAND shows one.\n",
     cli_ranges_cmds},
    {NULL, NULL, NULL, NULL, NULL}};

static const cli_cmd blobs_group[] = {
    {"blobs", "blobs", NULL,
     "usage: objlog blobs SUBCOMMAND ...\n"
     "  ls                          the blob ids the node's partitions reference\n"
     "objlog help blobs SUBCOMMAND shows one.\n",
     cli_blobs_cmds},
    {NULL, NULL, NULL, NULL, NULL}};

static const cli_cmd ops_cmds[] = {
    {"lag", "lag", lag_main, lag_usage_text, NULL},
    {"cluster", "cluster", cluster_main, cluster_usage_text, NULL},
    {"topics", "topics", topics_main, topics_usage_text, NULL},
    {"bench", "bench", bench_main, bench_usage_text, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static const cli_cmd *const cmd_tables[] = {cli_bucket_cmds, cli_object_cmds, mpu_group,
                                            cli_stats_cmds, ops_cmds, lifecycle_group, cli_index_cmds,
                                            ranges_group, notify_group, blobs_group};

static const cli_cmd *cmd_find(const cli_cmd *t, const char *name) {
    for (; t && t->name; t++)
        if (!strcmp(t->name, name))
            return t;
    return NULL;
}

static const cli_cmd *cmd_lookup(const char *name) {
    for (size_t i = 0; i < sizeof(cmd_tables) / sizeof(cmd_tables[0]); i++) {
        const cli_cmd *cmd = cmd_find(cmd_tables[i], name);
        if (cmd)
            return cmd;
    }
    return NULL;
}

/* ---- help and dispatch ---- */

/* objlog help [CMD [SUB]] */
static int help(cli *c, int argc, char **argv) {
    if (argc < 1) {
        fputs(general_usage, stdout);
        return CLI_EXIT_OK;
    }
    const cli_cmd *cmd = cmd_lookup(argv[0]);
    if (cmd && cmd->subs && argc > 1) {
        const cli_cmd *sub = cmd_find(cmd->subs, argv[1]);
        if (!sub)
            return cli_usage_error(c, "unknown %s subcommand \"%s\"", argv[0], argv[1]);
        cmd = sub;
    }
    if (!cmd)
        return cli_usage_error(c, "unknown command \"%s\"", argv[0]);
    fputs(cmd->usage, stdout);
    return CLI_EXIT_OK;
}

/* Runs cmd (argv[0] its name), or the subcommand argv[1] of a group. */
static int run(cli *c, const cli_cmd *cmd, int argc, char **argv) {
    c->cmd = cmd->full;
    c->usage = cmd->usage;
    if (!cmd->subs)
        return cmd->fn(c, argc, argv);
    if (argc < 2) {
        if (c->json)
            return cli_usage_error(c, "missing SUBCOMMAND");
        fprintf(stderr, "objlog: %s: missing SUBCOMMAND\n", cmd->name);
        fputs(cmd->usage, stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(cmd->usage, stdout);
        return CLI_EXIT_OK;
    }
    int asks_help = !strcmp(argv[1], "help");
    if (asks_help && argc < 3) {
        fputs(cmd->usage, stdout);
        return CLI_EXIT_OK;
    }
    const cli_cmd *sub = cmd_find(cmd->subs, argv[1 + asks_help]);
    if (sub && asks_help) {
        fputs(sub->usage, stdout);
        return CLI_EXIT_OK;
    }
    if (!sub)
        return cli_usage_error(c, "unknown subcommand \"%s\"", argv[1 + asks_help]);
    return run(c, sub, argc - 1, argv + 1);
}

/* --json anywhere before "--" decides how errors look, even one found
 * before --json is parsed. */
static int wants_json(int argc, char **argv) {
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--json"))
            return 1;
    return 0;
}

enum { OPT_VERSION = CLI_OPT_OWN };

int main(int argc, char **argv) {
    cli c = {.json = wants_json(argc, argv), .usage = general_usage};
    static const struct option opts[] = {
        {"version", no_argument, NULL, OPT_VERSION},
        CLI_BYTES_OPTION, CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int rc = 0, o;
    /* "+": stop at the command name; its options are its own. */
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (o) {
        case CLI_OPT_JSON: c.json = 1; break;
        case CLI_OPT_BYTES: c.bytes = 1; break;
        case CLI_OPT_URL: c.url_flag = optarg; break;
        case CLI_OPT_TOKEN: c.token = optarg; break;
        case 'h': fputs(general_usage, stdout); return CLI_EXIT_OK;
        case OPT_VERSION:
            printf("objlog %s (libobjlog_producer %s, librdkafka %s)\n", OBJLOG_VERSION_STR,
                   objlog_producer_version(), rd_kafka_version_str());
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error(&c, "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error(&c, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) {
        if (c.json)
            return cli_usage_error(&c, "missing COMMAND");
        fputs(general_usage, stderr);
        return CLI_EXIT_USAGE;
    }
    char **rest = argv + optind;
    int nrest = argc - optind;
    if (!strcmp(rest[0], "help"))
        return help(&c, nrest - 1, rest + 1);
    const cli_cmd *cmd = cmd_lookup(rest[0]);
    if (!cmd)
        return cli_usage_error(&c, "unknown command \"%s\"", rest[0]);
    c.url = c.url_flag ? c.url_flag : getenv("OBJLOG_URL");
    if (!c.token)
        c.token = getenv("OBJLOG_TOKEN");
    if (!c.url || !*c.url)
        c.url = CLI_DEFAULT_URL;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    c.h = curl_easy_init();
    rc = c.h ? run(&c, cmd, nrest, rest) : CLI_EXIT_FAIL;
    curl_easy_cleanup(c.h);
    curl_global_cleanup();
    return rc;
}
