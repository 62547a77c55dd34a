"""Run every benchmark (by hand: `make bench`); results land in runs/bench/*.json."""

import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here))
for name in ("bench_texthide", "bench_features", "bench_sweep"):
    print(f"== {name}", flush=True)
    runpy.run_path(str(here / f"{name}.py"), run_name="__main__")
