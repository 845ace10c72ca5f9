# The objlog CLI against the real objlogd (both built here); mock cluster
# and real 3-node Kafka (test_cli_kafka).
objlog_add_test(test_cli COST 50 BOTH_LOGS SOURCES test_cli.c TIMEOUT 180
  LIBS objlog_testkit objlog_schemas PkgConfig::JANSSON PkgConfig::CRYPTO)
add_dependencies(test_cli objlog objlogd)
# GET /metrics of a real objlogd, checked by promtool (Debian's prometheus
# package) and for every metric family and value the test caused; mock
# cluster and real 3-node Kafka (test_metrics_kafka).
objlog_add_test(test_metrics BOTH_LOGS SOURCES test_metrics.c TIMEOUT 120
  LIBS objlog_testkit objlog_schemas objlog_producer_static)
add_dependencies(test_metrics objlogd)
if(NOT OBJLOG_SANITIZE)
  # ops/monitoring/ (tests/test_monitoring.sh): promtool accepts the rule
  # files, the dashboard is JSON, and every metric name and label they read
  # is in the /metrics of a real objlogd (embedded log, S3 endpoint, blob
  # directory) and of a --cluster node on its log; promtool as above. Not
  # under the sanitizers: it checks files against a scrape, and its
  # --cluster node on the mock cluster once died there in a librdkafka
  # assertion (rd_kafka_enq_once_del_source_return).
  add_test(NAME test_monitoring
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_monitoring.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(test_monitoring PROPERTIES TIMEOUT 180
    ENVIRONMENT "OBJLOG_APPLY_THREADS=2;OBJLOG_FETCH_WAIT_MS=2")
  # The installed library, headers, pkg-config file and binaries, used as a
  # frontend developer would (tests/install.sh). Not under the sanitizers:
  # the frontend is built with plain cc against the instrumented archive.
  add_test(NAME test_install COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(test_install PROPERTIES TIMEOUT 120)
  # The README's run command (tests/setup_run.sh): stage lines, the banner,
  # and a second run on the same data directory refused. It builds in the
  # plain tree (build/), as a user's does.
  add_test(NAME test_setup_run COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/setup_run.sh)
  set_tests_properties(test_setup_run PROPERTIES TIMEOUT 300)
endif()
