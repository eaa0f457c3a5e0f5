"""Served models (``vqa:http://HOST:PORT/v1#MODEL``) against the project's own test server
(``helpers/served_server.py``: vLLM's chat-completions fields around tiny random LLaVA and Qwen2-VL
models), compared with the in-process ``vqa:`` backend on the same weights."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_vqa import COLOURS, write_squares

from pytest_vlcheck import evaluate
from pytest_vlcheck.errors import ModelLoadError, ModelSpecError, VlcheckUserError
from pytest_vlcheck.models.backends import vqa as vqa_backend
from pytest_vlcheck.models.backends.served import chat
from pytest_vlcheck.models.backends.served.client import ServedError
from pytest_vlcheck.models.backends.served.options import ServedOptions
from pytest_vlcheck.models.backends.served.scorer import ServedIdentityWarning, ServedScorer
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import identify, parse_spec
from pytest_vlcheck.run.settings import SettingsError

HERE = Path(__file__).resolve().parent
KEY_ENV = "VLCHECK_TEST_SERVED_KEY"
SECRET = "s3cr3t-served-key-7f1c9a"
CPU = ModelOptions(device="cpu")


@pytest.fixture(scope="session")
def weights(llava_dir: Path, qwen_dir: Path) -> dict[str, Path]:
    """The session's tiny LLaVA and Qwen2-VL (tests/conftest.py), shared with other tests."""
    return {"llava": llava_dir, "qwen": qwen_dir}


@pytest.fixture(scope="session")
def launched(weights: dict[str, Path]) -> Iterator[dict[str, tuple[subprocess.Popen, str]]]:
    """The test server and ``transformers serve`` (on LLaVA), started together (their
    start-ups overlap), stopped at the end of the worker's session."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent), KEY_ENV: SECRET}
    ours = subprocess.Popen(
        [
            sys.executable,
            str(HERE.parent / "helpers" / "served_server.py"),
            *(f"--model={name}={folder}" for name, folder in weights.items()),
            f"--api-key-env={KEY_ENV}",
        ],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    port = _free_port()
    theirs = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "transformers"),  # transformers[serving], in dev
            "serve",
            str(weights["llava"]),
            "--host=127.0.0.1",
            f"--port={port}",
            "--device=cpu",
            "--log-level=warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        yield {"ours": (ours, ""), "transformers": (theirs, f"http://127.0.0.1:{port}")}
    finally:
        for process in (ours, theirs):
            process.terminate()
            process.wait(timeout=30)


@pytest.fixture(scope="session")
def server(launched: dict[str, tuple[subprocess.Popen, str]]) -> str:
    """The test server's address (``http://127.0.0.1:PORT``), one per test worker."""
    process = launched["ours"][0]
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("PORT "), f"the test server did not start: {line!r}"
    return f"http://127.0.0.1:{int(line.split()[1])}"


@pytest.fixture(scope="session")
def transformers_server(launched: dict[str, tuple[subprocess.Popen, str]]) -> str:
    """``transformers serve`` on the LLaVA folder, once it lists its model."""
    process, address = launched["transformers"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{address}/v1/models", timeout=2) as answer:
                if json.loads(answer.read())["data"]:
                    return address
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"transformers serve did not start (exit status {process.poll()})")


def served(
    server: str, model: str = "qwen", route: str = "", **served_options: object
) -> ServedScorer:
    options = ModelOptions(device="cpu", served=ServedOptions(**served_options))  # type: ignore[arg-type]
    with pytest.warns(ServedIdentityWarning):
        scorer = vqa_backend.load(f"{server}{route}/v1#{model}", options)
    assert isinstance(scorer, ServedScorer)
    return scorer


def pictures() -> list[Image.Image]:
    shades = [*COLOURS.values(), (200, 200, 40), (30, 160, 160)]
    return [Image.new("RGB", (40, 36), colour) for colour in shades]


TEXTS = ["a red square", "a green square", "a blue square", "yellow", "a teal thing"]


@pytest.fixture
def squares(tmp_path: Path) -> Path:
    return write_squares(tmp_path)


def test_pair_scores_and_verdicts_equal_the_in_process_ones(
    server: str, weights: dict[str, Path], squares: Path
):
    """Qwen2-VL's template ends its generation prompt in a newline, so the in-process answer
    follows it as the server's template places the assistant's message."""
    local = vqa_backend.load(str(weights["qwen"]), CPU)
    remote = served(server, concurrency=16)
    images = pictures()
    np.testing.assert_allclose(
        remote.score_pairs(images, TEXTS), local.score_pairs(images, TEXTS), atol=1e-4
    )
    runs = [
        evaluate(spec, squares, no_cache=True, device="cpu", concurrency=16).to_json()["results"]
        for spec in (f"vqa:{weights['qwen']}", f"vqa:{server}/v1#qwen@seed0")
    ]
    assert [(r["test"], r["passed"]) for r in runs[0]] == [
        (r["test"], r["passed"]) for r in runs[1]
    ]
    assert any(r["failures"] for r in runs[0])
    for a, b in zip(*runs, strict=True):
        for fa, fb in zip(a["failures"], b["failures"], strict=True):
            assert fa["id"] == fb["id"]
            np.testing.assert_allclose(fa["scores"], fb["scores"], atol=1e-4)


@pytest.mark.parametrize("family", ["llava", "qwen"])
def test_the_generative_methods_equal_the_in_process_ones(
    server: str, weights: dict[str, Path], family: str
):
    """Qwen's letters are one token each (read by logprob_token_ids); LLaVA's are a space
    and a letter (teacher-forced), as its in-process answer is. Pair scores agree too: the
    in-process answer follows the generation prompt as the server's template places it."""
    local = vqa_backend.load(str(weights[family]), CPU)
    remote = served(server, family)
    images = pictures()[:3]
    np.testing.assert_allclose(
        remote.score_pairs(images, TEXTS[:3]), local.score_pairs(images, TEXTS[:3]), atol=1e-4
    )
    prompts = ["What colour is it? A: red B: green", "Which? A or B", "Say something"]
    np.testing.assert_allclose(
        remote.score_continuations(images, prompts, ["red", "B", "a blue square"]),
        local.score_continuations(images, prompts, ["red", "B", "a blue square"]),
        atol=1e-4,
    )
    np.testing.assert_allclose(
        remote.next_token_logprobs(images, prompts, ["A", "B", "C"]),
        local.next_token_logprobs(images, prompts, ["A", "B", "C"]),
        atol=1e-4,
    )
    assert remote.generate(images, prompts, 6) == local.generate(images, prompts, 6)


def test_answers_come_back_in_plan_order_under_concurrency(server: str, weights: dict[str, Path]):
    """/jitter answers out of order; every pair's score still lands at its own row."""
    images, texts = pictures() + pictures()[:3], TEXTS[::-1] + TEXTS[1:4]
    many = served(server, route="/jitter", concurrency=16).score_pairs(images, texts)
    replicas = vqa_backend.load(
        f"{server}/jitter/v1,{server}/v1#qwen@seed0", ModelOptions(served=ServedOptions(16))
    ).score_pairs(images, texts)
    local = vqa_backend.load(str(weights["qwen"]), CPU).score_pairs(images, texts)
    assert len(set(local.tolist())) == len(local)  # a row out of place would show
    np.testing.assert_allclose(many, local, atol=1e-4)
    np.testing.assert_array_equal(many, replicas)


def test_429_and_5xx_answers_are_retried(server: str):
    images = pictures()[:2]
    np.testing.assert_allclose(
        served(server, route="/flaky", concurrency=2).score_pairs(images, TEXTS[:2]),
        served(server).score_pairs(images, TEXTS[:2]),
        atol=1e-12,
    )


def test_a_plain_chat_api_generates_and_names_the_refused_field(server: str):
    plain = served(server, route="/plain")
    images = pictures()[:2]
    assert plain.generate(images, ["Say", "Say"], 3) == served(server).generate(
        images, ["Say", "Say"], 3
    )
    with pytest.raises(ServedError) as caught:
        plain.score_pairs(images, TEXTS[:2])
    message = str(caught.value)
    assert "refused return_token_ids (HTTP 400" in message and "\n" not in message
    assert "only generation remains possible" in message


def test_transformers_serve_generates_as_in_process_and_refuses_scores_in_one_line(
    transformers_server: str, weights: dict[str, Path]
):
    """A real OpenAI-compatible server without vLLM's fields: its one model id is taken
    (with a warning), generation equals the in-process one, scoring names the field."""
    with pytest.warns(ServedIdentityWarning, match="no @REVISION"):
        remote = vqa_backend.load(f"{transformers_server}/v1", ModelOptions())
    assert isinstance(remote, ServedScorer) and remote.model == str(weights["llava"])
    local = vqa_backend.load(str(weights["llava"]), CPU)
    images, prompts = pictures()[:2], ["Say", "What is it?"]
    assert remote.generate(images, prompts, 6) == local.generate(images, prompts, 6)
    with pytest.raises(ServedError, match=r"refused return_token_ids \(HTTP 422") as caught:
        remote.score_pairs(images, TEXTS[:2])
    assert "only generation remains possible" in str(caught.value)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("spec", "keywords", "pattern"),
    [
        ("http://127.0.0.1:{port}/v1#qwen", {}, r"cannot reach server http://127\.0\.0\.1:\d+/v1"),
        ("{server}/v1#nope", {}, r"serves no model 'nope' \(it serves llava, qwen\)"),
        ("{server}/v1", {}, r"serves 2 models \(llava, qwen\); expected #MODEL"),
        ("{server}/key/v1#qwen", {}, r"refused GET /models \(HTTP 401: invalid API key\)"),
        (
            "{server}/slow/v1#qwen@r",
            {"request_timeout": 1.5},  # /slow sleeps 3 s; GET /models gets 1.5 s on a loaded CI
            r"server http://127\.0\.0\.1:\d+/slow/v1 did not answer POST /chat/completions "
            r"within 1\.5 s",
        ),
        ("{server}/key/v1#qwen", {"api_key_env": "VLCHECK_NOT_SET"}, r"VLCHECK_NOT_SET, which is"),
    ],
)
def test_server_problems_are_one_line(
    server: str, squares: Path, spec: str, keywords: dict, pattern: str
):
    spec = spec.format(server=server, port=_free_port())
    with pytest.raises(VlcheckUserError, match=pattern) as caught:
        evaluate(f"vqa:{spec}", squares, no_cache=True, **keywords)
    assert "\n" not in str(caught.value)


def test_the_api_key_reaches_the_server_and_no_file_or_output(
    pytester: pytest.Pytester,
    server: str,
    weights: dict[str, Path],
    squares: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    """A refused key is one line per item, and the other model's results are reported."""
    for path in squares.parent.iterdir():
        (pytester.path / path.name).write_bytes(path.read_bytes())
    monkeypatch.setenv(KEY_ENV, SECRET)
    args = [f"--vl-api-key-env={KEY_ENV}", "--vl-report=rep", "--vl-cache-dir=cache", "-rA"]
    remote = f"--vl-model=vqa:{server}/key/v1#qwen@seed0"
    good = pytester.runpytest(remote, *args)
    good.assert_outcomes(passed=4)
    monkeypatch.setenv(KEY_ENV, "wrong-key")
    local = f"--vl-model=local=vqa:{weights['qwen']}"
    bad = pytester.runpytest(local, remote, *args, "--vl-no-cache", "--vl-device=cpu")
    bad.assert_outcomes(passed=4, errors=4)
    errors = [line for line in bad.outlines if "HTTP 401" in line]
    assert errors and all(
        "refused GET /models (HTTP 401: invalid API key); expected the API key" in line
        for line in errors
    )
    assert "Traceback" not in bad.stdout.str()
    results = json.loads((pytester.path / "rep" / "matrix.json").read_text(encoding="utf-8"))
    assert [r["status"] for r in results["results"] if r["model"] == "local"] == ["passed"] * 4
    written = [p for p in pytester.path.rglob("*") if p.is_file()]
    assert any("cache" in p.parts for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    for output in (good, bad):
        assert SECRET not in output.stdout.str() + output.stderr.str()


def test_the_client_imports_neither_torch_nor_transformers(server: str):
    code = f"""
import sys, warnings
from PIL import Image
from pytest_vlcheck.models.backends import vqa as vqa_backend
from pytest_vlcheck.models.protocol import ModelOptions
warnings.simplefilter("ignore")
scorer = vqa_backend.load("{server}/v1#qwen", ModelOptions())
scorer.score_pairs([Image.new("RGB", (8, 8))], ["a"])
print(sorted(m for m in ("torch", "transformers") if m in sys.modules))
"""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_fingerprint_is_the_named_model_and_revision_without_a_request():
    spec = parse_spec("vqa:http://127.0.0.1:9/v1,http://127.0.0.2:9/v1#org/model@abc123")
    assert spec.name == "org-model"
    found = identify(spec, CPU, lambda path: "")
    assert found is not None and found.fingerprint.startswith("served:org/model@abc123+")
    assert chat.SCORING_VERSION in found.fingerprint
    other = identify(parse_spec("vqa:http://h:1/v1#org/model@abc124"), CPU, lambda path: "")
    assert other is not None and other.fingerprint != found.fingerprint
    assert identify(parse_spec("vqa:http://h:1/v1"), CPU, lambda path: "") is None
    assert parse_spec("vqa:http://h:1/v1").name == "h-1"


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        ("http://user:pw@h:1/v1#m", r"http://\*\*\*@h:1/v1 carries credentials"),
        ("http://h:1/v1#", r"nothing after '#'"),
        ("http://h:1/v1#m@", r"nothing after '@'"),
        ("http://h:1/v1,ftp://x#m", r"ftp://x is no http\(s\) URL"),
        ("http://h:1/v1,,http://g:1/v1", r"an empty URL is no http\(s\) URL"),
    ],
)
def test_a_malformed_served_spec_is_one_line_at_parse_time(body: str, pattern: str):
    with pytest.raises(ModelSpecError, match=pattern) as caught:
        parse_spec(f"vqa:{body}")
    assert "pw" not in str(caught.value)


@pytest.mark.parametrize(
    ("keywords", "pattern"),
    [
        ({"concurrency": 0}, "concurrency is 0; expected a whole number from 1"),
        ({"request_timeout": 0}, r"request_timeout is 0; expected a finite number in \(0"),
        ({"api_key_env": "sk-live-123"}, "api_key_env is not a variable name"),
    ],
)
def test_bad_served_options_are_one_line(squares: Path, keywords: dict, pattern: str):
    with pytest.raises(SettingsError, match=pattern) as caught:
        evaluate("vqa:http://127.0.0.1:9/v1#m", squares, **keywords)
    assert "sk-live-123" not in str(caught.value)


def test_a_merged_answer_and_an_empty_one_are_refused():
    assert chat.answer_tokens([1, 2], [1, 2, 3, 4], "s") == 2
    with pytest.raises(ModelLoadError, match=r"server s: .*merges across the boundary"):
        chat.answer_tokens([1, 2], [1, 5, 3], "s")
    with pytest.raises(ModelLoadError, match="server s: the answer tokenises to nothing"):
        chat.answer_tokens([1, 2], [1, 2], "s")


def test_an_answer_without_the_extensions_names_the_ignored_field():
    with pytest.raises(ServedError, match="ignored return_token_ids") as caught:
        chat.prompt_ids({"choices": []}, "http://h/v1")
    assert "only generation remains possible" in str(caught.value)
    with pytest.raises(ServedError, match="ignored prompt_logprobs"):
        chat.answer_log_prob({"prompt_token_ids": [1, 2], "prompt_logprobs": [None]}, 1, "s")


def test_images_go_as_png_of_the_loaded_pixels():
    image = Image.new("RGB", (7, 5), (1, 2, 3))
    uri = chat.data_uri(image)
    assert uri.startswith("data:image/png;base64,")
    import base64
    import io

    back = Image.open(io.BytesIO(base64.b64decode(uri.partition(",")[2])))
    assert back.size == (7, 5) and back.convert("RGB").getpixel((3, 3)) == (1, 2, 3)
    assert json.dumps(chat.prefilled("m", uri, "q", "Yes"))  # JSON as sent
