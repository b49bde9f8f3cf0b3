"""``manage.py create_api_token USER --scopes read submit``: prints the token once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts import scopes, services


class Command(BaseCommand):
    help = "Create an API token for a user and print it (it is shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--scopes",
            nargs="+",
            required=True,
            help=f"Any of {', '.join(scopes.ALL)} (space- or comma-separated).",
        )
        parser.add_argument("--name", default="", help="A label for the token.")
        parser.add_argument("--expires-in-days", type=int, default=None)
        parser.add_argument("--max-submissions-per-day", type=int, default=None)
        parser.add_argument("--max-sandbox-seconds-per-day", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']!r}")
        wanted = [s for item in options["scopes"] for s in item.split(",") if s]
        days = options["expires_in_days"]
        if days is not None and days <= 0:
            raise CommandError("--expires-in-days must be positive")
        try:
            row, token = services.token_create(
                user=user,
                name=options["name"] or f"{user.get_username()} (command line)",
                scopes=wanted,
                expires_at=timezone.now() + timedelta(days=days) if days else None,
                max_submissions_per_day=options["max_submissions_per_day"],
                max_sandbox_seconds_per_day=options["max_sandbox_seconds_per_day"],
            )
        except services.TokenError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"Token {row.prefix} for {user.get_username()} with scopes {', '.join(row.scopes)}. "
            "It is shown only now:"
        )
        self.stdout.write(token)
