"""Where tracetui keeps its configuration and its cache, every ``TRACETUI_*`` environment
variable it reads, and the one TOML loader of its rule files.

**Folders** (XDG base directories):

* configuration: ``$XDG_CONFIG_HOME/tracetui`` (``~/.config/tracetui`` when unset): ``config.toml``
  (theme, keymap), ``categories.toml`` (kernel categories, docs/categories.md), ``devices.toml``
  (device peaks, docs/devices.md) and ``findings.toml`` (findings rules, docs/findings.md);
* cache: ``$TRACETUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracetui``, else ``~/.cache/tracetui``
  (parsed traces and stored summaries, :mod:`tracetui.store`).

**Environment variables**: :data:`ENV_VARS` lists each with its default and meaning (the README
table is made from it); :func:`env` refuses a name that is not listed, so none can be read
without being documented.

**TOML**: :func:`load_toml` reads a user file (one-line errors naming the file: not found, not
readable, not TOML); :func:`load_packaged_toml` a default shipped in the package;
:func:`user_file` finds a user file (an environment variable, else the config folder).  The
category rules, the device table and the findings rules all load through these.

**Settings** (``config.toml``, :func:`load_settings`): ``theme`` (a Textual theme name) and
``[keymap]``, binding ids to keys as the ``posting`` app does (``"main.jump_gpu" = "x"``; the
ids are listed by ``?`` in the browser and in ``tracetui/ui/bindings.py``).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import TraceFileError, TraceFormatError
from .units import MB

#: default of ``$TRACETUI_MAX_TRACE_MB``: the most JSON (MB, decompressed) a trace may hold,
#: whatever the memory (a 2M-event trace is about 500 MB)
MAX_TRACE_MB = 8000
#: default of ``$TRACETUI_MAX_EXPANSION``: a compressed trace decompressing to more than this
#: many times the compressed bytes read is a bomb.  The shared traces expand 7-32x under gzip
#: and 8-48x under zstd -19 (docs/security.md); a file of zeros expands 1,032x (gzip)
MAX_EXPANSION = 200
#: the expansion check starts past this much decompressed content (MB): a small file of
#: repeated events may expand 1,000x and is harmless
EXPANSION_FLOOR_MB = 256

#: name -> (default, meaning): every environment variable tracetui reads
ENV_VARS: dict[str, tuple[str, str]] = {
    "TRACETUI_CONFIG": ("$XDG_CONFIG_HOME/tracetui/config.toml", "the settings file (theme, keymap)"),
    "TRACETUI_CATEGORIES": ("$XDG_CONFIG_HOME/tracetui/categories.toml",
                            "kernel category rules tried before the defaults (docs/categories.md)"),
    "TRACETUI_DEVICES": ("$XDG_CONFIG_HOME/tracetui/devices.toml",
                         "device peaks tried before the defaults (docs/devices.md)"),
    "TRACETUI_FINDINGS": ("$XDG_CONFIG_HOME/tracetui/findings.toml",
                          "findings rules overrides: severities, thresholds, enabled (docs/findings.md)"),
    "TRACETUI_CACHE_DIR": ("$XDG_CACHE_HOME/tracetui", "where parsed traces and stored summaries are kept"),
    "TRACETUI_CACHE_MAX_MB": ("4096", f"the cache is pruned (least recently used first) above this size, in {MB}"),
    "TRACETUI_SUBPROCESS_MB": ("96", f"Kineto traces whose JSON is estimated at this many {MB} or more are parsed "
                                     "in a child process"),
    "TRACETUI_LOAD_SUBPROCESS": ("", "1 or 0 forces the parse child process on or off"),
    "TRACETUI_MEMORY_LIMIT_MB": ("", f"a memory limit in {MB} below what the system allows: a trace that needs more "
                                     "is refused in one line (tests use it)"),
    "TRACETUI_MAX_TRACE_MB": (str(MAX_TRACE_MB), f"the most JSON a trace may hold, in {MB} (plain, or once "
                                                 "decompressed): a bigger one is refused in one line"),
    "TRACETUI_MAX_EXPANSION": (str(MAX_EXPANSION), "a compressed trace that decompresses to more than this many times "
                                                   f"its size (once past {EXPANSION_FLOOR_MB} {MB}) is refused as a "
                                                   "decompression bomb (real traces: 7-48x); 0 turns the check off"),
    "TRACETUI_DECODE_WORKERS": ("the available CPUs, at most 4", "processes that decode a big trace (1: serial)"),
    "TRACETUI_CODE_FINGERPRINT": ("a hash of the loader's sources",
                                  "replaces the code fingerprint of cache entries (tests pin it)"),
    "TRACETUI_FUZZ_EXAMPLES": ("the test's own", "examples per hypothesis test (tests, bench/fuzz_long.py)"),
    "TRACETUI_TEXTUAL_FLOOR": ("", "1 inside the test run on the oldest declared Textual (tests/textual_floor.py)"),
    "TRACETUI_FLOOR_ALL": ("", "1: the test run on the oldest declared Textual repeats every UI test file, "
                           "not only the monkey walks and the app's life-cycle tests (tests/textual_floor.py)"),
    "TRACETUI_BACKGROUND": ("1", "0: the browser computes what its screens show (summaries, a job's cross-rank "
                                 "tables) when a screen is first opened, not in the background once the tree is "
                                 "shown (tests set it)"),
}

CONFIG_FILE = "config.toml"


def env(name: str) -> str | None:
    """The value of a listed ``TRACETUI_*`` variable, stripped; None when unset or empty.
    Raises ``KeyError`` for a name not in :data:`ENV_VARS` (every variable is documented)."""
    if name not in ENV_VARS:
        raise KeyError(f"{name} is not a documented tracetui variable (tracetui.config.ENV_VARS)")
    value = os.environ.get(name, "").strip()
    return value or None


def background_work() -> bool:
    """Does the browser compute what its screens show in the background (``TRACETUI_BACKGROUND``
    is not ``0``)?"""
    return env("TRACETUI_BACKGROUND") != "0"


def env_megabytes(name: str, default: float) -> int:
    """A size variable given in MB (SI, 10^6 bytes; :mod:`tracetui.units`), as bytes; the
    default when unset or not a number."""
    try:
        value = float(env(name) or default)
    except ValueError:
        value = float(default)
    return int(value * 1e6)


def config_dir() -> Path:
    """The configuration folder (may not exist)."""
    home = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(home).expanduser() if home else Path.home() / ".config") / "tracetui"


def cache_dir() -> Path:
    """The cache folder (may not exist yet)."""
    explicit = env("TRACETUI_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "tracetui"


def user_file(env_name: str, filename: str) -> Path | None:
    """A user file: ``$<env_name>`` if set (it must then exist: the loader says so), else
    ``<config folder>/<filename>`` if that file exists, else None."""
    explicit = env(env_name)
    if explicit:
        return Path(explicit).expanduser()
    candidate = config_dir() / filename
    return candidate if candidate.is_file() else None


def load_toml(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """The TOML document at ``path``; ``what`` names it in errors (``category rules file``).

    Raises :class:`~tracetui.errors.TraceFileError` when the file is missing or unreadable and
    :class:`~tracetui.errors.TraceFormatError` when it is not TOML (or not UTF-8): one line
    naming the file."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError as exc:
        raise TraceFileError(name, f"{what} not found") from exc
    except OSError as exc:
        raise TraceFileError(name, f"cannot read {what}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TraceFormatError(name, f"not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise TraceFormatError(name, f"not valid TOML: not UTF-8 text ({exc.reason})") from exc


def load_packaged_toml(package: str, resource: str) -> tuple[dict[str, Any], str]:
    """(document, name for errors) of a TOML file shipped in ``package``."""
    text = resources.files(package).joinpath(resource).read_text(encoding="utf-8")
    return tomllib.loads(text), f"<tracetui>/{resource}"


@dataclass(frozen=True)
class Settings:
    """``config.toml``: the Textual theme (None: Textual's default) and the keymap (binding
    id -> keys, comma-separated as in Textual: ``"j,down"``)."""

    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    path: Path | None = None


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """The settings of ``path``, else of :func:`user_file` (``$TRACETUI_CONFIG``, else
    ``config.toml`` in the config folder); defaults when there is none.  One-line errors for a
    bad file: unknown key, a theme or key that is not a string."""
    file = Path(path) if path is not None else user_file("TRACETUI_CONFIG", CONFIG_FILE)
    if file is None:
        return Settings()
    data = load_toml(file, "settings file")
    where = os.fspath(file)
    unknown = sorted(set(data) - {"theme", "keymap"})
    if unknown:
        raise TraceFormatError(where, f"unknown setting {unknown[0]!r} (expected theme, keymap)")
    theme = data.get("theme")
    if theme is not None and not isinstance(theme, str):
        raise TraceFormatError(where, "'theme' must be a string (a Textual theme name)")
    keymap = data.get("keymap", {})
    if not isinstance(keymap, dict):
        raise TraceFormatError(where, "'keymap' must be a table: [keymap] then \"binding.id\" = \"keys\"")
    for key, value in keymap.items():
        if not isinstance(value, str) or not value.strip():
            raise TraceFormatError(where, f"keymap {key!r}: the keys must be a non-empty string "
                                          "(\"x\" or \"x,ctrl+x\")")
    return Settings(theme, {str(k): v.strip() for k, v in keymap.items()}, file)
