"""The exit codes of ``robot-ik-nn``: one table for every command (docs/cli.md says the same,
and test_cli compares them). A leaf: the commands import it, and it imports none of them.
"""

from __future__ import annotations

import textwrap

# The exit codes, one table for every command (docs/cli.md says the same; a test compares them):
# solve, send, resume and stop answer with these; the rest use 0, 1, 2, 130 and 141.
SOLVED, FAILED, USAGE, BEST_EFFORT, REJECTED, HELD, NO_ANSWER = 0, 1, 2, 3, 4, 5, 6
EXIT_CODES = (
    (SOLVED, "solved: every target asked for, within the tolerances (send: and commanded, the "
     "arm free to move; resume, stop: done)"),
    (FAILED, "failed: a part this install lacks, or an unexpected error (a traceback)"),
    (USAGE, "usage error: a bad option, value or file (the message names it)"),
    (BEST_EFFORT, "best effort: an answer short of the tolerances, printed with how far (solve "
     "--path: a target missed or a step over --max-step left)"),
    (REJECTED, "rejected: no answer, or one the safety checks refuse to command (the reason "
     "printed; resume, stop: the arm node refused)"),
    (HELD, "held: send's answer commanded, but the arm holds (before resume, after stop): "
     "nothing moved"),
    (NO_ANSWER, "no answer: no session running, or nothing answered within --timeout (the "
     "node or service named)"),
    (130, "interrupted (Ctrl-C)"),
    (141, "the reader of the output went away (piped into head)"),
)


def exit_codes_text() -> str:
    """The table of exit codes, for --help's epilog."""
    rows = (
        textwrap.fill(text, 79, initial_indent=f"  {code:>3}  ", subsequent_indent=" " * 7)
        for code, text in EXIT_CODES
    )
    return "exit codes:\n" + "\n".join(rows)
