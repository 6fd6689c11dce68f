"""Forward kinematics in the compiled kernel (numba, float64): the joints' sines, the tip's pose
and the geometric Jacobian, every chain frame at once (the collision check's), and the rotation
helpers every residual uses. kernel.py builds the residual and Levenberg-Marquardt on these.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .layout import A_, AK_, B_, C_, P_, PRISMATIC, TYPE

# -- sines --------------------------------------------------------------------------------------
# sin r = r + r^3 S(r^2) and 1 - cos r = r^2 / 2 - r^4 C(r^2) on |r| <= pi/4, degree 5 in r^2:
# least squares at 600 Chebyshev nodes against 50-digit values (mpmath), each within about one
# float64 rounding of the true value (test_kernel checks against libm)
_S0, _S1, _S2, _S3, _S4, _S5 = (
    -0.1666666666666666,
    0.008333333333330951,
    -0.000198412698367143,
    2.7557316074995272e-06,
    -2.505112524744165e-08,
    1.591760347662008e-10,
)
_C0, _C1, _C2, _C3, _C4, _C5 = (
    0.04166666666666665,
    -0.0013888888888887638,
    2.480158729905842e-05,
    -2.755731741771678e-07,
    2.0876176769798853e-09,
    -1.1384865299850569e-11,
)
_ROUND = 1.5 * 2.0**52  # x + _ROUND - _ROUND: x rounded to a whole number, kept in the low bits
# pi / 2 in three parts whose products with a small whole number are exact (Cody and Waite)
_PIO2_1, _PIO2_2, _PIO2_3 = 1.5707963267341256, 6.0771005065061922e-11, 2.0222662487959506e-21


# no reassociation: that would fold (t + _ROUND) - _ROUND into t
@njit(cache=True, fastmath={"nsz", "contract", "arcp"})
def sincos(q, s, c1, k):
    """``s`` = sin q and ``c1`` = 1 - cos q for every angle in ``q`` (|q| below about 1e5),
    ``k`` (int64) scratch: the quarter turns taken off. No call into libm and no branch, so the
    loops vectorise across the joints."""
    kf = k.view(np.float64)
    for j in range(q.shape[0]):
        x = q[j]
        u = x * (2.0 / math.pi) + _ROUND
        turns = u - _ROUND
        r = ((x - turns * _PIO2_1) - turns * _PIO2_2) - turns * _PIO2_3
        r2 = r * r
        s[j] = r + r * r2 * (_S0 + r2 * (_S1 + r2 * (_S2 + r2 * (_S3 + r2 * (_S4 + r2 * _S5)))))
        cm = _C0 + r2 * (_C1 + r2 * (_C2 + r2 * (_C3 + r2 * (_C4 + r2 * _C5))))
        c1[j] = r2 * (0.5 - r2 * cm)
        kf[j] = u
    for j in range(q.shape[0]):
        quarter = k[j] & 3  # sin and cos of q from those of r: turned by quarter * pi / 2
        sr, cm = s[j], c1[j]
        cr = 1.0 - cm
        odd = (quarter & 1) == 1
        a, b = (cr, sr) if odd else (sr, cr)
        s[j] = -a if quarter >= 2 else a
        c1[j] = cm if quarter == 0 else (1.0 + b if quarter == 1 or quarter == 2 else 1.0 - b)


# -- kinematics -----------------------------------------------------------------------------------
@njit(cache=True)
def fk(chain, q, p, R, J, work, want_jac):
    """Tip position ``p`` (3,) and rotation ``R`` (3, 3) for joints ``q``; with ``want_jac`` also
    the geometric Jacobian ``J`` (6, dof; rows vx vy vz wx wy wz). ``work`` (WORK_ROWS, dof) is
    scratch: rows 0-5 each joint's origin and axis, 6-8 the sines, one minus the cosines and
    sincos's k."""
    n = q.shape[0]
    sines, cosines = work[6], work[7]
    sincos(q, sines, cosines, work[8].view(np.int64))
    r0, r1, r2, r3, r4, r5, r6, r7, r8 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    x, y, z = 0.0, 0.0, 0.0
    for j in range(n):
        px, py, pz = chain[j, P_], chain[j, P_ + 1], chain[j, P_ + 2]
        x += r0 * px + r1 * py + r2 * pz
        y += r3 * px + r4 * py + r5 * pz
        z += r6 * px + r7 * py + r8 * pz
        ax, ay, az = chain[j, AK_], chain[j, AK_ + 1], chain[j, AK_ + 2]
        zx, zy, zz = (
            r0 * ax + r1 * ay + r2 * az,
            r3 * ax + r4 * ay + r5 * az,
            r6 * ax + r7 * ay + r8 * az,
        )
        if want_jac:
            work[0, j], work[1, j], work[2, j] = x, y, z
            work[3, j], work[4, j], work[5, j] = zx, zy, zz
        if chain[j, TYPE] == PRISMATIC:
            m0, m1, m2 = chain[j, A_], chain[j, A_ + 1], chain[j, A_ + 2]
            m3, m4, m5 = chain[j, A_ + 3], chain[j, A_ + 4], chain[j, A_ + 5]
            m6, m7, m8 = chain[j, A_ + 6], chain[j, A_ + 7], chain[j, A_ + 8]
            x += zx * q[j]
            y += zy * q[j]
            z += zz * q[j]
        else:
            s, c1 = sines[j], cosines[j]
            m0 = chain[j, A_] + s * chain[j, B_] + c1 * chain[j, C_]
            m1 = chain[j, A_ + 1] + s * chain[j, B_ + 1] + c1 * chain[j, C_ + 1]
            m2 = chain[j, A_ + 2] + s * chain[j, B_ + 2] + c1 * chain[j, C_ + 2]
            m3 = chain[j, A_ + 3] + s * chain[j, B_ + 3] + c1 * chain[j, C_ + 3]
            m4 = chain[j, A_ + 4] + s * chain[j, B_ + 4] + c1 * chain[j, C_ + 4]
            m5 = chain[j, A_ + 5] + s * chain[j, B_ + 5] + c1 * chain[j, C_ + 5]
            m6 = chain[j, A_ + 6] + s * chain[j, B_ + 6] + c1 * chain[j, C_ + 6]
            m7 = chain[j, A_ + 7] + s * chain[j, B_ + 7] + c1 * chain[j, C_ + 7]
            m8 = chain[j, A_ + 8] + s * chain[j, B_ + 8] + c1 * chain[j, C_ + 8]
        r0, r1, r2, r3, r4, r5, r6, r7, r8 = (
            r0 * m0 + r1 * m3 + r2 * m6,
            r0 * m1 + r1 * m4 + r2 * m7,
            r0 * m2 + r1 * m5 + r2 * m8,
            r3 * m0 + r4 * m3 + r5 * m6,
            r3 * m1 + r4 * m4 + r5 * m7,
            r3 * m2 + r4 * m5 + r5 * m8,
            r6 * m0 + r7 * m3 + r8 * m6,
            r6 * m1 + r7 * m4 + r8 * m7,
            r6 * m2 + r7 * m5 + r8 * m8,
        )
    t = chain[n]
    p[0] = x + r0 * t[P_] + r1 * t[P_ + 1] + r2 * t[P_ + 2]
    p[1] = y + r3 * t[P_] + r4 * t[P_ + 1] + r5 * t[P_ + 2]
    p[2] = z + r6 * t[P_] + r7 * t[P_ + 1] + r8 * t[P_ + 2]
    for a in range(3):
        R[0, a] = r0 * t[A_ + a] + r1 * t[A_ + 3 + a] + r2 * t[A_ + 6 + a]
        R[1, a] = r3 * t[A_ + a] + r4 * t[A_ + 3 + a] + r5 * t[A_ + 6 + a]
        R[2, a] = r6 * t[A_ + a] + r7 * t[A_ + 3 + a] + r8 * t[A_ + 6 + a]
    if want_jac:
        for j in range(n):
            zx, zy, zz = work[3, j], work[4, j], work[5, j]
            if chain[j, TYPE] == PRISMATIC:
                J[0, j], J[1, j], J[2, j] = zx, zy, zz
                J[3, j], J[4, j], J[5, j] = 0.0, 0.0, 0.0
            else:
                dx, dy, dz = p[0] - work[0, j], p[1] - work[1, j], p[2] - work[2, j]
                J[0, j], J[1, j], J[2, j] = zy * dz - zz * dy, zz * dx - zx * dz, zx * dy - zy * dx
                J[3, j], J[4, j], J[5, j] = zx, zy, zz


@njit(cache=True)
def link_frames(chain, q, frames):
    """Every chain frame for joints ``q`` into ``frames`` (dof + 1, 12): R row-major, then t."""
    frames[0, :] = 0.0
    frames[0, 0] = frames[0, 4] = frames[0, 8] = 1.0
    for j in range(q.shape[0]):
        f, g = frames[j], frames[j + 1]
        s, c1 = 0.0, 0.0
        if chain[j, TYPE] != PRISMATIC:
            s, c1 = math.sin(q[j]), 1.0 - math.cos(q[j])
        for a in range(3):
            g[9 + a] = f[9 + a]
            for b in range(3):
                g[9 + a] += f[3 * a + b] * chain[j, P_ + b]
            if chain[j, TYPE] == PRISMATIC:
                for b in range(3):
                    g[9 + a] += f[3 * a + b] * chain[j, AK_ + b] * q[j]
        for a in range(3):
            for c in range(3):
                acc = 0.0
                for b in range(3):
                    k = 3 * b + c
                    acc += f[3 * a + b] * (
                        chain[j, A_ + k] + s * chain[j, B_ + k] + c1 * chain[j, C_ + k]
                    )
                g[3 * a + c] = acc


@njit(cache=True)
def rotation_error(R, Rt, e, at):
    """Axis * angle turning ``R`` onto ``Rt`` (base frame) into ``e[at:at+3]``; returns the angle.
    The compiled twin of rotations.rotation_error_vector."""
    # E = Rt R^T, entry by entry (no allocation: this runs every iteration)
    e00 = Rt[0, 0] * R[0, 0] + Rt[0, 1] * R[0, 1] + Rt[0, 2] * R[0, 2]
    e11 = Rt[1, 0] * R[1, 0] + Rt[1, 1] * R[1, 1] + Rt[1, 2] * R[1, 2]
    e22 = Rt[2, 0] * R[2, 0] + Rt[2, 1] * R[2, 1] + Rt[2, 2] * R[2, 2]
    e01 = Rt[0, 0] * R[1, 0] + Rt[0, 1] * R[1, 1] + Rt[0, 2] * R[1, 2]
    e10 = Rt[1, 0] * R[0, 0] + Rt[1, 1] * R[0, 1] + Rt[1, 2] * R[0, 2]
    e02 = Rt[0, 0] * R[2, 0] + Rt[0, 1] * R[2, 1] + Rt[0, 2] * R[2, 2]
    e20 = Rt[2, 0] * R[0, 0] + Rt[2, 1] * R[0, 1] + Rt[2, 2] * R[0, 2]
    e12 = Rt[1, 0] * R[2, 0] + Rt[1, 1] * R[2, 1] + Rt[1, 2] * R[2, 2]
    e21 = Rt[2, 0] * R[1, 0] + Rt[2, 1] * R[1, 1] + Rt[2, 2] * R[1, 2]
    vx, vy, vz = e21 - e12, e02 - e20, e10 - e01
    sin2 = math.sqrt(vx * vx + vy * vy + vz * vz)
    cos = (e00 + e11 + e22 - 1.0) / 2.0
    angle = math.atan2(sin2 / 2.0, cos)
    if cos >= -0.99:
        scale = angle / sin2 if sin2 > 1e-9 else 0.5
        e[at], e[at + 1], e[at + 2] = vx * scale, vy * scale, vz * scale
        return angle
    # near pi: the axis from the symmetric part (the column of the largest diagonal entry),
    # its sign from the antisymmetric part
    if e00 >= e11 and e00 >= e22:
        ax, ay, az = e00 - cos, (e10 + e01) / 2.0, (e20 + e02) / 2.0
    elif e11 >= e22:
        ax, ay, az = (e01 + e10) / 2.0, e11 - cos, (e21 + e12) / 2.0
    else:
        ax, ay, az = (e02 + e20) / 2.0, (e12 + e21) / 2.0, e22 - cos
    norm = max(math.sqrt(ax * ax + ay * ay + az * az), 1e-12)
    sign = -1.0 if ax * vx + ay * vy + az * vz < 0 else 1.0
    f = sign * angle / norm
    e[at], e[at + 1], e[at + 2] = ax * f, ay * f, az * f
    return angle


@njit(cache=True)
def axis_error(R, Rt, k, e, at):
    """Axis * angle turning the tool's axis ``k`` (a column of ``R``) onto the target's (the same
    column of ``Rt``) into ``e[at:at+3]``, the rotation about that axis left free; returns the
    angle between the two axes."""
    ax, ay, az = R[0, k], R[1, k], R[2, k]
    bx, by, bz = Rt[0, k], Rt[1, k], Rt[2, k]
    vx, vy, vz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
    sin = math.sqrt(vx * vx + vy * vy + vz * vz)
    angle = math.atan2(sin, ax * bx + ay * by + az * bz)
    if sin < 1e-12:  # aligned (no error) or opposite (any axis across the tool's will do)
        vx, vy, vz = (ay, -ax, 0.0) if abs(az) < 0.9 else (0.0, az, -ay)
        sin = math.sqrt(vx * vx + vy * vy + vz * vz)
    f = angle / sin
    e[at], e[at + 1], e[at + 2] = vx * f, vy * f, vz * f
    return angle


@njit(cache=True)
def quat_to_matrix(quat, R):
    """A quaternion (x y z w, normalised here) into ``R``; the compiled twin of
    rotations.quaternion_to_matrix."""
    norm = math.sqrt(quat[0] ** 2 + quat[1] ** 2 + quat[2] ** 2 + quat[3] ** 2)
    x, y, z, w = quat[0] / norm, quat[1] / norm, quat[2] / norm, quat[3] / norm
    R[0, 0], R[0, 1], R[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
    R[1, 0], R[1, 1], R[1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
    R[2, 0], R[2, 1], R[2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
