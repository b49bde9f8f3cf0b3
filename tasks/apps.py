from django.apps import AppConfig
from django.db.models.signals import post_migrate


class TasksConfig(AppConfig):
    name = "tasks"

    def ready(self) -> None:
        from benchwright import roles

        post_migrate.connect(roles.ensure_groups, sender=self)
