import { describe, expect, it } from 'vitest';
import { routeOf } from '../src/routing.ts';

const ws = '0b7e3c3e-2f7d-4a51-9d3c-5c3b7a1e9f10';
const vpc = '6a1f2a0e-8e7c-4e43-a3f6-0d2f6f0c9b21';

describe('routeOf', () => {
  it('sends VPC resources to their owners, with the ids auth needs', () => {
    expect(routeOf(`/api/v1/workspaces/${ws}/vpcs/${vpc}/services`)).toEqual({ upstream: 'compute', workspaceId: ws, vpcId: vpc });
    expect(routeOf(`/api/v1/workspaces/${ws}/vpcs/${vpc}/services/abc/exec`)).toEqual({ upstream: 'compute', workspaceId: ws, vpcId: vpc });
    expect(routeOf(`/api/v1/workspaces/${ws}/vpcs/${vpc}/databases/x/connection`)?.upstream).toBe('databases');
    expect(routeOf(`/api/v1/workspaces/${ws}/vpcs/${vpc}/secrets`)?.upstream).toBe('secrets');
  });

  it("sends a workspace's events and webhooks to events", () => {
    expect(routeOf(`/api/v1/workspaces/${ws}/events`)).toEqual({ upstream: 'events', workspaceId: ws, vpcId: '' });
    expect(routeOf(`/api/v1/workspaces/${ws}/events/anything`)?.upstream).toBe('events');
    expect(routeOf(`/api/v1/workspaces/${ws}/eventsx`)?.upstream).toBe('auth');
    expect(routeOf(`/api/v1/workspaces/${ws}/webhooks/w1/deliveries`)).toEqual({ upstream: 'events', workspaceId: ws, vpcId: '' });
  });

  it('sends what the installation offers, outside any workspace, to its owner', () => {
    expect(routeOf('/api/v1/database-engines')).toEqual({ upstream: 'databases', workspaceId: '', vpcId: '' });
    expect(routeOf('/api/v1/database-enginesx')?.upstream).toBe('auth');
    expect(routeOf('/api/v1/constructor')?.upstream).toBe('auth');
  });

  it('sends everything else under /api/v1 to auth', () => {
    expect(routeOf('/api/v1/workspaces')).toEqual({ upstream: 'auth', workspaceId: '', vpcId: '' });
    expect(routeOf('/api/v1/workspaces/')).toEqual({ upstream: 'auth', workspaceId: '', vpcId: '' });
    expect(routeOf(`/api/v1/workspaces/${ws}`)).toEqual({ upstream: 'auth', workspaceId: ws, vpcId: '' });
    expect(routeOf(`/api/v1/workspaces/${ws}/api-keys/k1`)).toEqual({ upstream: 'auth', workspaceId: ws, vpcId: '' });
    expect(routeOf(`/api/v1/workspaces/${ws}/vpcs`)).toEqual({ upstream: 'auth', workspaceId: ws, vpcId: '' });
    expect(routeOf(`/api/v1/workspaces/${ws}/vpcs/${vpc}`)).toEqual({ upstream: 'auth', workspaceId: ws, vpcId: vpc });
    expect(routeOf(`/api/v1/workspaces/${ws}/vpcs/${vpc}/nothing`)).toEqual({ upstream: 'auth', workspaceId: ws, vpcId: vpc });
    expect(routeOf(`/api/v1/workspaces/${ws}/vpcs/${vpc}/__proto__`)?.upstream).toBe('auth');
    expect(routeOf('/api/v1/cli-sessions')?.upstream).toBe('auth');
    expect(routeOf('/api/v1')?.upstream).toBe('auth');
  });

  it('decodes percent-encoded ids so auth checks what the service will see', () => {
    expect(routeOf('/api/v1/workspaces/a%62c/vpcs/d%2Fe/services')).toEqual({ upstream: 'compute', workspaceId: 'abc', vpcId: 'd/e' });
  });

  it('does not route outside /api/v1', () => {
    expect(routeOf('/')).toBeNull();
    expect(routeOf('/api/v10/workspaces')).toBeNull();
    expect(routeOf('/api/v1x')).toBeNull();
    expect(routeOf('/healthz')).toBeNull();
  });
});
