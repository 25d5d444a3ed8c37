"""Vault's Transit secrets engine, translated onto the service's own keys and verbs.

A Transit path names a key of a mount; the mount's prefix makes that name a native key name
(`mounts`), and every call runs the verb of the key's family on it (`app.ops.aead`,
`app.ops.sign`, `app.ops.mac`, `app.ops.keys`), under the same scopes and audit trail. What is
Transit's own is only its vocabulary: its key types (`types`), its answers (`keys`,
`crypto`) and its backup format (`backup`), read from OpenBao's `sdk/helper/keysutil`.
"""
