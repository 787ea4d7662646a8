// tfjs's instrument (instrument.py's hooks, run in the child): a watch around the very call
// that is checked, a forward pass and its VJP under tf.grads, giving what instrument.py turns
// into a Record.
//
// - saved: the tensors the nodes of tfjs's one tape hold at the end of the forward pass
//   (engine().state.activeTape, read inside tf.grads, as mlp.js's evidence does), one per
//   tensor datum; x and the parameters marked by their data. No roles: the tape's nodes name
//   kernels, not the block's tensors (mlp.js's roles-by-dataflow are the port's own).
// - forward_matmuls, backward_matmuls: the BatchMatMul kernels tf.profile sees, split where
//   the differentiated function returns (engine().state.activeProfile.kernels, read there).
// - evaluations, regions, reruns: block.js's notes.
"use strict";

module.exports = function instrument(tf, blocks) {
  function engineState(key) {
    const found = tf.engine().state[key];
    if (found === undefined || found === null) {
      throw new Error(`tfjs no longer has engine().state.${key}: the instrument needs it`);
    }
    return found;
  }

  function matmulsSoFar() {
    const kernels = engineState("activeProfile").kernels;
    if (!Array.isArray(kernels)) throw new Error("tfjs's activeProfile has no kernels list");
    return kernels.filter((k) => k.name === "BatchMatMul").length;
  }

  function savedOnTape(x, params) {
    const tape = engineState("activeTape");
    if (!Array.isArray(tape)) throw new Error("tfjs's activeTape is not a list of nodes");
    const saved = [];
    const seen = new Set();
    for (const node of tape) {
      for (const t of node.saved || []) {
        if (seen.has(t.dataId)) continue;
        seen.add(t.dataId);
        let origin = "activation";
        if (t.dataId === x.dataId) origin = "input";
        else if (params.some((q) => q.dataId === t.dataId)) origin = "parameter";
        saved.push({ shape: t.shape, dtype: t.dtype, origin, note: `saved by ${node.kernelName}`, memory_space: "device" });
      }
    }
    return saved;
  }

  // The call: `run` (block.js's placed stack) differentiated with respect to the parameters
  // or x (`wrt`) under tf.valueAndGrads, the gradients' data read; under tf.profile and read
  // when `watch`. Returns { kept: [y, ...grads] (kept past the tidy), record (or null) }.
  async function call(run, x, params, cotangent, wrt, watch) {
    const notes = blocks.notes;
    notes.phase = "forward";
    notes.evaluations = [];
    notes.regions = 0;
    notes.reruns = 0;
    const record = watch ? {} : null;
    const forward = (...args) => {
      const y = wrt === "x" ? run(args[0], params) : run(x, args);
      if (watch) {
        record.saved = savedOnTape(x, params);
        record.forward_matmuls = matmulsSoFar();
        record.regions = notes.regions;
      }
      notes.phase = "backward";
      return y;
    };
    const differentiate = () =>
      tf.tidy(() => {
        const { value, grads } = tf.valueAndGrads(forward)(wrt === "x" ? [x] : params, cotangent);
        for (const g of grads) g.dataSync();
        return [value, ...grads];
      });
    let kept;
    if (watch) {
      await tf.profile(() => {
        kept = differentiate();
      });
      record.backward_matmuls = matmulsSoFar() - record.forward_matmuls;
      record.evaluations = notes.evaluations;
      record.reruns = notes.reruns;
    } else {
      kept = differentiate();
    }
    return { kept, record };
  }

  return { call };
};
