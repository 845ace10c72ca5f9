/* tls.h: TLS for objlogd's two listeners and for its requests to peer
 * nodes (objlogd --tls-cert, --tls-key, --tls-ca). OpenSSL through
 * libevent's bufferevent_openssl for the listeners and the evhttp client
 * that forwards requests; libcurl's own TLS (with the same CA file) for
 * the requests made with curl (lag polls, outcomes, checkpoints). Internal
 * to the query service (prefix tls_).
 *
 * Invariant: with a certificate, every connection accepted on either
 * listener is TLS (1.2 or newer), never plain; a request to an https://
 * peer verifies the peer's certificate against --tls-ca (else the
 * system's CAs) and its name or IP address against the URL's host. */
#ifndef OBJLOG_QUERY_TLS_H
#define OBJLOG_QUERY_TLS_H

#include <stddef.h>

struct bufferevent;
struct event_base;

typedef struct tls_conf tls_conf;

/* cert and key (PEM; both or neither) make the listeners serve TLS; ca
 * (PEM, may be NULL) is what peers' certificates are checked against. NULL
 * with errstr naming the file and OpenSSL's reason. */
tls_conf *tls_conf_new(const char *cert, const char *key, const char *ca, char *errstr,
                       size_t errstr_size);
void tls_conf_free(tls_conf *t);
/* 1 when the listeners serve TLS. */
int tls_serves(const tls_conf *t);
/* A bufferevent for one accepted connection (evhttp sets its socket);
 * NULL out of memory. */
struct bufferevent *tls_server_bev(tls_conf *t, struct event_base *base);
/* A bufferevent that connects to host over TLS, checking its certificate
 * (evhttp_connection_base_bufferevent_new sets its socket); NULL error. */
struct bufferevent *tls_client_bev(tls_conf *t, struct event_base *base, const char *host);
/* The CA file for curl's CURLOPT_CAINFO, NULL: the system's. */
const char *tls_ca_file(const tls_conf *t);

#endif
