"""Exceptions that end a command with exit code 2 and one clear line."""

from __future__ import annotations


class HarnessError(Exception):
    """A user-facing error: the message is printed as is."""


class ConfigError(HarnessError):
    pass


class RendererError(HarnessError):
    """The renderer binary is missing or unusable (not a per-target failure)."""


class GoldensError(HarnessError):
    pass


class GitError(HarnessError):
    pass
