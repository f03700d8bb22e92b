import { Periodic, UrlRefusedError, type Background, type Logger, type PierEvent, type UrlGuard } from '@pier/kit';
import type { Attempt, Delivery, Webhook } from './webhook-records.ts';
import { signatureHeader } from './webhook-rules.ts';
import type { WebhookStore } from './webhook-store-port.ts';

// Delivers what is due, Standard Webhooks' way: POST `{type, timestamp, data}` with
// `webhook-id` (the delivery's id, the same on every attempt), `webhook-timestamp` and
// `webhook-signature`; a 2xx within the timeout is success. Otherwise the next attempt
// comes after the schedule's next delay; after the last, the delivery has failed and the
// endpoint is disabled, with a `webhook.disabled` event. The URL passes the guard at every
// attempt (an address may change) and a redirect is not followed. One instance delivers
// (leaderOnly): at least once, since an attempt is recorded only after it was made.

/** Bytes of an answer kept with its attempt. */
const EXCERPT_BYTES = 1024;
/** Deliveries attempted at once. */
const CONCURRENCY = 10;

export interface DeliverySettings {
  retrySeconds: number[];
  timeoutMs: number;
  intervalMs: number;
}

export class DeliveryWorker implements Background {
  private readonly loop: Periodic;
  private passing?: Promise<void>;
  private again = false;
  private stopped = true;

  constructor(
    private readonly store: WebhookStore,
    private readonly guard: UrlGuard,
    private readonly log: Logger,
    private readonly settings: DeliverySettings,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.loop = new Periodic(() => this.pass(), settings.intervalMs, { log, what: 'webhook delivery pass' });
  }

  start(): void {
    this.stopped = false;
    this.loop.start(() => this.pass());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop.stop();
    await this.passing;
  }

  /** Looks now (an event stored, a test, a redelivery); a wake during a pass asks for another. */
  wake(): void {
    if (this.stopped) return;
    void this.pass().catch((err: unknown) => this.log.warn({ err: String(err) }, 'webhook delivery pass failed; the next one retries'));
  }

  pass(): Promise<void> {
    if (this.passing) {
      this.again = true;
      return this.passing;
    }
    this.passing = (async () => {
      try {
        do {
          this.again = false;
          for (;;) {
            const due = await this.store.due(CONCURRENCY);
            if (due.length === 0 || this.stopped) break;
            await Promise.all(due.map((d) => this.attempt(d)));
          }
        } while (this.again && !this.stopped);
      } finally {
        this.passing = undefined;
      }
    })();
    return this.passing;
  }

  private async attempt(d: Delivery): Promise<void> {
    const at = this.now();
    const started = performance.now();
    const secrets = await this.store.secrets(d.webhookId);
    const hook = secrets && (await this.webhookOf(d));
    let attempt: Attempt;
    if (!hook || !secrets || !hook.enabled) {
      attempt = { at, statusCode: null, latencyMs: 0, response: null, error: hook && !hook.enabled ? 'the endpoint is disabled' : 'the endpoint was deleted' };
      await this.store.recordAttempt(d.id, attempt, { state: 'failed' });
      return;
    }
    const timestamp = Math.floor(at.getTime() / 1000);
    const body = JSON.stringify({ type: d.eventType, timestamp: d.occurredAt.toISOString(), data: d.event });
    const inForce = [secrets.secret, ...(secrets.previous && secrets.previousUntil && secrets.previousUntil > at ? [secrets.previous] : [])];
    try {
      const checked = await this.guard.check(hook.url);
      const { response } = await this.guard.request(checked, {
        method: 'POST',
        body,
        maxRedirects: 0,
        timeoutMs: this.settings.timeoutMs,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Pier-Webhooks/1',
          'webhook-id': d.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(inForce, d.id, timestamp, body),
        },
      });
      const excerpt = await readExcerpt(response, this.settings.timeoutMs);
      const status = response.statusCode ?? 0;
      attempt = {
        at,
        statusCode: status,
        latencyMs: Math.round(performance.now() - started),
        response: excerpt,
        error: status >= 200 && status < 300 ? null : `answered ${status}`,
      };
    } catch (err) {
      const error = err instanceof UrlRefusedError ? err.message : String((err as Error).message ?? err);
      attempt = { at, statusCode: null, latencyMs: Math.round(performance.now() - started), response: null, error: error.slice(0, 500) };
    }
    if (attempt.error === null) return this.store.recordAttempt(d.id, attempt, { state: 'succeeded' });
    const delay = this.settings.retrySeconds[d.attemptsInRound];
    if (delay !== undefined) return this.store.recordAttempt(d.id, attempt, { state: 'pending', at: new Date(at.getTime() + delay * 1000) });
    await this.store.recordAttempt(d.id, attempt, { state: 'failed' });
    const reason = `a delivery failed every attempt of the retry schedule (last: ${attempt.error})`;
    if (await this.store.disable(hook.id, reason, disabledEvent(reason, d.id)))
      this.log.warn({ webhookId: hook.id, deliveryId: d.id }, 'webhook endpoint disabled');
  }

  private async webhookOf(d: Delivery): Promise<Webhook | undefined> {
    const workspaceId = typeof d.event.workspace_id === 'string' ? d.event.workspace_id : '';
    return this.store.get(workspaceId, d.webhookId);
  }
}

const disabledEvent =
  (reason: string, deliveryId: string) =>
  (w: Webhook): PierEvent => ({
    kind: 'webhook.disabled',
    workspaceId: w.workspaceId,
    resourceId: w.id,
    resourceName: w.description || w.url,
    byPlatform: true,
    data: { url: w.url, reason, delivery_id: deliveryId },
  });

/** The first bytes of an answer as text; the rest is read and dropped. */
async function readExcerpt(res: NodeJS.ReadableStream & { destroy(): void }, timeoutMs: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const timer = setTimeout(() => res.destroy(), timeoutMs);
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      if (size < EXCERPT_BYTES) chunks.push(chunk.subarray(0, EXCERPT_BYTES - size));
      size += chunk.length;
    }
  } catch {
    // A body cut short: what came is kept.
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
