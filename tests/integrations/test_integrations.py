"""Training-framework callbacks: a transformers ``Trainer`` and a Lightning ``Trainer`` each
evaluate the model they train through ``pytest_vlcheck.evaluate`` and hand the run's scalars
to the framework's own logging, with tiny random models built offline."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from helpers.model_builders import build_hf_clip, write_colour_squares

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.integrations.schedule import Schedule


@pytest.fixture
def checklist(tmp_path: Path) -> Path:
    return write_colour_squares(tmp_path)


def test_a_step_interval_is_due_on_its_multiples_once_each() -> None:
    schedule = Schedule(every_n_steps=2)
    due = [step for step in (1, 2, 2, 3, 4, 4) if schedule.due_after_step(step)]
    assert due == [2, 4]
    assert not schedule.due_after_evaluation(6)


def test_without_an_interval_each_evaluation_is_due_once_per_step() -> None:
    schedule = Schedule()
    assert not schedule.due_after_step(5)
    assert [schedule.due_after_evaluation(s) for s in (5, 5, 9)] == [True, False, True]


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_a_bad_interval_is_one_line(bad: object) -> None:
    with pytest.raises(VlcheckUserError, match=r"every_n_steps is .*; expected a whole number"):
        Schedule(every_n_steps=bad)  # type: ignore[arg-type]


def _hf_model_and_processor(directory: Path):
    from transformers import AutoProcessor, CLIPModel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CLIPModel.from_pretrained(build_hf_clip(directory))
        processor = AutoProcessor.from_pretrained(directory, backend="pil")
    return model, processor


def test_the_trainer_callback_logs_through_trainer_log(tmp_path: Path, checklist: Path) -> None:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from pytest_vlcheck.integrations import VlcheckCallback

    model, processor = _hf_model_and_processor(tmp_path / "clip")
    model.train()
    logged: list[dict] = []

    class Recorder(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            logged.append(dict(logs or {}))

    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    trainer = Trainer(model=model, args=args, callbacks=[Recorder()])
    probe = VlcheckCallback(checklist, trainer=trainer, preprocess=processor, no_cache=True)
    trainer.add_callback(probe)
    trainer.state.global_step = 7
    trainer.callback_handler.on_evaluate(args, trainer.state, trainer.control, metrics={})
    trainer.callback_handler.on_evaluate(args, trainer.state, trainer.control, metrics={})

    assert len(probe.runs) == 1  # step 7 evaluated once
    scalars = probe.runs[0].scalars()
    assert "vlcheck/attribute/color/color/pass_rate" in scalars
    assert logged and all(logged[0][k] == v for k, v in scalars.items())
    assert trainer.state.log_history[-1]["step"] == 7
    assert model.training  # the trainer's model is back in train mode


def test_the_trainer_callback_evaluates_every_n_steps(tmp_path: Path, checklist: Path) -> None:
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from pytest_vlcheck.integrations import VlcheckCallback

    model, processor = _hf_model_and_processor(tmp_path / "clip")
    log = tmp_path / "probe.jsonl"
    probe = VlcheckCallback(
        checklist, every_n_steps=2, preprocess=processor, log=f"jsonl:{log}", no_cache=True
    )
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    state, control = TrainerState(), TrainerControl()
    for step in (1, 2, 3, 4):
        state.global_step = step
        probe.on_step_end(args, state, control, model=model)
    steps = [json.loads(line)["step"] for line in log.read_text().splitlines()]
    assert steps == [2, 4]
    assert [run.step for run in probe.runs] == [2, 4]


def test_the_lightning_callback_logs_to_the_trainers_loggers(
    tmp_path: Path, checklist: Path
) -> None:
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.loggers import CSVLogger

    from pytest_vlcheck.integrations import VlcheckLightningCallback
    from pytest_vlcheck.tiny import live_model

    clip, preprocess, tokenizer = live_model(trained=False)

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = clip

        def training_step(self, batch, batch_idx):
            return self.model.logit_scale * batch[0].sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-3)

    probe = VlcheckLightningCallback(
        checklist, every_n_steps=2, preprocess=preprocess, tokenizer=tokenizer, no_cache=True
    )
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 1)))
    trainer = pl.Trainer(
        max_steps=4,
        callbacks=[probe],
        logger=CSVLogger(str(tmp_path / "logs")),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(Module(), data)

    assert [run.step for run in probe.runs] == [2, 4]
    metrics = (Path(trainer.logger.log_dir) / "metrics.csv").read_text().splitlines()
    header = metrics[0].split(",")
    assert "vlcheck/attribute/color/color/pass_rate" in header
    assert [row.split(",")[header.index("step")] for row in metrics[1:]] == ["2", "4"]


def test_the_lightning_callback_names_a_missing_model_attribute(checklist: Path) -> None:
    from pytest_vlcheck.integrations import VlcheckLightningCallback

    class Trainer:
        is_global_zero = True
        global_step = 2

    probe = VlcheckLightningCallback(checklist, model_attribute="clip", every_n_steps=1)
    with pytest.raises(VlcheckUserError, match="has no attribute 'clip'; expected the CLIP"):
        probe.on_train_batch_end(Trainer(), object(), None, None, 0)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"batch_sise": 32}, "batch_sise: not an evaluate keyword; did you mean 'batch_size'?"),
        ({"step": 10}, "step=10: not a callback option; the callback logs each evaluation at"),
        ({"name": "run-1"}, "name='run-1': not a callback option; the callback reports"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
@pytest.mark.parametrize("callback", ["VlcheckCallback", "VlcheckLightningCallback"])
def test_a_callback_refuses_a_bad_keyword_when_made(
    checklist: Path, callback: str, arguments: dict, expected: str
) -> None:
    from pytest_vlcheck import integrations

    with pytest.raises(VlcheckUserError) as refused:
        getattr(integrations, callback)(checklist, **arguments)
    assert str(refused.value).startswith(f"{callback}: ")
    assert expected in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("callback", ["VlcheckCallback", "VlcheckLightningCallback"])
def test_a_callback_refuses_a_missing_checklist_path_when_made(
    tmp_path: Path, callback: str
) -> None:
    from pytest_vlcheck import integrations

    with pytest.raises(VlcheckUserError, match=f"^{callback}: checklists: .*nope does not exist"):
        getattr(integrations, callback)(tmp_path / "nope")
