// What the databases answer for the Docker engine's failures, read from errors the real
// engine gives (dockerode's shape: statusCode, json.message), never from invented ones.
import { afterAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { httpStatusOf, PierError } from '@pier/kit';
import { translateDockerError } from '../src/cluster/docker-engine.ts';

const docker = new Docker();
const made: string[] = [];
afterAll(async () => {
  for (const id of made)
    await docker
      .getNetwork(id)
      .remove()
      .catch(() => undefined);
});

/** What a call to the engine threw (a network it made instead is removed after the tests). */
const thrown = (call: Promise<unknown>) =>
  call.then(
    (made_: unknown) => {
      const id = (made_ as { id?: string })?.id;
      if (id) made.push(id);
      return made_ as Error & { statusCode?: number; json?: { message?: string } };
    },
    (err: unknown) => err as Error & { statusCode?: number; json?: { message?: string } },
  );

function translated(err: unknown): unknown {
  try {
    translateDockerError(err);
  } catch (thrown) {
    return thrown;
  }
  throw new Error('translateDockerError returned');
}

describe("the databases' reading of Docker engine errors", () => {
  it('answers a network the engine has no address pool for as 503 cluster_error naming the cause, not a 500', async () => {
    // An IPv6 network without a subnet: an engine without default IPv6 pools answers it as it
    // answers any network create once its IPv4 pools are used up (a VPC too many): a 404
    // "could not find an available, non-overlapping IPv6 address pool among the defaults ...".
    const err = await thrown(docker.createNetwork({ Name: `pier-test-pools-${process.pid}`, EnableIPv6: true }));
    expect(err.statusCode).toBe(404);
    expect(err.json?.message).toMatch(/could not find an available, non-overlapping IPv6 address pool/);
    const answer = translated(err);
    expect(answer).toBeInstanceOf(PierError);
    const e = answer as PierError;
    expect(httpStatusOf[e.kind]).toBe(503);
    expect(e.code).toBe('cluster_error');
    expect(e.message).toMatch(/address pool/);
  });

  it('answers an unreachable engine as 503 cluster_unavailable', async () => {
    const err = await thrown(new Docker({ socketPath: `/nonexistent/pier-${process.pid}.sock` }).ping());
    const e = translated(err) as PierError;
    expect(e).toBeInstanceOf(PierError);
    expect(httpStatusOf[e.kind]).toBe(503);
    expect(e.code).toBe('cluster_unavailable');
    expect(e.message).toMatch(/^docker engine unreachable \(ENOENT\)/);
  });

  it('passes a refusal (a missing network: 404) through to the adapter, which knows what it means there', async () => {
    const err = await thrown(docker.getNetwork(`pier-test-missing-${process.pid}`).inspect());
    expect(err.statusCode).toBe(404);
    expect(translated(err)).toBe(err);
  });
});
