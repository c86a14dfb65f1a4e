"""One send, run once: a retried send is answered from the first.

A client that sends with an `Idempotency-Key` header (our send route,
Letta's send routes, OpenAI's chat completions) or, on Letta's routes, with
an `otid` on its messages, and sends again with the same key (its own retry
after a timeout or a dropped connection), gets the first send's answer: its
step is not run again and the message is stored once.

- The key is the agent's and its owner's: the same key sent to another
  agent, or by another user, is another send. Claims are kept in the
  database (`sent_requests`, both backends), so every server process on one
  database sees them, for `KEPT` (a day); then the key may be used anew.
- The first send's answer is recorded by the worker thread that ran its
  step, when the step ends, even if the client left: the step's result, or
  its failure when the model endpoint failed (a 502, the message stored).
  A send refused before its step ran (404, 409 while a call waits for
  approval, 413, ...) stored nothing: its claim is dropped, and a retry runs.
- Sent again while the first still runs: a 409 with `x-should-retry: true`
  and `Retry-After: 1`, which the SDKs retry after a second. A claim with no
  answer after `ABANDONED` (its process was killed mid-step) is taken over.
- The same key with another request (another route, or another body) is a
  422: a key names one request.
- A replayed answer is the first one's: the same JSON. Streamed, it is the
  step's end in one piece (our `step_finished`; Letta's messages, stop
  reason, usage and [DONE]; OpenAI's whole content in one chunk), not the
  model's words piece by piece, which were never kept.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import BaseModel

from memgpt_lite.errors import ConfigError, ConflictError, LLMError, MemGPTError
from memgpt_lite.events import StepEvent, StepFailed, StepFinished, StepStarted
from memgpt_lite.models import AgentState, StepResult, utcnow

log = logging.getLogger(__name__)

IDEMPOTENCY_HEADER = "idempotency-key"
KEPT = timedelta(days=1)
ABANDONED = timedelta(minutes=15)
MAX_KEY_CHARS = 255


class HeldSend(Protocol):
    """A claim the store holds (storage's `SentRequest`)."""

    @property
    def fingerprint(self) -> str: ...
    @property
    def outcome(self) -> str | None: ...


class SendClaims(Protocol):
    """What this module needs of the store (storage's `SentRequestStorage`,
    reached through the workspace: the server does not import storage)."""

    def claim_send(
        self,
        owner: str,
        agent_id: str,
        key: str,
        fingerprint: str,
        *,
        expired_before: datetime,
        abandoned_before: datetime,
    ) -> HeldSend | None: ...
    def finish_send(self, owner: str, agent_id: str, key: str, outcome: str) -> None: ...
    def release_send(self, owner: str, agent_id: str, key: str) -> None: ...


class SendInProgress(ConflictError):
    """The first send with this key still runs: a 409 a retry can fix."""


# What app.py's handler adds to a SendInProgress's 409.
RETRY_LATER_HEADERS = {"x-should-retry": "true", "Retry-After": "1"}


class RecordedFailure(BaseModel):
    """A failed first send, as it was answered."""

    error_type: str
    detail: str


class SendOutcome(BaseModel):
    """What a first send's step ended with, as stored."""

    result: StepResult
    failure: RecordedFailure | None = None

    def result_or_raise(self) -> StepResult:
        """The result, or the failure raised again (the model endpoint's: 502)."""
        if self.failure is not None:
            raise LLMError(self.failure.detail)
        return self.result

    def events(self, agent_id: str) -> list[StepEvent]:
        """The step's start and end, for a streamed replay."""
        step_id = next((m.step_id for m in self.result.messages if m.step_id), "")
        user = next((m.content for m in self.result.messages if m.role == "user"), "")
        start = StepStarted(step_id=step_id, agent_id=agent_id, user_message=user or "")
        if self.failure is None:
            return [start, StepFinished(step_id=step_id, result=self.result)]
        failed = StepFailed(
            step_id=step_id,
            message=self.failure.detail,
            error_type=self.failure.error_type,
            result=self.result,
            error=LLMError(self.failure.detail),
        )
        return [start, failed]


def request_key(header: str | None, otids: list[str] | None = None) -> str | None:
    """The send's key: its Idempotency-Key header, else its messages' otids."""
    key = (header or "").strip() or ",".join(o for o in otids or [] if o) or None
    if key is not None and len(key) > MAX_KEY_CHARS:
        raise ConfigError(f"the idempotency key is over {MAX_KEY_CHARS} characters")
    return key


@dataclass
class SendOnce:
    """One keyed send of `route` with `body` (its JSON, for the fingerprint)."""

    store: SendClaims
    key: str
    route: str
    body: str
    owner: str = ""
    agent_id: str = ""
    ran: bool = field(default=False)

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(f"{self.route}\n{self.body}".encode()).hexdigest()

    def claim(self, state: AgentState) -> SendOutcome | None:
        """Claim the key for the agent: None to run the send, else the first
        one's answer. SendInProgress while it runs; a ConfigError for a
        key used with another request."""
        self.owner, self.agent_id = state.owner, state.id
        now = utcnow()
        held = self.store.claim_send(
            self.owner,
            self.agent_id,
            self.key,
            self.fingerprint,
            expired_before=now - KEPT,
            abandoned_before=now - ABANDONED,
        )
        if held is None:
            return None
        if held.fingerprint != self.fingerprint:
            raise ConfigError(
                f"the idempotency key {self.key!r} was used for another request to this agent"
            )
        if held.outcome is None:
            raise SendInProgress(
                f"a send with the idempotency key {self.key!r} is still running: retry soon"
            )
        return SendOutcome.model_validate_json(held.outcome)

    def ended(self, end: StepResult | StepEvent | BaseException | None) -> None:
        """In the worker thread, once the step ended: record its answer, or
        drop the claim if it stored nothing (see the module's doc)."""
        self.ran = True
        outcome = _outcome(end)
        try:
            if outcome is None:
                self.store.release_send(self.owner, self.agent_id, self.key)
            else:
                self.store.finish_send(
                    self.owner, self.agent_id, self.key, outcome.model_dump_json()
                )
        except MemGPTError as exc:  # the answer still goes out; the claim waits to be abandoned
            log.warning("could not record the send under key %r: %s", self.key, exc)

    def release(self) -> None:
        """Drop the claim of a send whose step never ran."""
        if not self.ran and self.agent_id:
            self.store.release_send(self.owner, self.agent_id, self.key)


def _outcome(end: StepResult | StepEvent | BaseException | None) -> SendOutcome | None:
    if isinstance(end, StepResult):
        return SendOutcome(result=end)
    if isinstance(end, StepFinished):
        return SendOutcome(result=end.result)
    if isinstance(end, StepFailed) and isinstance(end.error, LLMError):
        failure = RecordedFailure(error_type=end.error_type, detail=end.message)
        return SendOutcome(result=end.result, failure=failure)
    if isinstance(end, LLMError):  # agent.step raised it: the message is stored
        failure = RecordedFailure(error_type=type(end).__name__, detail=str(end))
        return SendOutcome(result=StepResult(), failure=failure)
    return None


def send_once(
    store: SendClaims, header: str | None, route: str, body: BaseModel, *otids: str | None
) -> SendOnce | None:
    """The send's `SendOnce` if it has a key (the header, else Letta's
    otids), else None: a send without a key runs each time it is sent."""
    key = request_key(header, [o for o in otids if o])
    if key is None:
        return None
    return SendOnce(store, key, route, body.model_dump_json())
