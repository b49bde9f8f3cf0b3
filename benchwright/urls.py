from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("benchwright.api_urls")),
    path("review/", include("reviews.urls")),
    path("exports/", include("exports.urls")),
    path("", include("frontend.urls")),
]
