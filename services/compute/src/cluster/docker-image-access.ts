// Which image a tenant's reference names on the Docker engine, and whether the tenant may
// use it. The engine takes more than names: a reference that names no image is tried as a
// prefix of an image's ID, so `f8` runs whichever image's ID starts with those two digits,
// and a tenant could count through them to every image on the engine. Other teams' builds
// (pier-build/<service>:<build>, docker-builds.ts) are on that engine too. So a reference is
// taken only when it is one of the image's own names (a tag or a digest the engine lists),
// and a build's image only in the workspace that built it. Anything else reads as an image
// the engine does not have: a tenant learns nothing of what is there.
import type Docker from 'dockerode';
import { WorkloadRejectedError } from '../domain/cluster-port.ts';
import { repositoryOf } from '../domain/services/image-reference.ts';
import type { DockerEngine } from './docker-engine.ts';
import { LABEL } from './docker-labels.ts';

/** Docker Hub's names for itself, which the engine drops from the names it lists. */
const HUB = new Set(['docker.io', 'index.docker.io']);

/**
 * A reference as the engine lists an image's names (RepoTags, RepoDigests): Docker Hub's
 * domain and its `library/` dropped, `:latest` where neither tag nor digest is given. A
 * digest names the image whatever the tag beside it says, as the engine reads it.
 */
export function engineName(reference: string): { tag: string } | { digest: string } {
  const [named, digest] = reference.split('@') as [string, string | undefined];
  const name = repositoryOf(named);
  const tag = named.length > name.length ? named.slice(name.length + 1) : 'latest';
  const parts = name.split('/');
  // The first part is a registry when it looks like a host: a dot, a port or localhost.
  const hasDomain = parts.length > 1 && (/[.:]/.test(parts[0]!) || parts[0] === 'localhost');
  const onHub = !hasDomain || HUB.has(parts[0]!);
  let path = hasDomain && onHub ? parts.slice(1) : parts;
  if (onHub && path.length === 2 && path[0] === 'library') path = path.slice(1);
  const familiar = path.join('/');
  return digest ? { digest: `${familiar}@${digest}` } : { tag: `${familiar}:${tag}` };
}

/** Whether `reference` is one of the image's own names (not a prefix of its ID). */
export function namesImage(reference: string, image: Pick<Docker.ImageInspectInfo, 'RepoTags' | 'RepoDigests'>): boolean {
  const name = engineName(reference);
  return 'digest' in name ? (image.RepoDigests ?? []).includes(name.digest) : (image.RepoTags ?? []).includes(name.tag);
}

/** What the engine has under `reference`, by name or by ID prefix; null when it has nothing. */
async function inspect(engine: DockerEngine, reference: string): Promise<Docker.ImageInspectInfo | null> {
  try {
    return await engine.call('image inspect', () => engine.docker.getImage(reference).inspect());
  } catch (err) {
    // Not found, or not a reference at all: the engine has nothing by that name either way.
    if (err instanceof WorkloadRejectedError) return null;
    throw err;
  }
}

function usable(reference: string, image: Docker.ImageInspectInfo, workspaceId: string): boolean {
  const labels = image.Config?.Labels ?? {};
  const othersBuild = labels[LABEL.kind] === 'build' && labels[LABEL.workspace] !== workspaceId;
  return namesImage(reference, image) && !othersBuild;
}

/**
 * The ID of the image `reference` names, when the workspace may run it; otherwise the
 * error a missing image gets (this adapter never pulls). Containers are created from the
 * ID, so what was checked is what runs, even if the tag moves in between.
 */
export async function imageForWorkspace(engine: DockerEngine, reference: string, workspaceId: string): Promise<string> {
  const image = await inspect(engine, reference);
  if (!image || !usable(reference, image, workspaceId)) throw new WorkloadRejectedError(`image ${reference} is not available in the cluster (no such image)`);
  return image.Id;
}

/**
 * Whether a build of the workspace may start from `reference` (a FROM or COPY --from): an
 * image the engine does not have is fine, the builder pulls it by its name.
 */
export async function mayBuildFrom(engine: DockerEngine, reference: string, workspaceId: string): Promise<boolean> {
  const image = await inspect(engine, reference);
  return !image || usable(reference, image, workspaceId);
}
