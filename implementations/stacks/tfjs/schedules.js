// bench --schedules on tfjs (docs/PROTOCOL.md, Schedules): the depth-L stack with its regions
// where the request's placement tree puts them. The tree comes from the suite
// (`Schedule.placement(L)`): an array of items, a block index (run plain) or an array (a
// region of those items, nested as the tree nests).
//
// Each outermost region is a tf.customGrad that keeps its input (save) and whose gradient reruns
// its items from it: plain blocks keep their internals, inner regions their input only, then
// backs through them last item first, an inner region by rerunning its own items in turn. The
// nesting is by hand inside the gradient: tfjs runs a customGrad's function with its one tape
// off, so a customGrad nested in another keeps nothing (mlp.js, Composition), and a nested
// tf.grads would replace the tape.
//
// Instruments: forward matmuls are this module's own calls of x @ W1 and a @ W2 (the tape's
// and the reruns'; the backward's products are tfjs's matMul gradients and the hand-written
// pullback's, never counted), split at the end of the forward pass; regions the customGrad
// regions entered in the forward pass and the inner regions its forward walks; no peak bytes
// (bench.js: tfjs frees a step's intermediates only when its tf.tidy ends).
"use strict";

const PARAMS = 4; // w1, b1, w2, b2 per block

module.exports = function schedules(tf, RequestError) {
  const notes = { matmuls: 0, regions: 0 };

  // The block's forward, its two matmuls noted; `keep` returns its internals for a pullback.
  function block(x, w1, b1, w2, b2) {
    notes.matmuls += 2;
    const h = tf.add(tf.matMul(x, w1), b1);
    const a = tf.relu(h);
    return { y: tf.add(tf.matMul(a, w2), b2), h, a };
  }

  // A plain block's VJP from its input and internals: [dx, dw1, db1, dw2, db2].
  function blockPullback(dy, x, h, a, w1, w2) {
    const dh = tf.mul(tf.matMul(dy, w2, false, true), tf.step(h));
    return [
      tf.matMul(dh, w1, false, true),
      tf.matMul(x, dh, true, false),
      tf.sum(dh, 0),
      tf.matMul(a, dy, true, false),
      tf.sum(dy, 0),
    ];
  }

  function blocksOf(items) {
    let count = 0;
    for (const item of items) count += Array.isArray(item) ? blocksOf(item) : 1;
    return count;
  }

  // The items' output from x, nothing kept (a region's forward, or an inner region in a rerun).
  function run(items, x, params) {
    let start = 0;
    for (const item of items) {
      const n = Array.isArray(item) ? blocksOf(item) : 1;
      const own = params.slice(start, start + PARAMS * n);
      if (Array.isArray(item)) notes.regions += 1; // an inner region, walked in the forward
      x = Array.isArray(item) ? run(item, x, own) : block(x, ...own).y;
      start += PARAMS * n;
    }
    return x;
  }

  // A region's gradient: rerun its items from x (plain blocks keep internals, inner regions
  // their input), then back through them last first. Returns [dx, ...dparams].
  function regionPullback(items, x, params, dy) {
    const kept = [];
    let start = 0;
    for (const item of items) {
      const n = Array.isArray(item) ? blocksOf(item) : 1;
      const own = params.slice(start, start + PARAMS * n);
      if (Array.isArray(item)) {
        kept.push({ item, x, own });
        x = run(item, x, own);
      } else {
        const out = block(x, ...own);
        kept.push({ item, x, own, h: out.h, a: out.a });
        x = out.y;
      }
      start += PARAMS * n;
    }
    const grads = [];
    for (const k of kept.reverse()) {
      let found;
      if (Array.isArray(k.item)) {
        found = regionPullback(k.item, k.x, k.own, dy);
      } else {
        const [w1, , w2] = k.own;
        found = blockPullback(dy, k.x, k.h, k.a, w1, w2);
      }
      dy = found[0];
      grads.unshift(...found.slice(1));
    }
    return [dy, ...grads];
  }

  // An outermost region as a tf.customGrad of (x, ...its blocks' parameters).
  function region(items) {
    return tf.customGrad((...args) => {
      const save = args.pop();
      save(args);
      notes.regions += 1;
      const [x, ...params] = args;
      return {
        value: run(items, x, params),
        gradFunc: (dy, saved) => {
          const [sx, ...sparams] = saved;
          return regionPullback(items, sx, sparams, dy);
        },
      };
    });
  }

  // The placement checked: an array of block indices and arrays, covering 0..L-1 in order.
  function checked(placement, depth) {
    let next = 0;
    const walk = (items, where) => {
      if (!Array.isArray(items) || items.length === 0) {
        throw new RequestError("ValueError", `${where} must be a non-empty array of items`);
      }
      for (const item of items) {
        if (Array.isArray(item)) walk(item, `${where} region`);
        else if (item === next) next += 1;
        else throw new RequestError("ValueError", `${where}: expected block ${next}, got ${JSON.stringify(item)}`);
      }
    };
    walk(placement, "placement");
    if (next !== depth) {
      throw new RequestError("ValueError", `placement covers ${next} blocks, the request sends ${depth}`);
    }
    return placement;
  }

  // The stack as a function of the flat parameters: top-level items as the tree says.
  function stackOf(placement) {
    const parts = placement.map((item) =>
      Array.isArray(item) ? { n: blocksOf(item), run: region(item) } : { n: 1, run: (x, ...p) => block(x, ...p).y },
    );
    return {
      run(x, params) {
        let start = 0;
        for (const part of parts) {
          x = part.run(x, ...params.slice(start, start + PARAMS * part.n));
          start += PARAMS * part.n;
        }
        return x;
      },
    };
  }

  return { notes, checked, stackOf };
};
