#!/usr/bin/env node
// The tfjs half of its block and instrument (block.py, instrument.py): a child that holds
// tensors, places the block over L blocks (block.js) and runs the very call that is checked,
// a forward pass and its VJP, watched on request (instrument.js). On tfjs's pure-JS CPU
// backend.
//
// It speaks JSON lines on stdin/stdout in the shape of docs/PROTOCOL.md (ids, `result` or
// `error: {type, message}`, float32 arrays as base64), with its own requests: `hello`,
// `tensor` (an array kept: its id), `read` (a kept tensor's array), `place` (a placement tree
// and a policy per region: a program's id), `vjp` (a program on kept tensors, with respect to
// the parameters or x: the ids of y and the gradients, kept, and the record when `watch`),
// `release` (tensors and programs let go) and `shutdown`. Every request may carry `release`.
"use strict";
// The JSON-lines loop, the answered errors and the wire's arrays, as the port's (port.js).
const { RequestError, decodeArray, encodeArray, serve } = require("./serve.js");
const load = require("./load.js");

const PROTOCOL = 2;
const NAME = "tfjs-bench";

let tf = null;
let blocks = null;
let instrument = null;

// tfjs on its CPU backend, and the block's code: if this throws, serve.js answers every request
// but shutdown with Unavailable, saying why.
async function start() {
  tf = load.loadTf();
  await tf.setBackend("cpu");
  blocks = require("./block.js")(tf, RequestError);
  instrument = require("./instrument.js")(tf, blocks);
}

const tensors = new Map();
const programs = new Map();
let nextId = 0;

function kept(id, name) {
  const found = tensors.get(id);
  if (!found) throw new RequestError("ValueError", `${name}: no tensor ${JSON.stringify(id)}`);
  return found;
}

function keep(tensor) {
  nextId += 1;
  tensors.set(nextId, tensor);
  return nextId;
}

function release(request) {
  const { tensors: ids = [], programs: made = [] } = request.release || {};
  for (const id of ids) {
    if (tensors.has(id)) tensors.get(id).dispose();
    tensors.delete(id);
  }
  for (const id of made) programs.delete(id);
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
      region_policies: blocks.POLICIES,
    };
  },
  tensor(request) {
    const value = request.array;
    return { tensor: keep(tf.tensor(decodeArray(value, "array"), value.shape, "float32")) };
  },
  read(request) {
    const t = kept(request.tensor, "tensor");
    return { array: encodeArray(t.dataSync(), t.shape) };
  },
  place(request) {
    const placement = blocks.checked(request.placement, request.depth, request.policies);
    nextId += 1;
    programs.set(nextId, blocks.place(placement, request.policies));
    return { program: nextId };
  },
  async vjp(request) {
    const run = programs.get(request.program);
    if (!run) throw new RequestError("ValueError", `no program ${JSON.stringify(request.program)}`);
    if (!["params", "x"].includes(request.wrt)) {
      throw new RequestError("ValueError", `wrt must be "params" or "x", got ${JSON.stringify(request.wrt)}`);
    }
    const params = (request.params || []).map((id, i) => kept(id, `params[${i}]`));
    const x = kept(request.x, "x");
    const cotangent = kept(request.cotangent, "cotangent");
    const { kept: out, record } = await instrument.call(run, x, params, cotangent, request.wrt, !!request.watch);
    const [y, ...grads] = out.map(keep);
    return { y, grads, record };
  },
  release() {
    return {};
  },
  shutdown() {
    return {};
  },
};

// Every request lets go of what it names in `release` first (the Python side's finalizers).
const released = {};
for (const [op, handler] of Object.entries(handlers)) {
  released[op] = (request) => {
    if (tf !== null && op !== "shutdown") release(request);
    return handler(request);
  };
}

serve(start, released);
