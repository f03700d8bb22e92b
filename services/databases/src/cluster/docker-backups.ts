import type { BackupMethod } from '../domain/backup-records.ts';
import { BACKUP_METHODS } from '../domain/backup-records.ts';
import type { RepositoryBackup, RepositoryListing } from '../domain/cluster-port.ts';

// What the images' `pier-backup list` prints (deploy/images/*/pier-backup), read into the
// port's RepositoryListing. The repository is the truth for finished backups; the state
// files the server keeps tell which are running or failed. A backup said to be running
// in a server that has restarted since it began was cut short by the restart.

interface LocalState {
  name: string;
  method?: string;
  status: 'running' | 'completed' | 'failed';
  started_at: number;
  completed_at?: number;
  error?: string | null;
}

const at = (seconds: number | null | undefined) => (typeof seconds === 'number' && seconds > 0 ? new Date(seconds * 1000) : null);

function methodOf(text: unknown): BackupMethod | null {
  return BACKUP_METHODS.includes(text as BackupMethod) ? (text as BackupMethod) : null;
}

/** Running and failed backups known only to the server (finished ones come from the repository). */
function fromStates(states: LocalState[], finished: Set<string>, bootedAt: number): RepositoryBackup[] {
  const out: RepositoryBackup[] = [];
  for (const s of states) {
    if (finished.has(s.name) || s.status === 'completed') continue; // completed but gone from the repository: not there
    const interrupted = s.status === 'running' && bootedAt > s.started_at;
    out.push({
      name: s.name,
      method: methodOf(s.method),
      status: s.status === 'running' && !interrupted ? 'running' : 'failed',
      ref: null,
      sizeBytes: null,
      startedAt: at(s.started_at)!,
      completedAt: s.status === 'running' && !interrupted ? null : (at(s.completed_at) ?? new Date()),
      error: interrupted ? 'interrupted: the database server restarted during the backup' : (s.error ?? null),
    });
  }
  return out;
}

interface PgBackRestBackup {
  label: string;
  annotation?: Record<string, string>;
  timestamp: { start: number; stop: number };
  info?: { repository?: { size?: number } };
}

interface PgListing {
  info: { status?: { code?: number; message?: string }; backup?: PgBackRestBackup[] }[];
  states: LocalState[];
  archiver: { last_archived_at: number | null; last_failed_at: number | null; in_recovery: boolean } | null;
  booted_at: number;
}

/**
 * pgBackRest's `info` status codes that still mean "read": 0 ok, 1 no stanza yet, 2 no
 * valid backup yet, 3 stanza data missing (none made yet). Anything else (99: the store
 * could not be reached, a refused certificate...) is an unreadable repository.
 */
const READABLE_CODES = new Set([0, 1, 2, 3]);

export function parsePostgresListing(text: string): RepositoryListing {
  const doc = JSON.parse(text) as PgListing;
  const stanza = doc.info[0];
  const code = stanza?.status?.code ?? 1;
  if (!READABLE_CODES.has(code)) {
    return { readable: false, error: stanza?.status?.message ?? `pgBackRest status ${code}`, backups: [], archiving: false, archivedUntil: null };
  }
  const finished: RepositoryBackup[] = (stanza?.backup ?? []).map((b) => ({
    name: b.annotation?.['pier-name'] ?? b.label.toLowerCase(),
    method: methodOf(b.annotation?.['pier-method']),
    status: 'completed',
    ref: b.label,
    sizeBytes: b.info?.repository?.size ?? null,
    startedAt: at(b.timestamp.start)!,
    completedAt: at(b.timestamp.stop),
    error: null,
  }));
  const archiver = doc.archiver;
  const archivedAt = archiver?.last_archived_at ?? null;
  const failing = (archiver?.last_failed_at ?? 0) > (archivedAt ?? 0);
  return {
    readable: true,
    backups: [...finished, ...fromStates(doc.states, new Set(finished.map((b) => b.name)), doc.booted_at)],
    archiving: archiver !== null && !archiver.in_recovery && !failing,
    archivedUntil: at(archivedAt),
  };
}

interface MysqlListing {
  metas: { name: string; method?: string; started_at: number; completed_at: number; size_bytes: number }[];
  states: LocalState[];
  booted_at: number;
  repo_error?: string | null;
}

export function parseMysqlListing(text: string): RepositoryListing {
  const doc = JSON.parse(text) as MysqlListing;
  if (doc.repo_error) return { readable: false, error: doc.repo_error.trim(), backups: [], archiving: false, archivedUntil: null };
  const finished: RepositoryBackup[] = doc.metas.map((m) => ({
    name: m.name,
    method: methodOf(m.method),
    status: 'completed',
    ref: m.name,
    sizeBytes: m.size_bytes,
    startedAt: at(m.started_at)!,
    completedAt: at(m.completed_at),
    error: null,
  }));
  return {
    readable: true,
    backups: [...finished, ...fromStates(doc.states, new Set(finished.map((b) => b.name)), doc.booted_at)],
    archiving: false,
    archivedUntil: null,
  };
}
