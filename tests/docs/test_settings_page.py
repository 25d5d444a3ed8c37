"""docs/configuration.md is what scripts/settings_page.py writes from `Settings`, as openapi.yaml
is the app's document: a setting added, renamed or described anew changes the page."""

from pathlib import Path

from app.settings import Settings
from scripts.settings_page import env_name, render

PAGE = Path(__file__).parents[2] / "docs" / "configuration.md"


def test_configuration_page_is_current() -> None:
    assert PAGE.read_text() == render(), (
        "docs/configuration.md is stale: regenerate it with `make settings-page`"
    )


def test_every_setting_has_a_heading_and_a_description_of_its_own() -> None:
    page = PAGE.read_text()
    descriptions = set()
    for name, field in Settings.model_fields.items():
        assert f"### `{env_name(name)}`" in page, f"{env_name(name)}: run `make settings-page`"
        assert field.description and field.description.endswith("."), (
            f"{env_name(name)}: describe it in app/settings/, in sentences"
        )
        descriptions.add(field.description)
    assert len(descriptions) == len(Settings.model_fields), "two settings share a description"
