# logdown.cmake: the log goes away and comes back (issue 10, item 7):
# test_logdown SIGKILLs every broker of a real Kafka cluster under gateway
# writers and readers, checks that the view stays bounded and honest while
# the log is down (writes and strong reads answer 503 in time, eventual
# reads keep answering, /readyz fails, SIGTERM exits fast), then restarts
# the brokers and checks that the same objlogd recovers and that every
# write answered 503 resolves by its request id with nothing lost.
# Real Kafka only, so it is registered only with OBJLOG_TEST_KAFKA, as a
# kafka test (one cluster at a time); the program skips itself under mock.
# One node: every broker goes down anyway, and one JVM restarts fastest.
if(OBJLOG_TEST_KAFKA)
  objlog_add_test(test_logdown SOURCES test_logdown.c viewproc.c storedump.c
    TIMEOUT 300
    LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas
    PkgConfig::JANSSON PkgConfig::RDKAFKA)
  add_dependencies(test_logdown objlogd objlog)
  set_tests_properties(test_logdown PROPERTIES RESOURCE_LOCK kafka_cluster LABELS kafka
    ENVIRONMENT "OBJLOG_BIN_DIR=${CMAKE_BINARY_DIR};OBJLOG_SRC_DIR=${CMAKE_SOURCE_DIR};OBJLOG_FETCH_WAIT_MS=100;OBJLOG_TEST_LOG=kafka;OBJLOG_TEST_KAFKA_NODES=1")
endif()
