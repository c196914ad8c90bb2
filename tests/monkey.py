"""Seeded random key walks over the browser: the keys a user could press right now.

At every step the walker reads the bindings live on the current screen (the focused widget,
its ancestors, the screen and the app: ``Screen.active_bindings``) and adds the keys every
widget understands (arrows, paging, Tab, Enter, Esc, space).  When an input has focus (the
search bar, the export path, the error dialog's path, the command palette) it types one of
:data:`TEXTS` instead: strings that match nothing, invalid regular expressions and
markup-like text.  So the walk reaches every screen the keys lead to: the tree, the
timeline, the search bar, help, warnings, the export dialog and its format list, the
palette, the summaries and findings screens, and the error dialog.

Keys are sent the way a terminal sends them (through the driver, so focus and bindings
decide where each goes) in small bursts, as a user typing fast or holding a key does;
after each burst the walker waits until the screen has handled them.  A burst costs a
few milliseconds, against ~70 ms for ``Pilot.press`` and its idle detection per key.

Quit keys are left out; when the app exits anyway (``Quit`` from the palette), the walk
goes on in a fresh app.  Any exception ends the walk with a :class:`WalkFailure` naming
the trace, the seed and the last keys pressed, so the failure can be replayed.
"""

from __future__ import annotations

import asyncio
import random
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from textual import events
from textual.widgets import Input

#: Keys every widget may receive, whatever the bindings say.
COMMON_KEYS = ("up", "down", "left", "right", "pageup", "pagedown", "home", "end", "tab", "shift+tab",
               "enter", "escape", "space", "shift+up", "shift+down", "shift+left", "shift+right")

#: Text typed into inputs: no match, invalid regexes, markup-like and odd characters, real names.
TEXTS = ("zzzz", "/aten::(mm/", "[bold]x[/bold]", "[red", "[/]", "/(/", "\\", "*", "aten::mm", "gemm",
         "/^aten::.*mm$/", "Memcpy", "nccl", "µs ±", "AddmmBackward0", "  ", "ProfilerStep", "/[/",
         "Kernel", "ncclDevKernel", "x" * 120, "theme", "keys", "help", "warnings",
         # SQL for the query bar (``:``): rows with event ids, a statement without rows, a bad query
         "SELECT event, name, dur_us FROM events ORDER BY dur_us DESC LIMIT 50",
         "SELECT rank, event, kind FROM events LIMIT 20", "FROM kernels", "CREATE VIEW v AS SELECT 1",
         "SELECT * FROM gaps", "SELECT name, count(*) FROM ops GROUP BY ALL")

#: Actions never triggered by the walk: they end the process or suspend it.
FORBIDDEN_ACTIONS = {"quit", "app.quit", "quit_app", "app.quit_app", "suspend_process", "app.suspend_process",
                     "command_quit", "screenshot", "app.screenshot", "app.deliver_screenshot"}
FORBIDDEN_KEYS = {"ctrl+c", "ctrl+q", "ctrl+z", "ctrl+s", "ctrl+backslash"}

#: Actions that open a screen or an input: a burst ends with them, so the next keys reach the
#: new screen once it is composed (Textual's command palette fails when keys arrive before
#: its command list exists; that is Textual's race, not tracetui's).
OPENERS = {"command_palette", "app.command_palette", "help", "warnings", "export", "search", "show_help_panel",
           "close", "cancel", "quit", "escape", "dismiss", "app.pop_screen", "critical_path", "go", "findings",
           "summaries", "query"}


class WalkFailure(AssertionError):
    """A walk hit an exception; the message says how to replay it."""


@dataclass
class Walk:
    """What one walk did: the keys pressed, the screens seen, the apps it needed."""

    label: str
    seed: int
    keys: list[str] = field(default_factory=list)
    screens: set[str] = field(default_factory=set)
    apps: int = 0

    def describe(self, last: int = 60) -> str:
        tail = " ".join(self.keys[-last:])
        return (f"walk over {self.label} failed: seed {self.seed}, after {len(self.keys)} keys; "
                f"last {min(last, len(self.keys))} keys: {tail}")


def _key_event(key: str) -> events.Key:
    char = key if len(key) == 1 else (" " if key == "space" else None)
    return events.Key(key, char)


def _text_keys(text: str) -> list[str]:
    from textual.keys import _character_to_key

    return [c if c.isalnum() else _character_to_key(c) for c in text]


def candidate_keys(app) -> list[str]:
    """Keys worth pressing on the current screen: its live bindings and the common keys."""
    keys = []
    for key, active in app.screen.active_bindings.items():
        action = active.binding.action
        if action in FORBIDDEN_ACTIONS or key in FORBIDDEN_KEYS:
            continue
        keys.append(key)
    return keys + [k for k in COMMON_KEYS if k not in keys]


def _bound_action(app, key: str) -> str | None:
    try:
        active = app.screen.active_bindings.get(key)
    except Exception:  # no screen: the app is gone
        return None
    return active.binding.action if active is not None else None


def next_burst(app, rng: random.Random) -> list[str]:
    """The next few keys: text for a focused input, else bound and common keys."""
    focused = app.focused
    if isinstance(focused, Input) and rng.random() < 0.8:
        keys = _text_keys(rng.choice(TEXTS)) if rng.random() < 0.9 else []
        keys.append(rng.choice(("enter", "enter", "escape", "tab", "backspace")))
        return keys
    pool = candidate_keys(app)
    bound = {key: active.binding.action for key, active in app.screen.active_bindings.items()}
    burst = []
    for _ in range(rng.randint(1, 6)):
        key = rng.choice(pool)
        burst.append(key)
        if bound.get(key) in OPENERS or key == "enter":
            break
    return burst


async def _settle(app, pilot, rounds: int = 1) -> None:
    """Wait until the screen has handled the keys; with ``rounds`` > 1 also until the app's
    own queue is empty (dismissal callbacks, exits), at most ``rounds`` times."""
    for _ in range(rounds):
        await pilot._wait_for_screen()
        await asyncio.sleep(0)
        if not app.message_queue_size:
            break


async def _send(app, pilot, keys: Sequence[str]) -> None:
    driver = app._driver
    for key in keys:
        event = _key_event(key)
        event.set_sender(app)
        driver.send_message(event)
    await _settle(app, pilot)


async def _wait_for_workers(app) -> None:
    """Wait for the app's workers; one cancelled by the app itself (an exclusive worker
    replaced by a newer one, e.g. ``s`` pressed twice) is not a failure, a failed one is."""
    from textual.worker import WorkerCancelled

    for worker in list(app.workers):
        try:
            await worker.wait()
        except WorkerCancelled:
            pass


async def walk(make_app: Callable[[], object], opened: Callable[[object, object], object], *, label: str,
               seed: int, n_keys: int, size: tuple[int, int] = (80, 24), paint_every: int = 24) -> Walk:
    """Press ``n_keys`` random keys (seeded) on apps made by ``make_app``; ``opened(app,
    pilot)`` waits until the app is ready.  Raises :class:`WalkFailure` on any exception.

    Every ``paint_every`` bursts the walk waits for the app to go idle, so screens are
    painted (render crashes show up) and workers (exports) run."""
    rng = random.Random(seed)
    record = Walk(label, seed)
    while len(record.keys) < n_keys:
        app = make_app()
        record.apps += 1
        try:
            async with app.run_test(size=size, notifications=True) as pilot:
                await opened(app, pilot)
                bursts = 0
                while len(record.keys) < n_keys and app.return_code is None:
                    keys = next_burst(app, rng)
                    record.keys.extend(keys)
                    record.screens.add(type(app.screen).__name__)
                    await _send(app, pilot, keys)
                    bursts += 1
                    # Enter, Esc and screen openers may close or push a screen, whose callbacks
                    # (a dismissal's result, the app's exit) run after the screen settles: wait
                    # for them, so no key is sent to an app that is already quitting.
                    if bursts % paint_every == 0:
                        await pilot.pause()
                    elif keys[-1] in ("enter", "escape") or _bound_action(app, keys[-1]) in OPENERS:
                        await _settle(app, pilot, rounds=20)
                    if app._exception is not None:
                        break
                if app.return_code is None:
                    await _wait_for_workers(app)
                    await pilot.pause()
        except Exception as exc:
            # the last frames in the message: a failure under load in CI must say where it happened
            where = "".join(traceback.format_exception(exc, limit=-8))
            raise WalkFailure(f"{record.describe()}\n{type(exc).__name__}: {exc}\n{where}") from exc
    return record
