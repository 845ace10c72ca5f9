#!/usr/bin/env python3
"""blobserver.py: the blob store of a frontend, for the redirect test: GET
/PATH serves DIR/PATH (the query string ignored) and appends the request
line to DIR/requests.log. Binds 127.0.0.1:PORT; prints "BLOBSERVER_READY".

    blobserver.py DIR PORT"""
import http.server
import os
import sys

DIR, PORT = sys.argv[1], int(sys.argv[2])


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw):
        super().__init__(*a, directory=DIR, **kw)

    def log_message(self, fmt, *args):
        with open(os.path.join(DIR, "requests.log"), "a") as f:
            f.write("%s %s\n" % (self.command, self.path))


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
print("BLOBSERVER_READY", flush=True)
server.serve_forever()
