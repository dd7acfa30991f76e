"""HTTP and HTTPS servers on one loopback address, for the domain policy's
tests in every face (no traffic leaves the machine).

    python3 tests/net/server.py DIR [ADDRESS]

Makes DIR/cert.pem and DIR/key.pem (a self-signed certificate for the
names the tests use: registry.test, unlisted.test, denied.test,
a.pkg.test), serves DIR/www over HTTPS and over HTTP on ADDRESS
(127.0.0.2 unless given), prints `https PORT` and `http PORT`, then serves
until stdin closes or it is killed.

- `/redirect?to=URL`: a 302 to URL;
- anything else: the file under DIR/www, or `hello from HOST` (the Host
  header) for `/`.

A git repository under DIR/www (made by the test, `git update-server-info`
done) is served as git's dumb HTTP protocol reads it.
"""

from __future__ import annotations

import http.server
import os
import ssl
import subprocess
import sys
import threading
from urllib.parse import parse_qs, urlparse

NAMES = ["registry.test", "unlisted.test", "denied.test", "a.pkg.test"]


def make_cert(directory: str) -> tuple[str, str]:
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    if not os.path.exists(cert):
        san = ",".join(f"DNS:{n}" for n in NAMES) + ",IP:127.0.0.2"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", "/CN=registry.test", "-addext", f"subjectAltName={san}",
             "-keyout", key, "-out", cert],
            check=True, capture_output=True)
    return cert, key


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # quiet: tests read stdout
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlparse(self.path)
        if url.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", parse_qs(url.query)["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if url.path == "/":
            body = f"hello from {self.headers.get('Host', '').split(':')[0]}\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()


def main() -> None:
    directory = sys.argv[1]
    address = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.2"
    www = os.path.join(directory, "www")
    os.makedirs(www, exist_ok=True)
    cert, key = make_cert(directory)

    def handler(*args: object, **kwargs: object) -> Handler:
        return Handler(*args, directory=www, **kwargs)

    https = http.server.ThreadingHTTPServer((address, 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    https.socket = context.wrap_socket(https.socket, server_side=True)
    plain = http.server.ThreadingHTTPServer((address, 0), handler)
    for server in (https, plain):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"https {https.server_address[1]}", flush=True)
    print(f"http {plain.server_address[1]}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
