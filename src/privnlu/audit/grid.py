"""The audit's settings and its grid of (scheme, setting) points.

The grid covers every scheme of the registry (:mod:`privnlu.schemes`) unless ``schemes`` names fewer: one point
for a scheme without parameters, one per (m, k) of ``texthide`` for the per-batch encodings, one per epsilon for a
scheme with a DP guarantee, and one per target token-inversion accuracy (which fixes eta) for the d_chi releases.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..errors import PrivnluError, require
from ..params import m_label, parse_m
from ..schemes import Scheme, canonical, create, get, names

#: Huang et al. 2020's recommended (m, k)
TEXTHIDE_POINT = (256, 4)
#: Xie & Hong 2022, Algorithm 1: clip, mix k = 4, noise on each encoding, no sign mask
DP_POINT = (0, 4)


@dataclass(frozen=True)
class GridPoint:
    """One point of the grid: a scheme (canonical name) and its parameters."""

    scheme: str
    m: float = 0
    k: int = 1
    epsilon: float | None = None  # a scheme with a DP guarantee
    target: float | None = None  # d_chi: target token-inversion accuracy that fixes eta

    @property
    def name(self) -> str:
        """File-name-safe identifier."""
        cls = get(self.scheme, warn=False)
        if self.target is not None:
            return f"{self.scheme}-t{self.target:g}"
        if self.epsilon is not None:
            return f"{self.scheme}-m{m_label(self.m)}-k{self.k}-eps{self.epsilon:g}"
        if cls.release == "per-batch":
            return f"{create(self.scheme, m=self.m, k=self.k).variant}-m{m_label(self.m)}-k{self.k}"
        return self.scheme

    def scheme_object(self, settings: "AuditSettings", *, eta: float | None = None) -> Scheme:
        """The point's scheme with every parameter set (``eta``: the calibrated eta of a d_chi point)."""
        cls = get(self.scheme, warn=False)
        if cls.formal == "dp":
            return create(self.scheme, m=self.m, k=self.k, epsilon=self.epsilon, mechanism=settings.dp_mechanism,
                          delta=settings.dp_delta, clip=settings.dp_clip)
        if cls.release == "per-batch":
            return create(self.scheme, m=self.m, k=self.k)
        if cls.release == "once":
            return create(self.scheme, eta=eta)
        return create(self.scheme)

    def to_json(self) -> dict:
        d = asdict(self)
        d["m"] = m_label(self.m)
        return d


@dataclass(frozen=True)
class AuditSettings:
    """Everything that defines an audit (a point's results are reused only when these match)."""

    task: str
    model: str | None = None
    mode: str = "frozen"
    train_limit: int | None = None
    dev_limit: int | None = None
    max_length: int = 128
    epochs: int = 20  # head training
    seed: int | None = None
    n_private: int = 100  # private training sentences attacked
    distractors: int = 5000
    attack_epochs: int = 50  # reconstruction: encodings per private sentence (Xie & Hong 2021: 50)
    aux_size: int = 2000  # reconstruction: the attacker's same-distribution examples
    public_size: int = 5000  # public sentences for TextHide-inter (also used as distractors)
    texthide: tuple[tuple[float, int], ...] = (TEXTHIDE_POINT,)
    dp_point: tuple[float, int] = DP_POINT
    dp_epsilons: tuple[float, ...] = (1.0, 8.0, 64.0)
    dp_mechanism: str = "gaussian"
    dp_delta: float = 1e-5
    dp_clip: float = 1.0
    dchi_targets: tuple[float, ...] = (0.1, 0.34, 0.7)
    calibration_tokens: int = 3000
    schemes: tuple[str, ...] = field(default_factory=names)
    data_dir: str | None = field(default=None, compare=False)
    cache_dir: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schemes", tuple(canonical(s) for s in self.schemes))
        require(self.mode in ("frozen", "joint"), f"unknown mode '{self.mode}'; use frozen or joint")
        for name in ("n_private", "distractors", "attack_epochs", "aux_size", "public_size", "epochs", "calibration_tokens", "max_length"):
            require(getattr(self, name) >= 1, f"{name.replace('_', ' ')} must be >= 1")
        require(self.n_private >= 4, "the audit needs at least 4 private sentences (k = 4 mixes them)")
        require(self.attack_epochs >= 2, "the reconstruction attack needs at least 2 encodings per sentence (--encodings-per-example 2)")
        for t in self.dchi_targets:
            require(0 < t < 1, f"every d_chi target accuracy must be in (0, 1), not {t}")
        for m, k in self.texthide + (self.dp_point,):
            require(k >= 2, f"TextHide points need k >= 2 (inter mixes floor(k/2) public rows), not {k}")
        for point in grid(self):  # every scheme checks its own parameters (the d_chi eta comes later)
            if point.target is None:
                point.scheme_object(self)
        if self.mode == "joint" and any(get(s).release == "once" for s in self.schemes):
            raise PrivnluError("d_chi schemes are audited in frozen mode only; for joint fine-tuning under d_chi use "
                               "'privnlu dchi finetune', or pass --schemes without the dchi-* ones")

    def key(self, point: "GridPoint | None" = None) -> dict:
        """The settings a finished point must share to be reused: everything every point depends on (not paths,
        not the other points of the grid), plus ``point`` itself. Adding an epsilon reruns nothing else."""
        d = asdict(self)
        for k in ("data_dir", "cache_dir", "schemes", "texthide", "dp_point", "dp_epsilons", "dchi_targets"):
            d.pop(k)
        if point is not None:
            d["point"] = point.to_json()
        return d


def grid(s: AuditSettings) -> list[GridPoint]:
    """The audit's points, in the order they are run."""
    pts: list[GridPoint] = []
    for scheme in s.schemes:
        cls = get(scheme)
        if cls.formal == "dp":
            pts += [GridPoint(scheme, parse_m(s.dp_point[0]), s.dp_point[1], epsilon=e) for e in s.dp_epsilons]
        elif cls.release == "per-batch":
            pts += [GridPoint(scheme, parse_m(m), k) for m, k in s.texthide]
        elif cls.release == "once":
            pts += [GridPoint(scheme, target=t) for t in s.dchi_targets]
        else:
            pts.append(GridPoint(scheme))
    return pts


#: the demo's audit (``privnlu demo``): every scheme on a slice of the packaged tweets sized to finish well within
#: 10 minutes on 2 CPU cores: 1,000 training and 300 dev tweets, 100 private sentences among 2,000 distractors (the
#: full audit uses 5,000), 20 encodings per private sentence for the reconstruction attack (Xie & Hong 2021 use 50)
#: and two eta per d_chi mechanism (every text-to-text or token-rep point re-encodes the privatized tweets, the
#: largest cost; the audit's default is three)
DEMO = AuditSettings(task="tweets", train_limit=1000, dev_limit=300, epochs=20, n_private=100, distractors=2000,
                     attack_epochs=20, aux_size=300, public_size=1200, dp_epsilons=(1.0, 8.0, 64.0),
                     dchi_targets=(0.1, 0.7), calibration_tokens=2000)
