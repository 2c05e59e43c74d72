"""`turnout mock-upstream`: an OpenAI + Anthropic + Gemini compatible HTTP server with
scriptable faults.

For tests, demos and benchmarks. It answers like the vendors, over real sockets:

=========================================================  ======================================
endpoint                                                   answer
=========================================================  ======================================
``POST /v1/chat/completions`` (``stream: true`` as SSE)    OpenAI chat completion / chunks
``POST /v1/embeddings``                                    one deterministic vector per input
``GET /v1/models``                                         a fixed model list
``POST /v1/messages`` (``stream: true`` as SSE)            Anthropic message / event sequence
``POST /v1/messages/count_tokens``                         ``{"input_tokens": n}``
``POST /v1/responses`` (``stream: true`` as SSE)           OpenAI response / numbered events
``GET|DELETE /v1/responses/{id}``                          a response it answered, kept by id
``POST /openai/deployments/{dep}/chat/completions``        Azure paths map to the same handlers
``POST /v1beta/models/{model}:generateContent``            Gemini answer (``mock_upstream.gemini``)
``POST /v1beta/models/{model}:streamGenerateContent``      Gemini SSE events
``POST /v1beta/models/{model}:batchEmbedContents``         one deterministic vector per request
``POST /model/{modelId}/converse``                         Bedrock answer (``.bedrock``)
``POST /model/{modelId}/converse-stream``                  Bedrock event-stream frames
``POST /model/{modelId}/invoke``                           Anthropic message for Claude on Bedrock
``POST /model/{modelId}/invoke-with-response-stream``      Anthropic events in ``chunk`` frames
=========================================================  ======================================

Any path ending in those suffixes is served (so base URLs with a prefix work). Answers read
``mock answer from <model>``, with plausible usage and ids, and an ``x-request-id`` header
(plus ``request-id`` on Anthropic endpoints). A request that offers tools and forces a call
(``tool_choice``), or whose fault says ``tool_call``, is answered with a tool call instead, whole
or streamed in the vendor's shape, its arguments an example of the tool's JSON schema.

Faults
------
A **fault spec**, named by the model (``gpt-4o-mini/fault:status=429;retry_after=8``,
``mock-429-retry-8``), the ``x-mock-fault`` header or a script queued at ``/_mock/scripts``, says
what to do to a request: an error status, a quota signal, a slow or cut or malformed stream, bad
bytes. Its grammar is ``faults.GRAMMAR``, printed by ``turnout mock-upstream --help`` and at the
end of this docstring.

Request log and control
-----------------------
``GET /_mock/requests[?model=M]``: every API request, oldest first, as JSON objects with
``seq, time, method, path, query, model, stream, fault, fault_items, credential`` (the value of
``Authorization`` without ``Bearer``, else ``x-api-key``, else ``api-key``, else
``x-goog-api-key``), ``credentials``
(each of those headers present), ``headers`` (anthropic-version, anthropic-beta, user-agent …),
``request_id``, ``status`` and ``body``. ``DELETE /_mock/requests`` clears it;
``GET|POST|DELETE /_mock/scripts`` lists, queues or clears scripts (and sequence positions);
``POST /_mock/reset`` clears everything; ``GET /_mock/health`` says it is up.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from turnout._lazy import lazy_names
from turnout.mock_upstream.faults import GRAMMAR, Fault, parse_fault, parse_sequence, split_model

if TYPE_CHECKING:
    from turnout.mock_upstream.app import MockUpstreamApp
    from turnout.mock_upstream.server import MockUpstream, ThreadedMockUpstream, main

__doc__ = f"{__doc__ or ''}\nFault grammar\n-------------\n::\n\n{textwrap.indent(GRAMMAR, '    ')}"

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

# The server parts load on first use, so that reading the grammar (the command line's help, a
# config check of a mock provider's script) does not load the HTTP server with it.
__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "MockUpstreamApp": f"{__name__}.app",
        "MockUpstream": f"{__name__}.server",
        "ThreadedMockUpstream": f"{__name__}.server",
        "main": f"{__name__}.server",
    },
)
