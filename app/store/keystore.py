"""The key store: one repository per concern over one backend, and transactions that span
several of them."""

from collections.abc import Iterator
from contextlib import contextmanager

from app.store import schema
from app.store.approle import AppRoleRepository
from app.store.audit import AuditRepository
from app.store.auth_mounts import AuthMountRepository
from app.store.auth_roles import AuthRoleRepository
from app.store.auth_state import AuthStateRepository
from app.store.aws_credentials import AwsCredentialRepository
from app.store.clock import MAX_SKEW_SECONDS, Clock
from app.store.database import Database, Session, Transaction
from app.store.keyring import KeyringRepository, Terms
from app.store.keys import KeyRepository
from app.store.kms_aliases import KmsAliasRepository
from app.store.ledger import LedgerRepository
from app.store.mount_migrations import MountMigrationRepository
from app.store.policies import PolicyRepository
from app.store.records import RootKeyLoader
from app.store.secret_mounts import SecretMountRepository
from app.store.tokens import TokenRepository
from app.store.wrapped import WrappedResponseRepository
from app.store.wrapping_key import IDENTITY, IMPORT_IDENTITY, WrappingKeyRepository


class Repositories:
    """The store's repositories, every call of theirs made through `session`."""

    def __init__(self, session: Session, terms: Terms, clock: Clock) -> None:
        self.keys = KeyRepository(session, terms, clock)
        self.tokens = TokenRepository(session)
        self.aws_credentials = AwsCredentialRepository(session, terms)
        self.kms_aliases = KmsAliasRepository(session, clock)
        self.audit = AuditRepository(session, terms)
        self.keyring = KeyringRepository(session, terms)
        self.ledger = LedgerRepository(session)
        self.wrapping_key = WrappingKeyRepository(session, terms, "wrapping_key", IDENTITY)
        self.import_key = WrappingKeyRepository(
            session, terms, "transit_import_key", IMPORT_IDENTITY
        )
        self.secret_mounts = SecretMountRepository(session)
        self.mount_migrations = MountMigrationRepository(session)
        self.wrapped = WrappedResponseRepository(session, terms)
        self.policies = PolicyRepository(session)
        self.auth_state = AuthStateRepository(session)
        self.auth_mounts = AuthMountRepository(session)
        self.auth_roles = AuthRoleRepository(session)
        self.approle = AppRoleRepository(session)


class KeyStore(Repositories):
    """Named, versioned keys, tokens, named policies, the auth generation and mounts, the
    audit trail's records, the keyring, the FE ledger, the wrapping key and the secrets-engine
    mounts, durable once a call returns: each
    call is a transaction of its own, and `transaction` makes several one. `clock` tells the
    database's time (`app.store.clock`): what the store dates, it dates by it, and so does the
    service."""

    def __init__(
        self,
        database: Database,
        load_root: RootKeyLoader,
        max_clock_skew: float = MAX_SKEW_SECONDS,
    ) -> None:
        self.database = database
        self.clock = Clock(database.read_clock, max_clock_skew)
        self.clock.measure()
        self._terms = Terms(load_root, self.clock)
        schema.create(database, self._terms)
        super().__init__(database, self._terms, self.clock)

    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[Repositories]:
        """The repositories inside one transaction: everything done through them is stored
        together when the block ends, or nothing of it if the block raises (a store error
        raised inside ends the transaction: let it propagate). Inside the block, use these
        repositories, not the store's: a call of the store's own is a transaction of its own,
        which a write would wait on this one to end for."""
        with self.database.transaction(write) as cursor:
            held = Transaction(self.database, cursor, write)
            try:
                yield Repositories(held, self._terms, self.clock)
            finally:
                held.ended = True
        if held.destroyed:
            self.database.secrets_destroyed()
        if held.moved:
            self.database.generation_moved()

    def ping(self) -> None:
        """Raise if the store cannot be reached (or, where it checks that, cannot write); and
        measure the clock against the database's again."""
        self.database.ping()
        self.clock.measure()

    def close(self) -> None:
        """Release connections."""
        self.database.close()
