/* topics.c: `objlog topics create|check|add-partitions`: objlog's three
 * Kafka topics made with the configs schemas/topics.h documents, an
 * existing cluster's topics checked against them, and the events topic
 * grown (ranges can then move onto the new partitions). Talks to Kafka directly
 * (--brokers or $OBJLOG_BROKERS), not to objlogd. Exit 0 when the topics
 * are safe, 1 when a setting is unsafe or the cluster cannot be reached,
 * 2 on a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "topics.h"

const char topics_usage_text[] =
    "usage: objlog topics create [--brokers LIST] [--topic NAME] [--partitions N]\n"
    "                            [--replication N]\n"
    "       objlog topics check  [--brokers LIST] [--topic NAME]\n"
    "       objlog topics add-partitions N [--brokers LIST] [--topic NAME]\n"
    "LIST defaults to $OBJLOG_BROKERS; NAME to objlog.events; N to 8 partitions\n"
    "and min(3, brokers) replicas. create makes what is missing, then checks.\n"
    "add-partitions grows the events topic to N partitions; each objlogd takes\n"
    "them at its next start, and `objlog ranges move|split --to P` moves ranges\n"
    "onto them.\n";

static int topics_int(cli *c, const char *opt, const char *v, int lo, int hi, int *out) {
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi)
        return cli_usage_error(c, "%s needs an integer in %d..%d, not \"%s\"", opt, lo, hi,
                               v);
    *out = (int)x;
    return 0;
}

int topics_main(cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"topic", required_argument, NULL, 't'},
        {"partitions", required_argument, NULL, 'p'},
        {"replication", required_argument, NULL, 'r'},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    const char *brokers = getenv("OBJLOG_BROKERS");
    objlog_topics t = {.events = "objlog.events", .control = "objlog.control",
                       .dlq = "objlog.dlq", .partitions = 8};
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case 'b': brokers = optarg; break;
        case 't': t.events = optarg; break;
        case 'p':
            if ((rc = topics_int(c, "--partitions", optarg, 1, 4096, &t.partitions)))
                return rc;
            break;
        case 'r':
            if ((rc = topics_int(c, "--replication", optarg, 1, 32, &t.replication)))
                return rc;
            break;
        }
    }
    static const char *const names[] = {"create|check|add-partitions", "N"};
    const char *pos[2];
    int npos = o == CLI_STOP ? -1 : cli_positionals(c, argc, argv, pos, 1, 2, names, &rc);
    if (npos < 0)
        return rc;
    if (strcmp(pos[0], "create") && strcmp(pos[0], "check") && strcmp(pos[0], "add-partitions"))
        return cli_usage_error(c, "the subcommand is create, check or add-partitions, not \"%s\"",
                               pos[0]);
    int grow = !strcmp(pos[0], "add-partitions");
    if (grow != (npos == 2))
        return cli_usage_error(c, grow ? "add-partitions needs N, the new partition count"
                                       : "%s takes no N", pos[0]);
    int create = !strcmp(pos[0], "create");
    if (!brokers || !*brokers)
        return cli_usage_error(c, "--brokers (or $OBJLOG_BROKERS) is required");
    char err[512], problems[4096];
    if (grow) {
        int total = 0, before = 0;
        if ((rc = topics_int(c, "N", pos[1], 1, 4096, &total)))
            return rc;
        if (objlog_topics_add_partitions(brokers, &t, total, 30000, &before, err,
                                         sizeof(err)) < 0)
            return cli_fail(c, pos[0], "KafkaError", err, 0, NULL);
        printf("%s: %d partitions, was %d; restart each objlogd to apply them, then move "
               "ranges onto them (objlog ranges move BUCKET --to P)\n",
               t.events, total, before);
        return CLI_EXIT_OK;
    }
    if (create) {
        int made = objlog_topics_create(brokers, &t, 30000, stdout, err, sizeof(err));
        if (made < 0) {
            return cli_fail(c, pos[0], "KafkaError", err, 0, NULL);
        }
        if (made == 0)
            printf("all three topics exist on %s\n", brokers);
    }
    int unsafe = objlog_topics_check(brokers, &t, 30000, problems, sizeof(problems),
                                     err, sizeof(err));
    if (unsafe < 0) {
        return cli_fail(c, pos[0], "KafkaError", err, 0, NULL);
    }
    fputs(problems, unsafe ? stderr : stdout);
    if (unsafe) {
        char msg[64];
        snprintf(msg, sizeof(msg), "%d unsafe setting%s", unsafe, unsafe == 1 ? "" : "s");
        return cli_fail(c, pos[0], "UnsafeTopics", msg, 0, NULL);
    }
    printf("topics %s, %s, %s: safe\n", t.events, t.control, t.dlq);
    return CLI_EXIT_OK;
}
