/* conf.c: objlog_producer_conf, string key/value configuration checked at
 * set time (the librdkafka way): an unknown key or a bad value is refused
 * with an errstr naming it, so a typo never turns into a silent default.
 * Invariant: every value stored in the conf has already been validated;
 * kafka.<prop> values live only in the wrapped rd_kafka_conf_t. */
#include "producer_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

objlog_producer_conf *objlog_producer_conf_new(void) {
    objlog_producer_conf *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->topic = strdup(PRODUCER_DEFAULT_TOPIC);
    c->control_topic = strdup(PRODUCER_DEFAULT_CONTROL_TOPIC);
    c->ack_applied = 1;
    c->outcome_timeout_ms = PRODUCER_DEFAULT_OUTCOME_TIMEOUT_MS;
    c->quota_refresh_ms = PRODUCER_DEFAULT_QUOTA_REFRESH_MS;
    c->admission_refresh_ms = PRODUCER_DEFAULT_QUOTA_REFRESH_MS;
    c->kconf = rd_kafka_conf_new();
    char tmp[256];
    /* A small linger batches concurrent writers without adding visible
     * latency; callers may still override it with kafka.linger.ms. The
     * linger is the only wait we want: Nagle's algorithm must not hold a
     * produce request back for the broker's ACK of the previous one
     * (kafka.socket.nagle.disable overrides). */
    if (!c->topic || !c->control_topic || !c->kconf ||
        rd_kafka_conf_set(c->kconf, "linger.ms", "5", tmp, sizeof(tmp)) !=
            RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(c->kconf, "socket.nagle.disable", "true", tmp,
                          sizeof(tmp)) != RD_KAFKA_CONF_OK) {
        objlog_producer_conf_destroy(c);
        return NULL;
    }
    return c;
}

void objlog_producer_conf_set_log_cb(objlog_producer_conf *c, objlog_log_cb *cb,
                                     void *opaque) {
    c->log_cb = cb;
    c->log_opaque = opaque;
}

/* A secret's bytes zeroed before its memory goes back (volatile: the
 * stores are not optimized away as dead). */
static void conf_wipe(char *s) {
    for (volatile char *p = s; p && *p; p++)
        *p = 0;
}

void objlog_producer_conf_destroy(objlog_producer_conf *c) {
    if (!c)
        return;
    free(c->bootstrap);
    free(c->topic);
    free(c->control_topic);
    free(c->query_url);
    conf_wipe(c->query_token);
    free(c->query_token);
    free(c->quota_tenant);
    if (c->kconf)
        rd_kafka_conf_destroy(c->kconf);
    free(c);
}

static objlog_conf_res conf_invalid(const char *name, const char *value,
                                    const char *why, char *errstr,
                                    size_t errstr_size) {
    snprintf(errstr, errstr_size, "invalid value \"%s\" for %s: %s", value,
             name, why);
    return OBJLOG_CONF_INVALID;
}

static objlog_conf_res conf_set_str(char **slot, const char *name,
                                    const char *value, char *errstr,
                                    size_t errstr_size) {
    if (!*value)
        return conf_invalid(name, value, "must not be empty", errstr,
                            errstr_size);
    char *s = strdup(value);
    if (!s)
        return conf_invalid(name, value, "out of memory", errstr, errstr_size);
    free(*slot);
    *slot = s;
    return OBJLOG_CONF_OK;
}

/* A Bearer token (RFC 6750's token68): what an HTTP header can carry. */
static objlog_conf_res conf_set_token(objlog_producer_conf *c, const char *name,
                                      const char *value, char *errstr, size_t errstr_size) {
    size_t n = strlen(value);
    for (size_t i = 0; i < n; i++) {
        char ch = value[i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              strchr("-._~+/=", ch)))
            return conf_invalid(name, "(hidden)",
                                "a token is A-Z a-z 0-9 - . _ ~ + / = characters", errstr,
                                errstr_size);
    }
    if (n == 0 || n > 256)
        return conf_invalid(name, "(hidden)", "a token is 1..256 characters", errstr,
                            errstr_size);
    return conf_set_str(&c->query_token, name, value, errstr, errstr_size);
}

static objlog_conf_res conf_set_url(objlog_producer_conf *c, const char *name,
                                    const char *value, char *errstr,
                                    size_t errstr_size) {
    if (strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0)
        return conf_invalid(name, value, "expected http://host:port", errstr,
                            errstr_size);
    objlog_conf_res r = conf_set_str(&c->query_url, name, value, errstr,
                                     errstr_size);
    /* Paths are appended as "/v1/...": drop trailing slashes once here. */
    size_t n = c->query_url ? strlen(c->query_url) : 0;
    while (r == OBJLOG_CONF_OK && n > 8 && c->query_url[n - 1] == '/')
        c->query_url[--n] = '\0';
    return r;
}

static objlog_conf_res conf_set_timeout(objlog_producer_conf *c,
                                        const char *name, const char *value,
                                        char *errstr, size_t errstr_size) {
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < 0 || v > 3600 * 1000)
        return conf_invalid(name, value, "expected milliseconds 0..3600000",
                            errstr, errstr_size);
    c->outcome_timeout_ms = (int)v;
    return OBJLOG_CONF_OK;
}

static objlog_conf_res conf_set_retries(objlog_producer_conf *c,
                                        const char *name, const char *value,
                                        char *errstr, size_t errstr_size) {
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < 0 || v > 100)
        return conf_invalid(name, value, "expected an integer 0..100", errstr,
                            errstr_size);
    c->unknown_retries = (int)v;
    return OBJLOG_CONF_OK;
}

static objlog_conf_res conf_set_u64(uint64_t *slot, const char *name,
                                    const char *value, char *errstr,
                                    size_t errstr_size) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno || end == value || *end || value[0] == '-')
        return conf_invalid(name, value, "expected an integer (0 = no limit)",
                            errstr, errstr_size);
    *slot = v;
    return OBJLOG_CONF_OK;
}

static objlog_conf_res conf_set_refresh(int *slot, const char *name, const char *value,
                                        char *errstr, size_t errstr_size) {
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < 10 || v > 3600 * 1000)
        return conf_invalid(name, value, "expected milliseconds 10..3600000",
                            errstr, errstr_size);
    *slot = (int)v;
    return OBJLOG_CONF_OK;
}

/* librdkafka settings the library fixes (every write is
 * idempotent and acknowledged by all in-sync replicas, or the log could
 * reorder or lose a write the caller saw acknowledged). Refused at set
 * time rather than silently overridden at producer_new. */
static const char *const conf_forced_kafka[] = {"acks", "request.required.acks",
                                                "enable.idempotence", NULL};

static objlog_conf_res conf_set_kafka(objlog_producer_conf *c,
                                      const char *name, const char *prop,
                                      const char *value, char *errstr,
                                      size_t errstr_size) {
    for (int i = 0; conf_forced_kafka[i]; i++) {
        if (strcmp(prop, conf_forced_kafka[i]) == 0) {
            snprintf(errstr, errstr_size,
                     "%s cannot be set: the producer always writes with acks=all and "
                     "enable.idempotence=true", name);
            return OBJLOG_CONF_INVALID;
        }
    }
    if (strcmp(prop, "bootstrap.servers") == 0 || strcmp(prop, "metadata.broker.list") == 0) {
        snprintf(errstr, errstr_size, "%s: set bootstrap.servers instead", name);
        return OBJLOG_CONF_INVALID;
    }
    char kerr[256];
    rd_kafka_conf_res_t r =
        rd_kafka_conf_set(c->kconf, prop, value, kerr, sizeof(kerr));
    if (r == RD_KAFKA_CONF_OK)
        return OBJLOG_CONF_OK;
    snprintf(errstr, errstr_size, "%s: %s", name, kerr);
    return r == RD_KAFKA_CONF_UNKNOWN ? OBJLOG_CONF_UNKNOWN
                                      : OBJLOG_CONF_INVALID;
}

objlog_conf_res objlog_producer_conf_set(objlog_producer_conf *c,
                                         const char *name, const char *value,
                                         char *errstr, size_t errstr_size) {
    if (!c || !name || !value) {
        snprintf(errstr, errstr_size, "conf, name and value are required");
        return OBJLOG_CONF_INVALID;
    }
    if (!strcmp(name, "bootstrap.servers"))
        return conf_set_str(&c->bootstrap, name, value, errstr, errstr_size);
    if (!strcmp(name, "topic"))
        return conf_set_str(&c->topic, name, value, errstr, errstr_size);
    if (!strcmp(name, "control.topic"))
        return conf_set_str(&c->control_topic, name, value, errstr,
                            errstr_size);
    if (!strcmp(name, "query.url"))
        return conf_set_url(c, name, value, errstr, errstr_size);
    if (!strcmp(name, "query.token"))
        return conf_set_token(c, name, value, errstr, errstr_size);
    if (!strcmp(name, "outcome.timeout.ms"))
        return conf_set_timeout(c, name, value, errstr, errstr_size);
    if (!strcmp(name, "unknown.retries"))
        return conf_set_retries(c, name, value, errstr, errstr_size);
    if (!strcmp(name, "ack")) {
        if (strcmp(value, "applied") != 0 && strcmp(value, "logged") != 0)
            return conf_invalid(name, value, "expected applied or logged",
                                errstr, errstr_size);
        c->ack_applied = !strcmp(value, "applied");
        return OBJLOG_CONF_OK;
    }
    if (!strcmp(name, "tenant.quota.tenant"))
        return conf_set_str(&c->quota_tenant, name, value, errstr, errstr_size);
    if (!strcmp(name, "tenant.quota.max_bytes"))
        return conf_set_u64(&c->quota_max_bytes, name, value, errstr,
                            errstr_size);
    if (!strcmp(name, "tenant.quota.max_objects"))
        return conf_set_u64(&c->quota_max_objects, name, value, errstr,
                            errstr_size);
    if (!strcmp(name, "tenant.quota.refresh.ms"))
        return conf_set_refresh(&c->quota_refresh_ms, name, value, errstr, errstr_size);
    if (!strcmp(name, "admission.refresh.ms"))
        return conf_set_refresh(&c->admission_refresh_ms, name, value, errstr,
                                errstr_size);
    if (!strcmp(name, "admission")) {
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
            return conf_invalid(name, value, "expected on or off", errstr, errstr_size);
        c->admission = !strcmp(value, "on");
        return OBJLOG_CONF_OK;
    }
    if (!strncmp(name, "kafka.", 6) && name[6])
        return conf_set_kafka(c, name, name + 6, value, errstr, errstr_size);
    snprintf(errstr, errstr_size, "unknown configuration key \"%s\"", name);
    return OBJLOG_CONF_UNKNOWN;
}
