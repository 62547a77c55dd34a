"""``privnlu audit``: one task, every scheme, one privacy-utility frontier.

For each grid point (:mod:`privnlu.audit.grid`) the audit measures

* **utility**: the task's headline metric after training with the shared pipeline
  (:func:`privnlu.training.engine.train_run`; frozen features by default);
* **leakage**: the *sentence re-identification rate*. ``n`` private training sentences are released under the
  scheme; the attacker holds a candidate corpus of those ``n`` plus ``D`` distractor sentences (other training
  and dev sentences, then public Wikipedia sentences; no text twice) and names at most one candidate per
  released item (per recovered group for the reconstruction attack). The rate is the share of the ``n``
  private sentences among the names, ``|names & private| / n``. Naming ``n`` distinct candidates uniformly at
  random among those of the task's own data gives ``n / (n + D_task)`` in expectation: the chance line;
* each scheme's own leakage figures (token survival for d_chi, the keyless ``|x~|`` head's accuracy and the
  reconstruction success of Xie & Hong 2021 for TextHide and DP-IE);
* the **model threat**: membership inference on the point's trained model (:mod:`privnlu.audit.membership`), with
  its own re-identification share (the attacker names its ``n`` most likely members);
* every threat on one scale, its **advantage over its own chance line** with a 95 % interval, and an **empirical
  epsilon** from its true and false positives (:mod:`privnlu.audit.leakage`);
* the point's leakage is its **worst threat** (the largest advantage over chance), named in the record;
  a scheme that releases only the model (DP-SGD) has the model threat alone;
* the **guarantee**: the scheme's own (:meth:`privnlu.schemes.Scheme.guarantee`): the accounted per-example
  (epsilon, delta) of the whole training release for DP-IE, none for TextHide, eta (metric DP) for d_chi.

The attack of a point is the first of its scheme's threat model (``scheme.threat.attacks``), looked up in the
attack registry (:mod:`privnlu.attacks.registry`) and run by :data:`ATTACKS`;
a scheme whose threat model lists ``keyless-abs-head`` is also checked with that head (frozen mode).

One results JSON per point under ``OUT/points``. A folder that already holds points is refused unless ``resume``
(finished points with the same settings are kept, the others computed) or ``force`` (the folder's points are
replaced); with ``resume``, a point made with other settings (attacker settings included) is refused, naming its
file and the settings that differ. Settings left to scale with the data are fixed from its size before any work
(:func:`privnlu.audit.grid.fit_to_data`).
"""

from __future__ import annotations

import sys
import threading
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterator

import torch
from tqdm.auto import tqdm

from ..attacks import registry as attack_registry
from ..attacks.conditions import Condition
from ..attacks.dchi.analysis import calibrate_eta
from ..attacks.dchi.inversion import NearestNeighbourInversion
from ..attacks.reconstruction.attack import ReconstructionConfig
from ..attacks.reconstruction.audit import reconstruction_audit
from ..attacks.reconstruction.sweep import select_examples
from ..attacks.representation.search import SimilaritySearch
from ..attacks.threat import SEARCH_THREAT, AttackerView, Corpus
from ..data import load_public_corpus, metrics
from ..errors import PrivnluError, require
from ..io import read_json, write_json_atomic
from ..mechanisms.dchi import TokenSpace, privatized_positions
from ..mechanisms.dchi_stats import token_ids_of
from ..models.encoder import public_model_name
from ..params import m_label
from ..rng import SecretGenerator, derive_seed, seeded_torch
from ..schemas.records import check_audit_point
from ..schemes import Scheme, create
from ..training import TrainConfig
from ..training.engine import Prepared, RunSpec, prepare, release_once, train_run
from ..version import __version__
from .frontier import Point, at_chance, clopper_pearson, refuted, useful
from .grid import AuditSettings, GridPoint, fit_to_data, grid
from .leakage import advantage, chance_share, on_scale, release_epsilon
from .membership import membership_threat, nonmember_pool
from .table import write_points_csv

N_EXAMPLES = 3
#: the reconstruction's clusterings in the audit: clique groups and nmf started from them (the strongest), the better
#: one counted. An auditor bounds leakage with the strongest attack; the paper's greedy rule needs a pair network
#: of its own and the threshold rule adds a solve, cost without information (as in the recipes that attack many
#: DP releases)
AUDIT_CLUSTERINGS = ("clique", "nmf")


@dataclass
class Context:
    """What every point shares: the data, clean representations, the private sample and the candidates."""

    settings: AuditSettings
    base: RunSpec
    prep: Prepared  # frozen features (train, dev, public)
    private: torch.Tensor  # train row ids of the n private sentences
    aux: torch.Tensor  # train row ids of the reconstruction attacker's auxiliary data
    candidates: Corpus  # the n private sentences first, then the distractors
    chance_utility: float
    task_distractors: int  # the first distractors, from the task's own data (training and dev rows); then public ones
    progress: bool
    out: Path
    _space: TokenSpace | None = None
    _seconds: dict[str, float] | None = None  # the last duration of each kind of stage (the next one's estimate)
    _nonmembers: Corpus | None = None

    @property
    def n(self) -> int:
        return len(self.private)

    @property
    def random_reid(self) -> float:
        """The release threat's chance line (%): ``n`` names drawn at random among the candidates of the task's own
        data (public sentences are of another domain, which an attacker who knows the task sets aside)."""
        return chance_share(self.n, self.n + self.task_distractors)

    @property
    def space(self) -> TokenSpace:
        if self._space is None:
            enc = self.prep.encoder
            self._space = TokenSpace.from_model(enc.model, enc.tokenizer)
        return self._space

    @property
    def nonmembers(self) -> Corpus:
        """Labelled sentences the audited models never train on (membership inference's non-members)."""
        if self._nonmembers is None:
            self._nonmembers = nonmember_pool(self)
        return self._nonmembers

    @cached_property
    def public_texts(self) -> list[str]:
        return _public_texts(self.settings)

    def rng(self) -> SecretGenerator:
        return SecretGenerator(self.settings.seed, warn=False)


def base_spec(s: AuditSettings) -> RunSpec:
    return RunSpec(task=s.task, model=s.model, mode=s.mode, max_length=s.max_length, train_limit=s.train_limit,
                   dev_limit=s.dev_limit, data_dir=s.data_dir, cache_dir=s.cache_dir, public_size=s.public_size,
                   train=TrainConfig(epochs=s.epochs, seed=s.seed))


def build_context(s: AuditSettings, out: Path, *, progress: bool = True) -> Context:
    """Load the task and its clean representations (feature cache), pick the private sample and the candidates."""
    base = base_spec(s)
    prep = prepare(replace(base, scheme=create("texthide-inter"), mode="frozen"), progress=progress)
    assert prep.train_x is not None and prep.public_x is not None
    private, aux, _ = select_examples(prep, s.n_private, s.aux_size, s.seed)
    first = prep.task.eval_splits[0]
    texts = [prep.train.texts_a[i] for i in private.tolist()]
    xs = [prep.train_x[private]]
    seen = set(texts)
    taken = set(private.tolist()) | set(aux.tolist())
    pools = [(prep.train.texts_a, prep.train_x, [i for i in range(len(prep.train)) if i not in taken]),
             (prep.evals[first].texts_a, prep.eval_x[first], range(len(prep.evals[first]))),
             (_public_texts(s), prep.public_x, range(len(prep.public_x)))]
    rows: list[torch.Tensor] = []
    task_rows = None  # distractors taken before the public pool
    for pool_texts, pool_x, idx in pools:
        if pool_x is prep.public_x:
            task_rows = len(rows)
        for i in idx:
            if len(rows) >= s.distractors:
                break
            t = pool_texts[i]
            if t not in seen:
                seen.add(t)
                texts.append(t)
                rows.append(pool_x[i])
    if len(rows) < s.distractors:
        raise PrivnluError(f"only {len(rows)} distinct distractor sentences are available, {s.distractors} asked; "
                           "raise --public-size or lower --distractors")
    task_rows = len(rows) if task_rows is None else task_rows
    if task_rows < len(private):
        raise PrivnluError(f"only {task_rows} distractor sentences come from the task's own data (training and dev "
                           f"rows that are neither private nor auxiliary), fewer than the {len(private)} private ones: "
                           "the chance line would be above 50 %; lower --private or --aux-size, or give more dev rows")
    candidates = Corpus(texts, torch.cat([xs[0], torch.stack(rows)]).float())
    gold = list(prep.evals[first].labels)
    majority = max(set(gold), key=gold.count)
    chance = metrics.compute(prep.task.metric, [majority] * len(gold), gold)["score"]
    return Context(s, base, prep, private, aux, candidates, chance, task_rows, progress, out)


def _public_texts(s: AuditSettings) -> list[str]:
    return load_public_corpus("wiki", s.public_size).texts_a


# -- attacks and scores ----------------------------------------------------------

def reidentification(guesses: list[int], n: int) -> dict:
    """Share of the ``n`` private sentences (candidates ``0..n-1``) among the attacker's names, in %."""
    hits = len({int(g) for g in guesses if 0 <= int(g) < n})
    lo, hi = clopper_pearson(hits, n)
    return {"rate": round(100.0 * hits / n, 2), "identified": hits, "n_private": n, "ci95": [round(lo, 2), round(hi, 2)]}


def release_threat(ctx: Context, guesses: list[int], attack: str, delta: float) -> dict:
    """The release threat's record: the re-identification share against its chance line on the common scale, and the
    empirical epsilon of its one decision (the named set) over the task's own candidates."""
    n, d = ctx.n, ctx.task_distractors
    reid = reidentification(guesses, n)
    named_out = len({int(g) for g in guesses if n <= int(g) < n + d})
    return {"threat": "release", **reid, "attack": attack, "random_guess": round(ctx.random_reid, 3),
            **on_scale(reid["rate"], reid["ci95"], ctx.random_reid), "candidates": len(ctx.candidates),
            "distractors": len(ctx.candidates) - n, "task_distractors": d,
            "empirical_epsilon": release_epsilon(reid["identified"], n, named_out, d, delta)}


#: how often a stage's bar moves (seconds)
TICK = 1.0


@contextmanager
def _stage(ctx: Context, desc: str, kind: str = "") -> Iterator[None]:
    """A progress bar for a stage with no inner loop to show: it moves every second (elapsed time), against the
    last stage of the same ``kind`` as its estimate once one has finished."""
    if ctx._seconds is None:
        ctx._seconds = {}
    estimate = ctx._seconds.get(kind) if kind else None
    t0 = time.perf_counter()
    if not ctx.progress:
        yield
    else:
        fmt = ("{desc}: {elapsed} elapsed" if estimate is None else
               "{desc}: {percentage:3.0f}% of an estimated {total:.0f} s |{bar}| {elapsed}<{remaining}")
        with tqdm(total=None if estimate is None else max(2, round(estimate)), desc=desc, unit="s", leave=False,
                  bar_format=fmt) as bar:
            stop = threading.Event()

            def tick() -> None:
                while not stop.wait(TICK):
                    if estimate is None or bar.n < bar.total - 1:  # an estimate that runs over stays at its end
                        bar.update(1)
                    else:
                        bar.refresh()

            thread = threading.Thread(target=tick, daemon=True)
            thread.start()
            try:
                yield
            finally:
                stop.set()
                thread.join()
    if kind:
        ctx._seconds[kind] = time.perf_counter() - t0


def _search(ctx: Context, queries: torch.Tensor) -> list[int]:
    view = AttackerView(SEARCH_THREAT, encodings=queries.float(), candidates=ctx.candidates)
    return [int(i) for i in SimilaritySearch().run(view).index]


def _reconstruct(ctx: Context, point: GridPoint, scheme: Scheme, mechanism=None) -> tuple[list[int], dict, list[dict]]:
    """Xie & Hong 2021 on a release of the private sample; the strongest clustering method's names."""
    s, prep = ctx.settings, ctx.prep
    assert prep.train_x is not None
    labels = torch.tensor(prep.train.labels)
    auxiliary = Corpus([prep.train.texts_a[i] for i in ctx.aux.tolist()], prep.train_x[ctx.aux], labels[ctx.aux])
    texts = ctx.candidates.texts[: ctx.n]
    with _stage(ctx, f"{point.name}: reconstruction attack on {ctx.n * s.attack_epochs} encodings", "reconstruction"):
        r = reconstruction_audit(prep.train_x[ctx.private], labels[ctx.private], Condition(point.name, point.m, point.k),
                                 ctx.rng(), epochs=s.attack_epochs, auxiliary=auxiliary, candidates=ctx.candidates,
                                 private_texts=texts, config=ReconstructionConfig(seed=s.seed if s.seed is not None else 0),
                                 methods=AUDIT_CLUSTERINGS, mechanism=mechanism, num_labels=len(prep.task.label_names),
                                 public=prep.public_x if getattr(scheme, "inter", False) else None, keep_guesses=True,
                                 noise=getattr(scheme, "noise", "per-encoding"),  # the scheme's own noise draw
                                 progress=False)  # the audit's own stage bar shows this step
    best = max(r["methods"], key=lambda m: reidentification(r["methods"][m].get("guesses", []), ctx.n)["rate"])
    res = r["methods"][best]
    guesses, truth = res.pop("guesses", []), res.pop("group_truth", [])
    for m in r["methods"].values():
        m.pop("guesses", None)
        m.pop("group_truth", None)
    form = ", ".join(["mixed"] + ["masked"] * bool(point.m) + ["noised"] * (mechanism is not None))
    examples = []
    for i in range(min(N_EXAMPLES, ctx.n)):
        named = [g for g, t in zip(guesses, truth) if t == i]
        examples.append({"private": texts[i], "released": f"{s.attack_epochs} {form} encodings",
                         "recovered": ctx.candidates.texts[named[0]] if named else "(no group formed for it)"})
    own = {"reconstruction_method": best, "reconstruction_success": res["success"],
           "methods": {m: {"success": v["success"], "sentence_identity": v.get("sentence_identity")} for m, v in r["methods"].items()},
           "n_encodings": r["n_encodings"], "attack_seconds": r["attack_seconds"]}
    return guesses, own, examples


def _search_examples(ctx: Context, guesses: list[int], released: list[str]) -> list[dict]:
    return [{"private": ctx.candidates.texts[i], "released": released[i], "recovered": ctx.candidates.texts[guesses[i]]}
            for i in range(min(N_EXAMPLES, ctx.n))]


# -- eta for d_chi -----------------------------------------------------------------

def calibrated_eta(ctx: Context, target: float) -> dict:
    """``dchi calibrate`` on the first ``calibration_tokens`` training tokens for ``target`` inversion accuracy (cached under OUT)."""
    s = ctx.settings
    key = {"task": s.task, "model": s.model, "target": target, "tokens": s.calibration_tokens, "seed": s.seed}
    path = ctx.out / "calibration" / f"eta-t{target:g}.json"
    if path.exists():
        rec = read_json(path)
        if rec.get("key") == key:
            return rec
    ds = ctx.prep.train  # the audited training slice; every sentence has at least one token
    tokens = token_ids_of(ds.texts_a[: s.calibration_tokens], ctx.prep.encoder.tokenizer)[: s.calibration_tokens]
    with _stage(ctx, f"calibrating eta for token inversion {target:g}", "calibration"):
        rec = calibrate_eta(ctx.space, tokens, target, ctx.rng(), progress=False)  # the stage's bar shows it
    rec["key"] = key
    write_json_atomic(path, rec)
    return rec


# -- one point --------------------------------------------------------------------

def _train(ctx: Context, spec: RunSpec, prep: Prepared | None = None, keep: dict | None = None) -> dict:
    if prep is None:
        prep = ctx.prep if spec.mode == "frozen" else prepare(spec, progress=ctx.progress)
    rec = train_run(spec, prep, progress=ctx.progress, group="audit", keep=keep)
    return {k: rec[k] for k in ("metric", "score", "best_score", "eval", "dp", "seconds", "label")}


def run_point(ctx: Context, point: GridPoint) -> dict:
    """Train, attack and score one grid point; returns its results record."""
    t0 = time.time()
    s, prep = ctx.settings, ctx.prep
    own: dict = {}
    keep: dict = {}
    eta = None
    if point.target is not None:  # d_chi: eta calibrated for the target
        cal = calibrated_eta(ctx, point.target)
        eta = float(cal["eta"])
        own["calibration_accuracy"] = cal["accuracy_at_eta"]
    scheme = point.scheme_object(s, eta=eta)
    # the scheme's own training settings (DP-SGD: its batch size and rate, large, as DP-SGD needs)
    spec = replace(ctx.base, scheme=scheme, train=scheme.audit_train(ctx.base.train, s))
    released = release_once(spec, prep, rng=ctx.rng(), progress=ctx.progress, keep=ctx.private)
    if released is not prep:  # the data released once: a head on the released data
        train = _train(ctx, replace(ctx.base, scheme=scheme.head_scheme()), released, keep)
    else:
        train = _train(ctx, spec, keep=keep)
        if "keyless-abs-head" in scheme.threat.attacks and s.mode == "frozen":
            # the keyless head: trained on |x~|, used on plain |h(x)|, no key needed
            keyless = _train(ctx, replace(spec, train=replace(spec.train, abs_input=True, eval_mask="none")))
            own["keyless_abs_head"] = keyless["score"]
    threats: dict[str, dict] = {}
    examples: list[dict] = []
    guarantee = scheme.guarantee(calibration=train["dp"], joint=s.mode == "joint",
                                 model=public_model_name(prep.encoder))
    delta = guarantee.delta if guarantee.delta is not None else s.dp_delta  # the empirical epsilon's delta
    if scheme.releases_data:  # the released representations or text
        guesses, attack_own, examples = ATTACKS[scheme.threat.attacks[0]](ctx, point, scheme, released)
        own.update(attack_own)
        threats["release"] = release_threat(ctx, guesses, scheme.threat.audit_attack, delta)
    with _stage(ctx, f"{point.name}: membership inference on the trained model ({s.mi_references} reference "
                     "models)", "membership"):
        threats["model"] = membership_threat(ctx, spec, keep, delta)
    rec = {
        "kind": "audit", "privnlu": __version__, "task": prep.task.name, "metric": prep.task.metric,
        "scheme": point.scheme, "scheme_title": scheme.title, "setting": _setting(point, eta),
        "point": point.to_json(), "name": point.name, "mode": s.mode,
        "utility": round(float(train["score"]), 2), "utility_ci95": train["eval"][prep.task.eval_splits[0]].get(
            "score_ci95"), "train": train, "reid": worst_threat(threats), "threats": threats,
        "random_guess_reid": round(ctx.random_reid, 3), "chance_utility": round(ctx.chance_utility, 2),
        "own_leakage": own, "guarantee": guarantee.to_json(), "examples": examples,
        "n_train": len(prep.train), "encoder": public_model_name(prep.encoder), "settings": s.key(point),
        "experiment_seed": s.seed, "seconds": round(time.time() - t0, 1),
    }
    # the verdicts, by the frontier's own rules (one place decides what "useful", "at chance" and "refuted" mean)
    p = Point.from_record(rec)
    return {**rec, "useful": useful(p, rec["chance_utility"]), "at_chance": at_chance(p),
            "empirical_epsilon": p.empirical_epsilon, "formal_epsilon": p.formal_epsilon, "refuted": refuted(p)}


def worst_threat(threats: dict[str, dict]) -> dict:
    """The threat with the largest advantage over its own chance line (:mod:`.leakage`)."""
    def scale(t: dict) -> float:
        return t["advantage"] if "advantage" in t else advantage(t["rate"], t["random_guess"])

    return dict(max(threats.values(), key=scale))


def _setting(point: GridPoint, eta: float | None) -> str:
    if point.epsilon is not None and point.k <= 1:
        return f"epsilon = {point.epsilon:g}"
    if point.epsilon is not None:
        return f"epsilon = {point.epsilon:g} (m = {m_label(point.m)}, k = {point.k})"
    if eta is not None:
        return f"eta = {eta:.3g} (token inversion {point.target:g})"
    if point.k > 1:
        return f"m = {m_label(point.m)}, k = {point.k}"
    return ""


# -- the attacks, by the names the schemes' threat models give ------------------------------

def _search_attack(ctx: Context, point: GridPoint, scheme: Scheme, released: Prepared):
    """Similarity search with the released representation of each private sentence (clean without privacy)."""
    assert released.train_x is not None
    guesses = _search(ctx, released.train_x[ctx.private])
    what = scheme.released_what(ctx.prep.encoder.dim)
    return guesses, {}, _search_examples(ctx, guesses, [what] * ctx.n)


def _reconstruction_attack(ctx: Context, point: GridPoint, scheme: Scheme, released: Prepared):
    """Xie & Hong 2021 on a release of the private sample under the scheme (with its noise, if any)."""
    mechanism = scheme.attack_mechanism(dim=ctx.prep.encoder.dim, epochs=ctx.settings.attack_epochs)
    return _reconstruct(ctx, point, scheme, mechanism)


def _text_search_attack(ctx: Context, point: GridPoint, scheme: Scheme, released: Prepared):
    """Search with the embedding of each private sentence's privatized text: the attacker embeds the text it
    received with the public encoder."""
    tr = released.released
    assert released.train_x is not None and tr is not None
    guesses = _search(ctx, released.train_x[ctx.private])
    enc = ctx.prep.encoder
    texts = [enc.tokenizer.decode(tr.kept[r][2], skip_special_tokens=True) for r in ctx.private.tolist()]
    own = {"token_survival": round(tr.surviving / max(1, tr.privatized), 4)}
    return guesses, own, _search_examples(ctx, guesses, texts)


def _token_inversion_attack(ctx: Context, point: GridPoint, scheme: Scheme, released: Prepared):
    """Nearest-token inversion of each private sentence's noisy token embeddings, then search with the embedding
    of the recovered tokens."""
    tr, enc = released.released, ctx.prep.encoder
    assert tr is not None
    inv = NearestNeighbourInversion(ctx.space)
    hit = total = 0
    recovered = []
    for r in ctx.private.tolist():
        ids, mask, noisy = tr.kept[r]
        pos = privatized_positions(ctx.space, ids, mask)
        guess = ids.clone()  # special tokens are sent unnoised; the attacker sees where they are
        guess[pos] = inv.invert(noisy[pos])
        hit += int((guess[pos] == ids[pos]).sum())
        total += int(pos.sum())
        recovered.append((guess, mask))
    with torch.no_grad():
        queries = torch.cat([enc(g[None], m[None]).float() for g, m in recovered])
    guesses = _search(ctx, queries)
    texts = ["inverted tokens: " + enc.tokenizer.decode(g[m.bool()], skip_special_tokens=True) for g, m in recovered]
    return guesses, {"token_survival": round(hit / max(1, total), 4)}, _search_examples(ctx, guesses, texts)


class AuditAttacks(dict):
    """Registered attack name -> the audit's runner for it; a name is looked up in the attack registry
    (:mod:`privnlu.attacks.registry`) first, so an unregistered name, or one the audit cannot run on a release, is
    refused with one line."""

    def __getitem__(self, name: str) -> Callable[..., tuple[list[int], dict, list[dict]]]:
        entry = attack_registry.get(name)
        require(entry.audit and dict.__contains__(self, entry.name),
                f"the audit runs no attack '{name}' on a release; it runs {', '.join(attack_registry.audit_names())}")
        return dict.__getitem__(self, entry.name)


#: the attacks the audit runs on a release (the registry's ``audit`` entries, by the names the schemes' threat models
#: give) -> (ctx, point, scheme, released data) -> (guesses, own, examples)
ATTACKS = AuditAttacks({
    "search": _search_attack,
    "reconstruction": _reconstruction_attack,
    "text-search": _text_search_attack,
    "token-inversion": _token_inversion_attack,
})


# -- the audit --------------------------------------------------------------------

def point_path(out: Path, point: GridPoint) -> Path:
    return out / "points" / f"{point.name}.json"


def finished(path: Path, settings: AuditSettings, point: GridPoint) -> dict | None:
    """The point's record if it exists and was made with the same settings (which a point of an older privnlu,
    without the common scale, never is: it is recomputed)."""
    if not path.exists():
        return None
    try:
        rec = read_json(path)
    except (ValueError, OSError):
        return None
    if rec.get("kind") != "audit" or rec.get("settings") != settings.key(point):
        return None  # the settings name the data's fingerprint: a point of an older privnlu never matches
    check_audit_point(rec, file=path)  # a hand-edited point is refused, never reported
    return rec


@dataclass(frozen=True)
class DataShape:
    """What the audit needs to know of its data before any work: sizes, and a fingerprint of the rows."""

    n_train: int
    n_dev: int
    n_public: int
    n_nonmembers: int  # distinct labelled sentences no audited model trains on (membership's non-members)
    fingerprint: str  # SHA-256 of the audited training and dev rows (text and label)


def data_shape(settings: AuditSettings) -> DataShape:
    """Sizes and fingerprint of the data the audit will use, read without encoding anything."""
    import hashlib

    from ..data import get_task

    task = get_task(settings.task)
    require(not task.is_regression,  # validated before any work
            f"the audit needs a classification task (the reconstruction attack uses class labels); {settings.task} is a regression task")
    full = task.load("train", settings.data_dir)
    train = full.head(settings.train_limit)
    dev = task.load(task.eval_splits[0], settings.data_dir).head(settings.dev_limit)
    seen = set(train.texts_a)
    spare = full.texts_a[len(train):] if settings.train_limit is not None else []
    nonmembers = len({t for t in list(spare) + list(dev.texts_a) if t not in seen})
    digest = hashlib.sha256()
    for ds in (train, dev):
        for row in zip(ds.texts_a, ds.texts_b or [""] * len(ds), ds.labels):
            digest.update(repr(row).encode("utf-8"))
        digest.update(b"\x00split\x00")
    return DataShape(len(train), len(dev), len(load_public_corpus("wiki")), nonmembers, digest.hexdigest()[:16])


def resolve(settings: AuditSettings) -> AuditSettings:
    """``settings`` with every size scaled to the data and the data's fingerprint, checked before any work."""
    shape = data_shape(settings)
    fitted = fit_to_data(settings, shape.n_train, shape.n_dev, shape.n_public, shape.n_nonmembers)
    return replace(fitted, data_fingerprint=shape.fingerprint)


def check_folder(out: Path, settings: AuditSettings, *, resume: bool, force: bool) -> list[Path]:
    """The point files under ``out`` that ``force`` replaces; refuses a folder the run may not use (see the module
    docstring), before any work."""
    require(not (resume and force), "--resume continues the audit in the folder, --force replaces it: give one of them")
    found = sorted((out / "points").glob("*.json"))
    if not found or force:
        return found
    if not resume:
        raise PrivnluError(f"{out} already holds an audit ({len(found)} point files): continue it with --resume (finished "
                           "points are kept), replace it with --force, or choose another --out")
    key = settings.key()
    for path in found:
        try:
            rec = read_json(path)
            old = {k: v for k, v in rec["settings"].items() if k != "point"}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            sys.stderr.write(f"privnlu: {path} is not a readable audit point; recomputing it\n")
            continue
        if "data_fingerprint" not in old:  # written before points named their data: recomputed (see finished)
            sys.stderr.write(f"privnlu: {path} was made by an older privnlu; recomputing it\n")
            continue
        if old["data_fingerprint"] != key["data_fingerprint"]:
            raise PrivnluError(f"{path} holds a point made on other data (training and dev rows with another "
                               "fingerprint, under the same task name): use another --out, or --force to replace the "
                               "folder's points")
        diff = [f"{k} {old.get(k)!r} -> {key.get(k)!r}" for k in sorted(set(old) | set(key)) if old.get(k) != key.get(k)]
        if diff:
            raise PrivnluError(f"{path} holds a point made with other settings ({'; '.join(diff[:4])}"
                               f"{'; ...' if len(diff) > 4 else ''}): use another --out, or --force to replace the "
                               "folder's points")
    return []


def point_seed(seed: int | None, point: GridPoint) -> int | None:
    """EXPERIMENTS ONLY: the seed of PyTorch's global RNG (initialisation, dropout, sampling) while ``point`` runs,
    derived from the audit's ``--seed`` and the point's name, so that a point does not depend on which points the
    process ran before it (a resumed audit gives the points of an uninterrupted one); None leaves it unseeded."""
    return None if seed is None else derive_seed(seed, zlib.crc32(point.name.encode()))


def run_audit(settings: AuditSettings, out: str | Path, *, resume: bool = False, force: bool = False,
              progress: bool = True, log: Callable[[str], None] = lambda s: None) -> list[dict]:
    """Run every grid point not already finished under ``out``; return all point records (and write them as the flat
    table ``out/points.csv``, :mod:`.table`).

    ``settings`` left to scale with the data are fixed from the data's size first; the folder is checked
    (:func:`check_folder`) before any work.
    """
    settings = resolve(settings)
    out = Path(out)
    stale = check_folder(out, settings, resume=resume, force=force)
    points = grid(settings)
    for path in stale:  # --force: the folder's earlier points are replaced, none is left to mix into the report
        path.unlink()
    done = {p.name: finished(point_path(out, p), settings, p) for p in points}
    todo = [p for p in points if done[p.name] is None]
    if len(todo) < len(points):
        log(f"{len(points) - len(todo)} of {len(points)} points already finished under {out}; keeping them")
    if todo:
        ctx = build_context(settings, out, progress=progress)
        log(f"{ctx.n} private sentences among {len(ctx.candidates)} candidates, {ctx.task_distractors} of the others "
            f"from the task's own data (chance line of the released data {ctx.random_reid:.2f} %); "
            f"{len(todo)} points to compute")
        for p in tqdm(todo, desc="audit points", disable=not progress):
            with seeded_torch(point_seed(settings.seed, p)):
                rec = run_point(ctx, p)
            write_json_atomic(point_path(out, p), rec)
            done[p.name] = rec
            flag = "" if rec["useful"] else "  no useful utility (its interval reaches the majority class)"
            red = "  RED FLAG: empirical epsilon above the formal claim" if rec["refuted"] else ""
            worst = rec["reid"]
            log(f"{p.name:28s} {rec['metric']} {rec['utility']:6.2f}  advantage over chance {worst['advantage']:6.2f} % "
                f"({worst['threat']}: {worst['rate']:.1f} % against {worst['chance']:.1f} %"
                f"{', at chance' if rec['at_chance'] else ''})  empirical epsilon >= {rec['empirical_epsilon']:.2f}  "
                f"({rec['seconds']:.0f} s){flag}{red}")
    records = [done[p.name] for p in points]
    write_points_csv(records, out / "points.csv")  # the flat table a spreadsheet or a notebook sorts
    return records
