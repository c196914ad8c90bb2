"""TOML in: the user's rules and settings files (kernel categories, device peaks, findings),
read with one set of one-line errors naming the file."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from ..errors import TraceFileError, TraceFormatError


def read_toml(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """The parsed TOML of ``path``; ``what`` names the file in errors ("category rules").

    Raises :class:`~tracetui.errors.TraceFileError` when the file cannot be read and
    :class:`~tracetui.errors.TraceFormatError` when it is not TOML (or not UTF-8)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError as exc:
        raise TraceFileError(name, f"{what} file not found") from exc
    except OSError as exc:
        raise TraceFileError(name, f"cannot read {what}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TraceFormatError(name, f"not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise TraceFormatError(name, f"not valid TOML: not UTF-8 text ({exc.reason})") from exc


def user_file(env_var: str, file_name: str) -> Path | None:
    """The user's settings file: ``$<env_var>`` if set and non-empty (it must then exist),
    else ``$XDG_CONFIG_HOME/tracetui/<file_name>`` (``~/.config`` when ``XDG_CONFIG_HOME`` is
    unset) if that file exists, else None."""
    env = os.environ.get(env_var, "").strip()
    if env:
        return Path(env).expanduser()
    home = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".config")
    candidate = Path(home) / "tracetui" / file_name
    return candidate if candidate.is_file() else None
