"""The audit's settings and its grid of (scheme, setting) points.

The grid covers every scheme of the registry (:mod:`privnlu.schemes`) unless ``schemes`` names fewer; each scheme
gives its own points (``Scheme.audit_points``): one for a scheme without parameters, one per (m, k) of ``texthide``
for the per-batch encodings, one per epsilon for a scheme with a DP guarantee (``--dp-epsilons`` for DP instance
encoding, ``--dp-sgd-epsilons`` for DP-SGD, whose release is the model only), and one per target token-inversion
accuracy (which fixes eta) for the d_chi releases.
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, asdict, dataclass, replace

from ..errors import require
from ..options import OPTIONS
from ..params import POS_INT, Option, Range, float_list, m_label, param
from ..schemas.paths import shareable
from ..schemes import Scheme, canonical, get, names


def mk_point(text: str) -> tuple[float, int]:
    """``"256:4"`` -> ``(256.0, 4)``: an (m, k) point."""
    try:
        m, k = text.split(":")
        return float(m), int(k)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an M:K point, e.g. 256:4") from None


def mk_points(text: str) -> tuple[tuple[float, int], ...]:
    """``"256:4,16:4"`` -> ``((256.0, 4), (16.0, 4))``."""
    points = tuple(mk_point(x) for x in text.split(",") if x.strip())
    if not points:
        raise argparse.ArgumentTypeError("give at least one M:K point")
    return points


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
    def params(self) -> dict:
        """The point's settings, as its scheme's ``audit_points`` gave them."""
        return {k: v for k, v in asdict(self).items() if k != "scheme"}

    @property
    def name(self) -> str:
        """File-name-safe identifier."""
        return get(self.scheme, warn=False).audit_point_name(self.params)

    def scheme_object(self, settings: "AuditSettings", *, eta: float | None = None) -> Scheme:
        """The point's scheme with every parameter set (``eta``: the calibrated eta of a d_chi point)."""
        return get(self.scheme, warn=False).audit_scheme(self.params, settings, eta=eta)

    def to_json(self) -> dict:
        d = asdict(self)
        d["m"] = m_label(self.m)
        return d


@dataclass(frozen=True)
class AuditSettings:
    """Everything that defines an audit (a point's results are reused only when these match)."""

    task: str = param(OPTIONS["task"].but(required=True), default=MISSING)
    model: str | None = param(OPTIONS["model"].but(group="training and output"))
    mode: str = param(OPTIONS["mode"].but(group="training and output"))
    train_limit: int | None = param(OPTIONS["train_limit"])
    dev_limit: int | None = param(OPTIONS["dev_limit"])
    max_length: int = param(OPTIONS["max_length"].but(group="training and output"))
    epochs: int = param(OPTIONS["epochs"].but(help="head training epochs", group="training and output"))
    seed: int | None = param(OPTIONS["seed"].but(group="training and output"))
    n_private: int | None = param(Option("n_private", "--private", "private training sentences attacked (default: "
                                         "a tenth of the training rows, 4 to 100)", int, range=POS_INT, group="attacker"))
    distractors: int | None = param(Option("distractors", "--distractors", "other candidate sentences (default: twice "
                                           "the training rows, 1,000 to 5,000)", int, range=POS_INT, group="attacker"))
    attack_epochs: int | None = param(OPTIONS["encodings_per_example"].but(
        dest="attack_epochs", default=None, group="attacker", help="reconstruction: encodings of each private sentence "
        "in the attacked release (default: --epochs, as many as training releases, at most 50: Xie & Hong 2021's)",
        range=Range(lo=2, integer=True, note="the attack needs >= 2 encodings per sentence")))
    aux_size: int | None = param(Option("aux_size", "--aux-size", "reconstruction: the attacker's same-distribution "
                                        "examples, training rows that are not private (default: half of the other "
                                        "training rows, at most 2000)", int, range=POS_INT, group="attacker"))
    public_size: int | None = param(OPTIONS["public_size"].but(default=None, group="attacker", help="public Wikipedia "
                                                               "sentences (TextHide-inter, and distractors; default: "
                                                               "as many as --distractors)"))
    texthide: tuple[tuple[float, int], ...] = param(Option(
        "texthide", "--texthide", "per-batch encodings' (m, k) points as M:K,... (the paper's is 256:4)", mk_points,
        default=(TEXTHIDE_POINT,), group="grid"))
    dp_point: tuple[float, int] = param(Option(
        "dp_point", "--dp-point", "DP instance encoding's (m, k) as M:K; M = 0 is the paper's Algorithm 1 (no sign "
        "mask), M > 0 adds TextHide's masks", mk_point, default=DP_POINT, group="grid"))
    dp_epsilons: tuple[float, ...] = param(OPTIONS["dp_epsilons"].but(default=(1.0, 8.0, 64.0), group="grid"))
    dp_sgd_epsilons: tuple[float, ...] = param(OPTIONS["dp_epsilons"].but(
        dest="dp_sgd_epsilons", flag="--dp-sgd-epsilons", default=(1.0, 3.0, 8.0), group="grid",
        help="DP-SGD: comma-separated target epsilons per training example of the released model"))
    dp_sgd_batch_size: int | None = param(Option(
        "dp_sgd_batch_size", "--dp-sgd-batch-size", "DP-SGD: expected batch size (Poisson sampling); DP-SGD trains "
        "best with large batches (default: a quarter of the training rows, at most 256)", int, range=POS_INT,
        group="grid"))
    dp_sgd_lr: float = param(Option(
        "dp_sgd_lr", "--dp-sgd-lr", "DP-SGD: the head's learning rate (Adam, constant)", float, default=1e-2,
        range=Range(lo=0, lo_open=True), group="grid"))
    dp_mechanism: str = param(OPTIONS["mechanism"].but(dest="dp_mechanism", default="gaussian", group="grid"))
    dp_delta: float = param(OPTIONS["delta"].but(dest="dp_delta", default=1e-5, group="grid"))
    dp_clip: float = param(OPTIONS["clip"].but(dest="dp_clip", default=1.0, group="grid"))
    dchi_targets: tuple[float, ...] = param(Option(
        "dchi_targets", "--dchi-targets", "d_chi: eta is calibrated so that token inversion recovers these fractions",
        float_list, default=(0.1, 0.34, 0.7), range=Range(lo=0, hi=1, lo_open=True, hi_open=True, items=True),
        group="grid"))
    mi_references: int | None = param(Option(
        "mi_references", "--mi-references", "membership inference: reference models the attacker trains (LiRA; "
        "in joint mode each is a fine-tuning run; default: 8, 4 for a training set under 5,000 rows)", int, range=Range(lo=2, integer=True, note="LiRA needs reference models with and "
                                                                                "without each candidate"), group="attacker"))
    calibration_tokens: int = param(Option("calibration_tokens", "--calibration-tokens", "training tokens used to "
                                           "calibrate eta", int, default=3000, range=POS_INT, group="grid"))
    schemes: tuple[str, ...] = param(OPTIONS["schemes"].but(help="comma-separated subset of the schemes (default: "
                                                                 "all)", group="grid"), default=())
    data_dir: str | None = param(OPTIONS["data_dir"], compare=False)
    cache_dir: str | None = param(OPTIONS["cache_dir"].but(group="training and output"), compare=False)
    #: the SHA-256 of the audited training and dev rows (text and label), fixed from the data before any work: a
    #: resumed audit never mixes points of two data sets under one task name
    data_fingerprint: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "schemes", tuple(canonical(s) for s in (self.schemes or names())))
        require(self.mode in ("frozen", "joint"), f"unknown mode '{self.mode}'; use frozen or joint")
        for name in ("n_private", "distractors", "attack_epochs", "aux_size", "public_size", "epochs", "calibration_tokens",
                     "max_length", "dp_sgd_batch_size"):
            value = getattr(self, name)
            require(value is None or value >= 1, f"{name.replace('_', ' ')} must be >= 1")
        require(self.n_private is None or self.n_private >= 4, "the audit needs at least 4 private sentences (--private 4; "
                                                              "k = 4 mixes them)")
        require(self.attack_epochs is None or self.attack_epochs >= 2,
                "the reconstruction attack needs at least 2 encodings per sentence (--encodings-per-example 2)")
        require(self.mi_references is None or self.mi_references >= 2,
                "LiRA needs at least 2 reference models (--mi-references 2)")
        for t in self.dchi_targets:
            require(0 < t < 1, f"every d_chi target accuracy must be in (0, 1), not {t}")
        for m, k in self.texthide + (self.dp_point,):
            require(k >= 2, f"TextHide points need k >= 2 (inter mixes floor(k/2) public rows), not {k}")
        for point in grid(self):  # every scheme checks its own parameters (the d_chi eta comes later)
            if point.target is None:
                point.scheme_object(self)
        for scheme in self.schemes:
            get(scheme).audit_check(self)

    def key(self, point: "GridPoint | None" = None) -> dict:
        """The settings a finished point must share to be reused: everything every point depends on (not paths,
        not the other points of the grid), plus ``point`` itself. Adding an epsilon reruns nothing else."""
        d = asdict(self)
        for k in ("data_dir", "cache_dir", "schemes", "texthide", "dp_point", "dp_epsilons", "dp_sgd_epsilons",
                  "dchi_targets"):
            d.pop(k)
        if point is not None:
            d["point"] = point.to_json()
        return shareable(d)  # a model folder as its name and fingerprint: no local path in a point's record


#: the attacker's budget when the data leaves it free: private sample, auxiliary data, encodings per sentence
MAX_PRIVATE, MAX_AUX, MAX_ATTACK_EPOCHS, MAX_DP_SGD_BATCH = 100, 2000, 50, 256
#: distractors (and public sentences) when the data leaves them free: twice the training rows, within these bounds
MIN_DISTRACTORS, MAX_DISTRACTORS = 1000, 5000
#: below this many training rows, LiRA trains 4 reference models instead of 8
SMALL_DATA, MI_REFERENCES, MI_REFERENCES_SMALL = 5000, 8, 4


def fit_to_data(s: AuditSettings, n_train: int, n_dev: int, n_public: int | None = None,
                n_nonmembers: int | None = None) -> AuditSettings:
    """``s`` with every setting left at "scaled to the data" filled in from the training and dev sizes, checked
    against them before any work: the message names the audit's own options.

    Private sample: a tenth of the training rows (4 to 100); auxiliary data: half of the other rows (at most
    2,000, at least what a simulated release needs); distractors: twice the training rows (1,000 to 5,000), and as
    many public sentences; encodings per private sentence: ``epochs`` (what training
    releases; at most 50); DP-SGD's batch: a quarter of the rows (at most 256); LiRA: 8 reference models, 4 under
    5,000 training rows. Explicit values are kept, and refused when the data cannot hold them (``n_public``: the
    public sentences available; ``n_nonmembers``: the labelled sentences the audited models never train on, which
    membership inference needs at least as many of as there are private sentences; both if known).
    """
    n_private = s.n_private if s.n_private is not None else min(MAX_PRIVATE, max(4, n_train // 10))
    rest = n_train - n_private
    need = min(n_private, 200)  # a simulated release of the reconstruction attacker holds min(n, 200) rows
    aux = s.aux_size if s.aux_size is not None else min(MAX_AUX, max(need, rest // 2))
    require(n_train >= 8 and n_private + aux <= n_train,
            f"the training set has {n_train} rows; the audit takes --private {n_private} private and --aux-size {aux} "
            f"auxiliary rows from it, disjoint: lower --private or --aux-size (both scale to the data when not given)"
            if n_train >= 8 else f"the audit needs at least 8 training rows, not {n_train}")
    require(aux >= need, f"--aux-size {aux} is too small: the reconstruction attacker simulates releases of "
                         f"{need} rows (min(--private, 200)); give at least {need}")
    require(n_dev >= 2, f"the audit needs at least 2 dev rows to score utility, not {n_dev}")
    distractors = s.distractors if s.distractors is not None else min(MAX_DISTRACTORS, max(MIN_DISTRACTORS, 2 * n_train))
    public = s.public_size if s.public_size is not None else min(distractors, n_public or distractors)
    require(n_public is None or public <= n_public,
            f"--public-size {public} is more than the {n_public} public sentences packaged: lower it")
    require(rest - aux + n_dev >= n_private,
            f"only {rest - aux + n_dev} training and dev rows are left as same-distribution distractors beside "
            f"--private {n_private} and --aux-size {aux}; the release threat's chance line needs at least as many as "
            "there are private sentences: lower --private or --aux-size, or give more dev rows")
    available = rest - aux + n_dev + public
    require(distractors <= available,
            f"--distractors {distractors} is more than the {available} candidate sentences available (other training "
            f"rows, dev rows and --public-size {public} public sentences): lower --distractors or raise --public-size")
    if n_nonmembers is not None:
        found = min(n_nonmembers, distractors)
        require(found >= n_private,
                f"membership inference needs labelled non-members, sentences the audited models never train on: the dev "
                f"rows that are not training rows (and training rows past --train-limit); only {found} are available "
                f"for --private {n_private}: give a dev file with other sentences than the training file, or lower "
                "--private" if found else "membership inference needs labelled non-members, and every dev row is also a "
                "training row (is the same file given as --train-file and --dev-file?): give a dev file with other "
                "sentences, or use --train-limit to leave training rows out")
    return replace(
        s, n_private=n_private, aux_size=aux, distractors=distractors, public_size=public,
        attack_epochs=s.attack_epochs if s.attack_epochs is not None else max(2, min(MAX_ATTACK_EPOCHS, s.epochs)),
        dp_sgd_batch_size=s.dp_sgd_batch_size if s.dp_sgd_batch_size is not None else min(MAX_DP_SGD_BATCH, max(8, n_train // 4)),
        mi_references=s.mi_references if s.mi_references is not None else (
            MI_REFERENCES if n_train >= SMALL_DATA else MI_REFERENCES_SMALL))


def grid(s: AuditSettings) -> list[GridPoint]:
    """The audit's points, in the order they are run."""
    return [GridPoint(scheme, **point) for scheme in s.schemes for point in get(scheme).audit_points(s)]


#: the demo's audit (``privnlu demo``): every scheme on a slice of the packaged tweets sized to finish well within
#: 10 minutes on 2 CPU cores: 1,000 training and 300 dev tweets, 100 private sentences among 2,000 distractors (the
#: full audit uses 5,000), 20 encodings per private sentence for the reconstruction attack (Xie & Hong 2021 use 50)
#: one eta per d_chi mechanism, the one that keeps most utility (every text-to-text or token-rep point re-encodes
#: the privatized tweets, the largest cost; the audit's default is three), DP instance encoding at epsilon 1 and 8 (the audit adds 64), DP-SGD
#: at 1, 3 and 8, and membership inference with 8 reference models on every point
DEMO = AuditSettings(task="tweets", train_limit=1000, dev_limit=300, epochs=20, n_private=100, distractors=2000,
                     attack_epochs=20, aux_size=300, public_size=1200, dp_epsilons=(1.0, 8.0),
                     dchi_targets=(0.7,), calibration_tokens=2000, dp_sgd_batch_size=256, mi_references=8)
