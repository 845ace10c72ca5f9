# logdown.cmake: the log goes away and comes back:
# test_logdown SIGKILLs every broker of a real Kafka cluster under gateway
# writers and readers, checks that the view stays bounded and honest while
# the log is down (writes and strong reads answer 503 in time, eventual
# reads keep answering, /readyz fails, SIGTERM exits fast), then restarts
# the brokers and checks that the same objlogd recovers and that every
# write answered 503 resolves by its request id with nothing lost.
# Real Kafka only (KAFKA_ONLY), on a cluster of its own (OWN_CLUSTER) of
# one node: every broker goes down anyway, and one JVM restarts fastest.
objlog_add_test(test_logdown KAFKA_ONLY OWN_CLUSTER KAFKA_NODES 1 SOURCES test_logdown.c
  viewproc.c storedump.c TIMEOUT 150
  LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas
  PkgConfig::JANSSON PkgConfig::RDKAFKA)
if(TARGET test_logdown)
  add_dependencies(test_logdown objlogd objlog)
endif()
