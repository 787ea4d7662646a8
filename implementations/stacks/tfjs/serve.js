// What both tfjs programs serve with, the port (port.js) and the bench (bench.js): the JSON-lines
// loop in the shape of docs/PROTOCOL.md (one request a line on stdin, one answer a line on
// stdout: `{id, result}` or `{id, error: {type, message}}`), the error a request is answered
// with, and float32 arrays on the wire (base64, little-endian).
//
// Requiring it sends everything a library logs (console.log, ...) to stderr: stdout carries
// answers only.
"use strict";
const os = require("os");
const readline = require("readline");
const load = require("./load.js");

for (const method of ["log", "info", "warn", "debug"]) console[method] = console.error;

const writeAnswer = (object) => process.stdout.write(JSON.stringify(object) + "\n");

// An error the request is answered with, by its type (ProtocolError, ValueError, TypeError,
// SizeLimitError, Unavailable); any other error is answered as an InternalError.
class RequestError extends Error {
  constructor(type, message) {
    super(message);
    this.type = type;
  }
}

// -- values on the wire ---------------------------------------------------------------------
const LITTLE_ENDIAN = os.endianness() === "LE";

// A float32 array object's values (a Float32Array of its own); `name` is what an error names.
function decodeArray(value, name) {
  if (!value || value.dtype !== "float32" || !Array.isArray(value.shape)) {
    throw new RequestError("ProtocolError", `${name} must be a float32 array object`);
  }
  const bytes = Buffer.from(value.data, "base64");
  const count = value.shape.reduce((a, b) => a * b, 1);
  if (bytes.length !== 4 * count) {
    throw new RequestError("ProtocolError", `${name}: ${bytes.length} bytes for shape ${value.shape}`);
  }
  if (LITTLE_ENDIAN) {
    // A copy into a buffer of its own: aligned, and no view on Node's shared pool.
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  }
  const out = new Float32Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  for (let i = 0; i < count; i++) out[i] = view.getFloat32(4 * i, true);
  return out;
}

function encodeArray(array, shape) {
  const floats = Float32Array.from(array);
  let bytes;
  if (LITTLE_ENDIAN) {
    bytes = Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength);
  } else {
    bytes = Buffer.alloc(4 * floats.length);
    for (let i = 0; i < floats.length; i++) bytes.writeFloatLE(floats[i], 4 * i);
  }
  return { dtype: "float32", shape, data: bytes.toString("base64") };
}

// -- the loop -------------------------------------------------------------------------------
// Why tfjs cannot run, as the Unavailable answer: load.js's reason, or whatever else failed.
function unavailable(error) {
  if (error instanceof RequestError) return error;
  return new RequestError("Unavailable", error instanceof load.Unavailable ? error.message : String(error));
}

// Runs `start()` (tfjs loaded; if it throws, every request but `shutdown` is answered with
// Unavailable), then answers each request line with `handlers[op](request)` (awaited) until
// `shutdown` or the end of stdin, and exits.
async function serve(start, handlers) {
  let loadError = null;
  try {
    await start();
  } catch (error) {
    loadError = unavailable(error);
  }
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch (error) {
      writeAnswer({ id: null, error: { type: "ProtocolError", message: `not JSON: ${error.message}` } });
      continue;
    }
    const handler = Object.prototype.hasOwnProperty.call(handlers, request.op) ? handlers[request.op] : null;
    try {
      if (!handler) throw new RequestError("ProtocolError", `unknown op ${JSON.stringify(request.op)}`);
      if (loadError && request.op !== "shutdown") throw loadError;
      writeAnswer({ id: request.id, result: await handler(request) });
    } catch (error) {
      const type = error instanceof RequestError ? error.type : "InternalError";
      writeAnswer({ id: request.id, error: { type, message: error.message || String(error) } });
    }
    if (request.op === "shutdown") break;
  }
  process.exit(0);
}

module.exports = { RequestError, decodeArray, encodeArray, serve, writeAnswer };
