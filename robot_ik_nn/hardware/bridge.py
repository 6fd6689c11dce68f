"""The bridge between joint goals and a driver: what keeps a real arm safe. No ROS here.

One worker thread owns the driver and, every command period (``1 / rate``):

- connects when not connected, with a backoff that doubles from ``reconnect_min`` to
  ``reconnect_max`` seconds; a goal heard before a connection was lost is dropped, never sent;
- reads the joints (a failed read: the connection is lost, the arm holds, the state says why);
- when enabled and the newest goal is younger than ``watchdog`` seconds, sends a setpoint that
  moves each joint at most ``velocity * velocity_scale * dt`` toward it (``dt``: the time since
  the last period began, at most two periods, so a slow device is not also slowed down);
  otherwise holds where the arm is (``driver.stop()`` once) and never replays an old goal.

Goals are checked when they arrive, against the URDF's joint limits and the driver's own (an
InMoov servo's range): a goal with a wrong count, a NaN, or outside the limits is refused with
the reason. Nothing moves after start-up until :meth:`Bridge.resume` unless ``start_enabled``.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from .driver import BadReply, DriverError

LIMIT_TOLERANCE = 1e-6  # rad: a goal this close outside a limit is put on it
MIN_OVERLAP = 1e-3  # rad (m): a servo range must overlap the URDF's by more than this


@dataclass
class BridgeConfig:
    rate: float = 50.0  # command periods per second
    watchdog: float = 0.5  # seconds a goal stays fresh; 0 = no watchdog
    start_enabled: bool = False
    velocity_scale: float = 1.0  # of the URDF's velocity limits, in (0, 1]
    reconnect_min: float = 0.1
    reconnect_max: float = 2.0

    def __post_init__(self):
        if not 0 < self.velocity_scale <= 1:
            raise ValueError(f"velocity_scale must be in (0, 1], got {self.velocity_scale}")
        if not (self.rate > 0 and self.watchdog >= 0 and 0 < self.reconnect_min
                <= self.reconnect_max):
            raise ValueError(f"bridge settings out of range: {self}")


class Bridge:
    def __init__(self, driver, config: BridgeConfig | None = None, clock=time.monotonic):
        self.driver, self.config, self.clock = driver, config or BridgeConfig(), clock
        arm = driver.arm
        self.lower, self.upper = arm.lower.copy(), arm.upper.copy()
        if hasattr(driver, "joint_limits"):  # the calibration's servo ranges, inside the URDF's
            lo, hi = driver.joint_limits()
            self.lower, self.upper = np.maximum(self.lower, lo), np.minimum(self.upper, hi)
            apart = [  # no overlap, or one that is a point (a gain of the wrong sign, say)
                f"{name} (servo {a:.3f}..{b:.3f} rad, URDF {c:.3f}..{d:.3f} rad)"
                for name, a, b, c, d, narrow in zip(
                    arm.joint_names, lo, hi, arm.lower, arm.upper,
                    self.upper - self.lower < MIN_OVERLAP,
                )
                if narrow
            ]
            if apart:
                raise ValueError(
                    f"the calibration's servo range overlaps the URDF's limits by less than "
                    f"{MIN_OVERLAP} rad for "
                    + "; ".join(apart)
                    + ": check those servos' offset, gain, min_deg and max_deg"
                )
        velocity = np.where(np.isfinite(arm.velocity_limits), arm.velocity_limits, 1.0)
        self.speed = velocity * self.config.velocity_scale  # rad/s (m/s) per joint
        self.step_limit = self.speed / self.config.rate  # per command period
        self._lock = threading.Lock()
        self._goal = None  # (joints, time received)
        self._setpoint = None
        self._moving = False
        self._at_goal = False  # the last setpoint written is the goal itself: holding it
        self._short = False  # the watchdog stopped the arm before it reached its goal
        self._acted = None  # when the last setpoint was computed
        self.enabled = bool(self.config.start_enabled)
        self.connected = False
        self.joints = None
        self.velocities = None
        self.read_time = None
        self.problem = "not connected yet"
        self.lost_at = None
        self._resumed_at = self.clock()  # with lost_at: goals decided before these are refused
        self.connections = 0
        self.refused = 0
        self.last_refusal = ""  # why the last goal was refused, until a goal is taken
        self.bad_replies = 0
        self._backoff = self.config.reconnect_min
        self._next_try = 0.0
        self._running = threading.Event()
        self._thread = None

    # -- commands (any thread) ---------------------------------------------------------------
    def command(self, q, decided=None) -> str:
        """Take a joint goal; "" when taken, else why it was refused. ``decided`` (this bridge's
        clock): when the goal was decided, if not now (an inference node streams one goal for
        seconds): a goal decided before the last ~/resume or the last loss of the arm is
        refused, however often it is repeated."""
        try:
            q = np.array(q, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            q = np.array([np.nan])
        if q.shape != self.lower.shape:
            why = f"{q.size} values for {self.lower.size} joints"
        elif not np.all(np.isfinite(q)):
            why = "non-finite joint values"
        elif np.any(q < self.lower - LIMIT_TOLERANCE) or np.any(q > self.upper + LIMIT_TOLERANCE):
            outside = (q < self.lower - LIMIT_TOLERANCE) | (q > self.upper + LIMIT_TOLERANCE)
            names = [n for n, o in zip(self.driver.arm.joint_names, outside) if o]
            why = f"joints {names} outside their limits"
        else:
            with self._lock:
                since = max(self._resumed_at, -math.inf if self.lost_at is None else self.lost_at)
                if decided is None or decided > since:
                    self._goal = (np.clip(q, self.lower, self.upper), self.clock())
                    self.last_refusal = ""
                    return ""
            why = "a goal decided before the last ~/resume or loss of the arm"

        self.refused += 1
        self.last_refusal = why
        return why

    def reached(self, q) -> bool:
        """Whether the arm holds goal ``q`` (the last setpoint written is that goal)."""
        with self._lock:
            goal = self._goal
        wanted = np.clip(np.asarray(q, float), self.lower, self.upper)
        return self._at_goal and goal is not None and bool(np.array_equal(goal[0], wanted))

    def stop(self) -> None:
        """Hold where the arm is (within one command period) until :meth:`resume`."""
        with self._lock:
            self.enabled = False
            self._goal = None

    def resume(self) -> None:
        """Accept goals again; a goal heard before this call is not one of them."""
        with self._lock:
            self._goal = None
            self._setpoint = None
            self._resumed_at = self.clock()
            self.enabled = True
            self.last_refusal = ""  # a refusal from before ~/resume no longer says how it is

    # -- the worker ------------------------------------------------------------------------------
    def start(self) -> "Bridge":
        self._running.set()
        self._thread = threading.Thread(target=self._loop, name="bridge", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        period = 1.0 / self.config.rate
        next_tick = self.clock()
        while self._running.is_set():
            self.tick()
            next_tick += period
            delay = next_tick - self.clock()
            if delay < -period:  # fell behind (a slow device): do not try to catch up
                next_tick = self.clock()
            time.sleep(max(0.0, delay))

    def tick(self) -> None:
        """One command period: connect, read, then move toward a fresh goal or hold."""
        now = self.clock()
        if not self.connected and not self._connect(now):
            return
        try:
            self.joints = self.driver.read()
            if hasattr(self.driver, "velocities"):
                self.velocities = self.driver.velocities()
            self.read_time = self.clock()
            self.problem = ""
            self._act(now)
        except BadReply as exc:  # hold: nothing is sent on a reading that cannot be trusted
            self.bad_replies += 1
            self.problem = f"bad reply ({self.bad_replies} so far): {exc}"
        except Exception as exc:  # noqa: BLE001 - a driver's surprise is a lost connection too
            self._lost(exc if isinstance(exc, DriverError) else f"{type(exc).__name__}: {exc}")

    def _connect(self, now: float) -> bool:
        if now < self._next_try:
            return False
        try:
            self.driver.connect()
        except Exception as exc:  # noqa: BLE001
            self.problem = f"connecting to {self.driver.describe()}: {exc}"
            self._next_try = now + self._backoff
            self._backoff = min(2 * self._backoff, self.config.reconnect_max)
            return False
        with self._lock:
            self.connected = True
            self.connections += 1
            self._backoff = self.config.reconnect_min
            self.problem = ""
            self._setpoint = None
            lost, goal = self.lost_at, self._goal
            if goal is not None and lost is not None and goal[1] <= lost:
                self._goal = None  # never the goal from before the loss
        return True

    def _lost(self, why) -> None:
        with self._lock:
            self.connected = False
            self.lost_at = self.clock()
            self.problem = f"connection lost: {why}"
            self._goal = None
            self._setpoint = None
            self._moving = False
        try:
            self.driver.close()
        except Exception:  # noqa: BLE001 - closing what is already broken
            pass
        self._next_try = self.clock() + self._backoff
        self._backoff = min(2 * self._backoff, self.config.reconnect_max)

    def _act(self, now: float) -> None:
        with self._lock:
            goal, enabled = self._goal, self.enabled
        fresh = goal is not None and (
            self.config.watchdog == 0 or now - goal[1] <= self.config.watchdog
        )
        if enabled and fresh:
            period = 1.0 / self.config.rate
            dt = period if self._acted is None else min(now - self._acted, 2 * period)
            self._acted = now
            start = self._setpoint if self._setpoint is not None else self.joints
            reach = self.speed * max(dt, 0.0)
            step = np.clip(goal[0] - start, -reach, reach)
            setpoint = np.clip(start + step, self.lower, self.upper)
            if self._moving and np.array_equal(setpoint, self._setpoint):
                self._at_goal = True
                return  # there already: the device holds its last goal
            self.driver.write(setpoint)
            self._setpoint, self._moving, self._at_goal = setpoint, True, False
        elif self._moving:
            self.driver.stop()
            self._short = not self._at_goal
            self._setpoint, self._moving = None, False
        if not (enabled and fresh):
            self._acted = None

    # -- what the node reports ---------------------------------------------------------------
    def state(self) -> dict:
        with self._lock:
            goal = self._goal
        now = self.clock()
        if not self.connected or self.problem:
            level, message = 2, self.problem or "not connected"
        elif not self.enabled:
            level, message = 1, "holding: stopped (call ~/resume to move)"
        elif self.last_refusal:  # the commands this arm gets are refused: not "all is well"
            level, message = 1, f"refusing commands: {self.last_refusal}"
        elif self._moving and not self._at_goal:
            level, message = 0, "moving"
        elif self._moving:
            level, message = 0, "holding: at the goal"
        elif goal is not None and self.config.watchdog and now - goal[1] > self.config.watchdog:
            level, message = (
                (1, "holding: no fresh command (watchdog), short of the goal")
                if self._short
                else (0, "holding: at the goal")
            )
        else:
            level, message = 0, "holding: waiting for a command"
        return {
            "level": level,
            "message": message,
            "driver": self.driver.describe(),
            "connected": self.connected,
            "enabled": self.enabled,
            "connections": self.connections,
            "refused_goals": self.refused,
            "bad_replies": self.bad_replies,
            "goal_age": None if goal is None else now - goal[1],
        }

    def close(self) -> None:
        self._running.clear()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
            if self._thread.is_alive():  # stuck in the driver: closing it now could crash it
                return
        try:
            if self.connected and self._moving:
                self.driver.stop()
        except Exception:  # noqa: BLE001 - shutting down regardless
            pass
        self.driver.close()
