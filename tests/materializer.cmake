# materializer tests: the state machine over a real RocksDB, and the
# consumer against librdkafka's mock cluster over TCP on 127.0.0.1.
objlog_add_test(test_apply COST 60 SOURCES test_apply.c
  LIBS objlog_materializer objlog_testkit TIMEOUT 120)
target_include_directories(test_apply PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
# Tags and canned ACLs: SetObjectTags/Acl, SetBucketTags/Acl, exact
# outcomes and records, batch boundaries leaving the same rows.
objlog_add_test(test_apply_attrs SOURCES test_apply_attrs.c
  LIBS objlog_materializer objlog_testkit TIMEOUT 60)
target_include_directories(test_apply_attrs PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
objlog_add_test(test_materializer SOURCES test_materializer.c
  LIBS objlog_materializer objlog_testkit TIMEOUT 180)
objlog_add_test(test_janitor SOURCES test_janitor.c
  LIBS objlog_materializer objlog_testkit TIMEOUT 60)
target_include_directories(test_janitor PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
objlog_add_test(test_stats SOURCES test_stats.c stats_recount.c
  LIBS objlog_query objlog_materializer objlog_testkit TIMEOUT 120)
target_include_directories(test_stats PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
objlog_add_test(test_checkpoint SOURCES test_checkpoint.c partdump.c
  LIBS objlog_materializer objlog_testkit TIMEOUT 120)
target_include_directories(test_checkpoint PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
# Lifecycle rules decided by the state machine.
objlog_add_test(test_lifecycle_apply SOURCES test_lifecycle_apply.c stats_recount.c
  LIBS objlog_materializer objlog_testkit TIMEOUT 120)
target_include_directories(test_lifecycle_apply PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
# Attribute indexes: rows exact after every kind of key
# op, backfill steps, brute-force agreement, replay-identical dumps.
objlog_add_test(test_indexes SOURCES test_indexes.c
  LIBS objlog_materializer objlog_testkit TIMEOUT 180)
target_include_directories(test_indexes PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
# The change feed: SetNotifications, the records an applied change leaves
# (event names, filters, none for failures and retries), batch
# boundaries, lifecycle's names, the trim.
objlog_add_test(test_apply_feed SOURCES test_apply_feed.c
  LIBS objlog_materializer objlog_testkit TIMEOUT 60)
target_include_directories(test_apply_feed PRIVATE ${CMAKE_SOURCE_DIR}/materializer)
