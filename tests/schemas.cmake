objlog_add_test(test_keycodec SOURCES test_keycodec.c LIBS objlog_schemas TIMEOUT 120)
