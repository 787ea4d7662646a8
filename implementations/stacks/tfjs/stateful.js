// The block with variables and RNGs in tfjs (implementations/stateful.py, property (l)):
// x @ w1 + b1 -> BatchNorm (training: tf.moments' batch mean and biased variance, epsilon 1e-5)
// -> relu -> dropout(rate) -> @ w2 + b2; the running statistics are tf.variables updated with
// momentum 0.99 in Flax's convention (the old value kept).
//
// Dropout is tf.dropout's own recipe (tfjs-core src/ops/dropout.ts: floor(u + keep) / keep,
// u = tf.randomUniform(shape, 0, 1, "float32", seed)), written out here so the mask is recorded
// where it is drawn. Its seed is the decimal string of `seed`: tfjs seeds an alea generator
// from it per call and keeps no global generator state for a seeded op.
//
// The checkpoint: tf.customGrad keeps the block's inputs (save) and its gradFunc recomputes the
// block from them, drawing the mask again (the same seed), then runs the VJP by hand (a nested
// tf.grads in a gradFunc would replace tfjs's one global tape: mlp.js). The statistics are
// updated where the forward runs (`update`); the recompute returns its statistics unused.
"use strict";

const EPSILON = 1e-5;
const MOMENTUM = 0.99;

module.exports = function make(tf) {
  // The block's forward from its inputs; `draws` receives the kept mask it draws.
  function forward(x, w1, b1, gamma, beta, w2, b2, rate, seed, draws) {
    const h = tf.add(tf.matMul(x, w1), b1);
    const { mean, variance } = tf.moments(h, 0); // the biased batch variance
    const inv = tf.rsqrt(tf.add(variance, EPSILON));
    const xhat = tf.mul(tf.sub(h, mean), inv);
    const z = tf.add(tf.mul(xhat, gamma), beta);
    const a = tf.relu(z);
    let multiplier = tf.onesLike(a); // rate 0: tf.dropout draws nothing
    if (rate > 0) {
      const keep = 1 - rate;
      const u = tf.randomUniform(a.shape, 0, 1, "float32", seed);
      multiplier = tf.div(tf.floor(tf.add(u, keep)), keep);
      draws.push(Array.from(multiplier.dataSync(), (m) => m > 0));
    }
    const y = tf.add(tf.matMul(tf.mul(a, multiplier), w2), b2);
    return { y, xhat, inv, z, a, multiplier, mean, variance };
  }

  // The VJP of <y, dy> from a forward's internals: [dx, dw1, db1, dgamma, dbeta, dw2, db2].
  function vjp(dy, x, w1, gamma, w2, f) {
    const batch = x.shape[0];
    const d = tf.mul(f.a, f.multiplier);
    const dz = tf.mul(tf.mul(tf.matMul(dy, w2, false, true), f.multiplier), tf.step(f.z));
    const dxhat = tf.mul(dz, gamma);
    const dh = tf.mul(
      tf.div(f.inv, batch),
      tf.sub(
        tf.sub(tf.mul(dxhat, batch), tf.sum(dxhat, 0)),
        tf.mul(f.xhat, tf.sum(tf.mul(dxhat, f.xhat), 0)),
      ),
    );
    return [
      tf.matMul(dh, w1, false, true),
      tf.matMul(x, dh, true, false),
      tf.sum(dh, 0),
      tf.sum(tf.mul(dz, f.xhat), 0),
      tf.sum(dz, 0),
      tf.matMul(d, dy, true, false),
      tf.sum(dy, 0),
    ];
  }

  // One training step from `arrays` (Float32Arrays by canonical name, mean and var included):
  // the forward, tf.valueAndGrads of <y, cotangent>, the update. Plain arrays out (StateStep's wire).
  function step(arrays, seed, x, B, D, F, rate, cotangent, checkpoint) {
    const draws = [];
    let updates = 0;
    const running = [tf.variable(tf.tensor1d(arrays.mean)), tf.variable(tf.tensor1d(arrays.var))];
    function update(mean, variance) {
      updates += 1;
      running[0].assign(tf.add(tf.mul(running[0], MOMENTUM), tf.mul(mean, 1 - MOMENTUM)));
      running[1].assign(tf.add(tf.mul(running[1], MOMENTUM), tf.mul(variance, 1 - MOMENTUM)));
    }
    const inputs = [
      tf.tensor2d(x, [B, D]),
      tf.tensor2d(arrays.w1, [D, F]),
      tf.tensor1d(arrays.b1),
      tf.tensor1d(arrays.gamma),
      tf.tensor1d(arrays.beta),
      tf.tensor2d(arrays.w2, [F, F]),
      tf.tensor1d(arrays.b2),
    ];
    const seedText = String(seed);
    function plain(...t) {
      const f = forward(...t, rate, seedText, draws);
      update(f.mean, f.variance);
      return f.y;
    }
    const region = tf.customGrad((...args) => {
      const save = args.pop();
      save(args);
      const f = forward(...args, rate, seedText, draws);
      update(f.mean, f.variance);
      const gradFunc = (dy, saved) => {
        const [sx, sw1, sb1, sgamma, sbeta, sw2, sb2] = saved;
        const again = forward(sx, sw1, sb1, sgamma, sbeta, sw2, sb2, rate, seedText, draws);
        return vjp(dy, sx, sw1, sgamma, sw2, again);
      };
      return { value: f.y, gradFunc };
    });
    const body = checkpoint ? region : plain;
    const dy = tf.tensor2d(cotangent, [B, F]);
    const { value: y, grads } = tf.valueAndGrads(body)(inputs, dy);
    const names = ["x", "w1", "b1", "gamma", "beta", "w2", "b2"];
    const out = {};
    names.forEach((n, i) => (out[n] = grads[i].arraySync()));
    const kept = () => Array.from({ length: B }, () => new Array(F).fill(true));
    const rows = (flat) => Array.from({ length: B }, (_, i) => flat.slice(i * F, (i + 1) * F));
    // No global generator moves for a seeded op: the stream is the seed's, before and after.
    const words = [Number(BigInt(seed) >> 32n), Number(BigInt(seed) & 0xffffffffn)];
    const result = {
      y: y.arraySync(),
      grads: out,
      mask: rate > 0 ? rows(draws[0]) : kept(),
      recompute_masks: draws.slice(1).map(rows),
      running_mean: Array.from(running[0].dataSync()),
      running_var: Array.from(running[1].dataSync()),
      counters: {},
      updates,
      rng_before: words,
      rng_after: words,
    };
    running.forEach((v) => v.dispose()); // variables outlive a tf.tidy
    return result;
  }

  return { step };
};
