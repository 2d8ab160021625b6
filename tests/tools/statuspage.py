"""A status page served once over loopback, as mod_qosctl's JSON would
be, for the tools' --from-status."""

import http.server
import json
import threading


def serve_once(status):
    """(server, thread, paths requested): serves `status` as JSON to one
    GET; join the thread and close the server when done."""
    seen = []

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            body = json.dumps(status).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Page)
    t = threading.Thread(target=srv.handle_request, daemon=True)
    t.start()
    return srv, t, seen
