// Loading @tensorflow/tfjs, shared by the port (port.js) and the bench (bench.js): from the
// node_modules beside this file if there is one, else from <REMAT_CACHE>/node/tfjs-<lock hash>,
// where the first start runs `npm ci` on the committed package-lock.json (once; later starts,
// of either script, reuse it). Without npm, or if that fails, loadTf throws Unavailable.
//
// The install is made in a staging directory and renamed into place when complete, so a
// start never reads a half-written one. A cached install that does not load (a flipped bit)
// is replaced the same way, with a warning.
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
const PROGRESS_EVERY = 2;

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

// Seconds after which a lock with no holder file is taken for a start killed between making
// the lock and naming itself in it: a window of microseconds, so any margin will do; this
// one allows for clock skew on a shared cache.
const HOLDERLESS_AFTER = 30;

// The lock at `lockDir` as it is now: its inode, its age in seconds, and its holder, as the
// file inside it says ("host pid"; null while being made, or if its maker was killed before
// it wrote it). Null if there is no lock.
function lockAt(lockDir) {
  let stat;
  try {
    stat = fs.statSync(lockDir);
  } catch {
    return null;
  }
  let holder = null;
  try {
    holder = fs.readFileSync(path.join(lockDir, "holder"), "utf8");
  } catch {}
  return { ino: stat.ino, age: (Date.now() - stat.mtimeMs) / 1e3, holder };
}

// Whether `lock`'s holder has ended: a process of this host that is gone (a start killed
// during its npm ci, by Ctrl-C or a timeout, left its lock behind), or no holder written
// for HOLDERLESS_AFTER seconds.
function ended(lock) {
  if (lock.holder === null) return lock.age > HOLDERLESS_AFTER;
  const [host, pid] = lock.holder.split(" ");
  if (host !== os.hostname() || !(Number(pid) > 0)) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (error) {
    return error.code === "ESRCH";
  }
}

// Takes an ended `lock` away: renamed aside (one taker wins), then removed; had another
// start taken it over first and made a lock of its own (another inode or holder), that lock
// is put back.
function takeOver(lockDir, lock) {
  const aside = `${lockDir}.ended-${process.pid}`;
  try {
    fs.renameSync(lockDir, aside);
  } catch {
    return; // another start was first
  }
  const taken = lockAt(aside);
  if (!taken || taken.ino !== lock.ino || taken.holder !== lock.holder) {
    try {
      fs.renameSync(aside, lockDir);
      return;
    } catch {} // the lock is someone else's again: this one is stale all the same
  }
  fs.rmSync(aside, { recursive: true, force: true });
  const who = lock.holder === null ? `no holder written in ${Math.round(lock.age)} s` : lock.holder;
  console.error(`tfjs: ${lockDir} was held by a start that has ended (${who}): taken over`);
}

// Holds `directory`'s lock (a directory made atomically, naming its holder) while `work`
// runs: one installer at a time, the others waiting and logging every PROGRESS_EVERY seconds.
function withLock(directory, work) {
  fs.mkdirSync(path.dirname(directory), { recursive: true });
  const lockDir = `${directory}.lock`;
  const started = Date.now();
  const deadline = started + 600e3;
  for (let polls = 1; ; polls++) {
    try {
      fs.mkdirSync(lockDir);
      fs.writeFileSync(path.join(lockDir, "holder"), `${os.hostname()} ${process.pid}`);
      break;
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
      const lock = lockAt(lockDir);
      if (lock === null) continue; // released meanwhile
      if (ended(lock)) {
        takeOver(lockDir, lock);
        continue;
      }
      if (Date.now() > deadline) throw new Error(`${lockDir} is held for 10 minutes`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
      if (polls % (2 * PROGRESS_EVERY) === 0) {
        const seconds = Math.round((Date.now() - started) / 1e3);
        console.error(`tfjs: waiting ${seconds} s for another start's npm ci (${lockDir})`);
      }
    }
  }
  try {
    return work();
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}

// `npm ci` of the committed lock file into `directory`, which must not exist yet.
function npmCi(directory) {
  fs.mkdirSync(directory, { recursive: true });
  for (const file of ["package.json", "package-lock.json"]) {
    fs.copyFileSync(path.join(__dirname, file), path.join(directory, file));
  }
  const result = childProcess.spawnSync(
    process.execPath,
    // --ignore-scripts: tfjs is plain JavaScript; the one install script in the lock is
    // core-js's banner, which wrote a file to the temporary directory.
    ["-e", WITH_PROGRESS, "npm", "ci", "--no-audit", "--no-fund", "--omit=dev", "--ignore-scripts"],
    { cwd: directory, stdio: ["ignore", 2, 2] },
  );
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`npm ci exited with code ${result.status}`);
}

// Installs into the cache's `directory`, under its lock, unless another start did meanwhile:
// into a staging directory, renamed into place once complete. What was there (a `broken`
// install, or a killed start's) is renamed aside first, then removed.
function installCached(directory, broken) {
  withLock(directory, () => {
    let found = null;
    try {
      found = tryRequire(directory);
    } catch {} // still broken: this start replaces it
    if (found) return;
    removeLeftovers(directory); // a killed start's, if any: no other installer runs now
    const staging = `${directory}.staging-${process.pid}`;
    const why = broken ? "to replace the one that does not load" : "first start only";
    console.error(`tfjs: npm ci for ${directory} (${why})`);
    try {
      npmCi(staging);
      const aside = `${directory}.broken-${process.pid}`;
      if (fs.existsSync(directory)) fs.renameSync(directory, aside);
      fs.renameSync(staging, directory);
    } finally {
      removeLeftovers(directory);
    }
  });
  // What the failed load left in require's cache came from the install now replaced.
  for (const key of Object.keys(require.cache)) {
    if (key.startsWith(directory + path.sep)) delete require.cache[key];
  }
}

// The staging and set-aside directories beside the cache's `directory`, removed as far as
// they can be (one that cannot is left, not fatal: the install itself is done).
function removeLeftovers(directory) {
  const name = path.basename(directory);
  for (const entry of fs.readdirSync(path.dirname(directory))) {
    if (entry.startsWith(`${name}.staging-`) || entry.startsWith(`${name}.broken-`)) {
      try {
        fs.rmSync(path.join(path.dirname(directory), entry), { recursive: true, force: true });
      } catch {}
    }
  }
}

// Whether this process may write `directory`'s parent (the cache may be read-only).
function writable(directory) {
  try {
    fs.mkdirSync(path.dirname(directory), { recursive: true });
    fs.accessSync(path.dirname(directory), fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function loadTf() {
  const local = tryRequire(__dirname);
  if (local) return local;
  const directory = installDirectory();
  let broken = null;
  try {
    const cached = tryRequire(directory);
    if (cached) return cached;
  } catch (error) {
    // A cached install that does not load is the cache's fault, not tfjs's: replaced.
    broken = String(error.message).split("\n")[0];
  }
  needNpm();
  if (!writable(directory)) {
    const state = broken ? `does not load (${broken})` : "is not installed";
    throw new Unavailable(
      `tfjs in ${directory} ${state}, and ${path.dirname(directory)} is not writable ` +
        "(set REMAT_CACHE to a directory this user can write)",
    );
  }
  try {
    installCached(directory, broken);
  } catch (error) {
    throw new Unavailable(`npm ci of @tensorflow/tfjs failed: ${error.message}`);
  }
  if (broken) {
    // The same words from every process that meets it: the suite says a port's warning once
    // (docs/PROTOCOL.md).
    const said = `the cached tfjs in ${directory} did not load (${broken}): installed again there`;
    console.error(`remat-conformance: warning: ${said}`);
  }
  const installed = tryRequire(directory);
  if (!installed) throw new Unavailable(`npm ci left no @tensorflow/tfjs in ${directory}`);
  return installed;
}

function needNpm() {
  try {
    childProcess.execFileSync("npm", ["--version"], { stdio: "ignore" });
  } catch {
    throw new Unavailable(
      "needs @tensorflow/tfjs 4.22.0 from npm, and npm is not on PATH " +
        `(install Node.js with npm, or run npm ci in ${__dirname})`,
    );
  }
}

module.exports = { loadTf, installDirectory, Unavailable };
