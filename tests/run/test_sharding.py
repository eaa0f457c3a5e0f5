"""``--vl-shard K/N``: the pure split, usage errors, and gates that agree with a serial run."""

from __future__ import annotations

import json

import pytest
from helpers.gate_suite import checklist, scores

from pytest_vlcheck.run.sharding import Shard, ShardSpecError, assign_shards, parse_shard


def test_parse_shard() -> None:
    assert parse_shard("2/4") == Shard(2, 4)
    assert parse_shard(" 1/1 ") == Shard(1, 1)
    assert str(Shard(3, 5)) == "3/5"


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/b", "2", "1/0", "-1/2", "1/2/3", ""])
def test_parse_shard_refuses(text: str) -> None:
    with pytest.raises(ShardSpecError, match="expected K/N with whole numbers 1 <= K <= N"):
        parse_shard(text)


def test_assign_largest_first_to_lightest() -> None:
    # by hand: a(5)->1 [5,0]; b(4)->2 [5,4]; c(3)->2 [5,7]; d(3)->1 [8,7]; e(1)->2 [8,8]
    weights = {"e": 1, "d": 3, "c": 3, "b": 4, "a": 5}
    assert assign_shards(weights, 2) == {"a": 1, "b": 2, "c": 2, "d": 1, "e": 2}


def test_assignment_ignores_input_order_and_counts_empty_groups() -> None:
    weights = {("f.yaml", f"t{i}"): i % 4 for i in range(20)}
    shuffled = dict(reversed(list(weights.items())))
    assert assign_shards(weights, 3) == assign_shards(shuffled, 3)
    # a group without examples still weighs 1: 4 groups of 0 spread over 4 shards
    assert sorted(assign_shards({k: 0 for k in "wxyz"}, 4).values()) == [1, 2, 3, 4]


def test_more_shards_than_groups_and_bad_count() -> None:
    assert assign_shards({"only": 7}, 3) == {"only": 1}
    with pytest.raises(ValueError):
        assign_shards({"a": 1}, 0)


SIZES = {"big": 9, "mid": 5, "small1": 3, "small2": 3, "tiny": 1}


def sized_checklist() -> str:
    """Caption tests of the sizes in SIZES (never scored: only collected)."""
    lines = ["vlcheck: 1", "tests:"]
    for test_id, size in SIZES.items():
        lines += [f"  - id: {test_id}", "    capability: object/x", "    task: caption"]
        lines += ["    threshold: 0.5", "    examples:"]
        lines += [
            f"      - {{image: {test_id}{i}.png, caption: c, negatives: [n]}}" for i in range(size)
        ]
    return "\n".join(lines) + "\n"


def collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", *args)
    assert result.ret == 0, result.stdout.str()
    return [line for line in result.stdout.lines if "::" in line]


def test_shards_partition_the_selection_by_test(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", sized=sized_checklist())
    models = ("--vl-model=a=scores:a.jsonl", "--vl-model=b=scores:b.jsonl")
    for name in ("a.jsonl", "b.jsonl"):  # a spec's files must exist (checked at start-up)
        (pytester.path / name).write_text("")
    everything = collected(pytester, *models)
    shards = [collected(pytester, *models, f"--vl-shard={k}/2") for k in (1, 2)]
    assert sorted(shards[0] + shards[1]) == sorted(everything) and len(everything) == 10
    # by hand, examples x 2 models: big(18)->1 [18,0]; mid(10)->2 [18,10]; small1(6)->2
    # [18,16]; small2(6)->2 [18,22]; tiny(2)->1 [20,22]
    assert {n.split("::")[1] for n in shards[0]} == {"big[a]", "big[b]", "tiny[a]", "tiny[b]"}
    # -k narrows the selection first, then the shards split what is left
    only_small = [collected(pytester, *models, "-k", "small", f"--vl-shard={k}/2") for k in (1, 2)]
    assert [len(s) for s in only_small] == [2, 2]


def test_bad_shard_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", sized=sized_checklist())
    result = pytester.runpytest("--vl-shard=3/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--vl-shard is '3/2'; expected K/N*"])


def test_an_empty_shard_is_not_a_failure(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", gates=checklist({"spatial": 50}))
    scores(pytester.path / "s.jsonl", {"spatial": set()})
    result = pytester.runpytest("--vl-model=scores:s.jsonl", "--vl-shard=2/2")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*1 deselected*"])


def test_each_shard_gates_as_the_serial_run(pytester: pytest.Pytester) -> None:
    """m counts the whole selection: 5 more examples lost gives mid-p 2^-5 = 0.031, which
    passes at 0.05 / m=2 but would fail if a shard counted only its own item (m=1)."""
    pytester.makefile(".yaml", gates=checklist({"spatial": 50, "action": 50}))
    scores(pytester.path / "old.jsonl", {"spatial": set(range(10)), "action": set(range(10))})
    saved = pytester.runpytest("--vl-model=old=scores:old.jsonl", "--vl-save-baseline=base.json")
    saved.assert_outcomes(passed=2)
    scores(pytester.path / "new.jsonl", {"spatial": set(range(15)), "action": set(range(15))})
    common = ("--vl-model=new=scores:new.jsonl", "--vl-baseline=base.json")
    pytester.runpytest(*common, "--vl-report=serial").assert_outcomes(passed=2)
    serial = json.loads((pytester.path / "serial" / "matrix.json").read_text())["results"]
    gates = {r["test"]: r["gate"] for r in serial}
    assert gates["spatial"]["regressed"] is False and gates["spatial"]["alpha_corrected"] == 0.025
    for k in (1, 2):
        result = pytester.runpytest(*common, f"--vl-shard={k}/2", f"--vl-report=s{k}")
        result.assert_outcomes(passed=1)
        rows = json.loads((pytester.path / f"s{k}" / "matrix.json").read_text())["results"]
        assert len(rows) == 1 and rows[0]["gate"] == gates[rows[0]["test"]]
