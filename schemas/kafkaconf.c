/* kafkaconf.c: see kafkaconf.h. The loaded properties live in one
 * process-wide list: they are configuration, like the command line they
 * came from, and every client constructor reads them. */
#include "kafkaconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "secretfile.h"

typedef struct kprop {
    char *key, *value;
} kprop;

static kprop *kprops;
static size_t nkprops;

/* Properties objlog sets itself: the file may not change them. */
static const char *const kafkaconf_reserved[] = {
    "bootstrap.servers", "metadata.broker.list", "group.id", "group.instance.id",
    "enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset",
    "isolation.level", "enable.idempotence", "acks", "request.required.acks",
    "transactional.id", "partition.assignment.strategy", "enable.partition.eof", NULL};

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

static void props_free(kprop *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        for (volatile char *p = v[i].value; p && *p; p++)
            *p = 0; /* passwords */
        free(v[i].key);
        free(v[i].value);
    }
    free(v);
}

/* One line: 0 added (or nothing to add), -1 with why. */
static int kafkaconf_line(char *line, rd_kafka_conf_t *check, kprop **v, size_t *n, char *why,
                          size_t wn) {
    char *s = trim(line);
    if (!*s || *s == '#')
        return 0;
    char *eq = strchr(s, '=');
    if (!eq) {
        snprintf(why, wn, "expected key=value");
        return -1;
    }
    *eq = '\0';
    char *key = trim(s), *value = trim(eq + 1);
    for (int i = 0; kafkaconf_reserved[i]; i++)
        if (strcmp(key, kafkaconf_reserved[i]) == 0) {
            snprintf(why, wn, "%s is objlog's to set (--brokers for the brokers)", key);
            return -1;
        }
    char tmp[256];
    if (!*key || rd_kafka_conf_set(check, key, value, tmp, sizeof(tmp)) != RD_KAFKA_CONF_OK) {
        snprintf(why, wn, "%s: %s", *key ? key : "(no key)", *key ? tmp : "empty key");
        return -1;
    }
    kprop *nv = realloc(*v, (*n + 1) * sizeof(**v));
    if (!nv) {
        snprintf(why, wn, "out of memory");
        return -1;
    }
    *v = nv;
    nv[*n].key = strdup(key);
    nv[*n].value = strdup(value);
    (*n)++;
    if (!nv[*n - 1].key || !nv[*n - 1].value) {
        snprintf(why, wn, "out of memory");
        return -1;
    }
    return 0;
}

int objlog_kafka_config_load(const char *path, int allow_open, unsigned *open_mode,
                             char *errstr, size_t errstr_size) {
    FILE *f = secretfile_open(path, allow_open, open_mode, errstr, errstr_size);
    if (!f)
        return -1;
    rd_kafka_conf_t *check = rd_kafka_conf_new();
    kprop *v = NULL;
    size_t n = 0;
    char line[4096], why[400];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        rc = kafkaconf_line(line, check, &v, &n, why, sizeof(why));
        if (rc < 0)
            snprintf(errstr, errstr_size, "%s:%d: %s", path, lineno, why);
    }
    fclose(f);
    rd_kafka_conf_destroy(check);
    if (rc < 0) {
        props_free(v, n);
        return -1;
    }
    objlog_kafka_config_free();
    kprops = v;
    nkprops = n;
    return 0;
}

size_t objlog_kafka_config_count(void) { return nkprops; }

rd_kafka_conf_t *objlog_kafka_conf_new(const char *brokers, char *errstr,
                                       size_t errstr_size) {
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char tmp[256];
    for (size_t i = 0; i < nkprops; i++)
        if (rd_kafka_conf_set(c, kprops[i].key, kprops[i].value, tmp, sizeof(tmp)) !=
            RD_KAFKA_CONF_OK) {
            snprintf(errstr, errstr_size, "%s: %s", kprops[i].key, tmp);
            rd_kafka_conf_destroy(c);
            return NULL;
        }
    if (brokers && rd_kafka_conf_set(c, "bootstrap.servers", brokers, tmp, sizeof(tmp)) !=
                       RD_KAFKA_CONF_OK) {
        snprintf(errstr, errstr_size, "bootstrap.servers: %s", tmp);
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    return c;
}

void objlog_kafka_config_each(void (*fn)(const char *key, const char *value, void *arg),
                              void *arg) {
    for (size_t i = 0; i < nkprops; i++)
        fn(kprops[i].key, kprops[i].value, arg);
}

void objlog_kafka_config_free(void) {
    props_free(kprops, nkprops);
    kprops = NULL;
    nkprops = 0;
}

int objlog_kafka_log_level(int level, const char *line) {
    static const char *const transient[] = {
        "Coordinator load in progress",
        "COORDINATOR_LOAD_IN_PROGRESS",
    };
    if (level > 4 || !line) /* LOG_WARNING: only warnings and worse are demoted */
        return level;
    for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
        if (strstr(line, transient[i]))
            return level < 4 ? level : 6; /* LOG_INFO */
    return level;
}
