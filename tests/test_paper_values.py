import pytest

from privnlu import paper_values as pv


def test_register_lookup_compare():
    v = pv.PaperValue("testpaper", "Table 9", "row a", "col b", 80.0)
    pv.register(v)
    assert pv.lookup("testpaper", "Table 9", "row a", "col b") is v
    assert pv.lookup("testpaper", "Table 9", "row a", "nope") is None
    assert pv.compare(77.5, v) == (80.0, 77.5, -2.5)
    assert pv.compare_cells(77.5, v) == ["80.0", "77.5", "-2.5"]
    assert pv.compare_cells(None, v) == ["80.0", "-", "-"]
    assert pv.compare_cells(1.0, None) == ["-", "1.0", "-"]
    claim = pv.PaperValue("testpaper", "Figure 1", "r", "c", None, claim="utility stays high")
    pv.register(claim)
    assert pv.compare_cells(1.0, claim)[0] == "claim only"
    pv.register(v)  # the same record again is fine
    with pytest.raises(ValueError):
        pv.register(pv.PaperValue("testpaper", "Table 9", "row a", "col b", 81.0))


def test_every_registered_value_names_a_known_paper():
    for v in pv.values():
        if v.paper == "testpaper":
            continue
        assert v.paper in pv.PAPERS
        assert v.value is not None or v.claim, v
