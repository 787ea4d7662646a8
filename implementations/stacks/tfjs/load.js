// Loading @tensorflow/tfjs, shared by the port (port.js) and the bench (bench.js): from the
// node_modules beside this file if there is one, else from <REMAT_CACHE>/node/tfjs-<lock hash>,
// where the first start runs `npm ci` on the committed package-lock.json (once; later starts,
// of either script, reuse it). Without npm, or if that fails, loadTf throws Unavailable.
"use strict";
const fs = require("fs");
const path = require("path");
const os = require("os");
const crypto = require("crypto");
const childProcess = require("child_process");

// tfjs cannot run here; the message says why.
class Unavailable extends Error {}

function cacheRoot() {
  const setting = process.env.REMAT_CACHE || "";
  if (setting && !["off", "0", "no", "false"].includes(setting.toLowerCase())) return setting;
  const xdg = process.env.XDG_CACHE_HOME || "";
  const base = path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), ".cache");
  return path.join(base, "remat-conformance");
}

function installDirectory() {
  const lock = fs.readFileSync(path.join(__dirname, "package-lock.json"));
  const digest = crypto.createHash("sha256").update(lock).digest("hex").slice(0, 16);
  return path.join(cacheRoot(), "node", `tfjs-${digest}`);
}

function tryRequire(directory) {
  try {
    return require(require.resolve("@tensorflow/tfjs", { paths: [directory] }));
  } catch (error) {
    if (error.code === "MODULE_NOT_FOUND") return null;
    throw error;
  }
}

// Seconds between the progress lines a start logs while it installs or waits: the process
// adapter waits for `hello` as long as the port logs (docs/PROTOCOL.md), not a fixed time.
const PROGRESS_EVERY = 5;

// `npm ci` run by a Node child that logs a progress line every PROGRESS_EVERY seconds until
// npm exits, then exits with npm's code. (spawnSync blocks this process's timers.)
const WITH_PROGRESS = `
const started = Date.now();
const npm = require("child_process").spawn(process.argv[1], process.argv.slice(2), {
  stdio: ["ignore", 2, 2], shell: process.platform === "win32" });
const beat = setInterval(() => console.error(
  "tfjs: npm ci still running, " + Math.round((Date.now() - started) / 1e3) + " s"),
  ${PROGRESS_EVERY * 1e3});
npm.on("error", (error) => { console.error(error.message); process.exit(127); });
npm.on("exit", (code) => { clearInterval(beat); process.exit(code === null ? 1 : code); });
`;

function npmInstall(directory) {
  // One installer at a time: a directory made atomically is the lock.
  fs.mkdirSync(path.dirname(directory), { recursive: true });
  const lockDir = `${directory}.lock`;
  const started = Date.now();
  const deadline = started + 600e3;
  for (let polls = 1; ; polls++) {
    try {
      fs.mkdirSync(lockDir);
      break;
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
      if (Date.now() > deadline) throw new Error(`${lockDir} is held for 10 minutes`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
      if (polls % (2 * PROGRESS_EVERY) === 0) {
        const seconds = Math.round((Date.now() - started) / 1e3);
        console.error(`tfjs: waiting ${seconds} s for another start's npm ci (${lockDir})`);
      }
    }
  }
  try {
    if (tryRequire(directory)) return;
    fs.mkdirSync(directory, { recursive: true });
    for (const file of ["package.json", "package-lock.json"]) {
      fs.copyFileSync(path.join(__dirname, file), path.join(directory, file));
    }
    console.error(`tfjs: npm ci in ${directory} (first start only)`);
    const result = childProcess.spawnSync(
      process.execPath,
      ["-e", WITH_PROGRESS, "npm", "ci", "--no-audit", "--no-fund", "--omit=dev"],
      { cwd: directory, stdio: ["ignore", 2, 2] },
    );
    if (result.error) throw result.error;
    if (result.status !== 0) throw new Error(`npm ci exited with code ${result.status}`);
  } finally {
    fs.rmdirSync(lockDir);
  }
}

function loadTf() {
  const local = tryRequire(__dirname);
  if (local) return local;
  const directory = installDirectory();
  let cached;
  try {
    cached = tryRequire(directory);
  } catch (error) {
    // A cached install that does not load (a flipped bit, a half-written file) is the cache's
    // fault, not tfjs's: install afresh in a scratch directory (the cache may be read-only).
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "remat-tfjs-"));
    process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));
    const why = String(error.message).split("\n")[0];
    // The same words from every process that meets it (no scratch path): the suite says a
    // port's warning once (docs/PROTOCOL.md), and each of its processes installs again.
    console.error(
      `remat-conformance: warning: the cached tfjs in ${directory} does not load (${why}): ` +
        "installed again in a scratch directory, for each process; delete that directory " +
        "to have it installed there again",
    );
    return install(scratch);
  }
  return cached || install(directory);
}

function install(directory) {
  try {
    childProcess.execFileSync("npm", ["--version"], { stdio: "ignore" });
  } catch {
    throw new Unavailable(
      "needs @tensorflow/tfjs 4.22.0 from npm, and npm is not on PATH " +
        `(install Node.js with npm, or run npm ci in ${__dirname})`,
    );
  }
  try {
    npmInstall(directory);
  } catch (error) {
    throw new Unavailable(`npm ci of @tensorflow/tfjs failed: ${error.message}`);
  }
  const installed = tryRequire(directory);
  if (!installed) throw new Unavailable(`npm ci left no @tensorflow/tfjs in ${directory}`);
  return installed;
}

module.exports = { loadTf, installDirectory, Unavailable };
