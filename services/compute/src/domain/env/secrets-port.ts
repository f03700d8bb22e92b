// What compute needs from the secrets service: whether references resolve, and — for the
// docker adapter, which has no secret store of its own to point containers at — the values
// at container start. Values pass through memory on their way into the container and are
// never written to our database, events or logs.

export interface SecretScope {
  workspaceId: string;
  vpcId: string;
}

export interface SecretReference {
  secretId: string;
  key: string;
}

export interface ReferenceProblem extends SecretReference {
  reason: 'secret_not_found' | 'key_not_found';
}

/** `${secretId}/${key}`: how resolved values are keyed. */
export function referenceKey(ref: SecretReference): string {
  return `${ref.secretId}/${ref.key}`;
}

export interface SecretsPort {
  /** The references that do not resolve in this VPC (empty when all do). Unreachable: UnavailableError. */
  check(scope: SecretScope, refs: SecretReference[]): Promise<ReferenceProblem[]>;
  /**
   * The values, keyed by `referenceKey`. Throws MissingSecretError when one does not
   * resolve, UnavailableError when the secrets service cannot be reached.
   */
  resolve(scope: SecretScope, refs: SecretReference[]): Promise<Map<string, string>>;
}

/** A rollout needs a secret that is gone: the deployment fails with this message. */
export class MissingSecretError extends Error {
  constructor(
    readonly problems: ReferenceProblem[],
    /** The secrets service's own wording, when it named the problems itself. */
    detail?: string,
  ) {
    super(
      detail ??
        problems
          .map((p) => (p.reason === 'secret_not_found' ? `secret ${p.secretId} no longer exists` : `secret ${p.secretId} has no key "${p.key}"`))
          .join('; '),
    );
    this.name = 'MissingSecretError';
  }
}
