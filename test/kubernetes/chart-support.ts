// What the chart tests share: helm and kubectl on the test cluster, the release's keys
// file, a fresh namespace, and the clean-up (the release, its namespace and the VPC
// namespaces Pier made), with the release's pod logs kept when a test failed.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { realKubernetes, type RealKubernetes } from '@pier/testing';
import { chartKeysValues } from '../../deploy/platform/chart-keys.ts';

const run = promisify(execFile);
export const CHART = path.resolve(import.meta.dirname, '../../deploy/helm/pier');
// "pier", as users will name it: were Service env vars given to pods, theirs
// (PIER_GATEWAY_PORT=tcp://...) would share Pier's own prefix.
export const RELEASE = 'pier';

export interface ChartBench {
  k: RealKubernetes;
  /** A namespace of its own, made for this file. */
  ns: string;
  /** The keys (and compute's apps domain) as a values file for helm's -f. */
  keysFile: string;
  tool(name: 'helm' | 'kubectl', args: string[], input?: string): Promise<string>;
  /** VPC namespaces Pier made, removed at the end. */
  madeVpcNamespaces: string[];
  /** Removes everything; with `failed`, first writes the release's pod logs to .pier/logs. */
  cleanUp(failed: boolean): Promise<void>;
}

export async function chartBench(prefix: string): Promise<ChartBench> {
  const k = realKubernetes();
  for (const t of ['helm', 'kubectl']) {
    if (!existsSync(path.join(k.binDir, t)))
      throw new Error(`no ${t} in "${k.binDir}" (beside ${k.kubeconfig}): deploy/kube/build.sh builds it, cluster.sh start records where`);
  }
  const work = await mkdtemp(path.join(os.tmpdir(), `${prefix}-`));
  const tool: ChartBench['tool'] = async (name, args, input) => {
    const child = run(path.join(k.binDir, name), args, {
      env: { ...process.env, KUBECONFIG: k.kubeconfig, HOME: work },
      maxBuffer: 64 << 20,
      timeout: 600_000,
    });
    // Manifests for `-f -`; otherwise nothing, so no command waits on its input.
    child.child.stdin!.end(input ?? '');
    try {
      return (await child).stdout;
    } catch (err) {
      const e = err as Error & { stderr?: string; stdout?: string };
      throw new Error(`${name} ${args.join(' ')}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`, { cause: err });
    }
  };
  const keysFile = path.join(work, 'keys.yaml');
  // The keys (JSON, which YAML reads), compute's apps domain (the one the test cluster's
  // Traefik has a certificate for) and where Traefik's metrics are read.
  const values = {
    ...(JSON.parse(await chartKeysValues()) as Record<string, unknown>),
    extraEnv: { PIER_APPS_DOMAIN: k.appsDomain },
    compute: { ingressMetricsUrls: k.ingressMetricsUrl() },
  };
  await writeFile(keysFile, JSON.stringify(values, null, 2), { mode: 0o600 });
  const ns = `${prefix}-${Date.now().toString(36)}`;
  await tool('kubectl', ['create', 'namespace', ns]);
  const madeVpcNamespaces: string[] = [];
  return {
    k,
    ns,
    keysFile,
    tool,
    madeVpcNamespaces,
    async cleanUp(failed) {
      if (failed) {
        // What Pier's pods said, for the failure's reader (they go with the namespace below).
        const file = path.resolve(import.meta.dirname, '../../.pier/logs', `${ns}.log`);
        const logs = await tool('kubectl', [
          'logs',
          '-n',
          ns,
          '-l',
          'app.kubernetes.io/name=pier',
          '--all-containers',
          '--prefix',
          '--tail=5000',
          '--max-log-requests=20',
        ]).catch((err: Error) => err.message);
        await writeFile(file, logs).catch(() => undefined);
        console.log(`logs of the release's pods: ${file}`);
      }
      await tool('helm', ['uninstall', RELEASE, '-n', ns, '--wait', '--timeout', '120s']).catch(() => undefined);
      for (const name of [...madeVpcNamespaces, ns]) await k.deleteNamespace(name).catch(() => undefined);
      await rm(work, { recursive: true, force: true });
    },
  };
}

/** The owner's API key: the one the chart chose and keeps in its Secret (the NOTES say so). */
export async function bootstrapKey(k: RealKubernetes, ns: string): Promise<string> {
  const keys = await k.get(`/api/v1/namespaces/${ns}/secrets/${RELEASE}-keys`);
  return Buffer.from(keys.data['bootstrap-api-key'] as string, 'base64').toString();
}
