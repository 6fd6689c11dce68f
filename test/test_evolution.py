"""The evolution learner: batched population pass, roulette wheel, elitism, novelty, configs."""

import json
import threading

import pytest
import torch

from robot_ik_nn.cli import main
from robot_ik_nn.evaluate import network_errors
from robot_ik_nn.learn.learners import LearnConfig
from robot_ik_nn.learn.learners.evolution import EvolutionLearner
from robot_ik_nn.learn.network import IKNet, NetConfig
from robot_ik_nn.learn.training import CHECKPOINT, TrainConfig, Trainer

pytestmark = pytest.mark.slow


def _learner(niryo, mode="position", heads=1, **learn):
    net = IKNet.for_arm(niryo, NetConfig(niryo.dof, mode, [16, 16], heads=heads))
    return EvolutionLearner(niryo, net, LearnConfig(**learn), "cpu", seed=1)


@pytest.mark.parametrize("mode,heads", [("position", 1), ("pose", 3)])
def test_one_batched_pass_equals_each_network_alone(niryo, mode, heads):
    learner = _learner(niryo, mode, heads, population=5, sigma=0.3)
    _, pos, rot = learner.targets(40)
    rot_in = rot if mode == "pose" else None
    together = learner.net.population_candidates(learner.population, pos, rot_in)
    for i, flat in enumerate(learner.population):
        learner.net.load_flat(flat)
        alone = learner.net.candidates(pos, rot_in)
        torch.testing.assert_close(together[i], alone, atol=1e-5, rtol=1e-5)
    assert not torch.equal(together[0], together[1])


def test_roulette_wheel_is_fitness_proportional_after_the_shift(niryo):
    learner = _learner(niryo, population=4, elite=0, crossover=0.0, mutation_rate=0.0)
    learner.population = torch.arange(4.0)[:, None].repeat(1, learner.n_genes)
    score = torch.tensor([-0.4, -0.3, -0.2, -0.1])  # rewards are negative: shifted to 0 1 2 3
    counts = torch.zeros(4)
    for _ in range(500):
        children = learner._next_generation(score, sigma=0.0)
        counts += torch.bincount(children[:, 0].long(), minlength=4)
    share = counts / counts.sum()
    assert share[0] == 0, "the worst gets no slice of the wheel"
    torch.testing.assert_close(share[1:], torch.tensor([1 / 6, 2 / 6, 3 / 6]), atol=0.02, rtol=0)


def test_elites_pass_unchanged_and_children_are_crossed_and_mutated(niryo):
    learner = _learner(niryo, population=8, elite=2, crossover=1.0, mutation_rate=1.0)
    learner.population = torch.stack([torch.full((learner.n_genes,), float(i)) for i in range(8)])
    score = -torch.arange(8.0).flip(0)  # member 7 best, then 6
    nxt = learner._next_generation(score, sigma=0.0)
    assert torch.equal(nxt[0], learner.population[7])
    assert torch.equal(nxt[1], learner.population[6])
    mixed = [len(torch.unique(child)) > 1 for child in nxt[2:]]
    assert any(mixed), "crossover mixes two parents unit by unit"
    # a unit's incoming weights and its bias come from the same parent
    unit = learner.unit
    for child in nxt[2:]:
        for u in range(int(unit.max()) + 1):
            assert len(torch.unique(child[unit == u])) == 1
    mutated = learner._next_generation(score, sigma=0.1)[2:]
    assert not torch.equal(mutated.round(), mutated)


def test_evolution_improves_without_gradients(tmp_path):
    config = TrainConfig(
        mode="position",
        learner="evolution",
        steps=150,
        minutes=None,
        out=str(tmp_path / "evo"),
        hidden=[16, 16],
        log_every=25,
        learn=LearnConfig(population=32, evolution_targets=64),
    )
    trainer = Trainer(config, progress=False)
    before = network_errors(trainer.net, trainer.arm, targets=500, seed=99)
    trainer.run()
    after = network_errors(trainer.net, trainer.arm, targets=500, seed=99)
    assert after["pos_mm_median"] < 0.5 * before["pos_mm_median"], (before, after)
    assert all(p.grad is None for p in trainer.net.parameters()), "no gradient flows"
    assert trainer.learner.evaluations == 150 * 32 * 64
    rewards = [row["reward"] for row in trainer.history]
    assert rewards[-1] > rewards[0]
    report = (tmp_path / "evo" / "report.md").read_text()  # what a step is, as it ran
    assert "a population of 32 on 64 targets a step" in report and "batch 1024" not in report


def test_novelty_fills_the_archive_and_rewards_the_unusual(niryo):
    learner = _learner(niryo, population=6, novelty=0.5, archive_add=2, probes=16, novelty_k=2)
    same = learner.population[:1].repeat(6, 1)
    same[5] += 0.5 * torch.randn(learner.n_genes, generator=torch.Generator().manual_seed(0))
    novelty = learner.archive.novelty(learner, same)
    assert len(learner.archive) == 2
    assert float(novelty[:5].max()) < 1e-4 < float(novelty[5]), novelty
    metrics = learner.step(0.0)
    assert metrics["archive"] == 4 and metrics["novelty"] > 0


def test_resumed_evolution_equals_an_uninterrupted_run(tmp_path):
    def config(out, steps):
        return TrainConfig(
            mode="position",
            learner="evolution",
            steps=steps,
            minutes=None,
            out=str(tmp_path / out),
            log_every=20,
            learn=LearnConfig(population=12, evolution_targets=32, novelty=0.1),
        )

    stop = threading.Event()
    first = Trainer(config("a", 40), progress=False, stop=stop, on_metrics=lambda _: stop.set())
    first.run()  # stopped (as by Ctrl-C) after 20 generations: checkpoint and model saved
    assert first.interrupted
    resumed = Trainer(config("a", 40), resume=True, progress=False)
    assert resumed.step == 20
    resumed.run()
    straight = Trainer(config("b", 40), progress=False)
    straight.run()
    assert torch.equal(resumed.learner.population, straight.learner.population)
    assert len(resumed.learner.archive) == len(straight.learner.archive) == 80


def test_hyper_parameters_from_the_command_line_reach_checkpoint_and_model_json(tmp_path, niryo):
    out = tmp_path / "cli"
    argv = ["--threads", "1", "train", "--learner", "evolution", "--mode", "position"]
    argv += ["--steps", "5", "--out", str(out), "--quiet", "--novelty", "0.2"]
    assert main([*argv, "--learn", "population=10", "sigma=0.03", "elite=3"]) == 0
    hyper = json.loads((out / "model.json").read_text())["training"]["hyper_parameters"]
    assert (hyper["population"], hyper["sigma"], hyper["elite"], hyper["novelty"]) == (
        10,
        0.03,
        3,
        0.2,
    )
    saved = json.loads(torch.load(out / CHECKPOINT, weights_only=True)["config"])
    assert saved["learn"]["population"] == 10
    assert main([*argv, "--force", "--learn", "populaton=10"]) == 2
    assert main([*argv, "--force", "--learn", "population=ten"]) == 2
    with pytest.raises(ValueError, match="elite"):
        _learner(niryo, population=4, elite=4)


def test_the_learner_node_takes_hyper_parameters_as_parameters(tmp_path):
    rclpy = pytest.importorskip("rclpy")
    from rclpy.parameter import Parameter

    from robot_ik_nn.nodes.learner_node import LearnerNode

    values = dict(learner="evolution", mode="position", steps=3, minutes=0.0)  # hidden: unset
    values.update(output_dir=str(tmp_path / "node"), progress_bar=False)
    values.update({"learn.population": 10, "learn.sigma": 0.04})
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = LearnerNode(
            context=context, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]
        )
        node.thread.join(timeout=120)
        node.close()
        assert node.get_parameter("learn.novelty").value == 0.0  # every field is a parameter
        hyper = json.loads((tmp_path / "node" / "model.json").read_text())["training"]
        assert hyper["hyper_parameters"]["population"] == 10
        assert hyper["hyper_parameters"]["sigma"] == 0.04 and hyper["learner"] == "evolution"
        meta = json.loads((tmp_path / "node" / "model.json").read_text())
        assert meta["network"]["hidden"] == [32, 32]  # the evolution learner's own default
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
