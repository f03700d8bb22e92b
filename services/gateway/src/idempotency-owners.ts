import { createHash } from 'node:crypto';
import { JSONCodec, type KV, type NatsConnection } from 'nats';
import { IDEMPOTENCY_TTL_MS, NatsLink, type Logger, type NatsServer } from '@pier/kit';

// Which service an Idempotency-Key went to first. Each service keeps its keys in its own
// schema (kit's idempotency.ts) and so refuses a key reused on another of its own paths,
// but it cannot see a key that another service took: the same key sent to a secrets path
// and then to a services path would create the service. The gateway sees every request,
// so it remembers the first service each key went to, in a JetStream key-value bucket
// shared by every gateway and kept as long as the services keep their answers (24 h).
//
// A key is claimed with a create, which only one writer wins: two gateways racing on the
// same key agree on its owner. With NATS away the claim is skipped (each service still
// guards its own keys) and said once, rather than failing every keyed write.

export const IDEMPOTENCY_OWNERS_BUCKET = 'pier_idempotency_owners';

const json = JSONCodec<{ service: string }>();
/** A claim waits this long for NATS at most; past it the write goes through unchecked. */
const CLAIM_TIMEOUT_MS = 1000;

export type Claim = 'first' | 'same-service' | 'other-service';

export interface KeyClaims {
  /** Records that `key`, in `scope` (`workspace:<id>` or `user:<id>`) of `installation`, goes to `service`. */
  claim(installation: string, scope: string, key: string, service: string): Promise<Claim>;
}

export class IdempotencyOwners implements KeyClaims {
  private readonly link: NatsLink;
  private kv?: KV;
  private warned = false;

  constructor(
    nats: NatsServer,
    private readonly log: Logger,
  ) {
    this.link = new NatsLink(
      nats,
      (nc) => this.connected(nc),
      (err) => this.unavailable(err),
    );
  }

  start(): void {
    this.link.start();
  }

  stop(): Promise<void> {
    return this.link.stop();
  }

  async claim(installation: string, scope: string, key: string, service: string): Promise<Claim> {
    const kv = this.kv;
    if (!kv || !this.link.connection) return 'first';
    // KV keys allow few characters: the scope and the client's key go in as a digest.
    // A KV key may not start with a dot: an answer without an installation gets a placeholder.
    const name = `${installation || '_'}.${createHash('sha256').update(`${scope}\0${key}`).digest('base64url')}`;
    try {
      return await withTimeout(this.claimOnce(kv, name, service));
    } catch (err) {
      this.unavailable(err);
      return 'first';
    }
  }

  private async claimOnce(kv: KV, name: string, service: string): Promise<Claim> {
    try {
      await kv.create(name, json.encode({ service }));
      this.warned = false;
      return 'first';
    } catch (err) {
      // Anything but "the key exists" is NATS failing: the caller lets the write through.
      const owner = await kv.get(name);
      if (!owner || owner.operation !== 'PUT') throw err;
      return json.decode(owner.value).service === service ? 'same-service' : 'other-service';
    }
  }

  private async connected(nc: NatsConnection): Promise<void> {
    this.kv = await nc.jetstream().views.kv(IDEMPOTENCY_OWNERS_BUCKET, { ttl: IDEMPOTENCY_TTL_MS, history: 1 });
    if (this.warned) this.log.info('idempotency key owners: NATS is back; keys are checked across services again');
    this.warned = false;
  }

  private unavailable(err: unknown): void {
    if (this.warned) return;
    this.warned = true;
    this.log.warn({ err: String(err) }, 'idempotency key owners: NATS unreachable; a key reused across services is not caught until it is back');
  }
}

function withTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from NATS within ${CLAIM_TIMEOUT_MS} ms`)), CLAIM_TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
