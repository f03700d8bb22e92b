// The web console (packages/console): its built static files at `/` of the public address.
// The API stays under /api/v1 and keeps bearer tokens only: nothing here sets or reads a
// cookie. Every answer carries a strict Content-Security-Policy (scripts, styles and
// connections from this origin only, no inline script), nosniff, and cache headers:
// Vite's hashed files under /assets/ never change (a year, immutable); index.html and the
// other files are revalidated on each load (no-cache), so a new build shows at once.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '@pier/kit';
import { API_PREFIX } from '../routing.ts';
import type { ConsoleSignIn } from './console-sign-in.ts';

/** The policy; `connect` adds origins the console may call (the identity provider's, console-sign-in.ts). */
export function consoleCsp(connect: string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    ["connect-src 'self'", ...connect].join(' '),
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export const CONSOLE_CSP = consoleCsp();

/** Where the console reads how people may sign in (console-sign-in.ts). */
export const CONFIG_PATH = '/console-config.json';

const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * packages/console/dist of this checkout. The platform image keeps the same layout
 * (/app/services/gateway/src, /app/packages/console/dist), so the default holds there too.
 */
export function defaultConsoleDir(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../packages/console/dist');
}

function securityHeaders(res: Response, signIn?: ConsoleSignIn): void {
  res.setHeader('content-security-policy', consoleCsp(signIn?.connectOrigins()));
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('x-frame-options', 'DENY');
}

/**
 * Serves the console from `dir`: its files as they are, and index.html for any other
 * GET outside /api/v1 that a browser navigates to (Accept: text/html), so the console's
 * own routes survive a reload. Other clients (curl, scripts: no text/html) keep the JSON
 * 404. Without a built console (no index.html in `dir`) it passes everything on.
 */
export function consoleMiddleware(consoleDir: string, logger: Logger, signIn?: ConsoleSignIn): express.RequestHandler {
  const dir = path.resolve(consoleDir); // sendFile takes absolute paths only
  const index = path.join(dir, 'index.html');
  if (!existsSync(index)) {
    logger.warn({ dir }, 'no built console: / answers 404 (build it with `pnpm --filter @pier/console build`, or set PIER_CONSOLE_DIR)');
  }
  const files = express.static(dir, {
    index: false,
    dotfiles: 'ignore',
    redirect: false,
    cacheControl: false,
    setHeaders: (res, file) => {
      securityHeaders(res as Response, signIn);
      const immutable = path.relative(dir, file).startsWith(`assets${path.sep}`);
      res.setHeader('cache-control', immutable ? IMMUTABLE : 'no-cache');
    },
  });
  const sendIndex = (res: Response, next: NextFunction) => {
    securityHeaders(res, signIn);
    res.setHeader('cache-control', 'no-cache');
    res.sendFile(index, { cacheControl: false, dotfiles: 'deny' }, (err) => {
      if (err && !res.headersSent) next();
    });
  };
  return (req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || req.path === API_PREFIX || req.path.startsWith(`${API_PREFIX}/`)) return next();
    if (req.path === '/' || req.path === '/index.html') return sendIndex(res, next);
    if (req.path === CONFIG_PATH) {
      void (signIn?.config() ?? Promise.resolve({ oidc: null })).then((config) => {
        securityHeaders(res, signIn);
        res.setHeader('cache-control', 'no-cache');
        res.json(config);
      }, next);
      return;
    }
    files(req, res, () => {
      // A hashed file that is not there is a stale page's: a 404, never index.html as script.
      if (req.path.startsWith('/assets/') || !(req.headers.accept ?? '').includes('text/html')) return next();
      sendIndex(res, next);
    });
  };
}
