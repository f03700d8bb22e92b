import http from 'node:http';

/**
 * Readiness for web services on Docker: an HTTP GET of `health_check_path` on the
 * container's address in its VPC network, from compute itself (so the image needs no
 * curl of its own). A container that passed once is remembered as ready — like a
 * readiness gate at start — and from then on its liveness is the container's state.
 * Compute must therefore reach the VPC networks' addresses: true when it runs on the
 * Docker host (Linux bridges are routed from the host) or in a container attached to them.
 */
export class HealthProber {
  private readonly passed = new Set<string>();
  private readonly lastError = new Map<string, string>();

  constructor(private readonly timeoutMs = 1000) {}

  /** Undefined when ready; otherwise why not yet. */
  async check(containerId: string, ip: string | undefined, port: number, path: string): Promise<string | undefined> {
    if (this.passed.has(containerId)) return undefined;
    if (!ip) return 'no address in the VPC network yet';
    const problem = await this.get(`http://${ip}:${port}${path}`);
    if (problem === undefined) {
      if (this.passed.size > 50_000) this.passed.clear();
      this.passed.add(containerId);
      this.lastError.delete(containerId);
      return undefined;
    }
    this.lastError.set(containerId, problem);
    return `health check GET ${path} on port ${port}: ${problem}`;
  }

  forget(containerId: string): void {
    this.passed.delete(containerId);
    this.lastError.delete(containerId);
  }

  private get(url: string): Promise<string | undefined> {
    return new Promise((resolve) => {
      const req = http.get(url, { timeout: this.timeoutMs, agent: false }, (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(code >= 200 && code < 400 ? undefined : `answered ${code}`);
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on('error', (err) => resolve((err as NodeJS.ErrnoException).code ?? err.message));
    });
  }
}
