/* tlscerts.h: a throw-away CA and a server certificate it signed, for
 * 127.0.0.1 and localhost, made with the openssl command line in a test's
 * directory; and the same CA exported as OBJLOG_TEST_CA, which the tests'
 * HTTP client (httpc.h) checks https:// servers against. */
#ifndef OBJLOG_TEST_TLSCERTS_H
#define OBJLOG_TEST_TLSCERTS_H

#include <stddef.h>

typedef struct tlscerts {
    char ca[300];     /* the CA's certificate (PEM) */
    char cert[300];   /* the server's certificate (PEM) */
    char key[300];    /* the server's key (PEM) */
} tlscerts;

/* Makes them in dir and sets OBJLOG_TEST_CA. 0, or -1 with why on stderr. */
int tlscerts_make(tlscerts *t, const char *dir);

#endif
