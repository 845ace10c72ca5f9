/* tls.c: TLS of the listeners and of requests to peers (server.h). One
 * server context (the certificate and key) and one
 * client context (the CA), made at start and shared by every worker: an
 * SSL_CTX is safe to share once configured; each connection has its own
 * SSL. */
#include "core.h"
#include "server.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct tls_conf {
    SSL_CTX *server;             /* NULL: the listeners are plain HTTP */
    SSL_CTX *client;
    char *ca;
};

/* errstr = "what: OpenSSL's reason". */
static void tls_error(const char *what, char *errstr, size_t errstr_size) {
    char reason[256] = "unknown error";
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    snprintf(errstr, errstr_size, "%s: %s", what, reason);
}

static SSL_CTX *tls_server_ctx(const char *cert, const char *key, char *errstr,
                               size_t errstr_size) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    char what[600];
    if (!ctx) {
        tls_error("TLS", errstr, errstr_size);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(what, sizeof(what), "--tls-cert %s", cert);
        tls_error(what, errstr, errstr_size);
    } else if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
               SSL_CTX_check_private_key(ctx) != 1) {
        /* OpenSSL's reason says which: unreadable, or "key values mismatch" */
        snprintf(what, sizeof(what), "--tls-key %s (the key of --tls-cert %s)", key, cert);
        tls_error(what, errstr, errstr_size);
    } else {
        return ctx;
    }
    SSL_CTX_free(ctx);
    return NULL;
}

static SSL_CTX *tls_client_ctx(const char *ca, char *errstr, size_t errstr_size) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        tls_error("TLS", errstr, errstr_size);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL)
                : SSL_CTX_set_default_verify_paths(ctx);
    if (ok == 1)
        return ctx;
    char what[600];
    snprintf(what, sizeof(what), "--tls-ca %s", ca ? ca : "(the system's)");
    tls_error(what, errstr, errstr_size);
    SSL_CTX_free(ctx);
    return NULL;
}

tls_conf *tls_conf_new(const char *cert, const char *key, const char *ca, char *errstr,
                       size_t errstr_size) {
    if (!cert != !key) {
        snprintf(errstr, errstr_size, "--tls-cert and --tls-key go together");
        return NULL;
    }
    tls_conf *t = calloc(1, sizeof(*t));
    if (!t || (ca && !(t->ca = strdup(ca)))) {
        free(t);
        snprintf(errstr, errstr_size, "tls: out of memory");
        return NULL;
    }
    if ((cert && !(t->server = tls_server_ctx(cert, key, errstr, errstr_size))) ||
        !(t->client = tls_client_ctx(ca, errstr, errstr_size))) {
        tls_conf_free(t);
        return NULL;
    }
    return t;
}

void tls_conf_free(tls_conf *t) {
    if (!t)
        return;
    SSL_CTX_free(t->server);
    SSL_CTX_free(t->client);
    free(t->ca);
    free(t);
}

int tls_serves(const tls_conf *t) { return t && t->server; }

const char *tls_ca_file(const tls_conf *t) { return t ? t->ca : NULL; }

struct bufferevent *tls_server_bev(tls_conf *t, struct event_base *base) {
    SSL *ssl = SSL_new(t->server);
    if (!ssl)
        return NULL;
    /* the bufferevent frees ssl with itself (BEV_OPT_CLOSE_ON_FREE) */
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (!bev)
        SSL_free(ssl);
    return bev;
}

struct bufferevent *tls_client_bev(tls_conf *t, struct event_base *base, const char *host) {
    SSL *ssl = SSL_new(t->client);
    if (!ssl)
        return NULL;
    unsigned char addr[16];
    int is_ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    /* the peer's name (or IP address) must be in its certificate */
    int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
                   : SSL_set1_host(ssl, host) == 1 && SSL_set_tlsext_host_name(ssl, host) == 1;
    struct bufferevent *bev =
        ok ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                            BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS)
           : NULL;
    if (!bev)
        SSL_free(ssl);
    return bev;
}
