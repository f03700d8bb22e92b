import { NotFoundError, UnavailableError, crashPoint, isUuid, type Logger, type Page, type PageRequest } from '@pier/kit';
import type { SecretStorePort, SecretValues } from './store-port.ts';
import type { SecretsStore } from './records-port.ts';
import type { CreateSecretInput } from './secret-rules.ts';
import { createdEvent, deletedEvent, type MissingReference, type ResolvedReference, type Scope, type SecretRecord, type SecretReference } from './secret.ts';

const READ_CONCURRENCY = 8;

export const secretNotFound = () => new NotFoundError('secret not found', 'secret_not_found');
const storeUnavailable = () => new UnavailableError("the cluster's secret store cannot be reached; nothing was written", 'cluster_unavailable');

/**
 * The secrets rules. Ordering is what keeps the two sides (our records, the cluster's
 * store) from dangling: a record is written `creating` before the store is touched and
 * only becomes visible once the store holds the values; a delete hides the record first
 * and removes it only after the store let go. Whatever a crash interrupts is left pending,
 * where the reconciler finds it.
 */
export class Secrets {
  constructor(
    private readonly records: SecretsStore,
    private readonly store: SecretStorePort,
    private readonly log: Logger,
    /** Called after a committed change that wrote an event (the outbox relay's poke). */
    private readonly onEvent: () => void = () => undefined,
  ) {}

  async create(scope: Scope, input: CreateSecretInput): Promise<SecretRecord> {
    const keys = Object.keys(input.values).sort();
    const pending = await this.records.insertCreating(scope, input.name, keys);
    const ref = { ...scope, secretId: pending.id, name: pending.name };
    try {
      await this.store.apply(ref, input.values);
    } catch (err) {
      this.log.warn({ secretId: pending.id, cause: this.store.describeError(err) }, 'secret store write failed; undoing the create');
      await this.undoCreate(pending);
      throw storeUnavailable();
    }
    // The store holds the values, the record is still `creating`: the reconciler undoes it.
    crashPoint('secrets.create.stored');
    const ready = await this.records.finishCreate(pending.id, createdEvent);
    if (!ready) {
      // The reconciler took this record for abandoned and undid it: take the values back.
      await this.store.delete(ref).catch(() => undefined);
      throw storeUnavailable();
    }
    // Committed, the caller not answered: the secret stands (a retry is a 409 naming it).
    crashPoint('secrets.create.committed');
    this.onEvent();
    return ready;
  }

  /**
   * The secret a keyed create whose first attempt died had begun (see kit's idempotency):
   * its record once ready; one left `creating` is undone now, as the reconciler would after
   * its grace, so the retry can take the name again.
   */
  async takeUpCreate(scope: Scope, id: string): Promise<SecretRecord | undefined> {
    const ready = await this.records.get(scope, id);
    if (ready) return ready;
    try {
      await this.store.delete({ vpcId: scope.vpcId, secretId: id });
    } catch (err) {
      this.log.warn({ secretId: id, cause: this.store.describeError(err) }, 'secret store unreachable; cannot undo a dead create yet');
      throw storeUnavailable();
    }
    await this.records.removeCreating(id);
    return undefined;
  }

  list(scope: Scope, page: PageRequest): Promise<Page<SecretRecord>> {
    return this.records.list(scope, page);
  }

  async get(scope: Scope, id: string): Promise<SecretRecord> {
    const record = isUuid(id) ? await this.records.get(scope, id) : undefined;
    if (!record) throw secretNotFound();
    return record;
  }

  async delete(scope: Scope, id: string): Promise<void> {
    const record = isUuid(id) ? await this.records.beginDelete(scope, id) : undefined;
    if (!record) throw secretNotFound();
    try {
      await this.store.delete({ vpcId: record.vpcId, secretId: record.id });
    } catch (err) {
      this.log.warn({ secretId: record.id, cause: this.store.describeError(err) }, 'secret store delete failed; the secret stays');
      // If even this fails the record stays `deleting` and the reconciler finishes the delete.
      await this.records.revertDelete(record.id).catch(() => undefined);
      throw storeUnavailable();
    }
    // The values are gone, the record is still `deleting`: the reconciler finishes it.
    crashPoint('secrets.delete.removed');
    await this.records.finishDelete(record.id, deletedEvent);
    this.onEvent();
  }

  /** The references that do not resolve in this VPC: unknown secret, or a key it lacks. */
  async check(scope: Scope, refs: SecretReference[]): Promise<MissingReference[]> {
    const found = await this.recordsById(scope, refs);
    return missingOf(refs, found);
  }

  /**
   * The values of the references, read from the cluster's store. Any reference that does
   * not resolve fails the whole call, naming each: a container must not start half-configured.
   */
  async resolve(scope: Scope, refs: SecretReference[]): Promise<ResolvedReference[]> {
    const found = await this.recordsById(scope, refs);
    const missing = missingOf(refs, found);
    const values = new Map<string, SecretValues | undefined>();
    const ids = [...found.keys()];
    // A few reads at a time: a container start waits on all of them.
    for (let i = 0; i < ids.length; i += READ_CONCURRENCY) {
      await Promise.all(
        ids.slice(i, i + READ_CONCURRENCY).map(async (id) => {
          try {
            values.set(id, await this.store.read({ vpcId: scope.vpcId, secretId: id }));
          } catch (err) {
            this.log.warn({ secretId: id, cause: this.store.describeError(err) }, 'secret store read failed');
            throw new UnavailableError("the cluster's secret store cannot be reached", 'cluster_unavailable');
          }
        }),
      );
    }
    const resolved: ResolvedReference[] = [];
    for (const ref of refs) {
      if (missing.some((m) => m.secretId === ref.secretId && m.key === ref.key)) continue;
      // The store may differ from our record (edited out of band): trust only its own keys.
      const held = values.get(ref.secretId);
      const value = held && Object.hasOwn(held, ref.key) ? held[ref.key] : undefined;
      if (typeof value !== 'string') missing.push({ ...ref, reason: held ? 'key_not_found' : 'secret_not_found' });
      else resolved.push({ ...ref, value });
    }
    if (missing.length > 0) throw missingSecretError(missing);
    return resolved;
  }

  private async undoCreate(pending: SecretRecord): Promise<void> {
    // The write may have landed before failing (a timeout): remove whatever is there.
    // If the store stays unreachable the record goes anyway, and the reconciler's sweep
    // removes any object left without a record.
    await this.store.delete({ vpcId: pending.vpcId, secretId: pending.id }).catch(() => undefined);
    // If the database is gone too, the record stays `creating` (invisible) for the reconciler.
    await this.records.removeCreating(pending.id).catch(() => undefined);
  }

  private async recordsById(scope: Scope, refs: SecretReference[]): Promise<Map<string, SecretRecord>> {
    const ids = [...new Set(refs.map((r) => r.secretId))];
    const records = await this.records.findReady(scope, ids);
    return new Map(records.map((r) => [r.id, r]));
  }
}

function missingOf(refs: SecretReference[], found: Map<string, SecretRecord>): MissingReference[] {
  const missing: MissingReference[] = [];
  for (const ref of refs) {
    const record = found.get(ref.secretId);
    if (!record) missing.push({ ...ref, reason: 'secret_not_found' });
    else if (!record.keys.includes(ref.key)) missing.push({ ...ref, reason: 'key_not_found' });
  }
  return missing;
}

export function missingSecretError(missing: MissingReference[]): NotFoundError {
  const parts = missing.map((m) => (m.reason === 'secret_not_found' ? `secret ${m.secretId} does not exist` : `secret ${m.secretId} has no key ${m.key}`));
  return new NotFoundError(`missing secret: ${parts.join('; ')}`, 'missing_secret');
}
