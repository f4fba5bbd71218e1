"""`harness watch`: the diff against the base, answered again after every save.

The loop and what it keeps between answers live in cli/watching.py; this verb prints.
"""

from __future__ import annotations

from harness.cli import watching
from harness.cli.commands import diff as diff_cmd
from harness.cli.context import Common
from harness.report.console import stderr


def run(
    common: Common, options: diff_cmd.DiffOptions, *, once: bool = False, poll: bool = False
) -> int:
    watcher = watching.Watcher(common, options)
    count = 0

    def show(answer: watching.Answer) -> None:
        nonlocal count
        count += 1
        diff_cmd.report(answer.run, options)
        err = stderr()
        same = (
            ""
            if answer.output_changed or count == 1
            else "; no output changed since the last answer"
        )
        err.print(f"watch: answer {count} in {answer.seconds:.2f} s ({answer.rendered}){same}")
        if not once:
            err.print("watch: waiting for changes (Ctrl-C to stop)")

    if once:
        answer = watcher.answer()
        show(answer)
        return answer.run.code
    return watching.loop(watcher, show, poll=poll)
