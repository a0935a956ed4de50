"""``until_stopped``: a daemon's wait that a stop ends."""

from __future__ import annotations

import asyncio

import pytest

from headwater.common._stopping import until_stopped


def test_the_work_s_result_when_it_ends_first() -> None:
    async def main() -> int | None:
        return await until_stopped(asyncio.Event(), asyncio.sleep(0, 7))

    assert asyncio.run(main()) == 7


def test_a_stop_cancels_the_work_and_waits_for_it() -> None:
    let_go: list[str] = []

    async def forever() -> int:
        try:
            await asyncio.Event().wait()
        finally:
            let_go.append("held")
        return 1

    async def main() -> int | None:
        stopping = asyncio.Event()
        asyncio.get_running_loop().call_later(0.05, stopping.set)
        return await until_stopped(stopping, forever())

    assert asyncio.run(main()) is None
    assert let_go == ["held"]  # its clean-up ran before until_stopped returned


def test_stopped_already_the_work_never_starts() -> None:
    started: list[int] = []

    async def work() -> int:
        started.append(1)
        return 1

    async def main() -> int | None:
        stopping = asyncio.Event()
        stopping.set()
        return await until_stopped(stopping, work())  # closed: no "never awaited" warning

    assert asyncio.run(main()) is None
    assert started == []


def test_the_work_s_error_is_raised() -> None:
    async def broken() -> int:
        raise ValueError("no")

    async def main() -> int | None:
        return await until_stopped(asyncio.Event(), broken())

    with pytest.raises(ValueError, match="no"):
        asyncio.run(main())
