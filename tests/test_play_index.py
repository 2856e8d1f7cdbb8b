"""The retrieval index of ``zoo play light``: built once, loaded after, never stale, never half-written."""

import json
from pathlib import Path

import pytest
import torch

from zoo.play.light_partner import load_light_model
from zoo.play.retrieval_index import (
    EMBEDDINGS_FILE,
    INDEX_FILE,
    UtteranceCorpus,
    index_directory,
    load_or_build_index,
    weights_fingerprint,
)

LIMIT = 40


@pytest.fixture(scope="module")
def ranker():
    return load_light_model("light-bi-ranker")


@pytest.mark.slow
def test_built_once_then_loaded_with_the_same_embeddings(ranker, play_corpus):
    corpus = UtteranceCorpus.open(play_corpus)
    built, first = load_or_build_index(ranker, corpus, LIMIT, progress=False)
    loaded, again = load_or_build_index(ranker, corpus, LIMIT, progress=False)
    assert first["built"] and not again["built"]
    assert loaded.texts == built.texts == corpus.training_utterances(LIMIT)
    assert torch.allclose(loaded.matrix, built.matrix, atol=2e-3 * built.matrix.abs().max().item())  # float16 on disk
    query = ranker.encode_contexts(["_task_speech\n_partner_say Have you seen the ghost?"])
    assert [t for t, _ in loaded.search(query, 5)[0]] == [t for t, _ in built.search(query, 5)[0]]
    directory = Path(first["directory"])
    meta = json.loads((directory / INDEX_FILE).read_text())
    assert meta["utterances"] == LIMIT and meta["weights_sha256"] == weights_fingerprint(ranker)
    assert not list(directory.parent.glob(".*"))                   # no staging directory left behind


@pytest.mark.slow
def test_a_damaged_index_is_rebuilt_not_used(ranker, play_corpus):
    corpus = UtteranceCorpus.open(play_corpus)
    _, info = load_or_build_index(ranker, corpus, LIMIT, progress=False)
    embeddings = Path(info["directory"]) / EMBEDDINGS_FILE
    data = bytearray(embeddings.read_bytes())
    data[-1] ^= 0xFF
    embeddings.write_bytes(bytes(data))
    _, after = load_or_build_index(ranker, corpus, LIMIT, progress=False)
    assert after["built"]


@pytest.mark.slow
def test_other_weights_or_another_corpus_get_their_own_index(ranker, play_corpus, tmp_path):
    corpus = UtteranceCorpus.open(play_corpus)
    _, info = load_or_build_index(ranker, corpus, LIMIT, progress=False)
    before = weights_fingerprint(ranker)
    assert Path(info["directory"]) == index_directory(before, corpus.fingerprint(), LIMIT)
    parameter = next(ranker.candidate_encoder.parameters())
    with torch.no_grad():
        parameter[0, 0] += 1.0
        try:
            changed = weights_fingerprint(ranker)
        finally:
            parameter[0, 0] -= 1.0
    assert index_directory(changed, corpus.fingerprint(), LIMIT) != Path(info["directory"])
    assert weights_fingerprint(ranker) == before
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in corpus.files():
        (copy / path.name).write_bytes(path.read_bytes())
    assert UtteranceCorpus.open(copy).fingerprint() == corpus.fingerprint()   # keyed by content, not place
    (copy / corpus.files()[0].name).write_bytes(corpus.files()[0].read_bytes() + b"\0")
    assert UtteranceCorpus.open(copy).fingerprint() != corpus.fingerprint()


def test_a_directory_without_a_corpus_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no LIGHT corpus"):
        UtteranceCorpus.open(tmp_path)


@pytest.mark.slow
def test_several_corpora_make_one_bigger_index(play_corpus, tmp_path):
    from zoo.light.environment import authored_world
    from zoo.light.sim import SimConfig, generate_corpus, write_corpus

    world, config = authored_world(), SimConfig.preset("tiny", world="authored", seed=1)
    other = write_corpus(generate_corpus(config, world), tmp_path / "seed1", config, world)
    first, second = UtteranceCorpus.open(play_corpus), UtteranceCorpus.open(other)
    both = UtteranceCorpus.open(play_corpus, other)
    union = list(dict.fromkeys(first.training_utterances() + second.training_utterances()))
    assert both.training_utterances() == union
    assert len(union) > max(len(first.training_utterances()), len(second.training_utterances()))
    assert len({first.fingerprint(), second.fingerprint(), both.fingerprint()}) == 3
    assert both.label == "LIGHT-sim"
