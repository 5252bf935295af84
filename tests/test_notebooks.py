"""The notebooks run top to bottom against the test Redis: they cannot rot."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs(path: Path, redis_url: str, key_prefix: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("MEMLANE_KEY_PREFIX", key_prefix)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):  # notebooks fall back to scripted models
        monkeypatch.delenv(name, raising=False)
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    errors = [o for cell in notebook.cells for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
