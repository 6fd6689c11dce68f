"""The camera tracker (calibration/camera.py) on images the simulated camera
(hardware/sim_camera.py) renders of the Niryo One: the pose it finds against the TRUE marker
pose (PyBullet's link state of the tool composed with the plate's known offset, never the
picture), the refusals by name, the CameraInfo fields, and the printable marker at its true
size."""

from __future__ import annotations

import re
import struct
import zlib

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")
pytest.importorskip("pybullet")

from scipy.spatial.transform import Rotation  # noqa: E402

from robot_ik_nn.calibration import camera as tracker  # noqa: E402
from robot_ik_nn.calibration.camera import (  # noqa: E402
    CameraIntrinsics,
    DetectorSettings,
    MarkerSpec,
    detect_marker,
)

CAMERA = CameraIntrinsics.pinhole(1280, 720, fx=900.0)
MARKER = MarkerSpec("DICT_4X4_50", 7, 0.040)
EYE, LOOK = [1.0, 0.25, 0.45], [0.2, 0.0, 0.3]  # 0.8-1.0 m from the tool's poses below
FRAMES = 20


@pytest.fixture(scope="module")
def scene():
    from robot_ik_nn.hardware.pybullet_arm import ArmSim
    from robot_ik_nn.hardware.sim_camera import SimCamera, look_at

    with ArmSim("niryo_one") as sim:
        cam = SimCamera(sim, CAMERA, look_at(EYE, LOOK), MARKER, supersample=4)
        yield sim, cam


def _facing_poses(sim, cam, n, seed, max_angle=45.0):
    """Random joints (uniform within the limits, no self-collision) whose marker lies inside
    the image, unhidden by the arm, and faces the camera within ``max_angle``: chosen from the
    true poses, no image."""
    rng = np.random.default_rng(seed)
    lo = np.array([j.lower for j in sim.arm.joints])
    hi = np.array([j.upper for j in sim.arm.joints])
    out = []
    for _ in range(20000):
        q = rng.uniform(lo, hi)
        angle, inside = cam.sees(q)
        if inside and angle <= max_angle and not sim.in_self_collision():
            out.append(q)
            if len(out) == n:
                return out
    raise AssertionError(f"only {len(out)} facing poses in 20000 draws")


def _errors(found, frame):
    """(along the line of sight mm, across it mm, rotation deg) between a detection and the
    truth."""
    d = found.position - frame.position
    sight = frame.position / np.linalg.norm(frame.position)
    along = abs(d @ sight) * 1000
    across = np.linalg.norm(d - (d @ sight) * sight) * 1000
    rot = Rotation.from_quat(found.quaternion).inv() * Rotation.from_quat(frame.quaternion)
    return along, across, np.degrees(rot.magnitude())


@pytest.fixture(scope="module")
def frames(scene):
    sim, cam = scene
    return [cam.render(q) for q in _facing_poses(sim, cam, FRAMES, seed=0)]


def test_the_rendered_corners_fall_where_opencv_projects_them(scene):
    """The projection built from K and the view built from the camera's pose draw a marker
    corner in the pixel OpenCV projects it to: close up (120 px across), frontal, no
    supersampling, the corners found within 0.15 px of the true ones (a row of offset in
    PyBullet's convention, mended in sim_camera.projection_matrix, was 1.0 px here)."""
    from robot_ik_nn.hardware.sim_camera import SimCamera, look_at

    sim, _ = scene
    sim.set_joints(np.zeros(sim.arm.dof))
    tool = sim.end_effector_pose()[0]
    front = tool + [0.01, 0.0, 0.0]  # the plate's centre (default offset), facing +x
    cam = SimCamera(sim, CAMERA, look_at(front + [0.3, 0.0, 0.0], front), MARKER)
    try:
        frame = cam.render()
    finally:
        cam.close()
    found = detect_marker(frame.image, CAMERA, MARKER)
    assert found.accepted, found.reason
    corners = (frame.marker_pose @ np.c_[MARKER.corners(), np.ones(4)].T)[:3].T
    true = CAMERA.project(corners)
    assert np.ptp(true[:, 0]) > 100  # the close-up it means to be
    assert np.abs(found.corners - true).max() < 0.15, (found.corners - true).round(2).tolist()


def test_the_detected_pose_matches_the_true_marker_pose(frames):
    rows = []
    verdicts = []
    for frame in frames:
        found = detect_marker(frame.image, CAMERA, MARKER)
        verdicts.append(found.verdict)
        if found.accepted:
            rows.append((*_errors(found, frame), frame.view_angle_deg, found.view_angle_deg,
                         found.reprojection_error_px))  # fmt: skip
    rows = np.array(rows)
    distance = np.mean([np.linalg.norm(f.position) for f in frames])
    print(
        f"\n{len(rows)} of {len(frames)} accepted ({verdicts}), camera {distance:.2f} m away: "
        f"along the sight median {np.median(rows[:, 0]):.2f} max {rows[:, 0].max():.2f} mm, "
        f"across median {np.median(rows[:, 1]):.2f} max {rows[:, 1].max():.2f} mm, rotation "
        f"median {np.median(rows[:, 2]):.2f} max {rows[:, 2].max():.2f} deg, reprojection max "
        f"{rows[:, 5].max():.3f} px"
    )
    assert 0.8 <= distance <= 1.2
    assert len(rows) >= 0.9 * len(frames), verdicts
    # depth: a 40 mm marker is ~40 px across at 0.9 m, 1 mm of depth ~0.05 px of its size;
    # OpenCV's subpix corners alone (corner_refinement="subpix") gave a median of 5.6 mm here
    assert rows[:, 0].max() < 2.0 and np.median(rows[:, 0]) < 0.5
    assert rows[:, 1].max() < 0.5
    assert rows[:, 2].max() < 0.5 and np.median(rows[:, 2]) < 0.2
    # the view angle it reports is the true one (within the rotation's error)
    assert np.abs(rows[:, 3] - rows[:, 4]).max() < 0.5


def test_each_refusal_is_named_on_a_real_image(frames):
    frame = next(f for f in frames if detect_marker(f.image, CAMERA, MARKER).accepted)
    found = detect_marker(frame.image, CAMERA, MARKER)
    other = detect_marker(frame.image, CAMERA, MarkerSpec("DICT_4X4_50", 8, 0.040))
    assert other.verdict == tracker.OTHER_ID and other.ids_seen == (7,) and other.position is None
    assert "not id 8" in other.reason
    tight = DetectorSettings(max_view_angle_deg=found.view_angle_deg - 0.5)
    assert detect_marker(frame.image, CAMERA, MARKER, tight).verdict == tracker.GRAZING
    sharp = DetectorSettings(max_reprojection_px=found.reprojection_error_px / 2)
    assert detect_marker(frame.image, CAMERA, MARKER, sharp).verdict == tracker.REPROJECTION
    # the flip: IPPE's second pose, far from the first; refused when it explains the corners
    # nearly as well (here: demanding it be 1000 times worse)
    assert found.flip_angle_deg > 10 and found.flip_error_px > found.reprojection_error_px
    picky = DetectorSettings(min_flip_ratio=1000.0)
    assert detect_marker(frame.image, CAMERA, MARKER, picky).verdict == tracker.AMBIGUOUS
    blank = np.full((CAMERA.height, CAMERA.width, 3), 255, np.uint8)
    assert detect_marker(blank, CAMERA, MARKER).verdict == tracker.NOT_SEEN
    with pytest.raises(ValueError, match="1280 x 720"):
        detect_marker(frame.image[:, :640], CAMERA, MARKER)


def test_a_marker_turned_away_or_grazing_is_refused(scene):
    sim, cam = scene
    rng = np.random.default_rng(5)
    lo = np.array([j.lower for j in sim.arm.joints])
    hi = np.array([j.upper for j in sim.arm.joints])
    away = grazing = None
    for _ in range(20000):
        q = rng.uniform(lo, hi)
        angle, inside = cam.sees(q, margin_px=40)
        if not inside or sim.in_self_collision():
            continue
        if away is None and angle > 120:
            away = q
        if grazing is None and 70 < angle < 80:
            grazing = q
        if away is not None and grazing is not None:
            break
    back = detect_marker(cam.render(away).image, CAMERA, MARKER)
    assert back.verdict == tracker.NOT_SEEN, back.reason
    frame = cam.render(grazing)
    side = detect_marker(frame.image, CAMERA, MARKER)
    print(f"\ngrazing at {frame.view_angle_deg:.1f} deg: {side.verdict} ({side.reason})")
    assert side.verdict in (tracker.GRAZING, tracker.NOT_SEEN, tracker.AMBIGUOUS)
    assert not side.accepted


def test_camera_info_fields_round_trip():
    k = [910.5, 0.0, 641.2, 0.0, 905.25, 355.75, 0.0, 0.0, 1.0]
    d = [0.11, -0.23, 0.001, -0.002, 0.05]
    cam = CameraIntrinsics.from_camera_info(1280, 720, k, d, "plumb_bob")
    fields = cam.camera_info_fields()
    assert fields["k"] == k and fields["d"] == d and fields["width"] == 1280
    assert fields["p"][:3] == k[:3] and fields["p"][3] == 0.0 and len(fields["p"]) == 12
    again = CameraIntrinsics.from_camera_info(
        fields["width"], fields["height"], fields["k"], fields["d"], fields["distortion_model"]
    )
    assert np.array_equal(again.K, cam.K) and np.array_equal(again.D, cam.D)
    # the distortion is used: a point off the axis moves by it
    plain = CameraIntrinsics.from_camera_info(1280, 720, k, [])
    assert plain.D.tolist() == [0.0] * 5
    shift = cam.project([[0.3, 0.2, 1.0]]) - plain.project([[0.3, 0.2, 1.0]])
    assert np.linalg.norm(shift) > 1.0
    with pytest.raises(ValueError, match="9 values"):
        CameraIntrinsics.from_camera_info(1280, 720, k[:8], d)
    with pytest.raises(ValueError, match="distortion model"):
        CameraIntrinsics.from_camera_info(1280, 720, k, d, "equidistant")
    with pytest.raises(ValueError, match="camera matrix"):
        CameraIntrinsics.from_camera_info(1280, 720, [0, 0, 0, 0, 1, 0, 0, 0, 1], d)


def _pdf_streams(data: bytes):
    for m in re.finditer(rb"stream\r?\n(.*?)endstream", data, re.S):
        try:
            yield zlib.decompress(m.group(1)).decode("latin-1")
        except zlib.error:
            continue


def test_the_pdf_puts_the_marker_at_its_size(tmp_path):
    from robot_ik_nn.cli import main

    out = tmp_path / "marker.pdf"
    assert main(["marker", "--id", "7", "--size-mm", "40", "--margin-mm", "12", "--out",
                 str(out)]) == 0  # fmt: skip
    data = out.read_bytes()
    box = [float(v) for v in re.search(rb"/MediaBox\s*\[([^\]]*)\]", data).group(1).split()]
    pt = 72 / 25.4
    assert box[0] == 0 and box[1] == 0
    assert box[2:] == pytest.approx([64 * pt, 64 * pt], abs=1e-3)
    # the black path: its extent is the marker's, 12 mm in from each edge, 40 mm square
    page = next(s for s in _pdf_streams(data) if " re W n" in s)
    black = page.split("0 g", 1)[1].split("\nf", 1)[0]
    pairs = re.findall(r"([\d.]+) ([\d.]+) [ml]\n", black)
    xy = np.array([[float(a), float(b)] for a, b in pairs])
    assert xy[:, 0].min() == pytest.approx(12 * pt, abs=1e-3)
    assert xy[:, 1].min() == pytest.approx(12 * pt, abs=1e-3)
    assert np.ptp(xy[:, 0]) == pytest.approx(40 * pt, abs=1e-3)
    assert np.ptp(xy[:, 1]) == pytest.approx(40 * pt, abs=1e-3)
    # its cells are the marker's: the filled squares are the black cells of marker_image
    n = tracker.cells("DICT_4X4_50")
    cell = 40 * pt / n
    filled = np.zeros((n, n), bool)
    for x, y in xy.reshape(-1, 4, 2)[:, 0]:  # each square's first corner (its bottom left)
        col, row = round((x - 12 * pt) / cell), n - 1 - round((y - 12 * pt) / cell)
        filled[row, col] = True
    assert np.array_equal(filled, tracker.marker_image(7, n) < 128)


def test_the_png_carries_its_dpi_and_reads_back_as_the_marker(tmp_path):
    out = tmp_path / "marker.png"
    tracker.write_marker_file(out, 7, 40.0, margin_mm=10.0, px_per_mm=12)
    data = out.read_bytes()
    chunk = data.index(b"pHYs")
    ppx, ppy, unit = struct.unpack(">IIB", data[chunk + 4 : chunk + 13])
    assert (ppx, ppy, unit) == (12000, 12000, 1)  # 12 px per mm, in pixels per metre
    width, height = struct.unpack(">II", data[16:24])
    assert width == height == 60 * 12  # 40 mm + 2 x 10 mm at 12 px/mm
    image = cv2.imread(str(out), cv2.IMREAD_GRAYSCALE)
    dark = np.argwhere(image < 128)
    assert dark.min(axis=0).tolist() == [120, 120] and dark.max(axis=0).tolist() == [599, 599]
    cam = CameraIntrinsics.pinhole(width, height, 1000.0)
    seen = detect_marker(image, cam, MarkerSpec("DICT_4X4_50", 7, 0.040))
    assert seen.ids_seen == (7,)


def test_bad_marker_requests_are_refused(tmp_path):
    with pytest.raises(ValueError, match="holds ids 0 to 49"):
        tracker.marker_image(50, 100)
    with pytest.raises(ValueError, match="no ArUco dictionary"):
        tracker.marker_image(1, 100, "DICT_5X5_7")
    with pytest.raises(ValueError, match=".pdf or .png"):
        tracker.write_marker_file(tmp_path / "m.svg", 1, 40)
    from robot_ik_nn.cli import main

    with pytest.raises(SystemExit):
        main(["marker", "--id", "1", "--size-mm", "-4", "--out", str(tmp_path / "m.pdf")])


def test_a_distorted_image_is_measured_through_its_distortion(frames):
    """A rendered frame warped as a lens with barrel distortion would show it (cv2.remap: each
    pixel of the distorted image from where the undistorted one has it): with D given, the
    pose matches the truth as on the plain image; with D left out it does not."""
    k = CAMERA.camera_info_fields()["k"]
    lens = CameraIntrinsics.from_camera_info(1280, 720, k, [-0.25, 0.08, 0.0, 0.0, 0.0])
    # the frame whose marker lies farthest from the image's centre: the most distortion
    frame = max(frames, key=lambda f: np.linalg.norm(f.position[:2] / f.position[2]))
    u, v = np.meshgrid(np.arange(1280, dtype=np.float32), np.arange(720, dtype=np.float32))
    pixels = np.stack([u, v], -1).reshape(-1, 1, 2)
    source = cv2.undistortPoints(pixels, lens.K, lens.D, P=lens.K).reshape(720, 1280, 2)
    image = cv2.remap(frame.image, source[..., 0], source[..., 1], cv2.INTER_LINEAR,
                      borderValue=(255, 255, 255))  # fmt: skip
    true = lens.project((frame.marker_pose @ np.c_[MARKER.corners(), np.ones(4)].T)[:3].T)
    straight = CAMERA.project((frame.marker_pose @ np.c_[MARKER.corners(), np.ones(4)].T)[:3].T)
    assert np.abs(true - straight).max() > 3  # the lens moves the corners by pixels
    found = detect_marker(image, lens, MARKER)
    assert found.accepted, found.reason
    along, across, rot = _errors(found, frame)
    print(f"\nthrough the lens: corners {np.abs(found.corners - true).max():.3f} px off, "
          f"along {along:.2f} mm, across {across:.2f} mm, {rot:.2f} deg")  # fmt: skip
    assert np.abs(found.corners - true).max() < 0.1
    assert along < 2.0 and across < 0.5 and rot < 0.5
    blind = detect_marker(image, CAMERA, MARKER)
    assert np.linalg.norm(blind.position - frame.position) * 1000 > 5 * max(along, 0.5)
