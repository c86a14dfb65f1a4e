"""Request validation for the fake server: the checks the real chat
completions and embeddings APIs make, with their own error texts.
`validate_chat_request` and `validate_embedding_request` raise `Rejected` for a
request OpenAI would refuse with 400."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from memgpt_lite.text import loads_strict

if TYPE_CHECKING:
    from memgpt_lite.llm.tokens import TokenCounter


def parse_request_body(raw: bytes) -> Any:
    """A request body read as strictly as the real API reads it: ValueError for
    invalid JSON or UTF-8, NaN, Infinity, an out-of-range number, and a lone
    surrogate. Python's json accepts `"\\ud800"` (and `float("nan")` as `NaN`);
    a strict parser refuses both, so the real API answers 400 and so do we."""
    body = loads_strict(raw)  # a JSONProblem is a ValueError
    pending = [body]
    while pending:  # no recursion: the body may be nested deeply
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str):
            value.encode("utf-8")  # UnicodeEncodeError, a ValueError, for a lone surrogate
    return body


class Rejected(Exception):
    """A request the real API would refuse with 400."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param, self.code = message, param, code


_ROLES = ("system", "developer", "user", "assistant", "tool")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_MISSING_RESPONSES = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
# "preceeding" is OpenAI's own spelling; tests may compare the text exactly.
_ORPHAN_TOOL = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
    "message with 'tool_calls'."
)
_CONTENT = "one of a string or array of objects"
_STREAM_OPTIONS = ("include_usage", "include_obfuscation")
_ONLY_WITH_TOOLS = "Invalid value for '{0}': '{0}' is only allowed when 'tools' are specified."


# Builders for OpenAI's standard error texts, so each rule below is one line.
def _missing(param: str) -> Rejected:
    return Rejected(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


def _wrong_type(param: str, expected: str, value: object) -> Rejected:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a decimal"}
    names |= {list: "an array", dict: "an object", type(None): "null"}
    got = names.get(type(value), type(value).__name__)
    message = f"Invalid type for '{param}': expected {expected}, but got {got} instead."
    return Rejected(message, param, "invalid_type")


def _empty(param: str) -> Rejected:
    message = (
        f"Invalid '{param}': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead."
    )
    return Rejected(message, param, "empty_array")


def _is_content(value: object) -> bool:
    """A string, or a list of content-part objects."""
    if isinstance(value, list):
        return all(isinstance(part, dict) for part in value)
    return isinstance(value, str)


def _check_top_level(body: object) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise Rejected("fake server: the request body must be a JSON object")
    if not (isinstance(body.get("model"), str) and body["model"]):
        raise Rejected("you must provide a model parameter", "model")
    if "messages" not in body:
        raise _missing("messages")
    if not isinstance(body["messages"], list):
        raise _wrong_type("messages", "an array", body["messages"])
    if not body["messages"]:
        raise _empty("messages")
    _check_stream(body)
    return body


def _check_stream(body: dict[str, Any]) -> None:
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise _wrong_type("stream", "a boolean", stream)
    options = body.get("stream_options")
    if options is None:
        return
    if not isinstance(options, dict):
        raise _wrong_type("stream_options", "an object", options)
    if not stream:
        raise Rejected(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        )
    for key, value in options.items():
        if key not in _STREAM_OPTIONS:
            param = f"stream_options.{key}"
            raise Rejected(f"Unknown parameter: '{param}'.", param, "unknown_parameter")
        if value is not None and not isinstance(value, bool):
            raise _wrong_type(f"stream_options.{key}", "a boolean", value)


def _check_message(where: str, msg: object) -> None:
    if not isinstance(msg, dict):
        raise _wrong_type(where, "an object", msg)
    role = msg.get("role")
    if role not in _ROLES:
        supported = ", ".join(f"'{r}'" for r in _ROLES)
        message = f"Invalid value: {role!r}. Supported values are: {supported}."
        raise Rejected(message, f"{where}.role", "invalid_value")
    content = msg.get("content")
    # null tool_calls is what model_dump() of a client message sends: allowed.
    has_calls = role == "assistant" and msg.get("tool_calls") is not None
    if has_calls:
        _check_tool_calls(f"{where}.tool_calls", msg["tool_calls"])
    if role == "tool" and not (isinstance(msg.get("tool_call_id"), str) and msg["tool_call_id"]):
        raise _missing(f"{where}.tool_call_id")
    if content is None and not has_calls:
        raise _missing(f"{where}.content")
    if content is not None and not _is_content(content):
        raise _wrong_type(f"{where}.content", _CONTENT, content)


def _check_tool_calls(where: str, calls: object) -> None:
    if not isinstance(calls, list):
        raise _wrong_type(where, "an array", calls)
    if not calls:
        raise _empty(where)
    for j, tc in enumerate(calls):
        at = f"{where}[{j}]"
        if not isinstance(tc, dict):
            raise _wrong_type(at, "an object", tc)
        if not isinstance(tc.get("id"), str):
            raise _missing(f"{at}.id")
        if tc.get("type") != "function":
            message = f"Invalid value: {tc.get('type')!r}. Supported values are: 'function'."
            raise Rejected(message, f"{at}.type", "invalid_value")
        fn = tc.get("function")
        if not isinstance(fn, dict):
            raise _wrong_type(f"{at}.function", "an object", fn)
        for key in ("name", "arguments"):
            if not isinstance(fn.get(key), str):
                raise _wrong_type(f"{at}.function.{key}", "a string", fn.get(key))


def _check_pairing(messages: list[dict[str, Any]]) -> None:
    """Every tool call must be answered by the tool messages right after it."""
    unanswered: list[str] = []  # ids of the preceding tool_calls message still open
    for msg in messages:
        if msg["role"] == "tool":
            if msg["tool_call_id"] not in unanswered:
                raise Rejected(_ORPHAN_TOOL, "messages")
            unanswered.remove(msg["tool_call_id"])
            continue
        if unanswered:
            break
        if msg["role"] == "assistant" and msg.get("tool_calls"):
            unanswered = [tc["id"] for tc in msg["tool_calls"]]
    if unanswered:
        raise Rejected(_MISSING_RESPONSES.format(ids=", ".join(unanswered)), "messages")


def _check_tool(at: str, tool: object, names: list[str]) -> str:
    """Validate one entry of ``tools`` and return its function name."""
    if not isinstance(tool, dict):
        raise _wrong_type(at, "an object", tool)
    if not isinstance(tool.get("function"), dict):
        raise _wrong_type(f"{at}.function", "an object", tool.get("function"))
    if tool.get("type") != "function":
        message = f"Invalid value: {tool.get('type')!r}. Supported values are: 'function'."
        raise Rejected(message, f"{at}.type", "invalid_value")
    fn, param = tool["function"], f"{at}.function.name"
    name = fn.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        message = (
            f"Invalid '{param}': string does not match pattern. "
            "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
        raise Rejected(message, param, "invalid_value")
    if name in names:
        raise Rejected(f"Invalid 'tools': duplicate function name '{name}'.", "tools")
    params = fn.get("parameters", {"type": "object"})
    if not (isinstance(params, dict) and params.get("type") == "object"):
        got = params.get("type") if isinstance(params, dict) else params
        message = (
            f"Invalid schema for function '{name}': schema must be a JSON Schema of "
            f"'type: \"object\"', got 'type: \"{got}\"'."
        )
        raise Rejected(message, f"{at}.function.parameters", "invalid_function_parameters")
    return name


def _check_tool_choice(body: dict[str, Any], names: list[str], reject_required: bool) -> None:
    choice = body.get("tool_choice")
    if choice is None or choice == "none":
        return
    if not names:
        raise Rejected(_ONLY_WITH_TOOLS.format("tool_choice"), "tool_choice")
    if choice == "required" and reject_required:
        raise Rejected("tool_choice 'required' is not supported by this server", "tool_choice")
    if choice in ("auto", "required"):
        return
    fn = choice.get("function") if isinstance(choice, dict) else None
    if not (isinstance(fn, dict) and choice.get("type") == "function"):
        message = (
            "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or an object."
        )
        raise Rejected(message, "tool_choice", "invalid_value")
    if fn.get("name") not in names:
        message = f"Invalid value for 'tool_choice': function {fn.get('name')!r} is not in 'tools'."
        raise Rejected(message, "tool_choice", "invalid_value")


def validate_chat_request(body: object, reject_required_tool_choice: bool) -> dict[str, Any]:
    """Raise ``Rejected`` for a request the real API would refuse (context size aside)."""
    body = _check_top_level(body)
    for i, msg in enumerate(body["messages"]):
        _check_message(f"messages[{i}]", msg)
    _check_pairing(body["messages"])
    names: list[str] = []
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise _wrong_type("tools", "an array", tools)
        if not tools:
            raise _empty("tools")
        for i, tool in enumerate(tools):
            names.append(_check_tool(f"tools[{i}]", tool, names))
    if body.get("parallel_tool_calls") is not None and not names:
        raise Rejected(_ONLY_WITH_TOOLS.format("parallel_tool_calls"), "parallel_tool_calls")
    _check_tool_choice(body, names, reject_required_tool_choice)
    return body


def check_context(counter: TokenCounter, body: dict[str, Any], window: int | None) -> int:
    """Count a validated chat request's prompt; reject it if it and the requested
    completion do not fit in ``window`` tokens (None: no limit)."""
    prompt = counter.count_request(body["messages"], body.get("tools") or ())
    completion = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    if window is None or prompt + completion <= window:
        return prompt
    # The real API's two wordings: with and without a completion budget.
    detail = f"your messages resulted in {prompt} tokens. Please reduce the length of the"
    detail += " messages."
    if completion:
        detail = (
            f"you requested {prompt + completion} tokens ({prompt} in the messages, "
            f"{completion} in the completion). Please reduce the length of the "
            "messages or completion."
        )
    message = f"This model's maximum context length is {window} tokens. However, {detail}"
    raise Rejected(message, "messages", "context_length_exceeded")


# ----------------------------------------------------------------- embeddings

# The real API's one message for any malformed embeddings input, empty strings included.
INVALID_INPUT = (
    "'$.input' is invalid. Please check the API reference: "
    "https://platform.openai.com/docs/api-reference."
)
MAX_EMBEDDING_INPUTS = 2048
_ENCODING_FORMATS = ("float", "base64")


def _is_token_ids(value: object) -> bool:
    """A non-empty list of token ids (bool is an int subclass, but not a token)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)
    )


def _check_embedding_input(value: object) -> None:
    """A non-empty string, a token-id list, or a list of either (not mixed)."""
    if isinstance(value, str):
        if not value:
            raise Rejected(INVALID_INPUT, "input")
        return
    if not (isinstance(value, list) and value):
        raise Rejected(INVALID_INPUT, "input")
    if _is_token_ids(value):
        return  # one input given as tokens
    if len(value) > MAX_EMBEDDING_INPUTS:
        message = (
            f"Invalid 'input': array too long. Expected an array with maximum length "
            f"{MAX_EMBEDDING_INPUTS}, but got an array with length {len(value)} instead."
        )
        raise Rejected(message, "input", "array_above_max_length")
    strings = all(isinstance(v, str) and v for v in value)
    if not (strings or all(_is_token_ids(v) for v in value)):
        raise Rejected(INVALID_INPUT, "input")


def _check_dimensions(value: object, maximum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _wrong_type("dimensions", "an integer", value)
    if value < 1:
        message = (
            "Invalid 'dimensions': integer below minimum value. "
            f"Expected a value >= 1, but got {value} instead."
        )
        raise Rejected(message, "dimensions", "integer_below_min_value")
    if value > maximum:
        message = (
            "Invalid 'dimensions': integer above maximum value. "
            f"Expected a value <= {maximum}, but got {value} instead."
        )
        raise Rejected(message, "dimensions", "integer_above_max_value")


def validate_embedding_request(body: object, dimension: int) -> dict[str, Any]:
    """Raise ``Rejected`` for an embeddings request the real API would refuse.

    ``dimension`` is the model's full vector size, the most ``dimensions`` may ask for."""
    if not isinstance(body, dict):
        raise Rejected("fake server: the request body must be a JSON object")
    if not (isinstance(body.get("model"), str) and body["model"]):
        raise Rejected("you must provide a model parameter", "model")
    if "input" not in body:
        raise _missing("input")
    _check_embedding_input(body["input"])
    encoding_format = body.get("encoding_format")
    if encoding_format is not None and encoding_format not in _ENCODING_FORMATS:
        message = f"Invalid value: {encoding_format!r}. Supported values are: 'float' and 'base64'."
        raise Rejected(message, "encoding_format", "invalid_value")
    if body.get("dimensions") is not None:
        _check_dimensions(body["dimensions"], dimension)
    return body
