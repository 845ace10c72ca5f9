# query tests: the HTTP service and gateway over real HTTP (libcurl) against
# the in-process stack (mock Kafka over TCP, RocksDB in a temp dir).
objlog_add_test(test_http COST 60 SOURCES test_http.c httpenv.c TIMEOUT 180
  LIBS objlog_query objlog_testkit PkgConfig::CURL PkgConfig::JANSSON)
# objlogd as a process: stdout lines, flags, SIGTERM, --kafka-only/--brokers.
# The cases about views run on the mock cluster and, as
# test_http_objlogd_kafka, on a real 3-node Kafka; objlogd's own cluster
# flags only on the mock variant.
objlog_add_test(test_http_objlogd BOTH_LOGS SOURCES test_http_objlogd.c TIMEOUT 180
  LIBS objlog_testkit PkgConfig::CURL PkgConfig::RDKAFKA)
add_dependencies(test_http_objlogd objlogd)
# A full disk under --data (a small tmpfs the test mounts; skipped where
# mounting is not allowed): objlogd stays up and stalls applying, answers
# 507 and not ready, and resumes by itself once space returns.
objlog_add_test(test_disk_full COST 40 SOURCES test_disk_full.c TIMEOUT 300
  LIBS objlog_testkit objlog_materializer)
add_dependencies(test_disk_full objlogd)
# view.h (the transport-free reads) straight over a store the state machine
# filled: no Kafka, no HTTP.
objlog_add_test(test_view SOURCES test_view.c TIMEOUT 60
  LIBS objlog_query objlog_testkit)
target_include_directories(test_view PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
# query/watermark.c with a fake broker round trip: strong reads never use
# a ListOffsets request that started before them; concurrent ones share.
objlog_add_test(test_http_watermark SOURCES test_http_watermark.c TIMEOUT 60
  LIBS objlog_query)
# objlogd's connections (cap, descriptors run out, request deadline, whole
# answers on a half-close) and its logs (text/JSON lines, access log), over
# raw loopback sockets against `objlogd --embedded`.
objlog_add_test(test_conn SOURCES test_conn.c TIMEOUT 180
  LIBS objlog_testkit PkgConfig::JANSSON)
add_dependencies(test_conn objlogd)
# HTTP/1.1 framing on the JSON port and the S3 port (request smuggling):
# every ambiguous or malformed body length answered 400 and closed, one
# rule per row, over raw loopback sockets against `objlogd --embedded`;
# and query/framing.c alone, each row split at every byte.
# The JSON writer of the hot answers against jansson, byte for byte.
objlog_add_test(test_jsonw SOURCES test_jsonw.c TIMEOUT 60
  LIBS objlog_query PkgConfig::JANSSON)
objlog_add_test(test_framing SOURCES test_framing.c TIMEOUT 120
  LIBS objlog_query objlog_testkit)
add_dependencies(test_framing objlogd)
# S3's rules for bucket names (and a virtual-hosted label's length) and
# control characters in etags, content types, blob ids and user metadata:
# one rule per row, through the JSON API and the S3 endpoint.
objlog_add_test(test_names SOURCES test_names.c TIMEOUT 120 LIBS objlog_testkit)
add_dependencies(test_names objlogd)
# GET /v1/partitions/{p}/checkpoint on `objlogd --embedded`, fetched with
# objlog_ckpt_fetch into a second store: equal rows, exact errors.
objlog_add_test(test_http_checkpoint SOURCES test_http_checkpoint.c partdump.c TIMEOUT 120
  LIBS objlog_materializer objlog_testkit PkgConfig::CURL)
add_dependencies(test_http_checkpoint objlogd)
# The S3 endpoint with real clients: boto3 and aws-cli against
# objlogd --embedded --s3-listen, compared with the JSON API.
objlog_add_test(test_s3_clients COST 120 SOURCES test_s3_clients.c TIMEOUT 300
  LIBS objlog_query objlog_testkit PkgConfig::JANSSON)
if(TARGET test_s3_clients)
  target_compile_definitions(test_s3_clients PRIVATE
    OBJLOG_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
  add_dependencies(test_s3_clients objlogd)
endif()
# The bytes the S3 endpoint keeps (--blob-dir), through aws-cli, rclone and
# s3cmd, across a SIGKILL of objlogd; the --s3-blob-url redirect.
objlog_add_test(test_s3_bytes COST 55 BOTH_LOGS SOURCES test_s3_bytes.c viewproc.c storedump.c TIMEOUT 600
  LIBS objlog_query objlog_testkit PkgConfig::JANSSON)
if(TARGET test_s3_bytes)
  target_compile_definitions(test_s3_bytes PRIVATE
    OBJLOG_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
  add_dependencies(test_s3_bytes objlogd)
endif()
# The JSON API with --api-credentials: tokens, bucket ownership, admin
# routes, the CLI's and the producer library's tokens, SIGHUP, loopback.
objlog_add_test(test_http_auth SOURCES test_http_auth.c TIMEOUT 180
  LIBS objlog_testkit objlog_producer_static)
add_dependencies(test_http_auth objlogd objlog)
# TLS on both listeners (--tls-cert, --tls-key): curl, aws-cli with
# --ca-bundle and libcurl over https; plain HTTP gets no answer.
objlog_add_test(test_tls SOURCES test_tls.c TIMEOUT 180 LIBS objlog_testkit)
add_dependencies(test_tls objlogd)
# query/apiauth.h without HTTP: the tokens file, the nodes' signatures.
objlog_add_test(test_apiauth SOURCES test_apiauth.c TIMEOUT 60 LIBS objlog_query)
# query/s3auth.h (SigV4 for the S3 endpoint, the credentials file) without
# HTTP: AWS's published vectors, one rule per case, and requests botocore
# signs when python3 has it.
objlog_add_test(test_s3auth SOURCES test_s3auth.c TIMEOUT 60
  LIBS objlog_query PkgConfig::JANSSON)
# The S3 reference model (tests/s3model.c) through both wire formats:
# random sequences written through the JSON API and the S3 endpoint at
# random, every answer of both compared with the model.
objlog_add_test(test_s3_model_wire SOURCES test_s3_model_wire.c TIMEOUT 300
  LIBS objlog_testkit PkgConfig::JANSSON PkgConfig::CRYPTO)
if(TARGET test_s3_model_wire)
  add_dependencies(test_s3_model_wire objlogd)
endif()
# Lifecycle end to end: objlogd processes on a
# --kafka-only log, the worker with its test clock offset, a SIGKILL while
# the backlog drains, the CLI.
objlog_add_test(test_lifecycle_objlogd WAL_BOTH SOURCES test_lifecycle_objlogd.c TIMEOUT 240
  LIBS objlog_testkit PkgConfig::CURL)
add_dependencies(test_lifecycle_objlogd objlogd objlog)
# The lifecycle worker on a LogAppendTime log whose clock is not its own:
# it learns the log's clock from its outcomes instead of re-proposing every
# object on every scan. Real Kafka only (the mock keeps producer stamps).
objlog_add_test(test_lifecycle_logclock KAFKA_ONLY SOURCES test_lifecycle_logclock.c
  TIMEOUT 180 LIBS objlog_testkit)
if(TARGET test_lifecycle_logclock)
  add_dependencies(test_lifecycle_logclock objlogd)
endif()
# S3's ?lifecycle subresource (query/s3lc.c) with boto3
# and aws-cli against objlogd --embedded, compared with the JSON API.
objlog_add_test(test_s3_lifecycle SOURCES test_s3_lifecycle.c TIMEOUT 300
  LIBS objlog_testkit PkgConfig::JANSSON)
if(TARGET test_s3_lifecycle)
  target_compile_definitions(test_s3_lifecycle PRIVATE
    OBJLOG_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
  add_dependencies(test_s3_lifecycle objlogd)
endif()
# A bucket's event notification configurations through the JSON API
# (query/api/notifyapi.c) and `objlog notify` against objlogd --embedded.
objlog_add_test(test_notify_api SOURCES test_notify_api.c TIMEOUT 120
  LIBS objlog_testkit PkgConfig::JANSSON)
add_dependencies(test_notify_api objlogd objlog)
# The blob references a node's partitions hold: GET /v1/blobs
# (query/api/blobsapi.c) and `objlog blobs ls` against objlogd --embedded.
objlog_add_test(test_blobs_api SOURCES test_blobs_api.c TIMEOUT 120
  LIBS objlog_testkit PkgConfig::JANSSON)
add_dependencies(test_blobs_api objlogd objlog)
# The blob directory's collection rounds and CopyObject's pins
# (query/blob/blob.h) on a real directory, the view's fence and reference
# check faked: no Kafka, no store.
objlog_add_test(test_blobgc SOURCES test_blobgc.c TIMEOUT 60 LIBS objlog_query objlog_testkit)
# The collector end to end: objlogd --embedded with --blob-release-topic,
# written through its S3 endpoint; exactly the unreferenced blobs go.
objlog_add_test(test_blobgc_e2e SOURCES test_blobgc_e2e.c TIMEOUT 180
  LIBS objlog_testkit PkgConfig::CRYPTO)
add_dependencies(test_blobgc_e2e objlogd)

# Attribute indexes over HTTP.
objlog_add_test(test_http_indexes SOURCES test_http_indexes.c httpenv.c TIMEOUT 180
  LIBS objlog_query objlog_testkit PkgConfig::CURL PkgConfig::JANSSON)
# Admission control: the token bucket and the decision on a
# fake clock, SetRateLimit in the state machine, and `objlogd` processes for
# 503 SlowDown on the JSON API and the S3 endpoint, replay, the tenant flag,
# the hot-partition guard and the producer's OBJLOG_STATUS_SLOW_DOWN.
objlog_add_test(test_admit SOURCES test_admit.c TIMEOUT 300
  LIBS objlog_query objlog_testkit objlog_producer_static)
if(TARGET test_admit)
  target_include_directories(test_admit PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
  add_dependencies(test_admit objlogd objlog)
endif()
# objlogd on a Kafka that wants SASL/PLAIN (the fixture's SASL listeners)
# with --kafka-config; a wrong password; config files refused.
objlog_add_test(test_kafka_sasl KAFKA_ONLY SOURCES test_kafka_sasl.c TIMEOUT 300
  LIBS objlog_testkit)
if(TARGET test_kafka_sasl)
  add_dependencies(test_kafka_sasl objlogd objlog)
endif()
# The status page (query/ui/) in Debian's headless Chromium against
# objlogd --embedded: its routes with curl, the DOM its script built, a
# screenshot. Skipped (77) without chromium, except under CI=true.
add_test(NAME test_status_page COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_status_page.sh ${CMAKE_BINARY_DIR})
set_tests_properties(test_status_page PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
# The ring of recent warnings and errors behind GET /v1/log
# (query/log/logring.c), alone and as the logger's sink: wrap-around,
# paging after a seq, counts by level, a cut message, the sink swapped
# while threads log.
objlog_add_test(test_logring SOURCES test_logring.c TIMEOUT 60 LIBS objlog_logger)

# A cluster node's memory of its peers (query/cluster/peers.c), refresh by
# refresh with the times given: each change said once, exactly.
objlog_add_test(test_peers SOURCES test_peers.c TIMEOUT 60 LIBS objlog_query)
