"""The command line's parser class: an unknown option is reported by the (sub)command it was given to.

``argparse`` hands the arguments a sub-command's parser does not know back to the top-level parser, which then
prints its own usage (``usage: rocketspec [-h] [--version] COMMAND ...``) for ``rocketspec serve --prot 1``. Every
parser of the command line is a :class:`CommandParser` (sub-command parsers take their parent's class), and each one
reports what it was left with itself: ``usage: rocketspec serve ...`` then ``rocketspec serve: error: unrecognized
arguments: --prot 1`` (exit status 2, as before).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose ``parse_known_args`` leaves nothing unrecognized: it reports the rest itself."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None,
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras
