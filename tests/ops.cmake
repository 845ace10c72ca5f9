# The objlog CLI against the real objlogd (both built here).
objlog_add_test(test_cli SOURCES test_cli.c TIMEOUT 180
  LIBS objlog_testkit objlog_schemas PkgConfig::JANSSON PkgConfig::CRYPTO)
add_dependencies(test_cli objlog objlogd)
