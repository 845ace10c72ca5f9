/* ui.h: objlogd's status page (query/ui/): an HTML page, its script and
 * its stylesheet, compiled into the binary at build time (ui.cmake) and
 * served on the JSON API's listener at / and /ui/<name>. The page holds no
 * data: its script reads the JSON API as any client does, with the API's
 * tokens, so these routes ask for none. Its user is the service
 * (service.c), which registers it as it registers the other modules'
 * hooks. */
#ifndef OBJLOG_QUERY_UI_H
#define OBJLOG_QUERY_UI_H

#include <stddef.h>

#include "server.h"

/* Serves the page on face's listener (the JSON API's): a hook that, as
 * each worker starts, gives that worker's listener the page's paths.
 * Before server_start; face need not listen yet. 0, or -1 with errstr. */
int ui_register(server *s, const http_face *face, char *errstr, size_t errstr_size);

#endif
