"""Issue 48, class 3: a live generative model's processor is checked up front. A processor
whose images are not the size the LLaVA's vision config takes is one line naming
``preprocess`` (not every test erroring in transformers' words); ``processor.tokenizer`` given
as ``preprocess`` is told it is a tokenizer, not the processor.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.checklist_text import checklist
from PIL import Image

from pytest_vlcheck import SettingsError, VlcheckUserError, evaluate

CHECKLIST = checklist(extra="    threshold: 0.0\n")


@pytest.fixture(scope="module")
def llava(llava_dir: Path):
    import transformers

    model = transformers.AutoModelForImageTextToText.from_pretrained(llava_dir)
    processor = transformers.AutoProcessor.from_pretrained(llava_dir)
    return model, processor


@pytest.fixture
def checks(tmp_path: Path) -> Path:
    Image.new("RGB", (40, 36), (220, 20, 20)).save(tmp_path / "red.png")
    (tmp_path / "checks.yaml").write_text(CHECKLIST)
    return tmp_path / "checks.yaml"


def test_a_processor_of_another_image_size_is_refused_naming_preprocess(llava, checks) -> None:
    import copy

    model, processor = llava
    size = model.config.vision_config.image_size
    bigger = copy.deepcopy(processor)
    bigger.image_processor.size = {"shortest_edge": 2 * size}
    bigger.image_processor.crop_size = {"height": 2 * size, "width": 2 * size}
    with pytest.raises(SettingsError) as caught:
        evaluate(model, checks, preprocess=bigger, no_cache=True)
    assert str(caught.value) == (
        f"preprocess: gives {2 * size} x {2 * size} images but the model takes {size} x {size}; "
        "expected the image processor of this model (AutoProcessor.from_pretrained)"
    )


def test_the_processors_tokenizer_as_preprocess_is_told_it_is_a_tokenizer(llava, checks) -> None:
    model, processor = llava
    with pytest.raises(VlcheckUserError, match=r"is a \w+, a tokenizer, not the processor") as e:
        evaluate(model, checks, preprocess=processor.tokenizer, no_cache=True)
    assert "holds no tokenizer" not in str(e.value) and "not processor.tokenizer" in str(e.value)


def test_the_matching_processor_still_scores(llava, checks) -> None:
    model, processor = llava
    (result,) = evaluate(model, checks, preprocess=processor, no_cache=True).results
    assert result.status in ("passed", "failed") and result.n == 1
