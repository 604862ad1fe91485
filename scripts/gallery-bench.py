"""Photos and a server for `make bench-gallery`.

Usage:
  gallery-bench.py photos SOURCE_FOLDER OUT_FOLDER COUNT
      Makes COUNT JPEG photos of 2000 to 4000 pixels on the long side from the
      photos in SOURCE_FOLDER (each a different crop, size and turn), unless
      OUT_FOLDER already holds them.
  gallery-bench.py serve FOLDER PORT_FILE
      Serves /p/<n>.jpg as the (n mod count)-th photo of FOLDER and /missing/<n>.jpg
      as 404, on 127.0.0.1, with Last-Modified and Cache-Control: max-age=3600;
      GET /requests answers how many photo and missing requests arrived, and
      POST /reset sets that count to zero. Writes the port to PORT_FILE.
"""
import http.server
import os
import sys
import threading


def photos(source, out, count):
    from PIL import Image
    os.makedirs(out, exist_ok=True)
    names = sorted(n for n in os.listdir(source) if n.lower().endswith((".jpg", ".jpeg", ".png")))
    if len([n for n in os.listdir(out) if n.endswith(".jpg")]) >= count:
        return
    for i in range(count):
        with Image.open(os.path.join(source, names[i % len(names)])) as image:
            image = image.convert("RGB")
            if (i // len(names)) % 2:
                image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
            w, h = image.size
            crop = 0.02 * ((i * 7) % 10)
            image = image.crop((int(w * crop), int(h * crop), w - int(w * crop / 2), h - int(h * crop / 2)))
            long_side = 2000 + (i * 397) % 2001
            scale = long_side / max(image.size)
            image = image.resize((round(image.size[0] * scale), round(image.size[1] * scale)), Image.Resampling.BILINEAR)
            image.save(os.path.join(out, "%04d.jpg" % i), quality=85)


def serve(folder, port_file):
    files = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".jpg"))
    lock = threading.Lock()
    counts = {"requests": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, body=b"", headers=()):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_POST(self):
            if self.path == "/reset":
                with lock:
                    counts["requests"] = 0
                self.reply(204)
            else:
                self.reply(404)

        def do_GET(self):
            if self.path == "/requests":
                with lock:
                    self.reply(200, b"%d\n" % counts["requests"], [("Content-Type", "text/plain")])
                return
            parts = self.path.split("/")
            if len(parts) == 3 and parts[1] in ("p", "missing") and parts[2].endswith(".jpg"):
                with lock:
                    counts["requests"] += 1
                if parts[1] == "missing":
                    self.reply(404, b"not found", [("Content-Type", "text/plain")])
                    return
                path = files[int(parts[2][:-4]) % len(files)]
                modified = self.date_time_string(int(os.path.getmtime(path)))
                if self.headers.get("If-Modified-Since") == modified:
                    self.reply(304, headers=[("Last-Modified", modified), ("Cache-Control", "max-age=3600")])
                    return
                with open(path, "rb") as f:
                    body = f.read()
                self.reply(200, body, [("Content-Type", "image/jpeg"), ("Last-Modified", modified),
                                       ("Cache-Control", "max-age=3600")])
                return
            self.reply(404)

    class Server(http.server.ThreadingHTTPServer):
        # socketserver's listen backlog of 5 would drop the SYNs of the grid's
        # connections opened at once; each dropped one waits a second to be sent again.
        request_queue_size = 128

        def handle_error(self, request, client_address):
            # A client that cancels a transfer closes its connection: not an error.
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    temporary = port_file + ".%d.tmp" % os.getpid()
    with open(temporary, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(temporary, port_file)
    server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "photos":
        photos(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
