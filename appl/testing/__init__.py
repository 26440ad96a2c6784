"""Test helpers for appl programs: a real OpenAI-compatible server with scripted replies.

    from appl.testing import ScriptedServer, Rule

    async with ScriptedServer(rules=[Rule(match="capital of France", reply="Paris")]) as server:
        ...  # point a model at server.base_url

See docs/appl-models.md for rules, faults and the pytest fixture `scripted`.
"""

from appl.testing._rules import KNOWN_FAULTS, Reply, Rule, prompt_text
from appl.testing._server import ScriptedServer

__all__ = ["KNOWN_FAULTS", "Reply", "Rule", "ScriptedServer", "prompt_text"]
