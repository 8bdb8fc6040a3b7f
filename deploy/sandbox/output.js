// Block-buffered process.stdout and process.stderr for the JavaScript that
// node_main.js runs. Under gVisor every write(2) costs 100-150 µs, and node writes each
// console.log to a pipe with one (capture.py in the kernel does the same for Python).
// What the code writes is held and written out
//   - when 64 KiB are held;
//   - when a write comes INTERVAL ms or more after the last write-out (so a slow loop
//     streams each line at once), else by a timer INTERVAL ms later, while the event
//     loop turns (a busy synchronous loop that stops writing keeps its last lines
//     until it writes again or ends);
//   - before a write to the other stream, so the two pipes get the writes in order;
//   - before a child process starts (child_process), and when the process exits.
// A process ended by a signal loses at most what it wrote in its last INTERVAL ms: the
// kernel's interrupt (SIGINT) is left to node's default, which ends even a busy
// synchronous loop at once; a listener would only run when the event loop turns.
"use strict";
const fs = require("fs");

const LIMIT = 1 << 16;
const INTERVAL = 20;

let chunks = [];
let held = 0;
let heldFd = 0;
let flushedAt = 0;
let timer = null;
const pause = new Int32Array(new SharedArrayBuffer(4));

function writeAll(fd, data) {
  let off = 0;
  while (off < data.length) {
    try {
      off += fs.writeSync(fd, data, off);
    } catch (e) {
      // node may have made the pipe non-blocking: wait for the reader a moment.
      if (e.code !== "EAGAIN") return; // EPIPE & co: the output has nowhere to go
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

function flush() {
  // Only a write-out counts: the first write of a run, or the first after a quiet
  // spell, goes out at once (a busy loop right after it must not hold it back).
  if (held === 0) return;
  flushedAt = Date.now();
  const data = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, held);
  chunks = [];
  held = 0;
  writeAll(heldFd, data);
}

function writer(fd) {
  return function write(chunk, encoding, cb) {
    if (typeof encoding === "function") {
      cb = encoding;
      encoding = undefined;
    }
    if (heldFd !== fd) {
      flush();
      heldFd = fd;
    }
    const b = typeof chunk === "string" ? Buffer.from(chunk, encoding || "utf8") : Buffer.from(chunk);
    chunks.push(b);
    held += b.length;
    if (held >= LIMIT || Date.now() - flushedAt >= INTERVAL) {
      flush();
    } else if (timer === null) {
      timer = setTimeout(() => {
        timer = null;
        flush();
      }, INTERVAL);
      timer.unref();
    }
    if (typeof cb === "function") process.nextTick(cb);
    return true;
  };
}

function install() {
  process.stdout.write = writer(1);
  process.stderr.write = writer(2);
  process.on("exit", flush);
  const cp = require("child_process");
  for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
    const start = cp[name];
    cp[name] = function (...args) {
      flush();
      return start.apply(this, args);
    };
  }
}

module.exports = { install, flush };
