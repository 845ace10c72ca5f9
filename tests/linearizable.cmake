# Linearizability of strong and token reads (issue 5 item 5): writers
# through libobjlog_producer and HTTP readers against real objlogd
# processes, checked by a WGL search in the test itself.
objlog_add_test(test_linearizable SOURCES test_linearizable.c TIMEOUT 300
  LIBS objlog_testkit objlog_producer_static PkgConfig::JANSSON)
add_dependencies(test_linearizable objlogd)
