// The JSON of a build, and the schemas that document it in OpenAPI.
import { z } from 'zod';
import { BUILD_SOURCES, BUILD_STATUSES, type Build } from '../domain/builds/build-store-port.ts';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export const buildSchema = z.object({
  id: z.string(),
  service_id: z.string(),
  source: z.enum(BUILD_SOURCES),
  status: z.enum(BUILD_STATUSES),
  repo_url: z.string().nullable().describe('git builds: the repository, as checked'),
  ref: z.string().nullable().describe('git builds: the branch, tag or commit asked for (null: the default branch)'),
  commit_sha: z.string().nullable().describe('git builds: the commit that was built'),
  dockerfile_path: z.string(),
  context_dir: z.string(),
  image: z.string().nullable().describe('The image made (set on success)'),
  deploy: z.boolean(),
  deployment_id: z.string().nullable().describe('The deployment the build made, when it deployed'),
  error: z.string().nullable().describe('Why it failed or was cancelled'),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});

export const buildLogSchema = z.object({
  build_id: z.string(),
  status: z.enum(BUILD_STATUSES),
  log: z.string().describe('The whole log kept so far (clone, build steps, deploy)'),
});

export function buildJson(b: Build): z.infer<typeof buildSchema> {
  return {
    id: b.id,
    service_id: b.service_id,
    source: b.source,
    status: b.status,
    repo_url: b.repo_url,
    ref: b.ref,
    commit_sha: b.commit_sha,
    dockerfile_path: b.dockerfile_path,
    context_dir: b.context_dir,
    image: b.image,
    deploy: b.deploy,
    deployment_id: b.deployment_id,
    error: b.error,
    created_at: iso(b.created_at)!,
    started_at: iso(b.started_at),
    finished_at: iso(b.finished_at),
  };
}
