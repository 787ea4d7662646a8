// The exercise in TensorFlow.js: Dense(F) -> relu -> Dense(F), rematerialized through
// tf.customGrad, and its evidence from tfjs itself. Shared by the Node port (port.js) and the
// browser page; `make(tf, {customGrad})` builds it on a loaded tfjs.
(function (root, factory) {
  if (typeof module === "object" && module.exports) module.exports = factory;
  else root.RematMlp = factory;
})(typeof self !== "undefined" ? self : this, function (tf, options) {
  "use strict";
  // The mutant `tfjs_no_custom_grad` sets customGrad false: the same values, no remat.
  const useCustomGrad = !options || options.customGrad !== false;

  function plain(x, w1, b1, w2, b2) {
    const a = tf.relu(tf.add(tf.matMul(x, w1), b1));
    return tf.add(tf.matMul(a, w2), b2);
  }

  // Remat with the public API only: the forward pass keeps its inputs (save), and the gradient
  // recomputes the hidden layer, then runs the MLP's VJP by hand. (A nested tf.grads here would
  // replace tfjs's one global tape and crash the outer one: tests/process/test_tfjs.py.)
  function pullback(dy, saved) {
    const [sx, sw1, sb1, sw2] = saved;
    const h = tf.add(tf.matMul(sx, sw1), sb1); // recomputed
    const a = tf.relu(h); // recomputed
    return blockVjp(dy, sx, h, a, sw1, sw2);
  }
  // The block's VJP from its input x and internals h, a: [dx, dw1, db1, dw2, db2] (the bench's
  // regions, block.js, back through their blocks with it too).
  function blockVjp(dy, x, h, a, w1, w2) {
    const dw2 = tf.matMul(a, dy, true, false);
    const db2 = tf.sum(dy, 0);
    const dh = tf.mul(tf.matMul(dy, w2, false, true), tf.step(h));
    return [tf.matMul(dh, w1, false, true), tf.matMul(x, dh, true, false), tf.sum(dh, 0), dw2, db2];
  }

  // A recompute region around `body` (the MLP, or a region of it): tf.customGrad keeps the
  // block's inputs and its gradient is the hand-written pullback above.
  function region(body) {
    return tf.customGrad((x, w1, b1, w2, b2, save) => {
      save([x, w1, b1, w2, b2]);
      return { value: body(x, w1, b1, w2, b2), gradFunc: pullback };
    });
  }

  const remat = region(plain);
  // Composition (k): the region wrapped again the same way. tfjs runs a tf.customGrad's
  // function with the tape off (engine.js runKernelFunc: kernelDepth > 0, so isTapeOn() is
  // false), so the inner region's save() keeps nothing and its node never reaches the tape:
  // the outer region's gradient alone runs in backward.
  const composed = { once: remat, twice: region(remat) };

  // x (1, D) -> y (1, F), tensors in, tensor out. The row shape stays outside the
  // differentiated function, so that no reshape on the tape keeps the output. `checkpoint`:
  // false (plain ops), true or "once" (the region), "twice" (the region wrapped again).
  function model(checkpoint) {
    if (!checkpoint || !useCustomGrad) return plain;
    return checkpoint === true ? remat : composed[checkpoint];
  }

  function tensors(params, x) {
    const D = x.length;
    const F = params.b1.length;
    return [
      tf.tensor2d(x, [1, D], "float32"),
      tf.tensor2d(params.w1, [D, F], "float32"),
      tf.tensor1d(params.b1, "float32"),
      tf.tensor2d(params.w2, [F, F], "float32"),
      tf.tensor1d(params.b2, "float32"),
    ];
  }

  // The values of tensors that a tf.tidy returned, as Float32Array copies; the tensors disposed.
  // (tf.tidy returns tensors, never arrays: it walks what it returns looking for tensors, and
  // it walks a Float32Array element by element, 45 ms for the gradients at 256x256.)
  function valuesOf(kept) {
    try {
      return kept.map((t) => t.dataSync().slice());
    } finally {
      tf.dispose(kept);
    }
  }

  function forward(params, x, checkpoint) {
    return valuesOf([tf.tidy(() => model(checkpoint)(...tensors(params, x)))])[0];
  }

  // The cotangent pulled back to x and every parameter: {x, w1, b1, w2, b2} as Float32Arrays.
  function vjp(params, x, cotangent, checkpoint) {
    const grads = tf.tidy(() => {
      const args = tensors(params, x);
      const dy = tf.tensor2d(cotangent, [1, cotangent.length], "float32");
      return tf.grads(model(checkpoint))(args, dy);
    });
    const [gx, gw1, gb1, gw2, gb2] = valuesOf(grads);
    return { x: gx, w1: gw1, b1: gb1, w2: gw2, b2: gb2 };
  }

  // -- evidence ----------------------------------------------------------------------------
  // The saved tensors are those the tape's nodes hold for backward at the end of forward
  // (tfjs's tape: `tf.engine().state.activeTape`, read inside tf.grads); the recomputed ops are
  // the kernels that run in backward, from tf.profile, among those a gradient never runs.
  // Kernels that tfjs gradients of this MLP never run: relu's is Step and Multiply, add's Sum and
  // Reshape. So in backward they are the forward pass again (the off record shows none: (e)).
  const FORWARD_ONLY_KERNELS = ["Relu", "Add"];

  function activeTape() {
    const tape = tf.engine().state.activeTape;
    if (!Array.isArray(tape)) {
      throw new Error("tfjs no longer has engine().state.activeTape: the instrument needs it");
    }
    return tape;
  }

  // A checkpoint region: tf.customGrad's tape node. It runs no registered kernel, and its inputs
  // are keyed by position ("0", "1", ...), where a kernel's are named ("a", "b", "x") and an op
  // scope's or a clone's is "x" (tfjs-core's engine.js, customGrad and runKernelFunc).
  function isCustomGradNode(node) {
    const keys = Object.keys(node.inputs || {});
    return (
      keys.length > 0 &&
      keys.every((key, i) => key === String(i)) &&
      !tf.getKernel(node.kernelName, tf.getBackend())
    );
  }

  // Roles (docs/PROTOCOL.md, `role`) by data flow on the tape: a node's output takes its role
  // from its kernel and its first input's role. The second layer's BatchMatMul output (a @ W2,
  // before the bias) is named y, as a fused addmm's output would be; kernels that only move or
  // copy data (Identity, Reshape, Cast) pass the role through.
  const ROLE_AFTER = {
    BatchMatMul: { x: "d1", a: "y" },
    Add: { d1: "h", y: "y" },
    Relu: { h: "a" },
  };

  function rolesByData(tape, inputs) {
    const roles = new Map(inputs.map((t) => [t.dataId, "x"]));
    for (const node of tape) {
      const first = Object.values(node.inputs || {})[0];
      const before = first ? roles.get(first.dataId) || "" : "";
      const table = ROLE_AFTER[node.kernelName];
      const role = table ? table[before] || "" : before;
      if (!role) continue;
      for (const out of node.outputs || []) if (out && !roles.has(out.dataId)) roles.set(out.dataId, role);
    }
    return roles;
  }

  function classify(tensor, inputs, parameters) {
    if (inputs.some((t) => t.dataId === tensor.dataId)) return "input";
    if (parameters.some((t) => t.dataId === tensor.dataId)) return "parameter";
    return "activation";
  }

  async function kernelCounts(fn) {
    const info = await tf.profile(fn);
    const counts = {};
    for (const kernel of info.kernels) counts[kernel.name] = (counts[kernel.name] || 0) + 1;
    return counts;
  }

  // A record of the backward pass of f(...args) with respect to every arg; `inputs` and
  // `parameters` say which tensors are x and which are weights (by their data).
  async function record(f, args, inputs, parameters, cotangent) {
    const saved = [];
    let regions = 0;
    const observed = (...a) => {
      const y = f(...a);
      const tape = activeTape();
      const seen = new Set();
      const roles = rolesByData(tape, inputs);
      for (const node of tape) {
        if (isCustomGradNode(node)) regions += 1;
        for (const t of node.saved || []) {
          if (seen.has(t.id)) continue;
          seen.add(t.id);
          saved.push({
            shape: t.shape,
            dtype: t.dtype,
            origin: classify(t, inputs, parameters),
            note: `saved by ${node.kernelName}`,
            role: classify(t, inputs, parameters) === "parameter" ? "" : roles.get(t.dataId) || "",
          });
        }
      }
      return y;
    };
    const forwardCounts = await kernelCounts(() => tf.tidy(() => f(...args)));
    const totalCounts = await kernelCounts(() =>
      tf.tidy(() => tf.grads(observed)(args, cotangent)),
    );
    const backward = {};
    for (const [name, n] of Object.entries(totalCounts)) {
      const extra = n - (forwardCounts[name] || 0);
      if (extra > 0) backward[name] = extra;
    }
    const recomputed = {};
    for (const name of FORWARD_ONLY_KERNELS) if (backward[name]) recomputed[name] = backward[name];
    const described = Object.entries(backward)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
    return {
      instrument: `tfjs tape after forward; tf.profile kernels in backward (${described})`,
      saved,
      recomputed,
      checkpoint_regions: regions,
      forward_matmuls: forwardCounts.BatchMatMul || 0,
      backward_matmuls: backward.BatchMatMul || 0,
    };
  }

  async function vjpRecord(params, x, checkpoint) {
    const args = tensors(params, x);
    const F = params.b1.length;
    try {
      return await record(model(checkpoint), args, args.slice(0, 1), args.slice(1), tf.ones([1, F]));
    } finally {
      tf.dispose(args);
    }
  }

  // The record of the gradient of the exercise (the checkpoint on) with respect to x alone.
  async function exerciseRecord(params, x) {
    const args = tensors(params, x);
    const F = params.b1.length;
    const [tx, ...weights] = args;
    try {
      const f = (x) => model(true)(x, ...weights);
      return await record(f, [tx], [tx], weights, tf.ones([1, F]));
    } finally {
      tf.dispose(args);
    }
  }

  return { forward, vjp, vjpRecord, exerciseRecord, model, record, tensors, remat, region, blockVjp };
});
