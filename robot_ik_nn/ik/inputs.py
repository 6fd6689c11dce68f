"""What the solver's callers hand it, checked before any reaches the compiled kernel: a target's
numbers, a batch's arrays, joint values. Each either comes back as the contiguous float64 array
the kernel reads or is refused with a ValueError that names it."""

from __future__ import annotations

import numpy as np

_F64 = np.dtype(np.float64)


def vector(value, size: int):
    """``value`` as a contiguous float64 vector of ``size`` numbers, or None."""
    if type(value) is not np.ndarray or value.dtype is not _F64 or not value.flags.c_contiguous:
        try:
            value = np.ascontiguousarray(value, dtype=float)
        except (TypeError, ValueError):
            return None
    return value if value.shape == (size,) else None


def rows(value, shape: tuple, name: str, count: int | None = None) -> np.ndarray:
    """``value`` as a C-contiguous float64 (B, *shape) array (one row given alone: B = 1), or a
    ValueError that names it: a transposed or flattened array is not quietly reshaped."""
    a = np.asarray(value, dtype=float)
    if a.shape == shape:
        a = a[None]
    if a.ndim != 1 + len(shape) or a.shape[1:] != shape or (count is not None and len(a) != count):
        want = f"({count if count is not None else 'B'}, {', '.join(map(str, shape))})"
        raise ValueError(f"{name} must be an array of shape {want}; got shape {a.shape}")
    return np.ascontiguousarray(a)


def joints(value, shape: tuple, name: str) -> np.ndarray:
    """Joint values of ``shape`` (-1: any length), finite and within 1e6 (rad or m), or a
    ValueError that names them: a NaN or huge warm start would otherwise turn continuous joints
    into garbage answers called solved. Cheap for one target: it runs on every tracking call."""
    if type(value) is np.ndarray and value.shape == shape and value.dtype is _F64:
        if value.ndim == 1 and value @ value <= 1e12 and value.flags.c_contiguous:
            return value  # the tracking loop's case
    a = np.asarray(value, dtype=float)
    fits = a.shape == shape if -1 not in shape else (
        a.ndim == len(shape) and all(w in (-1, g) for w, g in zip(shape, a.shape))
    )
    if not fits:
        want = ", ".join("S" if w == -1 else str(w) for w in shape)
        raise ValueError(f"{name} must be joint values of shape ({want}); got shape {a.shape}")
    if not (a @ a <= 1e12 if a.ndim == 1 else np.abs(a).max(initial=0.0) <= 1e6):
        raise ValueError(f"{name} holds joint values that are not finite or beyond 1e6")
    return np.ascontiguousarray(a)


BEYOND = 0.1  # rad (or m) past a limit: no encoder reads that far out; degrees given, most likely


def far_norm2(arm) -> float:
    """A squared norm that no joint set within ``BEYOND`` of the limits exceeds (inf with a
    continuous joint): one dot product screens the arm's joints on every tracking call, and only
    joints past it get the exact check, ``near_limits``."""
    if arm.continuous.any():
        return float("inf")
    reach = np.maximum(np.abs(arm.lower - BEYOND), np.abs(arm.upper + BEYOND))
    return float(reach @ reach)


def near_limits(q: np.ndarray, arm, name: str) -> np.ndarray:
    """``q`` (dof,) unchanged when every joint is within ``BEYOND`` of its limits (a read a
    little past a limit is an encoder's; continuous joints have none), else a ValueError naming
    the first joint far outside: values in degrees where radians are meant land there."""
    far = (q < arm.lower - BEYOND) | (q > arm.upper + BEYOND)
    far &= ~arm.continuous
    if far.any():
        k = int(np.argmax(far))
        unit = "m" if arm.joints[k].type == "prismatic" else "rad"
        raise ValueError(
            f"{name}: {arm.joint_names[k]} = {q[k]:g} lies outside its limits "
            f"[{arm.lower[k]:.4g}, {arm.upper[k]:.4g}] {unit}"
            + (" (degrees given? joints are in radians)" if unit == "rad" else "")
        )
    return q
