from django.apps import AppConfig


class RubricsConfig(AppConfig):
    name = "rubrics"
