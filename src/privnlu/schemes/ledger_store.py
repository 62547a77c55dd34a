"""The privacy ledger's storage: one SQLite file (stdlib :mod:`sqlite3`), its schema, and the validation of every
value read from it.

* A ledger is recognised by its content, never its name: SQLite's 16-byte header, or a JSON object of the earlier
  format (``{"format": "privnlu-ledger", ...}``), which :func:`migrate` converts in place once, keeping the JSON
  as ``FILE.bak``.
* The file is created atomically (a temporary file, mode 0600, linked into place), so two releases creating the
  same ledger at once both end up in one file.
* :func:`transaction` is one ``BEGIN IMMEDIATE`` transaction: one writer at a time; readers see the state before
  or after it, never a part of it.
* :func:`read` checks the schema (exactly privnlu's tables, no trigger, view or other object) and every value
  (type, range, finiteness, references, the fingerprint of each dataset); anything else is one
  :class:`~privnlu.errors.PrivnluError` line naming the file and the field.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Iterator

from ..errors import PrivnluError
from ..io import SECRET_MODE, file_sha256
from ..params import finite_number

FORMAT = "privnlu-ledger"
VERSION = 2
MAGIC = b"SQLite format 3\x00"
#: seconds a release waits for another one's transaction on the same ledger
LOCK_TIMEOUT = 60.0
STATUSES = ("pending", "committed")
GUARANTEES = ("dp", "metric-dp", "none")
EVENT_KINDS = ("gaussian", "laplace", "poisson-gaussian")

TABLES = {
    "meta": "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "budget": "CREATE TABLE budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL, delta REAL, eta REAL)",
    "datasets": "CREATE TABLE datasets (fingerprint TEXT PRIMARY KEY, hashes TEXT NOT NULL)",
    "releases": "CREATE TABLE releases (id INTEGER PRIMARY KEY AUTOINCREMENT, status TEXT NOT NULL, "
                "time TEXT NOT NULL, command TEXT NOT NULL, dataset_name TEXT NOT NULL, dataset TEXT NOT NULL, "
                "n_examples INTEGER NOT NULL, "
                "guarantee TEXT NOT NULL, mechanism TEXT NOT NULL, epsilon REAL, delta REAL, eta REAL, "
                "events TEXT NOT NULL, meaning TEXT NOT NULL, output TEXT NOT NULL, output_sha256 TEXT, "
                "prior_sha256 TEXT, writer INTEGER)",
    "sqlite_sequence": "CREATE TABLE sqlite_sequence(name,seq)",
}
#: the columns of a release row, in order
COLUMNS = ("id", "status", "time", "command", "dataset_name", "dataset", "n_examples", "guarantee", "mechanism",
           "epsilon", "delta", "eta", "events", "meaning", "output", "output_sha256", "prior_sha256", "writer")
HEX64 = re.compile(r"[0-9a-f]{64}")
HEX16 = re.compile(r"[0-9a-f]{16}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # no text of the ledger may steer a terminal or break a line
#: the noise multipliers an event may record, [low, high): beyond them the accountants overflow, and no release
#: privnlu makes comes near them (epsilon <= 1000 needs more noise than 1e-6; above 1e6 epsilon is 0 to print)
NOISE_MULTIPLIER = (1e-6, 1e6)


def empty() -> dict:
    """The in-memory form of a ledger with no release and no budget."""
    return {"format": FORMAT, "version": VERSION, "budget": None, "datasets": {}, "releases": []}


def kind_of(path: Path) -> str:
    """``"missing"``, ``"sqlite"`` or ``"json"`` by the file's content; anything else is refused (one line)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(MAGIC))
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        raise PrivnluError(f"ledger {path}: cannot be read ({exc.strerror})") from None
    if head == MAGIC:
        return "sqlite"
    if head.lstrip()[:1] == b"{":
        return "json"
    raise PrivnluError(f"ledger {path}: not a privnlu ledger (neither its SQLite database nor a JSON ledger)")


# -- validation ---------------------------------------------------------------------------------------------------

class InvalidField(PrivnluError):
    """A value of the ledger that fails validation: the file, the field, the value, what it should be."""

    def __init__(self, path: Path, where: str, value: Any, want: str) -> None:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        self.field = f"{where} is {shown}, not {want}"
        super().__init__(f"ledger {path}: not a valid privnlu ledger: {self.field}")


def _bad(path: Path, where: str, value: Any, want: str) -> InvalidField:
    return InvalidField(path, where, value, want)


def _number(path: Path, where: str, v: Any, *, lo: float = 0.0, lo_open: bool = True, hi: float = math.inf,
            optional: bool = True) -> float | None:
    """A finite number in (lo, hi) (``lo`` included unless ``lo_open``), or None when ``optional``."""
    if v is None and optional:
        return None
    ok = finite_number(v) and v < hi and (
        v > lo if lo_open else v >= lo)
    if not ok:
        rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g})"
        raise _bad(path, where, v, f"a finite number in {rng}" + (" or empty" if optional else ""))
    return float(v)


def _text(path: Path, where: str, v: Any, *, pattern: re.Pattern | None = None, choices: tuple = (),
          optional: bool = False) -> str | None:
    if v is None and optional:
        return None
    ok = isinstance(v, str) and not CONTROL.search(v) and (pattern is None or pattern.fullmatch(v) is not None) and (
        not choices or v in choices)
    if not ok:
        raise _bad(path, where, v, f"one of {', '.join(choices)}" if choices else "a valid text")
    return v


def _integer(path: Path, where: str, v: Any, *, lo: int = 0, optional: bool = False) -> int | None:
    if v is None and optional:
        return None
    if not (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
        raise _bad(path, where, v, f"an integer >= {lo}")
    return v


def check_budget(path: Path, b: Any) -> dict | None:
    """The budget, validated (None: no budget)."""
    if b is None:
        return None
    if not isinstance(b, dict):
        raise _bad(path, "the budget", b, "a table of epsilon, delta and eta")
    return {"epsilon": _number(path, "budget epsilon", b.get("epsilon")),
            "delta": _number(path, "budget delta", b.get("delta"), hi=1.0),
            "eta": _number(path, "budget eta", b.get("eta"))}


def check_dataset(path: Path, fp: Any, hashes: Any) -> list[str]:
    """A dataset's example hashes, validated against its fingerprint."""
    _text(path, "a dataset fingerprint", fp, pattern=HEX64)
    where = f"dataset {str(fp)[:12]}"
    if not (isinstance(hashes, list) and hashes and all(isinstance(h, str) and HEX16.fullmatch(h) for h in hashes)):
        raise _bad(path, f"{where} hashes", hashes, "a list of 16-digit hex example hashes")
    if hashlib.sha256("\n".join(hashes).encode()).hexdigest() != fp:
        raise _bad(path, f"{where} fingerprint", fp, "the sha256 of its example hashes")
    return hashes


def check_events(path: Path, where: str, events: Any) -> list[dict]:
    """A release's dp-accounting events, validated."""
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise _bad(path, f"{where} events", events, "a list of events")
    out = []
    for i, e in enumerate(events):
        w = f"{where} event {i + 1}"
        ev = {"kind": _text(path, f"{w} kind", e.get("kind"), choices=EVENT_KINDS),
              "noise_multiplier": _number(path, f"{w} noise_multiplier", e.get("noise_multiplier"), optional=False,
                                          lo=NOISE_MULTIPLIER[0], lo_open=False, hi=NOISE_MULTIPLIER[1]),
              "count": _integer(path, f"{w} count", e.get("count"), lo=1)}
        if ev["kind"] == "poisson-gaussian":
            ev["sample_rate"] = _number(path, f"{w} sample_rate", e.get("sample_rate"), hi=1.0 + 1e-12, optional=False)
        out.append(ev)
    return out


def check_release(path: Path, r: dict, datasets: dict[str, list[str]]) -> dict:
    """One release, every field validated (types, ranges, finiteness, its dataset); returns the cleaned record."""
    w = f"release {r.get('id')}"
    g = _text(path, f"{w} guarantee", r.get("guarantee"), choices=GUARANTEES)
    out = {"id": _integer(path, f"{w} id", r.get("id"), lo=1),
           "status": _text(path, f"{w} status", r.get("status"), choices=STATUSES),
           "time": _text(path, f"{w} time", r.get("time"), pattern=TIME),
           "command": _text(path, f"{w} command", r.get("command")),
           "dataset_name": _text(path, f"{w} dataset_name", r.get("dataset_name")),
           "dataset": _text(path, f"{w} dataset", r.get("dataset"), pattern=HEX64),
           "n_examples": _integer(path, f"{w} n_examples", r.get("n_examples"), lo=1),
           "guarantee": g, "mechanism": _text(path, f"{w} mechanism", r.get("mechanism")),
           "epsilon": _number(path, f"{w} epsilon", r.get("epsilon"), lo_open=False, optional=g != "dp"),
           "delta": _number(path, f"{w} delta", r.get("delta"), lo_open=False, hi=1.0, optional=g != "dp"),
           "events": check_events(path, w, r.get("events")),
           "eta": _number(path, f"{w} eta", r.get("eta"), optional=g != "metric-dp"),
           "meaning": _text(path, f"{w} meaning", r.get("meaning")),
           "output": _text(path, f"{w} output", r.get("output")),
           "output_sha256": _text(path, f"{w} output_sha256", r.get("output_sha256"), pattern=HEX64, optional=True),
           "prior_sha256": _text(path, f"{w} prior_sha256", r.get("prior_sha256"), pattern=HEX64, optional=True),
           "writer": _integer(path, f"{w} writer", r.get("writer"), lo=1, optional=True)}
    if os.path.isabs(out["output"]) or re.match(r"^[A-Za-z]:[\\/]", out["output"]):
        raise _bad(path, f"{w} output", out["output"], "a path relative to the ledger's folder")
    if out["dataset"] not in datasets:
        raise _bad(path, f"{w} dataset", out["dataset"], "a dataset of this ledger")
    if out["n_examples"] != len(datasets[out["dataset"]]):
        raise _bad(path, f"{w} n_examples", out["n_examples"], "its dataset's number of examples")
    if g == "dp" and not out["events"]:
        raise _bad(path, f"{w} events", [], "the DP release's dp-accounting events")
    return out


# -- the SQLite file ---------------------------------------------------------------------------------------------

def connect(path: Path) -> sqlite3.Connection:
    """A connection to an existing ledger (never creating one), in autocommit mode (transactions are explicit);
    no schema is trusted."""
    from urllib.parse import quote

    try:
        con = sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=rw", uri=True, timeout=LOCK_TIMEOUT,
                              isolation_level=None)
        con.execute("PRAGMA trusted_schema = OFF")
        return con
    except sqlite3.Error as exc:
        raise PrivnluError(f"ledger {path}: cannot be opened ({exc})") from None


def sqlite_error(path: Path, exc: sqlite3.Error) -> PrivnluError:
    """One line for an SQLite error on the ledger: locked by another release, not a database, or anything else."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return PrivnluError(f"ledger {path}: locked by another release for over {LOCK_TIMEOUT:g} s; try again")
    if isinstance(exc, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text):
        return PrivnluError(f"ledger {path}: not a privnlu ledger (SQLite: {text})")
    return PrivnluError(f"ledger {path}: {text}")


def check_integrity(path: Path, con: sqlite3.Connection) -> None:
    """SQLite's ``PRAGMA integrity_check``: a corrupt file (damaged pages, broken indexes) is refused in one line
    before anything is read from it or written into it; a read alone does not notice a damaged index page."""
    rows = con.execute("PRAGMA integrity_check(1)").fetchall()
    if rows != [("ok",)]:
        first = " ".join(str(rows[0][0] if rows else "no answer").split())[:200]
        raise PrivnluError(f"ledger {path}: corrupt (SQLite integrity check: {first}); restore it from a backup")


def check_schema(path: Path, con: sqlite3.Connection) -> None:
    """The file's integrity (:func:`check_integrity`), then exactly privnlu's tables (and SQLite's automatic
    indexes); no trigger, view or other object."""
    check_integrity(path, con)
    for kind, name, sql in con.execute("SELECT type, name, sql FROM sqlite_master"):
        if kind == "index" and str(name).startswith("sqlite_autoindex_") and sql is None:
            continue
        if kind != "table" or TABLES.get(name) != sql:
            raise PrivnluError(f"ledger {path}: not a privnlu ledger (unexpected {kind} {name!r} in its schema)")
    names = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = sorted(set(TABLES) - {"sqlite_sequence"} - names)
    if missing:
        raise PrivnluError(f"ledger {path}: not a privnlu ledger (no table {missing[0]!r})")
    meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("format") != FORMAT:
        raise _bad(path, "meta format", meta.get("format"), repr(FORMAT))
    if meta.get("version") != str(VERSION):
        raise _bad(path, "meta version", meta.get("version"), f"{VERSION} (this privnlu's ledger version)")


def read(path: Path, con: sqlite3.Connection) -> dict:
    """The whole ledger, validated (see the module docstring), as :func:`empty`'s dict; releases in id order."""
    try:
        check_schema(path, con)
        rows = con.execute("SELECT epsilon, delta, eta FROM budget").fetchall()
        if len(rows) > 1:
            raise _bad(path, "the budget", f"{len(rows)} rows", "one row")
        budget = check_budget(path, dict(zip(("epsilon", "delta", "eta"), rows[0]))) if rows else None
        datasets = {}
        for fp, text in con.execute("SELECT fingerprint, hashes FROM datasets"):
            hashes = text.split("\n") if isinstance(text, str) else text
            datasets[fp] = check_dataset(path, fp, hashes)
        releases = []
        for row in con.execute(f"SELECT {', '.join(COLUMNS)} FROM releases ORDER BY id"):
            r = dict(zip(COLUMNS, row))
            try:
                r["events"] = json.loads(r["events"]) if isinstance(r["events"], str) else r["events"]
            except json.JSONDecodeError:
                raise _bad(path, f"release {r['id']} events", r["events"], "a JSON list of events") from None
            releases.append(check_release(path, r, datasets))
    except sqlite3.DatabaseError as exc:
        raise sqlite_error(path, exc) from None
    return {**empty(), "budget": budget, "datasets": datasets, "releases": releases}


def _create(path: Path) -> None:
    """Create an empty ledger at ``path`` atomically (mode 0600); if another process created it first, keep theirs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, SECRET_MODE)
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute("BEGIN")
            for name, sql in TABLES.items():
                if name != "sqlite_sequence":
                    con.execute(sql)
            con.executemany("INSERT INTO meta VALUES (?, ?)", [("format", FORMAT), ("version", str(VERSION))])
            con.execute("COMMIT")
        finally:
            con.close()
        try:
            os.link(tmp, path)  # fails if another process created it first: theirs is kept
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


@contextlib.contextmanager
def transaction(path: Path, *, create: bool = True, full: bool = True) -> Iterator[tuple[sqlite3.Connection, dict]]:
    """``BEGIN IMMEDIATE`` on the ledger (created first if missing and ``create``): yields the connection and the
    ledger read and validated inside the transaction (``full=False``: its schema checked, nothing read); commits
    when the body returns, rolls back if it raises."""
    if kind_of(path) == "json":
        migrate(path)
    if not path.exists() and create:
        _create(path)
    con = connect(path)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            if full:
                data = read(path, con)
            else:
                check_schema(path, con)
                data = empty()
            yield con, data
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc) from None
    finally:
        con.close()


def load(path: Path) -> dict:
    """The ledger at ``path``, validated (a JSON ledger is migrated first); :func:`empty` if there is none."""
    k = kind_of(path)
    if k == "missing":
        return empty()
    if k == "json":
        migrate(path)
    con = connect(path)
    try:
        con.execute("BEGIN")  # one consistent snapshot
        try:
            return read(path, con)
        finally:
            con.execute("ROLLBACK")
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc) from None
    finally:
        con.close()


def insert_release(con: sqlite3.Connection, row: dict, hashes: list[str], path: Path | None = None) -> int:
    """Insert a release (and its dataset, once), under its ``id`` if it has one; returns its id. The row is
    validated first as a read would validate it (``path``: the ledger, to name in the error), so that nothing
    written can make the ledger unreadable."""
    try:
        check_dataset(Path("-"), row["dataset"], hashes)
        check_release(Path("-"), {"id": 1, **{k: v for k, v in row.items() if v is not None or k != "id"}},
                      {row["dataset"]: hashes})
    except InvalidField as exc:
        raise PrivnluError(f"ledger {path or '-'}: cannot record this release: {exc.field}") from None
    con.execute("INSERT OR IGNORE INTO datasets VALUES (?, ?)", (row["dataset"], "\n".join(hashes)))
    cols = [c for c in COLUMNS if c != "id" or row.get("id") is not None]
    values = [json.dumps(row[c]) if c == "events" else row.get(c) for c in cols]
    cur = con.execute(f"INSERT INTO releases ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", values)
    return int(cur.lastrowid)


def save_budget(con: sqlite3.Connection, budget: dict | None) -> None:
    con.execute("DELETE FROM budget")
    if budget is not None:
        con.execute("INSERT INTO budget VALUES (1, ?, ?, ?)", (budget["epsilon"], budget["delta"], budget["eta"]))


# -- migration of a JSON ledger ------------------------------------------------------------------------------------

def relative_output(output: str, folder: Path) -> str:
    """An output path as the ledger keeps it: relative to the ledger's folder (resolved from the working folder)."""
    return os.path.relpath(Path(output).resolve(), folder.resolve())


def migrate(path: Path) -> None:
    """Convert the JSON ledger at ``path`` into SQLite in place, once; the JSON is kept as ``FILE.bak``. Validated
    before anything is written; concurrent callers wait on a lock and find it converted."""
    import sys

    try:
        import fcntl
    except ImportError:  # no advisory locks here: concurrent conversions are not serialised
        fcntl = None
    with open(path, "rb") as fh:
        if fcntl is not None:
            fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes
        if not path.exists() or os.fstat(fh.fileno()).st_ino != os.stat(path).st_ino:
            return  # converted by another process meanwhile
        try:
            data = json.loads(fh.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise PrivnluError(f"ledger {path}: not a privnlu ledger (unreadable JSON)") from None
        if not (isinstance(data, dict) and data.get("format") == FORMAT):
            raise PrivnluError(f"ledger {path}: not a privnlu ledger (a JSON file without \"format\": \"{FORMAT}\")")
        rows, datasets = _json_rows(path, data)
        backup = path.with_name(path.name + ".bak")
        if backup.exists():
            raise PrivnluError(f"ledger {path}: converting it to SQLite would keep the JSON as {backup}, which exists; "
                               "move it away first")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        try:
            tmp_path.unlink()
            _create(tmp_path)
            con = connect(tmp_path)
            try:
                con.execute("BEGIN IMMEDIATE")
                save_budget(con, data["budget"])
                for row in rows:
                    insert_release(con, row, datasets[row["dataset"]])
                con.execute("COMMIT")
            finally:
                con.close()
            try:
                os.link(path, backup)
            except OSError:  # a file system without hard links
                shutil.copy2(path, backup)
            os.chmod(backup, SECRET_MODE)
            os.replace(tmp_path, path)
        finally:
            tmp_path.unlink(missing_ok=True)
    sys.stderr.write(f"privnlu: converted the JSON ledger {path} to the SQLite ledger ({len(rows)} release(s)); "
                     f"the JSON is kept as {backup}\n")


def _json_rows(path: Path, data: dict) -> tuple[list[dict], dict[str, list[str]]]:
    """The releases and datasets of a JSON ledger, validated, as rows of the SQLite ledger (all committed)."""
    data["budget"] = check_budget(path, data.get("budget"))
    raw = data.get("datasets", {})
    if not isinstance(raw, dict):
        raise _bad(path, "datasets", raw, "a table of datasets")
    datasets = {fp: check_dataset(path, fp, h) for fp, h in raw.items()}
    releases = data.get("releases")  # required: a JSON ledger without its list of releases is malformed, not empty
    if not isinstance(releases, list) or not all(isinstance(r, dict) for r in releases):
        raise _bad(path, "releases", releases, "a list of releases")
    rows = []
    for i, r in enumerate(releases, 1):
        r = {**r, "id": i, "status": "committed", "output_sha256": None, "prior_sha256": None, "writer": None}
        if r.get("guarantee") == "dchi":  # ledgers written before the scheme registry named d_chi's kind "dchi"
            r["guarantee"] = "metric-dp"
        if isinstance(r.get("output"), str) and os.path.isabs(r["output"]):
            r["output"] = relative_output(r["output"], path.parent)
        rows.append(check_release(path, r, datasets))
    return rows, datasets


# -- outputs -------------------------------------------------------------------------------------------------------

def output_fingerprint(path: Path) -> str | None:
    """sha256 of a file's bytes, or of a folder's files (relative names and contents, sorted); None if absent."""
    if path.is_file():
        return file_sha256(path)
    if not path.is_dir():
        return None
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f.relative_to(path).as_posix().encode() + b"\x00" + file_sha256(f).encode() + b"\n")
    return h.hexdigest()


