"""A small OpenAI-compatible server for the served-model tests: vLLM's chat-completions
fields around tiny models saved by ``vqa_builders``, on 127.0.0.1.

    python tests/served_server.py --model NAME=DIR [--model ...] [--api-key-env VAR]

It prints ``PORT <n>`` once listening. It renders the chat template as vLLM does
(``add_generation_prompt``, ``continue_final_message``), runs one forward per request, and
answers ``prompt_logprobs`` (one ``{token id: {logprob}}`` per prompt token, the first
null), ``return_token_ids`` (``prompt_token_ids``), ``logprobs`` with ``logprob_token_ids``
and ``return_tokens_as_token_ids`` (at the first generated position), and greedy
generation at ``/v1``. Other bases behave as the tests need, one server for all of them:

- ``/plain/v1`` refuses those fields with a 400, as a plain chat API does;
- ``/flaky/v1`` answers each chat request with a 503 the first time it sees it;
- ``/jitter/v1`` sleeps up to 50 ms (seeded by the request), so answers complete out of order;
- ``/slow/v1`` sleeps 3 s before each chat answer (a timeout);
- ``/key/v1`` wants ``Authorization: Bearer $VAR`` (``--api-key-env VAR``).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_vlcheck.models.backends.served.chat import EXTENSIONS  # what /plain refuses


class Models:
    """The served models by id, and one lock: forwards run one at a time."""

    def __init__(self, named: list[str]) -> None:
        import torch

        from pytest_vlcheck.models.backends import vqa as vqa_backend

        torch.set_num_threads(1)  # forwards run one at a time: more threads only contend
        from pytest_vlcheck.models.protocol import ModelOptions

        self.by_id: dict[str, tuple[Any, Any]] = {}
        for item in named:  # the model and PIL processor as vqa: loads them
            name, _, folder = item.partition("=")
            loaded = vqa_backend.load(folder, ModelOptions(device="cpu"))
            self.by_id[name] = (loaded.model, loaded.processor)
        self.lock = threading.Lock()


def _messages(request: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The chat as the processor's template takes it, and the images (data URIs decoded)."""
    from PIL import Image

    images, messages = [], []
    for message in request["messages"]:
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        parts = []
        for part in content:
            if part["type"] == "image_url":
                data = part["image_url"]["url"].partition(",")[2]
                images.append(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))
                parts.append({"type": "image"})
            else:
                parts.append({"type": "text", "text": part["text"]})
        messages.append({"role": message["role"], "content": parts})
    return messages, images


def complete(models: Models, request: dict[str, Any]) -> dict[str, Any]:
    """One chat completion, with the vLLM fields the request asks for."""
    import torch

    model, processor = models.by_id[request["model"]]
    messages, images = _messages(request)
    text = processor.apply_chat_template(
        messages,
        add_generation_prompt=request.get("add_generation_prompt", True),
        continue_final_message=request.get("continue_final_message", False),
        tokenize=False,
    )
    inputs = processor(images=images or None, text=[text], return_tensors="pt")
    ids = inputs["input_ids"][0].tolist()
    max_tokens = int(request.get("max_tokens") or 16)
    with models.lock, torch.no_grad():
        log_probs = torch.log_softmax(model(**inputs).logits[0].double(), dim=-1)
        if max_tokens > 1:
            out = model.generate(**inputs, max_new_tokens=max_tokens, do_sample=False, num_beams=1)
            generated = out[0, len(ids) :].tolist()
        else:
            generated = [int(log_probs[-1].argmax())]
    tokenizer = processor.tokenizer
    answer: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": request["model"],
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": tokenizer.decode(generated, skip_special_tokens=True),
                },
                "logprobs": _first_logprobs(request, log_probs[-1], generated[0]),
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": len(ids), "completion_tokens": len(generated)},
    }
    if request.get("return_token_ids"):
        answer["prompt_token_ids"] = ids
    if request.get("prompt_logprobs") is not None:
        answer["prompt_logprobs"] = [None] + [
            {str(ids[p]): {"logprob": float(log_probs[p - 1, ids[p]]), "rank": None}}
            for p in range(1, len(ids))
        ]
    return answer


def _first_logprobs(request: dict[str, Any], row: Any, chosen: int) -> dict[str, Any] | None:
    if not request.get("logprobs"):
        return None
    as_ids = request.get("return_tokens_as_token_ids")
    asked = request.get("logprob_token_ids") or []

    def token(i: int) -> str:
        return f"token_id:{i}" if as_ids else str(i)

    top = [{"token": token(i), "logprob": float(row[i])} for i in asked]
    return {
        "content": [{"token": token(chosen), "logprob": float(row[chosen]), "top_logprobs": top}]
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once (no delayed-ACK stall)
    server: Server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _route(self) -> tuple[str, str]:
        """(personality, path after ``/v1``) of the request."""
        head, _, rest = self.path.partition("/v1/")
        return head.strip("/"), rest

    def do_GET(self) -> None:
        if self._refused():
            return
        if self._route()[1].rstrip("/") != "models":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        data = [{"id": name, "object": "model"} for name in self.server.models.by_id]
        self._send(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self._refused():
            return
        request = json.loads(body)
        personality = self._route()[0]
        if personality == "flaky" and self.server.first_time(body):
            self._send(503, {"error": {"message": "busy, try again"}})
            return
        if personality == "plain":
            sent = [field for field in EXTENSIONS if field in request]
            if sent:
                message = f"Unrecognized request argument supplied: {sent[0]}"
                self._send(400, {"error": {"message": message}})
                return
        if request.get("model") not in self.server.models.by_id:
            self._send(
                404, {"error": {"message": f"The model `{request.get('model')}` does not exist."}}
            )
            return
        if personality == "jitter":
            time.sleep(0.05 * (int(hashlib.sha256(body).hexdigest()[:8], 16) % 1000) / 1000)
        if personality == "slow":
            time.sleep(3)
        self._send(200, complete(self.server.models, request))

    def _refused(self) -> bool:
        key = self.server.api_key
        if self._route()[0] == "key" and self.headers.get("Authorization") != f"Bearer {key}":
            self._send(401, {"error": {"message": "invalid API key"}})
            return True
        return False

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that gave up (a timeout test) breaks the pipe."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.models = Models(args.model)
        self.api_key = os.environ.get(args.api_key_env) if args.api_key_env else None
        self._seen: set[str] = set()
        self._seen_lock = threading.Lock()

    def first_time(self, body: bytes) -> bool:
        """Whether this request body has not been seen before (``/flaky``)."""
        digest = hashlib.sha256(body).hexdigest()
        with self._seen_lock:
            new = digest not in self._seen
            self._seen.add(digest)
            return new


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", action="append", default=[])
    parser.add_argument("--api-key-env")
    server = Server(parser.parse_args())
    print(f"PORT {server.server_address[1]}", flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
