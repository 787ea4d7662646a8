#!/usr/bin/env node
// The tfjs half of `python -m conformance bench --framework tfjs` (conformance/bench/tfjs_stack.py):
// L blocks Dense -> relu -> Dense, (B, F) -> (B, F), on tfjs's pure-JS CPU backend.
//
// - `none`: the blocks as they are (mlp.js's plain MLP);
// - `full`: mlp.js's remat (tf.customGrad) around every block;
// - `save-mm`: tfjs has no checkpoint policies, so this is written out: the block's first
//   matmul runs outside the region, which keeps its output, and a tf.customGrad region
//   recomputes bias, relu and the second layer (as the TensorFlow bench does).
//
// It speaks JSON lines on stdin/stdout in the shape of docs/PROTOCOL.md (ids, `result` or
// `error: {type, message}`, float32 arrays as base64), with its own requests: `hello`, `build`
// (a case: mode, blocks, x, cotangent), `measure` (what the forward pass saves, from tfjs's tape;
// matmuls and peak bytes from tf.profile), `step` (one forward+VJP), `drop` and `shutdown`;
// for bench --schedules (docs/PROTOCOL.md, Schedules; schedules.js), hello's `schedules` and
// `schedules_not_expressible`, `schedule` (a case: placement, blocks, x, cotangent), whose
// `measure` answers forward_matmuls, regions and peak_bytes, and `schedule_values`.
"use strict";
// The JSON-lines loop, the answered errors and the wire's arrays, as the port's (port.js).
const { RequestError, decodeArray, encodeArray, serve } = require("./serve.js");
const load = require("./load.js");

const PROTOCOL = 1;
const NAME = "tfjs-bench";

let tf = null;
let mlp = null;
let schedules = null;

// tfjs on its CPU backend, and the blocks' code: if this throws, serve.js answers every request
// but shutdown with Unavailable, saying why.
async function start() {
  tf = load.loadTf();
  await tf.setBackend("cpu");
  mlp = require("./mlp.js")(tf, { customGrad: true });
  schedules = require("./schedules.js")(tf, RequestError);
}

// bench --schedules (docs/PROTOCOL.md, Schedules): what hello declares, by schedule name.
const SCHEDULES = {
  none: "the plain blocks",
  every: "tf.customGrad(block) per block",
  segments: "tf.customGrad over each of the first s-1 segments, the tail plain",
  nested: "tf.customGrad over each outermost region, inner regions rerun by hand in its gradient",
  binomial: "Revolve's placement tree: outermost regions tf.customGrad, inner ones by hand",
};
const SCHEDULES_NOT_EXPRESSIBLE = {
  budget: "tfjs has no memory-budget solver: tf.customGrad takes no budget",
};

// An array of the request as a float32 tensor of its shape; `name` is what an error names.
function tensorOf(value, name) {
  return tf.tensor(decodeArray(value, name), value.shape, "float32");
}

const MODES = ["none", "full", "save-mm"];

// save-mm's region: everything of a block after its first matmul, recomputed in backward by
// hand (as mlp.js's remat: no nested tf.grads, which would replace tfjs's one global tape).
function restRegion() {
  return tf.customGrad((h, b1, w2, b2, save) => {
    save([h, b1, w2]);
    return {
      value: tf.add(tf.matMul(tf.relu(tf.add(h, b1)), w2), b2),
      gradFunc: (dy, saved) => {
        const [sh, sb1, sw2] = saved;
        const z = tf.add(sh, sb1); // recomputed
        const a = tf.relu(z); // recomputed
        const dz = tf.mul(tf.matMul(dy, sw2, false, true), tf.step(z));
        return [dz, tf.sum(dz, 0), tf.matMul(a, dy, true, false), tf.sum(dy, 0)];
      },
    };
  });
}

function blockFunction(mode) {
  if (mode === "none") return mlp.model(false);
  if (mode === "full") return mlp.model(true);
  const rest = restRegion();
  return (x, w1, b1, w2, b2) => rest(tf.matMul(x, w1), b1, w2, b2);
}

const cases = new Map();
let nextCase = 0;

class Case {
  constructor(mode, blocks, x, cotangent) {
    if (!MODES.includes(mode)) {
      throw new RequestError("ValueError", `mode must be one of ${MODES.join(", ")}, got ${JSON.stringify(mode)}`);
    }
    this.mode = mode;
    this.block = blockFunction(mode);
    this.params = [];
    for (const [i, arrays] of blocks.entries()) {
      if (!Array.isArray(arrays) || arrays.length !== 4) {
        throw new RequestError("ProtocolError", `blocks[${i}] must be [w1, b1, w2, b2]`);
      }
      for (const [j, name] of ["w1", "b1", "w2", "b2"].entries()) {
        this.params.push(tensorOf(arrays[j], `blocks[${i}].${name}`));
      }
    }
    this.x = tensorOf(x, "x");
    this.cotangent = tensorOf(cotangent, "cotangent");
  }

  stack(...params) {
    let y = this.x;
    for (let i = 0; i < params.length; i += 4) y = this.block(y, ...params.slice(i, i + 4));
    return y;
  }

  // One forward+VJP: the gradient of sum(stack * c) w.r.t. every parameter, as the VJP with c;
  // finished (the gradients' data read) when it returns, as the other stacks' steps are.
  step() {
    tf.tidy(() => {
      const grads = tf.grads((...p) => this.stack(...p))(this.params, this.cotangent);
      for (const g of grads) g.dataSync();
    });
  }

  // What the forward pass keeps for backward: the tensors the tape's nodes hold at the end of
  // forward (tfjs's one tape, engine().state.activeTape, read inside tf.grads), x and the
  // parameters marked by their data. One entry per tensor datum.
  saved() {
    const saved = [];
    const observed = (...p) => {
      const y = this.stack(...p);
      const tape = tf.engine().state.activeTape;
      if (!Array.isArray(tape)) {
        throw new Error("tfjs no longer has engine().state.activeTape: the instrument needs it");
      }
      const seen = new Set();
      for (const node of tape) {
        for (const t of node.saved || []) {
          if (seen.has(t.dataId)) continue;
          seen.add(t.dataId);
          let origin = "activation";
          if (t.dataId === this.x.dataId) origin = "input";
          else if (this.params.some((q) => q.dataId === t.dataId)) origin = "parameter";
          saved.push({ shape: t.shape, dtype: t.dtype, origin, note: `saved by ${node.kernelName}` });
        }
      }
      return y;
    };
    tf.tidy(() => tf.grads(observed)(this.params, this.cotangent));
    return saved;
  }

  async measure() {
    const saved = this.saved();
    const before = tf.memory().numBytes;
    const info = await tf.profile(() => this.step());
    const matmuls = info.kernels.filter((k) => k.name === "BatchMatMul").length;
    return {
      saved,
      matmuls,
      // tf.profile's peakBytes is the engine's total after the kernel that peaked; above what
      // was live before the step, it is what the step allocated at most (gradients included).
      peak_bytes: Math.max(0, info.peakBytes - before),
    };
  }

  dispose() {
    tf.dispose([...this.params, this.x, this.cotangent]);
  }
}

// One schedule at one depth: the placement tree the request sends, over its blocks.
class ScheduleCase {
  constructor(placement, blocks, x, cotangent) {
    this.params = [];
    for (const [i, arrays] of (blocks || []).entries()) {
      if (!Array.isArray(arrays) || arrays.length !== 4) {
        throw new RequestError("ProtocolError", `blocks[${i}] must be [w1, b1, w2, b2]`);
      }
      for (const [j, name] of ["w1", "b1", "w2", "b2"].entries()) {
        this.params.push(tensorOf(arrays[j], `blocks[${i}].${name}`));
      }
    }
    this.stack = schedules.stackOf(schedules.checked(placement, this.params.length / 4));
    this.x = tensorOf(x, "x");
    this.cotangent = tensorOf(cotangent, "cotangent");
  }

  // The gradients of sum(stack * c), the output beside: [y, ...grads], inside a tidy's caller.
  gradients() {
    const { value, grads } = tf.valueAndGrads((...p) => this.stack.run(this.x, p))(
      this.params,
      this.cotangent,
    );
    return [value, ...grads];
  }

  step() {
    tf.tidy(() => {
      for (const g of this.gradients()) g.dataSync();
    });
  }

  async measure() {
    const notes = schedules.notes;
    notes.matmuls = 0;
    notes.regions = 0;
    let forward = 0;
    let regions = 0;
    tf.tidy(() => {
      const grads = tf.grads((...p) => {
        const y = this.stack.run(this.x, p);
        forward = notes.matmuls; // the forward pass ends here; the tape's gradients follow
        regions = notes.regions;
        return y;
      })(this.params, this.cotangent);
      for (const g of grads) g.dataSync();
    });
    const backward = notes.matmuls - forward;
    // No peak: tfjs frees a step's intermediates only when its tf.tidy ends, so tf.profile's
    // peakBytes is all the step allocated (measured at L = 64: 6 to 624 times the model).
    return { forward_matmuls: [forward, backward], regions, peak_bytes: null };
  }

  values() {
    const kept = tf.tidy(() => this.gradients());
    try {
      const arrays = kept.map((t) => encodeArray(t.dataSync(), t.shape));
      const grads = [];
      for (let i = 1; i < arrays.length; i += 4) grads.push(arrays.slice(i, i + 4));
      return { y: arrays[0], grads };
    } finally {
      tf.dispose(kept);
    }
  }

  dispose() {
    tf.dispose([...this.params, this.x, this.cotangent]);
  }
}

function theCase(request) {
  const found = cases.get(request.case);
  if (!found) throw new RequestError("ValueError", `no case ${JSON.stringify(request.case)}`);
  return found;
}

const handlers = {
  hello() {
    return {
      name: NAME,
      framework: "@tensorflow/tfjs",
      versions: {
        "@tensorflow/tfjs": tf.version.tfjs,
        node: process.versions.node,
        backend: tf.getBackend(),
      },
      protocol: PROTOCOL,
      modes: MODES,
      schedules: SCHEDULES,
      schedules_not_expressible: SCHEDULES_NOT_EXPRESSIBLE,
    };
  },
  build(request) {
    const made = new Case(request.mode, request.blocks || [], request.x, request.cotangent);
    nextCase += 1;
    cases.set(nextCase, made);
    return { case: nextCase };
  },
  measure(request) {
    return theCase(request).measure();
  },
  schedule(request) {
    const made = new ScheduleCase(request.placement, request.blocks, request.x, request.cotangent);
    nextCase += 1;
    cases.set(nextCase, made);
    return { case: nextCase };
  },
  schedule_values(request) {
    const found = theCase(request);
    if (!(found instanceof ScheduleCase)) {
      throw new RequestError("ValueError", `case ${request.case} is not a schedule case`);
    }
    return found.values();
  },
  step(request) {
    const started = process.hrtime.bigint();
    theCase(request).step();
    return { seconds: Number(process.hrtime.bigint() - started) / 1e9 };
  },
  drop(request) {
    theCase(request).dispose();
    cases.delete(request.case);
    return {};
  },
  shutdown() {
    return {};
  },
};

serve(start, handlers);
