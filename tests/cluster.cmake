# cluster.cmake: objlogd nodes of one cluster on the shared real
# 3-node Kafka: membership (each partition on exactly one node, every node's
# GET /v1/cluster agreeing), writes and reads through every node, SIGKILL of
# a partition's node and the survivors taking over. Real Kafka only: the
# nodes share a consumer group on the brokers.
objlog_add_test(test_cluster KAFKA_ONLY WAL_BOTH SOURCES test_cluster.c TIMEOUT 300
  LIBS objlog_testkit PkgConfig::JANSSON)
if(TARGET test_cluster)
  add_dependencies(test_cluster objlogd objlog)
endif()

# Standby replicas: three nodes with --standbys 1; the
# active node of a busy partition is SIGKILLed while its standby answers.
objlog_add_test(test_standby KAFKA_ONLY WAL_BOTH SOURCES test_standby.c TIMEOUT 300
  LIBS objlog_testkit PkgConfig::JANSSON)
if(TARGET test_standby)
  add_dependencies(test_standby objlogd)
endif()

# The JSON API's tokens across nodes: two nodes with --api-credentials; a
# forwarded request carries the caller's subject signed with the cluster's
# secret, the peer enforces it; a client cannot sign.
objlog_add_test(test_cluster_auth KAFKA_ONLY SOURCES test_cluster_auth.c TIMEOUT 300
  LIBS objlog_testkit PkgConfig::JANSSON)
if(TARGET test_cluster_auth)
  add_dependencies(test_cluster_auth objlogd)
endif()

# The S3 endpoint of every node: three nodes with --s3-credentials and one
# shared blob directory; aws-cli, rclone, s3cmd and boto3 through every
# node, a request for another node's partition sent on to it.
objlog_add_test(test_s3_cluster KAFKA_ONLY SOURCES test_s3_cluster.c TIMEOUT 600
  LIBS objlog_testkit PkgConfig::JANSSON)
if(TARGET test_s3_cluster)
  target_compile_definitions(test_s3_cluster PRIVATE
    OBJLOG_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
  add_dependencies(test_s3_cluster objlogd)
endif()
