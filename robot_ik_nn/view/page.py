"""The page: the arm in 3-D, a target handle to drag and turn, the solver's answer drawn live.

    page = ArmPage(Solver.load("models/niryo_one"), port=8080)   # http://127.0.0.1:8080
    page.wait()                                                   # until Ctrl-C / SIGTERM

viser serves the page (three.js, built and tested by its authors) and keeps it in step with the
Python objects here over one websocket: a drag of the handle calls ``_on_handle`` in this
process, the solver answers, and the arm's joint frames, the reached-pose frame and the side
panel change in one atomic message batch, so the browser never draws half an answer.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from ..ik.results import REJECTED
from .urdf import JointMap, base_pose, load_urdf

REFINED, ALONE = "refined", "network alone"


def wxyz_to_xyzw(wxyz) -> np.ndarray:
    w, x, y, z = (float(v) for v in wxyz)
    return np.array([x, y, z, w])


def xyzw_to_wxyz(xyzw) -> np.ndarray:
    x, y, z, w = (float(v) for v in xyzw)
    return np.array([w, x, y, z])


class ArmPage:
    """One viser server drawing one arm and answering its target handle with ``solver``."""

    def __init__(self, solver, *, host="127.0.0.1", port=8080, title="", start_q=None):
        import viser
        from viser.extras import ViserUrdf

        from ..arm.rotations import matrix_to_quaternion

        self.solver = solver
        self.alone = solver.with_settings(iterations=0) if solver.network is not None else None
        arm = solver.arm
        self._lock = threading.Lock()
        self.q = np.asarray(arm.mid_range if start_q is None else start_q, dtype=float).copy()
        self.answer = None  # the last answer drawn
        self.solves = 0  # answers drawn so far
        self._pose = None  # the target of the last answer (position, xyzw)
        self.follow = None  # set by nodes/view_link.py: targets go to ROS, not this solver

        _can_listen(host, port)
        self.server = server = viser.ViserServer(host=host, port=port, verbose=False)
        if server.get_port() != port:  # viser moves on to the next free port without a word
            server.stop()
            raise OSError(f"cannot listen on {host}:{port}: the port is in use")
        self.position_only = solver.mode == "position"  # the handle's turn is not asked for
        server.gui.configure_theme(control_width="large", dark_mode=True)
        reach = float(arm.reach)  # the camera frames the arm's reach, from the front left
        server.initial_camera.position = (1.1 * reach, -1.3 * reach, 0.9 * reach)
        server.initial_camera.look_at = (0.25 * reach, 0.0, 0.4 * reach)
        urdf = load_urdf(arm)
        self.joints = JointMap(urdf, arm)
        # plain lights, no shadows or environment map: a software-rendered browser (no GPU, a
        # Raspberry Pi) draws a frame in a third of the time, and the arm reads as well
        server.scene.configure_environment_map(None)
        server.scene.configure_default_lights(True, cast_shadow=False)
        server.scene.add_light_ambient("/ambient", intensity=1.2)
        server.scene.add_light_directional("/sun", intensity=2.0, position=(1.0, -1.5, 2.0))
        _floor(server, reach)
        self.robot = ViserUrdf(server, urdf, root_node_name="/arm")
        wxyz, xyz = base_pose(urdf, arm.base)
        server.scene.add_frame("/arm/base", wxyz=wxyz, position=xyz, show_axes=False)
        P, R = solver.forward(self.q)
        p0, w0 = P[0], xyzw_to_wxyz(matrix_to_quaternion(R[0]))
        self.handle = server.scene.add_transform_controls(
            "/arm/base/target", scale=0.12, position=p0, wxyz=w0, line_width=3.0
        )
        self.reached = server.scene.add_frame(
            "/arm/base/reached", axes_length=0.05, axes_radius=0.004
        )
        self._panel(title or arm.name, p0, w0)
        self.handle.on_update(self._on_handle)
        for warm_up in (solver, self.alone):  # the first call resolves the compiled entry
            if warm_up is not None:
                asked = None if self.position_only else wxyz_to_xyzw(w0)
                warm_up.solve(p0, asked, current=self.q)
        self.solve()

    # -- the side panel ---------------------------------------------------------------------------
    def _panel(self, title: str, p0, w0) -> None:
        gui = self.server.gui
        self.intro = gui.add_markdown(
            f"**{title}**: drag or turn the target; the arm follows the answer."
        )
        self.mode = gui.add_dropdown(
            "answer",
            (REFINED, ALONE),
            initial_value=REFINED,
            disabled=self.alone is None,
            hint="refined: the network's proposal and Levenberg-Marquardt steps; network "
            "alone: its proposal only (IKSettings(iterations=0))",
        )
        self.xyz = gui.add_vector3("target xyz (m)", tuple(p0), step=0.001)
        self.rpy = gui.add_vector3(
            "target rpy (deg)",
            _rpy_degrees(w0),
            step=0.1,
            disabled=self.position_only,
            hint="a position-only model: the tool's orientation is not asked for"
            if self.position_only
            else None,
        )
        self.status = gui.add_text("status", "", disabled=True)
        self.errors = gui.add_text("error", "", disabled=True)
        self.timing = gui.add_text("solve time", "", disabled=True)
        self.reason = gui.add_markdown("")
        units = "rad, m" if any(j.type == "prismatic" for j in self.solver.arm.joints) else "rad"
        with gui.add_folder(f"joints ({units})"):
            self.joint_fields = [
                gui.add_number(name, 0.0, step=1e-6, disabled=True)
                for name in self.solver.arm.joint_names
            ]
        self.mode.on_update(lambda event: self.solve(force=True))
        self.xyz.on_update(self._on_fields)
        self.rpy.on_update(self._on_fields)

    def _on_fields(self, event) -> None:
        if event.client is None:  # set here, from the handle: nothing new
            return
        import viser.transforms as vtf

        r, p, y = (math.radians(v) for v in self.rpy.value)
        with self.server.atomic():
            self.handle.position = np.asarray(self.xyz.value, dtype=float)
            self.handle.wxyz = vtf.SO3.from_rpy_radians(r, p, y).wxyz
        self._on_handle(event)

    def _on_handle(self, event) -> None:
        if self.follow is None:
            self.solve()
            return
        with self._lock:  # to ROS: the arm comes back on /joint_states
            position = np.array(self.handle.position, dtype=float)
            self.follow(position, wxyz_to_xyzw(self.handle.wxyz))
            self.xyz.value = tuple(float(v) for v in position)
            self.rpy.value = _rpy_degrees(self.handle.wxyz)

    # -- answering --------------------------------------------------------------------------------
    def set_target(self, position, quaternion) -> None:
        """Move the handle (x y z, quaternion x y z w) and answer it, as a drag would."""
        self.handle.position = np.asarray(position, dtype=float)
        self.handle.wxyz = xyzw_to_wxyz(quaternion)
        self.solve()

    def solve(self, force: bool = False):
        """Answer the handle's pose (if it moved) and draw the answer."""
        with self._lock:
            position = np.array(self.handle.position, dtype=float)
            quat = wxyz_to_xyzw(self.handle.wxyz)
            pose = (tuple(position), tuple(quat))
            if pose == self._pose and not force:
                return self.answer
            alone = self.mode.value == ALONE and self.alone is not None
            solver = self.alone if alone else self.solver
            asked = None if self.position_only else quat
            answer = solver.solve(position, asked, current=None if alone else self.q)
            self._pose, self.answer = pose, answer
            if answer.q is not None:
                self.q = np.array(answer.q, dtype=float)
            self._draw(answer, position)
            self.solves += 1
            return answer

    def _draw(self, answer, position) -> None:
        import viser.transforms as vtf

        with self.server.atomic():
            if answer.q is not None:
                self.robot.update_cfg(self.joints.config(answer.q))
                P, R = self.solver.forward(answer.q)
                self.reached.position = P[0]
                self.reached.wxyz = vtf.SO3.from_matrix(R[0]).wxyz
                for field, value in zip(self.joint_fields, answer.q):
                    field.value = float(value)
            self.xyz.value = tuple(float(v) for v in position)
            self.rpy.value = _rpy_degrees(self.handle.wxyz)
            self.status.value = answer.status.replace("_", " ")
            turned = "" if self.position_only else f", {math.degrees(answer.rot_err):.4f} deg"
            self.errors.value = (
                "-" if answer.status == REJECTED else f"{answer.pos_err * 1000:.4f} mm{turned}"
            )
            self.timing.value = f"{answer.seconds * 1e6:.0f} µs, {answer.iterations} LM iterations"
            self.reason.content = f"_{answer.reason}_" if answer.reason else ""
        self.server.flush()  # send it now, not at the end of the server's 1/60 s window

    def show_joints(self, q) -> None:
        """Draw the arm at ``q`` (from ``/joint_states``: an arm, not an answer)."""
        import viser.transforms as vtf

        self.q = np.array(q, dtype=float)
        with self.server.atomic():
            self.robot.update_cfg(self.joints.config(self.q))
            P, R = self.solver.forward(self.q)
            self.reached.position, self.reached.wxyz = P[0], vtf.SO3.from_matrix(R[0]).wxyz
            for field, value in zip(self.joint_fields, self.q):
                field.value = float(value)
        self.server.flush()

    def show_status(self, message: str, pos_mm=None, rot_deg=None, latency_ms=None) -> None:
        """The inference node's verdict on the last target (its ``~/status``)."""
        status, _, reason = message.partition(": ")
        with self.server.atomic():
            self.status.value = status.replace("_", " ")
            self.errors.value = f"{pos_mm} mm, {rot_deg} deg" if pos_mm is not None else "-"
            self.timing.value = f"{latency_ms} ms in the inference node" if latency_ms else ""
            self.reason.content = f"_{reason}_" if reason else ""
        self.server.flush()

    # -- life -------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self.server.get_port()

    def wait(self, stop: threading.Event | None = None) -> None:
        """Serve until ``stop`` is set (or Ctrl-C, which propagates once the page is closed)."""
        stop = stop or threading.Event()
        try:
            while not stop.is_set():  # not stop.wait(): a signal handler that sets ``stop``
                time.sleep(0.2)  # would run inside wait's lock and take it again: a deadlock
        finally:
            self.close()

    def close(self) -> None:
        self.server.stop()
        time.sleep(0.05)


def _can_listen(host: str, port: int) -> None:
    """An OSError that names the address when nothing can listen there (an address that is not
    this machine's, a name that does not resolve, a busy port): viser would try a thousand
    ports and then wait for ever."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise OSError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    failed = None
    for family, kind, proto, _, address in infos:  # localhost: ::1 and 127.0.0.1, say
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
                return
        except OSError as err:
            failed = err
    raise OSError(f"cannot listen on {host}:{port}: {failed.strerror or failed}")


def _floor(server, reach: float, cell: float = 0.1) -> None:
    """A floor of 10 cm squares under the arm's reach, as plain lines (viser's shader grid
    costs a software renderer twice the frame time)."""
    half = cell * math.ceil(reach / cell)
    ticks = np.arange(-half, half + cell / 2, cell)
    ends = [((v, -half, 0.0), (v, half, 0.0)) for v in ticks]
    ends += [((-half, v, 0.0), (half, v, 0.0)) for v in ticks]
    server.scene.add_line_segments(
        "/floor", np.array(ends), (110, 110, 110), thickness=1.0, thickness_units="screen"
    )


def _rpy_degrees(wxyz) -> tuple[float, float, float]:
    import viser.transforms as vtf

    rpy = vtf.SO3(np.asarray(wxyz, dtype=float)).as_rpy_radians()
    return tuple(round(math.degrees(a), 4) for a in (rpy.roll, rpy.pitch, rpy.yaw))
