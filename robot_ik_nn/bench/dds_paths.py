"""``robot-ik-nn bench MODEL --dds-paths N``: the inference node streaming smooth paths over DDS.

What an operator's teleoperation gives the node: the paths of ``bench --tracking``
(bench/paths.py ``spline_path``: the arm's own smooth joint motion, 5 mm / 0.05 rad per target,
seeds 1000, 1001, ...) sent pose by pose to ``~/target_pose`` at 200 Hz, each stamped when it is
sent. Those splines are clipped to the joint limits and never checked for self-contact, so each
is cut before its first target whose own joints the node could not command (within its
joint_limit_margin of a limit, or in self-contact by PyBullet's contact query, not the node's
model): along what is streamed a jump-free answer the node may command always exists. A path cut
shorter than ``MIN_TARGETS`` is left out (``seeds_tried`` counts every seed drawn). The first
path's first ``WARM_UP`` targets are streamed once, uncounted, before anything is measured.

Three processes, as in ``bench --dds``: the inference node (started as ``ros2 run`` would,
with ``jump_threshold`` set: its default, 0, leaves the jump gate off), this client, and the
listener of bench/dds.py, which stamps every ``joint_command`` (and every ``~/status``) on
arrival on the monotonic clock all three share. A target with neither a command nor a refusal
heard is ``lost`` (the node's ``~/target_pose`` queue keeps 10: a stall over 50 ms can drop the
oldest; its publishers keep 10 for a slow reader).

The client also plays a position-controlled arm: ``/joint_states`` reports the last
``joint_command`` received, at once and at 50 Hz. Before each path the arm is put at the path's
first joints and the path's first pose is sent alone to ``~/target_path`` (the node's documented
way to start from where the arm is: its answer becomes the last one commanded, against which the
jump gate measures); a path whose start the node refuses is not streamed, and is counted.

Each command carries its target's stamp, so every command is matched to its target exactly.
Latency is target published -> its command received; a target never commanded counts as slower
than any (``ms_*_every_target_sent``). Steps are between consecutive commands of a path, the
first from the start's answer.

Beside the node, in the same run, the bare rclpy relay of nodes/relay_node.py: the node's
messages in and out (the same types, QoS and executor, started the same way, its topics under
``/bench_relay``), no solving. Each path is streamed to both, at the same rate, one after the
other (the node first on even paths, the relay first on odd ones: the machine's drift falls on
both); the client's arm follows the relay's commands too, and the listener hears both. What the
relay takes is the floor of three Python processes over DDS on this machine at that moment; the
node's p99 is judged against it (``done_when``: issue 44, within 0.5 ms). A relay that has
subscribed and answers nothing for RELAY_ANSWER_S fails the run.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from .dds import inference_node_command, start_listener, stop, suffix, wait_ready
from .dds_paths_figures import path_row, relay_figures, relay_row, summary
from .paths import JUMP, spline_path

HEARTBEAT_S = 0.02  # the arm reports its joints at 50 Hz between commands
LIMIT_MARGIN = 0.021  # rad: the node's joint_limit_margin (0.02), and a little
MIN_TARGETS = 50  # a path cut shorter than this is not streamed
WARM_UP = 50  # targets of the first path streamed once before anything is counted
RELAY = "/bench_relay"  # the bare relay's namespace (nodes/relay_node.py)
RELAY_ANSWER_S = 15.0  # s the relay has to answer once it has subscribed: else the run fails


def stream_paths(
    model,
    paths: int = 10,
    targets: int = 1000,
    rate_hz: float = 200.0,
    jump_threshold: float = JUMP,
    keep_joints: bool = False,
    first_seed: int = 1000,
    relay: bool = True,
    relay_params: tuple = (),
    say=None,
) -> dict:
    """Stream ``paths`` spline paths of up to ``targets`` targets to a fresh inference node; the
    figures of the module's docstring; the paths' seeds: ``first_seed`` on. ``keep_joints``:
    each row also holds its commands (target index, joints) for a judge outside. ``relay``:
    each path also streamed to the bare relay (nodes/relay_node.py, its parameters
    ``relay_params``, ``"name:=value"``), the node's turn and the relay's alternating which goes
    first."""
    import rclpy

    from ..ik.solver import Solver

    solver = Solver.load(model).with_settings(collision_check=True)
    solver.warm_up()  # the entries the node compiles at start, into numba's cache: warm for it
    arm = solver.arm
    made, seeds, tried = _servable(solver, paths, targets, first_seed)
    ends = ("", RELAY) if relay else ("",)
    env, work, listener, own_context = start_listener("robot_ik_nn_dds_paths_", ends[1:])
    client = _Client(arm, ends)
    node = relay_proc = None
    sent, starts, relayed = [], [], []
    log = open(work / "node.log", "w")  # noqa: SIM115 (closed below, after the node)
    relay_log = open(work / "relay.log", "w")  # noqa: SIM115 (the same)
    try:
        wait_ready(work, listener)
        node = subprocess.Popen(
            inference_node_command(model, f"jump_threshold:={float(jump_threshold)}"),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        if relay:  # started as the node is, beside it
            relay_proc = subprocess.Popen(
                inference_node_command(
                    model, *relay_params, module="robot_ik_nn.nodes.relay_node"
                ),
                env=env,
                stdout=relay_log,
                stderr=subprocess.STDOUT,
            )

        def alive():
            if node.poll() is not None:
                raise RuntimeError(f"the inference node exited: see {work / 'node.log'}")
            if relay_proc is not None and relay_proc.poll() is not None:
                raise RuntimeError(f"the bare relay exited: see {work / 'relay.log'}")

        def node_turn(k, q_path, P, R):
            start, why = client.start_at(q_path[0], P[0], R[0], alive, first=k == 0)
            starts.append((start, why))
            if start is None:
                sent.append(None)
                return
            if k == 0:  # the node's first streamed targets are slower: a path not counted
                while not ((work / "first").exists() and (work / "said").exists()):
                    alive()  # until the listener hears the node's commands and its status
                    client.stream(P[:1], R[:1], rate_hz)
                    time.sleep(0.05)
                client.stream(P[:WARM_UP], R[:WARM_UP], rate_hz)
                client.settle(len(P[:WARM_UP]))
                start, why = client.start_at(q_path[0], P[0], R[0], alive, first=False)
                starts[-1] = (start, why)
                if start is None:
                    sent.append(None)
                    return
            streamed = client.stream(P, R, rate_hz)
            sent.append((streamed, client.settle(len(P))))

        def relay_turn(k, P, R):
            if k == 0:
                client.warm_relay(P, R, rate_hz, alive, work)
            streamed = client.stream(P, R, rate_hz, RELAY)
            relayed.append((streamed, client.settle(len(P), RELAY)))

        for k, (q_path, P, R) in enumerate(made):
            if say:
                say(
                    f"path {k + 1} of {paths} ({len(P)} targets) to the node"
                    + (" and to the bare relay" if relay else "")
                    + f" at {rate_hz:g} Hz"
                )
            turns = [(node_turn, (k, q_path, P, R))]
            if relay:  # the node first on even paths, the relay on odd: drift falls on both
                turns.insert((k + 1) % 2, (relay_turn, (k, P, R)))
            for turn, args in turns:
                turn(*args)
        time.sleep(0.5)
    finally:
        client.close()
        stop(node, relay_proc, listener)
        log.close()
        relay_log.close()
        if own_context and rclpy.ok():
            rclpy.shutdown()
    heard = json.loads((work / "commands.json").read_text())
    said = json.loads((work / "statuses.json").read_text())
    rows = [
        path_row(seeds[k], len(made[k][1]), sent[k], starts[k], heard, said, keep_joints)
        for k in range(len(made))
    ]
    result = summary(arm.name, rows, rate_hz, jump_threshold, targets)
    result["dds_paths"]["seeds_tried"] = tried
    if relay:
        heard = json.loads((work / f"commands{suffix(RELAY)}.json").read_text())
        said = json.loads((work / f"statuses{suffix(RELAY)}.json").read_text())
        relay_rows = [
            relay_row(seeds[k], len(made[k][1]), relayed[k], heard, said)
            for k in range(len(made))
        ]
        result["dds_paths"].update(relay_figures(result["dds_paths"], relay_rows, relay_params))
    return result


def _servable(solver, paths, targets, first_seed, least=MIN_TARGETS):
    """``paths`` spline paths the node can serve along the path's own joints: each cut before
    its first target whose own joints lie within the node's joint_limit_margin of a limit or
    that PyBullet finds in self-contact, and kept when ``least`` targets are left. Seeds from
    ``first_seed`` on, at most 50 per path asked for: (paths, their seeds, seeds tried)."""
    from ..hardware.pybullet_arm import ArmSim  # the judge of contact: pybullet
    from .collisions import pybullet_contacts

    arm, made, seeds, seed = solver.arm, [], [], first_seed
    with ArmSim(arm) as sim:
        contacts = pybullet_contacts(sim, solver.collisions)
        while len(made) < paths and seed < first_seed + 50 * paths:
            q, P, R = spline_path(arm, solver.forward, seed, targets)
            room = np.minimum(q - arm.lower, arm.upper - q).min(axis=1) >= LIMIT_MARGIN
            n = int(np.argmin(room)) if not room.all() else len(q)
            n = next((i for i in range(n) if contacts(q[i])[0]), n)
            if n >= least:
                made.append((q[:n], P[:n], R[:n]))
                seeds.append(seed)
            seed += 1
    return made, seeds, seed - first_seed


class _End:
    """One node the client streams to: the inference node (``namespace`` "") or the relay."""

    def __init__(self, n, namespace: str, follow):
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        from ..nodes.common import RELIABLE

        ns = namespace
        self.targets_pub = n.create_publisher(
            PoseStamped, f"{ns}/inference_node/target_pose", RELIABLE
        )
        self.statuses, self.trajectories, self.mark = [], [], 0
        n.create_subscription(JointState, f"{ns}/joint_command", follow, RELIABLE)
        n.create_subscription(
            DiagnosticArray, f"{ns}/inference_node/status", self.statuses.append, 100
        )
        n.create_subscription(
            JointTrajectory, f"{ns}/arm_controller/joint_trajectory", self.trajectories.append, 100
        )


class _Client:
    """Targets out, and a position-controlled arm: ``/joint_states`` says the last command (of
    the inference node, or of the relay when it is the relay's turn)."""

    def __init__(self, arm, ends=("",)):
        import rclpy
        from geometry_msgs.msg import PoseArray
        from rclpy.executors import SingleThreadedExecutor
        from sensor_msgs.msg import JointState

        from ..nodes.common import RELIABLE

        self.arm, self.q = arm, arm.mid_range.tolist()
        self.node = rclpy.create_node("bench_dds_paths_client")
        n = self.node
        self.path_pub = n.create_publisher(PoseArray, "/inference_node/target_path", RELIABLE)
        self.states_pub = n.create_publisher(JointState, "/joint_states", RELIABLE)
        self.ends = {ns: _End(n, ns, self._follow) for ns in ends}
        self.statuses = self.ends[""].statuses  # the inference node's
        self.trajectories = self.ends[""].trajectories
        n.create_timer(HEARTBEAT_S, self._report)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(n)
        self.spinning = threading.Thread(target=self.executor.spin, daemon=True)
        self.spinning.start()

    def _follow(self, msg) -> None:
        self.q = list(msg.position)  # the arm is where it was commanded
        self._report()

    def _report(self) -> None:
        from sensor_msgs.msg import JointState

        state = JointState(name=self.arm.joint_names, position=list(self.q))
        state.header.stamp = self.node.get_clock().now().to_msg()
        self.states_pub.publish(state)

    def _pose(self, p, R):
        from geometry_msgs.msg import Pose

        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
        o = pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in matrix_to_quaternion(R))
        return pose

    def start_at(self, q0, p0, R0, alive, first: bool):
        """Put the arm at ``q0`` and send the pose there to ``~/target_path``, until the node
        commands an answer within 0.01 rad of ``q0`` (its joints may have reached the node after
        the path): (the answer, "") or (None, the node's reason). ``alive()`` raises if the node
        is gone."""
        from geometry_msgs.msg import PoseArray

        self.q = [float(v) for v in q0]
        self._report()
        why = "no answer"
        for _ in range(600 if first else 5):  # the first: until the node is up (up to 120 s)
            alive()
            time.sleep(0.05)  # the joints first
            heard, told = len(self.trajectories), len(self.statuses)
            msg = PoseArray(poses=[self._pose(p0, R0)])
            msg.header.frame_id = self.arm.base
            msg.header.stamp = self.node.get_clock().now().to_msg()
            self.path_pub.publish(msg)
            until = time.perf_counter() + 0.2
            while time.perf_counter() < until and len(self.statuses) == told:
                time.sleep(0.002)
            if len(self.statuses) == told:
                continue  # the node is not up yet
            time.sleep(0.02)  # the trajectory, published before the status
            said = [s.status[0].message for s in self.statuses[told:]]
            if not any(m.startswith("solved: path of") for m in said):
                why = said[-1]
                continue
            if len(self.trajectories) == heard:
                why = "no trajectory heard"
                continue
            answer = np.array(self.trajectories[-1].points[-1].positions)
            if np.abs(answer - q0).max() <= 0.01:
                self.q = answer.tolist()
                self._report()
                time.sleep(0.05)
                return answer, ""
            why = f"the answer is {np.abs(answer - q0).max():.3f} rad from the path's start"
        return None, why

    def warm_relay(self, P, R, rate_hz: float, alive, work) -> None:
        """Until the relay answers (the listener hears its command and its status; the run
        fails with the reason when it has subscribed and answers none for RELAY_ANSWER_S),
        then the first WARM_UP targets of ``P``, ``R`` once, uncounted."""
        end, began, until = self.ends[RELAY], time.perf_counter(), None
        heard = [work / f"first{suffix(RELAY)}", work / f"said{suffix(RELAY)}"]
        while not all(f.exists() for f in heard):
            alive()
            if until is None and end.targets_pub.get_subscription_count() > 0:
                until = time.perf_counter() + RELAY_ANSWER_S
            if until is not None and time.perf_counter() > until:
                raise RuntimeError(
                    f"the bare relay subscribed to {RELAY}/inference_node/target_pose but "
                    f"answered none of its targets in {RELAY_ANSWER_S:g} s (nothing heard on "
                    f"{RELAY}/joint_command and {RELAY}/inference_node/status): see "
                    f"{work / 'relay.log'}"
                )
            if until is None and time.perf_counter() - began > 120:
                raise RuntimeError(
                    f"the bare relay did not subscribe within 120 s: see {work / 'relay.log'}"
                )
            if until is not None:
                self.stream(P[:1], R[:1], rate_hz, RELAY)
            time.sleep(0.05)
        self.stream(P[:WARM_UP], R[:WARM_UP], rate_hz, RELAY)
        self.settle(len(P[:WARM_UP]), RELAY)

    def stream(self, P, R, rate_hz: float, end: str = "") -> list:
        """Every target of a path at ``rate_hz`` to the node of ``end`` (its namespace):
        (sent time, stamp ns) each."""
        from geometry_msgs.msg import PoseStamped

        to = self.ends[end]
        to.mark = len(to.statuses)
        out, next_time = [], time.perf_counter()
        for p, rot in zip(P, R):
            delay = next_time - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            msg = PoseStamped(pose=self._pose(p, rot))
            stamp = self.node.get_clock().now().to_msg()
            msg.header.frame_id, msg.header.stamp = self.arm.base, stamp
            out.append((time.perf_counter(), stamp.sec * 1_000_000_000 + stamp.nanosec))
            to.targets_pub.publish(msg)
            next_time += 1.0 / rate_hz
        return out

    def settle(self, targets: int, end: str = "", seconds: float = 10.0) -> float:
        """Wait until the node of ``end`` has said something of each target of the path streamed
        to it last (or ``seconds``); the time then."""
        to = self.ends[end]
        until = time.perf_counter() + seconds
        while time.perf_counter() < until and len(to.statuses) - to.mark < targets:
            time.sleep(0.01)
        time.sleep(0.04)  # the listener hears it too
        return time.perf_counter()

    def close(self) -> None:
        self.executor.shutdown()
        self.spinning.join(5)
        self.node.destroy_node()
