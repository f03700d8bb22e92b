import http from 'node:http';
import type { Express } from 'express';

/** What every service's `start()` returns: where it listens and how to stop it. */
export interface RunningService {
  name: string;
  httpPort: number;
  grpcPort?: number;
  stop(): Promise<void>;
}

export async function listen(app: Express, port: number, host = '127.0.0.1'): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer({ keepAliveTimeout: 65_000 }, app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : port };
}

export function close(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
