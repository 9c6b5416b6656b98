"""The provider pool: a circuit per provider and one per (provider, model), so a model's rate limit or 404
rests that model only while the provider's other models keep answering."""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from platform_server.integrations.llm.types import LlmError

log = logging.getLogger(__name__)

FAILURE_THRESHOLD = 3
COOLDOWN_S = 30.0  # the default probe interval of an open circuit (config: llm_provider_probe_interval_s)
MAX_COOLDOWN_S = 300.0  # a failed trial doubles the rest up to decisions.md's 5-minute cooldown
# Statuses that blame the request, not the provider: they fail over but do not count toward cooldown.
REQUEST_FAULT_STATUSES = frozenset({400, 413, 422})
# Statuses that blame one model, not its provider: an unknown model (404) and a rate limit (429; providers
# meter per model) rest that model; connection failures, time limits, 5xx and refused credentials rest the provider.
MODEL_FAULT_STATUSES = frozenset({404, 429})


@dataclass
class PoolEntry:
    consecutive_failures: int = 0
    cooldown_until: float | None = None  # open circuit: skipped until then, then one trial is let through
    trial_started_at: float | None = None  # the trial in flight (half-open), if any
    last_error: str | None = None
    last_success_at: float | None = None
    last_failure_at: float | None = None


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def counts_against_provider(exc: LlmError) -> bool:
    return exc.status not in REQUEST_FAULT_STATUSES


def blames_model(exc: LlmError) -> bool:
    return exc.status in MODEL_FAULT_STATUSES


class ProviderPool:
    """Per-provider and per-model circuits: FAILURE_THRESHOLD consecutive failures open one; after
    `probe_interval_s` one real request goes through as a trial (half-open): its success closes the circuit,
    its failure opens it again for twice as long, up to MAX_COOLDOWN_S.

    A provider (or model) that recovers is thus used again within one probe interval, with no admin re-probe,
    and a dead one costs at most one request per interval.
    """

    def __init__(self, clock: Callable[[], float] = time.time, probe_interval_s: float = COOLDOWN_S) -> None:
        self.clock = clock  # wall-clock seconds; tests swap it
        self.probe_interval_s = probe_interval_s
        self.entries: dict[str, PoolEntry] = {}
        self.models: dict[tuple[str, str], PoolEntry] = {}

    def entry(self, provider_id: str) -> PoolEntry:
        return self.entries.setdefault(provider_id, PoolEntry())

    def _until(self, e: PoolEntry | None) -> float | None:
        if e is None or e.cooldown_until is None or e.cooldown_until <= self.clock():
            return None
        return e.cooldown_until

    def cooling_until(self, provider_id: str, model: str | None = None) -> float | None:
        """The next trial's time when the provider's (or, given, the model's) circuit is open and no trial is
        due yet, else None."""
        return self._until(self.models.get((provider_id, model)) if model is not None else self.entries.get(provider_id))

    def _blocked(self, e: PoolEntry | None, now: float) -> bool:
        if e is None or e.cooldown_until is None:
            return False
        if e.cooldown_until > now:
            return True
        # A trial whose caller went away without an outcome (a stream abandoned) frees the slot after an interval.
        return e.trial_started_at is not None and now - e.trial_started_at < self.probe_interval_s

    def admit(self, provider_id: str, model: str | None = None) -> bool:
        """Whether a request may go to the provider (and model) now; when a circuit is open and its trial is
        due, this request becomes the trial and others keep skipping it until it ends."""
        now = self.clock()
        circuits = [self.entries.get(provider_id)] + ([self.models.get((provider_id, model))] if model is not None else [])
        if any(self._blocked(e, now) for e in circuits):
            return False
        for e in circuits:
            if e is not None and e.cooldown_until is not None:
                e.trial_started_at = now
        return True

    def success(self, provider_id: str, model: str | None = None) -> None:
        now = self.clock()
        for e in [self.entry(provider_id)] + ([self.models.setdefault((provider_id, model), PoolEntry())] if model is not None else []):
            e.consecutive_failures = 0
            e.cooldown_until = None
            e.trial_started_at = None
            e.last_success_at = now

    def failure(self, provider_id: str, error: str, model: str | None = None) -> None:
        """Count a failure against the model when given (it alone rests), else against the provider."""
        e = self.models.setdefault((provider_id, model), PoolEntry()) if model is not None else self.entry(provider_id)
        if model is not None:  # the provider answered: its own circuit's trial, if any, ends well
            p = self.entries.get(provider_id)
            if p is not None and p.cooldown_until is not None and p.trial_started_at is not None:
                self.success(provider_id)
        now = self.clock()
        e.consecutive_failures += 1
        e.last_error = error[:500]
        e.last_failure_at = now
        e.trial_started_at = None
        if e.consecutive_failures >= FAILURE_THRESHOLD:
            rest = self.rest_after(e.consecutive_failures)
            e.cooldown_until = now + rest
            what = f"{provider_id}/{model}" if model is not None else provider_id
            log.warning("%s skipped for %ss, then one trial, after %d failures", what, rest, e.consecutive_failures)

    def rest_after(self, failures: int) -> float:
        """How long an open circuit skips the provider: one probe interval at first, doubled by each failed
        trial, never more than MAX_COOLDOWN_S (a dead provider costs one request per 5 minutes at most)."""
        doublings = min(failures - FAILURE_THRESHOLD, 16)
        return min(self.probe_interval_s * 2**doublings, max(MAX_COOLDOWN_S, self.probe_interval_s))

    def _entry_state(self, e: PoolEntry, enabled: bool = True) -> dict[str, Any]:
        until = self._until(e)
        if not enabled:
            state = "disabled"
        elif until is not None:
            state = "cooldown"
        elif e.cooldown_until is not None:
            state = "probing"  # half-open: the next request (or the one in flight) is the trial
        elif e.consecutive_failures:
            state = "degraded"
        else:
            state = "healthy"
        return {
            "state": state,
            "consecutiveFailures": e.consecutive_failures,
            "cooldownUntil": iso(until),
            "cooldownRemainingSeconds": max(0, int(until - self.clock())) if until else 0,
            "lastError": e.last_error,
            "lastSuccessTime": iso(e.last_success_at),
            "lastFailureTime": iso(e.last_failure_at),
        }

    def state(self, provider: Any, model_names: list[str] | None = None) -> dict[str, Any]:
        """The provider's circuit, and under `models` each model's own (its configured models and any the pool saw)."""
        e = self.entries.get(provider.id) or PoolEntry()
        names = list(model_names or [])
        names += sorted(m for (pid, m) in self.models if pid == provider.id and m not in names)
        models = [{"modelName": m, **self._entry_state(self.models.get((provider.id, m)) or PoolEntry(), bool(provider.enabled))} for m in names]
        return {
            "providerId": provider.id,
            "name": provider.name,
            "protocol": provider.protocol,
            "enabled": bool(provider.enabled),
            **self._entry_state(e, bool(provider.enabled)),
            "models": models,
        }
