#!/usr/bin/env node
// The `tfjs` process port: the exercise in TensorFlow.js (pure-JS CPU backend), speaking
// docs/PROTOCOL.md on stdin/stdout. `--mutant=no_custom_grad` runs it without tf.customGrad.
//
// @tensorflow/tfjs comes from the node_modules beside this file if there is one, else from a
// cache directory, where the first start runs `npm ci` on the committed package-lock.json
// (once; later starts reuse it). Without npm, or if that fails, `hello` answers Unavailable.
"use strict";
const fs = require("fs");
const path = require("path");
// The JSON-lines loop, the answered errors and the wire's arrays (shared with bench.js); it
// sends every library's log to stderr.
const { RequestError, decodeArray, encodeArray, serve, writeAnswer } = require("./serve.js");
const load = require("./load.js");

// docs/PROTOCOL.md: version 2 carries the policy's name, 3 a composition case (`nesting`); the
// adapter offers every version it speaks, and this port answers the newest it shares.
const PROTOCOLS = [3, 2, 1];
const NAME = "tfjs";
const MUTANT = (process.argv.find((a) => a.startsWith("--mutant=")) || "").slice(9);

// docs/PROTOCOL.md, Values: a decimal string is an integer; a boolean or any other string (the
// caller's 1.5, NaN) is a ValueError, null, a list or an object a TypeError.
function integer(text, name) {
  if (typeof text === "boolean") throw new RequestError("ValueError", `${name} must be an integer, not a boolean`);
  if (typeof text !== "string") {
    throw new RequestError("TypeError", `${name} must be an integer (a decimal string), got ${JSON.stringify(text)}`);
  }
  if (!/^-?[0-9]+$/.test(text)) throw new RequestError("ValueError", `${name} must be an integer, got ${text}`);
  return BigInt(text);
}

// x's dtype and shape, before its size is checked (PROTOCOL.md, Errors): D.
function checkXShape(value) {
  if (!value || typeof value !== "object" || !Array.isArray(value.shape)) throw new RequestError("TypeError", "x must be an array object");
  if (value.dtype !== "float32") throw new RequestError("TypeError", `x must be real (float32), got dtype ${value.dtype}`);
  if (value.shape.length !== 1) throw new RequestError("ValueError", `x must be a vector (D,), got shape [${value.shape}]`);
  if (value.shape[0] < 1) throw new RequestError("ValueError", "x must not be empty (D >= 1)");
  return value.shape[0];
}

// -- the contract's checks (docs/PROTOCOL.md, "What the adapter checks and what the port checks")
const MAX_ELEMENTS = 2n ** 31n - 1n;
const MAX_FEATURES = 46340n;
const ELEMENTS = "2**31 - 1 per array (frameworks count elements in int32)";

function checkSeed(text) {
  const seed = integer(text, "seed");
  if (seed < 0n) throw new RequestError("ValueError", `seed must be non-negative, got ${seed}`);
  if (seed > 2n ** 63n - 1n) {
    throw new RequestError("ValueError", `seed must be at most 2**63 - 1, got ${seed}`);
  }
  return seed;
}

function checkFeatures(text) {
  const features = integer(text, "features");
  if (features < 1n) {
    throw new RequestError("ValueError", `features must be a positive integer, got ${features}`);
  }
  if (features > MAX_FEATURES) {
    throw new RequestError(
      "SizeLimitError",
      `features=${features} is too large: the (F, F) kernel would pass ${ELEMENTS}; ` +
        `features must be at most ${MAX_FEATURES}`,
    );
  }
  return Number(features);
}

function checkDim(text) {
  const dim = integer(text, "dim");
  if (dim < 1n) throw new RequestError("ValueError", `dim must be a positive integer, got ${dim}`);
  if (dim > MAX_ELEMENTS) throw new RequestError("SizeLimitError", `dim=${dim} is too large: ${ELEMENTS}`);
  return Number(dim);
}

function checkSizes(dim, features, maxBytesText, dimName) {
  const what = `features=${features} with ${dimName} of D=${dim}`;
  const D = BigInt(dim);
  const F = BigInt(features);
  if (D * F > MAX_ELEMENTS) {
    throw new RequestError("SizeLimitError", `${what} is too large: the (D, F) kernel would pass ${ELEMENTS}`);
  }
  const bytes = 4n * (D * F + F * F + 2n * F) + 4n * (D + 3n * F);
  const limit = integer(maxBytesText, "max_bytes");
  if (bytes > limit) {
    throw new RequestError("SizeLimitError", `${what} needs ${bytes} bytes; the limit is ${limit} bytes`);
  }
}

function checkX(value) {
  const x = decodeArray(value, "x");
  if (value.shape.length !== 1 || x.length < 1) {
    throw new RequestError("ValueError", `x must be a non-empty vector (D,), got shape [${value.shape}]`);
  }
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i])) {
      throw new RequestError("ValueError", `x must be finite in float32; x[${i}] = ${x[i]} is not`);
    }
  }
  return x;
}

function decodeParams(value) {
  const out = {};
  for (const name of ["w1", "b1", "w2", "b2"]) out[name] = decodeArray((value || {})[name], name);
  return out;
}

// -- requests -------------------------------------------------------------------------------
let tf = null;
let mlp = null;
let init = null;
let stateful = null;
let speaks = 1;

// The block with variables and RNGs (docs/PROTOCOL.md, state_step): its variants, by spelling.
const STATE_VARIANTS = {
  default: "tf.customGrad(block), its gradFunc recomputing the block; dropout seeded with String(seed)",
};

// A 2-D float32 array object (B, cols) with finite values, else a ValueError naming it.
function checkMatrix(value, name, rows, cols) {
  if (!value || typeof value !== "object" || !Array.isArray(value.shape)) throw new RequestError("TypeError", `${name} must be an array object`);
  if (value.dtype !== "float32") throw new RequestError("TypeError", `${name} must be float32, got dtype ${value.dtype}`);
  const [b, c] = value.shape;
  if (value.shape.length !== 2 || b < (rows || 2) || (rows && b !== rows) || c < 1 || (cols && c !== cols)) {
    const want = rows ? `(${rows}, ${cols})` : "(B, D) with B >= 2, D >= 1";
    throw new RequestError("ValueError", `${name} must have shape ${want}, got [${value.shape}]`);
  }
  const data = decodeArray(value, name);
  if (!data.every(Number.isFinite)) throw new RequestError("ValueError", `${name} must be finite`);
  return { data, rows: b, cols: c };
}

// Composition (protocol 3): the cases this port runs, by their tfjs spelling, and why not the
// other (docs/PROTOCOL.md, Composition; implementations/stacks/tfjs/README.md).
const COMPOSITIONS = {
  once: "tf.customGrad(mlp), save([x, params]), its gradFunc reruns x @ W1",
};
const NOT_COMPOSABLE = {
  twice:
    "tfjs flattens a tf.customGrad inside another: it runs the inner function with the tape off (tfjs-core engine.js runKernelFunc, kernelDepth > 0), so the inner region saves nothing and leaves no tape node (one region, measured)",
  under_trainer:
    "a trainer's tf.customGrad over a model call it did not write needs the model's VJP in its gradFunc, and tf.grads there crashes tfjs's one global tape (engine.gradients sets activeTape to null)",
};

// The request's checkpoint: off (false), on (true), or its composition case ("once",
// "twice": protocol 3's `nesting`); a policy must be one declared.
function checkpointOf(request) {
  if (speaks >= 3 && request.nesting !== undefined) {
    if (!Object.prototype.hasOwnProperty.call(COMPOSITIONS, request.nesting)) {
      throw new RequestError("ValueError", `checkpoint: nesting ${request.nesting} is not a case tfjs declares`);
    }
    return request.nesting;
  }
  if (speaks >= 2 && request.policy !== undefined) {
    if (request.policy !== "none" && request.policy !== "full") {
      throw new RequestError("ValueError", `checkpoint: policy ${request.policy} is not one tfjs declares`);
    }
    return request.policy === "full";
  }
  return Boolean(request.checkpoint);
}

// tfjs on its CPU backend, and the exercise's code: if this throws, serve.js answers every
// request but shutdown with Unavailable, saying why.
async function start() {
  tf = load.loadTf();
  await tf.setBackend("cpu");
  mlp = require("./mlp.js")(tf, { customGrad: MUTANT !== "no_custom_grad" });
  init = require("./init.js");
  stateful = require("./stateful.js")(tf);
}

const handlers = {
  hello(request) {
    const offered = Array.isArray(request.protocols) ? request.protocols : [request.protocol];
    const protocol = PROTOCOLS.find((v) => offered.includes(v));
    if (protocol === undefined) {
      throw new RequestError("ProtocolError", `speaks protocols ${PROTOCOLS}, offered ${offered}`);
    }
    speaks = protocol;
    const composition = protocol >= 3 ? { compositions: COMPOSITIONS, not_composable: NOT_COMPOSABLE } : {};
    return {
      ...composition,
      name: NAME,
      framework: "@tensorflow/tfjs",
      versions: { "@tensorflow/tfjs": tf.version.tfjs, node: process.versions.node },
      protocol,
      checkpoint_api: "tf.customGrad",
      state_variants: STATE_VARIANTS,
      // Remat policies (docs/PROTOCOL.md, Remat policies): tfjs has none; what it can express
      // is a tf.customGrad that keeps its inputs (full) or none at all.
      policies: { none: "plain tf ops (no tf.customGrad)", full: "tf.customGrad, save([x, params])" },
      inexpressible: {
        save_dots:
          "tfjs has no remat policy API: tf.customGrad keeps what its function passes to save(), and a hand-picked residual would be this port's remat, not tfjs's",
        save_named: "tfjs cannot name a tensor for a policy: it has no policy API",
        offload_dots: "tfjs has no host offload of saved tensors (its cpu backend keeps everything in one memory)",
        budget: "tfjs has no memory-budgeted remat",
      },
      matmul_precision: {
        default: "float32 (the cpu backend computes in Float32Array)",
        pinned: "float32 (the cpu backend computes in Float32Array)",
        device: `tfjs ${tf.getBackend()} backend`,
      },
    };
  },
  init_params(request) {
    const seed = checkSeed(request.seed);
    const features = checkFeatures(request.features);
    const dim = checkDim(request.dim);
    checkSizes(dim, features, request.max_bytes, "dim");
    const p = init.canonicalParams(seed, dim, features);
    return {
      params: {
        w1: encodeArray(p.w1, [dim, features]),
        b1: encodeArray(p.b1, [features]),
        w2: encodeArray(p.w2, [features, features]),
        b2: encodeArray(p.b2, [features]),
      },
    };
  },
  forward(request) {
    const params = decodeParams(request.params);
    const y = mlp.forward(params, decodeArray(request.x, "x"), checkpointOf(request));
    return { y: encodeArray(y, [y.length]) };
  },
  vjp(request) {
    const params = decodeParams(request.params);
    const x = decodeArray(request.x, "x");
    const grads = mlp.vjp(params, x, decodeArray(request.cotangent, "cotangent"), checkpointOf(request));
    const D = x.length;
    const F = params.b1.length;
    return {
      w1: encodeArray(grads.w1, [D, F]),
      b1: encodeArray(grads.b1, [F]),
      w2: encodeArray(grads.w2, [F, F]),
      b2: encodeArray(grads.b2, [F]),
      x: encodeArray(grads.x, [D]),
    };
  },
  nn_checkpoint_forward(request) {
    const seed = checkSeed(request.seed);
    const features = checkFeatures(request.features);
    checkSizes(checkXShape(request.x), features, request.max_bytes, "x");
    const x = checkX(request.x);
    const y = mlp.forward(init.canonicalParams(seed, x.length, features), x, true);
    return { y: encodeArray(y, [features]) };
  },
  async evidence(request) {
    if (request.of === "vjp") {
      return mlp.vjpRecord(decodeParams(request.params), decodeArray(request.x, "x"), checkpointOf(request));
    }
    if (request.of === "exercise") {
      const seed = checkSeed(request.seed);
      const features = checkFeatures(request.features);
      const D = checkXShape(request.x);
      if (request.max_bytes !== undefined) checkSizes(D, features, request.max_bytes, "x");
      const x = checkX(request.x);
      return mlp.exerciseRecord(init.canonicalParams(seed, x.length, features), x);
    }
    throw new RequestError("ProtocolError", `evidence of ${JSON.stringify(request.of)}: expected "vjp" or "exercise"`);
  },
  state_step(request) {
    const seed = checkSeed(request.seed);
    const features = checkFeatures(request.features);
    const rate = request.rate;
    if (typeof rate !== "number" || !(rate >= 0 && rate < 1)) {
      throw new RequestError("ValueError", `rate must be a number in [0, 1), got ${JSON.stringify(rate)}`);
    }
    if (!Object.prototype.hasOwnProperty.call(STATE_VARIANTS, request.variant)) {
      throw new RequestError("ValueError", `variant must be one of ${Object.keys(STATE_VARIANTS)}, got ${JSON.stringify(request.variant)}`);
    }
    const x = checkMatrix(request.x, "x");
    const cotangent = checkMatrix(request.cotangent, "cotangent", x.rows, features);
    const p = init.canonicalParams(seed, x.cols, features);
    const arrays = {
      ...p,
      gamma: new Float32Array(features).fill(1),
      beta: new Float32Array(features),
      mean: new Float32Array(features),
      var: new Float32Array(features).fill(1),
    };
    let result = null;
    tf.tidy(() => {
      result = stateful.step(arrays, seed, x.data, x.rows, x.cols, features, rate, cotangent.data, Boolean(request.checkpoint));
    });
    return result;
  },
  shutdown() {
    return {};
  },
};

// `--print-tfjs-dist`: the path of tfjs's browser bundle (installed first if need be), for the
// browser page (browser/page.html); no protocol.
if (process.argv.includes("--print-tfjs-dist")) {
  const tf = load.loadTf();
  const found = [__dirname, load.installDirectory()]
    .map((d) => path.join(d, "node_modules", "@tensorflow", "tfjs", "dist", "tf.min.js"))
    .find((f) => fs.existsSync(f));
  if (!found) throw new Error(`no tf.min.js beside tfjs ${tf.version.tfjs}`);
  writeAnswer({ tfjs: tf.version.tfjs, bundle: found });
  process.exit(0);
} else {
  serve(start, handlers);
}
