"""``vlcheck render FILE -o DIR``: write a checklist's images and an index to look at them.

Authors of generated checklists need to see what the scenes look like next to the captions
that claim to describe them. Every unique image (scenes rendered, files and crops loaded)
is written once as a PNG named by a hash of its identity; ``index.html`` and ``index.md``
list each test's examples with their texts and image links.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_vlcheck import bounds, fmt
from pytest_vlcheck.checklist.schema import ChecklistTest
from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.cli.output_paths import OutputPathError, check_output_folder
from pytest_vlcheck.images.refs import ImageKey, ImageRef, ImageUnavailable
from pytest_vlcheck.tasks import get_task
from pytest_vlcheck.tasks.protocol import Example

THUMB = 112  # width of the images in index.html, pixels

Selected = tuple[ChecklistTest, list[Example]]
"""A test and the examples of it the page shows."""


def add_render_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``render`` on the ``vlcheck`` command's subparsers."""
    parser = subparsers.add_parser(
        "render",
        help="write a checklist's images (scenes rendered) and an index for people to read",
        description="Render every unique image of a checklist to PNG in DIR/images and write "
        "DIR/index.html and DIR/index.md listing each example's texts and images.",
        **with_examples(
            "vlcheck render checklists/attribute.yaml -o rendered/",
            "vlcheck render my.yaml -o out/ --limit 20",
        ),
    )
    parser.add_argument("file", type=Path, metavar="FILE", help="a checklist YAML file")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR")
    parser.add_argument(
        "--test", action="append", default=None, metavar="ID", help="only this test (repeatable)"
    )
    parser.add_argument(
        "--limit",
        type=bounds.argument(bounds.whole_number, 1, 2**63 - 1),
        default=None,
        metavar="N",
        help="at most N examples per test",
    )
    parser.add_argument("--image-root", type=Path, default=None, help="like --vl-image-root")
    parser.set_defaults(handler=run_render)


@dataclass(frozen=True)
class _Shown:
    """One image as the index shows it: a file name under images/, or why it is missing."""

    ref: ImageRef
    name: str | None
    error: str | None = None


def image_name(ref: ImageRef) -> str:
    """A stable file name for an image's identity (source, location and crop)."""
    perturb = [ref.perturb.canonical()] if ref.perturb is not None else []
    key = json.dumps([ref.kind, ref.location, ref.crop, ref.crop_relative, *perturb])
    return hashlib.sha256(key.encode()).hexdigest()[:20] + ".png"


def run_render(args: argparse.Namespace) -> int:
    """Handler of ``vlcheck render``: 0 when every image was written, 1 when some could not
    be loaded, 2 for a bad checklist or arguments."""
    from pytest_vlcheck.checklist.loader import load_checklist
    from pytest_vlcheck.parsing.errors import ChecklistError

    try:
        checklist = load_checklist(args.file, image_root=args.image_root)
    except ChecklistError as exc:
        print(exc, file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"vlcheck render: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    tests = list(checklist.tests)
    if args.test:
        known = {t.id for t in tests}
        unknown = [t for t in args.test if t not in known]
        if unknown:
            print(
                f"vlcheck render: {args.file}: no test {unknown[0]!r}; tests are "
                f"{', '.join(sorted(known))}",
                file=sys.stderr,
            )
            return 2
        tests = [t for t in tests if t.id in args.test]
    selected = [(t, list(t.examples[: args.limit])) for t in tests]
    try:
        check_output_folder(args.output)
        (args.output / "images").mkdir(parents=True, exist_ok=True)
    except OutputPathError as exc:
        print(f"vlcheck render: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"vlcheck render: cannot create {args.output / 'images'}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    shown = _write_images(
        args.output, (r for t, exs in selected for e in exs for r in get_task(t.task).grid(e)[0])
    )
    from pytest_vlcheck.atomic import atomic_write_text

    title = f"{args.file}"
    atomic_write_text(args.output / "index.html", _html(title, selected, shown))
    atomic_write_text(args.output / "index.md", _markdown(title, selected, shown))
    missing = sum(1 for s in shown.values() if s.error)
    print(
        f"vlcheck render: {fmt.plural(len(shown) - missing, 'image')} and index.html, index.md "
        f"written to {args.output}"
    )
    if missing:
        print(
            f"vlcheck render: {fmt.plural(missing, 'image')} could not be loaded (see the index)",
            file=sys.stderr,
        )
        return 1
    return 0


def _write_images(out: Path, refs: Iterator[ImageRef]) -> dict[ImageKey, _Shown]:
    from pytest_vlcheck.atomic import atomic_write_bytes
    from pytest_vlcheck.images.loading import ImageLoader

    loader = ImageLoader()
    shown: dict[ImageKey, _Shown] = {}
    for ref in refs:
        if ref.key in shown:
            continue
        try:
            image = loader(ref)
        except ImageUnavailable as exc:
            shown[ref.key] = _Shown(ref, None, str(exc))
            continue
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        name = image_name(ref)
        atomic_write_bytes(out / "images" / name, buffer.getvalue())
        shown[ref.key] = _Shown(ref, name)
    return shown


def _test_heading(test: ChecklistTest, shown_count: int) -> str:
    return (
        f"{test.id}: {test.capability}, task {test.task}, threshold {test.threshold}, "
        f"{shown_count} of {len(test.examples)} examples"
    )


def _html_image(shown: _Shown) -> str:
    if shown.name is None:
        return (
            f"<span class=missing>{html.escape(shown.ref.describe())}: "
            f"{html.escape(shown.error or '')}</span>"
        )
    alt = html.escape(shown.ref.describe(), quote=True)
    return (
        f'<a href="images/{shown.name}"><img src="images/{shown.name}" width={THUMB} '
        f'alt="{alt}" title="{alt}"></a>'
    )


def _html(title: str, selected: list[Selected], shown: dict[ImageKey, _Shown]) -> str:
    parts = [
        "<!doctype html>",
        "<meta charset=utf-8>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif}td{vertical-align:top;padding:4px}"
        "img{image-rendering:pixelated;border:1px solid #ccc}.missing{color:#b00}"
        ".neg{color:#b00}</style>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for test, examples in selected:
        parts.append(f"<h2>{html.escape(_test_heading(test, len(examples)))}</h2>")
        if test.description:
            parts.append(f"<p>{html.escape(test.description)}</p>")
        parts.append(
            "<table><tr><th>example</th><th>role</th><th>text</th><th>images</th><th>tags</th></tr>"
        )
        for example in examples:
            tags = ", ".join(f"{k}={v}" for k, v in sorted(example.tags.items()))
            for i, (label, texts, refs) in enumerate(get_task(test.task).rows(example)):
                cls = ' class="neg"' if label in ("negatives", "distractors") else ""
                text = "<br>".join(html.escape(t) for t in texts)
                images = " ".join(_html_image(shown[r.key]) for r in refs)
                first = f"<td>{html.escape(example.id)}</td>" if i == 0 else "<td></td>"
                tag_cell = f"<td>{html.escape(tags)}</td>" if i == 0 else "<td></td>"
                parts.append(
                    f"<tr>{first}<td>{html.escape(label)}</td><td{cls}>{text}</td>"
                    f"<td>{images}</td>{tag_cell}</tr>"
                )
        parts.append("</table>")
    return "\n".join(parts) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_image(shown: _Shown) -> str:
    if shown.name is None:
        return _md_cell(f"(missing: {shown.ref.describe()}: {shown.error})")
    return f"![{shown.ref.kind}](images/{shown.name})"


def _markdown(title: str, selected: list[Selected], shown: dict[ImageKey, _Shown]) -> str:
    lines = [f"# {title}", ""]
    for test, examples in selected:
        lines += [f"## {_test_heading(test, len(examples))}", ""]
        if test.description:
            lines += [_md_cell(test.description), ""]
        lines += ["| example | role | text | images |", "|---|---|---|---|"]
        for example in examples:
            for i, (label, texts, refs) in enumerate(get_task(test.task).rows(example)):
                ex_id = _md_cell(example.id) if i == 0 else ""
                text = "<br>".join(_md_cell(t) for t in texts)
                images = " ".join(_md_image(shown[r.key]) for r in refs)
                lines.append(f"| {ex_id} | {label} | {text} | {images} |")
        lines.append("")
    return "\n".join(lines)
