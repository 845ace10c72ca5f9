#!/usr/bin/env python3
"""webhook_receiver.py: a webhook endpoint for the change-feed tests.

    webhook_receiver.py PORT OUT [--fail-rate R] [--seed N] [--retry-after S]

Listens on 127.0.0.1:PORT; each POST body (S3's {"Records":[...]}) that it
accepts is appended as one line to OUT (flushed) and answered 200. With
--fail-rate R it answers a fraction R of the POSTs 500 instead (without
recording them), with Retry-After: S when --retry-after is given. Prints
READY once it listens."""
import http.server
import random
import sys


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    args = sys.argv[3:]
    rate = float(args[args.index('--fail-rate') + 1]) if '--fail-rate' in args else 0.0
    seed = int(args[args.index('--seed') + 1]) if '--seed' in args else 1
    retry_after = args[args.index('--retry-after') + 1] if '--retry-after' in args else None
    rnd = random.Random(seed)
    sink = open(out, 'a', encoding='utf-8')

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get('Content-Length', '0'))
            body = self.rfile.read(n)
            if rnd.random() < rate:
                self.send_response(500)
                if retry_after:
                    self.send_header('Retry-After', retry_after)
                self.send_header('Content-Length', '0')
                self.end_headers()
                return
            sink.write(body.decode('utf-8') + '\n')
            sink.flush()
            self.send_response(200)
            self.send_header('Content-Length', '0')
            self.end_headers()

        def log_message(self, *a):
            pass

    http.server.HTTPServer.allow_reuse_address = True
    srv = http.server.HTTPServer(('127.0.0.1', port), Handler)
    print('READY', flush=True)
    srv.serve_forever()


if __name__ == '__main__':
    main()
