"""Learning the inverse kinematics by reward (needs torch, never rclpy or pybullet at import).

reward.py       the reward by distance every learner shares
network.py      the network (joint angles out, or per-joint quaternions)
learners/       gradient, explore (the simulator as a black box), evolution (+ novelty), distill
training.py     the trainer: budget, checkpoints, Ctrl-C, metrics, the model folder at the end
run_state.py    what a run keeps in its folder (checkpoint, metrics) and how it resumes
merge.py        networks of one arm become one, by distillation
distributed.py  torchrun / DistributedDataParallel, one process per core or GPU
"""
