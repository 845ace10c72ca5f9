# Conditional writes, retries and replay determinism as processes: races
# If-None-Match from two processes (the test binary
# re-executed with --racer), a CAS counter, and a replayed view compared
# with the live one in every column family; on the mock cluster and, as
# test_conditional_kafka, on a real 3-node Kafka (testlog.h).
objlog_add_test(test_conditional COST 200 BOTH_LOGS SOURCES test_conditional.c TIMEOUT 600
  LIBS objlog_testkit objlog_producer_static objlog_materializer PkgConfig::JANSSON
  PkgConfig::RDKAFKA)
add_dependencies(test_conditional objlogd)
