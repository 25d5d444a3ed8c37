"""What every login route and token route answers with, and how a failed login is refused.

A login method establishes an identity, calls `app.ops.role_tokens.role_token`, and
answers with `login_answer` (Vault's envelope with its `auth` block); the audit record of the
request then names the token made (its accessor, never the token), the identity and its
policies. A login that fails is raised through `auth_refused`, which counts it toward the
client address's failed authentications (`app.ops.ratelimit`): 429 once it failed too often.
"""

from collections.abc import Callable

from fastapi import Request, Response

from app.http.deps import audit_note, client_address, services
from app.http.vault import answer
from app.ops.audit import AuditNote
from app.ops.errors import Problem
from app.ops.identity import IssuedToken, vault_auth
from app.ops.work import in_thread
from app.store import TokenRecord


def note_token(note: AuditNote, action: str, record: TokenRecord) -> None:
    """Say in a request's audit record that a token was made, renewed or revoked (`action`):
    its id (accessor), identity, policies and expiry, never the token."""
    note.details.update(
        token=record.id,
        token_action=action,
        token_identity=record.identity,
        policies=list(record.policies),
        expires_at=record.expires_at,
    )


async def login_answer(request: Request, issued: IssuedToken) -> Response:
    """Vault's answer to a successful login: the envelope with the token's `auth` block,
    and the audit record's note of the token made."""
    note = audit_note(request.scope)
    note_token(note, "login", issued.record)
    note.details.update(method=issued.record.method, role=issued.record.role)
    return await answer(request, auth=vault_auth(issued, services(request).store.clock.now()))


def auth_refused(request: Request, problem: Problem) -> Problem:
    """What to raise for a failed login or unwrapping: `problem`, counted toward the
    failed-authentication throttle of the client's address (a 429 instead once it failed too
    often)."""
    return services(request).auth.refusal(client_address(request.scope), problem)


async def logged_in(request: Request, login: Callable[[], IssuedToken]) -> Response:
    """Vault's answer to the login `login` makes (in a worker thread): its refusal, the problem
    `login-refused`, goes through `auth_refused`; any other problem is raised as it is. A
    login issues a token: a change, made only once its record has room."""
    await services(request).audit.admit_change(audit_note(request.scope))
    try:
        issued = await in_thread(login)
    except Problem as problem:
        if problem.slug == "login-refused":
            raise auth_refused(request, problem) from None
        raise
    return await login_answer(request, issued)
