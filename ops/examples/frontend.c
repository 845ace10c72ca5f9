/* frontend.c: the smallest upload frontend that embeds libobjlog_producer,
 * built against an installed objlog (README, "Embedding the library"):
 *
 *   cc frontend.c -o frontend $(pkg-config --cflags --libs objlog-producer) \
 *      -Wl,-rpath,$(pkg-config --variable=libdir objlog-producer)
 *
 * It writes one bucket and two objects to the log at BOOTSTRAP and, with
 * ack=applied, waits for each write's outcome from the objlogd at URL and
 * prints it: OK, or REJECTED with S3's code (a second run finds the bucket
 * there: BucketAlreadyExists), never a write's success it did not see.
 * tests/install.sh builds it against a fresh install prefix, shared and
 * static, and checks its output. */
#include <objlog_producer.h>
#include <stdio.h>
#include <string.h>

static void print_outcome(const char *what, int rc, const objlog_write_result *r,
                          const char *err) {
    if (rc != 0) {
        printf("%s: error %s\n", what, err);
        return;
    }
    printf("%s: %s", what, objlog_status_name(r->status));
    if (r->status == OBJLOG_STATUS_OK && r->token[0])
        printf(" token %s", strchr(r->token, '.') ? "P.O" : r->token);
    if (r->error_code[0])
        printf(" %s", r->error_code);
    if (r->status == OBJLOG_STATUS_UNKNOWN)
        printf(" (retry with request id %s)", r->request_id_hex);
    printf("\n");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: frontend BOOTSTRAP OBJLOGD_URL\n");
        return 2;
    }
    char err[512];
    printf("header %s library %s\n", OBJLOG_VERSION_STR, objlog_producer_version());
    objlog_producer_conf *conf = objlog_producer_conf_new();
    if (objlog_producer_conf_set(conf, "kafka.acks", "1", err, sizeof(err)) !=
        OBJLOG_CONF_INVALID) {
        fprintf(stderr, "kafka.acks was accepted\n");
        return 1;
    }
    printf("refused: %s\n", err);
    if (objlog_producer_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "query.url", argv[2], err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "ack", "applied", err, sizeof(err))) {
        fprintf(stderr, "conf: %s\n", err);
        return 1;
    }
    objlog_producer *p = objlog_producer_new(conf, err, sizeof(err));
    if (!p) {
        fprintf(stderr, "producer: %s\n", err);
        return 1;
    }
    objlog_write_result r;
    objlog_object_meta meta = {.size = 2048, .etag = "9b2cf535f27731c974343645a3985328",
                               .content_type = "image/jpeg"};
    int rc = objlog_producer_create_bucket_sync(p, "photos", NULL, OBJLOG_VERSIONING_ENABLED,
                                                NULL, &r, err, sizeof(err));
    print_outcome("create_bucket", rc, &r, err);
    rc = objlog_producer_put_object_sync(p, "photos", "cats/tom.jpg", 12, &meta, NULL, &r,
                                         err, sizeof(err));
    print_outcome("put_object", rc, &r, err);
    rc = objlog_producer_put_object_sync(p, "photos", "empty", 5, NULL, NULL, &r, err,
                                         sizeof(err));
    print_outcome("put_object NULL meta", rc, &r, err);
    objlog_producer_destroy(p);
    return 0;
}
