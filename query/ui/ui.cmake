# query/ui: objlogd's status page (docs/OPERATIONS.md, "Status page"),
# included by query/CMakeLists.txt after objlog_query is declared. The
# page's files (page/) are compiled in at build time by embed.cmake: a
# changed or added file regenerates ui_assets.c; nothing is fetched.
set(UI_DIR ${CMAKE_CURRENT_SOURCE_DIR}/ui)
set(UI_GEN ${CMAKE_CURRENT_BINARY_DIR}/ui_assets.c)
file(GLOB UI_PAGE CONFIGURE_DEPENDS ${UI_DIR}/page/*)
add_custom_command(OUTPUT ${UI_GEN}
  COMMAND ${CMAKE_COMMAND} -DDIR=${UI_DIR}/page -DOUT=${UI_GEN} -P ${UI_DIR}/embed.cmake
  DEPENDS ${UI_PAGE} ${UI_DIR}/embed.cmake
  COMMENT "Embedding the status page (query/ui/page)" VERBATIM)
target_sources(objlog_query PRIVATE ${UI_DIR}/ui.c ${UI_GEN})
target_include_directories(objlog_query PUBLIC ${UI_DIR})
