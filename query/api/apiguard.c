/* apiguard.c: the JSON API's door. Who a request is (an API token, a
 * peer node's signature, or nobody), and the few routes that need more
 * than a bucket's ownership (authz.c).
 *
 * Without --api-credentials the API is open: every request may do
 * anything (objlogd allows that only on a loopback address, or with
 * --insecure). With them, every request but the probes (/healthz,
 * /readyz) names its subject: "Authorization: Bearer TOKEN" from the
 * tokens file, or a peer's signed subject (apiauth.h) when this node is a
 * cluster node with the cluster's shared secret. A missing or unknown
 * token is 401 Unauthorized; a known one that may not act is 403.
 *
 * Invariant: a request reaches a route only with c->authz, c->tenant and
 * c->admin set from one of those, never from a header a client chose; a
 * signed subject is believed only when its signature over the request's
 * method, target, body and time checks out. */
#include "core.h"
#include "api.h"
#include "cluster.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>

#include "apiauth.h"
#include "secretfile.h"

struct api_conf {
    /* Swapped whole by api_conf_reload (SIGHUP) under the write lock; a
     * request holds the read lock only while it looks its token up. */
    secretfile_keys creds;       /* an apicreds; keys NULL: the API is open */
};

static void api_creds_warn(const struct api_conf *a) {
    char msg[600];
    if (secretfile_open_warning(a->creds.path, apicreds_open_mode(a->creds.keys), msg,
                                sizeof(msg)))
        objlog_logf(OBJLOG_LEVEL_WARNING, "http", "%s", msg);
}

int api_conf_new(objlog_query *q, const api_settings *conf, char *errstr,
                 size_t errstr_size) {
    struct api_conf *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(errstr, errstr_size, "http: out of memory");
        return -1;
    }
    q->api = a;
    pthread_rwlock_init(&a->creds.lock, NULL);
    a->creds.allow_open = conf->insecure;
    if (!conf->credentials)
        return 0;
    if (conf->cluster_unsigned) {
        snprintf(errstr, errstr_size,
                 "--api-credentials on a cluster node needs --token-secret-file: the nodes "
                 "sign their requests to each other with that shared secret");
        return -1;
    }
    if (!(a->creds.path = strdup(conf->credentials))) {
        snprintf(errstr, errstr_size, "http: out of memory");
        return -1;
    }
    if (!(a->creds.keys =
              apicreds_load(conf->credentials, conf->insecure, errstr, errstr_size)))
        return -1;
    api_creds_warn(a);
    return 0;
}

int api_conf_reload(objlog_query *q, char *errstr, size_t errstr_size) {
    struct api_conf *a = q->api;
    if (!a || !a->creds.path)
        return 0;
    apicreds *n = apicreds_load(a->creds.path, a->creds.allow_open, errstr, errstr_size);
    if (!n)
        return -1;
    apicreds_free(secretfile_keys_swap(&a->creds, n));
    api_creds_warn(a);
    snprintf(errstr, errstr_size, "%s: %zu tokens", a->creds.path, apicreds_count(n));
    return 0;
}

void api_conf_free(objlog_query *q) {
    struct api_conf *a = q->api;
    if (!a)
        return;
    apicreds_free(a->creds.keys);
    free(a->creds.path);
    pthread_rwlock_destroy(&a->creds.lock);
    free(a);
    q->api = NULL;
}

int api_open(const objlog_query *q) { return !q->api || !q->api->creds.keys; }

/* ------------------------------------------------------- authenticating */

static void api_unauthorized(http_ctx *c, const char *why) {
    http_add_header(c, "WWW-Authenticate", "Bearer realm=\"objlog\"");
    http_reply_error(c, 401, "Unauthorized", "%s", why);
}

/* A peer node's signed subject: 0 set, -1 after 401. */
static int api_node_subject(http_ctx *c) {
    struct api_conf *a = c->q->api;
    char why[200];
    apisubject s;
    int rc = nodesign_check(cluster_node_key(c->q->cluster), c, &s, why, sizeof(why));
    if (rc < 0) {
        api_unauthorized(c, why);
        return -1;
    }
    if (rc == 2 && a->creds.keys) {
        api_unauthorized(c, "a node that serves without --api-credentials forwarded this; "
                            "this node has them (configure every node alike)");
        return -1;
    }
    c->node_signed = 1;
    c->authz = rc == 0;
    c->admin = s.admin;
    c->anonymous = s.anonymous;
    snprintf(c->tenant, sizeof(c->tenant), "%s", s.tenant);
    return 0;
}

/* "Bearer TOKEN": 0 with the subject set, -1 after 401. */
static int api_bearer_subject(http_ctx *c, const char *authz) {
    struct api_conf *a = c->q->api;
    if (!authz || strncasecmp(authz, "Bearer ", 7) != 0) {
        api_unauthorized(c, authz ? "the Authorization header must be \"Bearer TOKEN\""
                                  : "this API needs a token: Authorization: Bearer TOKEN "
                                    "(objlog --token, OBJLOG_TOKEN)");
        return -1;
    }
    const char *tok = authz + 7;
    while (*tok == ' ')
        tok++;
    apisubject s;
    pthread_rwlock_rdlock(&a->creds.lock);
    int rc = apicreds_find(a->creds.keys, tok, &s);
    pthread_rwlock_unlock(&a->creds.lock);
    if (rc < 0) {
        api_unauthorized(c, "unknown token");
        return -1;
    }
    c->authz = 1;
    c->admin = s.admin;
    snprintf(c->tenant, sizeof(c->tenant), "%s", s.tenant);
    return 0;
}

/* Health probes answer whoever asks: a load balancer has no token. */
static int api_is_probe(const char *path) {
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0;
}

int api_authenticate(http_ctx *c, const char *path) {
    struct api_conf *a = c->q->api;
    struct evkeyvalq *ih = evhttp_request_get_input_headers(c->req);
    const char *node = evhttp_find_header(ih, NODEAUTH_HEADER);
    c->authz = 0;
    if (node && a)
        return api_node_subject(c);
    if (api_open(c->q) || api_is_probe(path))
        return 0;
    return api_bearer_subject(c, evhttp_find_header(ih, "Authorization"));
}

int api_need_admin(http_ctx *c) {
    if (!c->authz || c->admin)
        return 0;
    http_reply_error(c, 403, "AccessDenied", "this route needs the admin role");
    return -1;
}
