"""Functional encryption: how much work one request may ask for, the memory its tables and keys
may take, and the processes that run its decryptions."""

from pydantic import BaseModel, Field

from app.settings.fields import Budget


class FeSettings(BaseModel):
    fe_max_dimension: int = Field(
        128, ge=1, description="The largest dimension an FE key may have; a larger one is a 422."
    )
    fe_max_range: int = Field(
        2**32,
        ge=1,
        description="The widest FE decryption range `hi - lo`; a wider one is a 422 before any "
        "work.",
    )
    fe_max_request_work: int = Field(
        2000,
        ge=1,
        description="The estimated FE work of one batch or `decrypt/many` request, counted "
        "before any of it is done, in units of about one pairing: a decryption costs n + 2 "
        "(plus n²/64 for the quadratic schemes, plus 2·√(hi − lo + 1)/512 + 1 for a bjk or kim "
        "search), an encryption or functional key n + 1. Over it, the request is a 422 "
        "`too-much-work`.",
    )
    fe_table_cache_bytes: Budget = Field(
        256 * 1024 * 1024, description="Memory for cached discrete-log tables per process."
    )
    fe_prepared_cache_entries: Budget = Field(
        64, description="Decoded or prepared functional keys kept per process."
    )
    fe_prepared_cache_bytes: Budget = Field(
        64 * 1024 * 1024,
        description="Memory for decoded and prepared functional keys per process (a prepared "
        "tao key of n = 128 takes about 4.5 MB).",
    )
    fe_master_cache_bytes: Budget = Field(
        64 * 1024 * 1024,
        description="Memory for decoded FE master and public keys per process (at most 32 of "
        "them).",
    )
    fe_processes: int = Field(
        1,
        ge=0,
        le=64,
        description="Processes per worker that run FE decryptions beside it (RELIC serialises "
        "a process's pairings). Each has its own tables and prepared keys, and the table and "
        "prepared-key budgets are shared equally by the worker and these processes; 0 keeps "
        "every decryption in the worker.",
    )
