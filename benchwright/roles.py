"""The four roles, as Django groups. Object-level checks live in each app's selectors."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, Group, User

AUTHOR = "author"
REVIEWER = "reviewer"
API_CLIENT = "api_client"
ADMIN = "admin"
# Not one of the four main roles: a permission group for whoever may build datasets.
EXPORTER = "exporter"
ALL = (AUTHOR, REVIEWER, API_CLIENT, ADMIN)


def ensure_groups(**_: Any) -> None:
    for name in ALL:
        Group.objects.get_or_create(name=name)


def has_role(user: User | AnonymousUser, role: str) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    if getattr(user, "is_superuser", False):
        return True
    if role != ADMIN and is_admin(user):
        return True
    return user.groups.filter(name=role).exists()


def is_admin(user: User | AnonymousUser) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    return bool(getattr(user, "is_superuser", False)) or user.groups.filter(name=ADMIN).exists()


def grant(user: Any, *roles: str) -> None:
    ensure_groups()
    user.groups.add(*Group.objects.filter(name__in=roles))
