"""`turnout mock-upstream`: an OpenAI + Anthropic compatible HTTP server with scriptable faults.

For tests, demos and benchmarks. It answers like the vendors, over real sockets:

=========================================================  ======================================
endpoint                                                   answer
=========================================================  ======================================
``POST /v1/chat/completions`` (``stream: true`` as SSE)    OpenAI chat completion / chunks
``POST /v1/embeddings``                                    one deterministic vector per input
``GET /v1/models``                                         a fixed model list
``POST /v1/messages`` (``stream: true`` as SSE)            Anthropic message / event sequence
``POST /v1/messages/count_tokens``                         ``{"input_tokens": n}``
``POST /openai/deployments/{dep}/chat/completions``        Azure paths map to the same handlers
=========================================================  ======================================

Any path ending in those suffixes is served (so base URLs with a prefix work). Answers read
``mock answer from <model>``, with plausible usage and ids, and an ``x-request-id`` header
(plus ``request-id`` on Anthropic endpoints).

Faults
------
A **fault spec** says what to do to a request. It is taken from, first match wins:

1. a script queued for the model (``POST /_mock/scripts {"model": "m", "faults": ["status=429",
   "ok"]}``): each request for ``m`` consumes the next step (model ``*``: any model, after the
   model's own script); when the queue is empty, the request's own spec applies;
2. the ``x-mock-fault`` request header;
3. the model name: everything after ``fault:`` (``gpt-4o-mini/fault:status=429;retry_after=8``;
   the part before the marker, without a trailing ``/ @ + : -``, is the model's base name), or a
   shorthand name ``mock-<word>-<word>…`` (``mock-429-retry-8``, ``mock-hang``,
   ``mock-quota-kimi``, ``mock-cut-2``; an unknown word makes it an ordinary model name).

Grammar::

    spec  = step *( "|" step )        a sequence: the n-th request carrying the same spec text
                                      gets step n; after the last step, plain answers
    step  = "ok" / item *( ";" item )
    item  = key [ "=" value ]

================================  ===============================================================
item                              effect
================================  ===============================================================
``status=N``                      answer HTTP N with the vendor's error body
``message=TEXT`` ``type=T``       override the error message / the error type (or code)
``vendor=V``                      error flavour: openai, anthropic, azure, deepseek, groq, kimi,
                                  zai, xai, ollama, vllm (default: by endpoint)
``retry_after=S``                 ``Retry-After: S`` (seconds; shorthand ``retry-S``)
``retry_after_date=S``            ``Retry-After`` as an HTTP date S seconds ahead
``retry_after_ms=MS``             ``retry-after-ms: MS``
``quota``                         the vendor's quota/credit signal (OpenAI 429
                                  ``insufficient_quota``; Anthropic 400 "credit balance is too
                                  low"; DeepSeek 402; Kimi 429 ``exceeded_current_quota_error``;
                                  Z.ai 429 code 1113; xAI 429 "used all available credits")
``reset_in=S``                    with ``quota;vendor=zai``: code 1308 "Your limit will reset at
                                  <time>" S seconds ahead (China Standard Time, as Z.ai writes it)
``context_length``                400 naming a context-length reason (shorthand ``ctx``)
``content_policy``                400 naming a content-policy reason (shorthand ``policy``)
``refuse``                        200 refusal: ``finish_reason: content_filter`` /
                                  ``stop_reason: refusal``
``latency=S``                     wait S seconds before the response headers (``slow-S``)
``hang``                          never answer (until the client leaves, or ``hold_limit``)
``reset``                         reset the connection (TCP RST) before any response byte
``first_token=S``                 streams: headers and role/start events at once, first content
                                  after S seconds (``ttft-S``)
``chunk_delay=S``                 streams: S seconds between content chunks
``chunks=N``                      the answer in N content chunks (default: one per word)
``cut=N``                         drop the connection after N content chunks (non-streams: after
                                  the headers and half the body)
``stall=N``                       go silent after N content chunks, connection open
``end=N``                         streams: end the body cleanly after N content chunks, with no
                                  finish reason and no terminator
``malformed[=N]``                 a malformed event after N content chunks (default 1)
``no_done``                       end without ``data: [DONE]`` / ``message_stop`` (usage is sent)
``error_event``                   streams: an in-stream error event (``overloaded_error``) before
                                  the first token
``body=KIND``                     bad bytes instead of the answer: garbage, truncated, nonutf8,
                                  html (a proxy's 502 page), empty, wrong_type (right bytes,
                                  ``text/html``); status 200 unless ``status=`` (html: 502)
================================  ===============================================================

A spec that does not parse is answered with a 400 naming the bad item.

Request log and control
-----------------------
``GET /_mock/requests[?model=M]``: every API request, oldest first, as JSON objects with
``seq, time, method, path, query, model, stream, fault, fault_items, credential`` (the value of
``Authorization`` without ``Bearer``, else ``x-api-key``, else ``api-key``), ``credentials``
(each of those headers present), ``headers`` (anthropic-version, anthropic-beta, user-agent …),
``request_id``, ``status`` and ``body``. ``DELETE /_mock/requests`` clears it;
``GET|POST|DELETE /_mock/scripts`` lists, queues or clears scripts (and sequence positions);
``POST /_mock/reset`` clears everything; ``GET /_mock/health`` says it is up.
"""

from __future__ import annotations

from turnout.mock_upstream.app import MockUpstreamApp
from turnout.mock_upstream.faults import Fault, parse_fault, parse_sequence, split_model
from turnout.mock_upstream.server import MockUpstream, ThreadedMockUpstream, main

__all__ = [
    "Fault",
    "MockUpstream",
    "MockUpstreamApp",
    "ThreadedMockUpstream",
    "main",
    "parse_fault",
    "parse_sequence",
    "split_model",
]
