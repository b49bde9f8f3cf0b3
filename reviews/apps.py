from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ReviewsConfig(AppConfig):
    name = "reviews"

    def ready(self) -> None:
        from .access import ensure_senior_group

        post_migrate.connect(ensure_senior_group, sender=self)
