"""FollowJointTrajectory goals without messages: the tolerances a goal carries, and the words
for how a goal ended (action_msgs/GoalStatus and control_msgs' error codes, by value)."""

from __future__ import annotations

# action_msgs/msg/GoalStatus
SUCCEEDED, CANCELED, ABORTED = 4, 5, 6
# control_msgs/action/FollowJointTrajectory's result codes
ERRORS = {
    0: "SUCCESSFUL",
    -1: "INVALID_GOAL",
    -2: "INVALID_JOINTS",
    -3: "OLD_HEADER_TIMESTAMP",
    -4: "PATH_TOLERANCE_VIOLATED",
    -5: "GOAL_TOLERANCE_VIOLATED",
}


def tolerances(names, value: float) -> list[tuple[str, float]]:
    """(joint, position tolerance) for each joint; none when ``value`` is 0 (the controller's
    own defaults apply)."""
    if value < 0:
        raise ValueError(f"a tolerance is 0 (the controller's default) or above, not {value}")
    return [(n, float(value)) for n in names] if value > 0 else []


def outcome(status: int, error_code: int, error_string: str) -> tuple[str, str]:
    """(level, words) for a goal's end: "ok" when it succeeded, else why it did not."""
    said = f": {error_string}" if error_string else ""
    if status == SUCCEEDED and error_code == 0:
        return "ok", "succeeded"
    if status == CANCELED:
        return "warn", f"cancelled{said}"
    code = ERRORS.get(error_code, str(error_code))
    if status == ABORTED:
        return "error", f"aborted ({code}){said}"
    return "error", f"ended with goal status {status} ({code}){said}"
