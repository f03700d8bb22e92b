// The gateway's serving of the built web console (src/http/console.ts), on a folder laid
// out as Vite builds it: headers, client-route fallback, and what stays a JSON 404.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@pier/kit';
import { createFallbackApp } from '../src/http/fallback-app.ts';
import { CONSOLE_CSP } from '../src/http/console.ts';
import { ConsoleSignIn, consoleOidcSettings } from '../src/http/console-sign-in.ts';

const INDEX = '<!doctype html><title>Pier console</title><script type="module" src="/assets/index-abc123.js"></script>';
let dir: string;
let app: ReturnType<typeof createFallbackApp>;
const logger = createLogger('gateway', 'silent');

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'pier-console-'));
  await mkdir(path.join(dir, 'assets'));
  await writeFile(path.join(dir, 'index.html'), INDEX);
  await writeFile(path.join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
  await writeFile(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  await writeFile(path.join(dir, '.inputs'), 'stamp');
  app = createFallbackApp({ logger, upstreams: new Map(), consoleDir: dir });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const HTML = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

describe('the console at / of the gateway', () => {
  it('serves index.html at / with a strict CSP, nosniff, no-cache and no cookie', async () => {
    const res = await request(app).get('/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.text).toBe(INDEX);
    expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("default-src 'self'");
    expect(CONSOLE_CSP).toContain("connect-src 'self'");
    expect(CONSOLE_CSP).toMatch(/script-src 'self'(;|$)/);
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('serves hashed assets as immutable, other files as no-cache', async () => {
    const js = await request(app).get('/assets/index-abc123.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.headers['x-content-type-options']).toBe('nosniff');
    const icon = await request(app).get('/favicon.svg');
    expect(icon.status).toBe(200);
    expect(icon.headers['cache-control']).toBe('no-cache');
    const head = await request(app).head('/assets/index-abc123.js');
    expect(head.status).toBe(200);
  });

  it("answers a browser's navigation to a console route with index.html", async () => {
    const res = await request(app).get('/services/svc-1').set(HTML);
    expect(res.status).toBe(200);
    expect(res.text).toBe(INDEX);
    expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(res.headers['cache-control']).toBe('no-cache');
  });

  it('keeps JSON 404s for API clients, missing assets, dotfiles, escapes and /api/v1', async () => {
    for (const [p, headers] of [
      ['/services/svc-1', {}],
      ['/assets/index-gone.js', HTML],
      ['/.inputs', {}],
      ['/%2e%2e/%2e%2e/etc/passwd', {}],
      ['/api/v1/nothing', HTML],
    ] as const) {
      const res = await request(app).get(p).set(headers);
      expect(res.status, p).toBe(404);
      expect(res.headers['content-type'], p).toMatch(/application\/json/);
      expect(res.body.code, p).toBe('route_not_found');
    }
    const post = await request(app).post('/services').set(HTML);
    expect(post.status).toBe(404);
  });

  it('takes a PIER_CONSOLE_DIR relative to the working directory', async () => {
    const relative = createFallbackApp({ logger, upstreams: new Map(), consoleDir: path.relative(process.cwd(), dir) });
    const res = await request(relative).get('/services').set(HTML);
    expect(res.status).toBe(200);
    expect(res.text).toBe(INDEX);
  });

  it('without a built console, / is the JSON 404 it always was', async () => {
    const bare = createFallbackApp({ logger, upstreams: new Map(), consoleDir: path.join(dir, 'missing') });
    const res = await request(bare).get('/').set(HTML);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('route_not_found');
  });

  it('says how to sign in at /console-config.json: the provider from its discovery document, with its origins in connect-src', async () => {
    expect((await request(app).get('/console-config.json')).body).toEqual({ oidc: null });
    const settings = consoleOidcSettings({ PIER_OIDC_ISSUER: 'https://id.example.com/realms/acme', PIER_OIDC_AUDIENCE: 'pier-dashboard' })!;
    expect(settings).toEqual({
      issuer: 'https://id.example.com/realms/acme',
      clientId: 'pier-dashboard',
      providerName: 'id.example.com',
      scopes: 'openid email offline_access',
    });
    let reads = 0;
    const discovery = (async (url: string) => {
      reads++;
      expect(url).toBe('https://id.example.com/realms/acme/.well-known/openid-configuration');
      return Response.json({ authorization_endpoint: 'https://id.example.com/auth', token_endpoint: 'https://tokens.example.net/token' });
    }) as unknown as typeof fetch;
    const signIn = new ConsoleSignIn(settings, logger, discovery);
    const withOidc = createFallbackApp({ logger, upstreams: new Map(), consoleDir: dir, consoleSignIn: signIn });
    const res = await request(withOidc).get('/console-config.json');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.body.oidc).toEqual({
      provider_name: 'id.example.com',
      client_id: 'pier-dashboard',
      issuer: 'https://id.example.com/realms/acme',
      authorization_endpoint: 'https://id.example.com/auth',
      token_endpoint: 'https://tokens.example.net/token',
      scopes: 'openid email offline_access',
    });
    await request(withOidc).get('/console-config.json');
    expect(reads).toBe(1);
    const page = await request(withOidc).get('/');
    expect(page.headers['content-security-policy']).toContain("connect-src 'self' https://id.example.com https://tokens.example.net;");
  });

  it('offers token sign-in only when the discovery document cannot be read or is not one', async () => {
    const settings = consoleOidcSettings({ PIER_OIDC_ISSUER: 'https://id.example.com', PIER_OIDC_CLIENT_ID: 'console' })!;
    for (const answer of [
      new Response('nope', { status: 500 }),
      Response.json({ authorization_endpoint: 'javascript:alert(1)', token_endpoint: 'https://x' }),
    ]) {
      const signIn = new ConsoleSignIn(settings, logger, (async () => answer) as unknown as typeof fetch);
      expect(await signIn.config()).toEqual({ oidc: null });
      expect(signIn.connectOrigins()).toEqual(['https://id.example.com']);
    }
    expect(consoleOidcSettings({ PIER_OIDC_ISSUER: 'https://id.example.com' })).toBeUndefined();
  });
});
