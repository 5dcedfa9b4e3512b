"""Who makes a memory's changes, whether they may, and the audit record each change leaves."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memdir.core.entry import Entry, Metadata, utcnow
from memdir.core.errors import EntryNotFoundError, InvalidPathError, RedirectError
from memdir.core.files import disk_errors
from memdir.core.identity import Actor
from memdir.core.paths import normalize_path
from memdir.core.settings import Settings
from memdir.storage.audit_log import ACTIONS, AuditRecord, change_diff
from memdir.storage.base import StorageAdapter


class Ownership:
    """The acting agent (per thread), the ownership check of every change and its audit record
    (`memdir.core.identity` decides; `memdir.storage.audit_log` keeps the records)."""

    def __init__(self, settings: Settings, adapter: StorageAdapter) -> None:
        self.settings = settings
        self.adapter = adapter
        self.audit = adapter.audit
        self._actor = Actor.from_settings(settings)
        self._acting = threading.local()  # `acting_as`, per thread
        self._labelled = threading.local()  # the action label of `action`, per thread

    @property
    def actor(self) -> Actor:
        """Who makes this memory's changes and asks for its views: every change is checked against it
        (`memdir.core.identity`). The settings' agent, role and admin flag, unless `acting_as` says otherwise."""
        return getattr(self._acting, "actor", None) or self._actor

    @contextmanager
    def acting_as(self, actor: Actor | None) -> Iterator[None]:
        """Make the calls inside (on this thread) as ``actor`` (None: the settings' own): a server over
        HTTP serves many clients with one memory, each client as the agent its token names."""
        previous = getattr(self._acting, "actor", None)
        self._acting.actor = actor
        try:
            yield
        finally:
            self._acting.actor = previous

    @contextmanager
    def action(self, label: str, **details: Any) -> Iterator[None]:
        """Record the changes made inside (on this thread) in the audit log as ``label`` — archive,
        unarchive, supersede, merge, link, unlink, ... — with ``details``, instead of the plain
        create / update / delete they are made of. Ownership is checked as for any change.

        Args:
            label: one of `memdir.storage.audit_log.ACTIONS`.
            details: small JSON-able facts the record keeps (a link's target, a merge's keeper).
        """
        if label not in ACTIONS:
            raise ValueError(f"unknown audit action {label!r}; one of {', '.join(ACTIONS)}")
        previous = getattr(self._labelled, "current", None)
        self._labelled.current = (label, details)
        try:
            yield
        finally:
            self._labelled.current = previous

    def check_change(self, path: str, action: str = "update", *, entry: Entry | None = None) -> None:
        """Refuse now a change `Memory` would refuse (callers making several changes check all first;
        ``entry``: the entry at ``path`` as the caller has just read it, not read again).

        Raises:
            NotOwnerError: ``path`` belongs to another agent and this memory's actor is no admin.
        """
        logical = normalize_path(path)
        before = entry or self.existing(logical)
        if before is not None:
            self.actor.check_change(logical, before.metadata.labels(), self.label(action)[0])

    def existing(self, logical: str) -> Entry | None:
        """The entry (or stub) at ``logical`` as it is now, or None (also when its files cannot be
        read safely — a sidecar linked out of the root: it has no owner memdir can know of)."""
        try:
            return self.adapter.read_entry(logical, follow=False)
        except (EntryNotFoundError, RedirectError, InvalidPathError):
            return None

    def present(self, logical: str) -> tuple[bool, Entry | None]:
        """Whether an entry (or stub) is at ``logical``, and it as `existing` reads it (None also when
        its files cannot be read safely), in one read."""
        try:
            return True, self.adapter.read_entry(logical, follow=False)
        except EntryNotFoundError:
            return False, None
        except (RedirectError, InvalidPathError):
            return True, None

    def label(self, default: str) -> tuple[str, dict[str, Any]]:
        return getattr(self._labelled, "current", None) or (default, {})

    def guard(self, logical: str, before: Entry | None, default: str) -> None:
        """The ownership check of a change to ``logical`` (caller holds the write lock)."""
        if before is not None:
            self.actor.check_change(logical, before.metadata.labels(), self.label(default)[0])

    def record(self, logical: str, before: Entry | None, after: Entry | None, default: str, **facts: Any) -> None:
        """Append the change's audit record (under the write lock, before the change's commit point)."""
        with disk_errors(self.adapter.root):
            self.audit.append(self.audit_record(logical, before, after, default, **facts))

    def audit_record(self, logical: str, before: Entry | None, after: Entry | None, default: str, **facts: Any) -> AuditRecord:
        """The audit record of a change of ``logical`` from ``before`` to ``after`` (None: no entry)."""
        action, labelled = self.label(default)
        details = {**facts, **labelled}
        subject = before or after
        owner = subject.metadata.labels().created_by if subject is not None else None
        overrode = self.actor.admin and owner is not None and owner != self.actor.name
        return AuditRecord(
            at=utcnow().isoformat(), agent=self.actor.name, role=self.actor.role.value if self.actor.role else None,
            admin=overrode, action=action, path=logical, owner=owner,
            diff=change_diff(logical, before, after, self.settings.storage.audit_diff_chars), details=details,
        )

    def stamped(self, metadata: Metadata, before: Entry | None) -> Metadata:
        """``metadata`` with who created (owns) the entry, who changed it last and who sees it.

        A new entry belongs to the actor (unless the metadata names its creator: a restore);
        an existing one keeps its owner — a write never takes ownership, of an entry without
        an owner either — and its visibility unless the metadata sets one.
        """
        old = before.metadata if before is not None else None
        if old is None:
            owner = metadata.created_by or self.actor.name
            visible = metadata.visible_to or self.actor.default_visibility()
        else:
            owner = old.created_by
            visible = metadata.visible_to or old.visible_to
        return metadata.model_copy(update={"created_by": owner, "modified_by": self.actor.name, "visible_to": visible})
