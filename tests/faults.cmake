# faults.cmake: broker faults on a real 3-node Kafka:
# test_faults kills, restarts, SIGSTOPs and cleanly stops brokers under the
# mixed writers of mixload.c and checks that no acknowledged write is lost
# or applied twice and that the view equals a rebuild from the topic.
# Real Kafka only (KAFKA_ONLY), on a cluster of its own (OWN_CLUSTER): it
# kills brokers.
objlog_add_test(test_faults KAFKA_ONLY OWN_CLUSTER SOURCES test_faults.c mixload.c viewproc.c
  storedump.c TIMEOUT 300
  LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas
  PkgConfig::JANSSON PkgConfig::RDKAFKA)
if(TARGET test_faults)
  add_dependencies(test_faults objlogd objlog)
endif()
# The change feed to Kafka exactly once: a read_committed consumer of a
# notification topic while objlogd is SIGKILLed 10 times (and, on a real
# Kafka of its own, an events partition's leader dies once): every
# matching change once, in order per key, the table built from it equal to
# ListObjectVersions. Webhooks: a receiver that fails 30% of requests and
# is down for 10 s still gets every record, in order per key.
objlog_add_test(test_notify COST 45 BOTH_LOGS OWN_CLUSTER SOURCES test_notify.c viewproc.c storedump.c
  TIMEOUT 600
  LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas
  PkgConfig::JANSSON PkgConfig::RDKAFKA)
if(TARGET test_notify)
  add_dependencies(test_notify objlogd objlog)
  target_compile_definitions(test_notify PRIVATE OBJLOG_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
endif()
