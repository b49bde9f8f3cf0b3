"""The review screens, included at /review/ by benchwright.urls."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.dashboard, name="reviews-dashboard"),
    path("next/", views.claim_next, name="reviews-next"),
    path("items/<int:pk>/", views.item, name="reviews-item"),
    path("items/<int:pk>/release/", views.release, name="reviews-release"),
    path("pairs/", views.pairs, name="reviews-pairs"),
    path("pairs/<uuid:offer_id>/", views.pair, name="reviews-pair"),
    path("pairs/<uuid:offer_id>/skip/", views.pair_skip, name="reviews-pair-skip"),
    path("adjudication/", views.adjudication_list, name="reviews-adjudication"),
    path("adjudication/<int:pk>/", views.adjudicate, name="reviews-adjudicate"),
    path("overview/", views.overview, name="reviews-overview"),
]
