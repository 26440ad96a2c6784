"""A model managed on a fake clock, for tests where the schedule of requests is the subject."""

from __future__ import annotations

from appl.models import ManagedModel, get_model
from appl.testing import FakeClock
from appl.types import GenRequest, GenResponse, ModelAPI, TextCallback


class Departures:
    """The real provider of the scripted model, noting the fake time at which each request
    leaves for the server: an observer, the requests are real."""

    def __init__(self, inner: ModelAPI, clock: FakeClock) -> None:
        self.inner, self.clock = inner, clock
        self.times: list[float] = []

    @property
    def name(self) -> str:
        return self.inner.name

    async def generate(
        self, request: GenRequest, *, on_text: TextCallback | None = None
    ) -> GenResponse:
        self.times.append(self.clock.monotonic())
        return await self.inner.generate(request, on_text=on_text)

    async def aclose(self) -> None:  # the scripted fixture closes the real provider
        pass


def on_fake_clock(clock: FakeClock) -> tuple[ManagedModel, Departures]:
    """The scripted model's config and provider, managed on `clock`."""
    plain = get_model()
    departures = Departures(plain.inner, clock)
    return ManagedModel(plain.config, departures, clock=clock), departures
