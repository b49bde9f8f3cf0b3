from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="frontend/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    # Django's LogoutView accepts POST only, so a link or an image cannot log anyone out.
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.task_list, name="home"),
    path("tasks/", views.task_list, name="task-list"),
    path("tasks/<slug:slug>/", views.task_detail, name="task-detail"),
]
