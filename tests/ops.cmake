# The objlog CLI against the real objlogd (both built here); mock cluster
# and real 3-node Kafka (test_cli_kafka).
objlog_add_test(test_cli BOTH_LOGS SOURCES test_cli.c TIMEOUT 180
  LIBS objlog_testkit objlog_schemas PkgConfig::JANSSON PkgConfig::CRYPTO)
add_dependencies(test_cli objlog objlogd)
# GET /metrics of a real objlogd, checked by promtool (Debian's prometheus
# package) and for every metric family and value the test caused; mock
# cluster and real 3-node Kafka (test_metrics_kafka).
objlog_add_test(test_metrics BOTH_LOGS SOURCES test_metrics.c TIMEOUT 120
  LIBS objlog_testkit objlog_schemas)
add_dependencies(test_metrics objlogd)
