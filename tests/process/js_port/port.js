#!/usr/bin/env node
// A process port in plain Node.js (no npm packages), written from docs/PROTOCOL.md alone, as an
// outside porter would: the exercise's MLP by hand, its own bookkeeping as the instrument, and
// its own instrument family and expectations declared in hello (the suite knows nothing of it).
//
// Flags: --name=NAME (default js_plain); --variant=V, for the suite's tests:
//   cheat          keeps h and a under the checkpoint, but reports what an honest one would
//   keeper         keeps h and a under the checkpoint, and says so
//   ignore_policy  reads `checkpoint` only: every policy but none runs as full
//   contradicts    declares that full keeps a too (against the policy vocabulary)
"use strict";
const readline = require("readline");

const args = process.argv.slice(2);
const flag = (key, fallback) => {
  const found = args.find((a) => a.startsWith(`--${key}=`));
  return found ? found.slice(key.length + 3) : fallback;
};
const NAME = flag("name", "js_plain");
const VARIANT = flag("variant", "");

class PortError extends Error {
  constructor(type, message) {
    super(message);
    this.type = type;
  }
}

// ---------------------------------------------------------------- values (PROTOCOL.md, Values)
const f32 = Math.fround;

function integer(value, name) {
  if (typeof value === "boolean") throw new PortError("ValueError", `${name} must be an integer, not a boolean`);
  if (typeof value !== "string") throw new PortError("TypeError", `${name} must be an integer (a decimal string), got ${JSON.stringify(value)}`);
  if (!/^-?[0-9]+$/.test(value)) throw new PortError("ValueError", `${name} must be an integer, got ${value}`);
  return BigInt(value);
}

function decodeFloats(value, name) {
  if (!value || typeof value !== "object" || value.dtype !== "float32" || !Array.isArray(value.shape)) {
    throw new PortError("ProtocolError", `${name} must be a float32 array object`);
  }
  const bytes = Buffer.from(value.data, "base64");
  const count = value.shape.reduce((a, b) => a * b, 1);
  if (bytes.length !== 4 * count) throw new PortError("ProtocolError", `${name}: ${bytes.length} bytes for shape ${value.shape}`);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = bytes.readFloatLE(4 * i);
  return out;
}

function encode(values, shape) {
  const bytes = Buffer.alloc(4 * values.length);
  for (let i = 0; i < values.length; i++) bytes.writeFloatLE(values[i], 4 * i);
  return { dtype: "float32", shape, data: bytes.toString("base64") };
}

// ---------------------------------------------------------------- checks (PROTOCOL.md, Errors)
const MAX_ELEMENTS = 2n ** 31n - 1n;

function checkSeed(value) {
  const seed = integer(value, "seed");
  if (seed < 0n) throw new PortError("ValueError", `seed must be non-negative, got ${seed}`);
  if (seed > 2n ** 63n - 1n) throw new PortError("ValueError", `seed must be at most 2**63 - 1, got ${seed}`);
  return seed;
}

function checkFeatures(value) {
  const features = integer(value, "features");
  if (features < 1n) throw new PortError("ValueError", `features must be at least 1, got ${features}`);
  if (features > 46340n) throw new PortError("SizeLimitError", `features=${features} is too large: at most 46340`);
  return features;
}

function checkDim(value) {
  const dim = integer(value, "dim");
  if (dim < 1n) throw new PortError("ValueError", `dim must be at least 1, got ${dim}`);
  if (dim > MAX_ELEMENTS) throw new PortError("SizeLimitError", `dim=${dim} is too large: at most 2**31 - 1`);
  return dim;
}

function checkXShape(value) {
  if (!value || typeof value !== "object" || !Array.isArray(value.shape)) throw new PortError("TypeError", "x must be an array object");
  if (value.dtype !== "float32") throw new PortError("TypeError", `x must be real float32, got dtype ${value.dtype}`);
  if (value.shape.length !== 1) throw new PortError("ValueError", `x must be a vector (D,), got shape [${value.shape}]`);
  if (value.shape[0] < 1) throw new PortError("ValueError", "x must not be empty (D >= 1)");
  return BigInt(value.shape[0]);
}

function checkSizes(D, F, maxBytes, dName) {
  const what = `features=${F} with ${dName} of D=${D}`;
  if (D * F > MAX_ELEMENTS) throw new PortError("SizeLimitError", `${what}: the (D, F) kernel passes 2**31 - 1 elements`);
  const bytes = 4n * (D * F + F * F + 2n * F) + 4n * (D + 3n * F);
  const limit = integer(maxBytes, "max_bytes");
  if (bytes > limit) throw new PortError("SizeLimitError", `${what} needs ${bytes} bytes, past the limit of ${limit}`);
}

function checkXValues(value) {
  const x = decodeFloats(value, "x");
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i])) throw new PortError("ValueError", `x must be finite in float32; x[${i}] = ${x[i]}`);
  }
  return x;
}

// ---------------------------------------------------------------- the seeded init
const TWO32 = 2 ** 32;
const add32 = (a, b) => (a + b) % TWO32;
const rotl = (v, r) => ((v << r) | (v >>> (32 - r))) >>> 0;

function threefry(k0, k1, x0, x1) {
  const ks = [k0, k1, (k0 ^ k1 ^ 0x1bd11bda) >>> 0];
  x0 = add32(x0, ks[0]);
  x1 = add32(x1, ks[1]);
  const rotations = [[13, 15, 26, 6], [17, 29, 16, 24]];
  for (let i = 0; i < 5; i++) {
    for (const r of rotations[i % 2]) {
      x0 = add32(x0, x1);
      x1 = (rotl(x1, r) ^ x0) >>> 0;
    }
    x0 = add32(x0, ks[(i + 1) % 3]);
    x1 = add32(add32(x1, ks[(i + 2) % 3]), i + 1);
  }
  return [x0, x1];
}

// float32 <-> bits, and the one-rounding fma (PROTOCOL.md: in float64, then an exact fix-up).
const word = new Float32Array(1);
const wordBits = new Uint32Array(word.buffer);
const fromBits = (u) => ((wordBits[0] = u >>> 0), word[0]);
const toBits = (f) => ((word[0] = f), wordBits[0]);
const double = new Float64Array(1);
const doubleBits = new BigUint64Array(double.buffer);

function fma(a, b, c) {
  // a*b is exact in float64; round the sum to odd in float64 (TwoSum gives its error), then
  // to float32: one correct rounding.
  const p = a * b;
  const s = p + c;
  if (!Number.isFinite(s)) return f32(s);
  const v = s - p;
  const err = p - (s - v) + (c - v);
  double[0] = s;
  if (err !== 0 && (doubleBits[0] & 1n) === 0n) {
    doubleBits[0] += (err > 0) === (s > 0) ? 1n : -1n;
    if (s === 0) double[0] = err > 0 ? Number.MIN_VALUE : -Number.MIN_VALUE;
  }
  return f32(double[0]);
}

const TINY = fromBits(0x00800000);
const ftz = (v) => (Math.abs(v) < TINY ? (Object.is(v, -0) || v < 0 ? -0 : 0) : v);
const K = (hex) => fromBits(hex);
const C = [0x32f16588, 0x34b84b36, 0xb66c7357, 0xb6935ac1, 0x396532db, 0xbaa45408, 0xbb88e4ef, 0x3e7c8f63, 0x3fc02e2f].map(K);
const T = [0xb951f09b, 0x38d3b56b, 0x3ab0dc72, 0xbb70bde7, 0x3bbc127b, 0xbbf9c5d7, 0x3c1aa57e, 0x3f8036db, 0x40354f7e].map(K);
const N = [0x383de04b, 0x3eff40c5, 0x40d284fa, 0x41ef4b9c, 0x4273cc76, 0x426473ad, 0x41a05101].map(K);
const Dq = [0x417101ad, 0x42a6185b, 0x435dc32d, 0x439a8ca3, 0x43586d8a, 0x42707982].map(K);
const P = [0x3d9021bb, 0xbdebd1b8, 0x3def251a, 0xbdfe5d4f, 0x3e11e9bf, 0xbe2aae50, 0x3e4cceac, 0xbe7ffffc, 0x3eaaaaaa].map(K);
const A = K(0xbf745a18), B = K(0x3f745a18), Q1 = K(0xb95e8083), Q2 = K(0x3f318000);
const SQRT_HALF = K(0x3f3504f3), LOG1P_SMALL = K(0x3ed413cd), SQRT2 = K(0x3fb504f3);
const LOW = K(0xbfffffff), HIGH = K(0x3fffffff);

function horner(t, cs) {
  let p = fma(t, cs[0], cs[1]);
  for (let k = 2; k < cs.length; k++) p = fma(p, t, cs[k]);
  return p;
}

function logFar(y) {
  let z = f32(y + 1);
  if (!(z > TINY)) z = TINY;
  const zb = toBits(z);
  let e = (zb >>> 23) - 126;
  const mant = fromBits(((zb & 0x807fffff) | 0x3f000000) >>> 0);
  const small = mant < SQRT_HALF;
  let x = f32(mant - 1);
  x = f32(x + (small ? mant : 0));
  if (small) e -= 1;
  const x2 = f32(x * x);
  const x3 = f32(x2 * x);
  let pa = fma(fma(x, P[0], P[1]), x, P[2]);
  const pb = fma(fma(x, P[3], P[4]), x, P[5]);
  const pc = fma(fma(x, P[6], P[7]), x, P[8]);
  pa = fma(fma(pa, x3, pb), x3, pc);
  pa = fma(pa, x3, f32(e * Q1));
  const r = f32(f32(x - f32(x2 * 0.5)) + pa);
  return f32(r + f32(e * Q2));
}

function log1pNear(y) {
  const y2 = f32(y * y);
  const n = horner(y, N);
  let d = f32(y + Dq[0]);
  for (let k = 1; k < Dq.length; k++) d = fma(d, y, Dq[k]);
  const ratio = f32(n / d);
  const s = f32(f32(f32(y * y2) * ratio) - f32(y2 * 0.5));
  return f32(y + s);
}

function element(bits) {
  const unit = f32(fromBits(((bits >>> 9) | 0x3f800000) >>> 0) - 1);
  const u = Math.max(A, fma(unit, f32(B - A), A));
  const x = ftz(u);
  const y = f32(x * -x);
  const t = ftz(Math.abs(y) < LOG1P_SMALL ? log1pNear(y) : logFar(y));
  let p = t > -5 ? horner(f32(-2.5 - t), C) : horner(f32(f32(Math.sqrt(-t)) - 3), T);
  if (Math.abs(x) === 1) p = Infinity;
  const v = ftz(f32(x * p));
  return Math.min(Math.max(f32(v * SQRT2), LOW), HIGH);
}

function kernel(key, rows, cols, fanIn) {
  const scale = f32(f32(Math.sqrt(f32(1 / fanIn))) / f32(0.87962566103423978));
  const out = new Float32Array(rows * cols);
  for (let n = 0; n < rows * cols; n++) {
    const [y0, y1] = threefry(key[0], key[1], 0, n);
    out[n] = f32(element((y0 ^ y1) >>> 0) * scale);
  }
  return out;
}

function canonicalParams(seed, D, F) {
  const root = [0, Number(seed % 2n ** 32n)];
  const k1 = threefry(root[0], root[1], 0, 0xb2b71315);
  const k2 = threefry(root[0], root[1], 0, 0x06a9f0dc);
  return { D, F, w1: kernel(k1, D, F, D), b1: new Float32Array(F), w2: kernel(k2, F, F, F), b2: new Float32Array(F) };
}

// ---------------------------------------------------------------- the MLP and its bookkeeping
// Policies: what the forward pass keeps (docs/PORTING.md, Remat policies). Everything else the
// backward pass recomputes from x.
const KEEPS = { none: ["h", "a"], full: [], save_dots: ["d1"], save_named: ["h"] };

// The instrument: the forward ops run (by name), and the gradient's own matmuls, counted where
// they run; a record reads what one phase (forward, backward) added.
const ops = { matmul: 0, add: 0, relu: 0 };
let gradientMatmuls = 0;
const snapshot = () => ({ ...ops, gradient: gradientMatmuls });
function ranSince(before) {
  const ran = {};
  for (const name of Object.keys(ops)) if (ops[name] > before[name]) ran[name] = ops[name] - before[name];
  return { forwardOps: ran, gradientMatmuls: gradientMatmuls - before.gradient };
}

function hidden(p, x) {
  ops.matmul += 1;
  ops.add += 1;
  ops.relu += 1;
  const d1 = new Float32Array(p.F), h = new Float32Array(p.F), a = new Float32Array(p.F);
  for (let j = 0; j < p.F; j++) {
    let s = 0;
    for (let i = 0; i < p.D; i++) s += x[i] * p.w1[i * p.F + j];
    d1[j] = s;
    h[j] = f32(d1[j] + p.b1[j]);
    a[j] = h[j] > 0 ? h[j] : 0;
  }
  return { d1, h, a };
}

function forward(p, x) {
  const { d1, h, a } = hidden(p, x);
  ops.matmul += 1;
  ops.add += 1;
  const y = new Float32Array(p.F);
  for (let j = 0; j < p.F; j++) {
    let s = 0;
    for (let i = 0; i < p.F; i++) s += a[i] * p.w2[i * p.F + j];
    y[j] = f32(s + p.b2[j]);
  }
  return { d1, h, a, y };
}

// Composition (protocol 3's `nesting`): each case runs full remat, composed. A nested case's
// outer region reruns its whole body in backward (the inner region's forward), then the inner
// region reruns its hidden layer, as a generic nested recompute does.
const COMPOSITIONS = {
  once: "one region: keep x, rerun the hidden layer in backward",
  twice: "the region wrapped again: the outer keeps x and reruns its body, the inner region",
  under_trainer: "a trainer's region over the whole model call, which holds the region",
};
const NESTED_RERUNS_BODY = ["twice", "under_trainer"];
const COMPOSED = {
  once: { roles: ["x"], forward_matmuls: 2, rerun_matmuls: 1, why: "x kept; the backward pass reruns x @ W1, the bias and relu" },
  twice: {
    roles: ["x"],
    forward_matmuls: 2,
    rerun_matmuls: 3,
    degradation: true,
    why: "the outer region reruns its body (both matmuls), then the inner reruns x @ W1: this port's nested recompute spends 2 matmuls for nothing",
  },
  under_trainer: {
    roles: ["x"],
    forward_matmuls: 2,
    rerun_matmuls: 3,
    degradation: true,
    why: "the trainer's region reruns the model call (both matmuls), then the model's region reruns x @ W1, as twice does",
  },
};
let speaks = 2;

// The composition case this request runs (protocol 3), or "" for none.
function nestingOf(request) {
  if (speaks < 3 || request.nesting === undefined) return "";
  if (!Object.prototype.hasOwnProperty.call(COMPOSITIONS, request.nesting)) {
    throw new PortError("ValueError", `checkpoint: nesting ${request.nesting} is not a declared case`);
  }
  return request.nesting;
}

// The policy this request runs: full under a composition case, else `policy` (protocol 2),
// else `checkpoint`.
function policyOf(request) {
  if (nestingOf(request)) return "full";
  if (VARIANT === "ignore_policy" || request.policy === undefined) return request.checkpoint ? "full" : "none";
  if (!(request.policy in KEEPS)) throw new PortError("ValueError", `checkpoint: policy ${request.policy} is not declared`);
  return request.policy;
}

function vjp(p, x, dy, policy, nesting = "") {
  const tape = { saved: [{ shape: [p.D], dtype: "float32", origin: "input", note: "x", role: "x" }], recomputed: {}, matmuls: 0, forwardMatmuls: 0, regions: policy === "none" ? 0 : nesting ? 2 : 1 };
  const forwardStart = snapshot();
  const forwardValues = forward(p, x);
  tape.forwardMatmuls = ranSince(forwardStart).forwardOps.matmul || 0;
  let keeps = KEEPS[policy];
  if (policy === "full" && (VARIANT === "cheat" || VARIANT === "keeper")) keeps = ["h", "a"];
  for (const role of keeps) tape.saved.push({ shape: [p.F], dtype: "float32", origin: "activation", note: role, role });
  const backwardStart = snapshot();
  // A nested case: the outer region reruns its body (the inner region's forward, which keeps
  // x alone again), before the inner region's own backward below.
  if (NESTED_RERUNS_BODY.includes(nesting)) forward(p, x);
  // Backward: what was not kept is recomputed from x (or from the kept d1 or h).
  let { h, a } = forwardValues;
  if (!keeps.includes("a")) {
    if (keeps.includes("h")) {
      a = h.map((v) => (v > 0 ? v : 0));
      ops.relu += 1;
    } else if (keeps.includes("d1")) {
      h = forwardValues.d1.map((v, j) => f32(v + p.b1[j]));
      a = h.map((v) => (v > 0 ? v : 0));
      ops.add += 1;
      ops.relu += 1;
    } else {
      ({ h, a } = hidden(p, x));
    }
  }
  const g = { w1: new Float32Array(p.D * p.F), b1: new Float32Array(p.F), w2: new Float32Array(p.F * p.F), b2: Float32Array.from(dy), x: new Float32Array(p.D) };
  const dh = new Float32Array(p.F);
  for (let i = 0; i < p.F; i++) {
    let s = 0;
    for (let j = 0; j < p.F; j++) {
      g.w2[i * p.F + j] = f32(a[i] * dy[j]);
      s += dy[j] * p.w2[i * p.F + j];
    }
    dh[i] = h[i] > 0 ? f32(s) : 0;
  }
  gradientMatmuls += 2; // dW2 = a dy^T and da = dy W2^T
  g.b1 = dh;
  for (let i = 0; i < p.D; i++) {
    let s = 0;
    for (let j = 0; j < p.F; j++) {
      g.w1[i * p.F + j] = f32(x[i] * dh[j]);
      s += dh[j] * p.w1[i * p.F + j];
    }
    g.x[i] = f32(s);
  }
  gradientMatmuls += 2; // dW1 = x dh^T and dx = dh W1^T
  const backward = ranSince(backwardStart);
  tape.recomputed = backward.forwardOps;
  tape.matmuls = (backward.forwardOps.matmul || 0) + backward.gradientMatmuls;
  return { g, tape, policy };
}

function record({ tape, policy }) {
  // The cheat reports what an honest checkpoint would: x kept, the hidden layer rerun.
  const lies = VARIANT === "cheat" && policy === "full";
  return {
    instrument: "js_plain's own bookkeeping (what its forward pass keeps, what its backward reruns)",
    saved: lies ? tape.saved.slice(0, 1) : tape.saved,
    recomputed: lies ? { matmul: 1, add: 1, relu: 1 } : tape.recomputed,
    checkpoint_regions: tape.regions,
    forward_matmuls: tape.forwardMatmuls,
    backward_matmuls: lies ? 5 : tape.matmuls,
  };
}

function decodeParams(value) {
  const w1 = decodeFloats(value.w1, "w1");
  const [D, F] = value.w1.shape;
  return { D, F, w1, b1: decodeFloats(value.b1, "b1"), w2: decodeFloats(value.w2, "w2"), b2: decodeFloats(value.b2, "b2") };
}

const EXPECT = {
  none: { roles: ["x", "h", "a"], backward_matmuls: 4, why: "relu's gradient reads h, dW2 reads a" },
  full: { roles: VARIANT === "contradicts" ? ["x", "a"] : ["x"], backward_matmuls: 5, why: "x kept; the backward pass reruns x @ W1, the bias and relu" },
  save_dots: { roles: ["x", "d1"], backward_matmuls: 4, why: "d1 = x @ W1 kept; the bias and relu rerun from it" },
  save_named: { roles: ["x", "h"], backward_matmuls: 4, why: "h kept by name; relu reruns from it" },
};

// ---------------------------------------------------------------- requests
const handlers = {
  hello(r) {
    const offered = Array.isArray(r.protocols) ? r.protocols : [r.protocol];
    speaks = [3, 2].find((v) => offered.includes(v));
    if (speaks === undefined) throw new PortError("ProtocolError", "this port speaks protocols 3 and 2");
    // Protocol 3 adds composition: the cases it runs and what its instrument shows under each.
    const composition = speaks >= 3 ? { compositions: COMPOSITIONS, not_composable: {}, composition_expectations: COMPOSED } : {};
    return {
      ...composition,
      name: NAME,
      framework: "plain Node.js",
      versions: { node: process.versions.node },
      protocol: speaks,
      checkpoint_api: "a hand-written backward pass that reruns what the policy did not keep",
      policies: { none: "keep h and a", full: "keep x only", save_dots: "keep d1", save_named: "keep h" },
      inexpressible: {
        offload_dots: "one process, one memory: there is no host to offload to",
        budget: "no cost model to choose under a budget",
      },
      instrument_family: "js_plain",
      expectations: EXPECT,
      matmul_precision: { default: "float64 sums rounded to float32", pinned: "float64 sums rounded to float32", device: "cpu" },
    };
  },
  init_params(r) {
    const seed = checkSeed(r.seed);
    const F = checkFeatures(r.features);
    const D = checkDim(r.dim);
    checkSizes(D, F, r.max_bytes, "dim");
    const p = canonicalParams(seed, Number(D), Number(F));
    return { params: { w1: encode(p.w1, [p.D, p.F]), b1: encode(p.b1, [p.F]), w2: encode(p.w2, [p.F, p.F]), b2: encode(p.b2, [p.F]) } };
  },
  forward(r) {
    policyOf(r);
    const p = decodeParams(r.params);
    return { y: encode(forward(p, decodeFloats(r.x, "x")).y, [p.F]) };
  },
  vjp(r) {
    const p = decodeParams(r.params);
    const { g } = vjp(p, decodeFloats(r.x, "x"), decodeFloats(r.cotangent, "cotangent"), policyOf(r), nestingOf(r));
    return { w1: encode(g.w1, [p.D, p.F]), b1: encode(g.b1, [p.F]), w2: encode(g.w2, [p.F, p.F]), b2: encode(g.b2, [p.F]), x: encode(g.x, [p.D]) };
  },
  nn_checkpoint_forward(r) {
    const { p, x } = seeded(r);
    return { y: encode(forward(p, x).y, [p.F]) };
  },
  evidence(r) {
    if (r.of === "vjp") {
      const p = decodeParams(r.params);
      return record(vjp(p, decodeFloats(r.x, "x"), new Float32Array(p.F).fill(1), policyOf(r), nestingOf(r)));
    }
    if (r.of === "exercise") {
      const { p, x } = seeded(r);
      return record(vjp(p, x, new Float32Array(p.F).fill(1), "full"));
    }
    throw new PortError("ProtocolError", `evidence of ${JSON.stringify(r.of)}`);
  },
  shutdown() {
    return {};
  },
};

function seeded(r) {
  const seed = checkSeed(r.seed);
  const F = checkFeatures(r.features);
  const D = checkXShape(r.x);
  checkSizes(D, F, r.max_bytes, "x");
  const x = checkXValues(r.x);
  return { p: canonicalParams(seed, x.length, Number(F)), x };
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    process.stdout.write(JSON.stringify({ id: null, error: { type: "ProtocolError", message: error.message } }) + "\n");
    return;
  }
  let answer;
  try {
    const handler = Object.prototype.hasOwnProperty.call(handlers, request.op) ? handlers[request.op] : null;
    if (!handler) throw new PortError("ProtocolError", `unknown op ${request.op}`);
    answer = { id: request.id, result: handler(request) };
  } catch (error) {
    answer = { id: request.id, error: { type: error.type || "InternalError", message: error.message } };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
  if (request.op === "shutdown") process.exit(0);
});
lines.on("close", () => process.exit(0));
