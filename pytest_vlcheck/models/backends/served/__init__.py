"""``vqa:http(s)://HOST:PORT/v1#MODEL@REVISION``: a generative VLM behind vLLM, SGLang or any
OpenAI-compatible chat endpoint, scored over HTTP by the same VQAScore route and generative
methods as the in-process ``vqa:`` backend.

``endpoint`` reads the spec's body (replicas, model id, revision; the URL shown without
credentials), ``client`` sends requests (concurrency, retries, timeouts, the API key),
``chat`` builds vLLM's chat-completions requests and reads their answers, ``scorer`` is the
scorer. None of them imports torch or transformers.
"""
