"""The wire formats the fake model speaks: Anthropic Messages, Gemini generateContent, OpenAI
Responses and OpenAI Chat Completions, streaming (SSE) and not, plus the side calls the CLIs make
(model lists, token counts).

Each protocol has two halves: `*_conversation` reads the request into a list of `Message`s (role,
text, number of tool results) for the script, and `*_reply` writes the script's `Reply` in the
shape that protocol's client parses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fake_model import FakeModel

SSE = "text/event-stream"
JSON = "application/json"
USAGE_IN, USAGE_OUT = 100, 10


@dataclass(frozen=True)
class Message:
    role: str  # "user", "assistant" or "tool"
    text: str
    tool_results: int = 0


def route(
    model: FakeModel, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any]
) -> tuple[int, str, Any]:
    """Answer one request: (status, content type, JSON value or raw bytes)."""
    if method == "POST" and path.endswith("/messages/count_tokens"):
        return 200, JSON, {"input_tokens": USAGE_IN}
    if method == "POST" and path.endswith("/messages"):
        return anthropic(model, body)
    if method == "POST" and (m := re.search(r"/models/([^/:]+):(\w+)$", path)):
        return gemini(model, m.group(2), body)
    if method == "POST" and path.endswith("/responses"):
        return responses(model, body)
    if method == "POST" and path.endswith("/chat/completions"):
        return chat(model, body)
    if method == "GET" and path.endswith("/models"):
        return 200, JSON, models(model, path)
    return (
        404,
        JSON,
        {"error": {"message": f"the fake model has no {method} {path}", "type": "not_found_error"}},
    )


def models(model: FakeModel, path: str) -> dict[str, Any]:
    if "/v1beta/" in path:
        return {
            "models": [
                {
                    "name": f"models/{model.model}",
                    "displayName": model.model,
                    "supportedGenerationMethods": ["generateContent"],
                }
            ]
        }
    entry = {
        "id": model.model,
        "object": "model",
        "type": "model",
        "created": 0,
        "owned_by": "fake",
        "display_name": model.model,
    }
    return {"object": "list", "data": [entry], "has_more": False}


def sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


def _text(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts with `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p.get("text", "")
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


# -- Anthropic Messages (Claude Code) -------------------------------------------------------------
def anthropic(model: FakeModel, body: dict[str, Any]) -> tuple[int, str, Any]:
    conv = []
    for m in body.get("messages", []):
        content = m.get("content")
        blocks = content if isinstance(content, list) else []
        results = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result")
        conv.append(Message(m.get("role", ""), _text(content), results))
    reply = model.reply(conv, bool(body.get("tools")), json.dumps(body))
    if reply.call is not None:
        block = {
            "type": "tool_use",
            "id": reply.call_id,
            "name": reply.call.name,
            "input": reply.call.args,
        }
        stop = "tool_use"
    else:
        block = {"type": "text", "text": reply.text}
        stop = "end_turn"
    msg = {
        "id": model.next_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", model.model),
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT},
    }
    if not body.get("stream"):
        return 200, JSON, msg
    start = {
        **msg,
        "content": [],
        "stop_reason": None,
        "usage": {**msg["usage"], "output_tokens": 1},
    }
    if block["type"] == "tool_use":
        first = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        first = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    return (
        200,
        SSE,
        sse(
            [
                ("message_start", {"type": "message_start", "message": start}),
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": first},
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": USAGE_OUT},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        ),
    )


# -- Gemini generateContent (Gemini CLI) ----------------------------------------------------------
def gemini(model: FakeModel, method: str, body: dict[str, Any]) -> tuple[int, str, Any]:
    if method == "countTokens":
        return 200, JSON, {"totalTokens": USAGE_IN}
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    conv = []
    for c in body.get("contents", []):
        parts = [p for p in c.get("parts", []) if isinstance(p, dict)]
        results = sum(1 for p in parts if "functionResponse" in p)
        conv.append(
            Message("assistant" if c.get("role") == "model" else "user", _text(parts), results)
        )
    has_tools = any(
        t.get("functionDeclarations") for t in body.get("tools") or [] if isinstance(t, dict)
    )
    reply = model.reply(conv, has_tools, json.dumps(body))
    if reply.call is not None:
        part = {
            "functionCall": {"name": reply.call.name, "args": reply.call.args, "id": reply.call_id}
        }
    elif schema:
        part = {"text": json.dumps(fill_schema(schema))}
    else:
        part = {"text": reply.text}
    data = {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": USAGE_IN,
            "candidatesTokenCount": USAGE_OUT,
            "totalTokenCount": USAGE_IN + USAGE_OUT,
        },
        "modelVersion": model.model,
    }
    if method == "streamGenerateContent":
        return 200, SSE, sse([(None, data)])
    return 200, JSON, data


def fill_schema(schema: dict[str, Any]) -> Any:
    """A value that fits a JSON schema: each enum's first choice, empty strings and lists,
    false, the least number allowed (1 when unsaid). It answers side requests such as Gemini
    CLI's next-speaker and routing checks."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: fill_schema(v) for k, v in (schema.get("properties") or {}).items()}
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)  # scores such as "complexity from 1-100"
    return {"array": [], "string": "", "boolean": False}.get(kind)


# -- OpenAI Responses (Codex CLI) ----------------------------------------------------------------
def responses(model: FakeModel, body: dict[str, Any]) -> tuple[int, str, Any]:
    items = body.get("input")
    items = (
        [{"type": "message", "role": "user", "content": items}]
        if isinstance(items, str)
        else items or []
    )
    conv = []
    for it in items:
        kind = it.get("type", "message")
        if kind == "message":
            conv.append(Message(it.get("role", ""), _text(it.get("content"))))
        elif kind.endswith("_output"):
            conv.append(Message("tool", "", 1))
    reply = model.reply(conv, bool(body.get("tools")), json.dumps(body))
    if reply.call is None:
        item: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "id": model.next_id("msg_"),
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }
    elif isinstance(reply.call.args, str):
        item = {
            "type": "custom_tool_call",
            "id": model.next_id("ctc_"),
            "status": "completed",
            "call_id": reply.call_id,
            "name": reply.call.name,
            "input": reply.call.args,
        }
    else:
        item = {
            "type": "function_call",
            "id": model.next_id("fc_"),
            "status": "completed",
            "call_id": reply.call_id,
            "name": reply.call.name,
            "arguments": json.dumps(reply.call.args),
        }
        if reply.call.namespace:  # a deferred tool (Codex's MCP tools): called in its namespace
            item["namespace"] = reply.call.namespace
    rid = model.next_id("resp_")
    usage = {
        "input_tokens": USAGE_IN,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": USAGE_OUT,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": USAGE_IN + USAGE_OUT,
    }
    done = {
        "id": rid,
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": body.get("model", model.model),
        "output": [item],
        "usage": usage,
    }
    if not body.get("stream"):
        return 200, JSON, done
    events: list[tuple[str | None, Any]] = [
        (
            "response.created",
            {
                "type": "response.created",
                "response": {**done, "status": "in_progress", "output": []},
            },
        ),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
    ]
    if reply.call is None:
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": reply.text,
                },
            )
        )
    events += [
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        ("response.completed", {"type": "response.completed", "response": done}),
    ]
    return 200, SSE, sse(events)


# -- OpenAI Chat Completions (Qwen Code, opencode, Copilot's BYOK) -------------------------------
def chat(model: FakeModel, body: dict[str, Any]) -> tuple[int, str, Any]:
    conv = [
        Message(m.get("role", ""), _text(m.get("content")), int(m.get("role") == "tool"))
        for m in body.get("messages", [])
    ]
    reply = model.reply(conv, bool(body.get("tools")), json.dumps(body))
    cid = model.next_id("chatcmpl-")
    name = body.get("model", model.model)
    usage = {
        "prompt_tokens": USAGE_IN,
        "completion_tokens": USAGE_OUT,
        "total_tokens": USAGE_IN + USAGE_OUT,
    }
    if reply.call is not None:
        args = reply.call.args if isinstance(reply.call.args, str) else json.dumps(reply.call.args)
        call = {
            "id": reply.call_id,
            "type": "function",
            "function": {"name": reply.call.name, "arguments": args},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": reply.text}
        finish = "stop"
    head = {"id": cid, "created": 0, "model": name, "system_fingerprint": "fake"}
    if not body.get("stream"):
        return (
            200,
            JSON,
            {
                **head,
                "object": "chat.completion",
                "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            },
        )
    delta = dict(message)
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": 0, **delta["tool_calls"][0]}]
    chunk = {**head, "object": "chat.completion.chunk"}
    return (
        200,
        SSE,
        sse(
            [
                (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
                (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
                (None, {**chunk, "choices": [], "usage": usage}),
                (None, "[DONE]"),
            ]
        ),
    )
