"""Regenerate docs/amp_ops.md (the AMP op reference) from the op classes' policies.

Usage (from the repository root):
    PYTHONPATH=. python scripts/gen_amp_ops.py           # write docs/amp_ops.md
    PYTHONPATH=. python scripts/gen_amp_ops.py --check   # exit 1 when the committed doc is stale
"""

from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "amp_ops.md"


def generate() -> str:
    """The doc text for the op classes cupynet has now.

    Args:
        None.
    """
    sys.path.insert(0, str(ROOT))
    from cupynet.amp.policy import render_markdown  # noqa: PLC0415 - after the path is set
    from cupynet.ops import OP_CLASSES  # noqa: PLC0415

    return render_markdown(OP_CLASSES)


def main(argv=None) -> int:
    """Write (or with --check, verify) docs/amp_ops.md.

    Args:
        argv: command-line arguments (default: sys.argv[1:]).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the committed doc differs")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is out of date; run: PYTHONPATH=. python scripts/gen_amp_ops.py", file=sys.stderr)
            return 1
        print(f"{DOC} is up to date")
        return 0
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
