"""zoo chooses torch's thread count for the work: one thread for small operations, the idle
cores for large batches, and whatever the user asked for when they asked."""

from __future__ import annotations

import os
import threading

import pytest
import torch

import zoo.threads as threads
from zoo.threads import choose_threads, current_choice, idle_cores, machine_cores, use_threads


@pytest.fixture(autouse=True)
def no_environment_request(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_small_work_runs_on_one_thread_and_says_why():
    choice = choose_threads("small")
    assert choice.threads == 1 and str(choice) == "1 thread (small operations; threads=N to change)"


def test_large_work_takes_the_idle_cores(monkeypatch):
    monkeypatch.setattr(threads, "idle_cores", lambda: 3)
    assert choose_threads("large").threads == 3


def test_a_request_wins_over_the_kind_of_work(monkeypatch):
    assert choose_threads("small", 4) == threads.ThreadChoice(4, "as asked")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert choose_threads("small") == threads.ThreadChoice(2, "OMP_NUM_THREADS")
    assert choose_threads("large", 1).threads == 1


@pytest.mark.parametrize("work, requested", [("huge", None), ("small", 0)])
def test_a_bad_request_is_refused(work, requested):
    with pytest.raises(ValueError):
        choose_threads(work, requested)


def test_the_choice_is_given_to_torch_and_remembered():
    use_threads("small")
    assert torch.get_num_threads() == 1 and current_choice().threads == 1
    use_threads("small", 2)
    assert torch.get_num_threads() == 2 and current_choice().why == "as asked"


def test_busy_cores_are_left_out(monkeypatch):
    cores = machine_cores()
    monkeypatch.setattr(threads, "busy_fraction", lambda: 1.0)
    assert idle_cores() == 1
    monkeypatch.setattr(threads, "busy_fraction", lambda: 0.0)
    assert idle_cores() == cores


def test_without_a_cpu_sample_the_load_average_decides(monkeypatch):
    cores = machine_cores()
    monkeypatch.setattr(threads, "busy_fraction", lambda: None)
    monkeypatch.setattr(os, "getloadavg", lambda: (10.0 * cores, 0.0, 0.0))
    assert idle_cores() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert idle_cores() == cores


def test_the_cpu_sample_sees_a_busy_core():
    """A thread spinning beside the sampler shows as busy time: on any machine it is at least
    part of one core's share."""
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass

    worker = threading.Thread(target=spin)
    worker.start()
    try:
        busy = threads.busy_fraction(0.3)
    finally:
        stop.set()
        worker.join()
    assert busy is None or 0.5 / machine_cores() < busy <= 1.0
