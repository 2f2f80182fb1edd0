"""docs/architecture.md's module map and reading order must match the modules as they are now.

The map is generated from the files by ``scripts/gen_module_map.py``: a new, moved or renamed module, or a
changed docstring summary, fails here until the doc is regenerated.
"""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "cupynet"
REGENERATE = "python scripts/gen_module_map.py"
ORDER = ["core.py"]

sys.path.insert(0, str(ROOT / "scripts"))
try:
    import gen_module_map as gen
finally:
    sys.path.remove(str(ROOT / "scripts"))


def section(text, begin, end):
    return text.split(begin, 1)[1].split(end, 1)[0]


def package_files(package_dir):
    return sorted(p for p in package_dir.rglob("*.py") if "__pycache__" not in p.parts)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tiny(tmp_path):
    """A package ``pkg`` of three documented modules and a doc holding both pairs of markers."""
    write(tmp_path / "pkg" / "__init__.py", '"""The tiny package."""\n')
    write(tmp_path / "pkg" / "core.py", '"""The core:\nwrapped over two lines.\n\nDetails."""\nx = 1\n')
    write(tmp_path / "pkg" / "sub" / "__init__.py", '"""A subpackage."""\n')
    doc = f"# Title\n\n{gen.ORDER_BEGIN}\n{gen.ORDER_END}\n\nProse.\n\n{gen.MAP_BEGIN}\n{gen.MAP_END}\n"
    return tmp_path / "pkg", doc


def test_committed_doc_matches_the_modules():
    current = DOC.read_text(encoding="utf-8")
    try:
        expected = gen.generate(current)
    except gen.ModuleMapError as error:
        pytest.fail(f"{error}; then regenerate docs/architecture.md: {REGENERATE}")
    assert current == expected, f"docs/architecture.md's module map is out of date; regenerate it: {REGENERATE}"


def test_every_module_is_named_in_the_map():
    mapped = section(DOC.read_text(encoding="utf-8"), gen.MAP_BEGIN, gen.MAP_END)
    missing = []
    for path in package_files(PACKAGE):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if f"- `{name}`:" not in mapped:
            missing.append(name)
    assert not missing, f"docs/architecture.md's module map does not name {missing}; regenerate it: {REGENERATE}"


def test_reading_order_files_exist_with_their_current_line_counts():
    listed = section(DOC.read_text(encoding="utf-8"), gen.ORDER_BEGIN, gen.ORDER_END)
    rows = re.findall(r"^\d+\. `([^`]+)` \(([\d,]+) lines?\)", listed, flags=re.MULTILINE)
    assert rows, f"docs/architecture.md has no generated reading order; regenerate it: {REGENERATE}"
    assert len(rows) <= 15
    assert [path for path, _ in rows] == [f"cupynet/{p}" for p in gen.READING_ORDER]
    for path, lines in rows:
        file = ROOT / path
        assert file.is_file(), f"the reading order names {path}, which does not exist; fix READING_ORDER in " \
                               f"scripts/gen_module_map.py and regenerate: {REGENERATE}"
        now = len(file.read_text(encoding="utf-8").splitlines())
        assert int(lines.replace(",", "")) == now, f"{path} has {now} lines, the reading order says {lines}; " \
                                                   f"regenerate: {REGENERATE}"


def test_hand_written_prose_is_kept():
    text = DOC.read_text(encoding="utf-8")
    for heading in ("## Reading order", "## Where a learner starts", "## Layers", "## Module map"):
        assert heading in text


def test_summary_is_the_first_paragraph_on_one_line():
    assert gen.summary("One line.") == "One line."
    assert gen.summary("First sentence,\n  wrapped.\n\nMore detail.") == "First sentence, wrapped."


def test_map_groups_by_package(tiny):
    package_dir, doc = tiny
    text = gen.generate(doc, package_dir, ORDER)
    mapped = section(text, gen.MAP_BEGIN, gen.MAP_END)
    assert "3 modules." in mapped
    assert "### `pkg` (2 modules)" in mapped
    assert "- `pkg`: The tiny package." in mapped
    assert "- `pkg.core`: The core: wrapped over two lines." in mapped
    assert "### `pkg.sub` (1 module" in mapped
    assert mapped.index("- `pkg`:") < mapped.index("- `pkg.core`:") < mapped.index("- `pkg.sub`:")
    assert "Prose." in text and text.startswith("# Title\n")
    assert gen.generate(text, package_dir, ORDER) == text


def test_a_new_renamed_or_redocumented_module_changes_the_map(tiny):
    package_dir, doc = tiny
    before = gen.generate(doc, package_dir, ORDER)
    write(package_dir / "sub" / "extra.py", '"""Something new."""\n')
    added = gen.generate(before, package_dir, ORDER)
    assert added != before and "- `pkg.sub.extra`: Something new." in added
    (package_dir / "sub" / "extra.py").rename(package_dir / "sub" / "renamed.py")
    renamed = gen.generate(added, package_dir, ORDER)
    assert "pkg.sub.extra" not in renamed and "- `pkg.sub.renamed`:" in renamed
    write(package_dir / "sub" / "renamed.py", '"""Something else."""\n')
    assert "Something else." in gen.generate(renamed, package_dir, ORDER)


def test_pycache_is_skipped(tiny):
    package_dir, doc = tiny
    write(package_dir / "__pycache__" / "core.py", "x = 1\n")
    assert "__pycache__" not in gen.generate(doc, package_dir, ORDER)


def test_a_module_without_a_docstring_is_named(tiny):
    package_dir, doc = tiny
    write(package_dir / "sub" / "bare.py", "x = 1\n")
    write(package_dir / "empty.py", "")
    with pytest.raises(gen.ModuleMapError, match=r"pkg\.sub\.bare \(pkg/sub/bare\.py\)") as error:
        gen.generate(doc, package_dir, ORDER)
    assert "pkg.empty" in str(error.value)


def test_reading_order_refuses_a_missing_file_or_a_long_list(tiny):
    package_dir, _ = tiny
    entries = gen.walk(package_dir)
    assert "1. `pkg/core.py` (5 lines): The core:" in gen.render_reading_order(entries, ["core.py"], "pkg")
    with pytest.raises(gen.ModuleMapError, match="gone.py"):
        gen.render_reading_order(entries, ["core.py", "gone.py"], "pkg")
    with pytest.raises(gen.ModuleMapError, match="at most 15"):
        gen.render_reading_order(entries, ["core.py"] * 16, "pkg")


def test_missing_markers_are_an_error(tiny):
    package_dir, doc = tiny
    with pytest.raises(gen.ModuleMapError, match="marker"):
        gen.generate(doc.replace(gen.MAP_END, ""), package_dir, ORDER)


def test_script_check_mode_reports_a_stale_doc(tmp_path, monkeypatch, tiny, capsys):
    package_dir, doc = tiny
    monkeypatch.setattr(gen, "DOC", tmp_path / "architecture.md")
    monkeypatch.setattr(gen, "PACKAGE", package_dir)
    monkeypatch.setattr(gen, "READING_ORDER", ["core.py"])
    (tmp_path / "architecture.md").write_text(doc, encoding="utf-8")
    assert gen.main(["--check"]) == 1
    assert REGENERATE in capsys.readouterr().err
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    write(package_dir / "bare.py", "x = 1\n")
    assert gen.main(["--check"]) == 2
    assert "pkg.bare" in capsys.readouterr().err


def test_script_runs_from_the_command_line():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_module_map.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    assert ("up to date" in result.stdout) or ("out of date" in result.stderr)
