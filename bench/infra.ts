/**
 * PostgreSQL and NATS for the benchmark: PIER_BENCH_POSTGRES_URL / PIER_BENCH_NATS_URL
 * when set, else containers started with Testcontainers and removed at the end, from the
 * locally built pier/postgres:15 and pier/nats:2 (deploy/images) unless
 * PIER_BENCH_*_IMAGE or PIER_TEST_*_IMAGE name others (e.g. the official images).
 */
import pg from 'pg';

export interface Infra {
  postgresAdminUrl: string;
  natsUrl: string;
  stop(): Promise<void>;
}

async function waitForPostgres(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      return;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

export async function startInfra(): Promise<Infra> {
  const stops: (() => Promise<unknown>)[] = [];
  let postgresAdminUrl = process.env.PIER_BENCH_POSTGRES_URL;
  let natsUrl = process.env.PIER_BENCH_NATS_URL;
  if (!postgresAdminUrl || !natsUrl) {
    // No registry here: Ryuk cannot be pulled, and the host is reached on loopback
    // (shared/notes/docker-here.md). Our containers are labelled and removed by us.
    process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
    process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';
    const { GenericContainer, Wait } = await import('testcontainers');
    if (!postgresAdminUrl) {
      const password = 'bench';
      const container = await new GenericContainer(process.env.PIER_BENCH_POSTGRES_IMAGE ?? process.env.PIER_TEST_POSTGRES_IMAGE ?? 'pier/postgres:15')
        .withEnvironment({ POSTGRES_PASSWORD: password })
        .withLabels({ 'pier.bench': 'true' })
        .withExposedPorts(5432)
        .withCommand(['postgres', '-c', 'max_connections=200', '-c', 'synchronous_commit=off'])
        .withWaitStrategy(Wait.forListeningPorts())
        .start();
      stops.push(() => container.stop());
      postgresAdminUrl = `postgres://postgres:${password}@127.0.0.1:${container.getMappedPort(5432)}/postgres`;
      await waitForPostgres(postgresAdminUrl, 30_000);
    }
    if (!natsUrl) {
      const image = process.env.PIER_BENCH_NATS_IMAGE ?? process.env.PIER_TEST_NATS_IMAGE ?? 'pier/nats:2';
      const container = await new GenericContainer(image)
        .withLabels({ 'pier.bench': 'true' })
        .withExposedPorts(4222)
        .withCommand(['-js'])
        // The official image has no shell for the port check; it logs when ready.
        .withWaitStrategy(image.startsWith('pier/') ? Wait.forListeningPorts() : Wait.forLogMessage(/Server is ready/))
        .start();
      stops.push(() => container.stop());
      natsUrl = `nats://127.0.0.1:${container.getMappedPort(4222)}`;
    }
  }
  return {
    postgresAdminUrl,
    natsUrl,
    async stop() {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
    },
  };
}
