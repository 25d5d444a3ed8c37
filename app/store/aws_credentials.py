"""AWS access key pairs of scoped tokens (the KMS API's SigV4 credentials): the access key id,
the token it acts as, and the secret access key sealed under the keyring's newest term.

SigV4 needs the secret itself to check a signature, so it cannot be kept as a hash as the token
is: it is wrapped as key material is (AES-256-GCM, bound to the access key id), and a row goes
with its token when the token is revoked."""

from app.store.database import Session
from app.store.keyring import Terms
from app.store.records import AwsCredential
from app.store.tokens import COLUMNS, token_of

# The secret's wrapping identity: the access key id, version 0 and this type.
SECRET_TYPE = "aws-secret-access-key"
_TOKEN_COLUMNS = ", ".join(f"t.{column.strip()}" for column in COLUMNS.split(","))


class AwsCredentialRepository:
    def __init__(self, session: Session, terms: Terms) -> None:
        self._session = session
        self._terms = terms

    def add(self, access_key_id: str, token_id: str, secret: bytes) -> bool:
        """Keep `token_id`'s access key pair; False (nothing kept) if the token is gone, revoked
        since it was made. The token's row is locked as a revocation locks it."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                f"SELECT 1 FROM tokens WHERE id = ?{self._session.dialect.row_lock}", (token_id,)
            )
            if cursor.fetchone() is None:
                return False
            term, wrapper = self._terms.current(cursor)
            sealed = wrapper.wrap(secret, access_key_id, 0, SECRET_TYPE)
            cursor.execute(
                "INSERT INTO aws_credentials (access_key_id, token_id, term, sealed)"
                " VALUES (?, ?, ?, ?)",
                (access_key_id, token_id, term, sealed),
            )
            return True

    def get(self, access_key_id: str) -> AwsCredential | None:
        """The access key pair and its token, if the id is one of a token not revoked."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT c.term, c.sealed, {_TOKEN_COLUMNS} FROM aws_credentials c"
                " JOIN tokens t ON t.id = c.token_id WHERE c.access_key_id = ?",
                (access_key_id,),
            )
            row = cursor.fetchone()
            if row is None:
                return None
            wrapper = self._terms.wrapper(cursor, int(row[0]))
        secret = wrapper.unwrap(bytes(row[1]), access_key_id, 0, SECRET_TYPE)
        return AwsCredential(access_key_id, token_of(row[2:]), secret)
