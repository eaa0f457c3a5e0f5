"""Training-framework callbacks: a transformers ``Trainer`` and a Lightning ``Trainer`` each
evaluate the model they train through ``pytest_vlcheck.evaluate`` and hand the run's scalars
to the framework's own logging, with tiny random models built offline."""

from __future__ import annotations

import csv
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
    due = [step for step in (0, 1, 2, 2, 3, 4, 4) if schedule.due_after_step(step)]
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


def _clip_examples(model, count: int) -> list[dict]:
    """``count`` CLIP training examples (token ids, pixels) of random data."""
    import torch

    generator = torch.Generator().manual_seed(0)
    size, vocab = model.config.vision_config.image_size, model.config.text_config.vocab_size
    return [
        {
            "input_ids": torch.randint(3, vocab, (5,), generator=generator),
            "pixel_values": torch.rand(3, size, size, generator=generator),
        }
        for _ in range(count)
    ]


def _contrastive_batch(rows: list[dict]) -> dict:
    import torch

    return {key: torch.stack([row[key] for row in rows]) for key in rows[0]} | {"return_loss": True}


def test_the_trainer_callback_logs_beside_the_loss_under_its_own_names(
    tmp_path: Path, checklist: Path
) -> None:
    """A real (tiny, offline) training with report_to tensorboard: vlcheck's scalars land in
    the trainer's event folder as ``vlcheck/...`` (not transformers' ``train/vlcheck/...``),
    at the steps of the trainer's own loss."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from transformers import Trainer, TrainingArguments

    from pytest_vlcheck.integrations import VlcheckCallback

    model, processor = _hf_model_and_processor(tmp_path / "clip")
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        report_to=["tensorboard"],
        use_cpu=True,
        max_steps=2,
        logging_steps=1,
        per_device_train_batch_size=2,
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=_clip_examples(model, 4),
        data_collator=_contrastive_batch,
    )
    probe = VlcheckCallback(
        checklist, trainer=trainer, every_n_steps=1, preprocess=processor, no_cache=True
    )
    trainer.add_callback(probe)
    trainer.train()

    assert [run.step for run in probe.runs] == [1, 2]
    folder = next(
        c.logging_dir for c in trainer.callback_handler.callbacks if hasattr(c, "tb_writer")
    )
    events = EventAccumulator(folder).Reload()
    tags = events.Tags()["scalars"]
    name = "vlcheck/attribute/color/color/pass_rate"
    assert name in tags
    assert not [tag for tag in tags if tag.startswith("train/vlcheck")]
    assert [e.step for e in events.Scalars(name)] == [e.step for e in events.Scalars("train/loss")]
    assert [e.value for e in events.Scalars(name)] == [
        pytest.approx(run.scalars()[name]) for run in probe.runs
    ]
    assert trainer.state.log_history[-1]["step"] == 2  # the trainer's own history untouched


def test_the_trainer_callback_names_an_integration_it_cannot_write_to() -> None:
    from pytest_vlcheck.integrations.report_to import integration_logs

    with pytest.warns(UserWarning, match=r"do not go to report_to comet_ml .*expected log="):
        specs = integration_logs(["mlflow", "comet_ml", "codecarbon"], [])
    assert specs == ["mlflow"]


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


def _lightning_fit(tmp_path: Path, probe, **trainer_options) -> Path:
    """Fit the tiny CLIP (in a LightningModule logging ``val_loss``) on 4 batches a epoch
    with ``probe``; the CSV logger's metrics file."""
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.loggers import CSVLogger

    from pytest_vlcheck.tiny import live_model

    clip, _, _ = live_model(trained=False)

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = clip

        def training_step(self, batch, batch_idx):
            return self.model.logit_scale * batch[0].sum()

        def validation_step(self, batch, batch_idx):
            self.log("val_loss", self.model.logit_scale * batch[0].sum())

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-3)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 1)))
    trainer = pl.Trainer(
        callbacks=[probe],
        logger=CSVLogger(str(tmp_path / "logs")),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        log_every_n_steps=1,
        num_sanity_val_steps=0,
        **trainer_options,
    )
    trainer.fit(Module(), data, data)
    return Path(trainer.logger.log_dir) / "metrics.csv"


def _logged_steps(metrics: Path, name: str) -> list[int]:
    rows = list(csv.DictReader(metrics.open()))
    return [int(row["step"]) for row in rows if row[name]]


def test_the_lightning_callback_logs_beside_the_validation_loss(
    tmp_path: Path, checklist: Path
) -> None:
    """After each validation, at the step Lightning logs ``val_loss`` at (one point each, on
    the same x), under gradient accumulation too."""
    from pytest_vlcheck.integrations import VlcheckLightningCallback
    from pytest_vlcheck.tiny import live_model

    _, preprocess, tokenizer = live_model(trained=False)
    probe = VlcheckLightningCallback(
        checklist, preprocess=preprocess, tokenizer=tokenizer, no_cache=True
    )
    metrics = _lightning_fit(tmp_path, probe, max_epochs=2, accumulate_grad_batches=2)

    name = "vlcheck/attribute/color/color/pass_rate"
    assert _logged_steps(metrics, "val_loss") == [1, 3]  # 2 optimizer steps an epoch
    assert _logged_steps(metrics, name) == [1, 3]
    assert [run.step for run in probe.runs] == [1, 3]


def test_the_lightning_callback_evaluates_every_n_optimizer_steps(
    tmp_path: Path, checklist: Path
) -> None:
    """Every 2nd optimizer step, at Lightning's step for it (its train loss's); gradient
    accumulation's first batches, before any optimizer step, evaluate nothing."""
    from pytest_vlcheck.integrations import VlcheckLightningCallback
    from pytest_vlcheck.tiny import live_model

    _, preprocess, tokenizer = live_model(trained=False)
    probe = VlcheckLightningCallback(
        checklist, every_n_steps=2, preprocess=preprocess, tokenizer=tokenizer, no_cache=True
    )
    metrics = _lightning_fit(
        tmp_path, probe, max_steps=4, accumulate_grad_batches=2, limit_val_batches=0
    )

    assert [run.step for run in probe.runs] == [1, 3]  # after optimizer steps 2 and 4
    assert _logged_steps(metrics, "vlcheck/summary/tests") == [1, 3]


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
