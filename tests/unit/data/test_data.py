"""Task registry and loaders: GLUE layouts on hand-made files, embedded corpora, generic files, errors."""

import pytest

from conftest import need_glue, write
from privnlu.data import get_task, load_public_corpus, load_table
from privnlu.errors import PrivnluError

GLUE_FILES = {
    "SST-2/train.tsv": "sentence\tlabel\nit 's \"great\t1\na dull film\t0\n",
    "CoLA/dev.tsv": "gj04\t1\t\tThe cat sat .\ngj04\t0\t*\tCat the sat .",
    "MRPC/dev.tsv": "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tHe said \"yes.\tHe agreed.\n",
    "RTE/dev.tsv": "index\tsentence1\tsentence2\tlabel\n0\tA man sleeps.\tA person sleeps.\tentailment\n",
    "STS-B/dev.tsv": "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                     "0\tmain\tx\t2012\t1\tnone\tnone\tA plane takes off.\tAn air plane is taking off.\t5.000\n",
    "QNLI/dev.tsv": "index\tquestion\tsentence\tlabel\n0\tWho?\tHe did.\tnot_entailment\n",
    "QQP/dev.tsv": "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n1\t1\t2\tHow do I cook?\tHow to cook?\t1\n",
    "MNLI/dev_matched.tsv": "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse"
                            "\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label\n"
                            "0\t1\t1e\tgov\t(\t(\t(\t(\tThe sun shines.\tIt is sunny.\tentailment\tentailment\n",
    "MNLI/dev_mismatched.tsv": "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse"
                               "\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label\n"
                               "0\t1\t1n\tfic\t(\t(\t(\t(\tShe ran.\tShe slept.\tcontradiction\tcontradiction\n",
}


@pytest.fixture()
def glue_dir(tmp_path):
    for rel, text in GLUE_FILES.items():
        write(tmp_path / rel, text)
    return tmp_path


def test_glue_layouts_parse(glue_dir):
    sst = get_task("SST-2").load("train", glue_dir)
    assert sst.texts_a == ['it \'s "great', "a dull film"] and sst.labels == [1, 0]
    cola = get_task("cola").load("dev", glue_dir)
    assert cola.texts_a == ["The cat sat .", "Cat the sat ."] and cola.labels == [1, 0]
    mrpc = get_task("mrpc").load("dev", glue_dir)
    assert mrpc.texts_a == ['He said "yes.'] and mrpc.texts_b == ["He agreed."] and mrpc.labels == [1]
    assert get_task("rte").load("dev", glue_dir).labels == [0]
    stsb = get_task("sts-b").load("dev", glue_dir)
    assert stsb.labels == [5.0] and stsb.is_regression and stsb.texts_b == ["An air plane is taking off."]
    assert get_task("qnli").load("dev", glue_dir).labels == [1]
    qqp = get_task("qqp").load("dev", glue_dir)
    assert qqp.texts_a == ["How do I cook?"] and qqp.labels == [1] and get_task("qqp").metric == "f1_accuracy"
    mnli = get_task("mnli")
    assert mnli.eval_splits == ("dev_matched", "dev_mismatched")
    assert mnli.load("dev_matched", glue_dir).labels == [1] and mnli.load("dev_mismatched", glue_dir).labels == [0]


def test_metrics_per_task():
    assert get_task("cola").metric == "matthews" and get_task("stsb").metric == "pearson_spearman"
    assert get_task("mrpc").metric == "f1_accuracy" and get_task("sst2").metric == "accuracy"


@pytest.mark.parametrize("content,enc,match", [
    ("sentence\tlabel\nok film\t7\n", "utf-8", "not one of the task's labels"),
    ("sentence\tlabel\n\t1\n", "utf-8", "empty text"),
    ("sentence\tlabel\nok film\n", "utf-8", "malformed row"),
    ("text\tlabel\nok\t1\n", "utf-8", "column 'sentence' missing"),
    ("sentence\tlabel\ncaf\xe9 film\t1\n", "latin-1", "not UTF-8"),
    ("sentence\tlabel\n", "utf-8", "no examples"),
])
def test_bad_glue_files(tmp_path, content, enc, match):
    write(tmp_path / "SST-2" / "train.tsv", content, enc)
    with pytest.raises(PrivnluError, match=match):
        get_task("sst2").load("train", tmp_path)


def test_missing_file_and_unknown_task(tmp_path):
    with pytest.raises(PrivnluError, match="not found"):
        get_task("qqp").load("train", tmp_path)
    with pytest.raises(PrivnluError, match="unknown task"):
        get_task("imdb")


def test_data_dir_from_env(monkeypatch, glue_dir):
    monkeypatch.setenv("PRIVNLU_DATA", str(glue_dir))
    assert len(get_task("qqp").load("dev")) == 1


def test_generic_loaders(tmp_path):
    csv_path = write(tmp_path / "a.csv", 'text,pair,label\n"hello, world",x,pos\nbye,y,neg\n')
    ds = load_table(csv_path, text_pair_col="pair")
    assert ds.texts_a == ["hello, world", "bye"] and ds.label_names == ("neg", "pos") and ds.labels == [1, 0]
    jl = write(tmp_path / "a.jsonl", '{"text": "x", "label": 0.5}\n{"text": "y", "label": 2}\n')
    assert load_table(jl, regression=True).labels == [0.5, 2.0]
    dev = write(tmp_path / "dev.tsv", "text\tlabel\nfoo\tneutral\n")
    with pytest.raises(PrivnluError, match="not one of"):
        load_table(dev, label_names=("neg", "pos"))
    with pytest.raises(PrivnluError, match="malformed JSON"):
        load_table(write(tmp_path / "b.jsonl", "{oops\n"))


def test_embedded_corpora_have_fixed_disjoint_splits():
    tasks = get_task("tweets")
    train, dev = tasks.load("train"), tasks.load("dev")
    assert len(dev) > 1000 and len(train) > 9 * len(dev) - 10
    assert not set(train.texts_a) & set(dev.texts_a)
    assert set(train.labels) == {0, 1, 2}
    assert tasks.load("dev").texts_a == dev.texts_a  # deterministic
    binary = get_task("tweets-binary").load("dev")
    assert set(binary.labels) == {0, 1} and binary.num_labels == 2
    bbc = get_task("bbc").load("train")
    assert bbc.num_labels == 5 and len(bbc) > 1500
    wiki = load_public_corpus("wiki", limit=100)
    assert len(wiki) == 100 and all(len(s.split()) >= 5 for s in wiki.texts_a)


def test_public_corpus_from_file(tmp_path):
    assert load_public_corpus(str(write(tmp_path / "p.txt", "one sentence\n\ntwo\n"))).texts_a == ["one sentence", "two"]
    with pytest.raises(PrivnluError, match="unknown public corpus"):
        load_public_corpus("nothing-here")


@need_glue("sst2", "train")
@pytest.mark.glue
def test_real_glue_counts():
    counts = {"sst2": (67349, 872), "cola": (8551, 1043), "mrpc": (3668, 408), "rte": (2490, 277), "stsb": (5749, 1500)}
    for task, (n_train, n_dev) in counts.items():
        spec = get_task(task)
        assert (len(spec.load("train")), len(spec.load("dev"))) == (n_train, n_dev)
    assert len(get_task("qnli").load("dev")) == 5463


def test_embedded_splits_are_shuffled_not_label_sorted():
    # the packaged files are sorted by label; a --train-limit prefix must still hold every class
    for task, n_classes in (("bbc", 5), ("tweets", 3)):
        assert len(set(get_task(task).load("train").head(200).labels)) == n_classes
