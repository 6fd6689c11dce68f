// Forward kinematics and the rotation helpers: the port of robot_ik_nn/ik/forward.py. Every
// function reads and writes the solver's preallocated Float64Arrays (kernel.js): matrices are
// row-major (R[3 a + b]), the Jacobian is 6 rows of dof (J[r * dof + j]).

// sin r and 1 - cos r on |r| <= pi/4 as forward.py computes them (its polynomials, the same
// coefficients; no call into the engine's Math.sin and Math.cos, which cost more here)
const S0 = -0.1666666666666666, S1 = 0.008333333333330951, S2 = -0.000198412698367143;
const S3 = 2.7557316074995272e-6, S4 = -2.505112524744165e-8, S5 = 1.591760347662008e-10;
const C0 = 0.04166666666666665, C1 = -0.0013888888888887638, C2 = 2.480158729905842e-5;
const C3 = -2.755731741771678e-7, C4 = 2.0876176769798853e-9, C5 = -1.1384865299850569e-11;
const ROUND = 1.5 * 2 ** 52; // x + ROUND - ROUND: x rounded to a whole number
const TWO_OVER_PI = 2 / Math.PI;
// pi / 2 in three parts whose products with a small whole number are exact (Cody and Waite)
const PIO2_1 = 1.5707963267341256, PIO2_2 = 6.0771005065061922e-11, PIO2_3 = 2.0222662487959506e-21;

/** sin x into SC[0] and 1 - cos x into SC[1] (|x| below about 1e5, as LM meets joint angles). */
export const SC = new Float64Array(2);
export function sincos(x) {
  const turns = x * TWO_OVER_PI + ROUND - ROUND;
  const r = x - turns * PIO2_1 - turns * PIO2_2 - turns * PIO2_3;
  const r2 = r * r;
  const sr = r + r * r2 * (S0 + r2 * (S1 + r2 * (S2 + r2 * (S3 + r2 * (S4 + r2 * S5)))));
  const cm = r2 * (0.5 - r2 * (C0 + r2 * (C1 + r2 * (C2 + r2 * (C3 + r2 * (C4 + r2 * C5))))));
  const quarter = turns & 3; // sin and cos of x from those of r: turned by quarter * pi / 2
  const odd = (quarter & 1) === 1;
  const a = odd ? 1 - cm : sr;
  const b = odd ? sr : 1 - cm;
  SC[0] = quarter >= 2 ? -a : a;
  SC[1] = quarter === 0 ? cm : quarter === 3 ? 1 - b : 1 + b;
}

/** Tip position k.p and rotation k.R for joints q; with wantJac also the geometric Jacobian J
 * (rows vx vy vz wx wy wz). */
export function fk(k, q, J, wantJac) {
  const n = k.n;
  const A = k.A;
  const B = k.B;
  const C = k.C;
  const P = k.P;
  const AK = k.AK;
  const prism = k.prism;
  const ox = k.ox;
  const oy = k.oy;
  const oz = k.oz;
  const zxs = k.zxs;
  const zys = k.zys;
  const zzs = k.zzs;
  let r0 = 1, r1 = 0, r2 = 0, r3 = 0, r4 = 1, r5 = 0, r6 = 0, r7 = 0, r8 = 1;
  let x = 0, y = 0, z = 0;
  for (let j = 0; j < n; j++) {
    const t = 3 * j;
    const a = 9 * j;
    const px = P[t], py = P[t + 1], pz = P[t + 2];
    x += r0 * px + r1 * py + r2 * pz;
    y += r3 * px + r4 * py + r5 * pz;
    z += r6 * px + r7 * py + r8 * pz;
    const ax = AK[t], ay = AK[t + 1], az = AK[t + 2];
    const zx = r0 * ax + r1 * ay + r2 * az;
    const zy = r3 * ax + r4 * ay + r5 * az;
    const zz = r6 * ax + r7 * ay + r8 * az;
    if (wantJac) {
      ox[j] = x; oy[j] = y; oz[j] = z;
      zxs[j] = zx; zys[j] = zy; zzs[j] = zz;
    }
    let m0, m1, m2, m3, m4, m5, m6, m7, m8;
    if (prism[j] === 1) {
      m0 = A[a]; m1 = A[a + 1]; m2 = A[a + 2];
      m3 = A[a + 3]; m4 = A[a + 4]; m5 = A[a + 5];
      m6 = A[a + 6]; m7 = A[a + 7]; m8 = A[a + 8];
      const d = q[j];
      x += zx * d;
      y += zy * d;
      z += zz * d;
    } else {
      sincos(q[j]);
      const s = SC[0];
      const c = SC[1];
      m0 = A[a] + s * B[a] + c * C[a];
      m1 = A[a + 1] + s * B[a + 1] + c * C[a + 1];
      m2 = A[a + 2] + s * B[a + 2] + c * C[a + 2];
      m3 = A[a + 3] + s * B[a + 3] + c * C[a + 3];
      m4 = A[a + 4] + s * B[a + 4] + c * C[a + 4];
      m5 = A[a + 5] + s * B[a + 5] + c * C[a + 5];
      m6 = A[a + 6] + s * B[a + 6] + c * C[a + 6];
      m7 = A[a + 7] + s * B[a + 7] + c * C[a + 7];
      m8 = A[a + 8] + s * B[a + 8] + c * C[a + 8];
    }
    const n0 = r0 * m0 + r1 * m3 + r2 * m6;
    const n1 = r0 * m1 + r1 * m4 + r2 * m7;
    const n2 = r0 * m2 + r1 * m5 + r2 * m8;
    const n3 = r3 * m0 + r4 * m3 + r5 * m6;
    const n4 = r3 * m1 + r4 * m4 + r5 * m7;
    const n5 = r3 * m2 + r4 * m5 + r5 * m8;
    const n6 = r6 * m0 + r7 * m3 + r8 * m6;
    const n7 = r6 * m1 + r7 * m4 + r8 * m7;
    const n8 = r6 * m2 + r7 * m5 + r8 * m8;
    r0 = n0; r1 = n1; r2 = n2; r3 = n3; r4 = n4; r5 = n5; r6 = n6; r7 = n7; r8 = n8;
  }
  const t = 3 * n;
  const a = 9 * n;
  const p = k.p;
  const R = k.R;
  p[0] = x + r0 * P[t] + r1 * P[t + 1] + r2 * P[t + 2];
  p[1] = y + r3 * P[t] + r4 * P[t + 1] + r5 * P[t + 2];
  p[2] = z + r6 * P[t] + r7 * P[t + 1] + r8 * P[t + 2];
  for (let c = 0; c < 3; c++) {
    const t0 = A[a + c], t1 = A[a + 3 + c], t2 = A[a + 6 + c];
    R[c] = r0 * t0 + r1 * t1 + r2 * t2;
    R[3 + c] = r3 * t0 + r4 * t1 + r5 * t2;
    R[6 + c] = r6 * t0 + r7 * t1 + r8 * t2;
  }
  if (wantJac) {
    const px = p[0], py = p[1], pz = p[2];
    for (let j = 0; j < n; j++) {
      const zx = zxs[j], zy = zys[j], zz = zzs[j];
      if (prism[j] === 1) {
        J[j] = zx; J[n + j] = zy; J[2 * n + j] = zz;
        J[3 * n + j] = 0; J[4 * n + j] = 0; J[5 * n + j] = 0;
      } else {
        const dx = px - ox[j], dy = py - oy[j], dz = pz - oz[j];
        J[j] = zy * dz - zz * dy;
        J[n + j] = zz * dx - zx * dz;
        J[2 * n + j] = zx * dy - zy * dx;
        J[3 * n + j] = zx; J[4 * n + j] = zy; J[5 * n + j] = zz;
      }
    }
  }
}

/** Where rotationError and axisError leave the angle (not a return value: V8 boxes a double
 * returned from a call it does not inline). */
export const ANGLE = new Float64Array(1);

/** Axis * angle turning R onto Rt (base frame) into e[at..at+3], the angle into ANGLE[0]. */
export function rotationError(R, Rt, e, at) {
  const e00 = Rt[0] * R[0] + Rt[1] * R[1] + Rt[2] * R[2];
  const e11 = Rt[3] * R[3] + Rt[4] * R[4] + Rt[5] * R[5];
  const e22 = Rt[6] * R[6] + Rt[7] * R[7] + Rt[8] * R[8];
  const e01 = Rt[0] * R[3] + Rt[1] * R[4] + Rt[2] * R[5];
  const e10 = Rt[3] * R[0] + Rt[4] * R[1] + Rt[5] * R[2];
  const e02 = Rt[0] * R[6] + Rt[1] * R[7] + Rt[2] * R[8];
  const e20 = Rt[6] * R[0] + Rt[7] * R[1] + Rt[8] * R[2];
  const e12 = Rt[3] * R[6] + Rt[4] * R[7] + Rt[5] * R[8];
  const e21 = Rt[6] * R[3] + Rt[7] * R[4] + Rt[8] * R[5];
  const vx = e21 - e12, vy = e02 - e20, vz = e10 - e01;
  const sin2 = Math.sqrt(vx * vx + vy * vy + vz * vz);
  const cos = (e00 + e11 + e22 - 1) / 2;
  const angle = Math.atan2(sin2 / 2, cos);
  if (cos >= -0.99) {
    const scale = sin2 > 1e-9 ? angle / sin2 : 0.5;
    e[at] = vx * scale; e[at + 1] = vy * scale; e[at + 2] = vz * scale;
    ANGLE[0] = angle;
    return;
  }
  // near pi: the axis from the symmetric part, its sign from the antisymmetric part
  let ax, ay, az;
  if (e00 >= e11 && e00 >= e22) {
    ax = e00 - cos; ay = (e10 + e01) / 2; az = (e20 + e02) / 2;
  } else if (e11 >= e22) {
    ax = (e01 + e10) / 2; ay = e11 - cos; az = (e21 + e12) / 2;
  } else {
    ax = (e02 + e20) / 2; ay = (e12 + e21) / 2; az = e22 - cos;
  }
  const norm = Math.max(Math.sqrt(ax * ax + ay * ay + az * az), 1e-12);
  const sign = ax * vx + ay * vy + az * vz < 0 ? -1 : 1;
  const f = (sign * angle) / norm;
  e[at] = ax * f; e[at + 1] = ay * f; e[at + 2] = az * f;
  ANGLE[0] = angle;
}

/** Axis * angle turning the tool's axis col (a column of R) onto the target's, the rotation
 * about it left free, into e[at..at+3]; the angle between the two axes into ANGLE[0]. */
export function axisError(R, Rt, col, e, at) {
  const ax = R[col], ay = R[3 + col], az = R[6 + col];
  const bx = Rt[col], by = Rt[3 + col], bz = Rt[6 + col];
  let vx = ay * bz - az * by, vy = az * bx - ax * bz, vz = ax * by - ay * bx;
  let sin = Math.sqrt(vx * vx + vy * vy + vz * vz);
  const angle = Math.atan2(sin, ax * bx + ay * by + az * bz);
  if (sin < 1e-12) {
    if (Math.abs(az) < 0.9) {
      vx = ay; vy = -ax; vz = 0;
    } else {
      vx = 0; vy = az; vz = -ay;
    }
    sin = Math.sqrt(vx * vx + vy * vy + vz * vz);
  }
  const f = angle / sin;
  e[at] = vx * f; e[at + 1] = vy * f; e[at + 2] = vz * f;
  ANGLE[0] = angle;
}

/** A quaternion (x y z w, normalised here) into R (row-major 9). */
export function quatToMatrix(quat, R) {
  const norm = Math.sqrt(quat[0] ** 2 + quat[1] ** 2 + quat[2] ** 2 + quat[3] ** 2);
  const x = quat[0] / norm, y = quat[1] / norm, z = quat[2] / norm, w = quat[3] / norm;
  R[0] = 1 - 2 * (y * y + z * z); R[1] = 2 * (x * y - z * w); R[2] = 2 * (x * z + y * w);
  R[3] = 2 * (x * y + z * w); R[4] = 1 - 2 * (x * x + z * z); R[5] = 2 * (y * z - x * w);
  R[6] = 2 * (x * z - y * w); R[7] = 2 * (y * z + x * w); R[8] = 1 - 2 * (x * x + y * y);
}

/** R (row-major 9) -> [x, y, z, w] with w >= 0, the largest component taken first. */
export function matrixToQuat(R) {
  const t = R[0] + R[4] + R[8];
  let q;
  if (t > 0) {
    const s = 2 * Math.sqrt(1 + t);
    q = [(R[7] - R[5]) / s, (R[2] - R[6]) / s, (R[3] - R[1]) / s, s / 4];
  } else {
    const d = [R[0], R[4], R[8]];
    const i = d[0] >= d[1] && d[0] >= d[2] ? 0 : d[1] >= d[2] ? 1 : 2;
    const j = (i + 1) % 3;
    const l = (i + 2) % 3;
    const s = 2 * Math.sqrt(Math.max(1 + d[i] - d[j] - d[l], 0));
    q = [0, 0, 0, 0];
    q[i] = s / 4;
    q[j] = (R[3 * j + i] + R[3 * i + j]) / s;
    q[l] = (R[3 * l + i] + R[3 * i + l]) / s;
    q[3] = (R[3 * l + j] - R[3 * j + l]) / s;
  }
  return q[3] >= 0 ? q : [-q[0], -q[1], -q[2], -q[3]];
}
