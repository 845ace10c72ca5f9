# soak.cmake: kill -9 soak of the view on a real 3-node Kafka (issue 10,
# item 8): test_soak SIGKILLs and restarts `objlogd --brokers` under the
# mixed writers of mixload.c and checks that no acknowledged write is lost
# or applied twice and that the view equals a rebuild from the topic.
# CI runs the short version (OBJLOG_SOAK_CYCLES unset: 5 cycles); the full
# one is `ops/soak.sh [CYCLES]` (50 by default). Real Kafka only, so it is
# registered only with OBJLOG_TEST_KAFKA, as a kafka test; the program
# skips itself under mock.
if(OBJLOG_TEST_KAFKA)
  objlog_add_test(test_soak SOURCES test_soak.c mixload.c viewproc.c storedump.c
    TIMEOUT 600
    LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas
    PkgConfig::JANSSON PkgConfig::RDKAFKA)
  add_dependencies(test_soak objlogd objlog)
  set_tests_properties(test_soak PROPERTIES RESOURCE_LOCK kafka_cluster LABELS kafka
    ENVIRONMENT "OBJLOG_BIN_DIR=${CMAKE_BINARY_DIR};OBJLOG_SRC_DIR=${CMAKE_SOURCE_DIR};OBJLOG_FETCH_WAIT_MS=100;OBJLOG_TEST_LOG=kafka")
endif()
