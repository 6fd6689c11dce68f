// The network's matrix-vector products in WebAssembly SIMD, built here from this source: a
// module of one function, its bytes written out below (no compiler, no download). Where the
// engine has no WebAssembly SIMD (WebAssembly.validate says so) network.js keeps its plain
// JavaScript loop. Weights stay float32 as trained, promoted to float64 for every product and
// sum, as in the Python kernel (the sums in another order: within 1e-12 of it).
//
//   layer(w, x, y, n4, pairs): for each of 2 * pairs rows, y[o] = sum_i W[o, i] x[i], where the
//   rows start at byte w (float32, each padded to n4 * 4 values, an even number of rows: a zero
//   row after an odd one), x at byte x (float64), y at byte y.

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
const SWAP_HALVES = [...simd(0x0d), 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7];
const PROMOTE_LOW = simd(0x5f); // f64x2.promote_low_f32x4
const F64X2_ADD = simd(0xf0);
const F64X2_MUL = simd(0xf2);
const EXTRACT = (lane) => [...simd(0x21), lane]; // f64x2.extract_lane
const get = (i) => [0x20, i];
const set = (i) => [0x21, i];
const i32 = (v) => [0x41, ...leb(v)]; // small non-negative constants only
const LOOP = [0x03, 0x40];
const END = 0x0b;

// params: w 0, x 1, y 2, n4 3, pairs 4; locals: i 5, xp 6, w1 7 (i32); acc0-3 8-11, wv 12,
// x01 13, x23 14 (v128). Two rows at a time (each x loaded once serves both), four inputs a step.
const W = 0, X = 1, Y = 2, N4 = 3, PAIRS = 4, I = 5, XP = 6, W1 = 7;
const ACC = [8, 9, 10, 11], WV = 12, X01 = 13, X23 = 14;

function accumulate(acc, xv, swap) {
  return [
    ...get(acc), ...get(WV), ...(swap ? [...get(WV), ...SWAP_HALVES] : []), ...PROMOTE_LOW,
    ...get(xv), ...F64X2_MUL, ...F64X2_ADD, ...set(acc),
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
  return [
    ...[2, 3, 0x7f, 7, 0x7b], // locals: 3 i32, 7 v128
    ...LOOP, // pairs of rows
    ...V128_ZERO, ...set(ACC[0]), ...V128_ZERO, ...set(ACC[1]),
    ...V128_ZERO, ...set(ACC[2]), ...V128_ZERO, ...set(ACC[3]),
    ...get(X), ...set(XP),
    ...get(N4), ...set(I),
    ...get(W), ...get(N4), ...i32(16), 0x6c, 0x6a, ...set(W1), // the second row: w + 16 n4
    ...LOOP, // four inputs at a time
    ...get(XP), ...V128_LOAD(0), ...set(X01),
    ...get(XP), ...V128_LOAD(16), ...set(X23),
    ...get(W), ...V128_LOAD(0), ...set(WV),
    ...accumulate(ACC[0], X01, false), ...accumulate(ACC[1], X23, true),
    ...get(W1), ...V128_LOAD(0), ...set(WV),
    ...accumulate(ACC[2], X01, false), ...accumulate(ACC[3], X23, true),
    ...get(W), ...i32(16), 0x6a, ...set(W),
    ...get(W1), ...i32(16), 0x6a, ...set(W1),
    ...get(XP), ...i32(32), 0x6a, ...set(XP),
    ...get(I), ...i32(1), 0x6b, 0x22, I, // i -= 1 (local.tee)
    0x0d, 0, // br_if: the inputs loop while i != 0
    END,
    ...get(W1), ...set(W), // past both rows
    ...store(ACC[0], ACC[1], 0),
    ...store(ACC[2], ACC[3], 8),
    ...get(Y), ...i32(16), 0x6a, ...set(Y),
    ...get(PAIRS), ...i32(1), 0x6b, 0x22, PAIRS,
    0x0d, 0, // br_if: the rows loop while pairs != 0
    END,
    END,
  ];
}

// silu(y, b, pairs, act, poly): y[o] += b[o] for 2 * pairs values (float64, both 16-byte
// aligned), then with act SiLU, y / (1 + exp(-y)), two at a time, exp(-y) = 2**k 2**f as the
// compiled kernel computes it: k whole, |f| <= 1/2, 2**f the 11 coefficients at byte poly
// (float64, highest power first), 2**k built in the float's bits. The same operations, in the
// same order, as network.js's biasAndSilu: the same numbers.
const F64X2_SUB = simd(0xf1);
const F64X2_DIV = simd(0xf3);
const F64X2_MIN = simd(0xf4);
const F64X2_MAX = simd(0xf5);
const F64X2_SPLAT = simd(0x14);
const I64X2_SHL = simd(0xcb);
const I64X2_ADD = simd(0xce);
const I64X2_SPLAT = simd(0x12);
const V128_STORE = [...simd(0x0b), 4, 0];
const F64_LOAD = (offset) => [0x2b, 3, ...leb(offset)];

function f64Const(x) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, x, true);
  return [0x44, ...b];
}

const splat = (x) => [...f64Const(x), ...F64X2_SPLAT];

// params: y 0, b 1, pairs 2, act 3, poly 4; locals: v 5, t 6, r 7, f 8, p 9 (v128)
const SY = 0, SB = 1, SPAIRS = 2, SACT = 3, SPOLY = 4, V = 5, T = 6, R = 7, F = 8, P = 9;

function siluBody() {
  const horner = [...get(SPOLY), ...F64_LOAD(0), ...F64X2_SPLAT, ...set(P)];
  for (let i = 1; i <= 10; i++) {
    horner.push(...get(P), ...get(F), ...F64X2_MUL, ...get(SPOLY), ...F64_LOAD(8 * i));
    horner.push(...F64X2_SPLAT, ...F64X2_ADD, ...set(P));
  }
  return [
    ...[1, 5, 0x7b], // locals: 5 v128
    ...LOOP,
    ...get(SY), ...V128_LOAD(0), ...get(SB), ...V128_LOAD(0), ...F64X2_ADD, ...set(V),
    ...get(SACT), 0x04, 0x40, // if act
    ...get(V), ...splat(-1 / Math.log(2)), ...F64X2_MUL, // -v LOG2E, as the scalar code
    ...splat(-1020), ...F64X2_MAX, ...splat(1020), ...F64X2_MIN, ...set(T),
    ...get(T), ...splat(1.5 * 2 ** 52), ...F64X2_ADD, ...set(R),
    ...get(T), ...get(R), ...splat(1.5 * 2 ** 52), ...F64X2_SUB, ...F64X2_SUB, ...set(F),
    ...horner,
    ...get(V),
    ...splat(1),
    ...get(P),
    ...get(R), ...i32(1023), 0xad, ...I64X2_SPLAT, ...I64X2_ADD, ...i32(52), ...I64X2_SHL,
    ...F64X2_MUL, ...F64X2_ADD, ...F64X2_DIV, ...set(V),
    END,
    ...get(SY), ...get(V), ...V128_STORE,
    ...get(SY), ...i32(16), 0x6a, ...set(SY),
    ...get(SB), ...i32(16), 0x6a, ...set(SB),
    ...get(SPAIRS), ...i32(1), 0x6b, 0x22, SPAIRS,
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
 * module is under 1 KB, below the 4 KB a browser allows on its main thread. */
export function simdLayer(bytes) {
  if (typeof WebAssembly === 'undefined') return null;
  const code = moduleBytes();
  if (!WebAssembly.validate(code)) return null;
  const memory = new WebAssembly.Memory({ initial: Math.max(1, Math.ceil(bytes / 65536)) });
  const instance = new WebAssembly.Instance(new WebAssembly.Module(code), { m: { mem: memory } });
  return { layer: instance.exports.layer, silu: instance.exports.silu, memory };
}
