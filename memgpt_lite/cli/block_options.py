"""The options that give a new agent its blocks: `--persona` and `--human`
(TEXT or @FILE), `--block LABEL=TEXT` and `--block-limit LABEL=N`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memgpt_lite.errors import ConfigError, validation_messages

if TYPE_CHECKING:
    from memgpt_lite.models import Block


def read_text_arg(value: str) -> str:
    """The text of an option that takes TEXT or @PATH. A leading "@@" stands
    for a literal "@"; trailing newlines of a file are dropped."""
    if value.startswith("@@"):
        return value[1:]
    if not value.startswith("@"):
        return value
    path = Path(value[1:]).expanduser()
    try:
        return path.read_bytes().decode("utf-8").rstrip("\n")
    except FileNotFoundError:
        raise ConfigError(f"cannot read {value}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {value}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read {value}: not UTF-8 text") from None


def _split_pair(option: str, pair: str) -> tuple[str, str]:
    label, sep, value = pair.partition("=")
    if not sep or not label:
        raise ConfigError(f"{option} takes LABEL=VALUE, got {pair!r}")
    return label, value


def _block_limits(pairs: Sequence[str]) -> dict[str, int]:
    limits: dict[str, int] = {}
    for pair in pairs:
        label, raw = _split_pair("--block-limit", pair)
        if not raw.isascii() or not raw.isdigit() or int(raw) == 0:
            raise ConfigError(f"--block-limit {pair!r}: the limit must be a positive number")
        limits[label] = int(raw)
    return limits


def build_blocks(
    name: str,
    persona: str | None,
    human: str | None,
    extra: Sequence[str],
    limits: Sequence[str],
) -> list[Block]:
    """The persona, human and `--block LABEL=TEXT` blocks of agent `name`, with
    `--block-limit`s."""
    from pydantic import ValidationError

    from memgpt_lite import default_blocks
    from memgpt_lite.models import Block

    blocks = default_blocks(
        None if persona is None else read_text_arg(persona),
        None if human is None else read_text_arg(human),
        name=name,
    )
    custom = [_split_pair("--block", pair) for pair in extra]
    labels = [b.label for b in blocks] + [label for label, _ in custom]
    for label in {label for label in labels if labels.count(label) > 1}:
        hint = f": use --{label}" if label in ("persona", "human") else ""
        raise ConfigError(f"block {label!r} is given twice{hint}")
    wanted_limits = _block_limits(limits)
    unknown = set(wanted_limits) - set(labels)
    if unknown:
        raise ConfigError(f"--block-limit names no block: {', '.join(sorted(unknown))}")
    fields = [b.model_dump(exclude={"id", "updated_at"}) for b in blocks]
    fields += [{"label": label, "value": read_text_arg(text)} for label, text in custom]
    built = []
    for data in fields:
        if data["label"] in wanted_limits:
            data["limit"] = wanted_limits[data["label"]]
        try:
            built.append(Block.model_validate(data))
        except ValidationError as exc:
            raise ConfigError(f"block {data['label']!r}: {validation_messages(exc)}") from None
    return built
