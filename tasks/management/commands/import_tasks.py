"""``manage.py import_tasks PATH...``: load task bundles (docs/bundles.md).

Every bundle is checked before any is imported: one bad bundle refuses them all,
with every error printed. Each bundle then imports in its own transaction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchwright import roles
from tasks import services
from tasks.bundle import Bundle, BundleInvalid, find_bundles, load_bundle

CATALOG_USER = "catalog"


class Command(BaseCommand):
    help = "Import task bundles: each PATH is a bundle folder or a folder of bundle folders."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument(
            "--user",
            help=f"who imports (owner of new tasks, reviewer who publishes); "
            f"default: the admin account {CATALOG_USER!r}, created if missing",
        )
        parser.add_argument(
            "--draft", action="store_true", help="freeze a version but do not publish it"
        )

    def handle(self, *args: Any, paths: list[str], user: str | None, draft: bool, **_: Any) -> None:
        importer = _importer(user)
        folders = self._folders(paths)
        bundles, errors = _check_all(folders, importer, publish=not draft)
        if errors:
            for error in errors:
                self.stderr.write(error)
            raise CommandError(
                f"{len(errors)} error(s) in {len(folders)} bundle(s): nothing was imported"
            )
        for number, bundle in enumerate(bundles):
            try:
                result = services.bundle_import(bundle=bundle, user=importer, publish=not draft)
            except Exception as exc:
                done = ", ".join(b.slug for b in bundles[:number]) or "none"
                raise CommandError(
                    f"{bundle.slug}: import failed and was rolled back: {exc} "
                    f"(imported before it: {done})"
                ) from exc
            self.stdout.write(f"{bundle.slug}: {result.summary}")

    def _folders(self, paths: list[str]) -> list[Path]:
        folders: list[Path] = []
        for path in paths:
            try:
                found, skipped = find_bundles(path)
            except NotADirectoryError as exc:
                raise CommandError(str(exc)) from exc
            for folder in skipped:
                self.stderr.write(f"skipped {folder}: no task.toml", style_func=self.style.WARNING)
            if not found:
                raise CommandError(
                    f"{Path(path).name}/task.toml: missing: {path} is neither a bundle nor a "
                    "folder of bundles; nothing was imported"
                )
            folders.extend(found)
        return folders


def _importer(username: str | None) -> User:
    if username is not None:
        try:
            return User.objects.get(username=username)
        except User.DoesNotExist as exc:
            raise CommandError(f"no user named {username!r}") from exc
    user, created = User.objects.get_or_create(username=CATALOG_USER)
    if created:
        user.set_unusable_password()  # an account for imports only: nobody logs in as it
        user.save(update_fields=["password"])
        roles.grant(user, roles.ADMIN)
    elif not roles.is_admin(user):
        raise CommandError(f"user {CATALOG_USER!r} exists but is not an admin; pass --user")
    return user


def _check_all(
    folders: list[Path], importer: User, *, publish: bool
) -> tuple[list[Bundle], list[str]]:
    """Read and check every bundle, then the importer's rights: (bundles, errors)."""
    bundles: list[Bundle] = []
    errors: list[str] = []
    first_folder: dict[str, Path] = {}
    for folder in folders:
        try:
            bundle = load_bundle(folder)
        except BundleInvalid as exc:
            errors.extend(str(e) for e in exc.errors)
            continue
        if bundle.slug in first_folder:
            errors.append(
                f"{folder}: slug {bundle.slug!r} is also used by {first_folder[bundle.slug]}"
            )
            continue
        first_folder[bundle.slug] = folder
        for problem in services.bundle_import_problems(
            bundle=bundle, user=importer, publish=publish
        ):
            errors.append(f"{bundle.name}: {problem}")
        bundles.append(bundle)
    return bundles, errors
