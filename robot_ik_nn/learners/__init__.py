"""Learners: every one maximises the same reward by distance (reward.py), each its own way."""
from .base import LearnConfig, Learner

LEARNERS = ("gradient", "explore")


def make_learner(name: str, *args, **kwargs) -> Learner:
    if name == "gradient":
        from .gradient import GradientLearner

        return GradientLearner(*args, **kwargs)
    if name == "explore":
        from .explore import ExploreLearner

        return ExploreLearner(*args, **kwargs)
    raise ValueError(f"unknown learner {name!r}; choose one of {', '.join(LEARNERS)}")


__all__ = ["LEARNERS", "LearnConfig", "Learner", "make_learner"]
