// One PostgreSQL and one NATS for the whole test run, shared by all test files (each
// test creates its own databases/streams). Set PIER_TEST_POSTGRES_URL / PIER_TEST_NATS_URL
// to reuse running servers instead. Images: pier/* built by deploy/images/build.sh, or
// any official-compatible image via PIER_TEST_POSTGRES_IMAGE / PIER_TEST_NATS_IMAGE.
import type { TestProject } from 'vitest/node';
import type { StartedTestContainer } from 'testcontainers';

// Ryuk (the reaper) cannot be pulled here: ./pier test removes leftovers by label.
// /.dockerenv exists on CI machines, which would make testcontainers probe a gateway
// with a pulled image unless the host is given.
process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';

export const PG_PASSWORD = 'pier-test';

export default async function setup(project: TestProject) {
  const started: StartedTestContainer[] = [];
  const stopAll = async () => {
    await Promise.allSettled(started.map((c) => c.stop()));
  };
  try {
    const [postgresAdminUrl, natsUrl] = await Promise.all([
      process.env.PIER_TEST_POSTGRES_URL ?? startPostgres(started),
      process.env.PIER_TEST_NATS_URL ?? startNats(started),
    ]);
    project.provide('postgresAdminUrl', postgresAdminUrl);
    project.provide('natsUrl', natsUrl);
  } catch (err) {
    await stopAll();
    throw err;
  }
  return stopAll;
}

// Imported lazily: the env above must be set first, and runs with both URLs given
// never load testcontainers at all.
async function testcontainers() {
  return import('testcontainers');
}

// ./pier test exports PIER_TEST_RUN so its exit trap only removes this run's containers.
function labels(): Record<string, string> {
  const run = process.env.PIER_TEST_RUN;
  return { 'pier.test': 'true', ...(run ? { 'pier.test.run': run } : {}) };
}

async function startPostgres(started: StartedTestContainer[]): Promise<string> {
  const container = await startPostgresContainer();
  started.push(container);
  const port = container.getMappedPort(5432);
  return `postgres://postgres:${PG_PASSWORD}@${container.getHost()}:${port}/postgres`;
}

/**
 * A PostgreSQL container as the suite runs it, its superuser's password PG_PASSWORD.
 * `hostPort` publishes it on that port of the host (a test that stops and starts it keeps
 * the port); the engine picks one otherwise.
 */
export async function startPostgresContainer(hostPort?: number): Promise<StartedTestContainer> {
  const { GenericContainer, Wait } = await testcontainers();
  const image = process.env.PIER_TEST_POSTGRES_IMAGE ?? 'pier/postgres:15';
  return (
    new GenericContainer(image)
      .withEnvironment({ POSTGRES_PASSWORD: PG_PASSWORD })
      .withExposedPorts(hostPort === undefined ? 5432 : { container: 5432, host: hostPort })
      .withLabels(labels())
      .withCommand(['postgres', '-c', 'shared_preload_libraries=pg_stat_statements'])
      // The official image logs "ready" twice (a socket-only init server, then the real
      // one), ours once, so one log line alone is not enough there. pg_isready over TCP
      // inside the container is never answered by the init server and implies the port
      // listens; it replaces Wait.forListeningPorts(), which would add three more
      // `docker exec`s every 100 ms while initdb competes for the same 2 cores.
      .withWaitStrategy(
        Wait.forAll([Wait.forLogMessage(/database system is ready to accept connections/), Wait.forSuccessfulCommand('pg_isready -q -h 127.0.0.1 -p 5432')]),
      )
      .withStartupTimeout(60_000)
      .start()
  );
}

async function startNats(started: StartedTestContainer[]): Promise<string> {
  const container = await startNatsContainer();
  started.push(container);
  return `nats://${container.getHost()}:${container.getMappedPort(4222)}`;
}

/** A NATS (JetStream) container as the suite runs it; its client port is 4222. */
export async function startNatsContainer(): Promise<StartedTestContainer> {
  const { GenericContainer, Wait } = await testcontainers();
  const image = process.env.PIER_TEST_NATS_IMAGE ?? 'pier/nats:2';
  return (
    new GenericContainer(image)
      .withExposedPorts(4222)
      .withLabels(labels())
      // Our image always enables JetStream; the official one needs `-js` as its command.
      .withCommand(['-js'])
      // The official nats image is FROM scratch: no shell for the in-container port
      // check, so it gets the log line instead.
      .withWaitStrategy(image.startsWith('pier/') ? Wait.forListeningPorts() : Wait.forLogMessage(/Server is ready/))
      .withStartupTimeout(60_000)
      .start()
  );
}
