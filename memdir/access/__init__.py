"""Seed 003's agent features above `Memory`: reading the audit log and the prefetch cache's
warming. Identities, roles, views and the ownership rule are in
`memdir.core.identity` and the audit log's file in `memdir.storage.audit_log`, because
`Memory` enforces and records them in every change and may not import this package."""
