# Log identity, topic settings and operator tools as processes:
# objlogd against two logs (A: the program's testlog, B:
# a second mock or 1-node KRaft log), --embedded restarts, topics created and
# checked, consumer groups read by Kafka's own tool and kcat. Cases that need
# a real 3-node cluster skip on the mock log.
objlog_add_test(test_logident BOTH_LOGS SOURCES test_logident.c TIMEOUT 150
  LIBS objlog_testkit objlog_materializer PkgConfig::JANSSON PkgConfig::RDKAFKA)
add_dependencies(test_logident objlogd objlog)
