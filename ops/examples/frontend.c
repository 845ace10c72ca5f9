/* frontend.c: the smallest upload frontend that embeds libobjlog_producer,
 * built against an installed objlog (README, "Embedding the library"):
 *
 *   cc frontend.c -o frontend $(pkg-config --cflags --libs objlog-producer)
 *
 * It writes one bucket and one object to the log at BOOTSTRAP (ack=logged:
 * no objlogd needed) and prints what each call returned. tests/install.sh
 * builds it against a fresh install prefix, shared and static, and checks
 * its output. */
#include <objlog_producer.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: frontend BOOTSTRAP\n");
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
        objlog_producer_conf_set(conf, "ack", "logged", err, sizeof(err))) {
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
    printf("create_bucket: rc %d status %s\n", rc, objlog_status_name(r.status));
    rc = objlog_producer_put_object_sync(p, "photos", "cats/tom.jpg", 12, &meta, NULL, &r,
                                         err, sizeof(err));
    printf("put_object: rc %d status %s token %s\n", rc, objlog_status_name(r.status),
           strchr(r.token, '.') ? "P.O" : r.token);
    rc = objlog_producer_put_object_sync(p, "photos", "empty", 5, NULL, NULL, &r, err,
                                         sizeof(err));
    printf("put_object NULL meta: rc %d status %s\n", rc, objlog_status_name(r.status));
    objlog_producer_destroy(p);
    return 0;
}
