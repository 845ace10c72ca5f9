# Process-level tests: they run the real objlogd binary, so make them wait
# for it to be built.
objlog_add_test(test_integration BOTH_LOGS WAL_BOTH SOURCES test_integration.c TIMEOUT 600
  LIBS objlog_testkit objlog_producer_static objlog_materializer PkgConfig::JANSSON)
add_dependencies(test_integration objlogd)

# Usage counters exact after SIGKILLs of a real view and after a replay
# rebuild; shares the recount with test_stats. Mock
# cluster and real 3-node Kafka (test_stats_kill_kafka).
objlog_add_test(test_stats_kill BOTH_LOGS WAL_BOTH SOURCES test_stats_kill.c stats_recount.c TIMEOUT 180
  LIBS objlog_testkit objlog_producer_static objlog_materializer PkgConfig::JANSSON)
add_dependencies(test_stats_kill objlogd)

# kcat and protoc read the log, kcat's garbage goes to the DLQ;
# mock cluster and real 3-node Kafka (test_interop_kafka).
objlog_add_test(test_interop BOTH_LOGS SOURCES test_interop.c TIMEOUT 300
  LIBS objlog_testkit objlog_schemas PkgConfig::JANSSON)
add_dependencies(test_interop objlogd)

# S3 object-metadata rules, one per row, through a real view; mock cluster
# and real 3-node Kafka (test_s3_table_kafka).
objlog_add_test(test_s3_table BOTH_LOGS SOURCES test_s3_table.c TIMEOUT 300
  LIBS objlog_testkit PkgConfig::JANSSON)
add_dependencies(test_s3_table objlogd)

objlog_add_test(test_s3_model SOURCES test_s3_model.c TIMEOUT 300
  LIBS objlog_testkit objlog_query objlog_materializer)

# A view is a cache of the log: SIGKILL before a flush (WAL off) resumes
# from the last flushed offsets and converges to a rebuild; the flusher
# bounds what a quiet view keeps in memory only. Mock cluster.
objlog_add_test(test_viewcrash SOURCES test_viewcrash.c viewproc.c storedump.c TIMEOUT 180
  LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas
  PkgConfig::JANSSON PkgConfig::RDKAFKA)
add_dependencies(test_viewcrash objlogd)
