"""Every local file a model spec names, checked before torch is imported.

A missing config, weights file, model folder or scores file is the user's typo: found at
parse time it is one usage error in a fraction of a second (exit 4 from pytest, a
``SettingsError`` from ``evaluate``), not an errored item per test after torch, open_clip or
transformers took tens of seconds to import. So is an open_clip model-config .json that does
not fit its .safetensors weights (``weight_shapes``: from the file's header). Each scheme
registers one small function that returns what is missing (None when nothing is); the
backends keep their own checks for what needs the library (a hub name, a registry
architecture, a folder's contents).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_vlcheck.errors import ModelSpecError

FileCheck = Callable[[str], "str | None"]
"""A scheme's check: the spec's body in, a "what is missing; what is expected" text out."""

FILE_CHECKS: dict[str, FileCheck] = {}


class SpecFileNotFoundError(ModelSpecError, FileNotFoundError):
    """A local file or folder a ``--vl-model`` spec names does not exist."""


class SpecFilesDisagreeError(ModelSpecError):
    """The files a ``--vl-model`` spec names exist but do not fit each other (a model
    config of another architecture than the weights)."""


def register_file_check(scheme: str) -> Callable[[FileCheck], FileCheck]:
    """Decorator: ``check`` looks at the local files of ``scheme:`` specs."""

    def register(check: FileCheck) -> FileCheck:
        FILE_CHECKS[scheme] = check
        return check

    return register


def check_spec_files(text: str, scheme: str, body: str) -> None:
    """Raise ``SpecFileNotFoundError`` naming the spec when a local file it names is missing,
    ``SpecFilesDisagreeError`` when its files do not fit each other (schemes without a
    registered check name no local file vlcheck can check)."""
    check = FILE_CHECKS.get(scheme)
    try:
        problem = check(body) if check else None
    except SpecFilesDisagreeError as exc:
        raise SpecFilesDisagreeError(f"{text}: {exc}") from None
    if problem is not None:
        raise SpecFileNotFoundError(f"{text}: {problem}")


def _looks_local(text: str) -> bool:
    """A path, not a hub name (``ORG/NAME``): as the backends decide it."""
    return text.startswith((".", "/", "~")) or "\\" in text or text.count("/") > 1


@register_file_check("open_clip")
def _open_clip(body: str) -> str | None:
    from pytest_vlcheck.models.backends.open_clip import WEIGHT_SUFFIXES, split_spec

    arch, pretrained = split_spec(body, lambda name: Path(name).is_file())
    if arch.startswith("local-dir:"):
        folder = Path(arch[len("local-dir:") :]).expanduser()
        if not folder.is_dir():
            return f"directory not found: {folder}; expected a folder with open_clip_config.json"
    elif arch.endswith(".json") and not Path(arch).expanduser().is_file():
        return (
            f"open_clip model config not found: {arch}; expected an existing model-config "
            ".json or a name from open_clip.list_models()"
        )
    if pretrained is None:
        return None
    if Path(pretrained).expanduser().is_file():
        _check_open_clip_fit(arch, Path(pretrained).expanduser())
        return None
    if Path(pretrained).suffix in WEIGHT_SUFFIXES or "/" in pretrained or "\\" in pretrained:
        return (
            f"weights file not found: {pretrained}; expected an existing weights file "
            "(.safetensors preferred) or a pretrained tag"
        )
    return None


def _check_open_clip_fit(arch: str, weights: Path) -> None:
    """A model-config .json beside a .safetensors file: do the header's shapes fit it?"""
    if not arch.endswith(".json") or weights.suffix != ".safetensors":
        return
    from pytest_vlcheck.models.backends.weight_shapes import open_clip_shape_problem

    problem = open_clip_shape_problem(Path(arch).expanduser(), weights)
    if problem is not None:
        raise SpecFilesDisagreeError(problem)


@register_file_check("hf")
def _hf(body: str) -> str | None:
    model, _, base = body.partition("#")
    for part, what in ((model.strip(), "model directory"), (base.strip(), "#BASE directory")):
        # a #BASE folder may hold only a processor (save_pretrained of a processor)
        if problem := _missing_folder(part, what):
            return problem
    return None


@register_file_check("vqa")
def _vqa(body: str) -> str | None:
    """A ``save_pretrained`` folder as ``hf:`` checks it; a served model's ``http(s)://``
    address names no local file."""
    if body.strip().startswith(("http://", "https://")):
        return None
    return _missing_folder(body.strip(), "model directory")


def _missing_folder(part: str, what: str) -> str | None:
    if part and _looks_local(part) and not Path(part).expanduser().exists():
        return (
            f"{what} not found: {part}; expected a directory written by save_pretrained, "
            "or a hub name ORG/NAME"
        )
    return None


@register_file_check("scores")
def _scores(body: str) -> str | None:
    path = Path(body).expanduser()
    if path.is_file():
        return None
    found = "is a directory" if path.is_dir() else "not found"
    return (
        f"scores file {found} (looked for {path.absolute()}); expected a JSON Lines file of "
        "{image, text, score} lines"
    )
