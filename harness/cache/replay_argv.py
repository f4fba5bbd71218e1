"""How `replay.plan` reads a `check`/`lint` command line: the verbs' real options, as data.

Generated from the typer app's option definitions (`harness.cli.app.replay_options`) and
checked against them by tests/cache/test_replay_argv.py, so a new option fails that test
until it is listed here with a policy; at run time an option missing here makes `plan`
refuse to replay. Kept as a plain table because the replay fast path must not import typer.

Each option: (takes a value, policy). Policies:
- `key`: the whole argv is part of the invocation key; nothing else to do;
- `root`: names what the run reads (repo, config): `note_config` fingerprints it;
- `tool`: a binary the run executes: `note_tool` fingerprints it;
- `cache-dir`: where the record lives (and which directory the walk skips);
- `output`: as `key`, except the values in OFF_OUTPUTS (JUnit XML holds the run's duration);
- `off`: never replayed (`--no-cache`; `--html FILE` writes a file; `--help`).
"""

from __future__ import annotations

OFF_OUTPUTS = frozenset({"junit"})

_COMMON: dict[str, tuple[bool, str]] = {
    "--repo": (True, "root"),
    "--config": (True, "root"),
    "--kubectl": (True, "tool"),
    "--kustomize": (True, "tool"),
    "--jobs": (True, "key"),
    "-j": (True, "key"),
    "--timeout": (True, "key"),
    "--strict": (False, "key"),
    "--no-strict": (False, "key"),
    "--quiet": (False, "key"),
    "-q": (False, "key"),
    "--verbose": (False, "key"),
    "-v": (False, "key"),
    "--helm": (False, "key"),
    "--no-helm": (False, "key"),
    "--helm-binary": (True, "tool"),
    "--offline": (False, "key"),
    "--no-cache": (False, "off"),
    "--cache-dir": (True, "cache-dir"),
    "--debug": (False, "key"),
    "--help": (False, "off"),
    "-h": (False, "off"),
}

OPTIONS: dict[str, dict[str, tuple[bool, str]]] = {
    "check": {
        "--output": (True, "output"),
        "-o": (True, "output"),
        "--fail-on-hazard": (True, "key"),
        "--html": (True, "off"),
        "--shard": (True, "key"),
        **_COMMON,
    },
    "lint": {
        "--output": (True, "output"),
        "-o": (True, "output"),
        "--fail-on": (True, "key"),
        "--html": (True, "off"),
        **_COMMON,
    },
}
