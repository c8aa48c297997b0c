// A static file server for the demo page: serves the repository root on 127.0.0.1 so the page
// (examples/web/), the wasm package (packages/envelope-wasm/pkg/) and apache-arrow
// (examples/web/node_modules/) share one origin. No dependencies: node:http only.
//
// Run `node examples/web/serve.mjs [PORT]` and open the printed URL; the browser test imports
// `startServer` and records the requested paths to prove that a cached load did not download.

import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root: this file lives in examples/web/. */
export const repoRoot = resolve(fileURLToPath(new URL("../..", import.meta.url)));

// application/wasm matters: WebAssembly.instantiateStreaming refuses any other type.
const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".map": "application/json",
  ".ts": "text/plain; charset=utf-8",
};

/**
 * Starts the server on `port` (0: any free port) and resolves to
 * `{ url, requests, close }`: `url` is the page's address, `requests` every path served, in order.
 */
export async function startServer({ port = 0, root = repoRoot } = {}) {
  const requests = [];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://localhost").pathname);
    requests.push(path);
    // normalize() resolves "..": a path that then leaves the root is refused, not served.
    let file = normalize(join(root, path));
    // Dot paths (.git, .venv, .ci) are nobody's business, even on localhost.
    if ((file !== root && !file.startsWith(root + sep)) || path.split("/").some((s) => s.startsWith("."))) {
      res.writeHead(403).end();
      return;
    }
    try {
      if ((await stat(file)).isDirectory()) file = join(file, "index.html");
      const body = await readFile(file);
      res.writeHead(200, {
        "content-type": types[extname(file)] ?? "application/octet-stream",
        "content-length": body.length,
        // The page's files change while one develops it; the dataset cache is IndexedDB's job.
        "cache-control": "no-store",
      });
      res.end(req.method === "HEAD" ? undefined : body);
    } catch {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise((ok, fail) => server.once("error", fail).listen(port, "127.0.0.1", ok));
  const { port: bound } = server.address();
  return {
    url: `http://127.0.0.1:${bound}/examples/web/`,
    origin: `http://127.0.0.1:${bound}`,
    requests,
    close: () => new Promise((ok) => server.close(ok)),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { url } = await startServer({ port: Number(process.argv[2] ?? 8080) });
  console.log(`demo page: ${url}  (Ctrl-C to stop)`);
}
