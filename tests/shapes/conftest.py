"""The shape suite's fixtures: one deployment per shape, shared by the scenarios of a module
(started once per shape, ended after its last scenario), and for each scenario a channel to
every serving process of it. A failing scenario's report carries what the processes logged."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from tests.shapes._channels import Channel, open_channels
from tests.shapes._deployment import Deployment, deployed
from tests.shapes._matrix import SHAPES

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Generator

    from tests.shapes._matrix import Shape


@pytest_asyncio.fixture(
    loop_scope="module", scope="module", params=SHAPES, ids=[shape.id for shape in SHAPES]
)
async def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Deployment]:
    """The shape started: its processes on its own store and state, in front of a mock
    upstream."""
    shape: Shape = request.param
    postgres = request.getfixturevalue("postgres_url") if shape.store == "postgresql" else None
    async with deployed(shape, tmp_path_factory.mktemp(shape.id), postgres) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module")
async def channels(deployment: Deployment) -> AsyncIterator[list[Channel]]:
    """A keep-alive connection to each serving process (each worker of each replica), in
    replica order; closed after the scenario."""
    workers = deployment.shape.workers
    opened = await asyncio.gather(*(open_channels(r, workers) for r in deployment.replicas))
    found = [channel for group in opened for channel in group]
    try:
        yield found
    finally:
        await asyncio.gather(*(channel.aclose() for channel in found))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing scenario's report shows the deployment's process logs."""
    report = yield
    running = getattr(item, "funcargs", {}).get("deployment")
    if report.failed and isinstance(running, Deployment):
        report.sections.append(("turnout serve logs", running.logs()))
    return report
