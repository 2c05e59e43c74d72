"""`turnout catalog show` and `turnout catalog update`: an entry printed, and a newer catalog
checked before it is written, from a file or from a URL."""

from __future__ import annotations

import http.server
import json
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from turnout.cli import main

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    import pytest


def _catalog(**models: Any) -> dict[str, Any]:
    return {"version": 1, "updated": "2026-03-01", "currency": "USD", "models": models}


HOUSE = {"prices": {"input": 0.5, "output": 1.5}, "context_window": 32768}


def test_show_prints_prices_window_and_capabilities(capsys: pytest.CaptureFixture[str]) -> None:
    """An alias finds the entry; its name, prices, window and capabilities are printed."""
    assert main(["catalog", "show", "gpt-4o-2024-08-06"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gpt-4o (model catalog of ")
    assert "input 2.5, output 10, cache read 1.25 (USD per 1M tokens)" in out
    assert "context window  128,000 tokens" in out
    assert "json_schema, tools, vision" in out


def test_show_of_an_unknown_model_is_exit_1_with_near_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An unknown name: exit 1, with the nearest names."""
    assert main(["catalog", "show", "gpt4o"]) == 1
    err = capsys.readouterr().err
    assert "no model 'gpt4o'" in err
    assert "gpt-4o" in err


def test_update_from_a_file_writes_what_show_then_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`update FILE --to PATH` writes the catalog; `show --catalog PATH` reads it over the
    shipped one."""
    source, target = tmp_path / "new.json", tmp_path / "out" / "catalog.json"
    source.write_text(json.dumps(_catalog(**{"house-model": HOUSE})))
    assert main(["catalog", "update", str(source), "--to", str(target)]) == 0
    assert "(1 models)" in capsys.readouterr().out
    assert main(["catalog", "show", "house-model", "--catalog", str(target), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["house-model"]["context_window"] == 32768


def test_update_refuses_a_wrong_shape_and_keeps_the_catalog_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong field is named on standard error (exit 1) and nothing is written."""
    target = tmp_path / "catalog.json"
    target.write_text("kept")
    source = tmp_path / "bad.json"
    bad = {"prices": {"input": 1, "output": "ten"}, "context_window": 0}
    source.write_text(json.dumps(_catalog(**{"gpt-4o": bad})))
    assert main(["catalog", "update", str(source), "--to", str(target)]) == 1
    err = capsys.readouterr().err
    assert "models.gpt-4o.prices.output: must be a number" in err
    assert "models.gpt-4o.context_window" in err
    assert target.read_text() == "kept"


class _Serve(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        del args


@contextmanager
def _server(body: bytes) -> Iterator[str]:
    handler = type("Handler", (_Serve,), {"body": body})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/catalog.json"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_update_from_a_url_fetches_and_writes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`update URL` GETs the catalog over HTTP and writes it."""
    target = tmp_path / "catalog.json"
    with _server(json.dumps(_catalog(**{"house-model": HOUSE})).encode()) as url:
        assert main(["catalog", "update", url, "--to", str(target), "--timeout", "5"]) == 0
    assert "house-model" in json.loads(target.read_text())["models"]
    assert "2026-03-01" in capsys.readouterr().out


def test_update_from_a_url_that_is_not_json_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A URL answering something else than JSON: exit 1, nothing written."""
    target = tmp_path / "catalog.json"
    with _server(b"<html>not here</html>") as url:
        assert main(["catalog", "update", url, "--to", str(target)]) == 1
    assert "is not JSON" in capsys.readouterr().err
    assert not target.exists()
