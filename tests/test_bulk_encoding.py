"""Encoding a retrieval index: bfloat16 where the CPU has it, idle cores, progress a person
can follow, and embeddings as good as float32's."""

from __future__ import annotations


import pytest
import torch

from zoo.models import bulk_encoding
from zoo.models.bulk_encoding import bulk_encoding as encoding_settings
from zoo.models.bulk_encoding import cpu_has_bf16
from zoo.play.light_partner import load_light_model
from zoo.play.retrieval_index import UtteranceCorpus


@pytest.fixture(scope="module")
def ranker():
    return load_light_model("light-bi-ranker")


@pytest.fixture(scope="module")
def utterances(play_corpus):
    return UtteranceCorpus.open(play_corpus).training_utterances(300)


def float32_one_thread(model, texts):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return model.encode_sorted(model.candidate_encoder.ids(texts))
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_index_embeddings_stay_within_a_cosine_of_float32_and_retrieve_the_same(ranker, utterances):
    reference = float32_one_thread(ranker, utterances)
    index = ranker.index_candidates(utterances, progress=False)
    assert index.texts == utterances and index.matrix.dtype == torch.float32
    cosine = torch.nn.functional.cosine_similarity(index.matrix, reference)
    assert cosine.min() > 0.999
    if cpu_has_bf16():  # bfloat16 was really used: close, not identical
        assert not torch.equal(index.matrix, reference)
    queries = ranker.encode_contexts([f"_task_speech\n_partner_say {text}" for text in utterances[::10]])
    top = (queries @ index.matrix.T).argmax(-1)
    assert torch.equal(top, (queries @ reference.T).argmax(-1))


@pytest.mark.slow
def test_torch_threads_are_restored_after_encoding(ranker, utterances, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(bulk_encoding, "idle_cores", lambda: 2)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with encoding_settings(torch.device("cpu")):
            inside = torch.get_num_threads()
            assert torch.is_autocast_cpu_enabled() == cpu_has_bf16()
        assert (inside, torch.get_num_threads()) == (2, 1)
        ranker.index_candidates(utterances[:20], progress=False)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_an_explicit_omp_num_threads_is_kept(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(bulk_encoding, "idle_cores", lambda: 8)
    before = torch.get_num_threads()
    with encoding_settings(torch.device("cpu")):
        assert torch.get_num_threads() == before


@pytest.mark.slow
def test_without_a_terminal_progress_is_plain_lines_with_an_early_estimate(ranker, utterances, capsys):
    size = ranker.hparams.encode_batch_size
    ranker.hparams.encode_batch_size = 16
    try:
        ranker.index_candidates(utterances[:200], progress=True)  # capsys: stderr is not a terminal
    finally:
        ranker.hparams.encode_batch_size = size
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("utterances encoded 64/200 (32%), ") and lines[0].endswith("s left")
    assert lines[-1].startswith("utterances encoded 200/200 (100%)") and "\r" not in "".join(lines)
