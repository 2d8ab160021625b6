"""What the tools' tests share: loading a tool as a module, and a status
page served once over loopback, as mod_qosctl's JSON would be, for the
tools' --from-status."""

import http.server
import importlib.machinery
import json
import os
import sys
import threading
import types

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def tool_path(name):
    return os.path.join(TOP, "tools", name)


def load_tool(name):
    """tools/<name> as a module (no bytecode written into the tree)."""
    sys.dont_write_bytecode = True
    loader = importlib.machinery.SourceFileLoader(
        name.replace("-", "_"), tool_path(name))
    module = types.ModuleType(loader.name)
    loader.exec_module(module)
    return module


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
