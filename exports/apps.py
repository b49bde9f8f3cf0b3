from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ExportsConfig(AppConfig):
    name = "exports"

    def ready(self) -> None:
        from .selectors import ensure_exporter_group

        post_migrate.connect(ensure_exporter_group, sender=self)
