"""Shared by the bi/cross-ranker tests and the DDP check script: a tiny BERT and a tiny corpus.

The tiny encoder is a randomly initialised 2-layer BERT with the embedded all-MiniLM-L6-v2
tokenizer (so tokenisation is real), small enough that a recipe trains in seconds on a CPU.
"""

from __future__ import annotations

from pathlib import Path


def make_tiny_backbone(directory: Path) -> Path:
    """Write a tiny BERT ``save_pretrained`` directory (config, weights, tokenizer)."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from zoo.models.backbone import default_backbone_path

    if (directory / "config.json").is_file():
        return directory
    tokenizer = AutoTokenizer.from_pretrained(str(default_backbone_path()), local_files_only=True)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return directory


def make_tiny_corpus(directory: Path) -> Path:
    """A tiny LIGHT-sim corpus in the authored world (a few dozen dialogues)."""
    from zoo.light.environment import authored_world
    from zoo.light.sim import MANIFEST, SimConfig, generate_corpus, write_corpus

    if not (directory / MANIFEST).is_file():
        world = authored_world()
        config = SimConfig.preset("tiny")
        write_corpus(generate_corpus(config, world), directory, config, world)
    return directory


def tiny_overrides(corpus: Path, backbone: Path, run_dir: Path, **extra: str) -> list[str]:
    """Recipe overrides for a run of a few seconds."""
    options = {
        "data.sim_dir": str(corpus), "run_dir": str(run_dir), "logger.kind": "none", "threads": "1",
        "data.limit": "{train: 48, valid: 24, test: 24, test_unseen: 24}", "data.batch_size": "8",
        "data.eval_batch_size": "8", "model.options.backbone": str(backbone),
        "model.options.max_context_tokens": "64", "model.options.max_grounding_tokens": "24",
        "model.options.max_candidate_tokens": "16", "model.options.learning_rate": "1e-3",
        "trainer.enable_progress_bar": "false", "trainer.enable_model_summary": "false", "trainer.accelerator": "cpu",
        **extra,
    }
    return [f"{key}={value}" for key, value in options.items()]
