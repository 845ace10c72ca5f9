/* nodesign.c: the signature this node puts on its requests to a peer (a
 * forwarded read, a gather, a checkpoint fetch, a lag or outcome poll),
 * with the cluster's node key (nodeauth.h), and the check of a peer's
 * (nodesign_check), which the JSON API and the S3 endpoint both make.
 *
 * Invariant: the subject signed is the client's as this node
 * authenticated it (or "node" for the node's own requests, "open" where
 * the API takes requests without a token), never one a client named. */
#include "core.h"
#include "cluster.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include "nodeauth.h"

const char *nodesign_method_name(enum evhttp_cmd_type cmd) {
    switch (cmd) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_HEAD: return "HEAD";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_DELETE: return "DELETE";
    default: return "OTHER";
    }
}

int nodesign_headers(const uint8_t *key, const char *method, const char *target,
                     const void *body, size_t n, const http_ctx *c, char *subject,
                     size_t subject_size, char *auth, size_t auth_size) {
    if (!key)
        return 1;
    /* c NULL: the node's own request; an open API forwards "open" */
    int w = 0;
    if (!c)
        w = snprintf(subject, subject_size, "node");
    else if (!c->authz)
        w = snprintf(subject, subject_size, "open");
    else {
        apisubject s = {.admin = c->admin, .anonymous = c->anonymous};
        snprintf(s.tenant, sizeof(s.tenant), "%s", c->admin ? "" : c->tenant);
        if (nodeauth_subject_format(&s, subject, subject_size) < 0)
            return -1;
    }
    if (w < 0 || (size_t)w >= subject_size)
        return -1;
    return nodeauth_sign(key, method, target, body, n, subject, (int64_t)time(NULL),
                         auth, auth_size);
}

int nodesign_request(const uint8_t *key, struct evhttp_request *out, enum evhttp_cmd_type cmd,
                     const char *target, const http_ctx *c) {
    char subject[3 * NODEAUTH_MAX_TENANT_LEN + 8], auth[NODEAUTH_VALUE_MAX];
    struct evbuffer *b = evhttp_request_get_output_buffer(out);
    size_t n = evbuffer_get_length(b);
    const void *body = n ? (const void *)evbuffer_pullup(b, -1) : (const void *)"";
    int rc = nodesign_headers(key, nodesign_method_name(cmd), target, body, n, c, subject,
                              sizeof(subject), auth, sizeof(auth));
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    struct evkeyvalq *oh = evhttp_request_get_output_headers(out);
    evhttp_remove_header(oh, NODEAUTH_SUBJECT_HEADER);
    evhttp_remove_header(oh, NODEAUTH_HEADER);
    evhttp_add_header(oh, NODEAUTH_SUBJECT_HEADER, subject);
    evhttp_add_header(oh, NODEAUTH_HEADER, auth);
    return 0;
}

struct curl_slist *nodesign_curl(const uint8_t *key, const char *method, const char *url,
                                 struct curl_slist *hl) {
    const char *scheme = strstr(url, "://");
    const char *target = scheme ? strchr(scheme + 3, '/') : NULL;
    char subject[16], auth[NODEAUTH_VALUE_MAX], line[NODEAUTH_VALUE_MAX + 64];
    if (nodesign_headers(key, method, target ? target : "/", "", 0, NULL, subject,
                         sizeof(subject), auth, sizeof(auth)) != 0)
        return hl;
    snprintf(line, sizeof(line), "%s: %s", NODEAUTH_SUBJECT_HEADER, subject);
    hl = curl_slist_append(hl, line);
    snprintf(line, sizeof(line), "%s: %s", NODEAUTH_HEADER, auth);
    return hl ? curl_slist_append(hl, line) : NULL;
}

int nodesign_check(const uint8_t *key, const http_ctx *c, apisubject *s, char *why,
                   size_t wn) {
    struct evkeyvalq *ih = evhttp_request_get_input_headers(c->req);
    const char *value = evhttp_find_header(ih, NODEAUTH_HEADER);
    const char *subject = evhttp_find_header(ih, NODEAUTH_SUBJECT_HEADER);
    if (!value)
        return 1;
    if (!key) {
        snprintf(why, wn, "this node has no cluster secret to check a node signature with");
        return -1;
    }
    if (!subject) {
        snprintf(why, wn, "a node signature without " NODEAUTH_SUBJECT_HEADER);
        return -1;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(c->req);
    size_t n = evbuffer_get_length(in);
    const void *body = n ? (const void *)evbuffer_pullup(in, -1) : (const void *)"";
    if (nodeauth_verify(key, nodesign_method_name(evhttp_request_get_command(c->req)),
                        evhttp_request_get_uri(c->req), body, n, subject, value,
                        (int64_t)time(NULL), why, wn) < 0)
        return -1;
    int rc = nodeauth_subject_parse(subject, s);
    if (rc < 0) {
        snprintf(why, wn, "malformed " NODEAUTH_SUBJECT_HEADER);
        return -1;
    }
    return rc == 1 ? 2 : 0;
}
