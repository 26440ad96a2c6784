"""appl: prompts inside ordinary Python functions, run by a parallel dataflow runtime.

    from appl import ppl, gen

    @ppl
    def answer(question: str):
        "Answer in one word."
        question
        return gen()

    print(answer("Capital of France?"))   # a sync call runs the loop for the program

Every `gen` returns a future at once and its request goes out as soon as the futures in its
prompt have resolved, so independent calls run in parallel without any asyncio in user code.
See docs/appl.md.
"""

from importlib import metadata as _metadata
from typing import TYPE_CHECKING, Any

from appl.accounting import Budget, budget, current_usage
from appl.config import configure, get_config, load_config
from appl.core import PplFunction, current_prompt, gen, ppl, role, run
from appl.errors import (
    ApplError,
    BudgetExceededError,
    ClientRequestError,
    ConfigError,
    ContextOverflowError,
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
    RateLimitError,
    ReplayMissError,
    ServerError,
    StructuredOutputError,
    ToolError,
)
from appl.events import Event, add_listener, listening, remove_listener
from appl.future import GenFuture, GenResult
from appl.identity import CallIdentity
from appl.models import close_models, get_model
from appl.prompt import (
    AIMessage,
    BulletList,
    NumberedList,
    PromptText,
    Section,
    SystemMessage,
    Tagged,
    UserMessage,
    join,
)
from appl.runtime import resolve_model, set_model_resolver, use_model_resolver
from appl.tools import Tool, ToolResult, tool
from appl.types import GenRequest, GenResponse, Message, ModelAPI, ToolCall, ToolSpec, Usage

if TYPE_CHECKING:
    from appl.compiler import CompilerResult, ReactResult, RoundLimitError, run_compiler, run_react

# Imported on first use: the compiler is a separate layer with its own imports.
_LAZY = {
    "CompilerResult": "appl.compiler",
    "ReactResult": "appl.compiler",
    "RoundLimitError": "appl.compiler",
    "run_compiler": "appl.compiler",
    "run_react": "appl.compiler",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


try:  # the installed distribution's version: one number for the four packages and their CLIs
    __version__ = _metadata.version("codegen-lab")
except _metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AIMessage",
    "ApplError",
    "Budget",
    "BudgetExceededError",
    "BulletList",
    "CallIdentity",
    "ClientRequestError",
    "CompilerResult",
    "ConfigError",
    "ContextOverflowError",
    "Event",
    "GenFuture",
    "GenRequest",
    "GenResponse",
    "GenResult",
    "Message",
    "ModelAPI",
    "ModelConnectionError",
    "ModelError",
    "ModelTimeoutError",
    "NumberedList",
    "PplFunction",
    "PromptText",
    "RateLimitError",
    "ReactResult",
    "ReplayMissError",
    "RoundLimitError",
    "Section",
    "ServerError",
    "StructuredOutputError",
    "SystemMessage",
    "Tagged",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "__version__",
    "add_listener",
    "budget",
    "close_models",
    "configure",
    "current_prompt",
    "current_usage",
    "gen",
    "get_config",
    "get_model",
    "join",
    "listening",
    "load_config",
    "ppl",
    "remove_listener",
    "resolve_model",
    "role",
    "run",
    "run_compiler",
    "run_react",
    "set_model_resolver",
    "tool",
    "use_model_resolver",
]
