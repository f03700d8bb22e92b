import type { Engine } from './database.ts';

// The connection response: internal endpoints the adapter routes, the live credentials,
// and the external endpoints in the spec's shapes (only with external access on).

export interface Endpoints {
  host: string;
  port: number;
  readOnlyHost: string;
  /** postgresql only. */
  poolerHost?: string;
  poolerHostRo?: string;
  /** The port clients outside reach; 5432/3306 on kubernetes, the published port on docker. */
  externalPort?: number;
}

export interface Credentials {
  username: string;
  password: string;
}

export interface ExternalDomains {
  postgresql: string;
  mysql: string;
}

const SCHEME: Record<Engine, string> = { postgresql: 'postgresql', mysql: 'mysql' };

function url(engine: Engine, c: Credentials, host: string, port: number, database: string): string {
  return `${SCHEME[engine]}://${encodeURIComponent(c.username)}:${encodeURIComponent(c.password)}@${host}:${port}/${database}`;
}

export interface ConnectionInput {
  engine: Engine;
  shortId: string;
  externalAccessEnabled: boolean;
  endpoints: Endpoints;
  credentials: Credentials;
  domains: ExternalDomains;
}

export function connectionJson(i: ConnectionInput): Record<string, unknown> {
  const { engine, shortId: db, endpoints: e, credentials: c } = i;
  const out: Record<string, unknown> = {
    engine,
    host: e.host,
    port: e.port,
    database: db,
    username: c.username,
    password: c.password,
    database_url: url(engine, c, e.host, e.port, db),
    read_only_host: e.readOnlyHost,
    read_only_url: url(engine, c, e.readOnlyHost, e.port, db),
  };
  if (engine === 'postgresql') {
    out.pooler_host = e.poolerHost ?? null;
    out.pooler_host_ro = e.poolerHostRo ?? null;
  }
  const external = i.externalAccessEnabled && e.externalPort !== undefined;
  const domain = i.domains[engine];
  const host = `${db}.${domain}`;
  const hostRo = `${db}-ro.${domain}`;
  out.external_host = external ? host : null;
  out.external_host_ro = external ? hostRo : null;
  out.external_port = external ? e.externalPort : null;
  out.external_url = external ? url(engine, c, host, e.externalPort!, db) : null;
  out.external_url_ro = external ? url(engine, c, hostRo, e.externalPort!, db) : null;
  return out;
}
