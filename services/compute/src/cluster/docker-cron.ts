import type Docker from 'dockerode';
import { Periodic, type Logger } from '@pier/kit';
import { lastFireTime } from '@pier/kit';
import { KIND_SERVICE, LABEL, containerName } from './docker-labels.ts';
import type { DockerEngine } from './docker-engine.ts';
import { WorkloadRejectedError } from '../domain/cluster-port.ts';

/** Which of these service ids belong to this compute (see DockerClusterOptions.ownedServices). */
export type OwnedServices = (serviceIds: string[]) => Promise<Set<string>>;

/** A tick missed by more than this (compute was down) is skipped, like a CronJob's startingDeadlineSeconds. */
export const STARTING_DEADLINE_MS = 120_000;
/** Finished runs kept per service, for status and for a person to inspect. */
export const RUNS_KEPT = 3;

/**
 * Runs cron services on Docker, which has no CronJob. A cron service's deployment is a
 * *template* container (created, never started) carrying the schedule in a label; on each
 * due tick this scheduler starts a one-shot copy of it (role `run`). The definition lives
 * in the cluster, so a restarted compute picks up where it was; a tick is due when its
 * time passed after the service's last run (or the template's creation), within the
 * starting deadline. A run still going when the next tick comes is not doubled (a
 * CronJob's `concurrencyPolicy: Forbid`). One compute instance should run the scheduler.
 * Another compute on the same engine (another installation) has templates there too: only
 * this compute's own are ticked, or each installation would start the other's runs (seen as
 * a test flake: runs started twice, and by a compute whose records knew nothing of them).
 */
export class CronScheduler {
  private readonly passes: Periodic;

  constructor(
    private readonly engine: DockerEngine,
    private readonly log: Logger,
    intervalMs = 5_000,
    private readonly owned: OwnedServices = async (ids) => new Set(ids),
  ) {
    this.passes = new Periodic(() => this.tick(new Date()), intervalMs, { log, what: 'cron scheduler pass' });
  }

  start(): void {
    this.passes.start();
  }

  stop(): Promise<void> {
    return this.passes.stop();
  }

  /** One pass at time `now`: starts every due run. Returns the ids of the containers started. */
  async tick(now: Date): Promise<string[]> {
    const docker = this.engine.docker;
    const all = await this.engine.call('container list', () =>
      docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`, LABEL.cronSchedule] }),
      }),
    );
    const runs = await this.engine.call('container list', () =>
      docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`, `${LABEL.role}=run`] }),
      }),
    );
    const started: string[] = [];
    const templates = all.filter((c) => c.Labels[LABEL.role] === 'template');
    const ours = await this.owned([...new Set(templates.map((t) => t.Labels[LABEL.service]).filter((id): id is string => Boolean(id)))]);
    for (const template of templates.filter((t) => ours.has(t.Labels[LABEL.service] ?? ''))) {
      const mine = runs.filter((r) => r.Labels[LABEL.deployment] === template.Labels[LABEL.deployment]).sort((a, b) => b.Created - a.Created);
      try {
        const id = await this.runIfDue(template, mine, now);
        if (id) started.push(id);
        for (const old of mine.slice(RUNS_KEPT).filter((r) => r.State !== 'running')) await this.engine.removeContainer(old.Id);
      } catch (err) {
        this.log.warn({ err: String(err), service: template.Labels[LABEL.service] }, 'cron run failed to start');
      }
    }
    return started;
  }

  private async runIfDue(template: Docker.ContainerInfo, runs: Docker.ContainerInfo[], now: Date): Promise<string | undefined> {
    const schedule = template.Labels[LABEL.cronSchedule];
    if (!schedule) return undefined;
    const due = lastFireTime(schedule, now);
    const latest = runs[0];
    // Ticks are told apart by the time they were due, not by when their container happened to start.
    const since = latest ? Number(latest.Labels[LABEL.cronDue] ?? latest.Created * 1000) : template.Created * 1000;
    if (due.getTime() <= since) return undefined;
    if (now.getTime() - due.getTime() > STARTING_DEADLINE_MS) return undefined;
    if (latest?.State === 'running') {
      this.log.info({ service: template.Labels[LABEL.service] }, 'cron tick skipped: the previous run is still going');
      return undefined;
    }
    const docker = this.engine.docker;
    const definition = await this.engine.call('container inspect', () => docker.getContainer(template.Id).inspect());
    const labels: Record<string, string> = { ...definition.Config.Labels, [LABEL.role]: 'run', [LABEL.cronDue]: String(due.getTime()) };
    delete labels[LABEL.cronSchedule];
    const network = definition.HostConfig.NetworkMode ?? '';
    const serviceName = labels[LABEL.serviceName] ?? 'cron';
    const deploymentId = labels[LABEL.deployment] ?? '';
    const name = containerName(serviceName, deploymentId, `run-${Math.floor(due.getTime() / 1000)}`);
    // The name is the tick's: a second scheduler (or a retry) cannot start the same tick twice.
    const options: Docker.ContainerCreateOptions = {
      name,
      Image: definition.Config.Image,
      Entrypoint: definition.Config.Entrypoint ?? undefined,
      Cmd: definition.Config.Cmd ?? undefined,
      Env: definition.Config.Env,
      User: definition.Config.User,
      Labels: labels,
      HostConfig: definition.HostConfig,
      NetworkingConfig: { EndpointsConfig: { [network]: { Aliases: [serviceName] } } },
    };
    const created = await this.engine
      .call('container create', () => docker.createContainer(options))
      .catch((err: unknown) => {
        if (err instanceof WorkloadRejectedError && /already in use/.test(err.message)) return undefined;
        throw err;
      });
    if (!created) return undefined;
    await this.engine.call('container start', () => created.start());
    this.log.info({ service: labels[LABEL.service], due: due.toISOString() }, 'cron run started');
    return created.id;
  }
}
