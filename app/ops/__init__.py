"""The service's verbs, free of any web framework: plain values in, plain values or
`app.ops.errors` problems out, the caller's principal passed explicitly.

`Services` is what one process holds: the store, the keyring of unwrapped keys, the token
check and each family's verbs. `app.main` builds it for the HTTP service; `app.cli` uses the
verbs of `app.ops.keys` and `app.ops.tokens` on a store directly.
"""

from dataclasses import dataclass

from app.ops.aez import Aez
from app.ops.audit import AuditTrail
from app.ops.auth import Authenticator
from app.ops.ecies import Ecies
from app.ops.fe import Fe
from app.ops.fe_cache import CacheBudgets, FeCaches
from app.ops.fe_pool import FePool
from app.ops.keyring import Keyring
from app.ops.lifecycle import Maintenance
from app.ops.mac import Mac
from app.ops.ratelimit import RateLimits
from app.ops.root import Rewrap
from app.ops.sign import Signer
from app.settings import Settings
from app.store import KeyStore


@dataclass(frozen=True)
class Services:
    settings: Settings
    store: KeyStore
    keyring: Keyring
    auth: Authenticator
    ecies: Ecies
    aez: Aez
    fe: Fe
    signer: Signer
    mac: Mac
    rewrap: Rewrap
    audit: AuditTrail
    maintenance: Maintenance

    @classmethod
    def build(cls, settings: Settings, store: KeyStore, admin_token: str) -> "Services":
        keyring = Keyring(
            store,
            settings.key_cache_seconds,
            settings.outage_grace_seconds,
            settings.key_cache_bytes,
        )
        # The worker and each FE pool process share the cache budgets equally.
        shares = settings.fe_processes + 1
        budgets = CacheBudgets(
            table_bytes=settings.fe_table_cache_bytes // shares,
            key_bytes=settings.fe_prepared_cache_bytes // shares,
            key_entries=max(1, settings.fe_prepared_cache_entries // shares),
            master_bytes=settings.fe_master_cache_bytes // shares,
        )
        caches = FeCaches(budgets)
        pool = FePool(settings.fe_processes, budgets) if settings.fe_processes else None
        audit = AuditTrail.for_settings(store, settings)
        return cls(
            settings=settings,
            store=store,
            keyring=keyring,
            auth=Authenticator(
                store,
                admin_token,
                settings.token_cache_seconds,
                settings.outage_grace_seconds,
                RateLimits(settings.auth_failures_burst, settings.auth_failures_per_second),
            ),
            ecies=Ecies(keyring, settings.bare_payload_versions),
            aez=Aez(keyring, settings.bare_payload_versions),
            signer=Signer(keyring, settings.bare_payload_versions),
            mac=Mac(keyring, settings.bare_payload_versions),
            fe=Fe(keyring, caches, settings.fe_max_range, settings.fe_max_request_work, pool),
            rewrap=Rewrap(store, settings.keyring_rewrap_per_second),
            audit=audit,
            maintenance=Maintenance(store, keyring, audit, settings.maintenance_seconds),
        )

    def start(self) -> None:
        """Start what runs beside the requests: the keyring rewrap, the maintenance (deletions
        due, automatic rotations), the FE pool's processes."""
        self.rewrap.start()
        self.maintenance.start()
        if self.fe.pool is not None:
            self.fe.pool.start()

    def close(self) -> None:
        """Stop them, write the audit records still pending, release the store."""
        self.maintenance.stop()
        self.rewrap.stop()
        if self.fe.pool is not None:
            self.fe.pool.close()
        self.audit.close()
        self.store.close()
