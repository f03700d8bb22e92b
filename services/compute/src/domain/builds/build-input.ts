// The rules of a build's options: a git ref, the Dockerfile's path and the context directory.
// Each violation is a 400 naming its field. The repository URL has its own guard (kit's
// UrlGuard, through the UrlChecker port).
import path from 'node:path';
import { InputError } from '@pier/kit';

export interface BuildOptions {
  dockerfile_path?: string;
  context_dir?: string;
  deploy?: boolean;
}

export interface BuildPaths {
  dockerfile_path: string;
  context_dir: string;
}

const MAX_PATH = 1024;
const MAX_REF = 255;

/** A full commit id (SHA-1, or SHA-256 for repositories in that format). */
export function isCommitId(ref: string): boolean {
  return /^[0-9a-f]{40}$/.test(ref) || /^[0-9a-f]{64}$/.test(ref);
}

/** A path inside the source: relative, no `..`, normalised (`.` is the root). */
export function relativePath(value: string, field: string): string {
  const v = value.trim();
  const bad = (why: string) => new InputError(`${field}: ${why}`, 'invalid_request', { field });
  if (!v) throw bad('must not be empty');
  if (v.length > MAX_PATH) throw bad(`at most ${MAX_PATH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f\\]/.test(v)) throw bad('must not contain control characters or backslashes');
  if (v.startsWith('/')) throw bad('must be relative to the root of the source (no leading /)');
  if (v.split('/').includes('..')) throw bad('must stay inside the source (no ..)');
  return path.posix.normalize(v).replace(/\/+$/, '') || '.';
}

/** `ref`: a branch, a tag or a full commit id, as git's check-ref-format allows. */
export function checkRef(value: string): string {
  const ref = value.trim();
  const bad = (why: string) => new InputError(`ref: ${why}`, 'invalid_request', { field: 'ref' });
  if (!ref) throw bad('must not be empty');
  if (ref.length > MAX_REF) throw bad(`at most ${MAX_REF} characters`);
  if (isCommitId(ref)) return ref;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(ref)) throw bad('must not contain spaces, control characters or any of ~ ^ : ? * [ \\');
  if (ref.startsWith('-')) throw bad('must not start with -');
  if (ref.startsWith('/') || ref.endsWith('/') || ref.includes('//')) throw bad('must not start or end with /, or hold //');
  if (ref.includes('..') || ref.includes('@{') || ref === '@') throw bad('must not contain .. or @{');
  if (ref.endsWith('.') || ref.endsWith('.lock') || ref.split('/').some((part) => part.startsWith('.'))) {
    throw bad('no part may start with a dot, and it may not end with . or .lock');
  }
  return ref;
}

export function buildPaths(o: BuildOptions): BuildPaths {
  return {
    dockerfile_path: relativePath(o.dockerfile_path ?? 'Dockerfile', 'dockerfile_path'),
    context_dir: relativePath(o.context_dir ?? '.', 'context_dir'),
  };
}
