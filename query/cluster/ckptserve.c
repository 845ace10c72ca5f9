/* ckptserve.c: GET /v1/partitions/{p}/checkpoint, this node's copy of one
 * partition for a node that is given it, and GET
 * /v1/partitions/{p}/handoffs/{X}/checkpoint, the range p gave away at
 * its RangeOut at offset X, for a node whose RangeIn waits for it
 * (materializer/checkpoint.h has the stream format; checkpoint_fetch.c is
 * the client).
 *
 * An export reads a whole partition, seconds for a big one: it never runs
 * on a worker's event loop. The handler starts a thread that exports into
 * an unlinked temp file in the store's directory (O_TMPFILE), then wakes
 * the worker (an event of the request's own), which answers 200 with the
 * file as the body (evbuffer_add_file: sendfile, no copy in memory) and a
 * Content-Length; the stream carries its own SHA-256 in its trailer. At
 * most CKPT_SERVE_MAX exports run at once; past that 503 SlowDown.
 *
 * Invariant: a job belongs to the worker that took its request; only that
 * worker's thread touches the request, joins the export thread and frees
 * the job. The export thread only reads the store, writes its file and
 * activates the job's event as its last act. A stopping worker cancels its
 * jobs (the export's writer fails at its next chunk), so shutdown waits
 * for them no longer than one chunk. */
#define _GNU_SOURCE
#include "core.h"
#include "cluster.h"
#include "server.h"

#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#define CKPT_SERVE_MAX 2

typedef struct ckpt_job ckpt_job;
struct ckpt_job {
    http_worker *w;
    struct evhttp_request *req;
    char request_id[33];
    struct timespec start;
    int32_t p;
    int64_t off;                 /* a range's RangeOut offset, -1 the partition */
    int fd;                      /* the unlinked temp file, until sent */
    pthread_t thread;
    struct event *done_ev;
    atomic_int cancel;
    /* Set by the export thread before done_ev; read after the join. */
    int rc;
    int write_errno;
    objlog_ckpt_info info;
    char err[512];
    struct ckpt_job *next;       /* on its worker's ckpt_worker.jobs */
};

/* A worker's exports (its server slot). */
typedef struct ckpt_worker {
    ckpt_job *jobs;
} ckpt_worker;

static ckpt_worker *ckpt_of(const http_worker *w) { return server_slot(w, w->q->ckpt->slot); }

static int ckpt_write_fd(void *opaque, const void *data, size_t n) {
    ckpt_job *j = opaque;
    const char *p = data;
    if (atomic_load(&j->cancel))
        return -1;
    while (n > 0) {
        ssize_t k = write(j->fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            j->write_errno = k < 0 ? errno : EIO;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void *ckpt_export_main(void *arg) {
    ckpt_job *j = arg;
    objlog_query *q = j->w->q;
    if (j->off >= 0)
        j->rc = objlog_ckpt_export_handoff(q->store, j->p, j->off, ckpt_write_fd, j, &j->info,
                                           j->err, sizeof(j->err));
    else
        j->rc = objlog_ckpt_export(q->store, objlog_materializer_rangemap(q->m), j->p,
                                   ckpt_write_fd, j, &j->info, j->err, sizeof(j->err));
    event_active(j->done_ev, 0, 0);
    return NULL;
}

static void ckpt_job_free(ckpt_job *j) {
    if (j->fd >= 0)
        close(j->fd);
    if (j->done_ev)
        event_free(j->done_ev);
    free(j);
}

static void ckpt_unlink_job(ckpt_job *j) {
    for (ckpt_job **pp = &ckpt_of(j->w)->jobs; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            return;
        }
}

/* The worker's side: the export ended; answer with its file or its error. */
static void ckpt_done_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    ckpt_job *j = arg;
    http_worker *w = j->w;
    pthread_join(j->thread, NULL);
    ckpt_unlink_job(j);
    atomic_fetch_sub(&w->q->ckpt->running, 1);
    http_ctx c = {.req = j->req, .w = w, .q = w->q, .endpoint = HTTP_EP_CHECKPOINT,
                  .start = j->start};
    memcpy(c.request_id, j->request_id, sizeof(c.request_id));
    if (j->rc == OBJLOG_CKPT_NEVER_APPLIED) {
        http_reply_error(&c, 404, "NoSuchCheckpoint", "%s", j->err);
    } else if (j->rc == OBJLOG_CKPT_IMPORTING) {
        http_reply_error(&c, 409, "PartitionImporting", "%s", j->err);
    } else if (j->rc == OBJLOG_CKPT_NOT_YET) {
        http_reply_error(&c, 503, "SlowDown", "%s; retry", j->err);
    } else if (j->rc == OBJLOG_CKPT_NO_HANDOFF) {
        http_reply_error(&c, 404, "NoSuchHandoff", "%s", j->err);
    } else if (j->rc == OBJLOG_CKPT_MOVED_ON) {
        http_reply_error(&c, 409, "HandoffMovedOn", "%s", j->err);
    } else if (j->rc != 0 && atomic_load(&j->cancel)) {
        http_reply_error(&c, 503, "SlowDown", "the server is stopping");
    } else if (j->rc != 0) {
        objlog_logf(3, "checkpoint", "partition %d: export failed: %s%s%s", j->p, j->err,
                    j->write_errno ? ": " : "", j->write_errno ? strerror(j->write_errno) : "");
        http_reply_error(&c, 500, "InternalError", "checkpoint of partition %d: %s%s%s",
                         j->p, j->err, j->write_errno ? ": " : "",
                         j->write_errno ? strerror(j->write_errno) : "");
    } else {
        struct evbuffer *body = evbuffer_new();
        /* The buffer owns the fd from here and closes it once sent. */
        if (!body || evbuffer_add_file(body, j->fd, 0, (ev_off_t)j->info.bytes) < 0) {
            if (body)
                evbuffer_free(body);
            http_reply_error(&c, 500, "InternalError", "out of memory");
        } else {
            char v[64];
            j->fd = -1;
            snprintf(v, sizeof(v), "%d.%lld", j->p, (long long)j->info.applied);
            http_add_header(&c, "X-Objlog-Applied", v);
            snprintf(v, sizeof(v), "%llu", (unsigned long long)j->info.rows);
            http_add_header(&c, "X-Objlog-Checkpoint-Rows", v);
            atomic_fetch_add(&w->q->ckpt->served, 1);
            atomic_fetch_add(&w->q->ckpt->bytes, j->info.bytes);
            http_reply_buffer(&c, 200, "application/x-objlog-checkpoint", body);
        }
    }
    ckpt_job_free(j);
}

/* An unlinked file in the store's directory: the same disk the partition
 * is on, gone by itself whatever happens to this process. */
static int ckpt_tmpfile(objlog_query *q) {
    const char *dir = objlog_store_dir(q->store);
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    char path[4096];
    snprintf(path, sizeof(path), "%s/checkpoint-XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* A decimal number of at most max_digits digits spanning [s, e), or -1. */
static long long ckpt_number(const char *s, const char *e, size_t max_digits) {
    size_t n = (size_t)(e - s);
    if (n == 0 || n > max_digits || strspn(s, "0123456789") < n)
        return -1;
    return strtoll(s, NULL, 10);
}

/* rest: what follows "/v1/partitions/": "P/checkpoint" or
 * "P/handoffs/X/checkpoint". */
void ckpt_serve(http_ctx *c, const char *rest) {
    c->endpoint = HTTP_EP_CHECKPOINT;
    const char *slash = strchr(rest, '/');
    long long off = -1;
    int route = slash && strcmp(slash, "/checkpoint") == 0;
    if (slash && !route && strncmp(slash, "/handoffs/", 10) == 0) {
        const char *o = slash + 10, *os = strchr(o, '/');
        off = os && strcmp(os, "/checkpoint") == 0 ? ckpt_number(o, os, 18) : -2;
        route = 1;
    }
    if (!route) {
        http_reply_error(c, 404, "NoSuchRoute", "no such route");
        return;
    }
    if (evhttp_request_get_command(c->req) != EVHTTP_REQ_GET) {
        http_add_header(c, "Allow", "GET");
        http_reply_error(c, 405, "MethodNotAllowed",
                         "method not allowed on this resource (allowed: GET)");
        return;
    }
    int np = objlog_materializer_partitions(c->q->m);
    long long p = ckpt_number(rest, slash, 9);
    if (p < 0 || p >= np) {
        http_reply_error(c, 400, "InvalidArgument",
                         "the partition must be an integer in 0..%d", np - 1);
        return;
    }
    if (off < -1 || (off == -1 && strcmp(slash, "/checkpoint") != 0)) {
        http_reply_error(c, 400, "InvalidArgument",
                         "the handoff must be named by its RangeOut's offset, a non-negative "
                         "integer");
        return;
    }
    if (objlog_ckpt_importing(c->q->store, (int32_t)p) == 1) {
        http_reply_error(c, 409, "PartitionImporting",
                         "partition %lld is being imported here", p);
        return;
    }
    if (objlog_store_applied(c->q->store, (int32_t)p) <= 0) {
        http_reply_error(c, 404, "NoSuchCheckpoint",
                         "partition %lld was never applied here", p);
        return;
    }
    if (c->w->stopping) {
        http_reply_error(c, 503, "SlowDown", "the server is stopping");
        return;
    }
    if (atomic_fetch_add(&c->q->ckpt->running, 1) >= CKPT_SERVE_MAX) {
        atomic_fetch_sub(&c->q->ckpt->running, 1);
        http_reply_error(c, 503, "SlowDown", "%d checkpoints are being exported; retry",
                         CKPT_SERVE_MAX);
        return;
    }
    ckpt_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->w = c->w;
        j->req = c->req;
        j->p = (int32_t)p;
        j->off = off;
        j->start = c->start;
        memcpy(j->request_id, c->request_id, sizeof(j->request_id));
        j->fd = ckpt_tmpfile(c->q);
        j->done_ev = event_new(c->w->base, -1, 0, ckpt_done_cb, j);
    }
    int fd_errno = errno;
    if (!j || j->fd < 0 || !j->done_ev ||
        pthread_create(&j->thread, NULL, ckpt_export_main, j) != 0) {
        atomic_fetch_sub(&c->q->ckpt->running, 1);
        if (j && j->fd < 0)
            http_reply_error(c, 500, "InternalError", "temp file in %s: %s",
                             objlog_store_dir(c->q->store), strerror(fd_errno));
        else
            http_reply_error(c, 500, "InternalError", "cannot start the export");
        if (j)
            ckpt_job_free(j);
        return;
    }
    j->next = ckpt_of(c->w)->jobs;
    ckpt_of(c->w)->jobs = j;
}

/* As the worker stops: its exports end at their next chunk and answer
 * 503. */
static void ckpt_worker_stop(void *arg, http_worker *w, void *state) {
    (void)arg;
    (void)w;
    for (ckpt_job *j = ((ckpt_worker *)state)->jobs; j; j = j->next)
        atomic_store(&j->cancel, 1);
}

static int ckpt_worker_init(void *arg, http_worker *w, void **state, char *errstr,
                            size_t errstr_size) {
    (void)arg;
    (void)w;
    *state = calloc(1, sizeof(ckpt_worker));
    if (!*state)
        snprintf(errstr, errstr_size, "checkpoints: out of memory");
    return *state ? 0 : -1;
}

static void ckpt_worker_dispose(void *arg, http_worker *w, void *state) {
    (void)arg;
    (void)w;
    free(state);
}

ckpt_server *ckpt_server_new(server *s, char *errstr, size_t errstr_size) {
    ckpt_server *k = calloc(1, sizeof(*k));
    server_hooks h = {.init = ckpt_worker_init, .stop = ckpt_worker_stop,
                      .dispose = ckpt_worker_dispose};
    if (!k || (k->slot = server_hooks_add(s, &h)) < 0) {
        snprintf(errstr, errstr_size, "checkpoints: %s",
                 k ? "too many server hooks" : "out of memory");
        free(k);
        return NULL;
    }
    return k;
}

void ckpt_server_free(ckpt_server *k) { free(k); }
