# The objlog CLI against the real objlogd (both built here).
objlog_add_test(test_cli SOURCES test_cli.c TIMEOUT 180
  LIBS objlog_testkit objlog_schemas PkgConfig::JANSSON PkgConfig::CRYPTO)
add_dependencies(test_cli objlog objlogd)
# GET /metrics of a real objlogd, checked by promtool (Debian's prometheus
# package) and for every metric family and value the test caused.
objlog_add_test(test_metrics SOURCES test_metrics.c TIMEOUT 120
  LIBS objlog_testkit objlog_schemas)
add_dependencies(test_metrics objlogd)
