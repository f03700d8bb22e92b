/**
 * Compute's resident memory and V8 heap when idle, run the way the platform image runs it
 * (deploy/images/platform/pier-platform), per variant:
 *   tsx      node --import tsx services/compute/src/main.ts   (the sources, as `./pier up` runs them)
 *   bundle   node dist/compute.mjs                            (deploy/platform/bundle.ts's bundle)
 *   bundle+semi  the bundle with --max-semi-space-size=1      (a smaller young generation)
 * Each variant is started on a fresh database of the benchmark's PostgreSQL and NATS (infra.ts),
 * with the docker cluster, left idle PIER_BENCH_MEMORY_IDLE_SECONDS (15), then asked for
 * process.memoryUsage() by a probe imported before the service (a data: URL, so it needs no
 * loader): SIGUSR2 makes it print the figures, and write a heap snapshot when
 * PIER_BENCH_HEAP_SNAPSHOT names a directory (bench/heap-retainers.ts reads one).
 *
 *   pnpm exec tsx deploy/platform/bundle.ts && pnpm exec tsx bench/process-memory.ts
 * Env: PIER_BENCH_MEMORY_VARIANTS (tsx,bundle,bundle+semi), PIER_BENCH_MEMORY_ROUNDS (2).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateIdentityKeys } from '@pier/kit';
import { createTestDatabase, freePort } from '@pier/testing';
import { ServiceProcess } from '../deploy/local/children.ts';
import { startInfra } from './infra.ts';
import { memoryProbe, probeFigures, type MemoryFigures } from './memory-probe.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const idleSeconds = Number(process.env.PIER_BENCH_MEMORY_IDLE_SECONDS ?? 15);
const rounds = Number(process.env.PIER_BENCH_MEMORY_ROUNDS ?? 2);
const snapshotDir = process.env.PIER_BENCH_HEAP_SNAPSHOT;

interface Variant {
  entry: string;
  javascript: boolean;
  nodeArgs: string[];
}

const bundle = path.join('dist', 'compute.mjs');
const VARIANTS: Record<string, Variant> = {
  tsx: { entry: path.join('services', 'compute', 'src', 'main.ts'), javascript: false, nodeArgs: [] },
  bundle: { entry: bundle, javascript: true, nodeArgs: [] },
  'bundle+semi': { entry: bundle, javascript: true, nodeArgs: ['--max-semi-space-size=1'] },
};

type Figures = MemoryFigures;

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1).padStart(6);

/** The figures the probe printed, and how long the process took to answer /healthz (polled every 200 ms). */
async function measure(name: string, variant: Variant, env: NodeJS.ProcessEnv): Promise<Figures & { startMs: number }> {
  const port = await freePort();
  let figures: ((f: Figures) => void) | undefined;
  const reported = new Promise<Figures>((resolve) => (figures = resolve));
  const service = new ServiceProcess(
    'compute',
    variant.entry,
    { ...env, PIER_COMPUTE_HTTP_PORT: String(port), PIER_MEMORY_SNAPSHOT_DIR: snapshotDir ?? '' },
    `http://127.0.0.1:${port}/healthz`,
    {
      javascript: variant.javascript,
      nodeArgs: [...memoryProbe, ...variant.nodeArgs],
      onLine: (_service, line) => {
        const probed = probeFigures(line);
        if (probed) figures!(probed);
        else if (line.trim()) process.stdout.write(`  [${name}] ${line.slice(0, 300)}\n`);
      },
    },
  );
  const spawned = Date.now();
  service.start(root);
  try {
    await service.waitHealthy(60_000);
    const startMs = Date.now() - spawned;
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    process.kill(service.pid!, 'SIGUSR2');
    const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${name}: no figures within 60 s`)), 60_000));
    return { ...(await Promise.race([reported, late])), startMs };
  } finally {
    await service.stop();
  }
}

const infra = await startInfra();
try {
  const keys = await generateIdentityKeys();
  const names = (process.env.PIER_BENCH_MEMORY_VARIANTS ?? 'tsx,bundle,bundle+semi').split(',').filter(Boolean);
  console.log(`compute idle for ${idleSeconds} s, docker cluster; MB (2^20 bytes)`);
  console.log('variant        round     rss heapTotal heapUsed external arrayBuffers  start');
  for (const name of names) {
    const variant = VARIANTS[name];
    if (!variant) throw new Error(`unknown variant ${name}: one of ${Object.keys(VARIANTS).join(', ')}`);
    if (!existsSync(path.join(root, variant.entry))) throw new Error(`${variant.entry} is missing: pnpm exec tsx deploy/platform/bundle.ts builds it`);
    for (let round = 1; round <= rounds; round++) {
      const db = await createTestDatabase(infra.postgresAdminUrl);
      try {
        const f = await measure(name, variant, {
          ...process.env,
          PIER_DATABASE_URL: db.urls.compute,
          PIER_NATS_URL: infra.natsUrl,
          PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
          PIER_LOG_LEVEL: 'warn',
          PIER_BIND_HOST: '127.0.0.1',
          PIER_CLUSTER: 'docker',
          // Nothing on the machine's own firewall or edge: idle compute, nothing shared touched.
          PIER_EDGE: 'off',
          PIER_EGRESS_FIREWALL: 'off',
        });
        console.log(
          `${name.padEnd(14)} ${String(round).padStart(5)}  ${mb(f.rss)}    ${mb(f.heapTotal)}   ${mb(f.heapUsed)}   ${mb(f.external)}       ${mb(f.arrayBuffers)}  ${(f.startMs / 1000).toFixed(1)} s${f.file ? `  ${f.file}` : ''}`,
        );
      } finally {
        await db.drop();
      }
    }
  }
} finally {
  await infra.stop();
}
