/* cmd_lifecycle.c: objlog lifecycle set|get|delete|status: a
 * bucket's lifecycle rules over /v1/buckets/{b}/lifecycle and the
 * worker's backlog over /v1/buckets/{b}/lifecycle/status. The rules file
 * is the API's JSON, sent as is: the server is the one place that checks
 * it, so the CLI can never accept what objlogd refuses. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names_b[] = {"BUCKET", "FILE"};

static int lc_write(cli *c, const char *bucket, const char *method, const char *body) {
    static const char *const hdrs[] = {"Content-Type: application/json", NULL};
    char line[160];
    snprintf(line, sizeof(line), "lifecycle %s: %s\n",
             strcmp(method, "PUT") == 0 ? "set" : "deleted", bucket);
    return cli_write(c, bucket, method, cli_bucket_url(c, bucket, "/lifecycle"), body, hdrs,
                     line);
}

static int cmd_set(cli *c, int argc, char **argv) {
    const char *pos[2];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 2, names_b, &rc) < 0)
        return rc;
    char *body = cli_read_json_file(c, pos[1], "the rules", &rc);
    if (!body)
        return rc;
    rc = lc_write(c, pos[0], "PUT", body);
    free(body);
    return rc;
}

static int cmd_delete(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 1, names_b, &rc) < 0)
        return rc;
    return lc_write(c, pos[0], "DELETE", NULL);
}

static int cmd_get(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 1, names_b, &rc) < 0)
        return rc;
    json_t *j = cli_get_json(c, pos[0], cli_bucket_url(c, pos[0], "/lifecycle"), &rc);
    if (!j)
        return rc;
    /* Either way JSON: it is what `set` takes back. */
    char *s = json_dumps(j, c->json ? JSON_COMPACT : JSON_INDENT(2));
    json_decref(j);
    if (s)
        puts(s);
    free(s);
    return 0;
}

static int cmd_status(cli *c, int argc, char **argv) {
    const char *pos[1];
    int rc = 0;
    if (cli_args_fixed(c, argc, argv, pos, 1, names_b, &rc) < 0)
        return rc;
    json_t *j = cli_get_json(c, pos[0], cli_bucket_url(c, pos[0], "/lifecycle/status"), &rc);
    return j ? cli_print_object(c, j) : rc;
}

const cli_cmd cli_lifecycle_cmds[] = {
    {"set", "lifecycle set", cmd_set,
     "usage: objlog lifecycle set BUCKET FILE.json   (FILE - : stdin)\n"
     "Replaces the bucket's lifecycle rules with FILE's {\"rules\":[...]}, e.g.\n"
     "  {\"rules\":[{\"id\":\"logs\",\"status\":\"Enabled\",\"filter\":{\"prefix\":\"logs/\"},\n"
     "             \"expiration\":{\"days\":30},\n"
     "             \"noncurrent_version_expiration\":{\"noncurrent_days\":7}}]}\n"
     "Filter: prefix, tags {K:V}, user_metadata {K:V}, size_greater_than,\n"
     "size_less_than. Actions: expiration {days|date|expired_object_delete_marker},\n"
     "noncurrent_version_expiration {noncurrent_days, newer_noncurrent_versions},\n"
     "abort_incomplete_multipart_upload {days_after_initiation}.\n",
     NULL},
    {"get", "lifecycle get", cmd_get,
     "usage: objlog lifecycle get BUCKET\nPrints the rules as JSON (what set takes).\n",
     NULL},
    {"delete", "lifecycle delete", cmd_delete,
     "usage: objlog lifecycle delete BUCKET\nRemoves the bucket's lifecycle rules.\n",
     NULL},
    {"status", "lifecycle status", cmd_status,
     "usage: objlog lifecycle status BUCKET\n"
     "The lifecycle backlog: items due and not yet expired, the oldest due age,\n"
     "expirations so far and per second (as the lifecycle worker last saw them).\n",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};
