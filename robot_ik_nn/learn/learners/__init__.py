"""Learners: every one maximises the same reward by distance (../reward.py), each its own way.

base.py       the interface every learner implements, and LearnConfig, the settings they share
gradient.py   the reward differentiated through the torch kinematics
explore.py    trial and reward, the simulator a black box
evolution.py  a genetic algorithm over whole networks; no gradient flows
novelty.py    novelty search for the evolution learner
distill.py    one network learns from several (../merge.py)

``LEARNERS`` is importable without torch (the command line lists it); the rest loads on use."""

LEARNERS = ("gradient", "explore", "evolution")


def make_learner(name: str, *args, **kwargs):
    if name == "gradient":
        from .gradient import GradientLearner

        return GradientLearner(*args, **kwargs)
    if name == "explore":
        from .explore import ExploreLearner

        return ExploreLearner(*args, **kwargs)
    if name == "evolution":
        from .evolution import EvolutionLearner

        return EvolutionLearner(*args, **kwargs)
    raise ValueError(f"unknown learner {name!r}; choose one of {', '.join(LEARNERS)}")


def __getattr__(name: str):
    if name in ("LearnConfig", "Learner"):
        from . import base

        return getattr(base, name)
    raise AttributeError(name)


__all__ = ["LEARNERS", "LearnConfig", "Learner", "make_learner"]
