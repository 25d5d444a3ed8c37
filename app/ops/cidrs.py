"""Address blocks as Vault's roles and tokens take them (`secret_id_bound_cidrs`,
`token_bound_cidrs`): checked and written as Vault writes them when a role is written, and the
test of a client's address against them, at a login and at each request of a bound token."""

import ipaddress
from collections.abc import Sequence

from app.ops.errors import invalid_input

MAX_CIDRS = 64

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def cidr_blocks(field: str, values: Sequence[str]) -> list[str]:
    """CIDR blocks (or single addresses), checked, each once, written as Vault writes them: as
    given (`192.168.1.5/24` too), a block of one address as the address."""
    if len(values) > MAX_CIDRS:
        raise invalid_input(f"{field}: at most {MAX_CIDRS} CIDR blocks")
    blocks = []
    for value in values:
        try:
            block = ipaddress.ip_interface(value.strip())
        except ValueError:
            raise invalid_input(f"{field}: {value[:64]!r} is not a CIDR block") from None
        single = block.network.prefixlen == block.max_prefixlen
        blocks.append(str(block.ip) if single else str(block.with_prefixlen))
    return list(dict.fromkeys(blocks))


def check_within(field: str, blocks: Sequence[str], bounds: Sequence[str]) -> None:
    """400 unless every block of `blocks` lies inside one of `bounds` (when there are any)."""
    if not bounds:
        return
    networks = networks_of(bounds)
    for block in blocks:
        network = ipaddress.ip_network(block, strict=False)
        if not any(
            network.version == bound.version and network.subnet_of(bound)  # type: ignore[arg-type]
            for bound in networks
        ):
            raise invalid_input(f"{field}: {block} is outside the role's blocks {list(bounds)}")


def networks_of(blocks: Sequence[str]) -> tuple[Network, ...]:
    """Blocks written by `cidr_blocks`, as networks to test addresses against."""
    return tuple(ipaddress.ip_network(block, strict=False) for block in blocks)


def address_within(address: str | None, networks: Sequence[Network]) -> bool:
    """Whether `address` lies in one of `networks` (any address when there are none; no
    address, or one that is not an IP address, in none)."""
    if not networks:
        return True
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return any(ip in network for network in networks)


def address_allowed(address: str | None, blocks: Sequence[str]) -> bool:
    """Whether `address` lies in one of `blocks` (any address when there are none)."""
    return address_within(address, networks_of(blocks))
