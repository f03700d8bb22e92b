import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { isKubernetesNotFound, kubernetesStatusOf, secretObjectName, vpcNamespace } from '@pier/kit';
import { kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import { describeStoreError } from './errors.ts';
import type { Observation, SecretObjectId, SecretObjectRef, SecretsCluster, SecretValues } from '../domain/cluster-port.ts';

// Production store: a core `Secret` (type Opaque) per Pier secret, in the VPC's namespace,
// named by the secret's id (see `secretObjectName`). Labels tie it back to Pier's ids so
// objects whose record is gone can be found and swept, and to this installation: several
// Piers may share a cluster, and each sweeps only what it lists, so it lists only its own.

export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  component: 'app.kubernetes.io/component',
  workspace: 'pier.dev/workspace-id',
  vpc: 'pier.dev/vpc-id',
  secretId: 'pier.dev/secret-id',
  secretName: 'pier.dev/secret-name',
  installation: 'pier.dev/installation',
} as const;

const SELECTOR = `${LABELS.managedBy}=pier,${LABELS.component}=secret`;

export class KubernetesSecretStore implements SecretsCluster {
  readonly kind = 'kubernetes' as const;
  private readonly core: CoreV1Api;

  private readonly mine: string;

  constructor(
    kc: KubeConfig,
    /** This installation's id (the secrets schema's installation row), labelled on every Secret. */
    private readonly installation: string,
    timeoutMs = 10_000,
  ) {
    this.core = new CoreV1Api(kubernetesApiConfiguration(kc, timeoutMs));
    this.mine = `${SELECTOR},${LABELS.installation}=${installation}`;
  }

  async ping(): Promise<void> {
    // The cheapest call of the kind the store makes: one object at most.
    await this.core.listSecretForAllNamespaces({ labelSelector: SELECTOR, limit: 1 });
  }

  async observe(id: SecretObjectId): Promise<Observation> {
    const secret = await this.get(id);
    return secret ? { exists: true, keys: Object.keys(secret.data ?? {}).sort() } : { exists: false, keys: [] };
  }

  async apply(ref: SecretObjectRef, values: SecretValues): Promise<void> {
    const namespace = vpcNamespace(ref.vpcId);
    const body = secretManifest(ref, values, this.installation);
    try {
      await this.core.createNamespacedSecret({ namespace, body });
      return;
    } catch (err) {
      if (isKubernetesNotFound(err)) {
        // The VPC's namespace does not exist yet (no service has run there): make it.
        await this.ensureNamespace(ref.vpcId);
        try {
          await this.core.createNamespacedSecret({ namespace, body });
          return;
        } catch (again) {
          if (kubernetesStatusOf(again) !== 409) throw again;
        }
      } else if (kubernetesStatusOf(err) !== 409) {
        throw err;
      }
    }
    // It exists (a retry after a crash): replace it, so the object holds exactly these values.
    await this.core.replaceNamespacedSecret({ name: body.metadata!.name!, namespace, body });
  }

  async read(id: SecretObjectId): Promise<SecretValues | undefined> {
    const secret = await this.get(id);
    if (!secret) return undefined;
    const values: SecretValues = {};
    for (const [k, v] of Object.entries(secret.data ?? {})) values[k] = Buffer.from(v, 'base64').toString('utf8');
    for (const [k, v] of Object.entries(secret.stringData ?? {})) values[k] = v;
    return values;
  }

  async delete(id: SecretObjectId): Promise<void> {
    try {
      await this.core.deleteNamespacedSecret({ name: secretObjectName(id.secretId), namespace: vpcNamespace(id.vpcId) });
    } catch (err) {
      if (!isKubernetesNotFound(err)) throw err;
    }
  }

  async list(): Promise<SecretObjectId[]> {
    const found: SecretObjectId[] = [];
    let cont: string | undefined;
    do {
      const page = await this.core.listSecretForAllNamespaces({ labelSelector: this.mine, limit: 500, _continue: cont });
      for (const s of page.items) {
        const labels = s.metadata?.labels ?? {};
        const vpcId = labels[LABELS.vpc];
        const secretId = labels[LABELS.secretId];
        if (vpcId && secretId) found.push({ vpcId, secretId });
      }
      cont = page.metadata?._continue || undefined;
    } while (cont);
    return found;
  }

  describeError(err: unknown): string {
    return describeStoreError(err);
  }

  private async get(id: SecretObjectId): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ name: secretObjectName(id.secretId), namespace: vpcNamespace(id.vpcId) });
    } catch (err) {
      if (isKubernetesNotFound(err)) return undefined;
      throw err;
    }
  }

  private async ensureNamespace(vpcId: string): Promise<void> {
    try {
      await this.core.createNamespace({
        body: {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: vpcNamespace(vpcId), labels: { [LABELS.managedBy]: 'pier', [LABELS.vpc]: vpcId } },
        },
      });
    } catch (err) {
      if (kubernetesStatusOf(err) !== 409) throw err;
    }
  }
}

/** The `Secret` a Pier secret becomes. Values go in `data` (base64), so a read returns exactly them. */
export function secretManifest(ref: SecretObjectRef, values: SecretValues, installation: string): V1Secret {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) data[k] = Buffer.from(v, 'utf8').toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: secretObjectName(ref.secretId),
      namespace: vpcNamespace(ref.vpcId),
      labels: {
        [LABELS.managedBy]: 'pier',
        [LABELS.component]: 'secret',
        [LABELS.workspace]: ref.workspaceId,
        [LABELS.vpc]: ref.vpcId,
        [LABELS.secretId]: ref.secretId,
        [LABELS.secretName]: ref.name,
        [LABELS.installation]: installation,
      },
    },
    data,
  };
}
