"""Every exception raised while screening candidate text is the candidate's failure.

A screen reads text written by something rewarded for a `pass`. Whatever that text makes the
screen do (recurse too deep, hit a case our code did not foresee) must end as a class of the
candidate's own, never escape to the runner, which records an escaped exception as
`infra_error`: not cached, scored again by `--retry-infra`, and reported as "the harness
failed, not the candidates". A bug in OUR screen must still be visible, so the unexpected
case is logged with its traceback and the traceback's last frames go into the explanation.

    @screen_guard
    def screen_call(text, ...) -> ScreenedCall: ...   # raises Forbidden / ScreenSyntaxError only
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from ._cscreen import Forbidden, ScreenSyntaxError

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
_FRAMES = 3  # traceback frames kept in the explanation (the log has them all)


def screen_guard(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` raises only Forbidden or ScreenSyntaxError: RecursionError becomes
    forbidden_construct:too_deep, any other exception forbidden_construct:unparsable (and an
    error log with the traceback: it is a bug in the screen, not an attack that worked)."""

    @functools.wraps(fn)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (Forbidden, ScreenSyntaxError):
            raise
        except RecursionError as exc:
            raise Forbidden("too_deep", "the text nests too deeply for the screen") from exc
        except Exception as exc:  # the point: nothing escapes to be read as infra_error
            log.error("screen %s failed on candidate text (a screen bug)", fn.__name__,
                      exc_info=exc)  # fmt: skip
            frames = "".join(traceback.format_exception(exc, limit=-_FRAMES)).strip()
            raise Forbidden(
                "unparsable",
                f"the screen could not read this text (screen bug, logged): {frames}",
            ) from exc

    return guarded
