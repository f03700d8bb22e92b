import { connect, type NatsConnection } from 'nats';
import { natsConnectOptions, type NatsServer } from './nats-connect.ts';

/**
 * What auth and the gateway share to let a gateway reuse Authenticate answers with no
 * grace at all for revocation, downgrade or removal (services/gateway/README.md, "The
 * authentication cache", has the whole argument):
 *
 * - auth keeps one counter, the *auth epoch*, in PostgreSQL, raised in the same
 *   transaction as every change that can alter an Authenticate answer;
 * - every auth instance publishes an {@link EpochTick} every {@link AUTH_EPOCH_TICK_MS}:
 *   the epoch as read from the database, when that read began, and the lease;
 * - a gateway (a cache *holder*) reuses an answer only if it was read under the epoch it
 *   last saw and a tick of that epoch is younger than the lease; each new epoch it sees is
 *   acknowledged on {@link AUTH_EPOCH_ACK_SUBJECT};
 * - a holder registers in the {@link AUTH_CACHE_HOLDERS_BUCKET} KV bucket (entries age out
 *   after {@link AUTH_CACHE_REGISTRATION_TTL_MS}) and caches only while its registration
 *   is fresh, so a writer that lists the bucket knows every holder that may be caching;
 * - all of it per *installation* (a random id kept beside the epoch), so that two Pier
 *   installations on one NATS (tests do this all the time) never mix their epochs;
 * - after raising the epoch, auth answers the API call only once every registered holder
 *   has acknowledged the new epoch, or the lease has run out since the commit.
 */
export const AUTH_CACHE_HOLDERS_BUCKET = 'pier_auth_cache_holders';
/** Where an installation's ticks are published. */
export const epochSubject = (installation: string) => `pier.auth.epoch.${installation}`;
/** Where holders acknowledge an installation's epochs. */
export const epochAckSubject = (installation: string) => `pier.auth.ack.${installation}`;
/** A holder's key in the holders bucket: listed by installation with `<installation>.>`. */
export const holderKey = (installation: string, holder: string) => `${installation}.${holder}`;

/** How often each auth instance publishes the epoch. */
export const AUTH_EPOCH_TICK_MS = 100;
/** How long a tick keeps a holder's cache usable (auth's PIER_AUTH_CACHE_LEASE_MS default). */
export const AUTH_CACHE_LEASE_MS = 500;
/** How far apart the clocks of auth and the gateways may be (auth's PIER_AUTH_CACHE_CLOCK_SKEW_MS default). */
export const AUTH_CACHE_CLOCK_SKEW_MS = 250;
/** A holder's registration lives this long after its last renewal. */
export const AUTH_CACHE_REGISTRATION_TTL_MS = 5_000;

export interface EpochTick {
  epoch: number;
  /** Unix ms at which the database read of `epoch` began: the epoch was at least this then. */
  at: number;
  /** The lease in ms: the tick keeps a holder's cache usable until `at + lease`. Auth's, so writers and holders always agree. */
  lease: number;
}

export interface EpochAck {
  holder: string;
  epoch: number;
}

/**
 * A NATS connection that is kept up for as long as the process wants it: the first
 * attempt may fail (the broker not up yet), so it is retried every `retryMs` until
 * `stop()`; once made, the client's own reconnects take over.
 */
export class NatsLink {
  private nc?: NatsConnection;
  private stopped = false;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly server: NatsServer,
    private readonly onConnected: (nc: NatsConnection) => Promise<void> | void,
    private readonly onError: (err: unknown) => void,
    private readonly retryMs = 1000,
  ) {}

  start(): void {
    void this.attempt();
  }

  get connection(): NatsConnection | undefined {
    return this.nc && !this.nc.isClosed() ? this.nc : undefined;
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    try {
      const nc = await connect({
        ...natsConnectOptions(this.server),
        timeout: 2000,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        pingInterval: 2000,
        maxPingOut: 2,
      });
      if (this.stopped) return void (await nc.close());
      this.nc = nc;
      await this.onConnected(nc);
    } catch (err) {
      this.onError(err);
      await this.nc?.close().catch(() => undefined);
      this.nc = undefined;
      if (!this.stopped) this.timer = setTimeout(() => void this.attempt(), this.retryMs);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.nc?.close().catch(() => undefined);
  }
}
