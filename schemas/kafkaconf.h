/* kafkaconf.h: the librdkafka properties every Kafka client of an objlog
 * process takes besides its own: what a secured cluster needs
 * (security.protocol, sasl.*, ssl.*, ...), from objlogd --kafka-config
 * FILE. Process configuration: loaded once, before any client exists,
 * read-only after, freed at exit.
 *
 * FILE holds "key=value" lines ('#' comments, blank lines skipped, spaces
 * around key and value trimmed) and, as it may hold a SASL password, must
 * be readable by its owner only (secretfile.h). Each property is checked
 * by librdkafka when loaded; the ones objlog sets itself for correctness
 * (bootstrap.servers, group.id, offsets, idempotence, acks, transactions)
 * are refused.
 *
 * Invariant: a client's own properties are set after these, so nothing in
 * FILE can change how objlog reads or writes the log; only how it reaches
 * and authenticates to it. */
#ifndef OBJLOG_SCHEMAS_KAFKACONF_H
#define OBJLOG_SCHEMAS_KAFKACONF_H

#include <stddef.h>

#include <librdkafka/rdkafka.h>

/* 0, or -1 with "FILE:LINE: problem" (or "FILE: problem") in errstr; on
 * -1 nothing is loaded. allow_open and *open_mode: as secretfile_open. */
int objlog_kafka_config_load(const char *path, int allow_open, unsigned *open_mode,
                             char *errstr, size_t errstr_size);
/* How many properties are loaded. */
size_t objlog_kafka_config_count(void);
/* A new client configuration with the loaded properties and, when brokers
 * is not NULL, bootstrap.servers; NULL with errstr. */
rd_kafka_conf_t *objlog_kafka_conf_new(const char *brokers, char *errstr,
                                       size_t errstr_size);
/* fn for each loaded property, in file order (for a library that takes
 * them as its own settings, such as the producer's kafka.*). */
void objlog_kafka_config_each(void (*fn)(const char *key, const char *value, void *arg),
                              void *arg);
void objlog_kafka_config_free(void);

/* The syslog level objlog logs a librdkafka line at: librdkafka's own,
 * but INFO for what a broker says while it starts and librdkafka retries
 * by itself (the group coordinator still loading its offsets: every start
 * of a fresh Kafka has it), which is no problem of the operator's. */
int objlog_kafka_log_level(int level, const char *line);

#endif
