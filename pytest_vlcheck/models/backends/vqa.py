"""The ``vqa:NAME_OR_DIR`` backend: a generative VLM (LLaVA, Qwen2-VL, PaliGemma, any
transformers image-text-to-text model whose processor takes ``images=`` and ``text=``) scored
by VQAScore, behind the pair-scorer protocol.

Each pair is one language-model forward: the prompt (``vqa_prompt.VqaPrompt``) with the image,
then the answer teacher-forced; the score is the mean log-probability of the answer's tokens
under the full-vocabulary softmax (``match`` compares ``exp(score)`` with its cut-off). The
prompt is the processor's chat template with one user message ``[image, question]`` and the
generation prompt, the answer after the separator the template puts before an assistant turn
(``vqa_prompt.chat_separator``); a processor without a chat template that takes ``suffix=``
(PaliGemma, a prefix LM) gets the question as prefix and the answer as suffix, its
``token_type_ids`` marking the answer (whose end-of-sequence token is not scored). The ``t2v``
preset builds LLaVA's ids as t2v_metrics does instead (``t2v_preset``).

Batches are padded on the right, so every real token keeps its unbatched position and never
attends to padding: a batched score equals the unbatched one. Only the logits of the positions
that predict answer tokens are computed (``logits_to_keep``). Where the model's forward takes
``mm_encoder_outputs`` (transformers 5), the vision tower runs once per unique image of a batch
and its features are shared by the batch's pairs on that image.

transformers and torch are imported inside ``load()`` and the scorer's methods only.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.errors import ModelLoadError, VlcheckUserError
from pytest_vlcheck.models.backends.generative_classes import is_image_text_to_text
from pytest_vlcheck.models.backends.hf import (
    HubLocation,
    _fingerprint,
    _pil_processor_kwargs,
    _resolve_source,
)
from pytest_vlcheck.models.backends.served import scorer as served
from pytest_vlcheck.models.backends.served.endpoint import is_served
from pytest_vlcheck.models.backends.t2v_preset import (
    check_t2v_model,
    expanded_image_ids,
    padded_squares,
    t2v_inputs,
    t2v_row,
)
from pytest_vlcheck.models.backends.unsaved_buffers import restore_unsaved_buffers
from pytest_vlcheck.models.backends.vqa_prompt import (
    VqaPrompt,
    after_separator,
    answer_ids,
    chat_separator,
)
from pytest_vlcheck.models.batching import (
    ForwardContext,
    device_batch_size,
    run_in_batches,
    short_detail,
    to_float32_numpy,
)
from pytest_vlcheck.models.devices import (
    effective_precision,
    inference_context,
    resolve_device,
    torch_dtype,
)
from pytest_vlcheck.models.generative.scoring import GenerativeMethods
from pytest_vlcheck.models.hashing import fingerprint_path
from pytest_vlcheck.models.protocol import Digest, ModelIdentity
from pytest_vlcheck.models.spec_files import missing_folder

if TYPE_CHECKING:
    import numpy as np
    from PIL.Image import Image

    from pytest_vlcheck.models.protocol import ModelOptions

_IMAGE_KEYS = ("pixel_values", "pixel_attention_mask")
"""Processor outputs that carry pixels: left out when the vision features are passed in."""


class VqaScorer(GenerativeMethods):
    """A generative VLM scoring (image, text) pairs by the answer's mean log-probability, and
    answering prompts (``GenerativeMethods``)."""

    match_is_exp = True
    """Scores are log-probabilities: the engine can map them for ``match`` unbuilt."""

    def __init__(
        self,
        *,
        name: str,
        fingerprint: str,
        model: Any,
        processor: Any,
        prompt: VqaPrompt,
        device: str,
        dtype: Any,
        batch_size: int,
        forward_context: ForwardContext | None = None,
    ) -> None:
        self.name = name
        self.fingerprint = fingerprint
        self.model = model
        self.processor = processor
        self.prompt = prompt
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.forward_context = forward_context or inference_context
        self.tokenizer = processor.tokenizer
        self.suffix_form = prompt_form(processor, name) == "suffix"
        self._forward_names = set(inspect.signature(model.forward).parameters)
        self.reuses_image_features = "mm_encoder_outputs" in self._forward_names and callable(
            getattr(model, "get_image_features", None)
        )
        self._chat_prompts: dict[str, str] = {}
        self._answer_ids: dict[tuple[str, str], list[int]] = {}
        self.t2v = prompt.preset == "t2v"
        if self.t2v:
            check_t2v_model(str(getattr(model.config, "model_type", "")), name)
        self._image_ids: list[int] | None = None  # the t2v preset's expanded image tokens
        self.separator, self.separator_source = (
            ("", "") if self.suffix_form else chat_separator(processor)
        )

    def check_prompt(self) -> None:
        """Tokenise the prompt of one text now, so that a bad answer fails at load time."""
        self.answer_tokens("a")

    def answer_tokens(self, text: str) -> list[int]:
        """The ids scored for a pair with ``text`` (the answer's; with the ``t2v`` preset its
        end-of-sequence token too)."""
        question, answer = self.prompt.ask(text)
        if self.t2v:
            ids, count = t2v_row(self.tokenizer, question, answer, [])
            return ids[len(ids) - count :]
        if self.suffix_form:
            encoded = self.tokenizer(answer, add_special_tokens=False)["input_ids"]
            return answer_ids([], encoded, self.name)
        return self._answer_tokens(self.chat_prompt(question), self.answer_text(answer))

    def answer_text(self, answer: str) -> str:
        """``answer`` as it follows the rendered prompt (``vqa_prompt.after_separator``)."""
        return after_separator(self.separator, answer)

    def describe_answer(self) -> str:
        """How a pair's answer is scored, for the run's summary: its text after the prompt,
        the separator and where it was read, and the scored tokens."""
        tokens = self.tokenizer.convert_ids_to_tokens(self.answer_tokens("a"))
        if self.t2v:
            return f"t2v_metrics' LLaVA-1.5 prompt, answer and EOS scored: tokens {tokens}"
        caption = self.prompt.mode == "caption"
        answer = "the text" if caption else repr(self.answer_text(self.prompt.answer))
        where = (
            "as the processor's suffix= (its EOS not scored)"
            if self.suffix_form
            else f"after the generation prompt, separator {self.separator!r} from "
            f"{self.separator_source}"
        )
        return f"{answer} {where}: tokens {tokens}{' for the text a' if caption else ''}"

    def match_probability(self, scores: np.ndarray) -> np.ndarray:
        """exp(mean log-probability): the answer's per-token geometric-mean probability."""
        import numpy as np

        return np.exp(np.asarray(scores, dtype=np.float64)).astype(np.float32)

    def score_pairs(self, images: list[Image], texts: list[str]) -> np.ndarray:
        """The mean log-probability of each pair's answer tokens, as fp32 [len(images)]."""
        import numpy as np

        if len(images) != len(texts):
            raise ValueError(f"score_pairs got {len(images)} images but {len(texts)} texts")
        if not images:
            return np.zeros((0,), dtype=np.float32)
        with self.forward_context():
            return run_in_batches(list(zip(images, texts, strict=True)), self, self._forward)

    def chat_prompt(self, question: str) -> str:
        """The chat template's text for one user message [image, question] + generation prompt."""
        found = self._chat_prompts.get(question)
        if found is None:
            content = [{"type": "image"}, {"type": "text", "text": question}]
            found = self.processor.apply_chat_template(
                [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
            )
            self._chat_prompts[question] = found
        return found

    def _answer_tokens(self, prompt: str, answer: str) -> list[int]:
        key = (prompt, answer)
        found = self._answer_ids.get(key)
        if found is None:
            encode = self.tokenizer
            found = answer_ids(
                encode(prompt)["input_ids"], encode(prompt + answer)["input_ids"], self.name
            )
            self._answer_ids[key] = found
        return found

    def _forward(self, batch: Sequence[tuple[Image, str]]) -> np.ndarray:
        """One padded forward over ``batch``: each row's mean answer-token log-probability."""
        images = [image for image, _ in batch]
        asked = [self.prompt.ask(text) for _, text in batch]
        if self.t2v:
            sums, counts = self.answer_log_probs(images, asked, t2v=True)
        else:
            sums, counts = self.answer_log_probs(
                images, [(question, self.answer_text(answer)) for question, answer in asked]
            )
        return to_float32_numpy(sums / counts)

    def answer_log_probs(
        self, images: list[Image], asked: list[tuple[str, str]], *, t2v: bool = False
    ) -> Any:
        """One padded forward over (image, (question, answer)) rows: each row's summed answer-
        token log-probability and its number of answer tokens (float64 tensors on the CPU).
        ``t2v``: the rows as t2v_metrics builds them (pair scores under the preset only)."""
        import torch

        if self.suffix_form:  # the answer is followed by the suffix's end-of-sequence token
            inputs, counts = self._suffix_inputs(images, asked)
            ends = inputs["attention_mask"].sum(dim=1) - 1
        elif t2v:  # the end-of-sequence token is scored
            images = padded_squares(images, self.processor.image_processor.image_mean)
            if self._image_ids is None:  # LLaVA-1.5 resizes every image to one size
                self._image_ids = expanded_image_ids(self.processor, images[0])
            inputs, counts = t2v_inputs(self.processor, images, asked, self._image_ids)
            ends = inputs["attention_mask"].sum(dim=1)
        else:
            inputs, counts = self._chat_inputs(images, asked)
            ends = inputs["attention_mask"].sum(dim=1)
        ids = inputs["input_ids"]
        starts = ends - counts  # each row's answer is [starts, ends) (padding is on the right)
        keep = torch.arange(int(starts.min()) - 1, int(ends.max()) - 1, device=ids.device)
        names = self._forward_names
        model_inputs = {k: self._on_device(v) for k, v in inputs.items() if k in names}
        if self.reuses_image_features:
            model_inputs = self._with_image_features(images, model_inputs)
        if "logits_to_keep" in self._forward_names:
            model_inputs["logits_to_keep"] = keep.to(self.device)
        if "use_cache" in self._forward_names:
            model_inputs["use_cache"] = False
        logits = self.model(**model_inputs).logits
        if logits.shape[1] != len(keep):  # the forward computed every position
            logits = logits[:, keep.to(logits.device)]
        log_probs = torch.log_softmax(logits.float(), dim=-1).cpu()
        targets = ids[:, keep + 1]  # position p predicts token p + 1
        token_log_probs = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        scored = (keep[None, :] >= starts[:, None] - 1) & (keep[None, :] <= ends[:, None] - 2)
        sums = (token_log_probs.double() * scored).sum(dim=1)
        return sums, scored.sum(dim=1).double()

    def _chat_inputs(self, images: list[Image], asked: list[tuple[str, str]]) -> tuple[Any, Any]:
        """Processor inputs for chat-template prompts + answers, and each row's answer length."""
        import torch

        prompts = [self.chat_prompt(question) for question, _ in asked]
        answers = [self._answer_tokens(p, a) for p, (_, a) in zip(prompts, asked, strict=True)]
        inputs = self.processor(
            images=images,
            text=[p + a for p, (_, a) in zip(prompts, asked, strict=True)],
            padding=True,
            padding_side="right",
            return_tensors="pt",
        )
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        for row, (length, answer) in enumerate(zip(lengths, answers, strict=True)):
            if inputs["input_ids"][row, length - len(answer) : length].tolist() != answer:
                raise ModelLoadError(
                    f"{self.name}: the processor tokenises prompt + answer differently from its "
                    "tokenizer (the answer's tokens are not at the end of its input); expected "
                    "a processor that only expands the image token"
                )
        return inputs, torch.tensor([len(a) for a in answers])

    def _suffix_inputs(self, images: list[Image], asked: list[tuple[str, str]]) -> tuple[Any, Any]:
        """Processor inputs for prefix + suffix (PaliGemma), and each row's answer length: the
        suffix's tokens (``token_type_ids`` 1) without its end-of-sequence token."""
        image_token = str(getattr(self.processor, "image_token", ""))
        inputs = self.processor(
            images=images,
            text=[image_token + question for question, _ in asked],
            suffix=[answer for _, answer in asked],
            padding=True,
            padding_side="right",
            return_tensors="pt",
        )
        inputs.pop("labels", None)
        counts = (inputs["token_type_ids"] * inputs["attention_mask"]).sum(dim=1) - 1
        if int(counts.min()) < 1:
            raise ModelLoadError(
                f"{self.name}: an answer tokenises to nothing; expected an answer with at "
                "least one token"
            )
        return inputs, counts

    def _with_image_features(self, images: list[Image], inputs: dict[str, Any]) -> dict[str, Any]:
        """``inputs`` without pixels, with the vision features of each unique image (computed
        once) for every pair on it."""
        import torch
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        first: dict[int, int] = {}
        index = [first.setdefault(id(image), len(first)) for image in images]
        unique = list({id(image): image for image in images}.values())
        pixels = self.processor.image_processor(images=unique, return_tensors="pt")
        accepted = set(inspect.signature(self.model.get_image_features).parameters)
        features = self.model.get_image_features(
            **{k: self._on_device(v) for k, v in pixels.items() if k in accepted},
            return_dict=True,
        ).pooler_output
        if isinstance(features, torch.Tensor):
            chosen: Any = features[torch.tensor(index, device=features.device)]
        else:
            chosen = [features[i] for i in index]
        out = {k: v for k, v in inputs.items() if k not in _IMAGE_KEYS}
        out["mm_encoder_outputs"] = {"image": BaseModelOutputWithPooling(pooler_output=chosen)}
        return out

    def _on_device(self, tensor: Any) -> Any:
        """``tensor`` on the model's device, in the model's dtype when it is floating point."""
        tensor = tensor.to(self.device)
        return tensor.to(self.dtype) if tensor.is_floating_point() else tensor


def prompt_form(processor: Any, where: str) -> str:
    """``chat`` (the processor has a chat template) or ``suffix`` (it takes ``suffix=``, as
    PaliGemma's does); one line when it has no image processor or neither form."""
    if getattr(processor, "image_processor", None) is None:
        raise ModelLoadError(
            f"{where}: its processor ({type(processor).__name__}) takes no images; expected "
            "the processor of an image-text-to-text model (AutoProcessor with an image "
            "processor and a tokenizer)"
        )
    if getattr(processor, "chat_template", None):
        return "chat"
    if "suffix" in inspect.signature(processor.__call__).parameters:
        return "suffix"
    raise ModelLoadError(
        f"{where}: its processor ({type(processor).__name__}) has no chat template and takes "
        "no suffix=; expected a chat template (processor.chat_template) to build the prompt"
    )


def load(body: str, options: ModelOptions) -> VqaScorer | served.ServedScorer:
    """Load ``vqa:BODY`` (a hub name or a ``save_pretrained`` directory) in eval mode; a
    URL body is a served model (``models.served``)."""
    if is_served(body):
        return served.load(body, options)
    spec = f"vqa:{body}"
    prompt = options.vqa
    prompt.check(("--vl-vqa-question", "--vl-vqa-answer", "--vl-vqa-mode", "--vl-vqa-preset"))
    where = HubLocation.of(body, spec)
    import transformers

    device = resolve_device(options.device)
    dtype = torch_dtype(effective_precision(options.precision, device))
    config = where.config(transformers)
    model_type = str(getattr(config, "model_type", ""))
    if not is_image_text_to_text(model_type):
        raise ModelLoadError(
            f"{spec}: a '{model_type}' model is not an image-text-to-text model; expected a "
            "generative VLM (LLaVA, Qwen2-VL, PaliGemma, ...); a CLIP-family, SigLIP or BLIP "
            f"model loads with hf:{body}"
        )
    model = where.model(transformers, transformers.AutoModelForImageTextToText, dtype)
    restore_unsaved_buffers(model)
    processor = _processor(transformers, where)
    model.to(device)
    model.eval()
    scorer = VqaScorer(
        name=spec,
        fingerprint=vqa_fingerprint(_fingerprint(body, where.source, where.local), prompt),
        model=model,
        processor=processor,
        prompt=prompt,
        device=device,
        dtype=dtype,
        batch_size=device_batch_size(options, device),
    )
    scorer.check_prompt()
    return scorer


def _processor(transformers: Any, where: HubLocation) -> Any:
    """The model's processor with the PIL image processor, checked for images and a prompt
    form (``prompt_form``)."""
    spec, source, hub_kwargs = where.spec, where.source, where.kwargs
    pil = _pil_processor_kwargs()
    try:
        try:
            processor = transformers.AutoProcessor.from_pretrained(source, **pil, **hub_kwargs)
        except ImportError:  # a video processor (Qwen2-VL's) has no PIL backend
            processor = transformers.AutoProcessor.from_pretrained(source, **hub_kwargs)
            processor.image_processor = transformers.AutoImageProcessor.from_pretrained(
                source, **pil, **hub_kwargs
            )
    except Exception as exc:
        if not where.local:
            raise where.error("its processor", exc) from exc
        raise ModelLoadError(
            f"{spec}: no processor that takes images could be loaded from {source} "
            f"({short_detail(exc, 160)}); expected the files processor.save_pretrained writes "
            "(image processor, tokenizer, chat template)"
        ) from exc
    prompt_form(processor, spec)
    return processor


def vqa_fingerprint(weights: str, prompt: VqaPrompt) -> str:
    """The weights' fingerprint with what is asked: scores of two prompts never mix."""
    return f"{weights}+vqa:{prompt.digest()}"


def check_files(body: str) -> str | None:
    """A ``save_pretrained`` folder as ``hf:`` checks it (``spec_files``); a served model's
    ``http(s)://`` address names no local file."""
    if is_served(body):
        return None
    return missing_folder(body.strip(), "model directory")


def identify(body: str, options: ModelOptions, digest: Digest) -> ModelIdentity | None:
    """The fingerprint ``load`` would give, without transformers or torch (a local directory,
    or a hub name in the local hub cache), else None."""
    if is_served(body):
        return served.identify(body, options, digest)
    try:
        source, local = _resolve_source(body, f"vqa:{body}")
    except VlcheckUserError:
        return None
    weights = fingerprint_path(source, digest) if local else _fingerprint(body, source, local)
    if weights == f"hf:{body}":
        return None
    preprocessing = f"transformers {metadata.version('transformers')} vqa {options.vqa.describe()}"
    return ModelIdentity(vqa_fingerprint(weights, options.vqa), preprocessing)
