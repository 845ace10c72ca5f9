/* tlscerts.c: see tlscerts.h. EC P-256 keys, one day of validity. */
#include "tlscerts.h"

#include <stdio.h>
#include <stdlib.h>

#include "proc.h"

static int openssl(char *const argv[]) {
    char out[4096], err[4096];
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 60000);
    if (rc != 0)
        fprintf(stderr, "tlscerts: openssl %s exited %d: %s\n", argv[1], rc, err);
    return rc == 0 ? 0 : -1;
}

int tlscerts_make(tlscerts *t, const char *dir) {
    char ca_key[300], csr[300], ext[300];
    snprintf(t->ca, sizeof(t->ca), "%s/ca.pem", dir);
    snprintf(ca_key, sizeof(ca_key), "%s/ca-key.pem", dir);
    snprintf(t->cert, sizeof(t->cert), "%s/server.pem", dir);
    snprintf(t->key, sizeof(t->key), "%s/server-key.pem", dir);
    snprintf(csr, sizeof(csr), "%s/server.csr", dir);
    snprintf(ext, sizeof(ext), "%s/server.ext", dir);
    FILE *f = fopen(ext, "w");
    if (!f || fputs("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                    "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n", f) < 0 ||
        fclose(f) != 0)
        return -1;
    char *mkca[] = {"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca_key, "-out", t->ca,
                    "-days", "1", "-subj", "/CN=objlog test CA", NULL};
    char *mkreq[] = {"/usr/bin/openssl", "req", "-newkey", "ec", "-pkeyopt",
                     "ec_paramgen_curve:P-256", "-nodes", "-keyout", t->key, "-out", csr,
                     "-subj", "/CN=127.0.0.1", NULL};
    char *sign[] = {"/usr/bin/openssl", "x509", "-req", "-in", csr, "-CA", t->ca, "-CAkey",
                    ca_key, "-CAcreateserial", "-out", t->cert, "-days", "1", "-extfile", ext,
                    NULL};
    if (openssl(mkca) < 0 || openssl(mkreq) < 0 || openssl(sign) < 0)
        return -1;
    return setenv("OBJLOG_TEST_CA", t->ca, 1);
}
