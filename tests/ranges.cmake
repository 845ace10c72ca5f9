# Range handoffs (splits, moves, merges) of a running objlogd under
# writers and strong readers, a retry across a split, bad requests, and a
# rebuild that dumps as the live view; on the mock cluster and, as
# test_ranges_kafka, on a real 3-node Kafka.
objlog_add_test(test_ranges COST 60 BOTH_LOGS SOURCES test_ranges.c rangetest.c viewproc.c storedump.c TIMEOUT 300
  LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas PkgConfig::JANSSON PkgConfig::RDKAFKA)
add_dependencies(test_ranges objlogd)

# A bucket across ranges: split inside a bucket, listings and stats as
# before, LIST pages across a split, quota by escrow.
objlog_add_test(test_bucket_ranges BOTH_LOGS SOURCES test_bucket_ranges.c rangetest.c viewproc.c storedump.c TIMEOUT 300
  LIBS objlog_testkit objlog_producer_static objlog_materializer objlog_schemas PkgConfig::JANSSON PkgConfig::RDKAFKA)
add_dependencies(test_bucket_ranges objlogd)
