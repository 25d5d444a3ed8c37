"""The service's verbs, free of any web framework: plain values in, plain values or
`app.ops.errors` problems out, the caller's principal passed explicitly.

`Services` is what one process holds: the store, the keyring of unwrapped keys, the token
check and each family's verbs. `app.main` builds it for the HTTP service; `app.cli` uses the
verbs of `app.ops.keys` and `app.ops.tokens` on a store directly.
"""

import contextlib
from dataclasses import dataclass

from app.ops.aead import AeadKey
from app.ops.aez import AezKey
from app.ops.audit import AuditTrail
from app.ops.auth import Authenticator
from app.ops.auth_mounts import AuthMounts
from app.ops.cert_auth import CertRules
from app.ops.ecies import EciesKey
from app.ops.errors import Problem
from app.ops.fe import Fe
from app.ops.fe_cache import CacheBudgets, FeCaches
from app.ops.fe_pool import FePool
from app.ops.hpke import HpkeKey
from app.ops.identity import TokenLimits
from app.ops.jwks import IssuerKeys
from app.ops.keyring import Keyring
from app.ops.lifecycle import Maintenance
from app.ops.mac import MacKey
from app.ops.ratelimit import RateLimits
from app.ops.root import Rewrap
from app.ops.rsa import RsaKey
from app.ops.sign import SigningKey
from app.ops.transit.crypto import TransitKeys
from app.ops.transit.mounts import Mounts
from app.ops.versioned import Keys
from app.ops.wrapping import ResponseWrapping
from app.settings import Settings
from app.store import KeyStore


@dataclass(frozen=True)
class Services:
    settings: Settings
    store: KeyStore
    keyring: Keyring
    auth: Authenticator
    auth_mounts: AuthMounts
    token_limits: TokenLimits
    issuer_keys: IssuerKeys
    cert_rules: CertRules
    ecies: Keys[EciesKey]
    aez: Keys[AezKey]
    aead: Keys[AeadKey]
    hpke: Keys[HpkeKey]
    rsa: Keys[RsaKey]
    fe: Fe
    signer: Keys[SigningKey]
    mac: Keys[MacKey]
    transit: TransitKeys
    mounts: Mounts
    rewrap: Rewrap
    audit: AuditTrail
    maintenance: Maintenance
    wrapping: ResponseWrapping

    @classmethod
    def build(cls, settings: Settings, store: KeyStore, admin_token: str | None) -> "Services":
        """The services of one process; `admin_token` None: the admin token is refused."""
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
        auth = Authenticator(
            store,
            admin_token,
            settings.token_cache_seconds,
            settings.outage_grace_seconds,
            RateLimits(settings.auth_failures_burst, settings.auth_failures_per_second),
            settings.auth_check_seconds,
        )
        return cls(
            settings=settings,
            store=store,
            keyring=keyring,
            auth=auth,
            auth_mounts=AuthMounts(store, auth),
            token_limits=TokenLimits(
                settings.token_default_ttl_seconds, settings.token_max_ttl_seconds
            ),
            issuer_keys=IssuerKeys(settings.jwks_min_refetch_seconds),
            cert_rules=CertRules(),
            ecies=Keys(EciesKey, keyring, settings.bare_payload_versions),
            aez=Keys(AezKey, keyring, settings.bare_payload_versions),
            aead=Keys(AeadKey, keyring, settings.bare_payload_versions),
            hpke=Keys(HpkeKey, keyring, settings.bare_payload_versions),
            rsa=Keys(RsaKey, keyring, settings.bare_payload_versions),
            signer=Keys(SigningKey, keyring, settings.bare_payload_versions),
            mac=Keys(MacKey, keyring, settings.bare_payload_versions),
            transit=TransitKeys(keyring, settings.bare_payload_versions),
            mounts=Mounts(store, settings.key_cache_seconds),
            fe=Fe(
                keyring, caches, audit, settings.fe_max_range, settings.fe_max_request_work, pool
            ),
            rewrap=Rewrap(store, settings.keyring_rewrap_per_second),
            audit=audit,
            maintenance=Maintenance(store, keyring, audit, settings.maintenance_seconds),
            wrapping=ResponseWrapping(
                store, settings.wrap_max_ttl_seconds, settings.wrap_max_bytes
            ),
        )

    def start(self) -> None:
        """Start what runs beside the requests: the keyring rewrap, the maintenance (deletions
        due, automatic rotations), the FE pool's processes; and the audit journal begun."""
        with contextlib.suppress(Problem):  # logged; changes are refused until it can write
            self.audit.open()
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
