# libobjlog_producer against librdkafka's mock cluster (real TCP, 127.0.0.1).
objlog_add_test(test_producer SOURCES test_producer.c TIMEOUT 180
  LIBS objlog_producer_static objlog_schemas PkgConfig::RDKAFKA)

# ack=applied end to end: outcomes from the real objlogd (batched route,
# unknown outcomes with a view held by SIGSTOP); mock cluster and real
# 3-node Kafka (test_producer_applied_kafka).
objlog_add_test(test_producer_applied BOTH_LOGS SOURCES test_producer_applied.c TIMEOUT 240
  LIBS objlog_testkit objlog_producer_static objlog_schemas)
add_dependencies(test_producer_applied objlogd)
