/* cmd_notify.c: objlog notify set|get|delete|status: a bucket's event
 * notification configurations over /v1/buckets/{b}/notifications, and
 * the change feed's delivery over .../notifications/status. The
 * configurations file is the API's JSON, sent as is: the server is the
 * one place that checks it (notify.h's rules), so the CLI can never
 * accept what objlogd refuses. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names_b[] = {"BUCKET", "FILE"};

static int notify_write(cli *c, const char *bucket, const char *method, const char *body) {
    static const char *const hdrs[] = {"Content-Type: application/json", NULL};
    char line[160];
    snprintf(line, sizeof(line), "notify %s: %s\n",
             strcmp(method, "PUT") == 0 ? "set" : "deleted", bucket);
    return cli_write(c, bucket, method, cli_bucket_url(c, bucket, "/notifications"), body,
                     hdrs, line);
}

static int cmd_set(cli *c, int argc, char **argv) {
    const char *pos[2];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 2, names_b, &rc) < 0)
        return rc;
    char *body = cli_read_json_file(c, pos[1], "the configurations", &rc);
    if (!body)
        return rc;
    rc = notify_write(c, pos[0], "PUT", body);
    free(body);
    return rc;
}

static int cmd_delete(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 1, names_b, &rc) < 0)
        return rc;
    return notify_write(c, pos[0], "DELETE", NULL);
}

/* One block per configuration, a blank line between two; prefix and
 * suffix only when set. */
static void print_configs(const char *bucket, json_t *cs) {
    if (json_array_size(cs) == 0) {
        printf("%s has no notification configurations\n", bucket);
        return;
    }
    size_t i;
    json_t *nc;
    json_array_foreach(cs, i, nc) {
        if (i)
            putchar('\n');
        printf("id: %s\ntarget: %s\ndestination: %s\nevents:", cli_jstr(nc, "id"),
               cli_jstr(nc, "target"), cli_jstr(nc, "destination"));
        size_t k;
        json_t *ev;
        json_array_foreach(json_object_get(nc, "events"), k, ev)
            printf("%s %s", k ? "," : "", json_string_value(ev));
        putchar('\n');
        if (*cli_jstr(nc, "prefix"))
            printf("prefix: %s\n", cli_jstr(nc, "prefix"));
        if (*cli_jstr(nc, "suffix"))
            printf("suffix: %s\n", cli_jstr(nc, "suffix"));
    }
}

static int cmd_get(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 1, names_b, &rc) < 0)
        return rc;
    json_t *j = cli_get_json(c, pos[0], cli_bucket_url(c, pos[0], "/notifications"), &rc);
    if (!j)
        return rc;
    if (c->json)
        cli_print_json(j); /* takes j */
    else {
        print_configs(pos[0], json_object_get(j, "configurations"));
        json_decref(j);
    }
    return 0;
}

static long long num(json_t *o, const char *k) {
    return (long long)json_integer_value(json_object_get(o, k));
}

static void print_webhooks(json_t *h) {
    printf("webhooks, on this node: %lld records delivered; backlog %lld records, oldest "
           "%.1f s; %lld failed attempts (retried)\n",
           num(h, "delivered"), num(h, "backlog"),
           json_real_value(json_object_get(h, "oldest_age_seconds")), num(h, "failures"));
    json_t *l;
    size_t i;
    json_array_foreach(json_object_get(h, "lanes"), i, l) {
        const char *e = json_string_value(json_object_get(l, "error"));
        printf("  %s (bucket %s, configuration %s, partition %lld): position %lld, backlog "
               "%lld, oldest %.1f s%s%s\n",
               json_string_value(json_object_get(l, "url")),
               json_string_value(json_object_get(l, "bucket")),
               json_string_value(json_object_get(l, "configuration")), num(l, "partition"),
               num(l, "position"), num(l, "backlog"),
               json_real_value(json_object_get(l, "oldest_age_seconds")),
               e && *e ? "; last error: " : "", e && *e ? e : "");
    }
}

static void print_status(json_t *j) {
    json_t *k = json_object_get(json_object_get(j, "node"), "kafka");
    json_t *h = json_object_get(json_object_get(j, "node"), "webhook");
    printf("bucket %s: %lld notification configuration%s\n",
           json_string_value(json_object_get(j, "bucket")), num(j, "configurations"),
           num(j, "configurations") == 1 ? "" : "s");
    if (h)
        print_webhooks(h);
    if (!k)
        return;
    printf("kafka, on this node: %lld records delivered in %lld transactions; backlog %lld "
           "records, oldest %.1f s; %lld failed deliveries (retried); %lld positions behind "
           "the trim\n",
           num(k, "delivered"), num(k, "transactions"), num(k, "backlog"),
           json_real_value(json_object_get(k, "oldest_age_seconds")), num(k, "failures"),
           num(k, "trimmed"));
    json_t *p;
    size_t i;
    json_array_foreach(json_object_get(k, "partitions"), i, p) {
        const char *e = json_string_value(json_object_get(p, "error"));
        printf("  partition %lld: position %lld, backlog %lld, oldest %.1f s%s%s\n",
               num(p, "partition"), num(p, "position"), num(p, "backlog"),
               json_real_value(json_object_get(p, "oldest_age_seconds")),
               e && *e ? "; last error: " : "", e && *e ? e : "");
    }
}

static int cmd_status(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 1, names_b, &rc) < 0)
        return rc;
    json_t *j =
        cli_get_json(c, pos[0], cli_bucket_url(c, pos[0], "/notifications/status"), &rc);
    if (!j)
        return rc;
    if (c->json) {
        cli_print_json(j); /* takes j */
        return 0;
    }
    print_status(j);
    json_decref(j);
    return 0;
}

const cli_cmd cli_notify_cmds[] = {
    {"set", "notify set", cmd_set,
     "usage: objlog notify set BUCKET FILE.json   (FILE - : stdin)\n"
     "Replaces the bucket's event notification configurations with FILE's\n"
     "{\"configurations\":[...]}, e.g.\n"
     "  {\"configurations\":[{\"id\":\"new-photos\",\"arn\":\"arn:objlog:kafka:::photos\",\n"
     "    \"events\":[\"s3:ObjectCreated:*\"],\"prefix\":\"photos/\",\"suffix\":\".jpg\"}]}\n"
     "arn: arn:objlog:kafka:::TOPIC or arn:objlog:webhook:::URL-ENCODED-URL.\n"
     "events: S3's event types (s3:ObjectCreated:*, s3:ObjectRemoved:Delete, ...).\n"
     "prefix, suffix: optional filters on the key. An empty list removes them all.\n",
     NULL},
    {"get", "notify get", cmd_get,
     "usage: objlog notify get BUCKET\n"
     "The configurations, one block each: id, target (kafka or webhook),\n"
     "destination (the topic, or the webhook's URL), events, prefix, suffix.\n"
     "--json prints the API's answer as it is.\n",
     NULL},
    {"delete", "notify delete", cmd_delete,
     "usage: objlog notify delete BUCKET\nRemoves every notification configuration of the "
     "bucket.\n",
     NULL},
    {"status", "notify status", cmd_status,
     "usage: objlog notify status BUCKET\n"
     "The bucket's configuration count and the change feed's delivery on the node\n"
     "asked: records delivered to Kafka, the backlog (records applied and not yet\n"
     "delivered, and the age of the oldest), failures, and per partition the\n"
     "committed position. --json prints the API's answer as it is.\n",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};
