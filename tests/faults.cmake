# faults.cmake: broker faults on a real 3-node Kafka (issue 10, item 6):
# test_faults kills, restarts, SIGSTOPs and cleanly stops brokers under the
# mixed writers of mixload.c and checks that no acknowledged write is lost
# or applied twice and that the view equals a rebuild from the topic.
# Real Kafka only, so it is registered only with OBJLOG_TEST_KAFKA, as a
# kafka test (one cluster at a time); the program skips itself under mock.
if(OBJLOG_TEST_KAFKA)
  objlog_add_test(test_faults SOURCES test_faults.c mixload.c viewproc.c storedump.c
    TIMEOUT 600
    LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas
    PkgConfig::JANSSON PkgConfig::RDKAFKA)
  add_dependencies(test_faults objlogd objlog)
  set_tests_properties(test_faults PROPERTIES RESOURCE_LOCK kafka_cluster LABELS kafka
    ENVIRONMENT "OBJLOG_BIN_DIR=${CMAKE_BINARY_DIR};OBJLOG_SRC_DIR=${CMAKE_SOURCE_DIR};OBJLOG_FETCH_WAIT_MS=100;OBJLOG_TEST_LOG=kafka")
endif()
