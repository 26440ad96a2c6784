"""Test helpers for appl programs: a real OpenAI-compatible server with scripted replies.

    from appl.testing import ScriptedServer, Rule

    async with ScriptedServer(rules=[Rule(match="capital of France", reply="Paris")]) as server:
        ...  # point a model at server.base_url

See docs/appl-models.md for rules, faults and the pytest fixture `scripted`. `FakeClock` is
virtual time for code that takes an `appl.clock.Clock` (rate limits, backoff, heartbeats).
"""

from appl.testing._clock import FakeClock
from appl.testing._rules import KNOWN_FAULTS, Reply, Rule, prompt_text
from appl.testing._server import ScriptedServer

__all__ = ["KNOWN_FAULTS", "FakeClock", "Reply", "Rule", "ScriptedServer", "prompt_text"]
