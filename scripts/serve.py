"""Serves a folder over HTTP on 127.0.0.1 for `make demo`, on a free port.

Usage: serve.py FOLDER [PORT_FILE]. Prints the port on its first line, and when
PORT_FILE is given also writes it there, through a temporary file renamed into
place, so that a reader polling for the file never sees it empty or half written.
Then serves until killed. Python's own server sends Last-Modified and answers
If-Modified-Since with 304, which lets the demo show a revalidation.
"""
import functools
import http.server
import os
import sys

directory = sys.argv[1]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
handler.func.log_message = lambda *args: None  # quiet: the demo prints its own lines


class Server(http.server.ThreadingHTTPServer):
    # The listen backlog: socketserver's default of 5 drops the SYNs of a sheet's
    # eight connections opened at once, and each dropped one waits the kernel's
    # one-second retransmission.
    request_queue_size = 64


server = Server(("127.0.0.1", 0), handler)
port = server.server_address[1]
if len(sys.argv) > 2:
    temporary = sys.argv[2] + ".%d.tmp" % os.getpid()
    with open(temporary, "w") as f:
        f.write("%d\n" % port)
    os.replace(temporary, sys.argv[2])
print(port, flush=True)
server.serve_forever()
