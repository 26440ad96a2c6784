"""What a crash title usually means, in a sentence a small model can act on.

Keyed by syzkaller's title wording, never by a bug's name: these are the readings a kernel
developer brings to any report of that kind (the 1.5B model, told "INFO: task hung in
kgym_div_write" after its patch returned early while holding a mutex, did not connect the hang
with the lock and sent the same early return again). First match wins.
"""

from __future__ import annotations

import re

__all__ = ["crash_hint"]

_HINTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), hint)
    for pattern, hint in (
        (
            r"INFO: task .*hung|hung task|blocked for more than",
            "A task waited forever, usually for a lock: some path leaves without unlocking (check "
            "every return between a lock and its unlock) or takes a lock twice.",
        ),
        (
            r"soft lockup|rcu .*stall|hard lockup",
            "A CPU looped without end: a loop bound or index that comes from the user is not "
            "checked against the size of what it walks.",
        ),
        (
            r"NULL pointer dereference",
            "A pointer that can be NULL (a lookup that found nothing, a failed allocation) is used "
            "without a check: check it and return an error code.",
        ),
        (
            r"divide error|division by zero",
            "A division by a value that can be zero: check the divisor first.",
        ),
        (
            r"refcount",
            "A reference count went wrong: on some path a reference is dropped that was not taken "
            "(or taken and never dropped); make every get and put pair up.",
        ),
        (
            r"double-free|double free",
            "An object is freed twice: on some path it is freed and then freed again or kept in "
            "use; free it once and forget the pointer.",
        ),
        (
            r"use-after-free",
            "An object is used after it was freed: find who frees it while a pointer to it is "
            "still kept.",
        ),
        (
            r"out-of-bounds|out of bounds",
            "An access past the end of a buffer or array: check the index or length against the "
            "size.",
        ),
        (
            r"corrupted list|list_add corruption|list_del corruption",
            "A list node is added twice or removed twice: check whether it is already on the list "
            "before adding it.",
        ),
        (
            r"general protection fault",
            "A bad pointer is dereferenced: freed, never set, or taken from a list or table "
            "entry that is not there.",
        ),
        (
            r"possible deadlock|inconsistent lock state",
            "Locks are taken in different orders or in the wrong context.",
        ),
        (
            r"kernel BUG|BUG_ON",
            "A BUG_ON condition became true: the state it forbids was reached. Refuse that case "
            "with an error code before it happens (where the input arrives), keep the check.",
        ),
        (
            r"WARNING",
            "A WARN_ON condition became true: a caller let the state it checks happen. Refuse "
            "that case with an error code where the input arrives, keep the check.",
        ),
    )
)


def crash_hint(title: str | None) -> str:
    """One sentence on what reports with this title usually mean ("" when none fits)."""
    for pattern, hint in _HINTS:
        if pattern.search(title or ""):
            return hint
    return ""
