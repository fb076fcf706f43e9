"""tests/interop/py_server.py's server (the Python `mcp` package, 2.x),
served over Streamable HTTP on 127.0.0.1:$PORT/mcp, for
tests/client_http_interop.rs."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from py_server import server  # noqa: E402

if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]))
