"""The service's processes: when a worker counts as hung, where the workers' metrics files go,
and what the log looks like."""

from pathlib import Path

from pydantic import BaseModel, Field, field_validator


class ProcessSettings(BaseModel):
    worker_unresponsive_seconds: float = Field(
        30.0,
        gt=0,
        allow_inf_nan=False,
        description="With `--workers N`: a worker whose event loop has not run for this long "
        "is killed and replaced.",
    )
    metrics_dir: Path | None = Field(
        None,
        description="With `--workers N`: where the directory of the workers' shared metrics "
        "files is made (and removed at exit). They are memory-mapped, so keep it off the data "
        "directory's file system. Unset: `/dev/shm`, else the system's temporary directory.",
    )
    log_format: str = Field(
        "json", description="`json` (one object a line, with the request id) or `text`."
    )
    log_level: str = Field(
        "INFO", description="`DEBUG`, `INFO`, `WARNING`, `ERROR` or `CRITICAL` (any case)."
    )

    @field_validator("log_format")
    @classmethod
    def _known_log_format(cls, value: str) -> str:
        if value not in ("json", "text"):
            raise ValueError("log_format must be json or text")
        return value

    @field_validator("log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        if value.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError("log_level must be DEBUG, INFO, WARNING, ERROR or CRITICAL")
        return value.upper()
