"""The README stays true: its oracle session runs, its commands are the ones CI runs."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from rocketspec.cli import build_parser

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_oracle_session_runs() -> None:
    section = README.split("## Oracle API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(compile(code.group(1), "README.md#oracle-api", "exec"), {})


def test_test_double_session_runs() -> None:
    section = README.split("## Test double", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(compile(code.group(1), "README.md#test-double", "exec"), {})


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert len(commands) >= 2
    test_command = commands[1].strip()
    assert "pytest" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _usage_entries() -> dict[str, str]:
    """The README's usage block: each ``rocketspec <command>`` line with its continuation lines."""
    block = README.split("## Usage", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        if line.startswith("rocketspec "):
            words = []
            for word in line.split()[1:]:
                if not re.fullmatch(r"[a-z][a-z-]*", word):
                    break
                words.append(word)
            current = " ".join(words)
            entries[current] = line
        elif current:
            entries[current] += " " + line.strip()
    return entries


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Every command of the parser, by its words, with the long options ``--help`` shows for it."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {" ".join(path): {o for a in parser._actions for o in a.option_strings
                                 if o.startswith("--") and o != "--help"}}
    found: dict[str, set[str]] = {}
    for name, sub in subs[0].choices.items():
        found.update(_commands(sub, (*path, name)))
    return found


def test_the_usage_block_has_every_command_and_option() -> None:
    """README's usage block is complete against the command line's parsers (what ``--help`` prints)."""
    entries = _usage_entries()
    missing = []
    for command, options in sorted(_commands(build_parser()).items()):
        text = entries.get(command)
        if text is None:
            missing.append(f"rocketspec {command} is not in the usage block")
            continue
        missing += [f"rocketspec {command}: {o}" for o in sorted(options) if not re.search(re.escape(o) + r"(?![\w-])",
                                                                                           text)]
    assert not missing, "\n".join(missing)
