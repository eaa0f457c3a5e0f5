"""``vlcheck import FORMAT SRC... -o OUT.yaml``: the sub-command and its handler.

All formats share one parser. A format's own options are declared by its importer and
listed in a help group titled with the format; giving one with another FORMAT is an error
(rather than silently ignored), which is why those options are parsed with no default and
their defaults are filled in only for the chosen format.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vlcheck.checklist.jsonl_writer import JSONL_ABOVE, MODES
from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.cli.output_paths import OutputPathError, check_output_file, check_output_folder
from pytest_vlcheck.importers import FORMATS
from pytest_vlcheck.importers.common import Document, Importer, SourceError, check_loads
from pytest_vlcheck.registry import PluginError

_DESCRIPTION = """\
Turn a benchmark's annotation files into a checklist YAML that pytest-vlcheck runs.

Image references stay as the benchmark writes them (relative paths or URLs); point
--image-root (or pytest's --vl-image-root) at your own copy of the images.
Options listed under "<format> options" apply to that FORMAT only; giving one with
another FORMAT is an error. Thresholds default to each test's chance level (the rate a
guessing model would reach); pass --threshold for a real bar.
"""


@dataclass
class _Option:
    """A format-specific option: who may use it and the default each owner gives it."""

    dest: str
    flag: str
    owners: list[str] = field(default_factory=list)
    defaults: dict[str, Any] = field(default_factory=dict)


class _OptionRecorder:
    """What an importer's ``add_arguments`` sees: ``add_argument`` on its help group,
    recorded so the handler can check ownership and fill defaults."""

    def __init__(self, owner: str, group: Any, registry: dict[tuple[str, ...], _Option]) -> None:
        self._owner = owner
        self._group = group
        self._registry = registry

    def add_argument(self, *flags: str, **kwargs: Any) -> None:
        default = kwargs.pop("default", None)
        if kwargs.get("action") == "store_true" and default is None:
            default = False
        known = self._registry.get(flags)
        if known is not None:  # the same option, shared with an earlier format
            known.owners.append(self._owner)
            known.defaults[self._owner] = default
            return
        action = self._group.add_argument(*flags, default=argparse.SUPPRESS, **kwargs)
        self._registry[flags] = _Option(
            action.dest, flags[-1], [self._owner], {self._owner: default}
        )


@dataclass(frozen=True)
class _FormatOptions:
    """The format-specific options of the parser, resolved once FORMAT is known."""

    options: tuple[_Option, ...]

    def resolve(self, args: argparse.Namespace) -> None:
        """Reject options of other formats; give the chosen format's options their defaults."""
        for option in self.options:
            given = hasattr(args, option.dest)
            if args.format not in option.owners:
                if given:
                    raise _UsageError(
                        f"{option.flag} applies to {_and(option.owners)}, not {args.format}"
                    )
                setattr(args, option.dest, None)
            elif not given:
                setattr(args, option.dest, option.defaults[args.format])


def _and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(filter(None, [", ".join(names[:-1]), names[-1]]))


class _UsageError(Exception):
    """A wrong combination of options (exit status 2, no traceback)."""


def add_import_command(subparsers: Any, plugins: bool = True) -> None:
    """Register ``import`` on the ``vlcheck`` sub-command parsers; it sets ``handler``.

    ``plugins``: also the formats installed packages register (imported here for their
    options and summaries); ``vlcheck`` passes it only when the command is ``import``, so a
    broken plug-in format costs no other command anything. One that cannot be imported is a
    line of the help, and an error only when it is the format asked for.
    """
    loaded, broken = _formats(plugins)
    epilog = "formats:\n" + "\n".join(
        [f"  {name:<15} {importer.summary}" for name, importer in loaded.items()]
        + [f"  {name:<15} (cannot be used: {problem})" for name, problem in broken.items()]
    )
    epilog += (
        "\n\n"
        + with_examples(
            "vlcheck import sugarcrepe sugar-crepe/data -o sc.yaml --image-root coco/val2017",
            "vlcheck import valse VALSE/data -o valse.yaml --image-root coco2017=coco/val2017",
        )["epilog"]
    )
    parser = subparsers.add_parser(
        "import",
        help="convert a benchmark's files into a checklist YAML",
        description=_DESCRIPTION,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "format",
        metavar="FORMAT",
        choices=[*loaded, *broken],
        help="one of: " + ", ".join([*loaded, *broken]),
    )
    parser.add_argument(
        "sources", metavar="SRC", nargs="+", type=Path, help="annotation files or folders of them"
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        type=Path,
        metavar="OUT",
        help="the checklist YAML to write (a folder with vl-checklist --split)",
    )
    parser.add_argument(
        "--image-root",
        metavar="DIR",
        action="append",
        help="where the images are; written into the YAML relative to it "
        "(an absolute DIR stays absolute); NAME=DIR, repeated, gives each image source "
        "of a benchmark that has several (valse) its own folder",
    )
    parser.add_argument(
        "--jsonl",
        choices=MODES,
        default="auto",
        help="write a test's examples to a JSON Lines file beside the YAML (OUT.TEST.jsonl, "
        f"faster to collect): auto (default) for a test of more than {JSONL_ABOVE:,} "
        "examples, always, or never",
    )
    parser.add_argument(
        "--threshold",
        type=_fraction,
        metavar="RATE",
        help="pass-rate threshold of every test, in [0, 1] (default: each test's chance level)",
    )
    registry: dict[tuple[str, ...], _Option] = {}
    for name, importer in loaded.items():
        group = parser.add_argument_group(f"{name} options")
        importer.add_arguments(_OptionRecorder(name, group, registry))
    parser.set_defaults(
        handler=run_import, _vl_format_options=_FormatOptions(tuple(registry.values()))
    )


def _formats(plugins: bool) -> tuple[dict[str, Importer], dict[str, str]]:
    """The formats that import (built-ins, then with ``plugins`` the installed packages'), and
    why each installed one that does not cannot be used."""
    loaded = {name: FORMATS[name] for name in FORMATS.builtin_names}
    broken: dict[str, str] = {}
    for name in FORMATS.plugins() if plugins else ():
        try:
            loaded[name] = FORMATS[name]
        except PluginError as exc:
            broken[name] = str(exc)
    return loaded, broken


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1]")
    return value


CHANCE_THRESHOLDS = (
    "thresholds: each test's chance level (the default), so a model that guesses passes; "
    "pass --threshold RATE for a real bar, or edit each test's threshold"
)


def run_import(args: argparse.Namespace) -> int:
    """The handler: convert, write each output atomically, print one line per file."""
    try:
        args._vl_format_options.resolve(args)
        _check_output(args.output)
        importer = FORMATS[args.format]
        args.image_root, args.image_roots = _image_roots(args, importer)
        outputs = importer.convert(list(args.sources), args)
        targets = _targets(args.output, outputs)
        rendered = [
            _render(path, doc, args, importer)
            for (_, doc), path in zip(outputs, targets, strict=True)
        ]
        check_loads([(path, text) for files in rendered for path, text, _ in files])
        for write_extra in getattr(args, "_vl_extra_writers", ()):  # BiVLC's embedded images
            write_extra(targets[0].parent)
        for (_, doc), files in zip(outputs, rendered, strict=True):
            _write(files, doc)
        if args.threshold is None:
            print(CHANCE_THRESHOLDS)
    except (SourceError, _UsageError, OutputPathError, PluginError) as exc:
        print(f"vlcheck import: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = exc.filename if exc.filename is not None else args.output
        print(f"vlcheck import: {where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


def _image_roots(args: argparse.Namespace, importer: Importer) -> tuple[str | None, dict[str, str]]:
    """The one plain ``--image-root DIR`` and the ``NAME=DIR`` roots of the format's image
    sources (each DIR as the YAML must say it)."""
    plain: list[str] = []
    named: dict[str, str] = {}
    for value in args.image_root or []:
        name, _, directory = value.partition("=")
        if importer.image_sources and directory and name.isidentifier():
            if name not in importer.image_sources:
                raise _UsageError(
                    f"--image-root {value}: no image source '{name}' in {args.format}; "
                    f"expected one of: {', '.join(importer.image_sources)}"
                )
            if name in named:
                raise _UsageError(f"--image-root {name}=... given twice")
            named[name] = _image_root_for(args.output, directory)
        else:
            plain.append(value)
    if plain and named:
        raise _UsageError(
            f"--image-root {plain[0]} and --image-root NAME=DIR together; give one DIR "
            "holding a folder per image source, or NAME=DIR for each source"
        )
    if len(plain) > 1:
        names = ", ".join(importer.image_sources)
        raise _UsageError(
            f"--image-root given {len(plain)} times; {args.format} takes one DIR"
            + (f", or NAME=DIR for each of: {names}" if names else "")
        )
    return (plain[0] if plain else None), named


def _check_output(output: Path) -> None:
    """``-o``: a YAML file in an existing folder, or (a format writing one file per test) a
    folder; checked before the sources are read."""
    if output.suffix.lower() in (".yaml", ".yml"):
        check_output_file(output)
    else:
        check_output_folder(output)


def _targets(output: Path, outputs: list[tuple[str | None, Document]]) -> list[Path]:
    split = [suffix for suffix, _ in outputs if suffix is not None]
    if not split:
        if output.is_dir():
            raise _UsageError(f"-o {output} is a folder; give the YAML file to write")
        return [output]
    if output.suffix.lower() in (".yaml", ".yml"):
        raise _UsageError(
            f"this import writes one file per test; -o {output} must name a folder, not a YAML file"
        )
    return [output / f"{suffix}.yaml" for suffix in split]


def _render(
    path: Path, doc: Document, args: argparse.Namespace, importer: Importer
) -> list[tuple[Path, str, str]]:
    """The files of one output, as (path, text, what it holds): the JSON Lines files of its
    large tests' examples, then the YAML (a header naming the command, then the document)."""
    from pytest_vlcheck.checklist.jsonl_writer import split_examples
    from pytest_vlcheck.checklist.writer import dump_checklist

    if args.image_root:
        doc = _with_image_root(doc, _image_root_for(path, args.image_root))
    doc, moved = split_examples(doc, path.stem, args.jsonl)
    sources = " ".join(str(s) for s in args.sources)
    header = f"# Imported with: vlcheck import {importer.name} {sources}\n"
    files = [
        (path.parent / f.name, f.text, f"{_count(f.count, 'example')} of test '{f.test_id}'")
        for f in moved
    ]
    return [*files, (path, header + dump_checklist(doc), "")]


def _write(files: list[tuple[Path, str, str]], doc: Document) -> None:
    """Each file atomically, the YAML last (it names the others); one line per file."""
    from pytest_vlcheck.atomic import atomic_write_text

    for path, text, holds in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        if not holds:
            tests = doc.get("tests", [])
            examples = sum(len(t.get("examples", [])) for t in tests)
            holds = f"{_count(len(tests), 'test')}, {_count(examples, 'example')}"
        print(f"wrote {path}: {holds}")


def _count(number: int, noun: str) -> str:
    """``1 test``, ``2 tests``."""
    return f"{number} {noun}{'s' * (number != 1)}"


def _image_root_for(path: Path, image_root: str) -> str:
    """``--image-root`` as the YAML must say it: relative to the YAML's folder."""
    root = Path(image_root)
    if root.is_absolute():
        return root.as_posix()
    relative = os.path.relpath(Path.cwd() / root, path.resolve().parent)
    return Path(relative).as_posix()


def _with_image_root(doc: Mapping[str, Any], image_root: str) -> Document:
    out: Document = {"vlcheck": doc["vlcheck"], "image_root": image_root}
    out.update((k, v) for k, v in doc.items() if k not in out)
    return out
