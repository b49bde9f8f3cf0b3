"""API scopes: what a token may do, capped by what its user's roles allow."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from benchwright import roles

READ = "read"
SUBMIT = "submit"
AUTHOR = "author"
REVIEW = "review"
EXPORT = "export"
ALL = (READ, SUBMIT, AUTHOR, REVIEW, EXPORT)

DESCRIPTIONS = {
    READ: "list published tasks; read your own submissions, tokens and webhooks",
    SUBMIT: "create and cancel submissions; manage webhooks",
    AUTHOR: "see and regrade submissions to tasks you wrote",
    REVIEW: "see submissions for review",
    EXPORT: "export datasets",
}


def user_roles(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    """The user's role names in one query; an admin holds every role."""
    if not user.is_authenticated or not user.is_active:
        return frozenset()
    if getattr(user, "is_superuser", False):
        return frozenset(roles.ALL)
    names = frozenset(user.groups.values_list("name", flat=True))  # type: ignore[union-attr,attr-defined]
    return frozenset(roles.ALL) if roles.ADMIN in names else names


def scopes_allowed(user_role_names: frozenset[str]) -> frozenset[str]:
    """Scopes a user with these roles may hold. Roles are checked on every request,
    so taking a role away takes the matching scope from the user's tokens at once."""
    if roles.ADMIN in user_role_names:
        return frozenset(ALL)
    allowed = {READ}
    if user_role_names & {roles.API_CLIENT, roles.AUTHOR}:
        allowed.add(SUBMIT)
    if roles.AUTHOR in user_role_names:
        allowed.add(AUTHOR)
    if roles.REVIEWER in user_role_names:
        allowed.add(REVIEW)
    if roles.EXPORTER in user_role_names:
        allowed.add(EXPORT)
    return frozenset(allowed)


def normalise(requested: list[str] | tuple[str, ...] | set[str]) -> list[str]:
    """Known scopes in canonical order; raises ValueError naming an unknown one."""
    unknown = sorted(set(requested) - set(ALL))
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(unknown)}; known: {', '.join(ALL)}")
    return [scope for scope in ALL if scope in requested]
