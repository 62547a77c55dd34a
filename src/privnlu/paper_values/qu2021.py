"""Qu et al. 2021, privacy-adaptive BERT: Tables 1-7 and the claims of Figures 3-4 and section 6.2.

Transcribed from Qu et al. 2021, Privacy-Adaptive BERT for Natural Language Understanding (arXiv preprint). Accuracies are fractions as printed
(0.9289); the paper's encoders are bert-base (768-d) and a BiLSTM on the same WordPiece embeddings.
Rows are named "eta=50" ...; columns as the paper labels them.
"""

from __future__ import annotations

from . import PaperValue, register

P = "qu2021"
ETAS = (50, 75, 100, 125, 150, 175)
SENTENCE = "the emotions are raw and will strike a nerve"  # Table 1 "Orig", Table 2's columns

# Table 1: one M_txt draw per eta (text only)
TABLE1 = {
    50: "#ori backward og wanda big disposal #pose lou #bular",
    75: "410 truth go mole gone will strike y gifford",
    100: "fine abused are primitive it will slaughter us nerve",
    125: "measure emotions : shield and relation strike nearly nerve",
    150: "the caleb are kill and will strike circle nerve",
    175: "the emotions are raw and will strike a nerve",
}
for _eta, _text in TABLE1.items():
    register(PaperValue(P, "Table 1", f"eta={_eta}", "sequence", None, scale="", claim=_text))

# Table 2 (eta = 100, 1,000 draws per token) and its text: only "emotions" has numbers
register(PaperValue(P, "Table 2", "emotions", "unchanged", 14.0, note="'has 14% of the chances to remain unmodified'"),
         PaperValue(P, "Table 2", "emotions", "distinct outputs", 825.0, scale="count",
                    note="'is perturbed to 825 distinct words' in 1,000 draws at eta = 100"))
TABLE2_TOP = {  # the paper's top perturbed tokens per column, most frequent first (blank cells left out)
    "the": ["the", "a", "its", "and", "his", "her", "some"],
    "emotions": ["emotions", "emotion", "emotionally", "hormones", "organizations", "emotional", "moods"],
    "are": ["are", "were", "is", "being", "re", "have", "of"],
    "raw": ["raw", "matt", "##awa", "unused", "division", "protection"],
    "and": ["smackdown", "and", "or", "but", ",", "-", "as", '"'],
}

# Table 3: nearest-neighbour token inversion accuracy
for _task, _vals in {"SST": (0.0154, 0.1084, 0.3402, 0.6354, 0.8500, 0.9511),
                     "QQP": (0.0165, 0.1066, 0.3420, 0.6462, 0.8620, 0.9570)}.items():
    for _eta, _v in zip(ETAS, _vals):
        register(PaperValue(P, "Table 3", _task, f"eta={_eta}", _v, scale="fraction"))

# Tables 4 (SST) and 5 (QQP): privacy-constrained fine-tuning; header = Null Privacy
_FT = {
    "Table 4": ({"BERT": 0.9289, "BiLSTM": 0.8406}, {
        "BERT token": (0.5126, 0.5310, 0.5298, 0.5608, 0.5665, 0.5975),
        "BERT text": (0.4920, 0.5906, 0.7030, 0.8360, 0.8968, 0.9151),
        "BiLSTM token": (0.5092, 0.5447, 0.5608, 0.5608, 0.5917, 0.6216),
        "BiLSTM text": (0.5092, 0.5356, 0.6697, 0.7420, 0.8119, 0.8211)}),
    "Table 5": ({"BERT": 0.9106, "BiLSTM": 0.8261}, {
        "BERT token": (0.6370, 0.6318, 0.6318, 0.6318, 0.6447, 0.6354),
        "BERT text": (0.6318, 0.6485, 0.7238, 0.8274, 0.8759, 0.8976),
        "BiLSTM token": (0.6409, 0.6318, 0.6318, 0.6318, 0.6811, 0.6987),
        "BiLSTM text": (0.6423, 0.6631, 0.7108, 0.7534, 0.7854, 0.8066)}),
}
for _src, (_null, _cols) in _FT.items():
    for _enc, _v in _null.items():
        register(PaperValue(P, _src, "null", f"{_enc} null", _v, scale="fraction"))
    for _col, _vals in _cols.items():
        for _eta, _v in zip(ETAS, _vals):
            register(PaperValue(P, _src, f"eta={_eta}", _col, _v, scale="fraction"))

# Tables 6 (token representation) and 7 (text-to-text): privacy-adaptive pretraining
_PT = {
    "Table 6": {"SST": ((0.5126, 0.5390, 0.5424, 0.5356), (0.5310, 0.5791, 0.5757, 0.6089), (0.5298, 0.6709, 0.6766, 0.7041),
                        (0.5608, 0.7706, 0.7718, 0.7810), (0.5665, 0.8188, 0.8188, 0.8395), (0.5975, 0.8658, 0.8693, 0.8693)),
                "QQP": ((0.6370, 0.6434, 0.6364, 0.6444), (0.6318, 0.6645, 0.6821, 0.7119), (0.6318, 0.7668, 0.7686, 0.7788),
                        (0.6318, 0.8200, 0.8219, 0.8249), (0.6447, 0.8520, 0.8520, 0.8523), (0.6354, 0.8698, 0.8688, 0.8691))},
    "Table 7": {"SST": ((0.4920, 0.5218, 0.5310, 0.5092), (0.5906, 0.5963, 0.5734, 0.5906), (0.7030, 0.7190, 0.7259, 0.7225),
                        (0.8360, 0.8429, 0.8429, 0.8406), (0.8968, 0.9048, 0.9071, 0.9025), (0.9151, 0.9209, 0.9209, 0.9220)),
                "QQP": ((0.6318, 0.6375, 0.6419, 0.6469), (0.6485, 0.6643, 0.6616, 0.6693), (0.7238, 0.7628, 0.7610, 0.7603),
                        (0.8274, 0.8346, 0.8362, 0.8351), (0.8759, 0.8790, 0.8801, 0.8791), (0.8976, 0.8997, 0.8994, 0.8990))},
}
PT_COLUMNS = ("orig", "vanilla", "probability", "denoising")
for _src, _tasks in _PT.items():
    for _task, _rows in _tasks.items():
        for _eta, _row in zip(ETAS, _rows):
            for _col, _v in zip(PT_COLUMNS, _row):
                register(PaperValue(P, _src, f"{_task} eta={_eta}", _col, _v, scale="fraction"))

# Figures 3 and 4, and section 6.2's sequence-representation claim (no numbers printed)
register(
    PaperValue(P, "Figure 3", "geometry", "claim", None, scale="",
               claim="distances among the original token embeddings are smaller than 2 on average, while even the "
                     "smallest noise used (eta = 175) perturbs tokens twice as far on average"),
    PaperValue(P, "Figure 4", "eta=75", "max N_w", 500.0, scale="count",
               claim="when eta = 75 no token is ever returned more than 500 times in the worst case (of 1,000)"),
    PaperValue(P, "Figure 4", "eta=75", "min S_w", 500.0, scale="count",
               claim="when eta = 75 no token produces fewer than 500 distinct new tokens (of 1,000 draws)"),
    PaperValue(P, "Section 6.2", "sequence eta=175", "drop vs null", 30.0, scale="points",
               claim="even the smallest perturbation used (eta = 175) causes a 30% absolute performance decrease "
                     "compared with Null Privacy (sequence representation privatization)"),
)


#: the rows of Tables 4 and 5 of each fine-tuning mode (the tables report no sequence mode)
TABLE_ROWS = {"null": "null", "token": "token", "text": "text"}


def finetune(task: str, encoder: str, mode: str, eta: float | None) -> PaperValue | None:
    """Table 4 (sst2) / 5 (qqp; our MRPC runs stand in) cell for one of our runs; ``eta=None`` = null."""
    from . import lookup

    src = {"sst2": "Table 4", "qqp": "Table 5", "mrpc": "Table 5"}.get(task)
    enc = {"transformer": "BERT", "bilstm": "BiLSTM"}.get(encoder)
    if src is None or enc is None:
        return None
    row = TABLE_ROWS.get("null" if eta is None else mode)
    if row is None:
        return None
    if eta is None or row == TABLE_ROWS["null"]:
        return lookup(P, src, "null", f"{enc} null")
    if float(eta) != int(eta):
        return None
    return lookup(P, src, f"eta={int(eta)}", f"{enc} {row}")
