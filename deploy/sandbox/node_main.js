// Runs one piece of JavaScript for the kernel driver (driver.py, run_node):
//
//   node /opt/codeinterp/node_main.js FD
//
// The code is read from descriptor FD (a memory file: argv would stop at 128 KiB per
// argument), which is closed before the code runs. It runs as a CommonJS module named
// /workspace/<code>.js, as if that file held it: require() finds modules in the
// workspace, then in NODE_PATH (npm's global packages). Top-level await works: code
// that only parses inside an async function runs in one, and the process waits for
// it (an uncaught error or rejection ends it with status 1, as node's own would).
// process.stdout and process.stderr are block-buffered (output.js), as the kernel's
// own sys.stdout and sys.stderr are (capture.py).
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");
const Module = require("module");
require("./output.js").install();

const fd = Number(process.argv[2]);
const code = fs.readFileSync(fd, "utf8");
fs.closeSync(fd);

const filename = path.join(process.cwd(), "<code>.js");
process.argv = [process.argv[0], filename];

// Code that parses only inside an async function (top-level await: node 18's errors
// for it vary, "await is only valid…" or "missing ) after argument list") runs in
// one. Code that parses neither way is compiled as is, which reports its error.
function parses(src) {
  try {
    new vm.Script(Module.wrap(src), { filename });
    return true;
  } catch {
    return false;
  }
}

function needsAsync(src) {
  return !parses(src) && parses(asyncBody(src));
}

// The wrapper starts on the code's first line, so line numbers in errors match.
function asyncBody(src) {
  return "return (async () => {" + src + "\n})();";
}

const m = new Module(filename, null);
m.filename = filename;
m.id = ".";
m.paths = Module._nodeModulePaths(process.cwd());
process.mainModule = m; // require.main === module, as for a script run by name
m._compile(needsAsync(code) ? asyncBody(code) : code, filename);
