"""Measurement files as users write them (calibration/measurements.py): what a spreadsheet saves
(a byte-order mark, ``;`` separators with decimal commas, CRLF) is read as the canonical file;
the likely mistakes (millimetres, degrees, quaternions w-first) are refused by name before any
fit, and nothing is written. Every fit is bounded. ``true-arm --sag-deg`` measures a sagging arm.

The rows are measured on a perturbed arm in PyBullet (hardware/tracker.py), never on the
nominal model the checks compare with."""

import math

import numpy as np
import pytest

from robot_ik_nn import model_dir
from robot_ik_nn.arm.model import ArmModel
from robot_ik_nn.calibration import fit as F
from robot_ik_nn.calibration.folder import calibrate
from robot_ik_nn.calibration.measurements import MeasurementError, check, read_csv, to_csv
from robot_ik_nn.calibration.true_arm import perturb
from robot_ik_nn.hardware.tracker import measure
from robot_ik_nn.learn.network import IKNet, NetConfig

pytestmark = pytest.mark.slow

POSES = 30


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A nominal Niryo One folder (an untrained network: calibrate only copies it), and the
    canonical CSV of 30 poses of a true arm off by the documented sizes."""
    box = tmp_path_factory.mktemp("files")
    arm = ArmModel.load("niryo_one")
    nominal = model_dir.save(
        box / "nominal", IKNet.for_arm(arm, NetConfig(arm.dof, "pose", [8])), arm
    )
    true = ArmModel(perturb(arm, 7), source="<true arm>", base=arm.base, tip=arm.tip)
    q = np.random.default_rng(8).uniform(arm.lower, arm.upper, (POSES, arm.dof))
    rows = measure(true, q, 0.2, 0.1, seed=9)
    return box, nominal, arm, rows, to_csv(rows, arm.joint_names)


def _written(box, name, text: str, encoding="utf-8", newline="\n"):
    path = box / name
    path.write_bytes(text.replace("\n", newline).encode(encoding))
    return path


def _same(a, b):
    return all(
        np.array_equal(getattr(a, k), getattr(b, k)) for k in ("q", "position", "quaternion")
    )


def test_what_spreadsheets_save_is_read_as_the_canonical_file(setup):
    box, _, arm, _, canonical = setup
    names = arm.joint_names
    want = read_csv(canonical, names)
    semicolons = canonical.replace(",", ";")
    for name, path in [
        ("bom", _written(box, "bom.csv", canonical, "utf-8-sig")),
        ("crlf", _written(box, "crlf.csv", canonical, newline="\r\n")),
        ("semicolons", _written(box, "semi.csv", semicolons)),
        ("decimal commas", _written(box, "comma.csv", semicolons.replace(".", ","))),
        ("tabs", _written(box, "tabs.csv", canonical.replace(",", "\t"))),
        ("utf-16", _written(box, "utf16.csv", canonical, "utf-16")),
        ("all at once", _written(box, "all.csv", semicolons.replace(".", ","), "utf-8-sig",
                                 "\r\n")),
    ]:
        got = read_csv(str(path), names)
        assert _same(got, want), name
        check(got, arm)  # plausible: the same values


def test_a_header_that_differs_invisibly_names_the_difference(setup):
    _, _, arm, _, canonical = setup
    hidden = canonical.replace(",qw\n", ",qw\u200b\n", 1)  # a zero-width space after qw
    with pytest.raises(MeasurementError, match=r"missing: 'qw'; not expected: 'qw\\u200b'"):
        read_csv(hidden, arm.joint_names)
    mixed = canonical.split("\n")
    mixed[2] = mixed[2].replace(",", ";")
    with pytest.raises(MeasurementError, match=r":3: 1 values .* \(separated by ';' here"):
        read_csv("\n".join(mixed), arm.joint_names)


def _variant(rows, **change):
    m = rows.subset(np.arange(len(rows)))
    for key, value in change.items():
        setattr(m, key, value)
    return m


@pytest.mark.parametrize(
    "mistake, said",
    [
        ("millimetres", r"positions lie 9\d\d(\.\d)? times as far apart .* look like millimetres"),
        ("centimetres", r"look like centimetres; give x, y, z in metres"),
        ("degrees", r"the joints look like degrees .*joint_1 reads"),
        ("w-first", r"quaternions look w-first .*qw,qx,qy,qz"),
        ("another frame", r"not in the base frame \(base_link\); .*--frame unknown"),
    ],
)
def test_likely_mistakes_are_refused_by_name_before_any_fit(setup, monkeypatch, mistake, said):
    box, nominal, arm, rows, _ = setup
    m = {
        "millimetres": lambda: _variant(rows, position=rows.position * 1000),
        "centimetres": lambda: _variant(rows, position=rows.position * 100),
        "degrees": lambda: _variant(rows, q=np.degrees(rows.q)),
        "w-first": lambda: _variant(rows, quaternion=rows.quaternion[:, [3, 0, 1, 2]]),
        "another frame": lambda: _variant(rows, position=rows.position + [1.2, -0.4, 0.3]),
    }[mistake]()
    path = _written(box, f"{mistake}.csv", to_csv(m, arm.joint_names))
    fits = []

    def least_squares(*args, **kwargs):  # a fit started: the check came too late
        fits.append(args)
        raise AssertionError("a fit was started")

    monkeypatch.setattr(F, "least_squares", least_squares)
    out = box / f"out_{mistake}"
    with pytest.raises(MeasurementError, match=said) as refused:
        calibrate(nominal, path, out)
    assert fits == [] and not out.exists()
    assert str(refused.value).startswith(f"{path}: ")  # the file is named


def test_w_first_is_told_in_a_tracker_frame_too(setup):
    """--frame unknown: the turns between rows do not depend on where the tracker is."""
    _, _, arm, _, _ = setup
    true = ArmModel(perturb(arm, 11), source="<true arm>", base=arm.base, tip=arm.tip)
    q = np.random.default_rng(12).uniform(arm.lower, arm.upper, (POSES, arm.dof))
    seen = measure(true, q, 0.2, 0.1, seed=13, tracker_pose=((1.2, -0.5, 0.8), (2.0, 0.3, -1)))
    check(seen, arm, frame="unknown")  # as measured: plausible
    swapped = _variant(seen, quaternion=seen.quaternion[:, [3, 0, 1, 2]])
    with pytest.raises(MeasurementError, match="w-first"):
        check(swapped, arm, frame="unknown")


def test_a_file_read_right_fits_as_the_canonical_one(setup):
    """The spreadsheet's file (BOM, ';', decimal commas, CRLF) calibrates: the same parameters
    as the canonical file's, within their uncertainty."""
    box, nominal, _, _, canonical = setup
    plain = _written(box, "plain.csv", canonical)
    sheet = _written(box, "sheet.csv", canonical.replace(",", ";").replace(".", ","),
                     "utf-8-sig", "\r\n")
    a = calibrate(nominal, plain, box / "cal_plain", sag=False)
    b = calibrate(nominal, sheet, box / "cal_sheet", sag=False)
    for pa, pb in zip(a["parameters"], b["parameters"]):
        assert pa["name"] == pb["name"]
        assert abs(pa["value"] - pb["value"]) <= max(pa["sigma"], 1e-9), pa["name"]
    cv_a, cv_b = a["cross_validation"], b["cross_validation"]
    assert cv_b["calibrated_mm_median"] == pytest.approx(cv_a["calibrated_mm_median"], abs=0.05)


def test_every_fit_is_bounded_in_evaluations_and_time(setup, monkeypatch):
    """Measurements that get past the checks and still do not fit (here: millimetres given to
    the fit directly) stop with a message that says which bound was reached."""
    _, _, arm, rows, _ = setup
    chain, _ = F.chain_of(arm)
    mm = _variant(rows, position=rows.position * 1000)
    noise = (2e-4, math.radians(0.1))
    with monkeypatch.context() as patched:
        patched.setattr(F, "MAX_EVALUATIONS", 2)
        with pytest.raises(F.CalibrationError, match="did not settle within 2 evaluations"):
            F.fit(chain, rows, *noise)
    with pytest.raises(F.CalibrationError, match=r"time limit \(0.001 s, calibrate --time-l"):
        F.fit(chain, rows, *noise, budget=F.Budget(0.001, started=0.0))
    with pytest.raises(F.CalibrationError, match="did not settle within 100 evaluations"):
        F.fit(chain, mm, *noise)


def test_true_arm_measures_a_sagging_arm(tmp_path, capsys):
    """true-arm --sag-deg: the same rows (seed) as the rigid arm's, the tool lower by the sag
    the loaded joints take (mm), judged against the rigid arm's rows, not the model."""
    from robot_ik_nn.cli import main

    rows = {}
    for sag in ("0", "0.5"):
        csv = tmp_path / f"sag{sag}.csv"
        args = ["true-arm", "niryo_one", "--out", str(tmp_path / "true.urdf"), "--seed", "3",
                "--measure", "20", "--csv", str(csv), "--noise-mm", "0", "--noise-deg", "0"]
        assert main(args + ["--sag-deg", sag]) == 0
        rows[sag] = read_csv(str(csv), ArmModel.load("niryo_one").joint_names)
    said = capsys.readouterr().out
    assert "sag up to 0.5 deg at their largest load" in said and "joint_2" in said
    assert np.array_equal(rows["0"].q, rows["0.5"].q)
    moved = np.linalg.norm(rows["0.5"].position - rows["0"].position, axis=1)
    assert 0.3e-3 < moved.max() < 10e-3  # 0.5 deg at up to ~0.45 m of lever: a few mm
    assert main(["true-arm", "niryo_one", "--out", str(tmp_path / "t.urdf"), "--sag-deg",
                 "0.5"]) == 2
    assert "--sag-deg is a property of the measured arm" in capsys.readouterr().err


def test_rows_given_as_data_fit_as_their_file_and_a_stop_writes_nothing(setup):
    """A live session hands calibrate its rows, not CSV text: the same fit as the file's (the
    file's text rounds each value); ``keep_going`` False after the fit (a Ctrl-C) raises
    Stopped and writes nothing, the old folder left whole."""
    from robot_ik_nn.calibration.folder import Stopped

    box, nominal, arm, rows, text = setup
    from_file = calibrate(nominal, text, box / "from_file")
    from_rows = calibrate(nominal, rows, box / "from_rows")
    for key in ("nominal_mm_median", "calibrated_mm_median"):
        assert from_rows["cross_validation"][key] == pytest.approx(
            from_file["cross_validation"][key], abs=0.01
        )
    before = (box / "from_rows" / "calibration.json").read_bytes()
    for out in (box / "from_rows", box / "never"):
        with pytest.raises(Stopped):
            calibrate(nominal, rows, out, force=True, keep_going=lambda: False)
    assert (box / "from_rows" / "calibration.json").read_bytes() == before
    assert not (box / "never").exists()
