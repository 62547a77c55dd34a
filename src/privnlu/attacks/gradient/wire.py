"""The attacks on a captured Flower exchange (``privnlu attack gradient --wire``): the token sets each client
message gives away (embedding-table gradient; the first-layer span test), then gradient matching (TextHide
Algorithm 3) on one plain client gradient; or (``--method span``) every client's sentences by the DAGER-class
span inversion (:mod:`.dager.attack`), under SecAgg+ the union of the summed clients' sentences from the aggregate.

The attacker holds only the capture and the public model. ``truth`` (a finished, seeded in-process federated run
folder) is the evaluator's: the recovered token sets are scored against each client's replayed batch, the DLG
recovery against the run's training representations (frozen mode); the attacker never reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ...errors import PrivnluError
from ...io import read_json
from ...schemas import path_ref
from .embedding_leak import audit_capture
from .matching import GradientMatchingConfig, attack_capture, score

Log = Callable[[str], None]


def run_config(run_dir: Path, model: str = ""):
    """The :class:`~privnlu.federated.config.FederatedConfig` of a finished federated run folder (a local model
    folder the record names by reference is ``model``)."""
    from ...federated.config import FederatedConfig
    from ...schemas import local_settings

    try:
        config = read_json(run_dir / "result.json")["config"]
        return FederatedConfig(**local_settings(config, {"model": model}, what=f"--truth {run_dir}",
                                                   base=run_dir))
    except (OSError, KeyError, ValueError, TypeError, AttributeError):
        raise PrivnluError(f"--truth {run_dir}: not a finished privnlu federated run folder") from None


def attack_wire(wire: str | Path, *, round: int = 1, node: int | None = None, masked: bool = True,
                truth: str | Path | None = None, span: bool = False, model: str | None = "", method: str = "tokens",
                config: GradientMatchingConfig | None = None, log: Log = lambda s: None) -> dict:
    """Every captured message's token leak, then DLG on round ``round``'s client gradient (``node``, default the
    first reply); returns the record (kind ``gradient_attack``, source ``wire``). ``method="span"``: the
    DAGER-class sentence recovery on every plain client gradient instead (:func:`attack_wire_sentences`)."""
    from ...federated.wire import load_capture
    from ...models import load_encoder

    if method not in ("tokens", "span"):
        raise PrivnluError(f"--method must be tokens or span, not '{method}'")
    config = config or GradientMatchingConfig()
    capture = load_capture(wire)
    run_cfg = run_config(Path(truth), model or "") if truth else None
    if method == "span":
        return attack_wire_sentences(capture, wire=wire, run_cfg=run_cfg, model=model or None, round=round, node=node,
                                     log=log)
    encoder = load_encoder((model or (run_cfg.model if run_cfg else "")) or None)
    leak = audit_capture(capture, encoder, truth_cfg=run_cfg if run_cfg is not None and run_cfg.mode == "joint" else None,
                         span=span)
    for row in leak:
        log(_leak_line(row))
    rec: dict = {"kind": "gradient_attack", "source": "wire", "wire": path_ref(wire), "token_leak": leak}
    plain = [e for e in capture.received if e["round"] == round and "gradients" in e.get("arrays", {})
             and (node is None or e["node_id"] == node)]
    if not plain:
        log(f"no plain client gradient in round {round} (secure aggregation, FedAvg or no such node): DLG skipped")
        return rec
    res, info = attack_capture(capture, round=round, node_id=node, masked=masked, config=config)
    rec.update({**info, "masked": masked, "recovered": res.recovered.tolist(), "grad_distance": res.grad_distance,
                "seconds": float(f"{res.seconds:.2f}")})
    verdict = ""
    if run_cfg is not None and run_cfg.mode == "frozen":
        mse, ok = _score_against_run(run_cfg, res.recovered)
        rec.update({"mse": mse, "success": ok})
        verdict = f"; min MSE to a training representation {mse:.3g} (success: {ok})"
    log(f"DLG on round {info['round']} node {info['node_id']}: gradient distance {res.grad_distance:.2e} in "
        f"{res.seconds:.1f}s{verdict}")
    return rec


def attack_wire_sentences(capture, *, wire: str | Path, run_cfg=None, model: str | None = None, round: int = 1,
                          node: int | None = None, max_seconds: float = 120.0, log: Log = lambda s: None) -> dict:
    """The DAGER-class attack on every plain gradient of round ``round`` (each client's message, or the SecAgg+
    aggregate as node 0; ``node``: that entry's only) of a capture (kind ``sentence_recovery``, source ``wire``); with ``run_cfg`` (a seeded in-process joint run, the
    evaluator's) each message is scored."""
    from .dager.attack import audit_capture_spans
    from ..threat import SPAN_INVERSION_THREAT

    if run_cfg is not None and run_cfg.mode != "joint":
        raise PrivnluError("--method span needs a joint-mode run: frozen mode sends no encoder gradient")
    rows = audit_capture_spans(capture, model=model or (run_cfg.model if run_cfg else None) or None,
                               truth_cfg=run_cfg, rounds={round}, node=node, max_seconds=max_seconds, log=log)
    if not rows:
        log(f"no plain gradient in round {round} (FedAvg, frozen mode or no such node): "
            "nothing to attack")
    return {"kind": "sentence_recovery", "source": "wire", "wire": path_ref(wire), "method": "span",
            "threat_model": SPAN_INVERSION_THREAT.to_json(), "messages": rows}


def _leak_line(row: dict) -> str:
    who = f"sum of {row['participants']} clients" if row["node_id"] == "sum" else f"node {row['node_id']}"
    lines = []
    if "span" in row:
        sp = row["span"]
        score_ = (f" (precision {sp['precision']:.2f}, recall {sp['recall']:.2f}; precision of the |true| best-ranked "
                  f"{sp['precision_at_true_count']:.2f})" if "precision" in sp else "")
        lines.append(f"round {row['round']} {who}: span test (rank {sp['rank']}) selects {len(sp['token_ids'])} token "
                     f"ids{score_}")
    if not row.get("embedding_gradient"):
        if "span" not in row:
            lines.append(f"round {row['round']} {who}: no embedding-table gradient on the wire (tables frozen; the "
                         "first-layer span test, --span-test, may still find the tokens)")
        return "\n".join(lines)
    words = ", ".join([t for t in row["tokens"] if not t.startswith("[")][:12])
    score_ = f" (precision {row['precision']:.2f}, recall {row['recall']:.2f})" if "precision" in row else ""
    lines.append(f"round {row['round']} {who}: {len(row['token_ids'])} token ids read off the embedding gradient"
                 f"{score_}: {words}{' ...' if len(row['tokens']) > 12 else ''}")
    return "\n".join(lines)


def _score_against_run(cfg, recovered) -> tuple[float, bool]:
    """Min MSE between the recovery and any training representation of the run (the evaluator's ground truth)."""
    from ...federated.data import cached_features, load_train
    from ...federated.model import load_config_encoder

    return score(recovered, cached_features(cfg, load_config_encoder(cfg), load_train(cfg)))
