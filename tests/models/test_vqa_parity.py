"""VQAScore parity on tiny LLaVA, Qwen2-VL and PaliGemma built offline: the default answer is
scored as the model writes it after the generation prompt, and ``--vl-vqa-preset t2v``
reproduces t2v_metrics' LLaVA-1.5 VQAScore (its version 3.0, the last with a LLaVA scorer)
computed here step by step as that scorer does it.

t2v_metrics itself cannot be the reference here: its 3.0 wheel pins transformers 4.49 and
torch 2.5.1, requires ffmpeg at import and loads its LLaVA from the hub.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_vlcheck import evaluate
from pytest_vlcheck.errors import ModelLoadError, VlcheckUserError
from pytest_vlcheck.models.backends import vqa as vqa_backend
from pytest_vlcheck.models.backends.vqa_prompt import VqaPrompt, VqaPromptError
from pytest_vlcheck.models.protocol import ModelOptions

CPU = ModelOptions(device="cpu")
T2V = ModelOptions(device="cpu", vqa=VqaPrompt(preset="t2v"))
QUESTION = 'Does this figure show "{}"? Please answer yes or no.'
SEPARATOR = {"llava": " ", "qwen": ""}
"""What the builders' chat templates write between the generation prompt and the answer."""


@pytest.fixture(scope="module")
def llava_dummy_prefix(llava_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny LLaVA with a tokenizer that starts each text it is given with ``▁`` (as
    SentencePiece's dummy prefix does), but not a piece after a special token: t2v_metrics'
    piecewise tokenisation then puts an extra ``▁`` after the image, a whole-text one does
    not."""
    folder = tmp_path_factory.mktemp("vqa-parity") / "llava-dummy-prefix"
    shutil.copytree(llava_dir, folder)
    config = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}
    config["pre_tokenizer"]["pretokenizers"].insert(0, metaspace)
    (folder / "tokenizer.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def pictures() -> list[Image.Image]:
    """Wide, tall and square images (the padding to a square matters for the first two)."""
    return [
        Image.new("RGB", (40, 26), (220, 20, 20)),
        Image.new("RGB", (18, 36), (20, 20, 220)),
        Image.new("RGB", (30, 30), (20, 200, 20)),
    ]


# ---- the default answer ----------------------------------------------------------------------


@pytest.mark.parametrize("family", ["llava", "qwen"])
def test_the_default_answer_is_tokenised_as_the_chat_templates_assistant_turn(
    family: str, request: pytest.FixtureRequest
):
    """The scored tokens are those the tokenizer gives the generation prompt followed by the
    answer as the template writes an assistant's turn, and the score is their mean
    log-probability after that prompt."""
    import torch

    scorer = vqa_backend.load(str(request.getfixturevalue(f"{family}_dir")), CPU)
    processor, tokenizer = scorer.processor, scorer.tokenizer
    question = QUESTION.format("a red square")
    user = {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}
    prompt = processor.apply_chat_template([user], add_generation_prompt=True, tokenize=False)
    turn = {"role": "assistant", "content": [{"type": "text", "text": "Yes"}]}
    conversation = processor.apply_chat_template([user, turn], tokenize=False)
    assert conversation.startswith(prompt + SEPARATOR[family] + "Yes")

    prompt_ids = tokenizer(prompt)["input_ids"]
    expected = tokenizer(prompt + SEPARATOR[family] + "Yes")["input_ids"][len(prompt_ids) :]
    assert scorer.answer_tokens("a red square") == expected
    assert tokenizer(conversation)["input_ids"][: len(prompt_ids) + len(expected)] == [
        *prompt_ids,
        *expected,
    ]
    assert scorer.separator == SEPARATOR[family]

    image = pictures()[0]
    inputs = processor(
        images=[image], text=[prompt + SEPARATOR[family] + "Yes"], return_tensors="pt"
    )
    with torch.no_grad():
        log_probs = torch.log_softmax(scorer.model(**inputs).logits[0].double(), dim=-1)
    ids, n = inputs["input_ids"][0], len(expected)
    last = len(ids)
    by_hand = sum(float(log_probs[p, ids[p + 1]]) for p in range(last - n - 1, last - 1)) / n
    assert float(scorer.score_pairs([image], ["a red square"])[0]) == pytest.approx(
        by_hand, abs=1e-5
    )
    assert repr(SEPARATOR[family] + "Yes") in scorer.describe_answer()


def test_paligemma_takes_the_answer_as_its_suffix(paligemma_dir: Path):
    scorer = vqa_backend.load(str(paligemma_dir), CPU)
    processor = scorer.processor
    inputs = processor(
        images=[pictures()[0]], text=[processor.image_token + "q"], suffix=["Yes"],
        return_tensors="pt",
    )  # fmt: skip
    suffix = inputs["input_ids"][0][inputs["token_type_ids"][0] == 1].tolist()
    assert scorer.answer_tokens("x") == suffix[:-1]  # its end-of-sequence token is not scored
    assert suffix[-1] == scorer.tokenizer.eos_token_id
    assert "suffix=" in scorer.describe_answer()


def test_an_answer_spelled_with_its_separator_is_taken_as_written(llava_dir: Path):
    spelled = ModelOptions(device="cpu", vqa=VqaPrompt(answer=" Yes"))
    default = vqa_backend.load(str(llava_dir), CPU)
    assert vqa_backend.load(str(llava_dir), spelled).answer_tokens("a") == (
        default.answer_tokens("a")
    )


def test_a_template_without_an_assistant_turn_falls_back_to_the_prompts_end():
    from pytest_vlcheck.models.backends.vqa_prompt import chat_separator

    class Refusing:
        def __init__(self, end: str) -> None:
            self.end = end

        def apply_chat_template(self, messages: list, **keywords: Any) -> str:
            if len(messages) > 1:
                raise ValueError("this template renders user turns only")
            return "USER: q" + self.end

    assert chat_separator(Refusing(" ASSISTANT:")) == (" ", "the generation prompt's end")
    assert chat_separator(Refusing("<|assistant|>\n")) == ("", "the generation prompt's end")


# ---- --vl-vqa-preset t2v ---------------------------------------------------------------------

T2V_SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)
IMAGE_INDEX, IGNORE = -200, -100


def t2v_reference(scorer: Any, image: Image.Image, text: str) -> tuple[float, list[int]]:
    """t2v_metrics 3.0's LLaVA-1.5 VQAScore of one pair (``LLaVAModel.forward``), written out:
    its prompt with the system message and ``</s>``, its piecewise tokenisation around one
    image placeholder, its labels, its pad-to-square, its encoder (the vision tower's chosen
    layer without CLS, then the projector) spliced in, and exp(-mean cross-entropy). Also the
    ids with the placeholder."""
    import torch

    tokenizer, model = scorer.tokenizer, scorer.model
    question = QUESTION.format(text)
    prompt = T2V_SYSTEM + " USER: " + "<image>" + "\n" + question + " ASSISTANT: "
    full = prompt + "Yes" + "</s>"

    def with_placeholder(text: str) -> list[int]:
        chunks = [tokenizer(chunk).input_ids for chunk in text.split("<image>")]
        offset = 1 if chunks[0] and chunks[0][0] == tokenizer.bos_token_id else 0
        ids = chunks[0][:offset]
        joined: list[list[int]] = []
        for chunk in chunks:
            joined += [chunk, [IMAGE_INDEX] * (offset + 1)]
        for part in joined[:-1]:
            ids += part[offset:]
        return ids

    ids = with_placeholder(full)
    labels = list(ids)
    masked = len(with_placeholder(prompt)) - (1 if prompt.endswith(" ") else 0)
    labels[:masked] = [IGNORE] * masked

    width, height = image.size
    mean = tuple(int(x * 255) for x in scorer.processor.image_processor.image_mean)
    if width > height:
        square = Image.new(image.mode, (width, width), mean)
        square.paste(image, (0, (width - height) // 2))
    elif height > width:
        square = Image.new(image.mode, (height, height), mean)
        square.paste(image, ((height - width) // 2, 0))
    else:
        square = image
    pixels = scorer.processor.image_processor.preprocess(square, return_tensors="pt")
    with torch.no_grad():
        tower = model.model.vision_tower(pixels["pixel_values"], output_hidden_states=True)
        patches = tower.hidden_states[model.config.vision_feature_layer][:, 1:]
        features = model.model.multi_modal_projector(patches)[0]
        at = ids.index(IMAGE_INDEX)
        embed = model.get_input_embeddings()
        embeds = torch.cat(
            [embed(torch.tensor(ids[:at])), features, embed(torch.tensor(ids[at + 1 :]))]
        )
        spliced = labels[:at] + [IGNORE] * len(features) + labels[at + 1 :]
        hidden = model.model.language_model(inputs_embeds=embeds[None]).last_hidden_state
        logits = model.lm_head(hidden)[0]
        loss = torch.nn.functional.cross_entropy(
            logits[:-1], torch.tensor(spliced[1:]), ignore_index=IGNORE
        )
    return float(torch.exp(-loss)), ids


TEXTS = ["a red square", "a tall blue thing on the left", "x"]


@pytest.mark.parametrize("folder", ["llava_dir", "llava_dummy_prefix"])
def test_the_t2v_preset_reproduces_t2v_metrics_llava(folder: str, request: pytest.FixtureRequest):
    scorer = vqa_backend.load(str(request.getfixturevalue(folder)), T2V)
    images = pictures()
    scores = scorer.score_pairs(images, TEXTS)  # one padded batch of three lengths
    for image, text, score in zip(images, TEXTS, scores, strict=True):
        expected, ids = t2v_reference(scorer, image, text)
        assert math.exp(float(score)) == pytest.approx(expected, abs=1e-5)
        assert float(score) == pytest.approx(math.log(expected), abs=1e-5)
        after = ids[ids.index(IMAGE_INDEX) + 1 :]
        newline = scorer.tokenizer.convert_tokens_to_ids("Ċ")
        extra = scorer.tokenizer.convert_ids_to_tokens(after[: after.index(newline)])
        assert extra == (["â", "ĸ", "ģ"] if folder == "llava_dummy_prefix" else [])
    tokens = scorer.tokenizer.convert_ids_to_tokens(scorer.answer_tokens("a"))
    assert tokens[-1] == "</s>"  # the end-of-sequence token is scored
    default = vqa_backend.load(str(request.getfixturevalue(folder)), CPU)
    assert (abs(default.score_pairs(images, TEXTS) - scores) > 1e-3).all()
    assert scorer.fingerprint != default.fingerprint
    asked = (images[:2], ["Which colour?", "What is it?"], ["red", "a square"])
    # the preset is VQAScore's: the generative methods keep the chat template
    assert (
        scorer.score_continuations(*asked).tolist() == default.score_continuations(*asked).tolist()
    )


def test_the_preset_is_one_line_where_it_cannot_apply(qwen_dir: Path, tmp_path: Path):
    with pytest.raises(
        ModelLoadError, match=r"t2v_metrics' LLaVA-1\.5 .* 'qwen2_vl' model"
    ) as info:
        vqa_backend.load(str(qwen_dir), T2V)
    assert "\n" not in str(info.value)
    with pytest.raises(VqaPromptError, match=r"--vl-vqa-preset 't2v' .* 'caption'"):
        VqaPrompt(mode="caption", preset="t2v").check(
            ("--vl-vqa-question", "--vl-vqa-answer", "--vl-vqa-mode", "--vl-vqa-preset")
        )
    with pytest.raises(VlcheckUserError, match="preset t2v builds the model's token ids") as info:
        vqa_backend.load("http://127.0.0.1:9/v1#m", T2V)  # refused before any request
    assert "\n" not in str(info.value)
    checklist = tmp_path / "c.yaml"
    checklist.write_text("vlcheck: 1\ntests: []\n", encoding="utf-8")
    with pytest.raises(VlcheckUserError, match=r"vqa_preset is 'clip'; expected one of \('t2v',\)"):
        evaluate("vqa:anything", checklist, vqa_preset="clip")


# ---- the answer in the run's summary ---------------------------------------------------------

CHECKLIST = """\
vlcheck: 1
tests:
  - id: caption
    capability: attribute/color
    task: caption
    threshold: 0
    examples:
      - {image: red.png, caption: a red square, negatives: [a blue square]}
"""


def test_the_run_block_and_the_summary_say_how_the_answer_was_scored(
    llava_dir: Path, tmp_path: Path
):
    from pytest_vlcheck.run.sinks import TerminalMatrix

    pictures()[0].save(tmp_path / "red.png")
    (tmp_path / "c.yaml").write_text(CHECKLIST, encoding="utf-8")
    run = evaluate(f"m=vqa:{llava_dir}", tmp_path / "c.yaml", device="cpu", no_cache=True)
    answer = run.vqa_answers["m"]
    assert answer.startswith("' Yes' after the generation prompt, separator ' ' from the chat")
    assert answer.endswith("tokens ['Ġ', 'Y', 'e', 's']")
    assert run.to_json()["run"]["vqa_answers"] == {"m": answer}

    class Lines:
        def __init__(self) -> None:
            self.lines: list[str] = []

        def write(self, text: str, **markup: bool) -> None: ...

        def line(self, text: str = "", **markup: bool) -> None:
            self.lines.append(text)

        def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None: ...

    out = Lines()
    TerminalMatrix(out).emit(run)
    assert f"[m] vqa answer: {answer}" in out.lines


def test_merged_shards_agree_on_each_models_answer(tmp_path: Path):
    from pytest_vlcheck.cli.merge_checks import MergeError, check_reports, merged_run
    from pytest_vlcheck.report.loader import ReportDocument
    from pytest_vlcheck.results.run_meta import RunBlock

    def shard(answers: dict[str, str]) -> ReportDocument:
        return ReportDocument([], [], [], RunBlock({"vqa": None}, None, answers))

    one, two = shard({"a": "'Yes': tokens ['Yes']"}), shard({"b": "' Yes': tokens ['▁Yes']"})
    documents = [(tmp_path / "1", one), (tmp_path / "2", two)]
    check_reports(documents)  # each shard records the models it loaded
    merged = merged_run(documents)
    assert merged is not None and one.run is not None and two.run is not None
    assert merged.vqa_answers == {**one.run.vqa_answers, **two.run.vqa_answers}
    other = shard({"a": "' Yes': tokens ['▁Yes']"})
    with pytest.raises(MergeError, match="model 'a' vqa answer"):
        check_reports([(tmp_path / "1", one), (tmp_path / "3", other)])
