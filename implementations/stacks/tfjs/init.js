// Flax linen's init of the exercise, in plain JavaScript (no tfjs): threefry2x32 in uint32 and
// the truncated normal in float32, one rounding per operation, as XLA:CPU computes them.
// A line-by-line port of implementations/stacks/numpy/init.py (read it for the why); that
// recipe equals Flax bit for bit. Loads in Node (require) and in a browser (window.RematInit).
(function (root, factory) {
  if (typeof module === "object" && module.exports) module.exports = factory();
  else root.RematInit = factory();
})(typeof self !== "undefined" ? self : this, function () {
  "use strict";
  const fround = Math.fround;

  // -- uint32 words and float32 bit patterns --------------------------------------------
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  const f32FromBits = (bits) => ((u32[0] = bits >>> 0), f32[0]);
  const bitsOfF32 = (value) => ((f32[0] = value), u32[0]);
  const f64 = new Float64Array(1);
  const w64 = new Uint32Array(f64.buffer); // [low, high] on little-endian machines
  const TINY = f32FromBits(0x00800000); // float32's smallest normal

  // -- threefry2x32 (jax/_src/random/threefry2x32.py) ------------------------------------
  // One round: x0 += x1; x1 = rotl(x1, r) ^ x0. Written out, without arrays: the init calls
  // this once per element, so it must not allocate.
  let out0 = 0;
  let out1 = 0;
  function threefryInPlace(k0, k1, x0, x1) {
    k0 >>>= 0;
    k1 >>>= 0;
    const k2 = (k0 ^ k1 ^ 0x1bd11bda) >>> 0;
    x0 = (x0 + k0) | 0;
    x1 = (x1 + k1) | 0;
    // Blocks 0 to 4: rotations (13, 15, 26, 6) or (17, 29, 16, 24), then the key injection
    // ks[(i + 1) % 3], ks[(i + 2) % 3] + i + 1. `| 0` keeps int32 bits; mod 2**32 throughout.
    x0 = (x0 + x1) | 0; x1 = ((x1 << 13) | (x1 >>> 19)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 15) | (x1 >>> 17)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 26) | (x1 >>> 6)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 6) | (x1 >>> 26)) ^ x0;
    x0 = (x0 + k1) | 0; x1 = (x1 + k2 + 1) | 0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 17) | (x1 >>> 15)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 29) | (x1 >>> 3)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 16) | (x1 >>> 16)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 24) | (x1 >>> 8)) ^ x0;
    x0 = (x0 + k2) | 0; x1 = (x1 + k0 + 2) | 0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 13) | (x1 >>> 19)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 15) | (x1 >>> 17)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 26) | (x1 >>> 6)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 6) | (x1 >>> 26)) ^ x0;
    x0 = (x0 + k0) | 0; x1 = (x1 + k1 + 3) | 0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 17) | (x1 >>> 15)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 29) | (x1 >>> 3)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 16) | (x1 >>> 16)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 24) | (x1 >>> 8)) ^ x0;
    x0 = (x0 + k1) | 0; x1 = (x1 + k2 + 4) | 0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 13) | (x1 >>> 19)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 15) | (x1 >>> 17)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 26) | (x1 >>> 6)) ^ x0;
    x0 = (x0 + x1) | 0; x1 = ((x1 << 6) | (x1 >>> 26)) ^ x0;
    x0 = (x0 + k2) | 0; x1 = (x1 + k0 + 5) | 0;
    out0 = x0 >>> 0;
    out1 = x1 >>> 0;
  }

  // threefry2x32 (jax/_src/random/threefry2x32.py): key (k0, k1), counter (x0, x1).
  function threefry2x32(k0, k1, x0, x1) {
    threefryInPlace(k0, k1, x0, x1);
    return [out0, out1];
  }

  // Flax folds SHA-1(b"Dense_k" + counter)'s first word into PRNGKey(seed) for each kernel
  // (implementations/stacks/numpy/keys.py); constants, since the scope names are.
  const KERNEL_FOLD = [0xb2b71315, 0x06a9f0dc];

  // jax.random.PRNGKey(seed) is (0, seed mod 2**32); seed a BigInt in [0, 2**63).
  const prngKey = (seed) => [0, Number(BigInt.asUintN(32, seed))];
  const foldIn = (key, data) => threefry2x32(key[0], key[1], 0, data);

  // -- float32 arithmetic as XLA:CPU does it ------------------------------------------------
  function nextToward(value, up) {
    // The neighbouring float64 of a non-zero value, toward +inf (up) or -inf.
    f64[0] = value;
    const away = value > 0 === up; // moving away from zero increments the magnitude bits
    if (away) {
      w64[0] = (w64[0] + 1) >>> 0;
      if (w64[0] === 0) w64[1] += 1;
    } else {
      if (w64[0] === 0) w64[1] -= 1;
      w64[0] = (w64[0] - 1) >>> 0;
    }
    return f64[0];
  }

  function fma(a, b, c) {
    // a*b is exact in float64; the sum rounds once there, then again to float32. Two roundings
    // differ from one only where the float64 sum is exactly halfway between two float32s, or
    // in float32's subnormal range: those are redone with round-to-odd, which is exact.
    const product = a * b;
    let total = product + c;
    const out = fround(total);
    f64[0] = total;
    if ((w64[0] & 0x1fffffff) !== 0x10000000 && !(Math.abs(out) < TINY)) return out;
    const virtual = total - product;
    const error = product - (total - virtual) + (c - virtual);
    f64[0] = total;
    if (error !== 0 && (w64[0] & 1) === 0) total = nextToward(total, error > 0);
    return fround(total);
  }

  const flush = (x) => (Math.abs(x) < TINY ? (Object.is(x, -0) || x < 0 ? -0 : 0) : x);
  const horner = (t, c) => {
    let poly = fma(t, c[0], c[1]);
    for (let i = 2; i < c.length; i++) poly = fma(poly, t, c[i]);
    return poly;
  };
  const constants = (bits) => bits.map(f32FromBits);

  // Eigen's plog_float (Cephes' logf), which XLA:CPU inlines for `log`.
  const LOG_P = constants([
    0x3d9021bb, 0xbdebd1b8, 0x3def251a, 0xbdfe5d4f, 0x3e11e9bf, 0xbe2aae50, 0x3e4cceac,
    0xbe7ffffc, 0x3eaaaaaa,
  ]);
  const LOG_Q1 = f32FromBits(0xb95e8083);
  const LOG_Q2 = f32FromBits(0x3f318000);
  const SQRT_HALF = f32FromBits(0x3f3504f3);

  function log(z) {
    const safe = z > TINY ? z : TINY;
    const bits = bitsOfF32(safe);
    let exponent = fround((bits >>> 23) - 126);
    const mantissa = f32FromBits((bits & 0x807fffff) | 0x3f000000);
    const small = mantissa < SQRT_HALF;
    const x = fround(fround(mantissa - 1) + (small ? mantissa : 0));
    if (small) exponent = fround(exponent - 1);
    const x2 = fround(x * x);
    const x3 = fround(x2 * x);
    const p = LOG_P;
    let y = fma(fma(x, p[0], p[1]), x, p[2]);
    const y1 = fma(fma(x, p[3], p[4]), x, p[5]);
    const y2 = fma(fma(x, p[6], p[7]), x, p[8]);
    y = fma(fma(y, x3, y1), x3, y2);
    y = fma(y, x3, fround(exponent * LOG_Q1));
    let result = fround(fround(fround(x - fround(x2 * 0.5)) + y) + fround(exponent * LOG_Q2));
    if (z === 0) result = -Infinity;
    if (z === Infinity) result = Infinity;
    if (z < 0 || Number.isNaN(z)) result = NaN;
    return result;
  }

  // XLA's log1p (xla/codegen/intrinsic/log1p.cc), after Cephes.
  const LOG1P_SMALL = f32FromBits(0x3ed413cd);
  const LOG1P_NUM = constants([
    0x383de04b, 0x3eff40c5, 0x40d284fa, 0x41ef4b9c, 0x4273cc76, 0x426473ad, 0x41a05101,
  ]);
  const LOG1P_DEN = constants([
    0x417101ad, 0x42a6185b, 0x435dc32d, 0x439a8ca3, 0x43586d8a, 0x42707982,
  ]);

  function log1p(y) {
    let result;
    if (Math.abs(y) < LOG1P_SMALL) {
      const y2 = fround(y * y);
      let denominator = fround(y + LOG1P_DEN[0]);
      for (let i = 1; i < LOG1P_DEN.length; i++) denominator = fma(denominator, y, LOG1P_DEN[i]);
      const ratio = fround(horner(y, LOG1P_NUM) / denominator);
      result = fround(y + fround(fround(fround(y * y2) * ratio) - fround(y2 * 0.5)));
    } else {
      result = log(fround(y + 1));
    }
    return flush(result);
  }

  // chlo.erf_inv for float32 (M. Giles' approximation), as stablehlo expands it.
  const ERF_INV_CENTRAL = constants([
    0x32f16588, 0x34b84b36, 0xb66c7357, 0xb6935ac1, 0x396532db, 0xbaa45408, 0xbb88e4ef,
    0x3e7c8f63, 0x3fc02e2f,
  ]);
  const ERF_INV_TAIL = constants([
    0xb951f09b, 0x38d3b56b, 0x3ab0dc72, 0xbb70bde7, 0x3bbc127b, 0xbbf9c5d7, 0x3c1aa57e,
    0x3f8036db, 0x40354f7e,
  ]);

  function erfInv(x) {
    x = flush(x);
    const t = log1p(fround(x * -x));
    let poly =
      t > -5
        ? horner(fround(-2.5 - t), ERF_INV_CENTRAL)
        : horner(fround(fround(Math.sqrt(-t)) + -3), ERF_INV_TAIL);
    if (Math.abs(x) === 1) poly = Infinity;
    return flush(fround(x * poly));
  }

  // -- the truncated normal and lecun_normal ---------------------------------------------------
  const LOWER_ERF = f32FromBits(0xbf745a18); // erf(-2 / sqrt 2) in float32
  const UPPER_ERF = f32FromBits(0x3f745a18);
  const SPAN = fround(UPPER_ERF - LOWER_ERF);
  const LOW = f32FromBits(0xbfffffff); // nextafter(-2, inf)
  const HIGH = f32FromBits(0x3fffffff);
  const SQRT2 = f32FromBits(0x3fb504f3);
  const TRUNCATED_STD = f32FromBits(0x3f612f26); // 0.87962566103423978

  function truncatedNormal(bits) {
    const unit = fround(f32FromBits((bits >>> 9) | 0x3f800000) - 1);
    const u = Math.max(LOWER_ERF, fma(unit, SPAN, LOWER_ERF));
    const z = fround(erfInv(u) * SQRT2);
    return Math.min(Math.max(z, LOW), HIGH);
  }

  function lecunKernel(key, rows, cols) {
    const stddev = fround(fround(Math.sqrt(fround(1 / rows))) / TRUNCATED_STD);
    const out = new Float32Array(rows * cols);
    for (let n = 0; n < out.length; n++) {
      threefryInPlace(key[0], key[1], 0, n);
      out[n] = fround(truncatedNormal((out0 ^ out1) >>> 0) * stddev);
    }
    return out;
  }

  // Flax's parameters for Dense(F) -> relu -> Dense(F) on a (D,) input; seed a BigInt.
  function canonicalParams(seed, dim, features) {
    const root = prngKey(seed);
    return {
      w1: lecunKernel(foldIn(root, KERNEL_FOLD[0]), dim, features),
      b1: new Float32Array(features),
      w2: lecunKernel(foldIn(root, KERNEL_FOLD[1]), features, features),
      b2: new Float32Array(features),
    };
  }

  return { canonicalParams, threefry2x32, truncatedNormal, fma, log, log1p, erfInv };
});
