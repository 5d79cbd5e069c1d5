"""Optical transceivers, OCS and circulator insertion loss, and the optical power budget.

Every OCS circuit passes the light of a transceiver's Tx through the OCS (and, with
circulators, through two circulators: one at each end) to another transceiver's Rx. The link
works only if the transceiver's power budget covers the insertion loss on that path
(Cross-Wiring §2.1).

Data (Cross-Wiring §2.1 and Table 2)
------------------------------------
* Transceivers (800 Gb/s): 2xLR4 6.3 dB, 8xFR 4.0 dB, 2xFR4 4.0 dB, DR8 3.0 dB, SR8 1.8 dB.
* OCS insertion loss, worst case reported: 136 ports 2 dB (Google Palomar), 320 ports 3 dB
  (CALIENT), 576 ports 3 dB (Polatis), 1100 ports 4 dB.
* Circulator: 0.5-0.7 dB per pass; a path with circulators passes two (one per end).

OCS loss model
--------------
:func:`ocs_insertion_loss_db` is a monotone non-decreasing step function through the reported
points: an OCS of ``n`` ports is charged the loss of the smallest reported OCS with at least
``n`` ports (136 -> 2 dB, 137..576 -> 3 dB, 577..1100 -> 4 dB). Larger OCSes are extrapolated
by +1 dB per doubling beyond 1100 ports (the 576 -> 1100 trend), flagged as extrapolated. A
measured loss can always be given instead (``ocs_loss_db``).

Examples
--------
>>> check_power_budget("2xFR4", 320).ok
True
>>> r = check_power_budget("2xFR4", 320, circulators=True)  # 3 dB + 2 x 0.5 dB = 4 dB
>>> r.loss_db, r.budget_db, r.status
(4.0, 4.0, 'at-limit')
>>> check_power_budget("SR8", 320).status
'over'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lumoscore.errors import ConfigError

__all__ = [
    "AT_LIMIT_DB",
    "CIRCULATOR_LOSS_DB",
    "CIRCULATOR_LOSS_DB_RANGE",
    "CIRCULATOR_PASSES",
    "OCS_LOSS_POINTS",
    "TRANSCEIVERS",
    "PowerBudget",
    "Transceiver",
    "check_power_budget",
    "get_transceiver",
    "ocs_insertion_loss_db",
]


@dataclass(frozen=True)
class Transceiver:
    """An optical transceiver module (Cross-Wiring Table 2, 800 Gb/s modules).

    Attributes
    ----------
    name : str
        Module name, e.g. ``"2xFR4"``.
    fiber_mode : str
        ``"single"`` or ``"multi"`` mode fibre.
    power_budget_db : float
        Optical power budget (largest tolerable path loss), dB.
    price_usd : float
        Indicative price, USD.
    max_distance_m : float
        Reach, metres.
    """

    name: str
    fiber_mode: str
    power_budget_db: float
    price_usd: float
    max_distance_m: float


TRANSCEIVERS: dict[str, Transceiver] = {
    t.name: t
    for t in (
        Transceiver("2xLR4", "single", 6.3, 2500.0, 10_000.0),
        Transceiver("8xFR", "single", 4.0, 2000.0, 2_000.0),
        Transceiver("2xFR4", "single", 4.0, 2100.0, 2_000.0),
        Transceiver("DR8", "single", 3.0, 1800.0, 500.0),
        Transceiver("SR8", "multi", 1.8, 1700.0, 50.0),
    )
}
"""Cross-Wiring Table 2 (800 Gb/s transceivers), by name."""

OCS_LOSS_POINTS: tuple[tuple[int, float], ...] = ((136, 2.0), (320, 3.0), (576, 3.0), (1100, 4.0))
"""Reported worst-case OCS insertion loss ``(ports, dB)`` (Cross-Wiring §2.1)."""

CIRCULATOR_LOSS_DB_RANGE: tuple[float, float] = (0.5, 0.7)
"""Insertion loss of one circulator pass, dB (Cross-Wiring §2.1)."""

CIRCULATOR_LOSS_DB: float = 0.5
"""Default loss per circulator pass (the value of Cross-Wiring's worked example)."""

CIRCULATOR_PASSES: int = 2
"""Circulator passes on one Tx -> OCS -> Rx path (one at each end)."""

AT_LIMIT_DB: float = 0.5
"""Headroom (after the margin) below which a design is reported as ``at-limit``."""

_EPS = 1e-9


def get_transceiver(name: str | Transceiver) -> Transceiver:
    """Look up a transceiver of :data:`TRANSCEIVERS` (case-insensitive, ``×`` = ``x``).

    Examples
    --------
    >>> get_transceiver("2×fr4").power_budget_db
    4.0
    """
    if isinstance(name, Transceiver):
        return name
    key = str(name).strip().replace("×", "x").replace("X", "x").lower()
    for t in TRANSCEIVERS.values():
        if t.name.lower() == key:
            return t
    raise ConfigError(f"transceiver: unknown module {name!r}; allowed: {', '.join(TRANSCEIVERS)}")


def ocs_insertion_loss_db(ocs_ports: int) -> tuple[float, bool]:
    """Modelled worst-case insertion loss of an OCS with ``ocs_ports`` ports.

    Returns ``(loss_db, extrapolated)``; see the module docstring for the model.

    Examples
    --------
    >>> [ocs_insertion_loss_db(n)[0] for n in (64, 136, 137, 320, 576, 1100)]
    [2.0, 2.0, 3.0, 3.0, 3.0, 4.0]
    >>> ocs_insertion_loss_db(2200)
    (5.0, True)
    """
    n = int(ocs_ports)
    if n < 1:
        raise ConfigError(f"ocs_ports must be >= 1, got {ocs_ports}")
    ports = np.array([p for p, _ in OCS_LOSS_POINTS])
    losses = np.array([v for _, v in OCS_LOSS_POINTS])
    idx = int(np.searchsorted(ports, n, side="left"))
    if idx < len(ports):
        return float(losses[idx]), False
    extra = math.log2(n / ports[-1])
    return float(losses[-1] + extra), True


@dataclass(frozen=True)
class PowerBudget:
    """Result of :func:`check_power_budget`.

    Attributes
    ----------
    transceiver : str
        Module name.
    budget_db : float
        The module's power budget.
    ocs_ports : int
        Ports of the OCS on the path.
    ocs_loss_db : float
        OCS insertion loss used (modelled or given).
    ocs_loss_source : str
        ``"model"``, ``"model-extrapolated"`` or ``"given"``.
    circulators : bool
        Whether the path passes circulators.
    circulator_loss_db : float
        Loss of all circulator passes on the path (0 without circulators).
    loss_db : float
        Total path loss ``ocs_loss_db + circulator_loss_db``.
    worst_loss_db : float
        Total loss with the worst circulator figure (0.7 dB per pass).
    margin_db : float
        Extra margin the design must keep (connectors, ageing, ...).
    headroom_db : float
        ``budget_db - loss_db - margin_db``.
    ok : bool
        ``headroom_db >= 0``.
    status : str
        ``"ok"``, ``"at-limit"`` (headroom below :data:`AT_LIMIT_DB`, or the worst circulator
        loss exceeds the budget) or ``"over"``.
    warning : str or None
        Human-readable warning when the status is not ``"ok"``.
    """

    transceiver: str
    budget_db: float
    ocs_ports: int
    ocs_loss_db: float
    ocs_loss_source: str
    circulators: bool
    circulator_loss_db: float
    loss_db: float
    worst_loss_db: float
    margin_db: float
    headroom_db: float
    ok: bool
    status: str
    warning: str | None


def check_power_budget(
    transceiver: str | Transceiver,
    ocs_ports: int,
    circulators: bool = False,
    ocs_loss_db: float | None = None,
    margin_db: float = 0.0,
    *,
    circulator_loss_db: float = CIRCULATOR_LOSS_DB,
) -> PowerBudget:
    """Does the transceiver's power budget cover the loss of one OCS path?

    Parameters
    ----------
    transceiver : str or Transceiver
        A name of :data:`TRANSCEIVERS` or a custom :class:`Transceiver`.
    ocs_ports : int
        Ports of the OCS (drives the modelled loss).
    circulators : bool
        Add :data:`CIRCULATOR_PASSES` circulator passes.
    ocs_loss_db : float, optional
        Measured OCS insertion loss; default: :func:`ocs_insertion_loss_db`.
    margin_db : float
        Margin to keep below the budget.
    circulator_loss_db : float
        Loss per circulator pass (0.5-0.7 dB reported).

    Examples
    --------
    >>> r = check_power_budget("DR8", 136, margin_db=0.5)
    >>> r.loss_db, r.headroom_db, r.status
    (2.0, 0.5, 'ok')
    >>> print(check_power_budget("SR8", 320).warning)  # doctest: +ELLIPSIS
    SR8 power budget 1.8 dB < path loss 3.0 dB (OCS 3.0 dB): ... exceeds the budget by 1.20 dB...
    >>> print(check_power_budget("DR8", 136, margin_db=3.0).warning)  # doctest: +ELLIPSIS
    DR8 power budget 3.0 dB < path loss 2.0 dB (OCS 2.0 dB) + margin 3.0 dB: ... by 2.00 dB...
    """
    t = get_transceiver(transceiver)
    for name, value in (("margin_db", margin_db), ("circulator_loss_db", circulator_loss_db)):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{name} must be a finite number >= 0, got {value}")
    if ocs_loss_db is None:
        ocs_loss, extrapolated = ocs_insertion_loss_db(ocs_ports)
        source = "model-extrapolated" if extrapolated else "model"
    else:
        ocs_loss = float(ocs_loss_db)
        if not math.isfinite(ocs_loss) or ocs_loss < 0:
            raise ConfigError(f"ocs_loss_db must be a finite number >= 0, got {ocs_loss_db}")
        source = "given"
        if int(ocs_ports) < 1:
            raise ConfigError(f"ocs_ports must be >= 1, got {ocs_ports}")
    passes = CIRCULATOR_PASSES if circulators else 0
    circ = round(passes * circulator_loss_db, 6)
    loss = round(ocs_loss + circ, 6)
    worst = round(ocs_loss + passes * max(circulator_loss_db, CIRCULATOR_LOSS_DB_RANGE[1]), 6)
    headroom = round(t.power_budget_db - loss - margin_db, 6)
    ok = headroom >= -_EPS
    if not ok:
        status = "over"
    elif headroom < AT_LIMIT_DB - _EPS or worst > t.power_budget_db - margin_db + _EPS:
        status = "at-limit"
    else:
        status = "ok"
    parts = f"OCS {ocs_loss:.1f} dB" + (
        f" + {passes} circulator passes {circ:.1f} dB" if passes else ""
    )
    kept = f" + margin {margin_db:.1f} dB" if margin_db else ""
    warning = None
    if status == "over":
        warning = (
            f"{t.name} power budget {t.power_budget_db:.1f} dB < path loss {loss:.1f} dB "
            f"({parts}){kept}: "
            f"the design exceeds the budget by {-headroom:.2f} dB; use a transceiver with a "
            f"larger budget, a smaller/lower-loss OCS, or drop the circulators"
        )
    elif status == "at-limit":
        warning = (
            f"{t.name} power budget {t.power_budget_db:.1f} dB is at the limit of the path loss "
            f"{loss:.1f} dB ({parts}; worst case {worst:.1f} dB){kept}: headroom only "
            f"{headroom:.2f} dB"
        )
    if source == "model-extrapolated":
        note = (
            f"OCS loss of {int(ocs_ports)} ports extrapolated beyond the reported 1100-port "
            f"point; give a measured value"
        )
        warning = f"{warning}; {note}" if warning else note
    return PowerBudget(
        transceiver=t.name,
        budget_db=t.power_budget_db,
        ocs_ports=int(ocs_ports),
        ocs_loss_db=ocs_loss,
        ocs_loss_source=source,
        circulators=bool(circulators),
        circulator_loss_db=circ,
        loss_db=loss,
        worst_loss_db=worst,
        margin_db=float(margin_db),
        headroom_db=headroom,
        ok=ok,
        status=status,
        warning=warning,
    )
