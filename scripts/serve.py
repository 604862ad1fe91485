"""Serves a folder over HTTP on 127.0.0.1 for `make demo`, on a free port.

Prints the port on its first line, then serves until killed. Python's own server
sends Last-Modified and answers If-Modified-Since with 304, which lets the demo show
a revalidation.
"""
import functools
import http.server
import sys

directory = sys.argv[1]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
handler.func.log_message = lambda *args: None  # quiet: the demo prints its own lines
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
print(server.server_address[1], flush=True)
server.serve_forever()
