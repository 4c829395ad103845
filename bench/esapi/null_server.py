"""A stand-in for the server that answers every _bulk at once, with one
successful item per action, and GET / and PUT /{index} as the client
expects: bulk_load.py against it measures the Python client alone.

  python null_server.py PORT
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ITEM = b'{"index":{"_index":"x","_id":"1","result":"created","status":201}}'


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Elastic-Product", "Elasticsearch")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.split("?")[0].endswith("/_bulk"):
            n = body.count(b"\n") // 2
            self.reply(b'{"took":0,"errors":false,"items":[' + b",".join([ITEM] * n) + b"]}")
        else:
            self.reply(json.dumps({"acknowledged": True}).encode())

    do_PUT = do_POST  # the client sends _bulk with PUT

    def do_DELETE(self):
        self.reply(json.dumps({"acknowledged": True}).encode())

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
