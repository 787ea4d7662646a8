// The exercise's block in TensorFlow.js, and the one builder that places it over L blocks
// (block.py's `place`; docs/PROTOCOL.md, Schedules). A placement is a tree: an array of items,
// a block index (run plain) or an array (a region of those items, nested as the tree nests),
// with a policy per region: "" (tf.customGrad as it is) or "save-mm" (tfjs has no policy API:
// written out, the block's first matmul outside a region that reruns the rest).
//
// Each outermost region is a tf.customGrad that keeps its input and parameters (save) and
// whose gradient reruns its items from them: plain blocks keep their internals, inner regions
// their input only, then backs through them last item first, an inner region by rerunning its
// own items in turn. The nesting is by hand inside the gradient: tfjs runs a customGrad's
// function with its one tape off, so a customGrad nested in another keeps nothing (mlp.js,
// Composition), and a nested tf.grads would replace the tape. A rerun stops early where
// mlp.js's region does: the region's last block needs no a @ W2 to be differentiated.
//
// `notes` is what the instrument reads (instrument.js): every block evaluation with its
// index, phase and the matmuls it ran, the regions entered in the forward pass (customGrad and
// inner) and the region gradients run in the backward pass. The caller sets `notes.phase`.
"use strict";

const PARAMS = 4; // w1, b1, w2, b2 per block
const POLICIES = ["", "save-mm"];

module.exports = function blocks(tf, RequestError) {
  const notes = { phase: "forward", evaluations: [], regions: 0, reruns: 0 };

  function evaluated(index, ran) {
    notes.evaluations.push({ block: index, phase: notes.phase, ran });
  }

  // The block's forward; `early`: stop before a @ W2 (a rerun that needs only h and a).
  function block(index, x, w1, b1, w2, b2, early = false) {
    const h = tf.add(tf.matMul(x, w1), b1);
    const a = tf.relu(h);
    evaluated(index, early ? ["x@W1"] : ["x@W1", "a@W2"]);
    return { y: early ? null : tf.add(tf.matMul(a, w2), b2), h, a };
  }

  // A plain block's VJP from its input and internals: [dx, dw1, db1, dw2, db2], the port's.
  const blockPullback = require("./mlp.js")(tf).blockVjp;

  function indices(items) {
    const found = [];
    for (const item of items) found.push(...(Array.isArray(item) ? indices(item) : [item]));
    return found;
  }

  // The items' output from x, nothing kept (a region's forward, or an inner region in a rerun).
  function run(items, x, params) {
    let start = 0;
    for (const item of items) {
      const n = Array.isArray(item) ? indices(item).length : 1;
      const own = params.slice(start, start + PARAMS * n);
      if (Array.isArray(item)) notes.regions += notes.phase === "forward" ? 1 : 0;
      x = Array.isArray(item) ? run(item, x, own) : block(item, x, ...own).y;
      start += PARAMS * n;
    }
    return x;
  }

  // A region's gradient: rerun its items from x (plain blocks keep internals, inner regions
  // their input), then back through them last first. Returns [dx, ...dparams].
  function regionPullback(items, x, params, dy) {
    notes.reruns += 1;
    const kept = [];
    let start = 0;
    for (const [i, item] of items.entries()) {
      const n = Array.isArray(item) ? indices(item).length : 1;
      const own = params.slice(start, start + PARAMS * n);
      if (Array.isArray(item)) {
        kept.push({ item, x, own });
        x = run(item, x, own);
      } else {
        const out = block(item, x, ...own, i === items.length - 1);
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

  // save-mm over one block: x @ W1 runs outside (kept, as a policy saving the matmul would),
  // a tf.customGrad region keeps its output and reruns bias and relu by hand (no matmul).
  function savingMatmul(index) {
    const rest = tf.customGrad((d1, b1, w2, b2, save) => {
      save([d1, b1, w2]);
      notes.regions += 1;
      const a = tf.relu(tf.add(d1, b1));
      evaluated(index, ["x@W1", "a@W2"]); // its x @ W1 is the d1 it was given
      return {
        value: tf.add(tf.matMul(a, w2), b2),
        gradFunc: (dy, saved) => {
          notes.reruns += 1;
          const [sd1, sb1, sw2] = saved;
          const z = tf.add(sd1, sb1); // recomputed
          const ra = tf.relu(z); // recomputed
          evaluated(index, []); // a rerun of bias and relu: both matmuls skipped
          const dz = tf.mul(tf.matMul(dy, sw2, false, true), tf.step(z));
          return [dz, tf.sum(dz, 0), tf.matMul(ra, dy, true, false), tf.sum(dy, 0)];
        },
      };
    });
    return (x, w1, b1, w2, b2) => rest(tf.matMul(x, w1), b1, w2, b2);
  }

  // The placement checked: an array of block indices and arrays, covering 0..L-1 in order;
  // `policies` one per region (outer first, in order), each of POLICIES.
  function checked(placement, depth, policies) {
    let next = 0;
    const nested = []; // every region's nesting depth, in order (1: outermost)
    const walk = (items, where, depthOf = 1) => {
      if (!Array.isArray(items) || items.length === 0) {
        throw new RequestError("ValueError", `${where} must be a non-empty array of items`);
      }
      for (const item of items) {
        if (Array.isArray(item)) {
          nested.push(depthOf);
          walk(item, `${where} region`, depthOf + 1);
        } else if (item === next) next += 1;
        else throw new RequestError("ValueError", `${where}: expected block ${next}, got ${JSON.stringify(item)}`);
      }
    };
    walk(placement, "placement");
    if (next !== depth) {
      throw new RequestError("ValueError", `placement covers ${next} blocks, the request sends ${depth}`);
    }
    if (!Array.isArray(policies) || policies.length !== nested.length) {
      throw new RequestError("ValueError", `policies must be one per region (${nested.length}), got ${JSON.stringify(policies)}`);
    }
    for (const [i, policy] of policies.entries()) {
      if (!POLICIES.includes(policy)) {
        throw new RequestError("ValueError", `policy ${JSON.stringify(policy)} is not one of ${JSON.stringify(POLICIES)}`);
      }
      if (policy && nested[i] > 1) {
        throw new RequestError("ValueError", `policies[${i}]: an inner region runs by hand in its outer one's gradient, under no policy of its own`);
      }
    }
    return placement;
  }

  // The stack as a function of (x, flat parameters): top-level items as the tree says.
  function place(placement, policies) {
    let number = 0; // regions in order, outer first: an outer region's inner ones follow it
    const parts = placement.map((item) => {
      if (!Array.isArray(item)) return { n: 1, run: (x, ...p) => block(item, x, ...p).y };
      const policy = policies[number];
      number += 1 + indicesOfRegions(item);
      if (policy === "save-mm") {
        if (item.length !== 1 || Array.isArray(item[0]) || indicesOfRegions(item) !== 0) {
          throw new RequestError("ValueError", "policy 'save-mm' is written out for a region of one block only");
        }
        return { n: 1, run: savingMatmul(item[0]) };
      }
      return { n: indices(item).length, run: region(item) };
    });
    return (x, params) => {
      let start = 0;
      for (const part of parts) {
        x = part.run(x, ...params.slice(start, start + PARAMS * part.n));
        start += PARAMS * part.n;
      }
      return x;
    };
  }

  function indicesOfRegions(items) {
    let count = 0;
    for (const item of items) if (Array.isArray(item)) count += 1 + indicesOfRegions(item);
    return count;
  }

  return { notes, checked, place, POLICIES };
};
