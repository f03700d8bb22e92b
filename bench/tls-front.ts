// HTTPS in front of an HTTP server (the fake Kubernetes API), for a benchmark of a client's
// memory: a real API server speaks TLS only, and what a client's TLS connections cost
// (handshakes, secure contexts, OpenSSL's buffers outside V8's heap) shows in resident
// memory. A self-signed certificate made with openssl; clients skip verifying it, as the
// fake's kubeconfig says (insecure-skip-tls-verify). Requests and their answers, watches'
// streams included, are piped through as they come.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface TlsFront {
  url: string;
  stop(): Promise<void>;
}

export async function startTlsFront(target: string): Promise<TlsFront> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pier-tls-front-'));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'].concat([
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ]),
      { stdio: 'ignore' },
    );
    const [key, cert] = [readFileSync(path.join(dir, 'key.pem')), readFileSync(path.join(dir, 'cert.pem'))];
    const to = new URL(target);
    const server = https.createServer({ key, cert }, (req, res) => {
      const upstream = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      res.on('close', () => upstream.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    return {
      url: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
      async stop() {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
