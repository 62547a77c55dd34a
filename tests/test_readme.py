"""The README's Python example runs as written (real packaged MiniLM)."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_readme_python_example_runs():
    text = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no Python example"
    scope: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), scope)
    hidden = scope["hidden"]
    assert hidden.x.shape == (4, 384) and hidden.y.shape == (4, 2)
