# Linearizability of strong and token reads: writers
# through libobjlog_producer and HTTP readers against real objlogd
# processes, checked by a WGL search in the test itself; on the mock
# cluster and, as test_linearizable_kafka, on a real 3-node Kafka.
objlog_add_test(test_linearizable BOTH_LOGS SOURCES test_linearizable.c TIMEOUT 300
  LIBS objlog_testkit objlog_producer_static PkgConfig::JANSSON)
add_dependencies(test_linearizable objlogd)
