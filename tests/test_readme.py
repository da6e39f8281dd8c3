"""Every ```python block of README.md runs as written (each in a fresh namespace, from a file so
that secant can read the functions' source, in a scratch folder), and a block introduced by
"prints" is exactly what the block before it prints: the documentation cannot drift."""
import pathlib
import re
import runpy

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"(\S*)\s*```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 5
    assert any(lead == "prints" for lead, _ in BLOCKS)


def _run(code, folder, capsys):
    path = folder / "readme_block.py"
    path.write_text(code)
    runpy.run_path(str(path), run_name="__main__")
    return capsys.readouterr().out


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_block(i, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    lead, code = BLOCKS[i]
    if lead == "prints":            # the output of the block before it
        printed = _run(BLOCKS[i - 1][1], tmp_path, capsys)
        assert code in printed, f"README block {i} is not what block {i - 1} prints:\n{printed}"
    else:
        assert _run(code, tmp_path, capsys), "each example block prints what it shows"
