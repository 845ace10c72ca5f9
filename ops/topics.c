/* topics.c: `objlog topics create|check` (issue 10, item 3): objlog's three
 * Kafka topics made with the configs schemas/topics.h documents, and an
 * existing cluster's topics checked against them. Talks to Kafka directly
 * (--brokers or $OBJLOG_BROKERS), not to objlogd. Exit 0 when the topics
 * are safe, 1 when a setting is unsafe or the cluster cannot be reached,
 * 2 on a usage error. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "topics.h"

static int topics_usage(FILE *f) {
    fprintf(f, "usage: objlog topics create [--brokers LIST] [--topic NAME] [--partitions N]\n"
               "                            [--replication N]\n"
               "       objlog topics check  [--brokers LIST] [--topic NAME]\n"
               "LIST defaults to $OBJLOG_BROKERS; NAME to objlog.events; N to 8 partitions\n"
               "and min(3, brokers) replicas. create makes what is missing, then checks.\n");
    return f == stdout ? CLI_EXIT_OK : CLI_EXIT_USAGE;
}

static int topics_int(const char *opt, const char *v, int lo, int hi, int *out) {
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        fprintf(stderr, "objlog topics: %s needs an integer in %d..%d (got '%s')\n",
                opt, lo, hi, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

int topics_main(int argc, char **argv) {
    if (argc < 1 || (strcmp(argv[0], "create") && strcmp(argv[0], "check")))
        return topics_usage(argc >= 1 && !strcmp(argv[0], "--help") ? stdout : stderr);
    int create = !strcmp(argv[0], "create");
    const char *brokers = getenv("OBJLOG_BROKERS");
    objlog_topics t = {.events = "objlog.events", .control = "objlog.control",
                       .dlq = "objlog.dlq", .partitions = 8};
    static const struct option longopts[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"topic", required_argument, NULL, 't'},
        {"partitions", required_argument, NULL, 'p'},
        {"replication", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (ch) {
        case 'b': brokers = optarg; break;
        case 't': t.events = optarg; break;
        case 'p':
            if (topics_int("--partitions", optarg, 1, 4096, &t.partitions) < 0)
                return CLI_EXIT_USAGE;
            break;
        case 'r':
            if (topics_int("--replication", optarg, 1, 32, &t.replication) < 0)
                return CLI_EXIT_USAGE;
            break;
        case 'h': return topics_usage(stdout);
        case ':':
            fprintf(stderr, "objlog topics: %s needs a value\n", argv[optind - 1]);
            return CLI_EXIT_USAGE;
        default:
            fprintf(stderr, "objlog topics: unknown option %s\n", argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "objlog topics: unexpected argument \"%s\"\n", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    if (!brokers || !*brokers) {
        fprintf(stderr, "objlog topics: --brokers (or $OBJLOG_BROKERS) is required\n");
        return CLI_EXIT_USAGE;
    }
    char err[512], problems[4096];
    if (create) {
        int made = objlog_topics_create(brokers, &t, 30000, stdout, err, sizeof(err));
        if (made < 0) {
            fprintf(stderr, "objlog topics create: %s\n", err);
            return CLI_EXIT_FAIL;
        }
        if (made == 0)
            printf("all three topics exist on %s\n", brokers);
    }
    int unsafe = objlog_topics_check(brokers, &t, 30000, problems, sizeof(problems),
                                     err, sizeof(err));
    if (unsafe < 0) {
        fprintf(stderr, "objlog topics %s: %s\n", argv[0], err);
        return CLI_EXIT_FAIL;
    }
    fputs(problems, unsafe ? stderr : stdout);
    if (unsafe) {
        fprintf(stderr, "objlog topics %s: %d unsafe setting%s\n", argv[0], unsafe,
                unsafe == 1 ? "" : "s");
        return CLI_EXIT_FAIL;
    }
    printf("topics %s, %s, %s: safe\n", t.events, t.control, t.dlq);
    return CLI_EXIT_OK;
}
