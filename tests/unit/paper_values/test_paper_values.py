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


def test_huang2020_table1_cells_checked_by_hand():
    """Cells read off huang2020-texthide.txt, Table 1 and Table 6, by hand."""
    from privnlu.paper_values import huang2020

    assert pv.lookup("huang2020", "Table 1", "RTE", "TextHide-inter").value == 54.4
    assert pv.lookup("huang2020", "Table 1", "MRPC Acc.", "Baseline").value == 86.2
    assert pv.lookup("huang2020", "Table 1", "CoLA", "TextHide-intra").value == 56.3
    assert pv.lookup("huang2020", "Table 1", "MNLI mm", "TextHide-inter") is None  # "-" in the paper
    assert huang2020.table1("sst2", "texthide-intra").value == 91.7
    assert huang2020.table1("stsb", "baseline", "spearman").value == 89.7
    assert huang2020.table1("tweets", "baseline") is None  # not a task of the paper
    assert pv.lookup("huang2020", "Table 6", "QQP", "Acc.").value == 91.0
    assert pv.lookup("huang2020", "Figure 2", "all tasks except RTE", "m = 256").claim


def test_huang2020_mean_reduction_matches_the_papers_claim_only_over_every_number():
    from privnlu.paper_values import huang2020

    claim = pv.lookup("huang2020", "Table 1", "mean reduction", "TextHide-intra").value
    assert abs(huang2020.mean_reduction("texthide-intra") - claim) < 0.05  # 1.87 over all 12 numbers
    assert huang2020.mean_reduction("texthide-intra", huang2020.primary_rows()) > 2.1  # 2.14 over the primary metrics


def test_xie2022_figures_are_claims_with_one_number():
    assert pv.lookup("xie2022", "Figure 2", "TextHide (16, 4), CoLA", "attack success").value == 85.0
    figure1 = pv.values("xie2022", "Figure 1")
    assert figure1 and all(v.value is None and v.claim for v in figure1)
