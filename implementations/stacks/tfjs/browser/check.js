// Checks the golden vectors (window.GOLDEN) with the port's code (RematInit, RematMlp) on
// tfjs's cpu backend, and writes one row per vector and check into the page, then the status:
// "done: N passed, M failed" or "error: ...". The tolerance model is the vectors' own: each
// output and gradient within its stored bound, the init within the stored ulps.
(function () {
  "use strict";
  const table = document.getElementById("results");
  const status = document.getElementById("status");

  function row(vector, check, verdict, detail) {
    const tr = document.createElement("tr");
    tr.className = verdict;
    for (const text of [vector, check, verdict, detail]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }

  // The worst |actual - expected| / bound (0/0 counts as 0); Infinity for a non-finite value.
  function worstRatio(actual, expected, bound) {
    let worst = 0;
    for (let i = 0; i < expected.length; i++) {
      const error = Math.abs(actual[i] - expected[i]);
      if (!Number.isFinite(actual[i])) return Infinity;
      if (error === 0) continue;
      worst = Math.max(worst, error / bound[i]);
    }
    return worst;
  }

  const f32 = new Float32Array(1);
  const i32 = new Int32Array(f32.buffer);
  function ordered(value) {
    f32[0] = value;
    return i32[0] < 0 ? -2147483648 - i32[0] : i32[0];
  }
  function worstUlps(actual, expected) {
    let worst = 0;
    for (let i = 0; i < expected.length; i++) {
      worst = Math.max(worst, Math.abs(ordered(actual[i]) - ordered(expected[i])));
    }
    return worst;
  }

  async function run() {
    await tf.setBackend("cpu");
    const mlp = RematMlp(tf);
    let passed = 0;
    let failed = 0;
    const verdict = (vector, check, ok, detail) => {
      row(vector, check, ok ? "pass" : "fail", detail);
      if (ok) passed += 1;
      else failed += 1;
    };
    for (const v of GOLDEN.vectors) {
      const name = `vector ${v.id} (${v.kind}, D=${v.dim}, F=${v.features})`;
      const params = { w1: v.param_w1, b1: v.param_b1, w2: v.param_w2, b2: v.param_b2 };
      const y = mlp.forward(params, v.x, true);
      const r = worstRatio(y, v.output, v.output_bound);
      verdict(name, "forward", r <= 1, `worst error/bound ${r.toFixed(3)}`);
      const grads = mlp.vjp(params, v.x, v.cotangent, true);
      let worst = 0;
      for (const k of ["w1", "b1", "w2", "b2", "x"]) {
        worst = Math.max(worst, worstRatio(grads[k], v[`grad_${k}`], v[`grad_bound_${k}`]));
      }
      verdict(name, "vjp", worst <= 1, `worst error/bound ${worst.toFixed(3)}`);
      if (v.kind !== "seeded") continue;
      const mine = RematInit.canonicalParams(BigInt(v.seed), v.dim, v.features);
      const ulps = Math.max(worstUlps(mine.w1, v.param_w1), worstUlps(mine.w2, v.param_w2));
      verdict(name, "init", ulps <= GOLDEN.init_ulps, `${ulps} ulp`);
      const out = mlp.forward(mine, v.x, true);
      const e = worstRatio(out, v.output, v.output_bound);
      verdict(name, "nn_checkpoint_forward", e <= 1, `worst error/bound ${e.toFixed(3)}`);
    }
    status.textContent = `done: ${passed} passed, ${failed} failed (tfjs ${tf.version.tfjs}, ${tf.getBackend()} backend)`;
  }

  run().catch((error) => {
    status.textContent = `error: ${error && error.stack ? error.stack : error}`;
  });
})();
