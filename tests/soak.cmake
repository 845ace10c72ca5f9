# soak.cmake: kill -9 soak of the view on a real 3-node Kafka:
# test_soak (and test_soak_walon, the views' WAL on) SIGKILLs and
# restarts `objlogd --brokers` under the mixed writers of mixload.c and
# checks that no acknowledged write is lost or applied twice and that the
# view equals a rebuild from the topic.
# CI runs the short version (OBJLOG_SOAK_CYCLES unset: 5 cycles); the full
# one is `ops/soak.sh [CYCLES]` (50 by default).
# Real Kafka only (KAFKA_ONLY), on the shared cluster: it kills the view,
# never a broker.
objlog_add_test(test_soak KAFKA_ONLY WAL_BOTH SOURCES test_soak.c mixload.c viewproc.c storedump.c
  TIMEOUT 300
  LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas
  PkgConfig::JANSSON PkgConfig::RDKAFKA)
if(TARGET test_soak)
  add_dependencies(test_soak objlogd objlog)
endif()
