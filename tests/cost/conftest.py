"""A local stand-in for Oracle's price-list API: the recorded response and some bad answers, each at
its own path (``PRICE_LIST_ROUTES``), served on 127.0.0.1 for the module's tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from builders import DATA

RECORDED = DATA / "oci_price_list_sample.json"
PRICE_LIST_ROUTES: dict[str, tuple[int, bytes]] = {
    "/products/": (200, RECORDED.read_bytes()),
    "/html/": (200, b"<html><body>Service Unavailable</body></html>"),
    "/array/": (200, b"[1, 2]"),
    "/binary/": (200, b"\xff\xfe\x00"),
    "/down/": (503, b"{}"),
}


class _PriceList(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, body = PRICE_LIST_ROUTES.get(self.path, (404, b""))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The stand-in's address (``http://127.0.0.1:PORT``); the recorded response is at ``/products/``."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _PriceList)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
