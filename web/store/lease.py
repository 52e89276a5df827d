"""Who holds a running submission: the lease owner `host:pid:slot:nonce`, built and read here only.

A grading slot is named `host:pid:slot` (`WorkerId`): the host and process find a dead worker's
leases (web.jobs.system releases those of a process of this host that is gone), the slot names
the thread. Each claim adds a fresh nonce (`LeaseOwner`), so a slot that claims the same
submission again after losing its lease cannot finish the earlier attempt's lease.
The database stores the owner as its text (`Submission.lease_owner`); remote workers quote it back.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

# Hex digits of the claim's nonce: a slot's claims of one submission never repeat one in practice.
NONCE_CHARS = 8


@dataclass(frozen=True)
class WorkerId:
    host: str
    pid: int | None  # None when the text's second field is not a number (an old or odd row)
    slot: str

    def __str__(self) -> str:
        return f"{self.host}:{'' if self.pid is None else self.pid}:{self.slot}"

    @classmethod
    def parse(cls, text: str) -> WorkerId:
        host, _, rest = text.partition(":")
        pid, _, slot = rest.partition(":")
        return cls(host, int(pid) if pid.isdigit() else None, slot)


@dataclass(frozen=True)
class LeaseOwner:
    worker: str   # the slot's WorkerId, as text
    nonce: str

    def __str__(self) -> str:
        return f"{self.worker}:{self.nonce}"

    @classmethod
    def new(cls, worker: str | WorkerId) -> LeaseOwner:
        return cls(str(worker), uuid.uuid4().hex[:NONCE_CHARS])

    @classmethod
    def parse(cls, text: str | LeaseOwner) -> LeaseOwner:
        if isinstance(text, LeaseOwner):
            return text
        worker, _, nonce = text.rpartition(":")
        return cls(worker, nonce)

    @property
    def worker_id(self) -> WorkerId:
        return WorkerId.parse(self.worker)
