"""Distances between convex shapes, compiled: GJK on support functions, no allocation.

A shape is one row of ``ROW`` float64 numbers; it is a convex core (a point, a segment, a box, a
cylinder, the convex hull of a mesh's vertices) grown by a radius (a sphere is a point grown by
its radius, a capsule a segment grown by its radius). The distance between two shapes is the
distance between their cores less both radii, so GJK only ever meets the sharp cores.

Row layout (``shape``):
- ``FRAME``: the chain frame that carries the shape (collision.py); -1 for an obstacle, fixed in
  the base frame;
- ``KIND``: POINT, SEGMENT, BOX, CYLINDER, HULL, or PLANE (obstacles only);
- ``ROT`` (9, row-major) and ``POS`` (3): the core's pose in its frame;
- ``PAR`` (3): a segment's half length; a box's half sizes; a cylinder's radius and half length
  (axis z, as in URDF); a hull's first corner row, corner count and first adjacency row in the
  vertex array (its corners' neighbours as numbers, shapes.hull_block); a plane's unit normal;
- ``RADIUS``: how far the core is grown (a plane's offset: it is n.x = offset, free where more);
- ``BOUND`` (3) and ``BOUND_R``: a sphere around the whole shape, in the shape's own frame (the
  broad phase: most pairs are told apart by it alone); ``AXIS`` (3) and ``CAP_R``: a capsule
  around it, the segment BOUND -/+ AXIS grown by CAP_R (the mid phase, tighter round a long
  link: its pairs go to GJK a third as often on the Panda).

A pose (``pose``) is 12 numbers: a rotation row-major, then a translation. Obstacles are rows in
the base frame, and their pose is their own rotation and position.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

FRAME, KIND, ROT, POS, PAR, RADIUS, BOUND, BOUND_R, AXIS, CAP_R, ROW = (
    0,
    1,
    2,
    11,
    14,
    17,
    18,
    21,
    22,
    25,
    26,
)
POINT, SEGMENT, BOX, CYLINDER, HULL, PLANE = 0.0, 1.0, 2.0, 3.0, 4.0, 5.0
MAX_ITERATIONS = 64  # GJK on these shapes converges in < 20; the cap only guards degeneracy
EXTREMES = 6  # a hull's first corners: the farthest along -x, +x, -y, +y, -z, +z
CONVERGED = 1e-12  # relative: stop when |v|^2 - v.w <= this * |v|^2 (distance to ~1e-12 m)


@njit(cache=True)
def support(shape, pose, verts, dx, dy, dz, start):
    """(x, y, z, corner): the point of the core of ``shape`` at ``pose`` farthest along
    (dx, dy, dz); for a hull, the walk starts at corner ``start`` (the last one found: GJK's
    directions change little from step to step), or with ``start`` -1 at the best of the
    corners farthest along the frame's axes (shapes.hull lists them first), and the corner it
    ends on is returned."""
    lx = pose[0] * dx + pose[3] * dy + pose[6] * dz  # the direction in the shape's frame
    ly = pose[1] * dx + pose[4] * dy + pose[7] * dz
    lz = pose[2] * dx + pose[5] * dy + pose[8] * dz
    kind, sx, sy, sz, k = shape[KIND], 0.0, 0.0, 0.0, 0
    if kind == SEGMENT:
        sz = shape[PAR] if lz >= 0.0 else -shape[PAR]
    elif kind == BOX:
        sx = shape[PAR] if lx >= 0.0 else -shape[PAR]
        sy = shape[PAR + 1] if ly >= 0.0 else -shape[PAR + 1]
        sz = shape[PAR + 2] if lz >= 0.0 else -shape[PAR + 2]
    elif kind == CYLINDER:
        n = math.sqrt(lx * lx + ly * ly)
        if n > 1e-300:
            sx, sy = shape[PAR] * lx / n, shape[PAR] * ly / n
        sz = shape[PAR + 1] if lz >= 0.0 else -shape[PAR + 1]
    elif kind == HULL:  # uphill along the hull's edges: on a convex hull a local top is the top
        first, n = int(shape[PAR]), int(shape[PAR + 1])
        adjacency = verts[int(shape[PAR + 2]) :].reshape(-1)  # offsets (n + 1), then neighbours
        k, best, climbing = start, -np.inf, True
        for j in range(start, start + 1) if start >= 0 else range(min(n, EXTREMES)):
            d = verts[first + j, 0] * lx + verts[first + j, 1] * ly + verts[first + j, 2] * lz
            if d > best:
                best, k = d, j
        while climbing:
            climbing = False
            for e in range(int(adjacency[k]), int(adjacency[k + 1])):
                j = int(adjacency[n + 1 + e])
                d = verts[first + j, 0] * lx + verts[first + j, 1] * ly + verts[first + j, 2] * lz
                if d > best:
                    best, k, climbing = d, j, True
        sx, sy, sz = verts[first + k, 0], verts[first + k, 1], verts[first + k, 2]
    return (
        pose[0] * sx + pose[1] * sy + pose[2] * sz + pose[9],
        pose[3] * sx + pose[4] * sy + pose[5] * sz + pose[10],
        pose[6] * sx + pose[7] * sy + pose[8] * sz + pose[11],
        k,
    )


@njit(cache=True)
def place(shape, frame, pose):
    """``pose`` = ``frame`` (12) composed with the shape's pose in it."""
    for a in range(3):
        for c in range(3):
            acc = 0.0
            for b in range(3):
                acc += frame[3 * a + b] * shape[ROT + 3 * b + c]
            pose[3 * a + c] = acc
        acc = frame[9 + a]
        for b in range(3):
            acc += frame[3 * a + b] * shape[POS + b]
        pose[9 + a] = acc


@njit(cache=True)
def _ends(shape, pose):
    """The world end points of a shape's bounding capsule's segment."""
    c0 = c1 = c2 = e0 = e1 = e2 = 0.0
    for i in range(3):
        c = pose[9 + i]
        e = 0.0
        for j in range(3):
            c += pose[3 * i + j] * shape[BOUND + j]
            e += pose[3 * i + j] * shape[AXIS + j]
        if i == 0:
            c0, e0 = c, e
        elif i == 1:
            c1, e1 = c, e
        else:
            c2, e2 = c, e
    return c0 - e0, c1 - e1, c2 - e2, c0 + e0, c1 + e1, c2 + e2


@njit(cache=True)
def capsule_gap(a, pa, b, pb):
    """The gap between the two shapes' bounding capsules (segment to segment, less both radii):
    a lower bound of their distance."""
    p0, p1, p2, q0, q1, q2 = _ends(a, pa)
    r0, r1, r2, t0, t1, t2 = _ends(b, pb)
    d10, d11, d12 = q0 - p0, q1 - p1, q2 - p2
    d20, d21, d22 = t0 - r0, t1 - r1, t2 - r2
    w0, w1, w2 = p0 - r0, p1 - r1, p2 - r2
    aa = d10 * d10 + d11 * d11 + d12 * d12
    ee = d20 * d20 + d21 * d21 + d22 * d22
    f = d20 * w0 + d21 * w1 + d22 * w2
    s = t = 0.0
    if aa <= 1e-18 and ee <= 1e-18:
        pass
    elif aa <= 1e-18:
        t = min(max(f / ee, 0.0), 1.0)
    else:
        c = d10 * w0 + d11 * w1 + d12 * w2
        if ee <= 1e-18:
            s = min(max(-c / aa, 0.0), 1.0)
        else:
            bb = d10 * d20 + d11 * d21 + d12 * d22
            denom = aa * ee - bb * bb
            s = min(max((bb * f - c * ee) / denom, 0.0), 1.0) if denom > 1e-18 else 0.0
            t = (bb * s + f) / ee
            if t < 0.0:
                t, s = 0.0, min(max(-c / aa, 0.0), 1.0)
            elif t > 1.0:
                t, s = 1.0, min(max((bb - c) / aa, 0.0), 1.0)
    x0 = p0 + d10 * s - r0 - d20 * t
    x1 = p1 + d11 * s - r1 - d21 * t
    x2 = p2 + d12 * s - r2 - d22 * t
    return math.sqrt(x0 * x0 + x1 * x1 + x2 * x2) - a[CAP_R] - b[CAP_R]


@njit(cache=True)
def bound_gap(a, pa, b, pb):
    """The gap between the two shapes' bounding spheres: a lower bound of their distance."""
    d2 = 0.0
    for i in range(3):
        ca = pa[9 + i] + pa[3 * i] * a[BOUND] + pa[3 * i + 1] * a[BOUND + 1]
        ca += pa[3 * i + 2] * a[BOUND + 2]
        cb = pb[9 + i] + pb[3 * i] * b[BOUND] + pb[3 * i + 1] * b[BOUND + 1]
        cb += pb[3 * i + 2] * b[BOUND + 2]
        d2 += (ca - cb) ** 2
    return math.sqrt(d2) - a[BOUND_R] - b[BOUND_R]


# -- the closest point of a simplex (1 to 4 points of W) to the origin ---------------------------
@njit(cache=True)
def _segment(W, i, j):
    """(x, y, z, mask) of the point of segment W[i] W[j] closest to the origin; mask: the bits
    of the points it needs."""
    ax, ay, az = W[i, 0], W[i, 1], W[i, 2]
    ex, ey, ez = W[j, 0] - ax, W[j, 1] - ay, W[j, 2] - az
    ee = ex * ex + ey * ey + ez * ez
    t = -(ax * ex + ay * ey + az * ez) / ee if ee > 0.0 else 1.0
    if t <= 0.0:
        return ax, ay, az, 1 << i
    if t >= 1.0:
        return W[j, 0], W[j, 1], W[j, 2], 1 << j
    return ax + t * ex, ay + t * ey, az + t * ez, (1 << i) | (1 << j)


@njit(cache=True)
def _triangle(W, i, j, k):
    """As _segment for triangle W[i] W[j] W[k] (Voronoi regions of its corners, edges, face)."""
    ax, ay, az = W[i, 0], W[i, 1], W[i, 2]
    bx, by, bz = W[j, 0] - ax, W[j, 1] - ay, W[j, 2] - az  # ab
    cx, cy, cz = W[k, 0] - ax, W[k, 1] - ay, W[k, 2] - az  # ac
    d1 = -(bx * ax + by * ay + bz * az)  # ab . (0 - a)
    d2 = -(cx * ax + cy * ay + cz * az)
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, 1 << i
    d3 = -(bx * W[j, 0] + by * W[j, 1] + bz * W[j, 2])  # ab . (0 - b)
    d4 = -(cx * W[j, 0] + cy * W[j, 1] + cz * W[j, 2])
    if d3 >= 0.0 and d4 <= d3:
        return W[j, 0], W[j, 1], W[j, 2], 1 << j
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        return ax + t * bx, ay + t * by, az + t * bz, (1 << i) | (1 << j)
    d5 = -(bx * W[k, 0] + by * W[k, 1] + bz * W[k, 2])  # ab . (0 - c)
    d6 = -(cx * W[k, 0] + cy * W[k, 1] + cz * W[k, 2])
    if d6 >= 0.0 and d5 <= d6:
        return W[k, 0], W[k, 1], W[k, 2], 1 << k
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        return ax + t * cx, ay + t * cy, az + t * cz, (1 << i) | (1 << k)
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return (
            W[j, 0] + t * (W[k, 0] - W[j, 0]),
            W[j, 1] + t * (W[k, 1] - W[j, 1]),
            W[j, 2] + t * (W[k, 2] - W[j, 2]),
            (1 << j) | (1 << k),
        )
    total = va + vb + vc
    if not total > 0.0:  # a flat (degenerate) triangle: the nearest of its edges
        best = _segment(W, i, j)
        e = _segment(W, j, k)
        if e[0] ** 2 + e[1] ** 2 + e[2] ** 2 < best[0] ** 2 + best[1] ** 2 + best[2] ** 2:
            best = e
        e = _segment(W, i, k)
        if e[0] ** 2 + e[1] ** 2 + e[2] ** 2 < best[0] ** 2 + best[1] ** 2 + best[2] ** 2:
            best = e
        return best
    v, w = vb / total, vc / total
    mask = (1 << i) | (1 << j) | (1 << k)
    return ax + v * bx + w * cx, ay + v * by + w * cy, az + v * bz + w * cz, mask


@njit(cache=True)
def _outside(W, i, j, k, o):
    """Whether the origin lies on the other side of face W[i] W[j] W[k] than W[o], or the
    tetrahedron is too flat to tell (then the face is a candidate too)."""
    bx, by, bz = W[j, 0] - W[i, 0], W[j, 1] - W[i, 1], W[j, 2] - W[i, 2]
    cx, cy, cz = W[k, 0] - W[i, 0], W[k, 1] - W[i, 1], W[k, 2] - W[i, 2]
    nx, ny, nz = by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx
    origin = -(nx * W[i, 0] + ny * W[i, 1] + nz * W[i, 2])
    other = nx * (W[o, 0] - W[i, 0]) + ny * (W[o, 1] - W[i, 1]) + nz * (W[o, 2] - W[i, 2])
    scale = math.sqrt(nx * nx + ny * ny + nz * nz) * (
        abs(W[o, 0] - W[i, 0]) + abs(W[o, 1] - W[i, 1]) + abs(W[o, 2] - W[i, 2])
    )
    if abs(other) <= 1e-12 * scale:
        return True
    return origin * other < 0.0


@njit(cache=True)
def closest(W, n):
    """The point of conv(W[:n]) closest to the origin; W is reduced in place to the fewest of
    its points that span it. Returns (x, y, z, n), n = 4 when the origin lies inside."""
    if n == 1:
        return W[0, 0], W[0, 1], W[0, 2], 1
    if n == 2:
        x, y, z, mask = _segment(W, 0, 1)
    elif n == 3:
        x, y, z, mask = _triangle(W, 0, 1, 2)
    else:
        mask, best = 0, np.inf
        x = y = z = 0.0
        for i, j, k, o in ((0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 3, 1), (1, 2, 3, 0)):
            if _outside(W, i, j, k, o):
                fx, fy, fz, fmask = _triangle(W, i, j, k)
                d = fx * fx + fy * fy + fz * fz
                if d < best:
                    best, x, y, z, mask = d, fx, fy, fz, fmask
        if mask == 0:
            return 0.0, 0.0, 0.0, 4
    m = 0
    for i in range(n):
        if mask & (1 << i):
            W[m, 0], W[m, 1], W[m, 2] = W[i, 0], W[i, 1], W[i, 2]
            m += 1
    return x, y, z, m


@njit(cache=True)
def distance(a, pa, b, pb, verts, limit, W):
    """The distance between the cores of shapes ``a`` at pose ``pa`` and ``b`` at ``pb`` (0
    when they meet); ``W`` (4, 3) scratch. With ``limit`` >= 0 it stops as soon as the answer
    is known to lie above ``limit`` (returning a lower bound above it) or at or below it
    (returning an upper bound). A run that does not converge returns its best lower bound, so
    the answer never claims more room than there is."""
    dx, dy, dz = pa[9] - pb[9], pa[10] - pb[10], pa[11] - pb[11]
    if dx * dx + dy * dy + dz * dz == 0.0:
        dx = 1.0
    sa = support(a, pa, verts, -dx, -dy, -dz, -1)
    sb = support(b, pb, verts, dx, dy, dz, -1)
    W[0, 0], W[0, 1], W[0, 2] = sa[0] - sb[0], sa[1] - sb[1], sa[2] - sb[2]
    vx, vy, vz, n = W[0, 0], W[0, 1], W[0, 2], 1
    lower = 0.0
    for _ in range(MAX_ITERATIONS):
        vv = vx * vx + vy * vy + vz * vz
        if vv <= 1e-30:
            return 0.0
        sa = support(a, pa, verts, -vx, -vy, -vz, sa[3])
        sb = support(b, pb, verts, vx, vy, vz, sb[3])
        wx, wy, wz = sa[0] - sb[0], sa[1] - sb[1], sa[2] - sb[2]
        vw = vx * wx + vy * wy + vz * wz
        if vw > 0.0:
            lower = max(lower, vw / math.sqrt(vv))
            if limit >= 0.0 and lower > limit:
                return lower
        if vv - vw <= CONVERGED * vv:
            return math.sqrt(vv)
        for i in range(n):  # no new point: as close as these shapes let GJK get
            if W[i, 0] == wx and W[i, 1] == wy and W[i, 2] == wz:
                return math.sqrt(vv)
        W[n, 0], W[n, 1], W[n, 2] = wx, wy, wz
        vx, vy, vz, n = closest(W, n + 1)
        if n == 4:
            return 0.0
        if limit >= 0.0 and vx * vx + vy * vy + vz * vz <= limit * limit:
            return math.sqrt(vx * vx + vy * vy + vz * vz)
    return lower


@njit(cache=True)
def gap(a, pa, b, pb, verts, limit, W):
    """The distance between the shapes' surfaces (their cores' less both radii); negative when
    the cores meet (-(both radii), a depth not measured). ``limit`` as for ``distance``, on the
    surfaces (< 0: exact)."""
    grow = a[RADIUS] + b[RADIUS]
    core = distance(a, pa, b, pb, verts, limit + grow if limit >= 0.0 else -1.0, W)
    if core == 0.0:
        return -grow - 1e-12
    return core - grow


@njit(cache=True)
def plane_gap(plane, shape, pose, verts):
    """How far the shape keeps above a plane (n.x = offset): its lowest point along n."""
    nx, ny, nz = plane[PAR], plane[PAR + 1], plane[PAR + 2]
    s = support(shape, pose, verts, -nx, -ny, -nz, -1)
    return nx * s[0] + ny * s[1] + nz * s[2] - plane[RADIUS] - shape[RADIUS]


@njit(cache=True)
def plane_bound(plane, shape, pose):
    """The bounding capsule's height above the plane: a lower bound of ``plane_gap``."""
    p0, p1, p2, q0, q1, q2 = _ends(shape, pose)
    n0, n1, n2 = plane[PAR], plane[PAR + 1], plane[PAR + 2]
    low = min(n0 * p0 + n1 * p1 + n2 * p2, n0 * q0 + n1 * q1 + n2 * q2)
    return low - plane[RADIUS] - shape[CAP_R]
