"""Answering inverse kinematics requests as MoveIt asks them (moveit_msgs/GetPositionIK, sent by
``srv_kinematics_plugin``), without messages: the node (nodes/moveit_service.py) copies the
fields in and out.

MoveIt sends the planning group's name, the seed as a whole robot state (joints of other groups
too), the pose in the group's base frame and the link it is for; it reads the joints and a code.
Codes are moveit_msgs/MoveItErrorCodes' values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .arm.rotations import matrix_to_quaternion, quaternion_to_matrix
from .ik.inputs import joints
from .ik.results import SOLVED

SUCCESS = 1
NO_IK_SOLUTION = -31
FRAME_TRANSFORM_FAILURE = -21
INVALID_LINK_NAME = -18
INVALID_GROUP_NAME = -15


@dataclass(frozen=True)
class IKRequest:
    position: tuple
    quaternion: tuple  # x y z w
    frame: str = ""  # '' = the arm's base
    link: str = ""  # '' = the arm's tip
    group: str = ""
    seed: dict = field(default_factory=dict)  # joint name -> position; others' joints too
    avoid_collisions: bool = True


@dataclass
class IKReply:
    code: int
    message: str
    joints: dict  # name -> position: the seed's joints, the arm's replaced by the answer

    @property
    def solved(self) -> bool:
        return self.code == SUCCESS


class IKService:
    """One solver behind GetPositionIK.

    ``group``: the planning group answered ('' any); ``frames``: frames a pose may be given in
    besides the arm's base (they are the base by another name); ``transform(frame)``: the pose of
    ``frame`` in the base as (translation, quaternion x y z w), raising ``LookupError`` with the
    reason when it is unknown (tf2 where the node has it); ``None``: other frames are refused.
    """

    def __init__(self, solver, *, group: str = "", frames=(), transform=None):
        self.solver = solver
        # avoid_collisions=false: the same arm without the collision check
        self.unchecked = solver.with_settings(collision_check=False) if solver.checking else solver
        self.arm = solver.arm
        self.group = group
        self.frames = {self.arm.base, *(f for f in frames if f)}
        self.transform = transform

    def answer(self, request: IKRequest) -> IKReply:
        seed = dict(request.seed)
        refused = self._refusal(request)
        if refused:
            return IKReply(refused[0], refused[1], seed)
        try:
            position, quat = self._in_base(request)
        except LookupError as err:
            return IKReply(FRAME_TRANSFORM_FAILURE, str(err), seed)
        solver = self.solver if request.avoid_collisions else self.unchecked
        try:
            answer = solver.solve(position, quat, current=self._seed(seed))
        except ValueError as err:  # not a pose: NaN, or not four numbers of a quaternion
            return IKReply(NO_IK_SOLUTION, f"the pose is unusable: {err}", seed)
        if answer.status != SOLVED or answer.q is None:
            reason = answer.reason or f"{answer.status}: no answer within the tolerance"
            return IKReply(NO_IK_SOLUTION, reason, seed)
        seed.update(zip(self.arm.joint_names, (float(v) for v in answer.q)))
        return IKReply(SUCCESS, "", seed)

    def _refusal(self, request: IKRequest):
        if self.group and request.group != self.group:
            return (
                INVALID_GROUP_NAME,
                f"group '{request.group}' is not served here; this solver answers group "
                f"'{self.group}' ({self.arm.base} -> {self.arm.tip})",
            )
        if request.link not in ("", self.arm.tip):
            return (
                INVALID_LINK_NAME,
                f"link '{request.link}' is not this solver's tip; it solves for "
                f"'{self.arm.tip}'",
            )
        return None

    def _in_base(self, request: IKRequest):
        position = np.asarray(request.position, dtype=float)
        quat = np.asarray(request.quaternion, dtype=float)
        if request.frame in ("", *self.frames):
            return position, quat
        if self.transform is None:
            raise LookupError(
                f"the pose is in frame '{request.frame}'; this solver takes poses in "
                f"{', '.join(sorted(self.frames))} (no tf2 here to transform it)"
            )
        translation, rotation = self.transform(request.frame)
        R = quaternion_to_matrix(np.asarray(rotation, dtype=float))
        moved = R @ position + np.asarray(translation, dtype=float)
        turned = matrix_to_quaternion(R @ quaternion_to_matrix(quat))
        return moved, turned

    def _seed(self, seed: dict):
        """The arm's joints in the seed as a warm start, or None when some are missing or
        unusable (then the network alone seeds the search)."""
        names = self.arm.joint_names
        if not all(n in seed for n in names):
            return None
        try:
            return joints([seed[n] for n in names], (self.arm.dof,), "seed")
        except ValueError:
            return None
