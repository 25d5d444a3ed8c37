"""The load test's table (Markdown) and plot (PNG), with the targets it reports on."""

from pathlib import Path
from typing import Any

NOOP = "no-op GET /healthz"
ECIES_ENCRYPT = "ECIES encrypt 1 KiB"
AEZ_ENCRYPT = "AEZ encrypt 64 B"
TRANSIT_ENCRYPT = "OpenBao Transit encrypt 64 B"
AEZ_ENCRYPT_FULL = "AEZ encrypt 64 B, audit sync full"
TRANSIT_ENCRYPT_AUDITED = "OpenBao Transit encrypt 64 B, file audit"
FILE_AUDIT = ", file audit"
# The same Transit request (path, header, body) sent to cipherd's Vault paths.
CIPHERD_TRANSIT_ENCRYPT = "cipherd Transit encrypt 64 B"
CIPHERD_TRANSIT_ENCRYPT_FULL = "cipherd Transit encrypt 64 B, audit sync full"
KMS_ENCRYPT = "KMS Encrypt 64 B, SigV4"
KMS_SIGN = "KMS Sign ECC_NIST_P256 64 B, SigV4"
# cipherd's operations beside Transit's that do the same: (cipherd row, Transit row).
TRANSIT_PEERS = (
    ("AES-256-GCM encrypt 64 B", TRANSIT_ENCRYPT),
    ("ed25519 sign 64 B", "OpenBao Transit sign ed25519 64 B"),
    ("ECDSA P-256 sign 64 B", "OpenBao Transit sign ecdsa-p256 64 B"),
    ("RSA-2048 sign 64 B", "OpenBao Transit sign rsa-2048 64 B"),
    ("HMAC-SHA256 64 B", "OpenBao Transit HMAC-SHA256 64 B"),
    ("AEZ data key 256 bits", "OpenBao Transit data key 256 bits"),
)


# Resident memory per cipherd worker process (pid to bytes) at the start and the end of a run.
WorkerMemory = tuple[dict[int, int], dict[int, int]]


def markdown(results: list[dict[str, Any]], memory: WorkerMemory | None = None) -> str:
    lines = [
        "| operation | requests | conc. | req/s | items/s | p50 ms | p99 ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        items = f"{r['items_per_second']:,.0f}" if r["items"] > 1 else ""
        lines.append(
            f"| {r['name']} | {r['requests']} | {r['concurrency']} | {r['rps']:,.0f} | {items} "
            f"| {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['errors']} |"
        )
    by_name = {r["name"]: r for r in results}
    lines.append("")
    for label, numerator, denominator, target in (
        ("AEZ encrypt 64 B / Transit encrypt 64 B", AEZ_ENCRYPT, TRANSIT_ENCRYPT, 1.0),
        (
            "AEZ encrypt 64 B / Transit encrypt 64 B with file audit",
            AEZ_ENCRYPT,
            TRANSIT_ENCRYPT_AUDITED,
            1.0,
        ),
        (
            "AEZ encrypt 64 B (audit sync full) / Transit encrypt 64 B with file audit",
            AEZ_ENCRYPT_FULL,
            TRANSIT_ENCRYPT_AUDITED,
            None,
        ),
        ("ECIES encrypt 1 KiB / no-op", ECIES_ENCRYPT, NOOP, 0.6),
        (
            "cipherd Transit encrypt 64 B / OpenBao Transit encrypt 64 B",
            CIPHERD_TRANSIT_ENCRYPT,
            TRANSIT_ENCRYPT,
            1.0,
        ),
        (
            "cipherd Transit encrypt 64 B / OpenBao Transit encrypt 64 B with file audit",
            CIPHERD_TRANSIT_ENCRYPT,
            TRANSIT_ENCRYPT_AUDITED,
            1.0,
        ),
        (
            "cipherd Transit encrypt 64 B (audit sync full) / OpenBao's with file audit",
            CIPHERD_TRANSIT_ENCRYPT_FULL,
            TRANSIT_ENCRYPT_AUDITED,
            None,
        ),
        (f"{KMS_ENCRYPT} / AES-256-GCM encrypt 64 B", KMS_ENCRYPT, "AES-256-GCM encrypt 64 B", 0.8),
        (f"{KMS_SIGN} / ECDSA P-256 sign 64 B", KMS_SIGN, "ECDSA P-256 sign 64 B", None),
        *(
            (f"{ours} / {theirs}{suffix}", ours, theirs + suffix, 1.0)
            for ours, theirs in TRANSIT_PEERS
            for suffix in ("", FILE_AUDIT)
        ),
    ):
        if numerator in by_name and denominator in by_name:
            ratio = by_name[numerator]["rps"] / by_name[denominator]["rps"]
            if target is None:  # shown for what it costs, with no target
                lines.append(f"- {label}: {ratio:.2f}")
                continue
            verdict = "met" if ratio >= target else "missed"
            lines.append(f"- {label}: {ratio:.2f} (target ≥ {target}: {verdict})")
    if memory is not None:
        lines.append(f"- cipherd RSS per worker: {_memory(memory)}")
    return "\n".join(lines) + "\n"


def _memory(memory: WorkerMemory) -> str:
    """Each worker's start and end figures; a worker replaced during the run shows as gone and
    its replacement as new."""
    start, end = memory
    mib = 1024 * 1024
    parts = []
    for pid in sorted(start.keys() | end.keys()):
        before = f"{start[pid] / mib:.0f}" if pid in start else "new"
        after = f"{end[pid] / mib:.0f}" if pid in end else "gone"
        parts.append(f"pid {pid} {before} -> {after} MiB")
    return ", ".join(parts)


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["name"] for r in results][::-1]
    rates = [r["rps"] for r in results][::-1]
    colours = ["tab:orange" if n.startswith("OpenBao") else "tab:blue" for n in names]
    figure, axes = plt.subplots(figsize=(9, 0.45 * len(names) + 1.2))
    bars = axes.barh(names, rates, color=colours)
    for bar, result in zip(bars, results[::-1], strict=True):
        axes.text(
            bar.get_width(),
            bar.get_y() + bar.get_height() / 2,
            f" {result['rps']:,.0f}/s  p99 {result['p99_ms']:.1f} ms",
            va="center",
            fontsize=8,
        )
    axes.set_xlabel("requests per second (cipherd: blue, OpenBao Transit: orange)")
    axes.set_xlim(0, max(rates) * 1.45)
    axes.set_title("cipherd (2 workers) beside OpenBao Transit, one load generator")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_report(
    results: list[dict[str, Any]], out: Path, memory: WorkerMemory | None = None
) -> str:
    out.mkdir(parents=True, exist_ok=True)
    table = markdown(results, memory)
    (out / "load.md").write_text(table)
    plot(results, out / "load.png")
    return table
