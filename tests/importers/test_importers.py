"""``vlcheck import``: every format on its fixture, the command's options and its errors."""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_vlcheck.checklist.loader import load_checklist
from pytest_vlcheck.checklist.writer import dump_checklist
from pytest_vlcheck.cli.import_command import add_import_command
from pytest_vlcheck.importers import FORMATS
from pytest_vlcheck.importers.aro import normalize
from pytest_vlcheck.importers.common import chance_level

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="vlcheck")
    add_import_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["import", *argv])
    return args.handler(args)


def imported(
    tmp_path: Path, fmt: str, *sources: Path | str, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Import, check the file loads with the real loader, return the YAML as data."""
    out = tmp_path / f"{fmt}.yaml"
    assert run([fmt, *map(str, sources), "-o", str(out), *extra]) == 0
    load_checklist(out)
    return yaml.safe_load(out.read_text(encoding="utf-8"))


def fails(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    fmt: str,
    *sources: Path | str,
    extra: tuple[str, ...] = (),
) -> str:
    """Import that must fail with exit status 2; the one-line message on stderr."""
    out = tmp_path / "never.yaml"
    assert run([fmt, *map(str, sources), "-o", str(out), *extra]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.startswith("vlcheck import: ") and "Traceback" not in err
    return err.strip()


def examples_of(doc: dict[str, Any], test_id: str) -> dict[str, dict[str, Any]]:
    (test,) = [t for t in doc["tests"] if t["id"] == test_id]
    return {e["id"]: e for e in test["examples"]}


def test_formats_registry_names_every_format() -> None:
    assert set(FORMATS) == {
        "vl-checklist",
        "sugarcrepe",
        "sugarcrepe-pp",
        "predicate-noun",
        "compun",
        "svo-probes",
        "aro",
        "winoground",
        "valse",
        "negbench",
        "crepe",
        "colorswap",
        "eqben",
        "vismin",
        "whatsup",
        "mmvp",
        "cola",
        "spec",
        "bivlc",
        "pope",
        "naturalbench",
    }


# ---------------------------------------------------------------- sugarcrepe


def test_sugarcrepe_one_test_per_set_with_source_ids(tmp_path: Path, capsys) -> None:
    doc = imported(tmp_path, "sugarcrepe", FIXTURES / "sugarcrepe")
    wrote, thresholds = capsys.readouterr().out.strip().splitlines()
    assert wrote.endswith("sugarcrepe.yaml: 2 tests, 5 examples")
    assert thresholds.startswith("thresholds") and "--threshold RATE" in thresholds
    assert [(t["id"], t["capability"], t["task"], t["threshold"]) for t in doc["tests"]] == [
        ("replace_att", "attribute/replace", "caption", 0.5),
        ("swap_obj", "object/swap", "caption", 0.5),
    ]
    att = examples_of(doc, "replace_att")
    assert list(att) == ["0", "1", "5"]
    assert att["5"] == {
        "id": "5",
        "image": "000000000103.jpg",
        "caption": "A striped umbrella on the sand.",
        "negatives": ["A spotted umbrella on the sand."],
    }


def test_sugarcrepe_reads_the_early_entity_names(tmp_path: Path, capsys) -> None:
    old = tmp_path / "data" / "swap_ent.json"
    old.parent.mkdir()
    old.write_text((FIXTURES / "sugarcrepe" / "swap_obj.json").read_text())
    doc = imported(tmp_path, "sugarcrepe", old)
    assert [(t["id"], t["capability"]) for t in doc["tests"]] == [("swap_obj", "object/swap")]
    err = fails(capsys, tmp_path, "sugarcrepe", old, FIXTURES / "sugarcrepe" / "swap_obj.json")
    assert "set 'swap_obj' given twice" in err


def test_sugarcrepe_rejects_an_unknown_set_name(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "replace_everything.json"
    bad.write_text("{}")
    err = fails(capsys, tmp_path, "sugarcrepe", bad)
    assert f"{bad}: 'replace_everything' is not a SugarCrepe set" in err


def test_sugarcrepe_missing_field_names_the_record(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "swap_att.json"
    bad.write_text(json.dumps({"17": {"filename": "x.jpg", "caption": "a b"}}))
    err = fails(capsys, tmp_path, "sugarcrepe", bad)
    assert err == f"vlcheck import: {bad}: record 17: missing field 'negative_caption'"


def test_json_syntax_error_gives_file_and_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "add_obj.json"
    bad.write_text('{\n "0": {"filename": "a.jpg",\n  "caption": oops}\n}')
    err = fails(capsys, tmp_path, "sugarcrepe", bad)
    assert err.startswith(f"vlcheck import: {bad}:3: invalid JSON")


# ---------------------------------------------------------------- predicate-noun


def test_predicate_noun_pairs_counter_balanced_triplets(tmp_path: Path) -> None:
    doc = imported(tmp_path, "predicate-noun", FIXTURES / "predicate_noun" / "eval_set.json")
    (test,) = doc["tests"]
    assert (test["id"], test["task"], test["criterion"], test["threshold"]) == (
        "predicate_noun",
        "group",
        "text",
        0.25,
    )
    pairs = examples_of(doc, "predicate_noun")
    assert list(pairs) == ["0-1", "2-3"]
    # ([I1, S1, S2], [I2, S2, S1]) -> images [I1, I2], captions [S1, S2]
    assert pairs["0-1"]["images"] == ["aa01.jpg", "aa02.jpg"]
    assert pairs["0-1"]["captions"] == ["a man is riding a horse", "a man is holding a guitar"]
    assert pairs["0-1"]["tags"] == {"distractor": "predicate"}  # pos: object
    assert pairs["2-3"]["tags"] == {"distractor": "noun"}  # pos: subject


def test_predicate_noun_crop_and_alternative_template(tmp_path: Path) -> None:
    doc = imported(
        tmp_path,
        "predicate-noun",
        FIXTURES / "predicate_noun" / "eval_set.json",
        extra=("--crop", "--alt-sentences"),
    )
    pairs = examples_of(doc, "predicate_noun_cropped")
    assert pairs["0-1"]["images"] == [
        {"path": "aa01.jpg", "crop_relative": [0.1, 0.2, 0.5, 0.6]},
        {"path": "aa02.jpg", "crop_relative": [0.25, 0.0, 0.5, 1.0]},
    ]
    assert pairs["2-3"]["captions"] == ["the woman wears a hat", "the boy wears a hat"]
    loaded = load_checklist(tmp_path / "predicate-noun.yaml").tests[0].examples[0]
    assert loaded.images[1].crop == (0.25, 0.0, 0.5, 1.0) and loaded.images[1].crop_relative


def _pn_records() -> list[dict[str, Any]]:
    return json.loads((FIXTURES / "predicate_noun" / "eval_set.json").read_text())


def test_predicate_noun_rejects_a_pair_that_is_not_counter_balanced(tmp_path: Path, capsys) -> None:
    records = _pn_records()
    records[3]["sentence_distractor"] = "a girl is wearing a hat"
    bad = tmp_path / "eval_set.json"
    bad.write_text(json.dumps(records))
    err = fails(capsys, tmp_path, "predicate-noun", bad)
    assert err.startswith(
        f"vlcheck import: {bad}: record 2: records 2 and 3 are not counter-balanced"
    )


def test_predicate_noun_rejects_an_odd_count_and_a_gap(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "eval_set.json"
    bad.write_text(json.dumps(_pn_records()[:3]))
    assert "3 records; the counter-balanced pairs need an even number" in fails(
        capsys, tmp_path, "predicate-noun", bad
    )
    records = _pn_records()
    records[1]["id"] = 5
    bad.write_text(json.dumps(records))
    assert "records 0 and 2 would be paired" in fails(capsys, tmp_path, "predicate-noun", bad)


# ---------------------------------------------------------------- compun


def test_compun_image_task_with_naming_convention(tmp_path: Path) -> None:
    doc = imported(tmp_path, "compun", FIXTURES / "compun" / "Compun.csv")
    (test,) = doc["tests"]
    assert (test["id"], test["capability"], test["task"], test["threshold"]) == (
        "compun",
        "compound/noun",
        "image",
        0.3333,
    )
    examples = examples_of(doc, "compun")
    assert list(examples) == ["bird cage", "sea lion", "Door knob"]
    assert examples["sea lion"] == {
        "id": "sea lion",
        "text": "a photo of a sea lion",
        "image": "sea lion.jpg",
        "distractors": ["sea lion_n1.jpg", "sea lion_n2.jpg"],
    }


def test_compun_example_captions_make_the_papers_prompt_ensemble(tmp_path: Path) -> None:
    doc = imported(
        tmp_path,
        "compun",
        FIXTURES / "compun" / "Compun.csv",
        extra=("--captions", str(FIXTURES / "compun" / "captions.json")),
    )
    examples = examples_of(doc, "compun_examples")
    assert examples["bird cage"]["text"] == [
        "a photo of a bird cage. An example of bird cage in an image is An empty bird cage "
        "hangs on a porch.",
        "a photo of a bird cage. An example of bird cage in an image is A parrot perches "
        "inside a brass bird cage.",
    ]
    assert len(examples["sea lion"]["text"]) == 3
    # "Door knob" finds its captions under "door knob" (case-insensitive fallback)
    assert examples["Door knob"]["text"] == [
        "a photo of a Door knob. An example of Door knob in an image is A hand turns a shiny "
        "door knob."
    ]
    ensemble = load_checklist(tmp_path / "compun.yaml").tests[0].examples[1]
    assert len(ensemble.texts) == 3


def test_compun_captions_file_must_cover_every_noun(tmp_path: Path, capsys) -> None:
    captions = tmp_path / "captions.json"
    captions.write_text(json.dumps({"bird cage": ["a cage"]}))
    err = fails(
        capsys,
        tmp_path,
        "compun",
        FIXTURES / "compun" / "Compun.csv",
        extra=("--captions", str(captions)),
    )
    assert err == f"vlcheck import: {captions}: no captions for the compound noun 'sea lion'"


def test_compun_repeated_noun_gives_its_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "Compun.csv"
    bad.write_text("Compound Noun\nbird cage\nsea lion\nbird cage\n")
    err = fails(capsys, tmp_path, "compun", bad)
    assert err == f"vlcheck import: {bad}:4: compound noun 'bird cage' repeats line 2"


def test_compun_non_utf8_csv(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "Compun.csv"
    bad.write_bytes(b"Compound Noun\nbird cage\ncaf\xe9 table\n")
    assert fails(capsys, tmp_path, "compun", bad).startswith(
        f"vlcheck import: {bad}:3: not UTF-8 text"
    )


# ---------------------------------------------------------------- svo-probes


def test_svo_probes_match_pairs_carry_the_negative_type(tmp_path: Path) -> None:
    doc = imported(tmp_path, "svo-probes", FIXTURES / "svo_probes" / "svo_probes.csv")
    (test,) = doc["tests"]
    assert (test["id"], test["task"], test["threshold"]) == ("svo_probes", "match", 0.5)
    examples = examples_of(doc, "svo_probes")
    # rows 0 and 1 share their positive pair: one example carrying both negative types
    assert list(examples) == ["0-pos", "0-neg", "1-neg", "7-pos", "7-neg"]
    assert examples["1-neg"] == {
        "id": "1-neg",
        "image": {"url": "http://images.example/503.jpg"},
        "caption": "A dog catches a frisbee.",
        "label": "no_match",
        "neg_type": "verb",
    }
    assert examples["0-pos"]["neg_type"] == ["subject", "verb"]
    assert [examples[f"{i}-neg"]["neg_type"] for i in (0, 1, 7)] == ["subject", "verb", "object"]
    assert examples["7-pos"]["label"] == "match"
    assert examples["7-pos"]["caption"] == "A chef chops onions, quickly."
    loaded = load_checklist(tmp_path / "svo-probes.yaml").tests[0].examples[0]
    assert (
        loaded.image.kind == "url"
        and loaded.label is True
        and loaded.neg_types == ("subject", "verb")
    )


def test_svo_probes_pairwise_image_form(tmp_path: Path) -> None:
    doc = imported(
        tmp_path, "svo-probes", FIXTURES / "svo_probes" / "svo_probes.csv", extra=("--form", "both")
    )
    assert [t["id"] for t in doc["tests"]] == ["svo_probes", "svo_probes_pairs"]
    pairs = examples_of(doc, "svo_probes_pairs")
    assert pairs["0"] == {
        "id": "0",
        "text": "A dog catches a frisbee.",
        "image": {"url": "http://images.example/501.jpg"},
        "distractors": [{"url": "http://images.example/502.jpg"}],
        "tags": {"neg_type": "subject"},
    }


def test_svo_probes_leaves_out_rows_with_several_negative_flags(tmp_path: Path, capsys) -> None:
    lines = (FIXTURES / "svo_probes" / "svo_probes.csv").read_text().splitlines()
    lines[2] = lines[2].replace("False,True,False", "False,True,True")
    bad = tmp_path / "svo.csv"
    bad.write_text("\n".join(lines) + "\n")
    doc = imported(tmp_path, "svo-probes", bad)
    assert list(examples_of(doc, "svo_probes")) == ["0-pos", "0-neg", "7-pos", "7-neg"]
    assert f"{bad}: left out 1 row(s) whose negative differs in more than one" in (
        capsys.readouterr().err
    )
    lines[1] = lines[1].replace("True,False,False", "True,True,False")
    lines[3] = lines[3].replace("False,False,True", "False,False,False")
    bad.write_text("\n".join(lines) + "\n")
    assert fails(capsys, tmp_path, "svo-probes", bad).endswith(
        f"vlcheck import: {bad}:2: no rows with exactly one negative type"
    )


def test_svo_probes_bad_url_and_missing_column(tmp_path: Path, capsys) -> None:
    lines = (FIXTURES / "svo_probes" / "svo_probes.csv").read_text().splitlines()
    bad = tmp_path / "svo.csv"
    bad.write_text(
        "\n".join([lines[0], lines[1].replace("http://images.example/502.jpg", "502.jpg")]) + "\n"
    )
    assert "svo.csv:2: neg_url '502.jpg' is not an http(s) URL" in fails(
        capsys, tmp_path, "svo-probes", bad
    )
    bad.write_text("index,sentence\n0,a b\n")
    assert "missing column(s) subj_neg, verb_neg" in fails(capsys, tmp_path, "svo-probes", bad)


# ---------------------------------------------------------------- aro


def test_aro_vg_sets_crop_to_the_box(tmp_path: Path) -> None:
    doc = imported(
        tmp_path,
        "aro",
        FIXTURES / "aro" / "visual_genome_relation.json",
        FIXTURES / "aro" / "visual_genome_attribution.json",
    )
    assert [(t["id"], t["capability"]) for t in doc["tests"]] == [
        ("vg_relation", "relation/swap"),
        ("vg_attribution", "attribute/swap"),
    ]
    relation = examples_of(doc, "vg_relation")
    assert relation["1"] == {
        "id": "1",
        "image": {"path": "2001.jpg", "crop": [0, 5, 60.5, 40]},
        "caption": "the boy is holding the kite",
        "negatives": ["the kite is holding the boy"],
        "tags": {"relation": "holding"},
    }
    assert examples_of(doc, "vg_attribution")["0"]["tags"] == {"attributes": "red_gray"}
    assert all("ties" not in test for test in doc["tests"])  # a tie is wrong, as in ARO
    crop = load_checklist(tmp_path / "aro.yaml").tests[0].examples[0].image.crop
    assert crop == (10.0, 20.0, 100.0, 80.0)


def test_aro_normalize_follows_aros_caption_cleanup() -> None:
    assert (
        normalize('A "Big" dog; jumps!  Over: the (red) fence.', 30)
        == "a big dog jumps over the red fence"
    )
    assert normalize("one two three four", 2) == "one two"
    assert normalize("Commas, stay", 30) == "commas, stay"


def test_aro_order_sets_get_four_seeded_shuffles(tmp_path: Path) -> None:
    doc = imported(tmp_path, "aro", FIXTURES / "aro" / "coco_order_test.json")
    (test,) = doc["tests"]
    assert (test["id"], test["capability"], test["threshold"]) == (
        "coco_order",
        "order/shuffle",
        0.2,
    )
    examples = examples_of(doc, "coco_order")
    assert list(examples) == ["0.0", "0.1", "1.0"]
    first = examples["0.0"]
    assert first["caption"] == "a brown horse grazing in a green field"
    assert first["image"] == "val2014/COCO_val2014_000000000900.jpg"
    assert len(first["negatives"]) == 4
    for example in examples.values():
        for negative in example["negatives"]:
            assert negative != example["caption"]
            assert sorted(negative.split()) == sorted(example["caption"].split())
    # nouns and adjectives shuffled among themselves: the other words keep their places
    nouns_adj = first["negatives"][0].split()
    assert [w for i, w in enumerate(nouns_adj) if i in (0, 3, 4, 5)] == ["a", "grazing", "in", "a"]
    # trigram shuffle: the caption's trigrams, reordered
    words = first["caption"].split()
    trigrams = [" ".join(words[i : i + 3]) for i in range(0, len(words), 3)]
    assert first["negatives"][3] in {" ".join(p) for p in itertools.permutations(trigrams)}

    again = imported(tmp_path, "aro", FIXTURES / "aro" / "coco_order_test.json")
    assert again == doc
    other = imported(
        tmp_path, "aro", FIXTURES / "aro" / "coco_order_test.json", extra=("--seed", "7")
    )
    assert other != doc


def test_aro_order_with_given_shuffles(tmp_path: Path) -> None:
    doc = imported(tmp_path, "aro", FIXTURES / "aro" / "flickr_order_options.json")
    assert doc["tests"][0]["id"] == "flickr_order"
    assert doc["tests"][0]["ties"] == "first"  # ARO's np.argmax: the true caption is first
    (example,) = examples_of(doc, "flickr_order").values()
    assert example["caption"] == "a child jumps into a pool"
    assert example["negatives"][0] == "a pool jumps into a child"
    assert len(example["negatives"]) == 4


def test_aro_cannot_tell_an_order_file_without_a_hint(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "captions.json"
    bad.write_text(json.dumps([{"image": "x.jpg", "caption": ["a b c"]}]))
    assert "neither coco nor flickr; pass --set" in fails(capsys, tmp_path, "aro", bad)
    doc = imported(tmp_path, "aro", bad, extra=("--set", "flickr-order"))
    assert doc["tests"][0]["id"] == "flickr_order"


def test_aro_bad_box_value_names_the_record(tmp_path: Path, capsys) -> None:
    records = json.loads((FIXTURES / "aro" / "visual_genome_relation.json").read_text())
    records[1]["bbox_w"] = "wide"
    bad = tmp_path / "visual_genome_relation.json"
    bad.write_text(json.dumps(records))
    err = fails(capsys, tmp_path, "aro", bad)
    assert err == f"vlcheck import: {bad}: record 1: 'bbox_w' must be a finite number, got 'wide'"
    records[1]["bbox_w"] = float("nan")  # Python's json writes and reads NaN
    bad.write_text(json.dumps(records))
    err = fails(capsys, tmp_path, "aro", bad)
    assert err == f"vlcheck import: {bad}: record 1: 'bbox_w' must be a finite number, got nan"


@pytest.mark.parametrize(
    "box", [[float("nan"), 0, 0.5, 0.5], [0, 0, "wide", 0.5], [-0.1, 0, 0.5, 0.5]]
)
def test_predicate_noun_a_bad_box_names_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], box: list[Any]
) -> None:
    records = _pn_records()
    records[2]["relationship_target"]["bounding_box"] = box
    bad = tmp_path / "eval_set.json"
    bad.write_text(json.dumps(records))
    rid = records[2]["id"]
    err = fails(capsys, tmp_path, "predicate-noun", "--crop", bad)
    assert err.startswith(f"vlcheck import: {bad}: record {rid}: relationship_target.bounding_box")


# ---------------------------------------------------------------- winoground


def test_winoground_group_test_with_tags(tmp_path: Path) -> None:
    doc = imported(tmp_path, "winoground", FIXTURES / "winoground" / "examples.jsonl")
    (test,) = doc["tests"]
    assert (test["task"], test["criterion"], test["threshold"]) == ("group", "group", 0.1666)
    examples = examples_of(doc, "winoground")
    assert list(examples) == ["0", "1", "2"]
    assert examples["2"] == {
        "id": "2",
        "images": ["ex_2_img_0.png", "ex_2_img_1.png"],
        "captions": ["tall person, short tree", "short person, tall tree"],
        "tags": {
            "tag": "Object",
            "secondary_tag": "Pragmatics",
            "collapsed_tag": "Both",
            "num_main_preds": "2",
        },
    }
    assert "secondary_tag" not in examples["0"]["tags"]  # empty in the source
    text = imported(
        tmp_path,
        "winoground",
        FIXTURES / "winoground" / "examples.jsonl",
        extra=("--criterion", "text"),
    )
    assert (text["tests"][0]["criterion"], text["tests"][0]["threshold"]) == ("text", 0.25)


def test_winoground_bad_line_is_located(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "examples.jsonl"
    bad.write_text(
        '{"id": 0, "image_0": "a", "image_1": "b", "caption_0": "x", '
        '"caption_1": "y"}\n\n{"id": 1, "image_0": "a", "caption_0": "x"}\n'
    )
    assert fails(capsys, tmp_path, "winoground", bad) == (
        f"vlcheck import: {bad}:3: missing field 'image_1'"
    )


# ---------------------------------------------------------------- vl-checklist

VLC = FIXTURES / "vl_checklist"


def test_vl_checklist_data_tree_one_test_per_leaf(tmp_path: Path) -> None:
    doc = imported(tmp_path, "vl-checklist", VLC / "data")
    assert [(t["id"], t["capability"], len(t["examples"])) for t in doc["tests"]] == [
        ("attribute-color-vg", "attribute/color", 3),
        ("object-size-small-swig_agent", "object/size/small", 4),
        ("relation-action-swig", "relation/action", 1),
    ]
    color = examples_of(doc, "attribute-color-vg")
    assert color["2"] == {
        "id": "2",
        "image": "vg/VG_100K/10.jpg",
        "caption": "black stove",
        "negatives": [" orange stove"],
    }
    assert examples_of(doc, "relation-action-swig")["0"]["image"] == "swig/feeding_1.jpg"


def test_vl_checklist_swig_paraphrases_pair_positive_i_with_negative_i(tmp_path: Path) -> None:
    doc = imported(tmp_path, "vl-checklist", VLC / "data")
    swig = examples_of(doc, "object-size-small-swig_agent")
    assert list(swig) == ["0.0", "0.1", "1.0", "1.1"]
    assert swig["0.1"] == {
        "id": "0.1",
        "image": "swig/rowing_7.jpg",
        "caption": "an oarsman rows a boat on a lake",
        "negatives": ["an owl rows a boat on a lake"],
        "tags": {"paraphrase": 1},
    }
    assert (swig["1.0"]["caption"], swig["1.0"]["negatives"]) == (
        "a painter paints a fence",
        ["a goat paints a fence"],
    )
    first = imported(tmp_path, "vl-checklist", VLC / "data", extra=("--pairs", "first"))
    only = examples_of(first, "object-size-small-swig_agent")
    assert list(only) == ["0", "1"]
    assert only["1"]["negatives"] == ["a goat paints a fence"] and "tags" not in only["1"]


def test_vl_checklist_split_writes_one_file_per_leaf(tmp_path: Path, capsys) -> None:
    out = tmp_path / "split"
    assert (
        run(
            [
                "vl-checklist",
                str(VLC / "data"),
                "-o",
                str(out),
                "--split",
                "--image-root",
                str(tmp_path / "images"),
            ]
        )
        == 0
    )
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "attribute-color-vg.yaml",
        "object-size-small-swig_agent.yaml",
        "relation-action-swig.yaml",
    ]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"wrote {out / 'attribute-color-vg.yaml'}: 1 test, 3 examples"
    checklist = load_checklist(out / "attribute-color-vg.yaml")
    first = checklist.tests[0].examples[0].image
    assert Path(first.location) == (tmp_path / "images" / "vg" / "VG_100K" / "10.jpg").resolve()
    image_root = yaml.safe_load((out / "attribute-color-vg.yaml").read_text())["image_root"]
    assert image_root == (tmp_path / "images").as_posix()  # absolute stays absolute


def test_vl_checklist_split_needs_a_folder(tmp_path: Path, capsys) -> None:
    err = fails(capsys, tmp_path, "vl-checklist", VLC / "data", extra=("--split",))
    assert "must name a folder, not a YAML file" in err


def test_vl_checklist_corpus_configs(tmp_path: Path, capsys) -> None:
    err = fails(capsys, tmp_path, "vl-checklist", VLC / "corpus")
    assert err.startswith(
        f"vlcheck import: {VLC / 'corpus/v1/Attribute/material/vg.yaml'}:1: "
        "ANNO_PATH 'data/Attribute/vg/material.json' not found"
    )
    doc = imported(tmp_path, "vl-checklist", VLC / "corpus", extra=("--skip-missing",))
    assert "skipped 1 corpus config" in capsys.readouterr().err
    assert [t["id"] for t in doc["tests"]] == ["attribute-color-vg"]
    # a config and the data file it names give the leaf once
    both = imported(
        tmp_path, "vl-checklist", VLC / "corpus/v1/Attribute/color/vg.yaml", VLC / "data"
    )
    assert [t["id"] for t in both["tests"]] == [
        "attribute-color-vg",
        "object-size-small-swig_agent",
        "relation-action-swig",
    ]


def test_vl_checklist_keep_paths_and_capability_override(tmp_path: Path) -> None:
    doc = imported(
        tmp_path, "vl-checklist", VLC / "data/Attribute/vg/color.json", extra=("--keep-paths",)
    )
    assert examples_of(doc, "attribute-color-vg")["0"]["image"] == "VG_100K/10.jpg"
    loose = tmp_path / "mine.json"
    loose.write_text(json.dumps([["a.jpg", {"POS": ["a red cup"], "NEG": ["a blue cup"]}]]))
    doc = imported(tmp_path, "vl-checklist", loose, extra=("--capability", "attribute/color"))
    assert [(t["id"], t["capability"]) for t in doc["tests"]] == [
        ("attribute-color-mine", "attribute/color")
    ]
    assert examples_of(doc, "attribute-color-mine")["0"]["image"] == "a.jpg"


def test_identical_negatives_are_kept_and_pointed_out(tmp_path: Path, capsys) -> None:
    leaf = tmp_path / "data" / "Relation" / "vg" / "action.json"
    leaf.parent.mkdir(parents=True)
    records = [
        ["a.jpg", {"POS": ["man holding cup"], "NEG": ["man holding cup"]}],
        ["b.jpg", {"POS": ["dog biting ball"], "NEG": ["dog kicking ball"]}],
    ]
    leaf.write_text(json.dumps(records))
    doc = imported(tmp_path, "vl-checklist", leaf)
    assert len(doc["tests"][0]["examples"]) == 2
    assert (
        f"vlcheck import: note: {leaf}: 1 example(s) with a negative identical to the "
        "caption, which no model can pass (kept as in the source): 0"
    ) in capsys.readouterr().err


def test_vl_checklist_errors(tmp_path: Path, capsys) -> None:
    loose = tmp_path / "mine.json"
    loose.write_text(json.dumps([["a.jpg", {"POS": ["x", "y"], "NEG": ["z"]}]]))
    assert "cannot tell the capability" in fails(capsys, tmp_path, "vl-checklist", loose)
    err = fails(capsys, tmp_path, "vl-checklist", loose, extra=("--capability", "a/b"))
    assert err == (
        f"vlcheck import: {loose}: record 0: POS has 2 texts and NEG 1; paraphrase i "
        "of POS pairs with i of NEG, so they must match (--pairs first takes the first of "
        "each, as VL-CheckList's evaluator does)"
    )
    odd = tmp_path / "data" / "Attribute" / "vg" / "shape.json"
    odd.parent.mkdir(parents=True)
    odd.write_text("[]")
    assert "attribute 'shape' is not in VL-CheckList's taxonomy" in fails(
        capsys, tmp_path, "vl-checklist", odd
    )
    assert "--capability 'Bad Cap' must be lowercase" in fails(
        capsys, tmp_path, "vl-checklist", loose, extra=("--capability", "Bad Cap")
    )


# ---------------------------------------------------------------- the command


def test_options_of_another_format_are_refused(tmp_path: Path, capsys) -> None:
    err = fails(capsys, tmp_path, "sugarcrepe", FIXTURES / "sugarcrepe", extra=("--crop",))
    assert err == "vlcheck import: --crop applies to predicate-noun, not sugarcrepe"
    err = fails(capsys, tmp_path, "aro", FIXTURES / "aro", extra=("--criterion", "text"))
    assert err == (
        "vlcheck import: --criterion applies to predicate-noun, winoground, colorswap, eqben, "
        "vismin, cola, bivlc and naturalbench, not aro"
    )


def test_threshold_option_and_missing_source(tmp_path: Path, capsys) -> None:
    doc = imported(tmp_path, "sugarcrepe", FIXTURES / "sugarcrepe", extra=("--threshold", "0.8"))
    assert {t["threshold"] for t in doc["tests"]} == {0.8}
    err = fails(capsys, tmp_path, "compun", tmp_path / "nope.csv")
    assert err == f"vlcheck import: {tmp_path / 'nope.csv'}: no such file"
    with pytest.raises(SystemExit):
        run(["sugarcrepe", str(FIXTURES / "sugarcrepe"), "-o", "x.yaml", "--threshold", "2"])


def test_image_root_is_written_relative_to_the_yaml(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite").mkdir()
    assert (
        run(
            [
                "sugarcrepe",
                str(FIXTURES / "sugarcrepe"),
                "-o",
                "suite/sc.yaml",
                "--image-root",
                "coco/val2017",
            ]
        )
        == 0
    )
    text = (tmp_path / "suite" / "sc.yaml").read_text()
    assert text.startswith("# Imported with: vlcheck import sugarcrepe ")
    assert list(yaml.safe_load(text))[:3] == ["vlcheck", "image_root", "description"]
    assert yaml.safe_load(text)["image_root"] == "../coco/val2017"
    assert (
        run(
            [
                "sugarcrepe",
                str(FIXTURES / "sugarcrepe"),
                "-o",
                "abs.yaml",
                "--image-root",
                "/data/coco",
            ]
        )
        == 0
    )
    assert yaml.safe_load((tmp_path / "abs.yaml").read_text())["image_root"] == "/data/coco"


def test_chance_levels() -> None:
    assert chance_level("caption", [{"negatives": ["a"]}, {"negatives": ["a", "b", "c"]}]) == 0.375
    assert chance_level("image", [{"distractors": [1, 2]}]) == 0.3333
    assert chance_level("group", [{}], {"criterion": "text"}) == 0.25
    assert chance_level("group", [{}]) == 0.1666
    assert chance_level("match", [{}]) == 0.5


# ---------------------------------------------------------------- writer


def test_writer_round_trips_and_stays_readable() -> None:
    ref = {"path": "dir/a b.jpg", "crop": [1, 2.5, 30, 40]}
    doc = {
        "vlcheck": 1,
        "description": "Quotes ' \" and: colons, ü",
        "tests": [
            {
                "id": "t",
                "capability": "attribute/color",
                "task": "caption",
                "threshold": 0.5,
                "examples": [
                    {
                        "id": "0",
                        "image": ref,
                        "caption": "yes",
                        "negatives": ["no", "null", " x"],
                        "tags": {"n": 1, "flag": True},
                    },
                    {"id": "1", "image": ref, "caption": "long " * 40, "negatives": ["long " * 30]},
                ],
            }
        ],
    }
    text = dump_checklist(doc)
    assert yaml.safe_load(text) == doc
    assert "&" not in text and "*id" not in text  # the shared ref is written out twice
    assert "    image: {path: dir/a b.jpg, crop: [1, 2.5, 30, 40]}\n" in text
    assert "    negatives: ['no', 'null', ' x']\n" in text
    assert "    negatives:\n    - 'long long" in text  # too long for one line: block style
    assert max(len(line) for line in text.splitlines()) < 300  # never folded mid-string
