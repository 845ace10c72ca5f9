/* watermark.h: the log's end offsets, per partition, fetched once for
 * many askers (watermark.c): strong reads fence on them, lag and /readyz
 * report them, the cluster weighs replicas by them. No HTTP here. */
#ifndef OBJLOG_QUERY_WATERMARK_H
#define OBJLOG_QUERY_WATERMARK_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

typedef struct wm_cache wm_cache;

/* ---- watermark.c ---- */
wm_cache *wm_new(const char *brokers, const char *topic, int nparts,
                 char *errstr, size_t errstr_size);
void wm_destroy(wm_cache *w);
/* End offset (high watermark) of partition p, sharing ListOffsets requests
 * with concurrent callers. fresh: only from a request started after this
 * call (strong reads); else the one in flight may answer (lag, metrics).
 * 0 with *end, or the Kafka error (__TIMED_OUT past timeout_ms). */
rd_kafka_resp_err_t wm_end_offset(wm_cache *w, int32_t p, int fresh,
                                  int timeout_ms, int64_t *end);
/* wm_end_offset(fresh) of partitions ps[0..n) into ends[0..n): the idle
 * ones are fetched together in one ListOffsets round trip per leader; the
 * others share the request in flight's successor. On an error, *failed
 * is the partition it came from. */
rd_kafka_resp_err_t wm_end_offsets(wm_cache *w, const int32_t *ps, int n,
                                   int timeout_ms, int64_t *ends, int32_t *failed);
/* Tests only: fn replaces the broker round trip (same contract as
 * rd_kafka_query_watermark_offsets' high watermark). */
typedef rd_kafka_resp_err_t (*wm_fetch_fn)(void *opaque, int32_t p,
                                           int timeout_ms, int64_t *end);
void wm_set_fetch(wm_cache *w, wm_fetch_fn fn, void *opaque);
/* Without waiting, for HTTP workers: the number of the first request on p
 * to start after this call (started now when none is in flight, else
 * queued behind it, with at least timeout_ms). */
uint64_t wm_ticket(wm_cache *w, int32_t p, int timeout_ms);
/* 1 with *end and *err once request `ticket` (or a later one) finished;
 * 0 while it has not. */
int wm_ticket_done(wm_cache *w, int32_t p, uint64_t ticket, int64_t *end,
                   rd_kafka_resp_err_t *err);
/* fn(opaque, p, end) runs after every finished request of partition p
 * (end -1 when it failed), on the thread that ran it and under p's lock:
 * it may only wake someone (event_active, objlog_materializer_kick) and
 * must not call back into the cache. NULL clears; after this returns the
 * old fn runs no more. */
typedef void wm_notify_fn(void *opaque, int32_t p, int64_t end);
void wm_set_notify(wm_cache *w, wm_notify_fn *fn, void *opaque);
/* Newest end offset successfully fetched, -1 if none yet. */
int64_t wm_last_end(wm_cache *w, int32_t p);
/* Starts a thread that fetches every partition's end offset each
 * interval_ms (the first time before returning). 0, or -1 with errstr. */
int wm_start_refresh(wm_cache *w, int interval_ms, char *errstr, size_t errstr_size);
/* Without waiting: ms since partition p's end offset was last fetched
 * (-1 never), and the error of its newest request (0 when it succeeded). */
int64_t wm_health(wm_cache *w, int32_t p, rd_kafka_resp_err_t *last_err);
/* An end offset older than this (the refresher fetches one every second)
 * means the log is unreachable: /readyz fails, strong reads fail at once
 * instead of holding a worker on a broker call, lag uses the last known. */
#define WM_STALE_MS 5000
/* ListOffsets requests issued so far. */
uint64_t wm_requests(wm_cache *w);

#endif
