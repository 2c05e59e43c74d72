"""What `/readyz` and the metrics say of the control plane (`ControlStatus`): the store's
verdict, a refused store version until a newer one serves, and the last reload's outcome, each
told to a watcher once per change."""

from __future__ import annotations

from turnout.gateway.runtime.status import ControlStatus
from turnout.store.calls import StoreCalls


class Heard:
    """A watcher noting each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def set_store_up(self, backend: str, up: bool) -> None:
        self.calls.append(("store", (backend, up)))

    def count_reload(self, ok: bool) -> None:
        self.calls.append(("reload", ok))

    def set_refused_version(self, version: int) -> None:
        self.calls.append(("refused", version))


def test_a_refused_version_stays_until_a_newer_one_serves() -> None:
    """The same version refused twice is news once; an older one served keeps the alarm; the
    refused version (or a newer one) served clears it."""
    status = ControlStatus(StoreCalls(), "postgresql")
    heard = Heard()
    status.watch(heard)
    assert status.refuse(7, "project 'alpha' is not in the store") is True
    assert status.refuse(7, "project 'alpha' is not in the store") is False
    status.serving(6)
    assert status.problems() == ["store version 7 is refused: project 'alpha' is not in the store"]
    status.serving(8)
    assert (status.refused, status.problems()) == (None, [])
    assert heard.calls == [
        ("store", ("postgresql", True)),
        ("refused", 0),
        ("refused", 7),
        ("refused", 0),
    ]


def test_a_refused_reload_is_a_problem_until_one_is_served() -> None:
    """A refused reload shows with its problems and time; the next served one clears it."""
    status = ControlStatus(wall=lambda: 1700000000.25)
    heard = Heard()
    status.watch(heard)
    status.reloaded(ok=False, problems=("routes[0]: bad",))
    assert status.describe()["reload"] == {
        "outcome": "refused",
        "at": 1700000000.25,
        "problems": ["routes[0]: bad"],
        "restart_required": [],
    }
    assert status.problems() == ["the last reload of the config file was refused"]
    status.reloaded(ok=True, restart=("server.port",))
    assert status.problems() == []
    assert status.describe()["reload"]["restart_required"] == ["server.port"]
    assert heard.calls == [("refused", 0), ("reload", False), ("reload", True)]


def test_a_store_that_does_not_answer_is_a_problem_with_its_detail() -> None:
    """The store's last verdict shows under `store`, with why it did not answer."""
    calls = StoreCalls()
    status = ControlStatus(calls, "sqlite")
    calls.mark("no answer within 5 s")
    assert status.describe()["store"] == {
        "backend": "sqlite",
        "up": False,
        "detail": "no answer within 5 s",
    }
    assert status.problems()[0].startswith("store: unreachable (no answer within 5 s)")
    assert ControlStatus().describe()["store"] is None
