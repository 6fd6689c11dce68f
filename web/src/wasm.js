// The network's matrix-vector products in WebAssembly SIMD, built here from this source: a
// module of two functions, its bytes written out below (no compiler, no download). Where the
// engine has no WebAssembly SIMD (WebAssembly.validate says so) network.js keeps its plain
// JavaScript loop. Weights are the float32 values as trained, held as float64 (promoted once,
// when the model is loaded: exactly the same values), every product and sum float64, as in the
// Python kernel (the sums in another order: within 1e-12 of it).
//
//   layer(w, x, y, n4, quads): for each of 4 * quads rows, y[o] = sum_i W[o, i] x[i], where W
//   starts at byte w (float64) in blocks of four rows by four inputs (n4 blocks a group of four
//   rows, each block the four rows' four inputs, row after row: 128 bytes; rows past the layer's
//   last are zeros), x at byte x (float64), y at byte y. Each row sums inputs 0-1, 4-5, ... in
//   one pair of lanes and 2-3, 6-7, ... in another, then the two pairs, then the two lanes (the
//   plain loop sums in another order: within 1e-12). Holding the weights as float64 takes twice
//   the memory (200 KB for 128 x 128 hidden layers) and spares a conversion at every product.

function leb(n) {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function section(id, bytes) {
  return [id, ...leb(bytes.length), ...bytes];
}

const SIMD = 0xfd;
const simd = (op) => [SIMD, ...leb(op)];
const V128_LOAD = (offset) => [...simd(0x00), 4, ...leb(offset)];
const V128_ZERO = [...simd(0x0c), ...new Array(16).fill(0)];
const F64X2_ADD = simd(0xf0);
const F64X2_MUL = simd(0xf2);
const EXTRACT = (lane) => [...simd(0x21), lane]; // f64x2.extract_lane
const get = (i) => [0x20, i];
const set = (i) => [0x21, i];
const i32 = (v) => [0x41, ...leb(v)]; // small non-negative constants only
const LOOP = [0x03, 0x40];
const END = 0x0b;

// params: w 0, x 1, y 2, n4 3, quads 4; locals: i 5, xp 6 (i32); acc 7-14, x01 15, x23 16
// (v128). Four rows at a time (each x loaded once serves the four), four inputs a step.
const W = 0, X = 1, Y = 2, N4 = 3, QUADS = 4, I = 5, XP = 6;
const ACC = [7, 8, 9, 10, 11, 12, 13, 14], X01 = 15, X23 = 16;

function accumulate(acc, xv, offset) {
  // acc += W[offset] * xv, two lanes
  return [
    ...get(acc), ...get(W), ...V128_LOAD(offset), ...get(xv), ...F64X2_MUL, ...F64X2_ADD,
    ...set(acc),
  ];
}

function store(a, b, offset) {
  return [
    ...get(Y),
    ...get(a), ...get(b), ...F64X2_ADD, ...set(a),
    ...get(a), ...EXTRACT(0), ...get(a), ...EXTRACT(1), 0xa0, // f64.add
    0x39, 3, ...leb(offset), // f64.store
  ];
}

function body() {
  const zero = [];
  for (const a of ACC) zero.push(...V128_ZERO, ...set(a));
  const step = [];
  for (let r = 0; r < 4; r++) {
    step.push(...accumulate(ACC[2 * r], X01, 32 * r));
    step.push(...accumulate(ACC[2 * r + 1], X23, 32 * r + 16));
  }
  const out = [];
  for (let r = 0; r < 4; r++) out.push(...store(ACC[2 * r], ACC[2 * r + 1], 8 * r));
  return [
    ...[2, 2, 0x7f, 10, 0x7b], // locals: 2 i32, 10 v128
    ...LOOP, // groups of four rows
    ...zero,
    ...get(X), ...set(XP),
    ...get(N4), ...set(I),
    ...LOOP, // four inputs at a time
    ...get(XP), ...V128_LOAD(0), ...set(X01),
    ...get(XP), ...V128_LOAD(16), ...set(X23),
    ...step,
    ...get(W), ...i32(128), 0x6a, ...set(W),
    ...get(XP), ...i32(32), 0x6a, ...set(XP),
    ...get(I), ...i32(1), 0x6b, 0x22, I, // i -= 1 (local.tee)
    0x0d, 0, // br_if: the inputs loop while i != 0
    END,
    ...out,
    ...get(Y), ...i32(32), 0x6a, ...set(Y),
    ...get(QUADS), ...i32(1), 0x6b, 0x22, QUADS,
    0x0d, 0, // br_if: the rows loop while quads != 0
    END,
    END,
  ];
}

// silu(y, b, quads, act, poly): y[o] += b[o] for 4 * quads values (float64, both 16-byte
// aligned), then with act SiLU, y / (1 + exp(-y)), four at a time (two pairs of lanes, their
// steps interleaved), exp(-y) = 2**k 2**f as the compiled kernel computes it: k whole,
// |f| <= 1/2, 2**f the 11 coefficients at byte poly (float64, highest power first), 2**k built
// in the float's bits. The same operations, in the same order, as network.js's biasAndSilu: the
// same numbers (t held to [-1020, 1020] by pmax and pmin, which are the scalar code's
// comparisons: a NaN stays NaN, -0 stays -0).
const F64X2_SUB = simd(0xf1);
const F64X2_DIV = simd(0xf3);
const F64X2_PMIN = simd(0xf6); // b < a ? b : a
const F64X2_PMAX = simd(0xf7); // a < b ? b : a
const F64X2_SPLAT = simd(0x14);
const I64X2_SHL = simd(0xcb);
const I64X2_ADD = simd(0xce);
const I64X2_SPLAT = simd(0x12);
const V128_STORE = (offset) => [...simd(0x0b), 4, ...leb(offset)];
const LOAD64_SPLAT = (offset) => [...simd(0x0a), 3, ...leb(offset)];

function f64Const(x) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, x, true);
  return [0x44, ...b];
}

const splat = (x) => [...f64Const(x), ...F64X2_SPLAT];

// params: y 0, b 1, quads 2, act 3, poly 4; locals (v128): v, t, r, f, p for the first pair of
// lanes 5-9, for the second 10-14
const SY = 0, SB = 1, SQUADS = 2, SACT = 3, SPOLY = 4;
const LANES = [
  { V: 5, T: 6, R: 7, F: 8, P: 9, at: 0 },
  { V: 10, T: 11, R: 12, F: 13, P: 14, at: 16 },
];

function siluBody() {
  const both = (make) => [...make(LANES[0]), ...make(LANES[1])];
  const horner = both(({ P }) => [...get(SPOLY), ...LOAD64_SPLAT(0), ...set(P)]);
  for (let i = 1; i <= 10; i++) {
    horner.push(...both(({ P, F }) => [
      ...get(P), ...get(F), ...F64X2_MUL, ...get(SPOLY), ...LOAD64_SPLAT(8 * i), ...F64X2_ADD,
      ...set(P),
    ]));
  }
  return [
    ...[1, 10, 0x7b], // locals: 10 v128
    ...LOOP,
    ...both(({ V, at }) => [
      ...get(SY), ...V128_LOAD(at), ...get(SB), ...V128_LOAD(at), ...F64X2_ADD, ...set(V),
    ]),
    ...get(SACT), 0x04, 0x40, // if act
    ...both(({ V, T, R, F }) => [
      ...get(V), ...splat(-1 / Math.log(2)), ...F64X2_MUL, // -v LOG2E, as the scalar code
      ...splat(-1020), ...F64X2_PMAX, ...splat(1020), ...F64X2_PMIN, ...set(T),
      ...get(T), ...splat(1.5 * 2 ** 52), ...F64X2_ADD, ...set(R),
      ...get(T), ...get(R), ...splat(1.5 * 2 ** 52), ...F64X2_SUB, ...F64X2_SUB, ...set(F),
    ]),
    ...horner,
    ...both(({ V, R, P }) => [
      ...get(V),
      ...splat(1),
      ...get(P),
      ...get(R), ...i32(1023), 0xad, ...I64X2_SPLAT, ...I64X2_ADD, ...i32(52), ...I64X2_SHL,
      ...F64X2_MUL, ...F64X2_ADD, ...F64X2_DIV, ...set(V),
    ]),
    END,
    ...both(({ V, at }) => [...get(SY), ...get(V), ...V128_STORE(at)]),
    ...get(SY), ...i32(32), 0x6a, ...set(SY),
    ...get(SB), ...i32(32), 0x6a, ...set(SB),
    ...get(SQUADS), ...i32(1), 0x6b, 0x22, SQUADS,
    0x0d, 0,
    END,
    END,
  ];
}

const name = (text) => [text.length, ...Array.from(text, (c) => c.charCodeAt(0))];

export function moduleBytes() {
  const layer = body();
  const silu = siluBody();
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 5, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0]), // (i32 x5) -> ()
    ...section(2, [1, ...name('m'), ...name('mem'), 0x02, 0x00, 1]), // import m.mem, 1 page
    ...section(3, [2, 0, 0]),
    ...section(7, [2, ...name('layer'), 0x00, 0, ...name('silu'), 0x00, 1]),
    ...section(10, [2, ...leb(layer.length), ...layer, ...leb(silu.length), ...silu]),
  ]);
}

/** The compiled functions over a fresh memory of `bytes`, or null where the engine has no
 * WebAssembly SIMD. Returns {layer, silu, memory}. Compiled synchronously (loadModel is): the
 * module is about 1.3 KB, below the 4 KB a browser allows on its main thread. */
export function simdLayer(bytes) {
  if (typeof WebAssembly === 'undefined') return null;
  const code = moduleBytes();
  if (!WebAssembly.validate(code)) return null;
  const memory = new WebAssembly.Memory({ initial: Math.max(1, Math.ceil(bytes / 65536)) });
  const instance = new WebAssembly.Instance(new WebAssembly.Module(code), { m: { mem: memory } });
  return { layer: instance.exports.layer, silu: instance.exports.silu, memory };
}
