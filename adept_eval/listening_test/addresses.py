"""Client addresses as the server's limits see them: which peers are trusted proxies, and the
network an address belongs to.

Per-address limits are easy to dodge with a handful of neighbouring addresses (one machine
holds many IPv6 addresses, and a cloud customer many IPv4 ones of one block), so every limit
also counts per network: an IPv4 address's /24 and an IPv6 address's /64, the blocks one
customer or one household usually gets. A trusted proxy is the one peer whose connections are
not limited per address (it carries every participant's), and whose ``X-Forwarded-For`` names
the real client; nobody else's is believed, so by default (no proxy) a client cannot name
itself another address.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from adept_eval.errors import OptionError

#: the prefix length of the network an IPv4 / IPv6 address is also limited by
IPV4_NETWORK, IPV6_NETWORK = 24, 64


@dataclass(frozen=True)
class Proxies:
    """The peers trusted as reverse proxies: addresses and networks, or every peer (``*``, for
    a server only reachable through its proxy, as a Docker Space is)."""

    networks: tuple = ()
    everyone: bool = False

    @classmethod
    def parse(cls, text: str | None) -> "Proxies":
        """Read ``--proxy``'s value.

        Args:
            text: Comma-separated addresses or networks (``10.0.0.5``, ``10.0.0.0/8``,
                ``::1``), or ``*``; None or "" for no proxy.

        Returns:
            The trusted proxies.

        Raises:
            OptionError: An entry is not an address or network.
        """
        entries = [entry.strip() for entry in (text or "").split(",") if entry.strip()]
        if entries == ["*"]:
            return cls(everyone=True)
        networks = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise OptionError(f"--proxy {text}: {entry!r} is not an IP address or network "
                                  "(e.g. 10.0.0.5, 10.0.0.0/8, or * for every peer)") from None
        return cls(tuple(networks))

    def __bool__(self) -> bool:
        """Whether any proxy is trusted."""
        return self.everyone or bool(self.networks)

    def trusts(self, address: str | None) -> bool:
        """Tell whether a peer is a trusted proxy.

        Args:
            address: The peer's IP address.

        Returns:
            True for a trusted proxy; False for anyone else or a malformed address.
        """
        if self.everyone:
            return True
        if not self.networks or not address:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    def client(self, peer: str | None, forwarded: str | None) -> str | None:
        """Find the real client of a request.

        A trusted proxy appends the address it got the request from to ``X-Forwarded-For``;
        whatever is left of that was written by the client itself, or by proxies further out,
        so only the right end is believed: the rightmost entry that is not itself a trusted
        proxy (with ``*``, the rightmost entry: what the nearest proxy saw).

        Args:
            peer: The connection's peer address.
            forwarded: The request's ``X-Forwarded-For`` header, if any.

        Returns:
            The client's address: ``peer`` unless ``peer`` is a trusted proxy that names one.
        """
        if not forwarded or not self.trusts(peer):
            return peer
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if not hops:
            return peer
        if self.everyone:
            return hops[-1]
        for hop in reversed(hops):
            if not self.trusts(hop):
                return hop
        return hops[0]


def network_of(address: str) -> str:
    """Name the network a client address is limited with: its /24 (IPv4) or /64 (IPv6).

    Args:
        address: The client's address (anything else, e.g. a test client's name, is its own
            network).

    Returns:
        The network, e.g. ``203.0.113.0/24``.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = IPV4_NETWORK if ip.version == 4 else IPV6_NETWORK
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))
