"""A plug-in package as ``importlib.metadata`` sees an installed one, made in a test's folder."""

from __future__ import annotations

from pathlib import Path


def install_distribution(site: Path, entry_points: str, module: str) -> None:
    """``module``'s dist-info in ``site`` (METADATA and ``entry_points``); its module's code is
    the caller's to write there."""
    dist = site / f"{module}-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(entry_points, encoding="utf-8")
