// The host firewall of the docker adapter: tenants' containers (every VPC's network and the
// build network) reach neither link-local addresses (169.254.169.254, where a cloud host's
// credentials are served) nor the host itself, except the ports Docker publishes (the edge's).
// The rules are iptables rules of the host, written by pier-egress-firewall
// (deploy/images/netfilter), which compute keeps running in one container: host network,
// NET_ADMIN and NET_RAW only, no-new-privileges. That works whoever compute runs as, on any
// engine it can reach; the script picks the iptables backend (nft or legacy) dockerd uses,
// and applies the rules again within 2 s when Docker's published ports change or someone
// flushed them. Stopping compute leaves the container and its rules in place.
//
// The rules are keyed on bridge interfaces, never on addresses (a container could forge its
// source address; it cannot change the bridge its packets come in on): `pvpc+` covers every
// VPC network from the moment it exists (kit names their bridges, VPC_BRIDGE_PREFIX), plus
// the build network's bridge and the `br-<id>` bridges of networks made before bridges were
// named. What exactly is filtered: services/compute/README.md, "Egress and privileges".
import { createHash } from 'node:crypto';
import type Docker from 'dockerode';
import { UnavailableError, VPC_BRIDGE_PREFIX, vpcNetwork, type Logger } from '@pier/kit';
import type { DockerEngine } from './docker-engine.ts';
import { LABEL } from './docker-labels.ts';
import { framesText } from './log-lines.ts';

/** The build network's bridge interface (docker-builds.ts names it so). */
export const BUILD_BRIDGE = 'pier-builds';
/** The network RUN steps use (docker-builds.ts). */
export const BUILD_NETWORK = 'pier-builds';
export const FIREWALL_CONTAINER = 'pier-egress-firewall';
export const FIREWALL_IMAGE = 'pier/netfilter:1';
const BRIDGE_NAME_OPTION = 'com.docker.network.bridge.name';
/** How long a look at the firewall container holds before the next ensure() looks again. */
const RECHECK_MS = 60_000;

export interface EgressFirewallOptions {
  /** pier/netfilter (deploy/images/netfilter). */
  image: string;
  logger: Logger;
}

/** The bridge interface Docker made (or was told to make) for a network. */
function bridgeOf(n: Pick<Docker.NetworkInspectInfo, 'Id' | 'Options'>): string {
  return n.Options?.[BRIDGE_NAME_OPTION] ?? `br-${n.Id.slice(0, 12)}`;
}

export class EgressFirewall {
  private checked?: { at: number; done: Promise<void> };

  /** The firewall of an adapter: `image` unset means the default one, null none (the operator keeps the host's firewall). */
  static of(engine: DockerEngine, image: string | null | undefined, logger: Logger): EgressFirewall | null {
    const chosen = image === undefined ? FIREWALL_IMAGE : image;
    return chosen ? new EgressFirewall(engine, { image: chosen, logger }) : null;
  }

  constructor(
    private readonly engine: DockerEngine,
    private readonly opts: EgressFirewallOptions,
  ) {}

  private get docker(): Docker {
    return this.engine.docker;
  }

  /**
   * Resolves once the firewall container runs with the rules for today's networks; looks
   * again at most once a minute. Nothing tenant-made may start before it resolves: callers
   * await it before creating a VPC's containers or a build. A failure is thrown (and the
   * next call tries again).
   */
  ensure(): Promise<void> {
    const now = Date.now();
    if (this.checked && now - this.checked.at < RECHECK_MS) return this.checked.done;
    const done = this.converge();
    this.checked = { at: now, done };
    done.catch(() => {
      if (this.checked?.done === done) this.checked = undefined;
    });
    return done;
  }

  /** The bridges filtered: every VPC's by prefix, the build network's, and those of networks made before bridges were named. */
  async interfaces(): Promise<string[]> {
    const networks = await this.engine.call('network list', () =>
      this.docker.listNetworks({ filters: JSON.stringify({ name: [vpcNetwork(''), BUILD_NETWORK] }) }),
    );
    const unnamed = networks
      .filter((n) => n.Name.startsWith(vpcNetwork('')) || n.Name === BUILD_NETWORK)
      .map(bridgeOf)
      .filter((b) => !b.startsWith(VPC_BRIDGE_PREFIX) && b !== BUILD_BRIDGE);
    return [`${VPC_BRIDGE_PREFIX}+`, BUILD_BRIDGE, ...new Set(unnamed.sort())];
  }

  private async converge(): Promise<void> {
    const args = ['watch', ...(await this.interfaces())];
    // The image's id, not its name: a rebuilt image (a newer script) replaces the container too.
    const image = await this.engine
      .call('image inspect', () => this.docker.getImage(this.opts.image).inspect())
      .catch((err: Error) => {
        if (/no such image/i.test(err.message))
          throw new UnavailableError(
            `the egress firewall's image ${this.opts.image} is not on the engine (deploy/images/build.sh netfilter)`,
            'cluster_unavailable',
          );
        throw err;
      });
    const spec = createHash('sha256')
      .update(JSON.stringify([image.Id, args]))
      .digest('hex')
      .slice(0, 16);
    let info = await this.inspect();
    if (info && (info.Config.Labels?.['pier.firewall-spec'] !== spec || info.State.Status === 'dead')) {
      this.opts.logger.info({ container: FIREWALL_CONTAINER, interfaces: args.slice(1) }, 'egress firewall: replacing its container');
      await this.engine.removeContainer(info.Id);
      info = null;
    }
    if (!info) {
      await this.create(args, spec);
      info = await this.inspect();
      if (!info) throw new UnavailableError('the egress firewall container vanished as it was made', 'cluster_unavailable');
    }
    if (!info.State.Running) await this.engine.call('container start', () => this.docker.getContainer(info!.Id).start());
    await this.applied(info.Id);
  }

  private async create(args: string[], spec: string): Promise<void> {
    try {
      await this.engine.call('container create', () =>
        this.docker.createContainer({
          name: FIREWALL_CONTAINER,
          Image: this.opts.image,
          Cmd: args,
          User: '0',
          Labels: { [LABEL.managed]: 'true', [LABEL.kind]: 'egress-firewall', 'pier.firewall-spec': spec },
          HostConfig: {
            // The host's own network namespace is where the rules go; iptables needs NET_ADMIN
            // (nft, through netlink) and NET_RAW (legacy, through a raw socket); nothing else.
            NetworkMode: 'host',
            CapDrop: ['ALL'],
            CapAdd: ['NET_ADMIN', 'NET_RAW'],
            SecurityOpt: ['no-new-privileges'],
            // The xtables lock dockerd's own iptables calls take, and ours.
            Mounts: [{ Type: 'bind', Source: '/run', Target: '/host/run' }],
            RestartPolicy: { Name: 'unless-stopped' },
            Memory: 64 * 1024 * 1024,
            LogConfig: { Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '2' } },
          },
        }),
      );
    } catch (err) {
      // Another compute made it a moment ago: it is the same container (same spec or the next look replaces it).
      if (/already in use/.test((err as Error).message)) return;
      throw err;
    }
  }

  /** Waits until the container said it applied the rules (its first pass takes about a second). */
  private async applied(id: string): Promise<void> {
    const container = this.docker.getContainer(id);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const logs = framesText(await this.engine.call('container logs', () => container.logs({ stdout: true, stderr: true, tail: 50 })));
      if (logs.includes('pier-egress-firewall: applied')) return;
      const state = (await this.engine.call('container inspect', () => container.inspect())).State;
      if (!state.Running || Date.now() > deadline) {
        const said = logs.trim().split('\n').slice(-3).join(' | ');
        throw new UnavailableError(
          `the egress firewall did not apply its rules (${state.Running ? 'no word after 20 s' : `exit code ${state.ExitCode}`}): ${said}`,
          'cluster_unavailable',
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async inspect(): Promise<Docker.ContainerInspectInfo | null> {
    try {
      return await this.engine.call('container inspect', () => this.docker.getContainer(FIREWALL_CONTAINER).inspect());
    } catch (err) {
      if (/no such container/i.test((err as Error).message)) return null;
      throw err;
    }
  }
}
