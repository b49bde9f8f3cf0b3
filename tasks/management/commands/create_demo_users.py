"""``manage.py create_demo_users``: one demo account per role, with fixed passwords.

For development and demos only: it refuses to run in production.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from benchwright import roles

# username, password, role. The passwords are printed and public: demo data only.
DEMO_USERS = (
    ("author", "author-demo-password", roles.AUTHOR),
    ("reviewer", "reviewer-demo-password", roles.REVIEWER),
    ("client", "client-demo-password", roles.API_CLIENT),
    ("admin", "admin-demo-password", roles.ADMIN),
)


class Command(BaseCommand):
    help = "Create (or reset) the demo users author, reviewer, client and admin."

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.PRODUCTION:
            raise CommandError("refusing to create demo users with known passwords in production")
        roles.ensure_groups()
        users = get_user_model().objects
        self.stdout.write(f"{'username':<10} {'password':<24} role")
        for username, password, role in DEMO_USERS:
            user, _ = users.get_or_create(username=username)
            user.set_password(password)
            user.is_active = True
            if role == roles.ADMIN:
                user.is_staff = user.is_superuser = True  # the Django admin site too
            user.save()
            user.groups.set(Group.objects.filter(name=role))
            self.stdout.write(f"{username:<10} {password:<24} {role}")
