"""Reconstruction CLI toy setting (tests/test_attacks_reconstruction.py) over seeds 0-4: nmf success at m0-k1.

    git archive 3daa4e8 src tests | tar -x -C /tmp/i13_base    # the tree before the shuffled release
    PYTHONPATH=/tmp/i13_base/src python scripts/issue13/shuffle_toy_seedcheck.py /tmp/i13_base
    PYTHONPATH=$PWD/src python scripts/issue13/shuffle_toy_seedcheck.py $PWD
"""
import sys, json, tempfile, pathlib
sys.path.insert(0, sys.argv[1] + "/tests")
from conftest import toy_glue_dir
from privnlu.models.tiny import make_tiny_bert
from privnlu.cli.main import main
tmp = pathlib.Path(tempfile.mkdtemp())
model = make_tiny_bert(tmp / "bert")
glue = toy_glue_dir(tmp, 60)
res = []
for seed in range(5):
    out = tmp / f"r{seed}.json"
    main(["attack", "reconstruct", "--task", "sst2", "--data-dir", str(glue), "--model", str(model), "--cache-dir", str(tmp / "c"),
          "--quiet", "--seed", str(seed), "--queries", "12", "--encodings-per-example", "4", "--aux-size", "40", "--pairs", "2000", "--sim-releases", "1",
          "--conditions", "0:1", "--out", str(out)])
    res.append(json.loads(out.read_text())["conditions"]["m0-k1"]["methods"]["nmf"]["success"])
print(sys.argv[1], res)
