"""``hf:NAME_OR_DIR`` priors: a causal language model scores each text by its perplexity.

Convention (the seed's, stated in README): a text's score is the mean negative
log-likelihood of its tokens, each conditioned on the tokens before it, with the model's BOS
token prepended so the first word is scored too (GPT-2 uses ``<|endoftext|>`` for it). No
EOS is appended. Texts are tokenized without the tokenizer's own special tokens, batched with
right padding that the attention mask and the loss both ignore, and run in fp32 (or
``--vl-precision`` on a GPU); log-probabilities are taken in fp32. Texts longer than the
model's context are cut with one ``TruncationWarning`` each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pytest_vlcheck.models.batching import TruncationLog, chunked, device_batch_size
from pytest_vlcheck.models.devices import effective_precision, resolve_device, torch_dtype
from pytest_vlcheck.models.protocol import ModelOptions


class CausalLMPrior:
    """A transformers ``AutoModelForCausalLM`` with its tokenizer, in eval mode."""

    def __init__(self, body: str, options: ModelOptions) -> None:
        import transformers

        local = Path(body).exists()
        kwargs: dict[str, Any] = {"local_files_only": True} if local else {}
        self.name = body.rstrip("/").rsplit("/", 1)[-1]
        self.device = resolve_device(options.device)
        dtype = torch_dtype(effective_precision(options.precision, self.device))
        self.batch_size = device_batch_size(options, self.device)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(body, **kwargs)
        model = transformers.AutoModelForCausalLM.from_pretrained(body, dtype=dtype, **kwargs)
        # transformers wraps ``to`` with functools.wraps, whose typing drops ``self``
        self.model = model.to(self.device).eval()  # type: ignore[arg-type]
        bos = self.tokenizer.bos_token_id
        self.bos_id = bos if bos is not None else self.tokenizer.eos_token_id
        if self.bos_id is None:
            raise ValueError(f"hf:{body}: the tokenizer has neither a BOS nor an EOS token")
        config = self.model.config
        self.max_length = int(
            getattr(config, "n_positions", None) or config.max_position_embeddings
        )
        self.truncation = TruncationLog(self.name)

    def _token_ids(self, text: str) -> list[int]:
        ids = [self.bos_id, *self.tokenizer(text, add_special_tokens=False)["input_ids"]]
        if len(ids) > self.max_length:
            self.truncation.report(text, len(ids), self.max_length)
            ids = ids[: self.max_length]
        return ids

    def text_nll(self, texts: list[str]) -> np.ndarray:
        """Mean token NLL of each text (NaN for an empty text: nothing to score)."""
        out = np.empty(len(texts), dtype=np.float64)
        start = 0
        for batch in chunked(list(texts), self.batch_size):
            out[start : start + len(batch)] = self._batch_nll([self._token_ids(t) for t in batch])
            start += len(batch)
        return out

    def _batch_nll(self, rows: list[list[int]]) -> np.ndarray:
        import torch

        width = max(len(row) for row in rows)
        ids = torch.full((len(rows), width), self.bos_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for index, row in enumerate(rows):
            ids[index, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[index, : len(row)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.no_grad():
            logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
        logprobs = torch.log_softmax(logits[:, :-1], dim=-1)
        targets = ids[:, 1:]
        token_nll = -logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        scored = mask[:, 1:].to(token_nll.dtype)
        total = (token_nll * scored).sum(dim=1)
        count = scored.sum(dim=1)
        return (total / count).detach().cpu().double().numpy()
