"""Service settings, read from `CIPHERD_*` environment variables.

Each field's description is its documentation: `docs/configuration.md` is written from them
(`make settings-page`). Settings are read once per process; tests build their own `Settings`
and hand it to `create_app`. The fields live by concern in this package's modules; `Settings`
is all of them under one prefix.
"""

from functools import lru_cache

from pydantic_settings import BaseSettings, SettingsConfigDict

from app.settings.audit import AuditSettings
from app.settings.fe import FeSettings
from app.settings.identity import IdentitySettings
from app.settings.keys import MAX_BATCH_ITEMS, KeySettings
from app.settings.listeners import ListenerSettings
from app.settings.process import ProcessSettings
from app.settings.store import StoreSettings

__all__ = ["MAX_BATCH_ITEMS", "Settings", "get_settings"]


# Fields are ordered from the last base to the first: the store's come first.
class Settings(
    FeSettings,
    ProcessSettings,
    AuditSettings,
    KeySettings,
    ListenerSettings,
    IdentitySettings,
    StoreSettings,
    BaseSettings,
):
    model_config = SettingsConfigDict(env_prefix="CIPHERD_", extra="ignore")


@lru_cache
def get_settings() -> Settings:
    return Settings()
