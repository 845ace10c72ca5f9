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
